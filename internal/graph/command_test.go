package graph_test

import (
	"slices"
	"testing"

	"agentserver/internal/testutil"
)

// command.goto "__end__" ends the run after applying command.update, and a
// thread whose supersteps went to "__end__" has nothing pending: a run
// continuing it succeeds.
func TestCommandGotoEnd(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps",
		"command": map[string]any{"goto": "__end__", "update": map[string]any{"trail": []any{"u"}}}}).Object(t)
	if trail := out["trail"].([]any); !slices.Equal(trail, []any{"u"}) {
		t.Fatalf("goto __end__ = %v", out)
	}
	superstep := map[string]any{"updates": []any{map[string]any{"as_node": "a", "values": map[string]any{"trail": []any{"x"}}, "command": map[string]any{"goto": "__end__"}}}}
	tid = s.Must(200, "POST", "/threads", map[string]any{"supersteps": []any{superstep}}).Object(t)["thread_id"].(string)
	if next := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)["next"].([]any); len(next) != 0 {
		t.Fatalf("next after a superstep to __end__ = %v", next)
	}
	bad := map[string]any{"updates": []any{map[string]any{"as_node": "a", "command": map[string]any{"goto": 3}}}}
	s.Must(422, "POST", "/threads", map[string]any{"supersteps": []any{bad}})
	out = s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps", "input": nil}).Object(t)
	if _, failed := out["__error__"]; failed || !slices.Equal(out["trail"].([]any), []any{"x"}) {
		t.Fatalf("continuing a thread at __end__ = %v", out)
	}
}

// A node paused on graph.Interrupt gets command.resume: the whole value, or
// its own entry of a map keyed by interrupt id.
func TestCommandResumeReachesTheInterruptedNode(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	for _, byID := range []bool{false, true} {
		tid := testutil.NewThread(t, s)
		paused := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "asking", "input": testutil.UserInput("hi")}).Object(t)
		ints, _ := paused["__interrupt__"].([]any)
		if len(ints) != 1 {
			t.Fatalf("paused run = %v", paused)
		}
		if th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t); th["status"] != "interrupted" {
			t.Fatalf("paused thread = %v", th["status"])
		}
		var resume any = "yes"
		if byID {
			resume = map[string]any{ints[0].(map[string]any)["id"].(string): "yes"}
		}
		out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "asking", "command": map[string]any{"resume": resume}}).Object(t)
		if got := testutil.LastMessage(t, out)["content"]; got != "answered yes" {
			t.Fatalf("resume (by id: %v) = %v", byID, out)
		}
		if th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t); th["status"] != "idle" {
			t.Fatalf("resumed thread = %v", th["status"])
		}
	}
}

// A Send in command.goto runs its node with the Send's input as its state.
func TestCommandGotoSendInput(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps",
		"input": map[string]any{"trail": []any{"state"}}, "command": map[string]any{"goto": map[string]any{"node": "c", "input": map[string]any{"trail": []any{"sent"}}}}}).Object(t)
	if trail := out["trail"].([]any); !slices.Equal(trail, []any{"sent", "c"}) {
		t.Fatalf("trail after a Send to c = %v", trail)
	}
	// A Send waiting behind interrupt_before keeps its input in the stored
	// checkpoint, and the run that continues the thread uses it.
	tid = testutil.NewThread(t, s)
	send := map[string]any{"node": "c", "input": map[string]any{"trail": []any{"kept"}}}
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps", "command": map[string]any{"goto": []any{send}}, "interrupt_before": []string{"c"}})
	if next := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)["next"].([]any); !slices.Equal(next, []any{"c"}) {
		t.Fatalf("next before the Send = %v", next)
	}
	out = s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps", "input": nil}).Object(t)
	if trail := out["trail"].([]any); !slices.Equal(trail, []any{"kept", "c"}) {
		t.Fatalf("trail after resuming a Send = %v", trail)
	}
	// A bad goto fails the run with InvalidUpdateError, as a bad input does.
	out = s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps", "command": map[string]any{"goto": map[string]any{"node": "c", "input": 3}}}).Object(t)
	if e, _ := out["__error__"].(map[string]any); e["error"] != "InvalidUpdateError" {
		t.Fatalf("a Send with a number input = %v", out)
	}
}
