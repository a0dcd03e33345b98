package httpapi_test

import (
	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
	"io"
	"slices"
	"testing"
	"time"
)

// TestCommandTakesPrecedenceOverInput checks that a command wins over an
// input sent with it, empty or not, on every route that creates a run, as
// on LangGraph's servers. Agent Chat UI resumes a human-in-the-loop
// interrupt with {"input": {}, "command": {"resume": …}}: applied beside
// the command, the input restarted the agent, whose model asked for the
// tool again, so the approval came back and nothing was written.
func TestCommandTakesPrecedenceOverInput(t *testing.T) {
	s, model := testutil.StartAgent(t, "middleware:\n  interrupt_on:\n    write_file: true\n")
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		if msgs := req.Messages; len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
			return scripted.Text("done")
		}
		return scripted.ToolCalls(scripted.Call("write_file", map[string]any{"file_path": "/x.txt", "content": "v1"}))
	})
	// paused returns a thread whose agent waits for the write's approval.
	paused := func() string {
		tid := testutil.NewThread(t, s)
		s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("write")})
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
		for _, m := range testutil.MessagesIn(t, st["values"]) {
			got = append(got, m.(map[string]any)["type"].(string)+":"+testutil.ContentOf(m))
		}
		want := []string{"human:write", "ai:", "tool:Updated file /x.txt", "ai:done"}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: messages after the approval = %v, want %v (the paused call resumed, not asked again)", route, got, want)
		}
	}
	for _, input := range []any{map[string]any{}, testutil.UserInput("ignored")} {
		// The body of Agent Chat UI's Approve, with an input or without.
		body := map[string]any{"input": input, "command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}, "assistant_id": "agent"}
		for _, route := range []string{"/runs", "/runs/wait", "/runs/stream"} {
			tid := paused()
			post(t, s, "/threads/"+tid+route, body)
			resumed(tid, route)
		}
		tid := paused()
		testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 1, "run.start", body))
		resumed(tid, "run.start")
	}
	// Stateless runs and batches: the command (goto __end__) is what runs;
	// the input is not applied.
	body := map[string]any{"assistant_id": "echo", "input": testutil.UserInput("ignored"), "command": map[string]any{"goto": "__end__"}, "on_completion": "keep"}
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
	tid := testutil.NewThread(t, s)
	if env := testutil.ProtocolCommand(t, s, tid, 2, "run.start", map[string]any{"assistant_id": "agent", "command": map[string]any{"goto": 3}}); env["type"] != "error" || env["error"] != "invalid_argument" {
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
