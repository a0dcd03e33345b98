package subagents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/stats"
)

func TestTaskToolDelegates(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	model.Script(
		scripted.ToolCalls(scripted.Call("task", map[string]any{"description": "sum", "prompt": "add 2 and 2", "subagent_type": "general-purpose"})).WithUsage(10, 5),
		scripted.Text("It is 4.").WithUsage(20, 3),
		scripted.Text("The subagent says 4.").WithUsage(30, 4),
	)
	tid := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("delegate"), "stream_mode": []string{"custom", "values"}}, nil)
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
	msgs := testutil.MessagesIn(t, st)
	tool := msgs[2].(map[string]any)
	if testutil.ContentOf(tool) != "Task Succeeded. Result: It is 4." || tool["additional_kwargs"].(map[string]any)["subagent_status"] != "completed" {
		t.Fatalf("task result = %v", tool)
	}
	run := s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)[0].(map[string]any)
	usage := run["metadata"].(map[string]any)["usage"].(map[string]any)
	if usage["total_tokens"] != 72.0 || usage["subagent_tokens"] != 23.0 {
		t.Fatalf("usage = %v", usage)
	}
	// The dispatching AI message carries the subagent's usage too.
	ai := msgs[1].(map[string]any)
	sub := ai["additional_kwargs"].(map[string]any)["subagent_token_usage"].(map[string]any)
	if sub["total_tokens"] != 23.0 || ai["usage_metadata"].(map[string]any)["total_tokens"] != 15.0+23.0 {
		t.Fatalf("dispatching AI message = %v", ai)
	}

	// The execution record is served, listed and one by one.
	rid := run["run_id"].(string)
	callID := tool["tool_call_id"].(string)
	list := s.Must(200, "GET", "/threads/"+tid+"/runs/"+rid+"/subagents", nil).List(t)
	if len(list) != 1 {
		t.Fatalf("subagents of the run = %v", list)
	}
	rec := list[0].(map[string]any)
	if rec["tool_call_id"] != callID || rec["status"] != "completed" || rec["result"] != "It is 4." || rec["subagent_type"] != "general-purpose" ||
		rec["parent_run_id"] != rid || rec["usage"].(map[string]any)["total_tokens"] != 23.0 || len(rec["steps"].([]any)) == 0 {
		t.Fatalf("execution record = %v", rec)
	}
	one := s.Must(200, "GET", "/threads/"+tid+"/runs/"+rid+"/subagents/"+callID, nil).Object(t)
	if one["tool_call_id"] != callID || one["result"] != "It is 4." {
		t.Fatalf("GET one record = %v", one)
	}
	s.Must(404, "GET", "/threads/"+tid+"/runs/"+rid+"/subagents/no-such-call", nil)
	other := testutil.NewThread(t, s)
	s.Must(404, "GET", "/threads/"+other+"/runs/"+rid+"/subagents", nil)
	s.Must(422, "GET", "/threads/"+tid+"/runs/not-a-uuid/subagents", nil)
}

// ---------------------------------------------------------------- helpers

// leadMarker is in the lead's system prompt (the task tool's section) and
// never in a subagent's, which is how the scripted model tells them apart.
const leadMarker = "## Subagents (the task tool)"

func isChild(req scripted.ChatRequest) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == "system" && !strings.Contains(req.Messages[0].Text(), leadMarker)
}

func isLead(req scripted.ChatRequest) bool { return !isChild(req) }

// turn counts the assistant messages a request carries: 0 for the first
// model call of an agent loop, 1 for the second, …
func turn(req scripted.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// route answers the lead's k-th call with lead[k] and a subagent's k-th
// call with children[prompt][k]; anything else fails the test. It lets
// concurrent subagents consume their own scripts in any order.
func route(t *testing.T, model *scripted.Server, lead []scripted.Step, children map[string][]scripted.Step) {
	t.Helper()
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		k := turn(req)
		steps, who := lead, "lead"
		if isChild(req) {
			who = "subagent " + req.LastUserText()
			steps = children[req.LastUserText()]
		}
		if k >= len(steps) {
			t.Errorf("unexpected model call %d of %s", k, who)
			return scripted.Error(http.StatusTeapot, "unexpected call")
		}
		return steps[k]
	})
}

// requestsOf splits the model's recorded requests into the lead's and the
// subagents'.
func requestsOf(model *scripted.Server) (lead, children []scripted.Request) {
	for _, r := range model.Requests() {
		if isChild(r.Chat) {
			children = append(children, r)
		} else {
			lead = append(lead, r)
		}
	}
	return lead, children
}

// streamRun runs the agent on a new thread over a real SSE stream and
// returns the thread id and every event.
func streamRun(t *testing.T, s *testutil.Server, input string) (string, []testutil.SSEEvent) {
	t.Helper()
	tid := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": testutil.UserInput(input), "stream_mode": []string{"custom", "values"}}, nil)
	defer resp.Body.Close()
	evs, err := testutil.NewSSEReader(resp.Body).All()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Event == "error" {
			t.Fatalf("run failed: %s", e.Raw)
		}
	}
	return tid, evs
}

// taskEvents returns the task_* custom events, in stream order.
func taskEvents(evs []testutil.SSEEvent) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if m, ok := e.Data.(map[string]any); ok && e.Event == "custom" && strings.HasPrefix(fmt.Sprint(m["type"]), "task_") {
			out = append(out, m)
		}
	}
	return out
}

// kindsOf lists the event types of one task id.
func kindsOf(evs []map[string]any, taskID string) []string {
	var out []string
	for _, e := range evs {
		if e["task_id"] == taskID {
			out = append(out, e["type"].(string))
		}
	}
	return out
}

func threadMessages(t *testing.T, s *testutil.Server, tid string) []any {
	t.Helper()
	return testutil.MessagesIn(t, s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)["values"])
}

// toolAnswers maps tool call ids to their tool messages and fails the test
// unless every tool call of every AI message has exactly one tool message
// and every tool message answers a call.
func toolAnswers(t *testing.T, msgs []any) map[string]map[string]any {
	t.Helper()
	calls := map[string]bool{}
	answers := map[string]map[string]any{}
	for _, m := range msgs {
		msg := m.(map[string]any)
		switch msg["type"] {
		case "ai":
			tcs, _ := msg["tool_calls"].([]any)
			for _, tc := range tcs {
				calls[tc.(map[string]any)["id"].(string)] = true
			}
		case "tool":
			id := msg["tool_call_id"].(string)
			if answers[id] != nil {
				t.Fatalf("tool call %s answered twice: %v and %v", id, answers[id], msg)
			}
			answers[id] = msg
		}
	}
	for id := range calls {
		if answers[id] == nil {
			t.Fatalf("tool call %s has no tool message (dangling): %v", id, msgs)
		}
	}
	for id := range answers {
		if !calls[id] {
			t.Fatalf("tool message for unknown call %s", id)
		}
	}
	return answers
}

func kwargs(msg map[string]any) map[string]any {
	kw, _ := msg["additional_kwargs"].(map[string]any)
	return kw
}

func runOf(t *testing.T, s *testutil.Server, tid string) map[string]any {
	t.Helper()
	return s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)[0].(map[string]any)
}

