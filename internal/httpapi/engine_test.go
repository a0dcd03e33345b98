package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"agentserver/internal/testutil"
)

// stopGrace is the run stop grace of the engine tests: short, so that an
// abandoned run is ended quickly.
const stopGrace = 200 * time.Millisecond

// contents lists the contents of a thread's messages.
func contents(t *testing.T, s *testutil.Server, tid string) []string {
	t.Helper()
	values, _ := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)["values"].(map[string]any)
	var out []string
	for _, m := range values["messages"].([]any) {
		out = append(out, m.(map[string]any)["content"].(string))
	}
	return out
}

// restart shuts a server down (waiting for every run goroutine, abandoned
// ones included) and opens a new one on the same data directory.
func restart(t *testing.T, s *testutil.Server, opts testutil.Options) *testutil.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return testutil.StartServer(t, opts)
}

// startStubborn starts a run whose node ignores cancellation until its gate
// is released, and waits until it blocks.
func startStubborn(t *testing.T, s *testutil.Server, tid, gate string) string {
	t.Helper()
	rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "stubborn",
		"input": map[string]any{"gate": gate, "messages": []any{map[string]any{"role": "user", "content": "first"}}}}).Object(t)["run_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := testutil.AwaitWaiters(ctx, gate, 1); err != nil {
		t.Fatal(err)
	}
	return rid
}

// A run superseded by the interrupt or rollback strategy that does not stop
// is ended after the stop grace; its successor starts while the old node
// still runs, and nothing the old run does afterwards reaches the thread.
func TestSupersededRunIsFenced(t *testing.T) {
	for _, strategy := range []string{"interrupt", "rollback"} {
		t.Run(strategy, func(t *testing.T) {
			opts := testutil.Options{Graphs: testutil.TestGraphs, DataDir: t.TempDir(), RunStopGrace: stopGrace}
			s := testutil.StartServer(t, opts)
			tid := newThread(t, s)
			gate := "fence-" + tid
			old := startStubborn(t, s, tid, gate)
			next := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "multitask_strategy": strategy, "input": userInput("second")}).Object(t)["run_id"].(string)
			// The successor finishes while the old node is still blocked.
			waitStatus(t, s, tid, next, "success")
			if strategy == "interrupt" {
				waitStatus(t, s, tid, old, "interrupted")
			} else {
				s.Must(404, "GET", "/threads/"+tid+"/runs/"+old, nil)
			}
			before := strings.Join(contents(t, s, tid), "|")
			testutil.Release(gate)
			s = restart(t, s, opts)
			after := strings.Join(contents(t, s, tid), "|")
			if after != before || strings.Contains(after, "released") || strings.Contains(after, "after") {
				t.Fatalf("thread state changed by the superseded run: before %q, after %q", before, after)
			}
			want := "first|second|echo: second"
			if strategy == "rollback" {
				want = "second|echo: second"
			}
			if after != want {
				t.Fatalf("messages = %q, want %q", after, want)
			}
			if got := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)["status"]; got != "idle" {
				t.Fatalf("thread status %v", got)
			}
		})
	}
}

