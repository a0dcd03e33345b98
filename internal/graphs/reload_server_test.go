package graphs_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// reloadSpec is an agent spec using the scripted model, with a system prompt
// and an input schema title to tell its versions apart.
func reloadSpec(model *scripted.Server, prompt, title, tools string) string {
	return fmt.Sprintf("name: reloading\nmodel:\n  name: test-model\n  base_url: %s\n  max_retries: 0\nsystem_prompt: %s\ntools: [%s]\nschemas:\n  input:\n    title: %s\n    type: object\n",
		model.URL(), prompt, tools, title)
}

// reloadServer serves graph "agent" from a spec file; it returns the file's
// path and the server's log.
func reloadServer(t *testing.T, spec string) (*testutil.Server, string, *testutil.LogBuffer) {
	t.Helper()
	logs := &testutil.LogBuffer{}
	s := testutil.StartServer(t, testutil.Options{
		Graphs: `{"graphs": {"agent": "./agent.yaml", "echo": "builtin:echo"}}`,
		Files:  map[string]string{"agent.yaml": spec},
		Log:    logs,
	})
	d, ok := s.Graphs.Get("agent")
	if !ok || d.File == "" {
		t.Fatalf("graph agent has no spec file: %+v", d)
	}
	return s, d.File, logs
}

func editSpec(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// awaitLog waits until the server has logged n lines containing msg.
func awaitLog(t *testing.T, logs *testutil.LogBuffer, msg string, n int) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, fmt.Sprintf("%d log lines %q", n, msg), func() bool {
		return strings.Count(logs.String(), msg) >= n
	})
}

// systemPromptOfNewRun runs the agent on a new thread and returns the system
// prompt its model call received.
func systemPromptOfNewRun(t *testing.T, s *testutil.Server, model *scripted.Server) string {
	t.Helper()
	before := len(model.Requests())
	s.Must(200, "POST", "/threads/"+testutil.NewThread(t, s)+"/runs/wait", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("hi")})
	reqs := model.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("the run made %d model calls, want 1", len(reqs)-before)
	}
	return systemPrompt(reqs[before])
}

func systemPrompt(r scripted.Request) string {
	if msgs := r.Chat.Messages; len(msgs) > 0 && msgs[0].Role == "system" {
		return msgs[0].Text()
	}
	return ""
}

// expectServed checks which version of the spec graph "agent" serves: a
// new run's system prompt contains prompt and the assistant's input schema
// is titled title.
func expectServed(t *testing.T, s *testutil.Server, model *scripted.Server, prompt, title string) {
	t.Helper()
	if p := systemPromptOfNewRun(t, s, model); !strings.Contains(p, prompt) {
		t.Fatalf("a new run got system prompt %q, want one containing %q", p, prompt)
	}
	schemas := s.Must(200, "GET", "/assistants/agent/schemas", nil).Object(t)
	if got := schemas["input_schema"].(map[string]any)["title"]; got != title {
		t.Fatalf("assistant input schema title %v, want %s", got, title)
	}
}

func TestSpecEditReloadsForNewRunsOnly(t *testing.T) {
	model := scripted.New()
	t.Cleanup(model.Close)
	// A run asked to "hold" waits in its first model call until release is
	// closed, then calls a tool, so that it calls the model a second time.
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(open)
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "user" && last.Text() == "hold" {
			<-release
			return scripted.ToolCalls(scripted.Call("write_todos", map[string]any{"todos": []any{}}))
		}
		return scripted.Text("done")
	})
	s, path, logs := reloadServer(t, reloadSpec(model, "You are the first version.", "One", "write_todos"))
	expectServed(t, s, model, "first version", "One")

	held := testutil.NewThread(t, s)
	run := s.Must(200, "POST", "/threads/"+held+"/runs", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("hold")}).Object(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := model.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}

	editSpec(t, path, reloadSpec(model, "You are version two, reloaded.", "Two", "write_todos"))
	awaitLog(t, logs, "agent spec reloaded", 1)
	expectServed(t, s, model, "version two", "Two")

	open()
	s.Must(200, "GET", "/threads/"+held+"/runs/"+run["run_id"].(string)+"/join", nil)
	var heldCalls int
	for _, r := range model.Requests() {
		if len(r.Chat.Messages) < 2 || r.Chat.Messages[1].Text() != "hold" {
			continue
		}
		heldCalls++
		if p := systemPrompt(r); !strings.Contains(p, "first version") {
			t.Errorf("model call %d of the run started before the reload got system prompt %q", heldCalls, p)
		}
	}
	if heldCalls != 2 {
		t.Fatalf("the held run made %d model calls, want 2", heldCalls)
	}
}

func TestBrokenSpecEditKeepsTheOldSpec(t *testing.T) {
	model := scripted.New()
	t.Cleanup(model.Close)
	model.SetResponder(func(scripted.ChatRequest) scripted.Step { return scripted.Text("done") })
	s, path, logs := reloadServer(t, reloadSpec(model, "You are the first version.", "One", "write_todos"))

	editSpec(t, path, reloadSpec(model, "You are a broken version.", "Broken", "write_todos, telepathy"))
	awaitLog(t, logs, "agent spec not reloaded", 1)
	expectServed(t, s, model, "first version", "One")
	line := lastLine(logs, "agent spec not reloaded")
	for _, want := range []string{path, `tools[1]`, "telepathy"} {
		if !strings.Contains(line, want) {
			t.Errorf("the error line does not name %s: %s", want, line)
		}
	}
	if n := strings.Count(logs.String(), "agent spec not reloaded"); n != 1 {
		t.Errorf("the broken edit was reported %d times, want once", n)
	}

	// Fixing the file reloads it.
	editSpec(t, path, reloadSpec(model, "You are the third version.", "Three", "write_todos"))
	awaitLog(t, logs, "agent spec reloaded", 1)
	expectServed(t, s, model, "third version", "Three")

	// A reloaded spec is checked against the served graphs like at start-up.
	editSpec(t, path, reloadSpec(model, "You are a supervisor.", "Four", "write_todos")+
		"async_subagents:\n  - {name: helper, description: helps, graph_id: nowhere}\n")
	awaitLog(t, logs, "agent spec not reloaded", 2)
	if !strings.Contains(lastLine(logs, "agent spec not reloaded"), `async subagent graph \"nowhere\" is not served`) {
		t.Errorf("error line: %s", lastLine(logs, "agent spec not reloaded"))
	}
	expectServed(t, s, model, "third version", "Three")
}

// lastLine returns the last log line containing msg.
func lastLine(logs *testutil.LogBuffer, msg string) string {
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, msg) {
			line = l
		}
	}
	return line
}