func deadline(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ---------------------------------------------------------------- outcomes

func TestTaskFailure(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	model.Script(
		scripted.ToolCalls(testutil.TaskCall("t1", "look up", "find it", "general-purpose")),
		scripted.Error(http.StatusInternalServerError, "upstream exploded"),
		scripted.Text("The subagent failed; here is what I know."),
	)
	tid, evs := streamRun(t, s, "go")
	answers := toolAnswers(t, threadMessages(t, s, tid))
	tool := answers["t1"]
	if text := testutil.ContentOf(tool); !strings.HasPrefix(text, "Task failed. Error: ") || !strings.Contains(text, "upstream exploded") {
		t.Fatalf("tool message = %q", text)
	}
	kw := kwargs(tool)
	if kw["subagent_status"] != "failed" || !strings.Contains(fmt.Sprint(kw["subagent_error"]), "upstream exploded") || kw["subagent_result_brief"] != nil {
		t.Fatalf("metadata = %v", kw)
	}
	tes := taskEvents(evs)
	if got := kindsOf(tes, "t1"); !slices.Equal(got, []string{"task_started", "task_failed"}) {
		t.Fatalf("events = %v", got)
	}
	if last := tes[len(tes)-1]; !strings.Contains(fmt.Sprint(last["error"]), "upstream exploded") {
		t.Fatalf("task_failed = %v", last)
	}
	// A failed subagent does not fail its parent, and retries were off.
	if run := runOf(t, s, tid); run["status"] != "success" {
		t.Fatalf("lead run = %v", run["status"])
	}
	if _, children := requestsOf(model); len(children) != 1 {
		t.Fatalf("subagent model calls = %d, want 1 (max_retries 0)", len(children))
	}
}

func TestTaskTimeout(t *testing.T) {
	s, model := testutil.StartAgent(t, `subagents:
  types:
    - name: slow
      description: A slow helper.
      system_prompt: You are slow.
      timeout_seconds: 1
`)
	model.Script(
		scripted.ToolCalls(testutil.TaskCall("t1", "wait", "take forever", "slow")),
		scripted.Hang(),
		scripted.Text("It timed out."),
	)
	began := time.Now()
	tid, evs := streamRun(t, s, "go")
	took := time.Since(began)
	if took < time.Second || took > 5*time.Second {
		t.Fatalf("run took %v with a 1 s subagent timeout", took)
	}
	tool := toolAnswers(t, threadMessages(t, s, tid))["t1"]
	if testutil.ContentOf(tool) != "Task timed out. Error: Execution timed out after 1 seconds" || kwargs(tool)["subagent_status"] != "timed_out" {
		t.Fatalf("tool message = %v", tool)
	}
	if got := kindsOf(taskEvents(evs), "t1"); !slices.Equal(got, []string{"task_started", "task_timed_out"}) {
		t.Fatalf("events = %v", got)
	}
	// The hanging upstream request was aborted, not left running.
	if err := model.WaitDisconnect(deadline(t, 5*time.Second)); err != nil {
		t.Fatalf("upstream request not aborted: %v", err)
	}
	if _, children := requestsOf(model); len(children) != 1 || children[0].Chat.Messages[0].Text() != "You are slow." {
		t.Fatalf("subagent requests = %d", len(children))
	}
}

func TestTaskMaxTurns(t *testing.T) {
	s, model := testutil.StartAgent(t, `subagents:
  types:
    - name: brief
      description: Answers in one go.
      system_prompt: You answer at once.
      tools: [ls, read_file]
      max_turns: 1
`)
	model.Script(
		scripted.ToolCalls(testutil.TaskCall("t1", "quick", "answer quickly", "brief")),
		scripted.Text("A short answer."),
		scripted.Text("Done."),
	)
	tid, _ := streamRun(t, s, "go")
	tool := toolAnswers(t, threadMessages(t, s, tid))["t1"]
	kw := kwargs(tool)
	if testutil.ContentOf(tool) != "Task Succeeded (capped: turn budget). Result: A short answer." || kw["subagent_status"] != "completed" || kw["subagent_stop_reason"] != "turn_capped" {
		t.Fatalf("tool message = %v", tool)
	}
	// The only allowed model call is offered no tools: it must answer.
	_, children := requestsOf(model)
	if len(children) != 1 || len(children[0].Chat.Tools) != 0 {
		t.Fatalf("subagent calls = %d, tools of the last = %v", len(children), children[len(children)-1].Chat.ToolNames())
	}
}

// TestTaskTurnsCountModelCalls: max_turns counts model calls, not graph
// super-steps, so a subagent may use more than a dozen tool rounds without
// hitting the run's recursion limit (25 super-steps by default).
func TestTaskTurnsCountModelCalls(t *testing.T) {
	s, model := testutil.StartAgent(t, `subagents:
  types:
    - name: worker
      description: Works in many small steps.
      system_prompt: You work step by step.
      tools: [write_todos]
      max_turns: 30
`)
	const rounds = 20
	child := make([]scripted.Step, 0, rounds+1)
	for i := range rounds {
		child = append(child, scripted.ToolCalls(scripted.Call("write_todos", map[string]any{"todos": []any{map[string]any{"content": fmt.Sprintf("step %d", i), "status": "in_progress"}}})))
	}
	child = append(child, scripted.Text("All 20 steps done."))
	route(t, model,
		[]scripted.Step{scripted.ToolCalls(testutil.TaskCall("t1", "long job", "do twenty steps", "worker")), scripted.Text("ok")},
		map[string][]scripted.Step{"do twenty steps": child})
	tid, evs := streamRun(t, s, "go")
	tool := toolAnswers(t, threadMessages(t, s, tid))["t1"]
	if testutil.ContentOf(tool) != "Task Succeeded. Result: All 20 steps done." {
		t.Fatalf("tool message = %v", tool)
	}
	if n := len(kindsOf(taskEvents(evs), "t1")); n != 2*rounds+1+2 {
		t.Fatalf("%d task events, want started + %d steps + completed", n, 2*rounds+1)
	}
}

func TestTaskTokenCap(t *testing.T) {
	s, model := testutil.StartAgent(t, `subagents:
  token_budget: 100
  types:
    - name: thinker
      description: Thinks hard.
      system_prompt: You think hard.
`)
	// The first step of each subagent spends 520 tokens against a budget
	// of 100: the subagent is stopped before its tool calls run.
	route(t, model,
		[]scripted.Step{
			scripted.ToolCalls(testutil.TaskCall("with-text", "a", "answer partly", "general-purpose"), testutil.TaskCall("no-text", "b", "only call tools", "thinker")),
			scripted.Text("ok"),
		},
		map[string][]scripted.Step{
			"answer partly":   {scripted.Step{Text: "Partial findings so far.", ToolCalls: []scripted.ToolCall{scripted.Call("ls", map[string]any{})}}.WithUsage(500, 20)},
			"only call tools": {scripted.ToolCalls(scripted.Call("ls", map[string]any{})).WithUsage(500, 20)},
		})
	tid, _ := streamRun(t, s, "go")
	answers := toolAnswers(t, threadMessages(t, s, tid))
	withText, noText := answers["with-text"], answers["no-text"]
	if testutil.ContentOf(withText) != "Task Succeeded (capped: token budget). Result: Partial findings so far." || kwargs(withText)["subagent_stop_reason"] != "token_capped" {
		t.Fatalf("capped with text = %v", withText)
	}
	if !strings.HasPrefix(testutil.ContentOf(noText), "Task failed (capped: token budget). Error: ") || kwargs(noText)["subagent_status"] != "failed" || kwargs(noText)["subagent_stop_reason"] != "token_capped" {
		t.Fatalf("capped without text = %v", noText)
	}
	if u := kwargs(withText)["subagent_token_usage"].(map[string]any); u["total_tokens"] != 520.0 {
		t.Fatalf("usage of a capped subagent = %v", u)
	}
	if _, children := requestsOf(model); len(children) != 2 {
		t.Fatalf("subagent model calls = %d, want 2 (no call after the cap)", len(children))
	}
}

func TestTaskUnknownType(t *testing.T) {
	s, model := testutil.StartAgent(t, `subagents:
  types:
    - name: analyst
      description: Analyses.
      system_prompt: You analyse.
`)
	model.Script(scripted.ToolCalls(testutil.TaskCall("t1", "x", "do x", "wizard")), scripted.Text("ok"))
	tid, evs := streamRun(t, s, "go")
	tool := toolAnswers(t, threadMessages(t, s, tid))["t1"]
	if testutil.ContentOf(tool) != `Task failed. Error: Unknown subagent type "wizard". Available types: analyst, general-purpose` || kwargs(tool)["subagent_status"] != "failed" {
		t.Fatalf("tool message = %v", tool)
	}
	if len(taskEvents(evs)) != 0 || len(model.Requests()) != 2 {
		t.Fatalf("an unknown type must not start anything: events %v, model calls %d", taskEvents(evs), len(model.Requests()))
	}
}

// ---------------------------------------------------------------- limits

func TestTaskPerResponseLimit(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	children := map[string][]scripted.Step{}
	var calls []scripted.ToolCall
	for i := 1; i <= 4; i++ {
		p := fmt.Sprintf("job %d", i)
		children[p] = []scripted.Step{scripted.Text("result " + p)}
		calls = append(calls, testutil.TaskCall(fmt.Sprintf("t%d", i), p, p, "general-purpose"))
	}
	route(t, model, []scripted.Step{scripted.ToolCalls(calls...), scripted.Text("ok")}, children)
	tid, evs := streamRun(t, s, "go")
	answers := toolAnswers(t, threadMessages(t, s, tid))
	for i := 1; i <= 3; i++ {
		if got := testutil.ContentOf(answers[fmt.Sprintf("t%d", i)]); got != fmt.Sprintf("Task Succeeded. Result: result job %d", i) {
			t.Fatalf("t%d = %q", i, got)
		}
	}
	fourth := answers["t4"]
	if !strings.HasPrefix(testutil.ContentOf(fourth), "Task not run: at most 3 task calls are allowed per response") || fourth["status"] != "error" || kwargs(fourth)["subagent_stop_reason"] != "limit_capped" {
		t.Fatalf("t4 = %v", fourth)
	}
	if _, ch := requestsOf(model); len(ch) != 3 || len(kindsOf(taskEvents(evs), "t4")) != 0 {
		t.Fatalf("subagent calls %d; t4 events %v", len(ch), kindsOf(taskEvents(evs), "t4"))
	}
	// The lead's next call sees every answer, in call order.
	lead, _ := requestsOf(model)
	var seen []string
	for _, m := range lead[1].Chat.Messages {
		if m.Role == "tool" {
			seen = append(seen, m.ToolCallID)
		}
	}
	if !slices.Equal(seen, []string{"t1", "t2", "t3", "t4"}) {
		t.Fatalf("tool messages sent to the lead: %v", seen)
	}
}

func TestTaskPerRunLimit(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents:\n  max_per_run: 2\n")
	route(t, model,
		[]scripted.Step{
			scripted.ToolCalls(testutil.TaskCall("r1", "one", "one", "general-purpose")),
			scripted.ToolCalls(testutil.TaskCall("r2", "two", "two", "general-purpose"), testutil.TaskCall("r3", "three", "three", "general-purpose")),
			scripted.Text("ok"),
		},
		map[string][]scripted.Step{"one": {scripted.Text("1")}, "two": {scripted.Text("2")}, "three": {scripted.Text("3")}})
	tid, _ := streamRun(t, s, "go")
	answers := toolAnswers(t, threadMessages(t, s, tid))
	if testutil.ContentOf(answers["r1"]) != "Task Succeeded. Result: 1" || testutil.ContentOf(answers["r2"]) != "Task Succeeded. Result: 2" {
		t.Fatalf("r1 %q r2 %q", testutil.ContentOf(answers["r1"]), testutil.ContentOf(answers["r2"]))
	}
	if !strings.HasPrefix(testutil.ContentOf(answers["r3"]), "Task not run: the limit of 2 task calls per run is reached") {
		t.Fatalf("r3 = %q", testutil.ContentOf(answers["r3"]))
	}
	if _, ch := requestsOf(model); len(ch) != 2 {
		t.Fatalf("subagent calls = %d", len(ch))
	}
	// The limit is per run: the next run on the thread may delegate again.
	model.SetResponder(nil)
	model.Script(scripted.ToolCalls(testutil.TaskCall("r4", "four", "four", "general-purpose")), scripted.Text("4"), scripted.Text("ok"))
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("again")})
	if got := testutil.ContentOf(toolAnswers(t, threadMessages(t, s, tid))["r4"]); got != "Task Succeeded. Result: 4" {
		t.Fatalf("r4 in a new run = %q", got)
	}
}

