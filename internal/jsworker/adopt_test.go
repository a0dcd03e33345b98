package jsworker_test

import (
	"strings"
	"testing"

	"agentserver/internal/testutil"
)

// TestJSGraphContinuesGoThread runs a JavaScript graph on a thread whose
// newest checkpoint a Go graph (the built-in echo) wrote: the JS graph
// adopts it (its message list revived as LangChain messages, ids kept),
// appends to it through its own reducer, and the next JS run continues
// the JS checkpoint. A Go run paused before its node is not adopted: the
// JS run fails saying so, and the thread is left as it was.
func TestJSGraphContinuesGoThread(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	say := func(text string) map[string]any {
		return map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}
	}
	thread := testutil.NewThread(t, s)
	first := messages(t, wait(t, s, thread, map[string]any{"assistant_id": "echo", "input": say("hi")}))
	out := wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": say("again")})
	msgs := messages(t, out)
	var got []string
	for _, m := range msgs {
		got = append(got, m["type"].(string)+":"+m["content"].(string))
	}
	if strings.Join(got, "|") != "human:hi|ai:echo: hi|human:again|ai:you said: again" {
		t.Fatalf("messages after the JS run on the Go thread = %v", got)
	}
	if msgs[0]["id"] != first[0]["id"] || msgs[1]["id"] != first[1]["id"] {
		t.Errorf("the Go run's message ids changed: %v %v, want %v %v", msgs[0]["id"], msgs[1]["id"], first[0]["id"], first[1]["id"])
	}
	state := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)
	if md := state["metadata"].(map[string]any); md["graph_id"] != "js_chat" || md["source"] != "loop" {
		t.Errorf("newest checkpoint metadata = %v, want the JS run's", md)
	}
	again := messages(t, wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": say("third")}))
	if len(again) != 6 || again[5]["content"] != "you said: third" || again[1]["content"] != "echo: hi" {
		t.Fatalf("messages after a second JS run = %v", again)
	}

	paused := testutil.NewThread(t, s)
	wait(t, s, paused, map[string]any{"assistant_id": "echo", "input": say("wait"), "interrupt_before": []string{"echo"}})
	before := s.Do("GET", "/threads/"+paused+"/state", nil).Object(t)
	if next, _ := before["next"].([]any); len(next) != 1 {
		t.Fatalf("the Go run did not pause: next = %v", before["next"])
	}
	r := s.Do("POST", "/threads/"+paused+"/runs/wait", map[string]any{"assistant_id": "js_chat", "input": say("from js")})
	if !strings.Contains(string(r.Raw), "still has nodes to run") {
		t.Errorf("JS run on a paused Go thread: %d %s, want an error naming the nodes still to run", r.Status, r.Raw)
	}
	after := s.Do("GET", "/threads/"+paused+"/state", nil).Object(t)
	if checkpointID(after) != checkpointID(before) {
		t.Errorf("the paused Go thread changed: checkpoint %s, was %s", checkpointID(after), checkpointID(before))
	}
}
