package supervisor_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/pgtest"
)

// turnModel answers the supervisor's model calls: summarisation requests
// get a summary, every other call takes the next queued step.
type turnModel struct {
	mu    sync.Mutex
	queue []scripted.Step
}

func (m *turnModel) push(steps ...scripted.Step) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queue = append(m.queue, steps...)
}

func (m *turnModel) respond(req scripted.ChatRequest) scripted.Step {
	if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Text(), "Summarise the conversation") {
		return scripted.Text("SUMMARY of the conversation so far.")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.queue) == 0 {
		return scripted.Text("(nothing scripted)")
	}
	step := m.queue[0]
	m.queue = m.queue[1:]
	return step
}

var taskIDPattern = regexp.MustCompile(`task_id: ([0-9a-f-]{36})`)

// supervisorScenario runs one supervisor conversation through all five
// tools and a compaction, with the subagents at subagentURL ("" means
// in-process) served by host.
func supervisorScenario(t *testing.T, sup, host *testutil.Server, model *turnModel) {
	tid := testutil.NewThread(t, sup)
	turn := func(text string, steps ...scripted.Step) map[string]any {
		t.Helper()
		model.push(steps...)
		return sup.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "boss", "input": testutil.UserInput(text)}).Object(t)
	}
	toolResults := func(values map[string]any, n int) []string {
		msgs := testutil.MessagesIn(t, values)
		var out []string
		for _, m := range msgs[len(msgs)-1-n : len(msgs)-1] {
			out = append(out, testutil.ContentOf(m))
		}
		return out
	}
	gate := "boss-" + tid
	out := turn("start two tasks",
		scripted.ToolCalls(
			scripted.Call("start_async_task", map[string]any{"description": "hello", "subagent_type": "echoer"}),
			scripted.Call("start_async_task", map[string]any{"description": gate, "subagent_type": "waiter"}),
		),
		scripted.Text("Started both; I will report when asked."))
	launched := toolResults(out, 2)
	var echoTask, waitTask string
	for _, r := range launched {
		m := taskIDPattern.FindStringSubmatch(r)
		if !strings.HasPrefix(r, "Launched async subagent. task_id: ") || m == nil {
			t.Fatalf("start result = %q", r)
		}
	}
	echoTask = taskIDPattern.FindStringSubmatch(launched[0])[1]
	waitTask = taskIDPattern.FindStringSubmatch(launched[1])[1]
	tasks := out["async_tasks"].(map[string]any)
	if len(tasks) != 2 || tasks[echoTask].(map[string]any)["agent_name"] != "echoer" {
		t.Fatalf("async_tasks = %v", tasks)
	}

	// The echo task finishes on its own; its record is pushed, no tool call.
	testutil.Eventually(t, 5*time.Second, "echo task pushed as success", func() bool {
		st := sup.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
		rec := st["values"].(map[string]any)["async_tasks"].(map[string]any)[echoTask].(map[string]any)
		return rec["status"] == "success"
	})

	check := func(id string) map[string]any {
		t.Helper()
		out := turn("how is it going?", scripted.ToolCalls(scripted.Call("check_async_task", map[string]any{"task_id": id})), scripted.Text("Reported."))
		var res map[string]any
		if err := json.Unmarshal([]byte(toolResults(out, 1)[0]), &res); err != nil {
			t.Fatalf("check result: %v", toolResults(out, 1))
		}
		return res
	}
	if res := check(echoTask); res["status"] != "success" || res["result"] != "echo: hello" {
		t.Fatalf("check echo = %v", res)
	}
	if res := check(waitTask); res["status"] != "running" {
		t.Fatalf("check waiter before completion = %v", res)
	}
	firstRun := testutil.ThreadRuns(t, host, waitTask)[0].(map[string]any)["run_id"].(string)
	out = turn("change of plan", scripted.ToolCalls(scripted.Call("update_async_task", map[string]any{"task_id": waitTask, "message": gate + "-v2"})), scripted.Text("Updated."))
	if r := toolResults(out, 1)[0]; r != "Updated async subagent. task_id: "+waitTask {
		t.Fatalf("update result = %q", r)
	}
	testutil.Eventually(t, 5*time.Second, "the first waiter run to be interrupted", func() bool {
		return host.Must(200, "GET", "/threads/"+waitTask+"/runs/"+firstRun, nil).Object(t)["status"] == "interrupted"
	})
	if n := len(testutil.ThreadRuns(t, host, waitTask)); n != 2 {
		t.Fatalf("waiter thread has %d runs, want 2", n)
	}
	out = turn("stop it", scripted.ToolCalls(scripted.Call("cancel_async_task", map[string]any{"task_id": waitTask})), scripted.Text("Cancelled."))
	if r := toolResults(out, 1)[0]; r != "Cancelled async subagent task: "+waitTask {
		t.Fatalf("cancel result = %q", r)
	}
	listWant := regexp.MustCompile(`^2 tracked task\(s\):\n(- task_id: \S+  agent: echoer  status: success\n- task_id: \S+  agent: waiter  status: cancelled|- task_id: \S+  agent: waiter  status: cancelled\n- task_id: \S+  agent: echoer  status: success)$`)
	out = turn("list", scripted.ToolCalls(scripted.Call("list_async_tasks", map[string]any{})), scripted.Text("Listed."))
	if r := toolResults(out, 1)[0]; !listWant.MatchString(r) {
		t.Fatalf("list = %q", r)
	}

	// Enough chatter to compact the conversation.
	for i := 0; i < 4; i++ {
		turn(strings.Repeat(fmt.Sprintf("filler %d ", i), 80), scripted.Text(strings.Repeat("ack ", 80)))
	}
	out = turn("what tasks do I have?", scripted.ToolCalls(scripted.Call("list_async_tasks", map[string]any{"status_filter": "all"})), scripted.Text("Here they are."))
	msgs := testutil.MessagesIn(t, out)
	if !strings.Contains(testutil.ContentOf(msgs[0]), "SUMMARY") {
		t.Fatalf("the conversation was not compacted: first message %q", testutil.ContentOf(msgs[0]))
	}
	if r := toolResults(out, 1)[0]; !listWant.MatchString(r) {
		t.Fatalf("list after compaction = %q", r)
	}
	if res := check(echoTask); res["result"] != "echo: hello" {
		t.Fatalf("check after compaction = %v", res)
	}
	if res := check(waitTask); res["status"] != "interrupted" {
		t.Fatalf("check of the cancelled task after compaction = %v", res)
	}
}