// TestTaskRecursionRefused: a subagent is never offered the task tool, even
// when its allow-list names it, and a call to it anyway does not delegate.
func TestTaskRecursionRefused(t *testing.T) {
	s, model := testutil.StartAgent(t, `subagents:
  types:
    - name: greedy
      description: Wants everything.
      system_prompt: You want everything.
      tools: [task, ls, read_file]
`)
	route(t, model,
		[]scripted.Step{scripted.ToolCalls(testutil.TaskCall("t1", "a", "general job", "general-purpose"), testutil.TaskCall("t2", "b", "greedy job", "greedy")), scripted.Text("ok")},
		map[string][]scripted.Step{
			"general job": {scripted.ToolCalls(testutil.TaskCall("nested", "deeper", "nested job", "general-purpose")), scripted.Text("could not nest")},
			"greedy job":  {scripted.Text("fine")},
		})
	tid, _ := streamRun(t, s, "go")
	answers := toolAnswers(t, threadMessages(t, s, tid))
	if testutil.ContentOf(answers["t1"]) != "Task Succeeded. Result: could not nest" || testutil.ContentOf(answers["t2"]) != "Task Succeeded. Result: fine" {
		t.Fatalf("answers = %q, %q", testutil.ContentOf(answers["t1"]), testutil.ContentOf(answers["t2"]))
	}
	lead, children := requestsOf(model)
	if !slices.Contains(lead[0].Chat.ToolNames(), "task") {
		t.Fatalf("the lead lacks the task tool: %v", lead[0].Chat.ToolNames())
	}
	if len(children) != 3 {
		t.Fatalf("subagent calls = %d, want 3 (no nested subagent)", len(children))
	}
	for _, r := range children {
		names := r.Chat.ToolNames()
		if slices.Contains(names, "task") || strings.Contains(r.Chat.Messages[0].Text(), leadMarker) {
			t.Fatalf("a subagent was offered delegation: tools %v", names)
		}
		if r.Chat.Messages[0].Text() == "You want everything." && !slices.Equal(names, []string{"ls", "read_file"}) {
			t.Fatalf("greedy subagent tools = %v, want its allow-list without task", names)
		}
	}
	// The hallucinated nested call was answered inside the subagent as an
	// unknown tool.
	for _, r := range children {
		if r.Chat.LastUserText() == "general job" && turn(r.Chat) == 1 {
			last := r.Chat.Messages[len(r.Chat.Messages)-1]
			if last.Role != "tool" || !strings.Contains(last.Text(), `unknown tool "task"`) {
				t.Fatalf("nested task call answered with %q", last.Text())
			}
		}
	}
}

