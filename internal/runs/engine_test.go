package runs_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

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
			tid := testutil.NewThread(t, s)
			gate := "fence-" + tid
			old := startStubborn(t, s, tid, gate)
			next := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "multitask_strategy": strategy, "input": testutil.UserInput("second")}).Object(t)["run_id"].(string)
			// The successor finishes while the old node is still blocked.
			testutil.WaitStatus(t, s, tid, next, "success")
			if strategy == "interrupt" {
				testutil.WaitStatus(t, s, tid, old, "interrupted")
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
	tid := testutil.NewThread(t, s)
	gate := "delete-" + tid
	running := startStubborn(t, s, tid, gate)
	queued := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("queued")}).Object(t)["run_id"].(string)
	deleted := make(chan int, 1)
	go func() { deleted <- s.Try("DELETE", "/threads/"+tid, nil).Status }()
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
		tid := testutil.NewThread(t, s)
		gate := "timeout-" + tid
		defer testutil.Release(gate)
		resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": graphID, "input": map[string]any{"gate": gate}, "webhook": hook.URL}, nil)
		rid := strings.TrimPrefix(resp.Header.Get("Content-Location"), "/threads/"+tid+"/runs/")
		evs := streamUntilEnd(t, resp)
		last := evs[len(evs)-2]
		if last.Event != "error" || !strings.Contains(last.Raw, `"TimeoutError"`) {
			t.Fatalf("%s: events before end: %+v", graphID, evs)
		}
		if st := testutil.RunStatus(t, s, tid, rid); st != "timeout" {
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

// A temporary (stateless, on_completion=delete) run is visible while it
// runs, and once it ended it is gone on every route, before and after a
// restart; a join made while it ran still gets its values.
func TestTemporaryRunIsGoneOnceEnded(t *testing.T) {
	opts := testutil.Options{Graphs: testutil.TestGraphs, DataDir: t.TempDir()}
	s := testutil.StartServer(t, opts)
	gate := "temporary-" + uuid.NewString()
	run := s.Must(200, "POST", "/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}).Object(t)
	rid := run["run_id"].(string)
	s.Must(200, "GET", "/runs/"+rid, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := testutil.AwaitWaiters(ctx, gate, 1); err != nil {
		t.Fatal(err)
	}
	// A join stream answers its headers once it is subscribed, so the join
	// is known to be made while the run runs (a /wait answers only later).
	joined := s.Stream("GET", "/runs/"+rid+"/stream", nil, http.Header{"Last-Event-Id": {"-1"}})
	defer joined.Body.Close()
	if joined.StatusCode != 200 {
		t.Fatalf("join stream: %d", joined.StatusCode)
	}
	s.Must(409, "DELETE", "/runs/"+rid, nil)
	testutil.Release(gate)
	evs, err := testutil.NewSSEReader(joined.Body).All()
	if err != nil || len(evs) < 2 || evs[len(evs)-1].Event != "end" {
		t.Fatalf("join made while the run ran: %v %+v", err, evs)
	}
	if last := evs[len(evs)-2]; last.Event != "values" || testutil.LastMessage(t, last.Data)["content"] != "released "+gate {
		t.Fatalf("join made while the run ran: last values %s", last.Raw)
	}
	gone := func(s *testutil.Server) {
		t.Helper()
		testutil.Eventually(t, 5*time.Second, "the ended temporary run to be gone", func() bool { return s.Do("GET", "/runs/"+rid, nil).Status == 404 })
		for _, r := range [][2]string{{"GET", "/runs/" + rid + "/wait"}, {"GET", "/runs/" + rid + "/stream"}, {"DELETE", "/runs/" + rid}, {"GET", "/threads/" + run["thread_id"].(string) + "/runs/" + rid}} {
			s.Must(404, r[0], r[1], nil)
		}
	}
	gone(s)
	gone(restart(t, s, opts))
}

// POST /runs/batch and POST /runs/cancel with run_ids are all or nothing:
// when one item fails, no run is created or cancelled.
func TestBatchAndCancelManyAreAtomic(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	free, busy := testutil.NewThread(t, s), testutil.NewThread(t, s)
	gate := "batch-" + busy
	defer testutil.Release(gate)
	s.Must(200, "POST", "/threads/"+busy+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}})
	ok := map[string]any{"agent_id": "echo", "thread_id": free, "input": testutil.UserInput("batched")}
	for name, bad := range map[string]map[string]any{
		"409 busy thread":    {"agent_id": "echo", "thread_id": busy, "multitask_strategy": "reject", "input": testutil.UserInput("x")},
		"404 missing thread": {"agent_id": "echo", "thread_id": "00000000-0000-7000-8000-000000000001", "input": testutil.UserInput("x")},
		"404 assistant":      {"assistant_id": "nope", "input": testutil.UserInput("x")},
	} {
		r := s.Do("POST", "/runs/batch", []any{ok, bad})
		if r.Status/100 != 4 {
			t.Fatalf("%s: batch answered %d %s", name, r.Status, r.Raw)
		}
		if l := s.Must(200, "GET", "/threads/"+free+"/runs", nil).List(t); len(l) != 0 {
			t.Fatalf("%s: the failed batch left %d runs", name, len(l))
		}
		if st := s.Must(200, "GET", "/threads/"+free, nil).Object(t)["status"]; st != "idle" {
			t.Fatalf("%s: thread left %v", name, st)
		}
	}
	if l := s.Must(200, "POST", "/runs/batch", []any{ok}).List(t); len(l) != 1 {
		t.Fatalf("batch = %v", l)
	}

	later := s.Must(200, "POST", "/threads/"+free+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("later"), "after_seconds": 600}).Object(t)["run_id"].(string)
	missing := "00000000-0000-7000-8000-000000000002"
	s.Must(404, "POST", "/runs/cancel", map[string]any{"thread_id": free, "run_ids": []any{later, missing}})
	if st := testutil.RunStatus(t, s, free, later); st != "pending" {
		t.Fatalf("a failed cancel left the run %s", st)
	}
	s.Must(204, "POST", "/runs/cancel", map[string]any{"thread_id": free, "run_ids": []any{later}})
	testutil.WaitStatus(t, s, free, later, "interrupted")
}