// Deleting a busy thread does not wait for its runs: the running one is
// cancelled, the queued one ends, and nothing is written back afterwards.
func TestDeleteBusyThreadWritesNothingBack(t *testing.T) {
	opts := testutil.Options{Graphs: testutil.TestGraphs, DataDir: t.TempDir(), RunStopGrace: time.Minute}
	s := testutil.StartServer(t, opts)
	tid := newThread(t, s)
	gate := "delete-" + tid
	running := startStubborn(t, s, tid, gate)
	queued := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": userInput("queued")}).Object(t)["run_id"].(string)
	deleted := make(chan int, 1)
	go func() { deleted <- s.Do("DELETE", "/threads/"+tid, nil).Status }()
	select {
	case st := <-deleted:
		if st != 204 {
			t.Fatalf("DELETE: %d", st)
		}
	case <-time.After(5 * time.Second):
		testutil.Release(gate)
		t.Fatal("DELETE of a busy thread waited for its running run")
	}
	s.Must(404, "GET", "/runs/"+running, nil)
	s.Must(404, "GET", "/runs/"+queued, nil)
	testutil.Release(gate)
	s = restart(t, s, opts)
	s.Must(404, "GET", "/threads/"+tid, nil)
	s.Must(404, "GET", "/runs/"+running, nil)
	// A new thread with the same id starts empty: no checkpoint came back.
	s.Must(200, "POST", "/threads", map[string]any{"thread_id": tid})
	if h := s.Must(200, "GET", "/threads/"+tid+"/history", nil).List(t); len(h) != 0 {
		t.Fatalf("the deleted thread got %d checkpoints back", len(h))
	}
	if l := s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t); len(l) != 0 {
		t.Fatalf("the deleted thread got runs back: %v", l)
	}
}

// hookRecorder is a webhook receiver that keeps the bodies it got.
type hookRecorder struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newHookRecorder(t *testing.T) *hookRecorder {
	h := &hookRecorder{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// await returns the webhook body of a run once it has arrived.
func (h *hookRecorder) await(t *testing.T, rid string) map[string]any {
	t.Helper()
	var got map[string]any
	testutil.Eventually(t, 5*time.Second, "webhook of run "+rid, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, b := range h.bodies {
			if b["run_id"] == rid {
				got = b
			}
		}
		return got != nil
	})
	return got
}

// streamUntilEnd reads an SSE response up to its end event and returns the
// events by name, in order.
func streamUntilEnd(t *testing.T, resp *http.Response) []testutil.SSEEvent {
	t.Helper()
	defer resp.Body.Close()
	giveUp := time.AfterFunc(10*time.Second, func() { resp.Body.Close() })
	defer giveUp.Stop()
	rd := testutil.NewSSEReader(resp.Body)
	var evs []testutil.SSEEvent
	for {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("stream ended without end: %v (got %+v)", err, evs)
		}
		evs = append(evs, ev)
		if ev.Event == "end" {
			return evs
		}
	}
}

// A run that exceeds the run timeout ends with status timeout: its stream
// gets a TimeoutError error event then end, /join answers __error__, the
// thread becomes error and the webhook reports timeout. A node that
// ignores its context times out too, once the stop grace has passed.
func TestRunTimeout(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, RunTimeout: 300 * time.Millisecond, RunStopGrace: stopGrace})
	hook := newHookRecorder(t)
	for _, graphID := range []string{"gated", "stubborn"} {
		tid := newThread(t, s)
		gate := "timeout-" + tid
		defer testutil.Release(gate)
		resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": graphID, "input": map[string]any{"gate": gate}, "webhook": hook.URL}, nil)
		rid := strings.TrimPrefix(resp.Header.Get("Content-Location"), "/threads/"+tid+"/runs/")
		evs := streamUntilEnd(t, resp)
		last := evs[len(evs)-2]
		if last.Event != "error" || !strings.Contains(last.Raw, `"TimeoutError"`) {
			t.Fatalf("%s: events before end: %+v", graphID, evs)
		}
		if st := runStatus(t, s, tid, rid); st != "timeout" {
			t.Fatalf("%s: run status %s", graphID, st)
		}
		th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)
		if th["status"] != "error" {
			t.Fatalf("%s: thread %v", graphID, th)
		}
		join := s.Must(200, "GET", "/threads/"+tid+"/runs/"+rid+"/join", nil).Object(t)
		if e, _ := join["__error__"].(map[string]any); e["error"] != "TimeoutError" {
			t.Fatalf("%s: join = %v", graphID, join)
		}
		if body := hook.await(t, rid); body["status"] != "timeout" || body["error"] == nil {
			t.Fatalf("%s: webhook = %v", graphID, body)
		}
	}
}