// ---------------------------------------------------------------- concurrency

func TestTaskParallelCallsRunConcurrently(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	const latency = 300 * time.Millisecond
	children := map[string][]scripted.Step{}
	var calls []scripted.ToolCall
	for i := 1; i <= 3; i++ {
		p := fmt.Sprintf("part %d", i)
		children[p] = []scripted.Step{scripted.Text("done "+p).WithLatency(latency, 0)}
		calls = append(calls, testutil.TaskCall(fmt.Sprintf("t%d", i), p, p, "general-purpose"))
	}
	route(t, model, []scripted.Step{scripted.ToolCalls(calls...), scripted.Text("ok")}, children)
	tid, _ := streamRun(t, s, "go")
	toolAnswers(t, threadMessages(t, s, tid))
	lead, ch := requestsOf(model)
	if len(ch) != 3 || len(lead) != 2 {
		t.Fatalf("calls: lead %d subagents %d", len(lead), len(ch))
	}
	// From the lead's tool-call answer to its next call: three 300 ms
	// subagents in sequence would need at least 900 ms.
	span := lead[1].Received.Sub(lead[0].Received)
	if span >= 3*latency {
		t.Fatalf("three 300 ms subagents took %v: not concurrent", span)
	}
	first, last := ch[0].Received, ch[len(ch)-1].Received
	if last.Sub(first) >= latency {
		t.Fatalf("subagent requests spread over %v: they did not start together", last.Sub(first))
	}
	t.Logf("3 × %v subagents: lead call to lead call %v", latency, span)
}

// TestTaskQueueing: with an admission limit of 1, parallel task calls wait
// in line (task_queued with their position), run one at a time, and each
// one's timeout starts when it is admitted, not while it waits.
func TestTaskQueueing(t *testing.T) {
	s, model := testutil.StartAgent(t, `subagents:
  types:
    - name: steady
      description: Takes its time.
      system_prompt: You take your time.
      timeout_seconds: 1
`, func(o *testutil.Options) { o.MaxSubagents = 1 })
	const latency = 600 * time.Millisecond
	children := map[string][]scripted.Step{}
	var calls []scripted.ToolCall
	for i := 1; i <= 3; i++ {
		p := fmt.Sprintf("job %d", i)
		children[p] = []scripted.Step{scripted.Text("done "+p).WithLatency(latency, 0)}
		calls = append(calls, testutil.TaskCall(fmt.Sprintf("q%d", i), p, p, "steady"))
	}
	route(t, model, []scripted.Step{scripted.ToolCalls(calls...), scripted.Text("ok")}, children)
	tid, evs := streamRun(t, s, "go")
	answers := toolAnswers(t, threadMessages(t, s, tid))
	for i := 1; i <= 3; i++ {
		// The last one waited 1.2 s in line with a 1 s timeout.
		if got := testutil.ContentOf(answers[fmt.Sprintf("q%d", i)]); got != fmt.Sprintf("Task Succeeded. Result: done job %d", i) {
			t.Fatalf("q%d = %q", i, got)
		}
	}
	tes := taskEvents(evs)
	var positions []float64
	running := ""
	for _, e := range tes {
		id := e["task_id"].(string)
		switch e["type"] {
		case "task_queued":
			positions = append(positions, e["position"].(float64))
			if e["description"] == nil {
				t.Fatalf("task_queued without description: %v", e)
			}
		case "task_started":
			if running != "" {
				t.Fatalf("%s started while %s was running", id, running)
			}
			running = id
		case "task_completed":
			if running != id {
				t.Fatalf("%s completed but %q was running", id, running)
			}
			running = ""
		}
	}
	slices.Sort(positions)
	if !slices.Equal(positions, []float64{1, 2}) {
		t.Fatalf("queued positions = %v, want 1 and 2 (one ran at once)", positions)
	}
	// The queued tasks started in the order of their positions in line.
	queued := make([]string, 2)
	var started []string
	for _, e := range tes {
		switch e["type"] {
		case "task_queued":
			queued[int(e["position"].(float64))-1] = e["task_id"].(string)
		case "task_started":
			started = append(started, e["task_id"].(string))
		}
	}
	if !slices.Equal(started[1:], queued) {
		t.Fatalf("started %v, queued %v: not first come, first served", started, queued)
	}
	_, ch := requestsOf(model)
	for i := 1; i < len(ch); i++ {
		if gap := ch[i].Received.Sub(ch[i-1].Received); gap < latency {
			t.Fatalf("subagent calls %v apart: they overlapped", gap)
		}
	}
}

// ---------------------------------------------------------------- events and usage

// TestTaskEventsOnTheStream: each subagent's events arrive on the lead's
// SSE stream as they happen: task_started, one task_running per step (AI
// message or tool result, numbered from 1), then one terminal event, all
// keyed by the tool call id. A step is visible before the subagent's next
// model call is answered (pushed, not polled).
func TestTaskEventsOnTheStream(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	sawStep := make(chan struct{})
	var once sync.Once
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		switch {
		case isChild(req) && req.LastUserText() == "list files" && turn(req) == 0:
			return scripted.ToolCalls(scripted.Call("ls", map[string]any{})).WithUsage(7, 3)
		case isChild(req) && req.LastUserText() == "list files":
			// Answered only once the client has seen the first two steps.
			select {
			case <-sawStep:
			case <-time.After(10 * time.Second):
				t.Error("the first steps never reached the SSE client while the subagent ran")
			}
			return scripted.Text("two files").WithUsage(9, 2)
		case isChild(req):
			return scripted.Text("hi").WithUsage(4, 1)
		case turn(req) == 0:
			return scripted.ToolCalls(testutil.TaskCall("tA", "lister", "list files", "general-purpose"), testutil.TaskCall("tB", "quick", "say hi", "general-purpose"))
		}
		return scripted.Text("ok")
	})
	tid := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("go"), "stream_mode": []string{"custom", "values"}}, nil)
	defer resp.Body.Close()
	rd := testutil.NewSSEReader(resp.Body)
	var tes []map[string]any
	for {
		e, err := rd.Next()
		if err != nil {
			break
		}
		if e.Event == "error" {
			t.Fatalf("run failed: %s", e.Raw)
		}
		m, ok := e.Data.(map[string]any)
		if !ok || e.Event != "custom" {
			continue
		}
		tes = append(tes, m)
		if m["task_id"] == "tA" && m["type"] == "task_running" && m["message_index"] == 2.0 {
			once.Do(func() { close(sawStep) })
		}
	}
	if got := kindsOf(tes, "tA"); !slices.Equal(got, []string{"task_started", "task_running", "task_running", "task_running", "task_completed"}) {
		t.Fatalf("tA events = %v", got)
	}
	if got := kindsOf(tes, "tB"); !slices.Equal(got, []string{"task_started", "task_running", "task_completed"}) {
		t.Fatalf("tB events = %v", got)
	}
	var steps []map[string]any
	for _, e := range tes {
		if e["task_id"] != "tA" {
			continue
		}
		switch e["type"] {
		case "task_started":
			if e["description"] != "lister" || e["model_name"] != "test-model" {
				t.Fatalf("task_started = %v", e)
			}
		case "task_running":
			steps = append(steps, e)
		case "task_completed":
			u := e["usage"].(map[string]any)
			if e["result"] != "two files" || u["total_tokens"] != 21.0 || e["model_name"] != "test-model" {
				t.Fatalf("task_completed = %v", e)
			}
		}
	}
	wantKinds := []string{"ai", "tool", "ai"}
	for i, st := range steps {
		msg := st["message"].(map[string]any)
		if st["message_index"] != float64(i+1) || st["total_messages"] != float64(i+1) || msg["type"] != wantKinds[i] || st["model_name"] != "test-model" {
			t.Fatalf("step %d = %v", i+1, st)
		}
	}
	// Usage in steps is cumulative: after the first model call 10, and the
	// tool step does not add any.
	if u := steps[0]["usage"].(map[string]any); u["total_tokens"] != 10.0 {
		t.Fatalf("first step usage = %v", u)
	}
	if u := steps[1]["usage"].(map[string]any); u["total_tokens"] != 10.0 {
		t.Fatalf("tool step usage = %v", u)
	}
}