// A run cancelled or rolled back while still pending ends like any run: a
// join of it ends with end, the thread stream gets its end and run_done,
// and its webhook fires with status interrupted (not for a rollback, which
// erases the run).
func TestPendingRunCancelEndsItsStreams(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	hook := newHookRecorder(t)
	for _, how := range []string{"cancel", "cancel-rollback", "strategy-interrupt", "strategy-rollback"} {
		tid := testutil.NewThread(t, s)
		thread := s.Stream("GET", "/threads/"+tid+"/stream", map[string]any{}, nil)
		rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("later"), "after_seconds": 600, "webhook": hook.URL}).Object(t)["run_id"].(string)
		join := s.Stream("GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, nil)
		switch how {
		case "cancel":
			s.Must(202, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel", nil)
		case "cancel-rollback":
			s.Must(202, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?action=rollback", nil)
		default:
			s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("now"), "multitask_strategy": strings.TrimPrefix(how, "strategy-")})
		}
		streamUntilEnd(t, join)
		var names []string
		rd := testutil.NewSSEReader(thread.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				t.Fatalf("%s: thread stream ended: %v (got %v)", how, err, names)
			}
			names = append(names, ev.Event)
			if ev.Event == "run_done" {
				if !strings.Contains(ev.Raw, rid) || !strings.Contains(ev.Raw, `"interrupted"`) {
					t.Fatalf("%s: run_done %s", how, ev.Raw)
				}
				break
			}
		}
		thread.Body.Close()
		if strings.Join(names, ",") != "metadata,end,run_done" {
			t.Fatalf("%s: thread stream events %v", how, names)
		}
		if !strings.HasSuffix(how, "rollback") {
			if body := hook.await(t, rid); body["status"] != "interrupted" {
				t.Fatalf("%s: webhook %v", how, body)
			}
		}
	}
}

