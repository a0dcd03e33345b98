package asynctasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentserver/internal/asynctasks"
	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// jsAgent is the A2A agent of tests/sdk/a2a-echo-agent.mjs, built with the
// official JavaScript SDK, and the JSON-RPC methods it was called with.
type jsAgent struct {
	url string

	mu      sync.Mutex
	methods []string
	// completed is closed when the agent has completed its first task.
	completed chan struct{}
	once      sync.Once
}

// startJSAgent starts the JavaScript A2A agent for the test.
func startJSAgent(t *testing.T) *jsAgent {
	t.Helper()
	sdk := testutil.SDKDir(t, "@a2a-js/sdk", "express")
	a := &jsAgent{completed: make(chan struct{})}
	a.url = testutil.StartNodeScript(t, sdk, "a2a-echo-agent.mjs", func(line string) {
		if strings.HasPrefix(line, "completed ") {
			a.once.Do(func() { close(a.completed) })
		}
		if m, ok := strings.CutPrefix(line, "rpc "); ok {
			a.mu.Lock()
			a.methods = append(a.methods, m)
			a.mu.Unlock()
		}
	})
	return a
}

// called reports whether the agent received a request of method.
func (a *jsAgent) called(method string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.methods, method)
}

// jsSupervisor serves a supervisor whose one async subagent, jsecho, is the
// JavaScript agent, with the scripted model; extra is appended to its spec.
func jsSupervisor(t *testing.T, agent *jsAgent, extra string) (*testutil.Server, *scripted.Server) {
	t.Helper()
	model := scripted.New()
	t.Cleanup(model.Close)
	spec := fmt.Sprintf(`name: boss
model: {name: m, base_url: %s, max_retries: 0}
async_subagents:
  - name: jsecho
    description: echoes; holds tasks that say hold
    protocol: a2a
    url: %s
%s`, model.URL(), agent.url, extra)
	s := testutil.StartServer(t, testutil.Options{Graphs: `{"graphs": {"boss": "./boss.yaml"}}`, Files: map[string]string{"boss.yaml": spec}})
	return s, model
}

// supervisorTurn runs the supervisor on thread with text, the model making
// calls (a tool call step, then a closing text), and returns the contents
// of the tool messages of the turn and the final values.
func supervisorTurn(t *testing.T, s *testutil.Server, model *scripted.Server, thread, text string, calls ...scripted.ToolCall) ([]string, map[string]any) {
	t.Helper()
	model.Script(scripted.ToolCalls(calls...), scripted.Text("done"))
	out := s.Must(200, "POST", "/threads/"+thread+"/runs/wait", map[string]any{
		"assistant_id": "boss", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}},
	}).Object(t)
	msgs, _ := out["messages"].([]any)
	if len(msgs) < len(calls)+1 {
		t.Fatalf("turn %q ended with %v", text, out)
	}
	var results []string
	for _, m := range msgs[len(msgs)-1-len(calls) : len(msgs)-1] {
		c, _ := m.(map[string]any)["content"].(string)
		results = append(results, c)
	}
	return results, out
}

var launchedTask = regexp.MustCompile(`^Launched async subagent\. task_id: ([0-9a-f-]{36})`)

// taskRecord reads the supervisor thread's async_tasks record of task.
func taskRecord(t *testing.T, s *testutil.Server, thread, task string) map[string]any {
	t.Helper()
	values, _ := s.Must(200, "GET", "/threads/"+thread+"/state", nil).Object(t)["values"].(map[string]any)
	tasks, _ := values["async_tasks"].(map[string]any)
	rec, _ := tasks[task].(map[string]any)
	return rec
}

func launched(t *testing.T, result string) string {
	t.Helper()
	m := launchedTask.FindStringSubmatch(result)
	if m == nil {
		t.Fatalf("start result = %q", result)
	}
	return m[1]
}

