package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

func TestAgentToolLoopParallelToolsAndUsage(t *testing.T) {
	s, model := testutil.StartAgent(t, "max_turns: 10\n")
	model.Script(
		scripted.ToolCalls(
			scripted.Call("write_file", map[string]any{"file_path": "/a.txt", "content": "alpha"}),
			scripted.Call("write_todos", map[string]any{"todos": []any{map[string]any{"content": "check", "status": "in_progress"}}}),
			scripted.Call("read_file", map[string]any{"file_path": "/missing.txt"}),
		).WithUsage(100, 20),
		scripted.Text("All done.").Split(3).WithUsage(150, 5),
	)
	tid := testutil.NewThread(t, s)
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("work")}).Object(t)
	msgs := testutil.MessagesIn(t, out)
	// human, ai(tool calls), 3 tool messages, ai(final)
	if len(msgs) != 6 || testutil.ContentOf(msgs[5]) != "All done." {
		t.Fatalf("messages = %v", msgs)
	}
	tools := msgs[2:5]
	if !strings.Contains(testutil.ContentOf(tools[0]), "Updated file /a.txt") || tools[0].(map[string]any)["tool_call_id"] == nil {
		t.Fatalf("write_file result = %v", tools[0])
	}
	if tm := tools[2].(map[string]any); tm["status"] != "error" || !strings.HasPrefix(testutil.ContentOf(tm), "Error:") {
		t.Fatalf("a failing tool must become an error tool message: %v", tm)
	}
	if todos, _ := out["todos"].([]any); len(todos) != 1 {
		t.Fatalf("todos channel = %v", out["todos"])
	}
	// The second model call saw the tool results.
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d", len(reqs))
	}
	second := reqs[1].Chat.Messages
	if second[0].Role != "system" || second[len(second)-1].Role != "tool" || len(reqs[0].Chat.Tools) == 0 {
		t.Fatalf("second request = %+v", second)
	}
	runs := s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)
	usage := runs[0].(map[string]any)["metadata"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"] != 250.0 || usage["output_tokens"] != 25.0 || usage["calls"] != 2.0 {
		t.Fatalf("run usage = %v", usage)
	}
	if um := msgs[5].(map[string]any)["usage_metadata"].(map[string]any); um["input_tokens"] != 150.0 {
		t.Fatalf("message usage = %v", um)
	}
	// The bash tool is listed in the spec but the server flag is off.
	for _, tool := range reqs[0].Chat.Tools {
		if tool.Function.Name == "bash" {
			t.Fatal("bash offered to the model without --enable-shell")
		}
	}
}

func TestAgentTokenChunksStreamInOrder(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Text("one two three four five").Split(5))
	tid := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("go"), "stream_mode": []string{"messages-tuple", "updates"}}, nil)
	evs, err := testutil.NewSSEReader(resp.Body).All()
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	chunks := 0
	for _, e := range evs {
		if e.Event != "messages" {
			continue
		}
		pair := e.Data.([]any)
		msg, meta := pair[0].(map[string]any), pair[1].(map[string]any)
		if msg["type"] != "AIMessageChunk" || meta["langgraph_node"] != "model" {
			t.Fatalf("chunk = %s", e.Raw)
		}
		text.WriteString(msg["content"].(string))
		chunks++
	}
	if chunks < 5 || text.String() != "one two three four five" {
		t.Fatalf("%d chunks assembling %q", chunks, text.String())
	}
	found := false
	for _, e := range evs {
		if e.Event == "updates" {
			_, found = e.Data.(map[string]any)["model"]
		}
	}
	if !found {
		t.Fatal("no updates event keyed by the model node")
	}
}