// TestTaskUsageRollup: the children's tokens are added to the lead run's
// usage once, as subagent tokens; the total is lead + children.
func TestTaskUsageRollup(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	route(t, model,
		[]scripted.Step{
			scripted.ToolCalls(testutil.TaskCall("u1", "a", "first", "general-purpose"), testutil.TaskCall("u2", "b", "second", "general-purpose")).WithUsage(10, 5),
			scripted.Text("ok").WithUsage(30, 4),
		},
		map[string][]scripted.Step{
			"first":  {scripted.ToolCalls(scripted.Call("ls", map[string]any{})).WithUsage(20, 3), scripted.Text("a").WithUsage(25, 2)},
			"second": {scripted.Text("b").WithUsage(40, 7)},
		})
	tid, evs := streamRun(t, s, "go")
	answers := toolAnswers(t, threadMessages(t, s, tid))
	children := 0.0
	for _, id := range []string{"u1", "u2"} {
		u := kwargs(answers[id])["subagent_token_usage"].(map[string]any)
		if u["total_tokens"] != u["input_tokens"].(float64)+u["output_tokens"].(float64) {
			t.Fatalf("%s usage = %v", id, u)
		}
		children += u["total_tokens"].(float64)
	}
	if children != 50+47 {
		t.Fatalf("children's usage = %v, want 97", children)
	}
	for _, e := range taskEvents(evs) {
		if e["type"] == "task_completed" && e["task_id"] == "u1" && e["usage"].(map[string]any)["total_tokens"] != 50.0 {
			t.Fatalf("task_completed usage = %v", e)
		}
	}
	usage := runOf(t, s, tid)["metadata"].(map[string]any)["usage"].(map[string]any)
	lead := 15.0 + 34.0
	if usage["subagent_tokens"] != children || usage["total_tokens"] != lead+children {
		t.Fatalf("run usage = %v, want subagent_tokens %v and total %v", usage, children, lead+children)
	}
	if usage["input_tokens"] != 10.0+30+20+25+40 || usage["output_tokens"] != 5.0+4+3+2+7 {
		t.Fatalf("run usage = %v", usage)
	}
}

// ---------------------------------------------------------------- cancellation

// TestTaskParentCancelCascades: cancelling the lead run aborts a subagent's
// in-flight model request at once, and the thread's final messages answer
// every tool call.
func TestTaskParentCancelCascades(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	route(t, model,
		[]scripted.Step{scripted.ToolCalls(testutil.TaskCall("c1", "stuck", "hang on", "general-purpose"), testutil.TaskCall("c2", "other", "also hang", "general-purpose"), scripted.Call("ls", map[string]any{}))},
		map[string][]scripted.Step{"hang on": {scripted.Hang()}, "also hang": {scripted.Text("partial").ThenHang()}})
	tid := testutil.NewThread(t, s)
	rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("go")}).Object(t)["run_id"].(string)
	ctx := deadline(t, 10*time.Second)
	if err := model.WaitRequests(ctx, 3); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	s.Must(202, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel", nil)
	if err := model.WaitDisconnects(ctx, 2); err != nil {
		t.Fatalf("subagent requests not aborted: %v", err)
	}
	took := time.Since(began)
	// The cancel is a context cancel, so it arrives within milliseconds on
	// a quiet machine (the log line below); the bound only leaves room for
	// a loaded CI machine while still failing a cancel that waits for a
	// step, a poll or a timeout.
	if took > time.Second {
		t.Errorf("cancel reached the subagents' model requests after %v, want well under a second", took)
	}
	t.Logf("cancel → both subagent upstream requests aborted: %v", took)
	testutil.WaitStatus(t, s, tid, rid, "interrupted")
	answers := toolAnswers(t, threadMessages(t, s, tid))
	for _, id := range []string{"c1", "c2"} {
		if got := testutil.ContentOf(answers[id]); !strings.HasPrefix(got, "Task cancelled by user.") {
			t.Fatalf("%s = %q", id, got)
		}
	}
	if answers["call_3"] == nil {
		t.Fatal("the ls call was not answered")
	}
	if th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t); th["status"] != "idle" {
		t.Fatalf("thread status = %v", th["status"])
	}
	// The thread stays usable: a follow-up run's model call is valid.
	model.SetResponder(nil)
	model.Script(scripted.Text("fresh start"))
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("again")}).Object(t)
	if testutil.ContentOf(testutil.LastMessage(t, out)) != "fresh start" {
		t.Fatalf("follow-up = %v", testutil.LastMessage(t, out))
	}
}

// TestTaskCancelOne: POST …/subagents/{tool_call_id}/cancel stops one
// subagent; the lead run goes on with a "Task cancelled" tool message for
// it and the other subagent's result.
func TestTaskCancelOne(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	release := make(chan struct{})
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		switch {
		case isChild(req) && req.LastUserText() == "hang on":
			return scripted.Hang()
		case isChild(req):
			select { // the other subagent finishes after the cancel
			case <-release:
			case <-time.After(10 * time.Second):
			}
			return scripted.Text("other result")
		case turn(req) == 0:
			return scripted.ToolCalls(testutil.TaskCall("k1", "stuck", "hang on", "general-purpose"), testutil.TaskCall("k2", "fine", "finish", "general-purpose"))
		}
		return scripted.Text("carried on")
	})
	tid := testutil.NewThread(t, s)
	rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("go")}).Object(t)["run_id"].(string)
	ctx := deadline(t, 10*time.Second)
	if err := model.WaitRequests(ctx, 3); err != nil {
		t.Fatal(err)
	}
	base := "/threads/" + tid + "/runs/" + rid + "/subagents/"
	s.Must(404, "POST", base+"no-such-call/cancel", nil)
	s.Must(404, "POST", "/threads/"+tid+"/runs/00000000-0000-0000-0000-000000000000/subagents/k1/cancel", nil)
	s.Must(202, "POST", base+"k1/cancel", nil)
	if err := model.WaitDisconnect(ctx); err != nil {
		t.Fatalf("the cancelled subagent's request was not aborted: %v", err)
	}
	close(release)
	testutil.WaitStatus(t, s, tid, rid, "success")
	answers := toolAnswers(t, threadMessages(t, s, tid))
	k1 := answers["k1"]
	if testutil.ContentOf(k1) != "Task cancelled by user. Error: Cancelled by user" || kwargs(k1)["subagent_status"] != "cancelled" {
		t.Fatalf("k1 = %v", k1)
	}
	if testutil.ContentOf(answers["k2"]) != "Task Succeeded. Result: other result" {
		t.Fatalf("k2 = %v", answers["k2"])
	}
	msgs := threadMessages(t, s, tid)
	if testutil.ContentOf(msgs[len(msgs)-1]) != "carried on" {
		t.Fatalf("the lead did not continue: %v", msgs[len(msgs)-1])
	}
	// Finished subagents cannot be cancelled.
	s.Must(404, "POST", base+"k2/cancel", nil)
}