// TestSupervisorWithJSA2AAgent drives a supervisor whose async subagent is
// an A2A agent written with @a2a-js/sdk through start, the completion
// push, check, update, cancel and list.
func TestSupervisorWithJSA2AAgent(t *testing.T) {
	agent := startJSAgent(t)
	s, model := jsSupervisor(t, agent, "")
	thread := s.Must(200, "POST", "/threads", map[string]any{}).Object(t)["thread_id"].(string)

	results, out := supervisorTurn(t, s, model, thread, "start jsecho: hello; start jsecho: hold on",
		scripted.Call("start_async_task", map[string]any{"description": "hello", "subagent_type": "jsecho"}),
		scripted.Call("start_async_task", map[string]any{"description": "hold on", "subagent_type": "jsecho"}))
	echoTask, heldTask := launched(t, results[0]), launched(t, results[1])
	tasks := out["async_tasks"].(map[string]any)
	if rec, _ := tasks[heldTask].(map[string]any); rec["agent_name"] != "jsecho" || rec["status"] != "running" || rec["run_id"] == "" {
		t.Fatalf("held task record after start = %v", rec)
	}

	// The echo task completes on the agent; the supervisor follows it with
	// tasks/resubscribe and pushes the record without a tool call.
	testutil.Eventually(t, 10*time.Second, "the echo task's record pushed as success", func() bool {
		return taskRecord(t, s, thread, echoTask)["status"] == "success"
	})
	if !agent.called("tasks/resubscribe") {
		t.Fatal("the completion was not followed with tasks/resubscribe")
	}

	check := func(task string) map[string]any {
		t.Helper()
		results, _ := supervisorTurn(t, s, model, thread, "check "+task, scripted.Call("check_async_task", map[string]any{"task_id": task}))
		var res map[string]any
		if err := json.Unmarshal([]byte(results[0]), &res); err != nil {
			t.Fatalf("check result = %q", results[0])
		}
		return res
	}
	if res := check(echoTask); res["status"] != "success" || res["result"] != "echo: hello" {
		t.Fatalf("check of the echo task = %v", res)
	}
	if res := check(heldTask); res["status"] != "running" {
		t.Fatalf("check of the held task = %v", res)
	}

	firstRun := taskRecord(t, s, thread, heldTask)["run_id"].(string)
	results, _ = supervisorTurn(t, s, model, thread, "update", scripted.Call("update_async_task", map[string]any{"task_id": heldTask, "message": "hold, new plan"}))
	if results[0] != "Updated async subagent. task_id: "+heldTask {
		t.Fatalf("update result = %q", results[0])
	}
	rec := taskRecord(t, s, thread, heldTask)
	if rec["run_id"] == firstRun || rec["status"] != "running" {
		t.Fatalf("held task record after update = %v (first run %s)", rec, firstRun)
	}
	direct, err := asynctasks.NewA2A(asynctasks.HTTPConfig{URL: agent.url, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := direct.Run(t.Context(), heldTask, firstRun); err != nil || info.Status != asynctasks.StatusInterrupted {
		t.Fatalf("the replaced A2A task = %+v, %v; want it cancelled by the new message", info, err)
	}

	results, _ = supervisorTurn(t, s, model, thread, "cancel", scripted.Call("cancel_async_task", map[string]any{"task_id": heldTask}))
	if results[0] != "Cancelled async subagent task: "+heldTask {
		t.Fatalf("cancel result = %q", results[0])
	}
	if st := taskRecord(t, s, thread, heldTask)["status"]; st != "cancelled" {
		t.Fatalf("held task record after cancel: status %v", st)
	}
	if info, err := direct.Run(t.Context(), heldTask, rec["run_id"].(string)); err != nil || info.Status != asynctasks.StatusInterrupted {
		t.Fatalf("the cancelled A2A task = %+v, %v", info, err)
	}

	results, _ = supervisorTurn(t, s, model, thread, "list", scripted.Call("list_async_tasks", map[string]any{}))
	for _, want := range []string{"2 tracked task(s):", "- task_id: " + echoTask + "  agent: jsecho  status: success", "- task_id: " + heldTask + "  agent: jsecho  status: cancelled"} {
		if !strings.Contains(results[0], want) {
			t.Fatalf("list = %q, want a line %q", results[0], want)
		}
	}
}

// TestSupervisorNotifiedByJSA2AAgent checks notify_on_completion with the
// JavaScript agent: its task's completion queues a supervisor run that
// reads the answer (the agent has no tasks/list, so the transport gives the
// answer it read last).
func TestSupervisorNotifiedByJSA2AAgent(t *testing.T) {
	agent := startJSAgent(t)
	s, model := jsSupervisor(t, agent, "notify_on_completion: true\n")
	thread := s.Must(200, "POST", "/threads", map[string]any{}).Object(t)["thread_id"].(string)
	model.SetResponder(func(scripted.ChatRequest) scripted.Step { return scripted.Text("noted") })
	results, _ := supervisorTurn(t, s, model, thread, "start", scripted.Call("start_async_task", map[string]any{"description": "ping", "subagent_type": "jsecho"}))
	task := launched(t, results[0])
	testutil.Eventually(t, 10*time.Second, "a notification run that succeeded", func() bool {
		runs := s.Must(200, "GET", "/threads/"+thread+"/runs", nil).List(t)
		return len(runs) == 2 && runs[0].(map[string]any)["status"] == "success"
	})
	values := s.Must(200, "GET", "/threads/"+thread+"/state", nil).Object(t)["values"].(map[string]any)
	var notice string
	for _, m := range values["messages"].([]any) {
		if c, _ := m.(map[string]any)["content"].(string); strings.HasPrefix(c, "[async task update]") {
			notice = c
		}
	}
	if !strings.Contains(notice, "task_id: "+task) || !strings.Contains(notice, "status: success") || !strings.Contains(notice, "echo: ping") {
		t.Fatalf("completion message = %q", notice)
	}
	if st := taskRecord(t, s, thread, task)["status"]; st != "success" {
		t.Fatalf("record after the notification: status %v", st)
	}
}

// TestA2AWaitForTaskThatEndedBeforeItWasFollowed waits on a JavaScript
// agent's task that completed before Wait started: A2A agents refuse to
// resubscribe to an ended task (the SDK answers error -32004), which must
// not keep the completion from being reported.
func TestA2AWaitForTaskThatEndedBeforeItWasFollowed(t *testing.T) {
	agent := startJSAgent(t)
	x, err := asynctasks.NewA2A(asynctasks.HTTPConfig{URL: agent.url, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	tid, rid, err := x.Start(t.Context(), "", "early")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the task to complete", func() bool {
		info, err := x.Run(t.Context(), tid, rid)
		return err == nil && info.Status == asynctasks.StatusSuccess
	})
	info, err := x.Wait(t.Context(), tid, rid)
	if err != nil || info.Status != asynctasks.StatusSuccess {
		t.Fatalf("Wait = %+v, %v; want success", info, err)
	}
	if !agent.called("tasks/resubscribe") {
		t.Fatal("Wait did not try to follow the task")
	}
	if answer, err := x.LastMessage(t.Context(), tid); err != nil || answer != "echo: early" {
		t.Fatalf("LastMessage = %v, %v", answer, err)
	}
}

// TestSupervisorNotifiedOfTaskThatEndedDuringItsStart has the JavaScript
// agent complete a task before the supervisor's tool step that started it
// is written: in the same step, an MCP tool waits for the agent's first
// completion. The notification must still come, once the record exists.
func TestSupervisorNotifiedOfTaskThatEndedDuringItsStart(t *testing.T) {
	agent := startJSAgent(t)
	mcpURL := blockingMCPServer(t, agent.completed)
	s, model := jsSupervisor(t, agent, "notify_on_completion: true\nmcp_servers:\n  - {name: gate, url: "+mcpURL+"}\n")
	thread := s.Must(200, "POST", "/threads", map[string]any{}).Object(t)["thread_id"].(string)
	model.SetResponder(func(scripted.ChatRequest) scripted.Step { return scripted.Text("noted") })
	results, _ := supervisorTurn(t, s, model, thread, "start",
		scripted.Call("start_async_task", map[string]any{"description": "quick", "subagent_type": "jsecho"}),
		scripted.Call("gate_wait_for_agent", map[string]any{}))
	task := launched(t, results[0])
	if results[1] != "the agent completed a task" {
		t.Fatalf("gate tool result = %q", results[1])
	}
	testutil.Eventually(t, 10*time.Second, "a notification run", func() bool {
		return len(s.Must(200, "GET", "/threads/"+thread+"/runs", nil).List(t)) == 2
	})
	testutil.Eventually(t, 10*time.Second, "the record to read success", func() bool {
		return taskRecord(t, s, thread, task)["status"] == "success"
	})
}

// blockingMCPServer serves an MCP server (Go SDK, streamable HTTP on
// 127.0.0.1) whose one tool, wait_for_agent, answers once done is closed.
func blockingMCPServer(t *testing.T, done <-chan struct{}) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "gate", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "wait_for_agent", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-done:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the agent completed a task"}}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}