// a2aSubagents places each subagent at its assistant's A2A endpoint on the
// server at base.
func a2aSubagents(base string) func(graph string) string {
	return func(graph string) string { return "\n    protocol: a2a\n    url: " + base + "/a2a/" + graph }
}

func TestSupervisorScenario(t *testing.T) {
	for _, topology := range []string{"in-process", "http", "a2a"} {
		t.Run(topology, func(t *testing.T) {
			model := scripted.New()
			t.Cleanup(model.Close)
			tm := &turnModel{}
			model.SetResponder(tm.respond)
			var host *testutil.Server
			graphs := `{"graphs": {"boss": "./boss.yaml", "echo": "builtin:echo", "gated": "builtin:test-gated"}}`
			spec := testutil.SupervisorSpec(model.URL(), "")
			if topology != "in-process" { // a second server hosts the subagents
				host = testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs})
				graphs = `{"graphs": {"boss": "./boss.yaml"}}`
				spec = testutil.SupervisorSpec(model.URL(), host.URL())
				if topology == "a2a" {
					spec = testutil.SupervisorSpecWith(model.URL(), a2aSubagents(host.URL()))
				}
			}
			sup := testutil.StartServer(t, testutil.Options{Graphs: graphs, Files: map[string]string{"boss.yaml": spec}})
			if host == nil {
				host = sup
			}
			supervisorScenario(t, sup, host, tm)
		})
	}
}