// TestTaskAcrossRestart: a lead run stopped by a server shutdown while its
// subagent ran is resumed by the next start; the subagent is not reported
// as cancelled by the user (nobody cancelled it), and every tool call is
// answered once.
func TestTaskAcrossRestart(t *testing.T) {
	model := scripted.New()
	t.Cleanup(model.Close)
	spec := fmt.Sprintf("name: helper\nmodel:\n  name: test-model\n  base_url: %s\n  max_retries: 0\nsystem_prompt: You help.\ntools: [ls]\nsubagents: {}\n", model.URL())
	opts := testutil.Options{
		DataDir: t.TempDir(),
		Graphs:  `{"graphs": {"agent": "./agent.yaml"}}`,
		Files:   map[string]string{"agent.yaml": spec},
	}
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		switch {
		case isChild(req):
			return scripted.Hang()
		case turn(req) == 0:
			return scripted.ToolCalls(testutil.TaskCall("x1", "job", "the job", "general-purpose"))
		}
		return scripted.Text("resumed")
	})
	first := testutil.Build(t, opts)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Shutdown(context.Background()) }) // once; a no-op after the shutdown below
	s1 := &testutil.Server{Server: first, T: t, Client: &http.Client{Timeout: 10 * time.Second}, Header: http.Header{}}
	tid := testutil.NewThread(t, s1)
	rid := s1.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("go")}).Object(t)["run_id"].(string)
	ctx := deadline(t, 10*time.Second)
	if err := model.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// After the restart the subagent answers.
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		switch {
		case isChild(req):
			return scripted.Text("job done")
		case turn(req) == 0:
			return scripted.ToolCalls(testutil.TaskCall("x1", "job", "the job", "general-purpose"))
		}
		return scripted.Text("resumed")
	})
	s2 := testutil.StartServer(t, opts)
	testutil.WaitStatus(t, s2, tid, rid, "success")
	answers := toolAnswers(t, threadMessages(t, s2, tid))
	x1 := answers["x1"]
	if got := testutil.ContentOf(x1); !strings.HasPrefix(got, "Task failed. Error: Interrupted by a server restart") || kwargs(x1)["subagent_status"] != "failed" {
		t.Fatalf("x1 after the restart = %q (a restart must not read as a user cancel)", got)
	}
	msgs := threadMessages(t, s2, tid)
	if testutil.ContentOf(msgs[len(msgs)-1]) != "resumed" {
		t.Fatalf("the lead did not resume: %v", msgs[len(msgs)-1])
	}
}

// TestTaskAssistantOverridesStayWithTheLead: an assistant's configurable
// (or a run's context) system_prompt and model configure the lead; a
// subagent keeps its own prompt, inherits the lead's effective model only
// when its type says "inherit", and reports the model it really used.
func TestTaskAssistantOverridesStayWithTheLead(t *testing.T) {
	s, model := testutil.StartAgent(t, `subagents:
  types:
    - name: pinned
      description: Uses its own model.
      system_prompt: You are pinned.
      model: pinned-model
`)
	route(t, model,
		[]scripted.Step{scripted.ToolCalls(testutil.TaskCall("p1", "a", "inherit job", "general-purpose"), testutil.TaskCall("p2", "b", "pinned job", "pinned")), scripted.Text("ok")},
		map[string][]scripted.Step{"inherit job": {scripted.Text("a")}, "pinned job": {scripted.Text("b")}})
	asst := s.Must(200, "POST", "/assistants", map[string]any{"graph_id": "agent", "config": map[string]any{"configurable": map[string]any{"model": "from-assistant", "system_prompt": "Assistant prompt."}}}).Object(t)["assistant_id"].(string)
	cases := []struct {
		name, model, prompt string
		body                map[string]any
	}{
		{"assistant configurable", "from-assistant", "Assistant prompt.", map[string]any{"assistant_id": asst}},
		{"run context", "from-run", "Run prompt.", map[string]any{"assistant_id": asst, "context": map[string]any{"model": "from-run", "system_prompt": "Run prompt."}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(model.Requests())
			tid := testutil.NewThread(t, s)
			c.body["input"] = testutil.UserInput("go")
			s.Must(200, "POST", "/threads/"+tid+"/runs/wait", c.body)
			for _, r := range model.Requests()[before:] {
				prompt := r.Chat.Messages[0].Text()
				switch {
				case isLead(r.Chat):
					if r.Chat.Model != c.model || !strings.HasPrefix(prompt, c.prompt) {
						t.Errorf("lead: model %q prompt %q", r.Chat.Model, prompt)
					}
				case r.Chat.LastUserText() == "inherit job":
					if r.Chat.Model != c.model || !strings.HasPrefix(prompt, "You are a subagent") {
						t.Errorf("inheriting subagent: model %q prompt %q", r.Chat.Model, prompt)
					}
				default:
					if r.Chat.Model != "pinned-model" || prompt != "You are pinned." {
						t.Errorf("pinned subagent: model %q prompt %q", r.Chat.Model, prompt)
					}
				}
			}
			answers := toolAnswers(t, threadMessages(t, s, tid))
			if m := kwargs(answers["p1"])["subagent_model_name"]; m != c.model {
				t.Errorf("p1 reports model %v", m)
			}
			if m := kwargs(answers["p2"])["subagent_model_name"]; m != "pinned-model" {
				t.Errorf("p2 reports model %v", m)
			}
		})
	}
}

// TestTaskReusedToolCallIDs: some providers number tool calls per response
// (call_1, call_2, … again in every response). A later task call that
// reuses an id of an earlier, answered one in the same run is a new
// delegation, not a retry of the earlier one.
func TestTaskReusedToolCallIDs(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n")
	call := func(prompt string) scripted.ToolCall {
		return scripted.Call("task", map[string]any{"description": prompt, "prompt": prompt, "subagent_type": "general-purpose"})
	}
	route(t, model,
		[]scripted.Step{scripted.ToolCalls(call("first")), scripted.ToolCalls(call("second")), scripted.Text("ok")},
		map[string][]scripted.Step{"first": {scripted.Text("first result")}, "second": {scripted.Text("second result")}})
	tid, _ := streamRun(t, s, "go")
	var got []string
	for _, m := range threadMessages(t, s, tid) {
		if msg := m.(map[string]any); msg["type"] == "tool" {
			got = append(got, msg["tool_call_id"].(string)+": "+testutil.ContentOf(msg))
		}
	}
	want := []string{"call_1: Task Succeeded. Result: first result", "call_1: Task Succeeded. Result: second result"}
	if !slices.Equal(got, want) {
		t.Fatalf("tool messages = %q, want %q", got, want)
	}
	if _, ch := requestsOf(model); len(ch) != 2 {
		t.Fatalf("subagent calls = %d, want 2", len(ch))
	}
}