func TestAgentMaxTurns(t *testing.T) {
	s, model := testutil.StartAgent(t, "max_turns: 2\n")
	model.Script(
		scripted.ToolCalls(scripted.Call("ls", map[string]any{})),
		scripted.Text("Stopping here with what I have."),
	)
	tid := testutil.NewThread(t, s)
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("loop")}).Object(t)
	if msgs := testutil.MessagesIn(t, out); testutil.ContentOf(msgs[len(msgs)-1]) != "Stopping here with what I have." {
		t.Fatalf("messages = %v", msgs)
	}
	reqs := model.Requests()
	if len(reqs) != 2 || len(reqs[1].Chat.Tools) != 0 {
		t.Fatalf("the last allowed call must offer no tools: %d calls, tools %v", len(reqs), reqs[len(reqs)-1].Chat.Tools)
	}
	run := s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)[0].(map[string]any)
	if run["metadata"].(map[string]any)["stop_reason"] != "max_turns" {
		t.Fatalf("run metadata = %v", run["metadata"])
	}
}

func TestAgentCompactionKeepsOtherChannels(t *testing.T) {
	s, model := testutil.StartAgent(t, "middleware:\n  compaction:\n    max_tokens: 60\n    keep_messages: 2\n")
	tid := testutil.NewThread(t, s)
	long := strings.Repeat("words ", 60)
	s.Must(200, "POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{
		"messages": []any{
			map[string]any{"type": "human", "content": long, "id": "h1"},
			map[string]any{"type": "ai", "content": "", "id": "a1", "tool_calls": []any{map[string]any{"name": "ls", "args": map[string]any{}, "id": "c1"}}},
			map[string]any{"type": "tool", "content": long, "tool_call_id": "c1", "name": "ls", "id": "t1"},
			map[string]any{"type": "ai", "content": "noted", "id": "a2"},
		},
		"todos": []any{map[string]any{"content": "keep me", "status": "pending"}},
		"notes": map[string]any{"deep": []any{1.0, "x"}},
	}})
	before := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)["values"].(map[string]any)
	model.Script(scripted.Text("SUMMARY: user asked things"), scripted.Text("fresh answer"))
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("next")}).Object(t)
	msgs := testutil.MessagesIn(t, out)
	if !strings.Contains(testutil.ContentOf(msgs[0]), "SUMMARY: user asked things") {
		t.Fatalf("first message is not the summary: %v", msgs[0])
	}
	for _, m := range msgs {
		if m.(map[string]any)["id"] == "h1" || m.(map[string]any)["id"] == "t1" {
			t.Fatalf("compacted message survived: %v", m)
		}
	}
	if testutil.ContentOf(msgs[len(msgs)-1]) != "fresh answer" {
		t.Fatalf("last message = %v", msgs[len(msgs)-1])
	}
	for _, k := range []string{"todos", "notes"} {
		a, _ := json.Marshal(before[k])
		b, _ := json.Marshal(out[k])
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("channel %s changed by compaction: %s -> %s", k, a, b)
		}
	}
	// The summarisation request carried the old messages; the answer request the summary.
	reqs := model.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].Chat.Messages[1].Text(), "SUMMARY") {
		t.Fatalf("model requests = %d", len(reqs))
	}
}