func TestSupervisorStartupChecks(t *testing.T) {
	for name, c := range map[string]struct{ spec, want string }{
		"empty list":     {"async_subagents: []\n", "at least one async subagent"},
		"duplicate":      {"async_subagents:\n  - {name: a, description: d, graph_id: echo}\n  - {name: a, description: d, graph_id: echo}\n", "duplicate async subagent names: a"},
		"graph not here": {"async_subagents:\n  - {name: a, description: d, graph_id: nowhere}\n", `graph "nowhere" is not served`},
		"a2a no url":     {"async_subagents:\n  - {name: a, description: d, protocol: a2a}\n", "name, description and url are required for an a2a subagent"},
		"bad protocol":   {"async_subagents:\n  - {name: a, description: d, graph_id: echo, url: 'http://127.0.0.1:1', protocol: grpc}\n", `unknown protocol "grpc"`},
	} {
		t.Run(name, func(t *testing.T) {
			err := testutil.BuildErr(t, testutil.Options{
				Graphs: `{"graphs": {"boss": "./boss.yaml", "echo": "builtin:echo"}}`,
				Files:  map[string]string{"boss.yaml": "name: boss\n" + c.spec},
			})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("start-up error = %v, want %q", err, c.want)
			}
		})
	}
}

func TestSupervisorNotifyOnCompletion(t *testing.T) {
	for _, topology := range []string{"in-process", "a2a", "replicas"} {
		t.Run(topology, func(t *testing.T) { notifyOnCompletion(t, topology) })
	}
}

func notifyOnCompletion(t *testing.T, topology string) {
	model := scripted.New()
	t.Cleanup(model.Close)
	tm := &turnModel{}
	model.SetResponder(tm.respond)
	spec := testutil.SupervisorSpec(model.URL(), "") + "notify_on_completion: true\n"
	graphs := `{"graphs": {"boss": "./boss.yaml", "echo": "builtin:echo", "gated": "builtin:test-gated"}}`
	if topology == "a2a" {
		host := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs})
		spec = testutil.SupervisorSpecWith(model.URL(), a2aSubagents(host.URL())) + "notify_on_completion: true\n"
		graphs = `{"graphs": {"boss": "./boss.yaml"}}`
	}
	opts := testutil.Options{Graphs: graphs, Files: map[string]string{"boss.yaml": spec}}
	if topology == "replicas" {
		// The supervisor's replica has one worker, which its run holds
		// while it launches the task: the task runs on the other replica,
		// and its end reaches the supervisor through the database.
		if !pgtest.Enabled() {
			t.Skip("replicas share a PostgreSQL database: " + pgtest.EnvURL + " is not set")
		}
		opts.DataDir, opts.Jobs = t.TempDir(), 1
		other := opts
		other.DataDir, other.ReplicaOf, other.Jobs = t.TempDir(), opts.DataDir, 0
		testutil.StartServer(t, other)
	}
	s := testutil.StartServer(t, opts)
	tid := testutil.NewThread(t, s)
	gate := "notify-" + tid
	tm.push(scripted.ToolCalls(scripted.Call("start_async_task", map[string]any{"description": gate, "subagent_type": "waiter"})), scripted.Text("Started."))
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "boss", "input": testutil.UserInput("go")})
	tm.push(scripted.Text("The waiter task finished."))
	testutil.Release(gate)
	testutil.Eventually(t, 5*time.Second, "a notification run on the supervisor thread", func() bool {
		return len(s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)) == 2
	})
	runs := s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)
	note := runs[0].(map[string]any)
	testutil.Eventually(t, 5*time.Second, "the notification run to finish", func() bool {
		return testutil.RunStatus(t, s, tid, note["run_id"].(string)) == "success"
	})
	st := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)["values"].(map[string]any)
	msgs := st["messages"].([]any)
	var notice string
	for _, m := range msgs {
		if c := testutil.ContentOf(m); strings.HasPrefix(c, "[async task update]") {
			notice = c
		}
	}
	if !strings.Contains(notice, "agent: waiter  status: success") || !strings.Contains(notice, "released "+gate) {
		t.Fatalf("completion message = %q", notice)
	}
	for _, rec := range st["async_tasks"].(map[string]any) {
		if rec.(map[string]any)["status"] != "success" {
			t.Fatalf("task record after notification = %v", rec)
		}
	}
}

