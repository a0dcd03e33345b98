package httpapi_test

import (
	"context"
	"strings"
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