func TestAgentHumanInTheLoop(t *testing.T) {
	s, model := testutil.StartAgent(t, "middleware:\n  interrupt_on:\n    write_file: true\n")
	call := func() scripted.Step {
		return scripted.ToolCalls(scripted.Call("write_file", map[string]any{"file_path": "/x.txt", "content": "v1"}))
	}
	cases := []struct {
		name   string
		resume any
		check  func(t *testing.T, tool map[string]any)
	}{
		{"approve", map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}, func(t *testing.T, tool map[string]any) {
			if !strings.Contains(testutil.ContentOf(tool), "Updated file /x.txt") {
				t.Fatalf("approved call result = %v", tool)
			}
		}},
		{"edit", map[string]any{"type": "edit", "args": map[string]any{"file_path": "/y.txt", "content": "v2"}}, func(t *testing.T, tool map[string]any) {
			if !strings.Contains(testutil.ContentOf(tool), "/y.txt") {
				t.Fatalf("edited call result = %v", tool)
			}
		}},
		{"reject", []any{map[string]any{"type": "reject", "message": "not now"}}, func(t *testing.T, tool map[string]any) {
			if tool["status"] != "error" || !strings.Contains(testutil.ContentOf(tool), "not now") {
				t.Fatalf("rejected call result = %v", tool)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tid := testutil.NewThread(t, s)
			model.Script(call(), scripted.Text("ok"))
			first := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("write")}).Object(t)
			if ints, _ := first["__interrupt__"].([]any); len(ints) != 1 {
				t.Fatalf("the wait result of a paused run must carry __interrupt__: %v", first)
			}
			st := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
			if _, ok := st["values"].(map[string]any)["__interrupt__"]; ok {
				t.Fatalf("__interrupt__ leaked into the stored values: %v", st["values"])
			}
			th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)
			ints := st["interrupts"].([]any)
			if th["status"] != "interrupted" || len(ints) != 1 || st["next"].([]any)[0] != "tools" {
				t.Fatalf("paused thread %v, state next %v interrupts %v", th["status"], st["next"], ints)
			}
			req := ints[0].(map[string]any)["value"].(map[string]any)["action_requests"].([]any)[0].(map[string]any)
			if req["name"] != "write_file" {
				t.Fatalf("interrupt payload = %v", ints[0])
			}
			out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "command": map[string]any{"resume": c.resume}}).Object(t)
			msgs := testutil.MessagesIn(t, out)
			c.check(t, msgs[len(msgs)-2].(map[string]any))
			if c.name == "edit" {
				call := msgs[len(msgs)-3].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
				if call["args"].(map[string]any)["file_path"] != "/y.txt" {
					t.Fatalf("the AI message still shows the unedited call: %v", call)
				}
			}
			if testutil.ContentOf(msgs[len(msgs)-1]) != "ok" {
				t.Fatalf("final = %v", msgs[len(msgs)-1])
			}
			if st := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)["status"]; st != "idle" {
				t.Fatalf("thread after resume = %v", st)
			}
		})
	}
}

// TestAgentMarkResolvedThenContinue checks Agent Chat UI's "Mark as
// Resolved" of an approval: command goto __end__ ends the paused run
// without running the call (no file, no tool message in the thread, no
// interrupt left), and the next turn's model request answers the call the
// thread left open, since chat models refuse a history with an unanswered
// tool call.
func TestAgentMarkResolvedThenContinue(t *testing.T) {
	s, model := testutil.StartAgent(t, "middleware:\n  interrupt_on:\n    write_file: true\n")
	model.Script(scripted.ToolCalls(scripted.Call("write_file", map[string]any{"file_path": "/x.txt", "content": "v1"})), scripted.Text("ok"))
	tid := testutil.NewThread(t, s)
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("write")})
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{}, "command": map[string]any{"goto": "__end__"}})
	th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)
	st := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
	if th["status"] != "idle" || len(st["next"].([]any)) != 0 || len(st["interrupts"].([]any)) != 0 {
		t.Fatalf("resolved thread: status %v next %v interrupts %v", th["status"], st["next"], st["interrupts"])
	}
	var types []string
	for _, m := range testutil.MessagesIn(t, st["values"]) {
		types = append(types, m.(map[string]any)["type"].(string))
	}
	if !slices.Equal(types, []string{"human", "ai"}) {
		t.Fatalf("resolved thread messages = %v, want the call left unrun", types)
	}
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("next")})
	reqs := model.Requests()
	last := reqs[len(reqs)-1].Chat.Messages
	var roles []string
	for _, m := range last {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "tool", "user"}) || last[3].ToolCallID != last[2].ToolCalls[0].ID {
		t.Fatalf("next turn's model request: roles %v; want the open call answered after it", roles)
	}
}

