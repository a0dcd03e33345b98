package runs_test

import (
	"context"
	"testing"
	"time"

	"agentserver/internal/testutil"
)

// queueGated creates a run of the gated graph whose node waits at gate,
// with a user message text, and returns its id without waiting.
func queueGated(t *testing.T, s *testutil.Server, tid, gate, text string) string {
	t.Helper()
	input := map[string]any{"gate": gate, "messages": []any{map[string]any{"role": "user", "content": text}}}
	return s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": input}).Object(t)["run_id"].(string)
}

// awaitGate waits until a gated node blocks at gate.
func awaitGate(t *testing.T, gate string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := testutil.AwaitWaiters(ctx, gate, 1); err != nil {
		t.Fatal(err)
	}
}

// contentsOf lists the contents of a values object's messages.
func contentsOf(values any) []string {
	var out []string
	msgs, _ := values.(map[string]any)["messages"].([]any)
	for _, m := range msgs {
		c, _ := m.(map[string]any)["content"].(string)
		out = append(out, c)
	}
	return out
}

// TestInputVisibleWhileFirstStepRuns checks that a run's input is in its
// thread's state and history while its first node still runs, in
// LangGraph's chain: an input checkpoint (the values before the input,
// __start__ pending), then the __start__ step's checkpoint with the input
// applied and the entry node pending, each the child of the one before. A
// chat client that reloads, or cancels, during the first model call shows
// the user's message instead of an empty thread. It covers a run started
// with its creation, a run queued behind another (started by a worker, or
// on PostgreSQL claimed from the shared queue), and a later turn.
func TestInputVisibleWhileFirstStepRuns(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	gate1, gate2 := "first-"+tid, "second-"+tid

	first := gatedRun(t, s, tid, gate1, nil)
	state := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
	if got := contentsOf(state["values"]); len(got) != 1 || got[0] != "go" {
		t.Fatalf("state while the first step runs: messages %v, want the input", got)
	}
	hist := s.Must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 10}).List(t)
	assertChain(t, hist, [][3]any{
		{"loop", 0.0, []any{"wait"}},
		{"input", -1.0, []any{"__start__"}},
	})
	if got := contentsOf(hist[1].(map[string]any)["values"]); len(got) != 0 {
		t.Fatalf("the input checkpoint holds the values before the input: %v", got)
	}
	if hist[1].(map[string]any)["parent_checkpoint"] != nil {
		t.Fatalf("the thread's first checkpoint has a parent: %v", hist[1])
	}

	// A second run queued behind the first starts when it ends; its input
	// shows as soon as it starts, after the first run's checkpoints.
	second := queueGated(t, s, tid, gate2, "again")
	testutil.Release(gate1)
	testutil.WaitStatus(t, s, tid, first, "success")
	awaitGate(t, gate2)
	state = s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
	if got := contentsOf(state["values"]); len(got) != 3 || got[2] != "again" {
		t.Fatalf("state while the queued run's first step runs: messages %v", got)
	}
	hist = s.Must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 10}).List(t)
	assertChain(t, hist, [][3]any{
		{"loop", 3.0, []any{"wait"}},
		{"input", 2.0, []any{"__start__"}},
		{"loop", 1.0, []any{}},
		{"loop", 0.0, []any{"wait"}},
		{"input", -1.0, []any{"__start__"}},
	})
	testutil.Release(gate2)
	testutil.WaitStatus(t, s, tid, second, "success")
	if n := len(s.Must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 10}).List(t)); n != 6 {
		t.Fatalf("history after both runs: %d checkpoints, want 6", n)
	}
}

// assertChain checks a history (newest first) against (source, step,
// next) triples and that each state's parent is the next one.
func assertChain(t *testing.T, hist []any, want [][3]any) {
	t.Helper()
	if len(hist) != len(want) {
		t.Fatalf("history has %d checkpoints, want %d: %v", len(hist), len(want), hist)
	}
	for i, w := range want {
		st := hist[i].(map[string]any)
		md := st["metadata"].(map[string]any)
		next, _ := st["next"].([]any)
		if md["source"] != w[0] || md["step"] != w[1] || len(next) != len(w[2].([]any)) || len(next) > 0 && next[0] != w[2].([]any)[0] {
			t.Fatalf("checkpoint %d (newest first): source %v step %v next %v, want %v", i, md["source"], md["step"], next, w)
		}
		if i+1 < len(hist) {
			parent, _ := st["parent_checkpoint"].(map[string]any)
			below := hist[i+1].(map[string]any)["checkpoint"].(map[string]any)
			if parent == nil || parent["checkpoint_id"] != below["checkpoint_id"] {
				t.Fatalf("checkpoint %d's parent is %v, want %v", i, parent, below["checkpoint_id"])
			}
		}
	}
}