// ---------------------------------------------------------------- benchmarks

// benchLead starts a server whose agent delegates with the task tool; the
// model is the scripted server.
func benchLead(b *testing.B, subagentsYAML string, maxSubagents int) (*testutil.Server, *scripted.Server) {
	b.Helper()
	model := scripted.New()
	b.Cleanup(model.Close)
	spec := fmt.Sprintf("name: lead\nmodel:\n  name: test-model\n  base_url: %s\n  max_retries: 0\nsystem_prompt: You lead.\ntools: [write_todos]\n%s", model.URL(), subagentsYAML)
	s := testutil.StartServer(b, testutil.Options{
		Graphs:       `{"graphs": {"agent": "./agent.yaml"}}`,
		Files:        map[string]string{"agent.yaml": spec},
		MaxSubagents: maxSubagents,
	})
	s.Client.Timeout = time.Minute
	return s, model
}

// BenchmarkTaskStepEventLatency measures how long a subagent's step takes
// to reach the lead's SSE client: from the moment the scripted model starts
// answering a subagent's model call (its responder runs) to the moment the
// client has parsed the task_running event carrying that AI message. The
// path is the model's HTTP response, the subagent's agent loop, the task
// tool, the lead run's event log and the SSE writer. Each iteration is one
// lead run with one subagent of 50 model calls (49 tool rounds).
func BenchmarkTaskStepEventLatency(b *testing.B) {
	const steps = 50
	s, model := benchLead(b, "subagents:\n  types:\n    - name: stepper\n      description: Works in steps.\n      system_prompt: You work in steps.\n      tools: [write_todos]\n      max_turns: 60\n", 0)
	var mu sync.Mutex
	answered := map[int]time.Time{} // subagent turn -> when the model began answering it
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		k := turn(req)
		if isChild(req) {
			mu.Lock()
			answered[k] = time.Now()
			mu.Unlock()
			if k < steps-1 {
				return scripted.ToolCalls(scripted.Call("write_todos", map[string]any{"todos": []any{map[string]any{"content": fmt.Sprint("step ", k), "status": "in_progress"}}}))
			}
			return scripted.Text("finished")
		}
		if k == 0 {
			return scripted.ToolCalls(testutil.TaskCall("bench", "steps", "work in steps", "stepper"))
		}
		return scripted.Text("ok")
	})
	var lat []time.Duration
	for b.Loop() {
		mu.Lock()
		clear(answered)
		mu.Unlock()
		tid := s.Must(200, "POST", "/threads", nil).Object(b)["thread_id"].(string)
		resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("go"), "stream_mode": []string{"custom"}}, nil)
		rd := testutil.NewSSEReader(resp.Body)
		seen := 0
		for {
			e, err := rd.Next()
			if err != nil {
				break
			}
			at := time.Now()
			m, ok := e.Data.(map[string]any)
			if !ok || m["type"] != "task_running" || m["message"].(map[string]any)["type"] != "ai" {
				continue
			}
			k := (int(m["message_index"].(float64)) - 1) / 2
			mu.Lock()
			t0, ok := answered[k]
			mu.Unlock()
			if !ok {
				b.Fatalf("step %d seen before its model call", k)
			}
			lat = append(lat, at.Sub(t0))
			seen++
		}
		resp.Body.Close()
		if seen != steps {
			b.Fatalf("saw %d AI steps, want %d", seen, steps)
		}
	}
	b.ReportMetric(float64(len(lat)), "samples")
	stats.ReportLatencies(b, lat)
}

// BenchmarkTaskFanOut200 runs one lead whose single model response makes
// 200 task calls (per-response and per-run caps raised to 200, admission
// limit 200); every subagent's one model call takes 1 s. It reports the
// wall time of the whole lead run (POST …/runs/wait) and of the fan-out
// (from the lead's first model call to its second).
func BenchmarkTaskFanOut200(b *testing.B) {
	const n = 200
	s, model := benchLead(b, "subagents:\n  max_per_response: 200\n  max_per_run: 200\n", n)
	calls := make([]scripted.ToolCall, n)
	for i := range calls {
		calls[i] = testutil.TaskCall(fmt.Sprintf("f%03d", i), "part", fmt.Sprintf("part %d", i), "general-purpose")
	}
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		switch {
		case isChild(req):
			return scripted.Text("done "+req.LastUserText()).WithLatency(time.Second, 0)
		case turn(req) == 0:
			return scripted.ToolCalls(calls...)
		}
		return scripted.Text("all parts done")
	})
	var walls, fanouts []time.Duration
	for b.Loop() {
		before := len(model.Requests())
		tid := s.Must(200, "POST", "/threads", nil).Object(b)["thread_id"].(string)
		began := time.Now()
		out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("fan out")}).Object(b)
		walls = append(walls, time.Since(began))
		msgs := out["messages"].([]any)
		if testutil.ContentOf(msgs[len(msgs)-1]) != "all parts done" || len(msgs) != n+3 {
			b.Fatalf("%d messages, last %v", len(msgs), msgs[len(msgs)-1])
		}
		for _, m := range msgs[2 : n+2] {
			if !strings.HasPrefix(testutil.ContentOf(m), "Task Succeeded. Result: done part") {
				b.Fatalf("tool message %v", m)
			}
		}
		var leadAt []time.Time
		for _, r := range model.Requests()[before:] {
			if isLead(r.Chat) {
				leadAt = append(leadAt, r.Received)
			}
		}
		fanouts = append(fanouts, leadAt[1].Sub(leadAt[0]))
	}
	b.ReportMetric(stats.Millis(slices.Max(walls))/1000, "wall-max-s")
	b.ReportMetric(stats.Millis(slices.Max(fanouts))/1000, "fanout-max-s")
}

// shippedServer serves the repository's langgraph.json (its agent specs
// copied next to it) with OPENAI_BASE_URL pointing at the scripted model.
func shippedServer(t *testing.T) (*testutil.Server, *scripted.Server) {
	t.Helper()
	model := scripted.New()
	t.Cleanup(model.Close)
	t.Setenv("OPENAI_BASE_URL", model.URL())
	t.Setenv("OPENAI_API_KEY", "test-key")
	raw, err := os.ReadFile("../../langgraph.json")
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Graphs map[string]string `json:"graphs"`
	}
	if err := json.Unmarshal(raw, &conf); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for id, src := range conf.Graphs {
		if !strings.HasSuffix(src, ".yaml") {
			continue
		}
		body, err := os.ReadFile(filepath.Join("../..", src))
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(src)] = string(body)
		conf.Graphs[id] = "./" + filepath.Base(src)
	}
	graphs, _ := json.Marshal(map[string]any{"graphs": conf.Graphs})
	return testutil.StartServer(t, testutil.Options{Graphs: string(graphs), Files: files}), model
}

