package httpapi_test

import (
	"io"
	"slices"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// command.goto "__end__" ends the run after applying command.update, and a
// thread whose supersteps went to "__end__" has nothing pending: a run
// continuing it succeeds.
func TestCommandGotoEnd(t *testing.T) {
	s := startRunsServer(t)
	tid := newThread(t, s)
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
	s := startRunsServer(t)
	for _, byID := range []bool{false, true} {
		tid := newThread(t, s)
		paused := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "asking", "input": userInput("hi")}).Object(t)
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
		if got := lastMessage(t, out)["content"]; got != "answered yes" {
			t.Fatalf("resume (by id: %v) = %v", byID, out)
		}
		if th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t); th["status"] != "idle" {
			t.Fatalf("resumed thread = %v", th["status"])
		}
	}
}

// A Send in command.goto runs its node with the Send's input as its state.
func TestCommandGotoSendInput(t *testing.T) {
	s := startRunsServer(t)
	tid := newThread(t, s)
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps",
		"input": map[string]any{"trail": []any{"state"}}, "command": map[string]any{"goto": map[string]any{"node": "c", "input": map[string]any{"trail": []any{"sent"}}}}}).Object(t)
	if trail := out["trail"].([]any); !slices.Equal(trail, []any{"sent", "c"}) {
		t.Fatalf("trail after a Send to c = %v", trail)
	}
	// A Send waiting behind interrupt_before keeps its input in the stored
	// checkpoint, and the run that continues the thread uses it.
	tid = newThread(t, s)
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

// TestCommandTakesPrecedenceOverInput checks that a command wins over an
// input sent with it, empty or not, on every route that creates a run, as
// on LangGraph's servers. Agent Chat UI resumes a human-in-the-loop
// interrupt with {"input": {}, "command": {"resume": …}}: applied beside
// the command, the input restarted the agent, whose model asked for the
// tool again, so the approval came back and nothing was written.
func TestCommandTakesPrecedenceOverInput(t *testing.T) {
	s, model := agentServer(t, "middleware:\n  interrupt_on:\n    write_file: true\n")
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		if msgs := req.Messages; len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
			return scripted.Text("done")
		}
		return scripted.ToolCalls(scripted.Call("write_file", map[string]any{"file_path": "/x.txt", "content": "v1"}))
	})
	// paused returns a thread whose agent waits for the write's approval.
	paused := func() string {
		tid := newThread(t, s)
		s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": userInput("write")})
		return tid
	}
	resumed := func(tid, route string) {
		t.Helper()
		testutil.Eventually(t, 5*time.Second, "thread "+tid+" to settle", func() bool {
			st := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)["status"]
			return st == "idle" || st == "interrupted"
		})
		st := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
		var got []string
		for _, m := range messagesIn(t, st["values"]) {
			got = append(got, m.(map[string]any)["type"].(string)+":"+contentOf(m))
		}
		want := []string{"human:write", "ai:", "tool:Updated file /x.txt", "ai:done"}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: messages after the approval = %v, want %v (the paused call resumed, not asked again)", route, got, want)
		}
	}
	for _, input := range []any{map[string]any{}, userInput("ignored")} {
		// The body of Agent Chat UI's Approve, with an input or without.
		body := map[string]any{"input": input, "command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}, "assistant_id": "agent"}
		for _, route := range []string{"/runs", "/runs/wait", "/runs/stream"} {
			tid := paused()
			post(t, s, "/threads/"+tid+route, body)
			resumed(tid, route)
		}
		tid := paused()
		mustSucceed(t, command(t, s, tid, 1, "run.start", body))
		resumed(tid, "run.start")
	}
	// Stateless runs and batches: the command (goto __end__) is what runs;
	// the input is not applied.
	body := map[string]any{"assistant_id": "echo", "input": userInput("ignored"), "command": map[string]any{"goto": "__end__"}, "on_completion": "keep"}
	for _, route := range []string{"/runs/wait", "/runs/stream"} {
		run := s.Must(200, "GET", post(t, s, route, body), nil).Object(t)
		st := s.Must(200, "GET", "/threads/"+run["thread_id"].(string)+"/state", nil).Object(t)
		if msgs, _ := st["values"].(map[string]any)["messages"].([]any); len(msgs) != 0 {
			t.Fatalf("stateless %s applied the input beside a command: %v", route, st["values"])
		}
	}
	batch := s.Must(200, "POST", "/runs/batch", []any{body}).List(t)
	rid := batch[0].(map[string]any)["run_id"].(string)
	kwargs := s.Must(200, "GET", "/runs/"+rid, nil).Object(t)["kwargs"].(map[string]any)
	if kwargs["input"] != nil || kwargs["command"] == nil {
		t.Fatalf("batch run kwargs: input %v command %v", kwargs["input"], kwargs["command"])
	}
	// run.start checks the command's goto as the run routes do.
	tid := newThread(t, s)
	if env := command(t, s, tid, 2, "run.start", map[string]any{"assistant_id": "agent", "command": map[string]any{"goto": 3}}); env["type"] != "error" || env["error"] != "invalid_argument" {
		t.Fatalf("run.start with a bad goto = %v", env)
	}
}

// post sends a run-creating request to any route (JSON or SSE answer),
// reads the whole answer and returns its Content-Location.
func post(t *testing.T, s *testutil.Server, path string, body any) string {
	t.Helper()
	resp := s.Stream("POST", path, body, nil)
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %v", path, resp.StatusCode, err)
	}
	return resp.Header.Get("Content-Location")
}