func TestSupervisorTasksOutliveTheSupervisor(t *testing.T) {
	for _, cancelOnDelete := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancel_tasks_on_thread_delete=%v", cancelOnDelete), func(t *testing.T) {
			model := scripted.New()
			t.Cleanup(model.Close)
			tm := &turnModel{}
			model.SetResponder(tm.respond)
			spec := testutil.SupervisorSpec(model.URL(), "") + fmt.Sprintf("cancel_tasks_on_thread_delete: %v\n", cancelOnDelete)
			s := testutil.StartServer(t, testutil.Options{Graphs: `{"graphs": {"boss": "./boss.yaml", "echo": "builtin:echo", "gated": "builtin:test-gated"}}`, Files: map[string]string{"boss.yaml": spec}})
			tid := testutil.NewThread(t, s)
			gate := fmt.Sprintf("outlive-%v-%s", cancelOnDelete, tid)
			tm.push(scripted.ToolCalls(scripted.Call("start_async_task", map[string]any{"description": gate, "subagent_type": "waiter"})), scripted.Text("Started."))
			out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "boss", "input": testutil.UserInput("go")}).Object(t)
			var task, run string
			for id, rec := range out["async_tasks"].(map[string]any) {
				task, run = id, rec.(map[string]any)["run_id"].(string)
			}
			testutil.WaitStatus(t, s, task, run, "running")
			s.Must(204, "DELETE", "/threads/"+tid, nil)
			if cancelOnDelete {
				testutil.WaitStatus(t, s, task, run, "interrupted")
				return
			}
			if st := testutil.RunStatus(t, s, task, run); st != "running" {
				t.Fatalf("deleting the supervisor thread touched its task: %s", st)
			}
			testutil.Release(gate)
			testutil.WaitStatus(t, s, task, run, "success")
		})
	}
}

// TestSupervisorAsyncTasksStartsEmpty checks that a supervisor thread's
// async_tasks is {} (never null or absent) from its first checkpoint on,
// before any task was started, so clients can iterate it at once.
func TestSupervisorAsyncTasksStartsEmpty(t *testing.T) {
	model := scripted.New()
	t.Cleanup(model.Close)
	model.SetResponder(func(scripted.ChatRequest) scripted.Step { return scripted.Text("nothing to delegate") })
	sup := testutil.StartServer(t, testutil.Options{
		Graphs: `{"graphs": {"boss": "./boss.yaml", "echo": "builtin:echo", "gated": "builtin:test-gated"}}`,
		Files:  map[string]string{"boss.yaml": testutil.SupervisorSpec(model.URL(), "")},
	})
	tid := testutil.NewThread(t, sup)
	values := sup.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "boss", "input": testutil.UserInput("hello")}).Object(t)
	if tasks, ok := values["async_tasks"].(map[string]any); !ok || len(tasks) != 0 {
		t.Fatalf("run values async_tasks = %#v, want {}", values["async_tasks"])
	}
	history := sup.Must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 10}).List(t)
	if len(history) < 2 {
		t.Fatalf("history has %d checkpoints", len(history))
	}
	for i, cp := range history {
		vals := cp.(map[string]any)["values"].(map[string]any)
		if tasks, ok := vals["async_tasks"].(map[string]any); !ok || len(tasks) != 0 {
			t.Fatalf("checkpoint %d (newest first) async_tasks = %#v, want {}", i, vals["async_tasks"])
		}
	}
}
