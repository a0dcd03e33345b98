package testutil

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/threads"
)

// StartAgent starts the server with graph "agent", an agent spec whose
// model is a scripted OpenAI-compatible server (returned), with the file
// tools and bash, and extra appended to the spec; graph "echo" is served
// beside it. opts adjust the options before the server starts.
func StartAgent(t testing.TB, extra string, opts ...func(*Options)) (*Server, *scripted.Server) {
	t.Helper()
	model := scripted.New()
	t.Cleanup(model.Close)
	spec := fmt.Sprintf(`name: helper
description: test agent
model:
  name: test-model
  base_url: %s
  max_retries: 0
system_prompt: You help.
tools: [write_todos, ls, read_file, write_file, edit_file, bash]
%s`, model.URL(), extra)
	o := Options{
		Graphs: `{"graphs": {"agent": "./agent.yaml", "echo": "builtin:echo"}}`,
		Files:  map[string]string{"agent.yaml": spec},
	}
	for _, f := range opts {
		f(&o)
	}
	return StartServer(t, o), model
}

// BenchAgentSpec is the agent of the runtime benchmarks, with its model at
// modelURL: two cheap built-in tools, no retries, turn and recursion limits
// far above the script.
func BenchAgentSpec(modelURL string) string {
	return fmt.Sprintf(`name: bench
model:
  name: bench-model
  base_url: %s
  max_retries: 0
system_prompt: You help.
tools: [ls, write_todos]
max_turns: 200
`, modelURL)
}

// StartBenchAgent starts a server with options o whose graph "agent" is
// BenchAgentSpec with a scripted server (returned) as its model.
func StartBenchAgent(b *testing.B, o Options) (*Server, *scripted.Server) {
	b.Helper()
	model := scripted.New()
	b.Cleanup(model.Close)
	o.Graphs = `{"graphs": {"agent": "./agent.yaml"}}`
	o.Files = map[string]string{"agent.yaml": BenchAgentSpec(model.URL())}
	return StartServer(b, o), model
}

// NewBenchThread creates a thread through the service, not over HTTP.
func NewBenchThread(b *testing.B, s *Server) uuid.UUID {
	b.Helper()
	th, err := s.Threads.Create(context.Background(), threads.CreateParams{})
	if err != nil {
		b.Fatal(err)
	}
	return th.ThreadID
}

// TaskCall is a call of the task tool (a subagent delegation) with a
// fixed id.
func TaskCall(id, description, prompt, kind string) scripted.ToolCall {
	c := scripted.Call("task", map[string]any{"description": description, "prompt": prompt, "subagent_type": kind})
	c.ID = id
	return c
}

// SupervisorSpec is the spec of agent "boss", a supervisor with async
// subagents "echoer" (graph echo) and "waiter" (graph gated) and
// compaction, whose model is at modelURL; with a subagentURL the
// subagents run on that server, else in process.
func SupervisorSpec(modelURL, subagentURL string) string {
	return SupervisorSpecWith(modelURL, func(string) string {
		if subagentURL == "" {
			return ""
		}
		return "\n    url: " + subagentURL
	})
}

// SupervisorSpecWith is SupervisorSpec with the lines placing each
// subagent's graph given by where.
func SupervisorSpecWith(modelURL string, where func(graph string) string) string {
	return fmt.Sprintf(`name: boss
description: supervises
model:
  name: test-model
  base_url: %s
  max_retries: 0
system_prompt: You delegate.
max_turns: 5
async_subagents:
  - name: echoer
    description: repeats things
    graph_id: echo%s
  - name: waiter
    description: waits on a gate
    graph_id: gated%s
middleware:
  compaction:
    max_tokens: 700
    keep_messages: 4
`, modelURL, where("echo"), where("gated"))
}

// ThreadRuns lists the runs of a thread (at most 50).
func ThreadRuns(t testing.TB, s *Server, thread string) []any {
	t.Helper()
	return s.Must(200, "GET", "/threads/"+thread+"/runs?limit=50", nil).List(t)
}