// TestShippedLeadAndSupervisor: the shipped lead delegates to its custom
// types with their prompts and tool allow-lists, and the shipped supervisor
// offers the task tool next to its async task tools.
func TestShippedLeadAndSupervisor(t *testing.T) {
	s, model := shippedServer(t)
	route(t, model,
		[]scripted.Step{scripted.ToolCalls(testutil.TaskCall("a1", "find config", "Which files configure the build?", "analyst"), testutil.TaskCall("w1", "write notes", "Write notes.md saying hello.", "writer")), scripted.Text("Both done.")},
		map[string][]scripted.Step{
			"Which files configure the build?": {scripted.Text("None: the workspace is empty.")},
			"Write notes.md saying hello.": {
				scripted.ToolCalls(scripted.Call("write_file", map[string]any{"file_path": "/notes.md", "content": "hello\n"})),
				scripted.Text("/notes.md: says hello."),
			},
		})
	tid := testutil.NewThread(t, s)
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "lead", "input": testutil.UserInput("go")}).Object(t)
	answers := toolAnswers(t, testutil.MessagesIn(t, out))
	if testutil.ContentOf(answers["a1"]) != "Task Succeeded. Result: None: the workspace is empty." || testutil.ContentOf(answers["w1"]) != "Task Succeeded. Result: /notes.md: says hello." {
		t.Fatalf("answers: %q, %q", testutil.ContentOf(answers["a1"]), testutil.ContentOf(answers["w1"]))
	}
	lead, children := requestsOf(model)
	if tools := lead[0].Chat.ToolNames(); !slices.Contains(tools, "task") || !strings.Contains(lead[0].Chat.Messages[0].Text(), "- analyst: ") {
		t.Fatalf("lead tools %v", tools)
	}
	for _, r := range children {
		want := []string{"read_file", "write_file", "edit_file"}
		if strings.HasPrefix(r.Chat.Messages[0].Text(), "You are an analyst subagent.") {
			want = []string{"ls", "read_file", "glob", "grep"}
		} else if !strings.HasPrefix(r.Chat.Messages[0].Text(), "You are a writer subagent.") {
			t.Fatalf("subagent prompt %q", r.Chat.Messages[0].Text())
		}
		got := r.Chat.ToolNames()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("subagent tools %v, want %v", got, want)
		}
	}
	// The writer wrote into the thread's workspace, which the lead shares.
	model.SetResponder(nil)
	model.Script(scripted.ToolCalls(scripted.Call("read_file", map[string]any{"file_path": "/notes.md"})), scripted.Text("read"))
	out = s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "lead", "input": testutil.UserInput("read it")}).Object(t)
	msgs := testutil.MessagesIn(t, out)
	if got := testutil.ContentOf(msgs[len(msgs)-2]); !strings.Contains(got, "hello") {
		t.Fatalf("the lead cannot read the subagent's file: %q", got)
	}

	before := len(model.Requests())
	model.Script(scripted.Text("nothing to do"))
	s.Must(200, "POST", "/threads/"+testutil.NewThread(t, s)+"/runs/wait", map[string]any{"assistant_id": "supervisor", "input": testutil.UserInput("hi")})
	tools := model.Requests()[before].Chat.ToolNames()
	for _, name := range []string{"task", "start_async_task", "check_async_task", "cancel_async_task"} {
		if !slices.Contains(tools, name) {
			t.Fatalf("supervisor tools %v lack %s", tools, name)
		}
	}
}

// TestTaskCancelQueued: a subagent waiting for admission can be cancelled
// by the single-subagent route too; it leaves the line without running.
func TestTaskCancelQueued(t *testing.T) {
	s, model := testutil.StartAgent(t, "subagents: {}\n", func(o *testutil.Options) { o.MaxSubagents = 1 })
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		switch {
		case isChild(req):
			return scripted.Hang()
		case turn(req) == 0:
			return scripted.ToolCalls(testutil.TaskCall("first", "a", "a", "general-purpose"), testutil.TaskCall("second", "b", "b", "general-purpose"))
		}
		return scripted.Text("carried on")
	})
	tid := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("go"), "stream_mode": []string{"custom"}}, nil)
	defer resp.Body.Close()
	rd := testutil.NewSSEReader(resp.Body)
	var rid, queued, running string
	var kinds []string
	for queued == "" || running == "" {
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("stream ended early: %v", err)
		}
		m, _ := e.Data.(map[string]any)
		switch {
		case e.Event == "metadata":
			rid = m["run_id"].(string)
		case e.Event == "custom" && m["type"] == "task_queued":
			queued = m["task_id"].(string)
		case e.Event == "custom" && m["type"] == "task_started":
			running = m["task_id"].(string)
		}
	}
	if err := model.WaitRequests(deadline(t, 10*time.Second), 2); err != nil {
		t.Fatal(err)
	}
	base := "/threads/" + tid + "/runs/" + rid + "/subagents/"
	s.Must(202, "POST", base+queued+"/cancel", nil)
	s.Must(202, "POST", base+running+"/cancel", nil)
	for {
		e, err := rd.Next()
		if err != nil {
			break
		}
		if m, _ := e.Data.(map[string]any); e.Event == "custom" {
			kinds = append(kinds, fmt.Sprint(m["type"], " ", m["task_id"]))
		}
	}
	answers := toolAnswers(t, threadMessages(t, s, tid))
	for _, id := range []string{queued, running} {
		if got := testutil.ContentOf(answers[id]); !strings.HasPrefix(got, "Task cancelled by user.") || kwargs(answers[id])["subagent_status"] != "cancelled" {
			t.Fatalf("%s = %q", id, got)
		}
	}
	if _, ch := requestsOf(model); len(ch) != 1 {
		t.Fatalf("the queued subagent ran: %d subagent calls", len(ch))
	}
	if testutil.RunStatus(t, s, tid, rid) != "success" {
		t.Fatal("the lead did not finish")
	}
	if !slices.Contains(kinds, "task_cancelled "+queued) || !slices.Contains(kinds, "task_cancelled "+running) {
		t.Fatalf("terminal events = %v", kinds)
	}
}

func TestTaskSubgraphEventsStreamUnderANamespace(t *testing.T) {
	for _, subgraphs := range []bool{false, true} {
		s, model := testutil.StartAgent(t, "subagents: {}\n")
		model.Script(
			scripted.ToolCalls(scripted.Call("task", map[string]any{"description": "d", "prompt": "p", "subagent_type": "general-purpose"})),
			scripted.Text("child answer").Split(2),
			scripted.Text("lead answer"),
		)
		tid := testutil.NewThread(t, s)
		resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("go"),
			"stream_mode": []string{"messages-tuple", "updates"}, "stream_subgraphs": subgraphs}, nil)
		evs, err := testutil.NewSSEReader(resp.Body).All()
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var nested []string
		for _, e := range evs {
			if strings.Contains(e.Event, "|tools:") {
				nested = append(nested, e.Event)
			}
		}
		if !subgraphs && len(nested) > 0 {
			t.Fatalf("subgraph events without stream_subgraphs: %v", nested)
		}
		if subgraphs {
			var sawMessages, sawUpdates bool
			for _, n := range nested {
				sawMessages = sawMessages || n == "messages|tools:call_1"
				sawUpdates = sawUpdates || n == "updates|tools:call_1"
			}
			if !sawMessages || !sawUpdates {
				t.Fatalf("namespaced subagent events = %v", nested)
			}
		}
	}
}
