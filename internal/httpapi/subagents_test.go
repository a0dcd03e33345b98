package httpapi_test

import (
	"strings"
	"testing"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

func TestTaskToolDelegates(t *testing.T) {
	s, model := agentServer(t, "subagents: {}\n")
	model.Script(
		scripted.ToolCalls(scripted.Call("task", map[string]any{"description": "sum", "prompt": "add 2 and 2", "subagent_type": "general-purpose"})).WithUsage(10, 5),
		scripted.Text("It is 4.").WithUsage(20, 3),
		scripted.Text("The subagent says 4.").WithUsage(30, 4),
	)
	tid := newThread(t, s)
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": userInput("delegate"), "stream_mode": []string{"custom", "values"}}, nil)
	evs, err := testutil.NewSSEReader(resp.Body).All()
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		if e.Event == "custom" {
			kinds = append(kinds, e.Data.(map[string]any)["type"].(string))
		}
	}
	if strings.Join(kinds, ",") != "task_started,task_running,task_completed" {
		t.Fatalf("custom events = %v", kinds)
	}
	st := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)["values"]
	msgs := messagesIn(t, st)
	tool := msgs[2].(map[string]any)
	if contentOf(tool) != "Task Succeeded. Result: It is 4." || tool["additional_kwargs"].(map[string]any)["subagent_status"] != "completed" {
		t.Fatalf("task result = %v", tool)
	}
	run := s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)[0].(map[string]any)
	usage := run["metadata"].(map[string]any)["usage"].(map[string]any)
	if usage["total_tokens"] != 72.0 || usage["subagent_tokens"] != 23.0 {
		t.Fatalf("usage = %v", usage)
	}
}