func TestAgentCancelAbortsModelRequest(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Text("never finished").Split(10).ThenHang())
	tid := testutil.NewThread(t, s)
	rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("slow")}).Object(t)["run_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := model.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	s.Must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
	if err := model.WaitDisconnect(ctx); err != nil {
		t.Fatalf("the upstream model request was not aborted: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	if testutil.RunStatus(t, s, tid, rid) != "interrupted" {
		t.Fatal("run not interrupted")
	}
}

func TestAgentShellNeedsTheServerFlag(t *testing.T) {
	s, model := testutil.StartAgent(t, "", func(o *testutil.Options) { o.Shell = true })
	model.Script(scripted.ToolCalls(scripted.Call("bash", map[string]any{"command": "echo from-bash"})), scripted.Text("ran"))
	tid := testutil.NewThread(t, s)
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("shell")}).Object(t)
	msgs := testutil.MessagesIn(t, out)
	if tool := testutil.ContentOf(msgs[2]); !strings.Contains(tool, "from-bash") {
		t.Fatalf("bash result = %q", tool)
	}
}

func TestAgentSpecErrorsStopStartup(t *testing.T) {
	for name, c := range map[string]struct{ spec, want string }{
		"unknown tool":  {"tools: [teleport]\n", `bad.yaml: field "tools[0]": unknown tool "teleport"`},
		"unknown field": {"colour: blue\n", `bad.yaml:1:1: unknown key "colour"`},
		"bad type":      {"max_turns: many\n", `bad.yaml:1:12: max_turns: want a whole number, got the string "many"`},
		"empty":         {"# later\n", `bad.yaml: the file is empty`},
	} {
		t.Run(name, func(t *testing.T) {
			srvErr := testutil.BuildErr(t, testutil.Options{
				Graphs: `{"graphs": {"bad": "./bad.yaml"}}`,
				Files:  map[string]string{"bad.yaml": c.spec},
			})
			if srvErr == nil || !strings.Contains(srvErr.Error(), c.want) {
				t.Fatalf("start-up error = %v, want it to say %s", srvErr, c.want)
			}
		})
	}
}

func TestAgentModelAndPromptOverrides(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Text("a"), scripted.Text("b"), scripted.Text("c"))
	asst := s.Must(200, "POST", "/assistants", map[string]any{"graph_id": "agent", "config": map[string]any{"configurable": map[string]any{"model": "from-assistant", "system_prompt": "Assistant prompt."}}}).Object(t)["assistant_id"].(string)
	tid := testutil.NewThread(t, s)
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("x")})
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": asst, "input": testutil.UserInput("y")})
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": asst, "input": testutil.UserInput("z"), "context": map[string]any{"model": "from-run", "system_prompt": "Run prompt."}})
	reqs := model.Requests()
	want := []struct{ model, prompt string }{{"test-model", "You help."}, {"from-assistant", "Assistant prompt."}, {"from-run", "Run prompt."}}
	for i, w := range want {
		got := reqs[i].Chat
		if got.Model != w.model || got.Messages[0].Text() != w.prompt {
			t.Errorf("call %d: model %q prompt %q, want %q %q", i, got.Model, got.Messages[0].Text(), w.model, w.prompt)
		}
	}
}

// An agent with file tools has its thread's workspace made while its first
// model call runs, so that the first tool call does not wait for it; a
// graph without such tools makes none.
func TestAgentPreparesWorkspaceDuringFirstModelCall(t *testing.T) {
	dir := t.TempDir()
	s, model := testutil.StartAgent(t, "", func(o *testutil.Options) { o.DataDir = dir })
	model.Script(scripted.Text("No tools needed."))
	tid := testutil.NewThread(t, s)
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("hi")})
	ws := filepath.Join(dir, "workspaces", tid)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if fi, err := os.Stat(ws); err == nil && fi.IsDir() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workspace %s not made during the run", ws)
		}
		time.Sleep(5 * time.Millisecond)
	}
	echo := testutil.NewThread(t, s)
	s.Must(200, "POST", "/threads/"+echo+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("hi")})
	if _, err := os.Stat(filepath.Join(dir, "workspaces", echo)); !os.IsNotExist(err) {
		t.Fatalf("a graph without file tools made a workspace: %v", err)
	}
}