// A graceful restart in the middle of a run, with another run queued
// behind it on the same thread, applies each run's input exactly once: the
// interrupted run resumes from its own last checkpoint.
func TestGracefulRestartAppliesInputsOnce(t *testing.T) {
	opts := testutil.Options{Graphs: testutil.TestGraphs, DataDir: t.TempDir()}
	s := testutil.StartServer(t, opts)
	tid := testutil.NewThread(t, s)
	gate := "graceful-" + tid
	first := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated",
		"input": map[string]any{"gate": gate, "messages": []any{map[string]any{"role": "user", "content": "one"}}}}).Object(t)["run_id"].(string)
	testutil.WaitStatus(t, s, tid, first, "running")
	second := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("two")}).Object(t)["run_id"].(string)
	s = restart(t, s, opts)
	if st := testutil.RunStatus(t, s, tid, second); st != "pending" {
		t.Fatalf("the queued run is %s after the restart", st)
	}
	testutil.Release(gate)
	testutil.WaitStatus(t, s, tid, second, "success")
	if st := testutil.RunStatus(t, s, tid, first); st != "success" {
		t.Fatalf("the interrupted run is %s", st)
	}
	if got := strings.Join(contents(t, s, tid), "|"); got != "one|released "+gate+"|two|echo: two" {
		t.Fatalf("messages after a graceful restart: %q", got)
	}
}

// A run cancelled while it waits for a worker (every worker busy) ends at
// once, and joins of it (made before or after the cancel) return.
func TestJoinsOfRunCancelledWaitingForWorker(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, Jobs: 1})
	busy, idle := testutil.NewThread(t, s), testutil.NewThread(t, s)
	gate := "worker-" + busy
	defer testutil.Release(gate)
	blocker := s.Must(200, "POST", "/threads/"+busy+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}).Object(t)["run_id"].(string)
	testutil.WaitStatus(t, s, busy, blocker, "running")
	queued := s.Must(200, "POST", "/threads/"+idle+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("x")}).Object(t)["run_id"].(string)
	answers := make(chan testutil.Response, 2)
	for _, path := range []string{"/threads/" + idle + "/runs/" + queued + "/join", "/runs/" + queued + "/wait"} {
		go func() { answers <- s.Try("GET", path, nil) }()
	}
	s.Must(202, "POST", "/threads/"+idle+"/runs/"+queued+"/cancel", nil)
	for range 2 {
		select {
		case a := <-answers:
			if a.Status != 200 {
				t.Fatalf("join: %d %s", a.Status, a.Raw)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a join of the cancelled run did not return")
		}
	}
	if st := testutil.RunStatus(t, s, idle, queued); st != "interrupted" {
		t.Fatalf("run %s", st)
	}
}

// A rollback requested after an interrupt on the same running run wins:
// the run is deleted with its checkpoints once it stops.
func TestRollbackAfterInterruptWins(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, RunStopGrace: time.Minute})
	tid := testutil.NewThread(t, s)
	gate := "upgrade-" + tid
	rid := startStubborn(t, s, tid, gate)
	s.Must(202, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel", nil)
	s.Must(202, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?action=rollback", nil)
	testutil.Release(gate)
	testutil.Eventually(t, 5*time.Second, "the run to be rolled back", func() bool {
		return s.Do("GET", "/threads/"+tid+"/runs/"+rid, nil).Status == 404
	})
	if h := s.Must(200, "GET", "/threads/"+tid+"/history", nil).List(t); len(h) != 0 {
		t.Fatalf("the rolled-back run left %d checkpoints", len(h))
	}
}
