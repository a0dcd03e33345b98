package agent_test

import (
	"slices"
	"testing"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// toolsEvents streams an agent run on a new thread with stream_mode
// "tools" and returns the data of its tools events, in order.
func toolsEvents(t *testing.T, s *testutil.Server, input string) []map[string]any {
	t.Helper()
	tid := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": testutil.UserInput(input), "stream_mode": []string{"tools"}}, nil)
	defer resp.Body.Close()
	evs, err := testutil.NewSSEReader(resp.Body).All()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		if e.Event == "tools" {
			out = append(out, e.Data.(map[string]any))
		}
	}
	return out
}

// stream_mode "tools" sends each tool call's lifecycle in LangGraph.js's
// shape: on_tool_start with the arguments, then on_tool_end with the tool
// message, or on_tool_error when the tool failed.
func TestStreamModeToolsSendsToolLifecycle(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(
		scripted.ToolCalls(
			scripted.Call("write_file", map[string]any{"file_path": "/a.txt", "content": "alpha"}),
			scripted.Call("read_file", map[string]any{"file_path": "/missing.txt"}),
		),
		scripted.Text("done"),
	)
	byCall := map[string][]map[string]any{}
	for _, data := range toolsEvents(t, s, "work") {
		id, _ := data["toolCallId"].(string)
		byCall[id] = append(byCall[id], data)
	}
	write, read := byCall["call_1"], byCall["call_2"]
	if len(byCall) != 2 || len(write) != 2 || len(read) != 2 {
		t.Fatalf("tools events by call = %v", byCall)
	}
	if write[0]["event"] != "on_tool_start" || write[0]["name"] != "write_file" || write[0]["input"].(map[string]any)["file_path"] != "/a.txt" {
		t.Fatalf("start of write_file = %v", write[0])
	}
	out, _ := write[1]["output"].(map[string]any)
	if write[1]["event"] != "on_tool_end" || out["type"] != "tool" || out["tool_call_id"] != "call_1" || out["status"] != "success" {
		t.Fatalf("end of write_file = %v", write[1])
	}
	if read[0]["event"] != "on_tool_start" || read[1]["event"] != "on_tool_error" || read[1]["error"].(map[string]any)["message"] == "" {
		t.Fatalf("failed read_file = %v", read)
	}
}

// A tool's progress (the task tool's task_* payloads) is sent as
// on_tool_event between the call's start and end.
func TestStreamModeToolsSendsToolProgress(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	model.Script(
		scripted.ToolCalls(testutil.TaskCall("t1", "sum", "add 2 and 2", "general-purpose")),
		scripted.Text("It is 4."),
		scripted.Text("The subagent says 4."),
	)
	var got []string
	for _, data := range toolsEvents(t, s, "delegate") {
		kind := data["event"].(string)
		if kind == "on_tool_event" {
			kind += ":" + data["data"].(map[string]any)["type"].(string)
		}
		if data["toolCallId"] != "t1" || data["name"] != "task" {
			t.Fatalf("event of another call: %v", data)
		}
		got = append(got, kind)
	}
	want := []string{"on_tool_start", "on_tool_event:task_started", "on_tool_event:task_running", "on_tool_event:task_completed", "on_tool_end"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools events = %v, want %v", got, want)
	}
}
