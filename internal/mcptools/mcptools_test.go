package mcptools_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// sdkDir is tests/sdk, with the MCP server packages these tests run.
func sdkDir(t testing.TB) string {
	return testutil.SDKDir(t, "@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/sdk")
}

// everythingHTTP starts the reference "everything" server over streamable
// HTTP (tests/sdk/mcp-everything-http.mjs) and returns its URL and a
// function counting the sessions it opened.
func everythingHTTP(t *testing.T, sdk string) (string, func() int) {
	t.Helper()
	var mu sync.Mutex
	sessions := 0
	u := testutil.StartNodeScript(t, sdk, "mcp-everything-http.mjs", func(line string) {
		if strings.HasPrefix(line, "session ") {
			mu.Lock()
			sessions++
			mu.Unlock()
		}
	})
	return u, func() int { mu.Lock(); defer mu.Unlock(); return sessions }
}

// mcpAgent starts the server with one agent whose spec lists servers.
func mcpAgent(t *testing.T, servers string) (*testutil.Server, *scripted.Server) {
	t.Helper()
	model := scripted.New()
	t.Cleanup(model.Close)
	spec := fmt.Sprintf("name: mcp\nmodel:\n  name: m\n  base_url: %s\n  max_retries: 0\nmcp_servers:\n%s", model.URL(), servers)
	s := testutil.StartServer(t, testutil.Options{
		Graphs: `{"graphs": {"agent": "./agent.yaml"}}`,
		Files:  map[string]string{"agent.yaml": spec},
	})
	return s, model
}

// runAgent runs the agent on a new thread and returns the final messages.
func runAgent(t *testing.T, s *testutil.Server, thread, text string) []any {
	t.Helper()
	out := s.Must(200, "POST", "/threads/"+thread+"/runs/wait", map[string]any{
		"assistant_id": "agent", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}},
	}).Object(t)
	msgs, ok := out["messages"].([]any)
	if !ok {
		t.Fatalf("run ended with %v", out)
	}
	return msgs
}

// toolResults maps tool names to the contents of their tool messages.
func toolResults(msgs []any) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["type"] == "tool" {
			name, _ := mm["name"].(string)
			content, _ := mm["content"].(string)
			out[name] = content
		}
	}
	return out
}

// stdioEverything is a stdio server entry that records each process id
// in pidFile before it becomes the everything server.
func stdioEverything(sdk, pidFile string) string {
	script := filepath.Join(sdk, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	return fmt.Sprintf(`  - name: everything
    command: sh
    args: ["-c", "echo $$ >> %s; exec node %s stdio"]
`, pidFile, script)
}

func pids(t *testing.T, file string) []int {
	t.Helper()
	raw, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(raw)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestAgentUsesStdioHTTPAndFilesystemServers(t *testing.T) {
	sdk := sdkDir(t)
	url, sessions := everythingHTTP(t, sdk)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pids")
	fs := filepath.Join(sdk, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	s, model := mcpAgent(t, stdioEverything(sdk, pidFile)+fmt.Sprintf(`  - name: web
    url: %s
    tools: [get-sum]
  - name: fs
    command: node
    args: [%q, %q]
`, url, fs, dir))
	model.Script(
		scripted.ToolCalls(
			scripted.Call("everything_echo", map[string]any{"message": "hi"}),
			scripted.Call("web_get-sum", map[string]any{"a": 2, "b": 3}),
			scripted.Call("fs_read_text_file", map[string]any{"path": filepath.Join(dir, "note.txt")}),
		),
		scripted.Text("done"),
		scripted.ToolCalls(scripted.Call("web_get-sum", map[string]any{"a": 1, "b": 1})),
		scripted.Text("again"),
	)
	thread := testutil.NewThread(t, s)
	got := toolResults(runAgent(t, s, thread, "use the tools"))
	if !strings.Contains(got["everything_echo"], "hi") || !strings.Contains(got["web_get-sum"], "5") || got["fs_read_text_file"] != "hello" {
		t.Fatalf("tool results = %v", got)
	}
	first := model.Requests()[0].Chat
	names := first.ToolNames()
	for _, want := range []string{"everything_echo", "web_get-sum", "fs_read_text_file"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools offered = %v, want %s among them", names, want)
		}
	}
	if slices.Contains(names, "web_echo") {
		t.Fatalf("the tools filter must hide web_echo: %v", names)
	}
	for _, tool := range first.Tools {
		if tool.Function.Name == "web_get-sum" {
			props, _ := tool.Function.Parameters["properties"].(map[string]any)
			if _, ok := props["a"]; !ok {
				t.Fatalf("get-sum schema = %v", tool.Function.Parameters)
			}
		}
	}
	// A second run reuses the sessions: no new HTTP session, no new process.
	if got := toolResults(runAgent(t, s, thread, "again")); !strings.Contains(got["web_get-sum"], "2") {
		t.Fatalf("second run results = %v", got)
	}
	if n := sessions(); n != 1 {
		t.Fatalf("HTTP sessions opened = %d, want 1", n)
	}
	ps := pids(t, pidFile)
	if len(ps) != 1 {
		t.Fatalf("stdio processes started = %v, want one", ps)
	}
	// Shutdown stops the stdio processes.
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the stdio server still runs after shutdown", func() bool { return !alive(ps[0]) })
}

func TestStdioServerIsRestartedAfterItDies(t *testing.T) {
	sdk := sdkDir(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	s, model := mcpAgent(t, stdioEverything(sdk, pidFile))
	model.Script(
		scripted.ToolCalls(scripted.Call("everything_echo", map[string]any{"message": "one"})), scripted.Text("ok"),
		scripted.ToolCalls(scripted.Call("everything_echo", map[string]any{"message": "two"})), scripted.Text("ok"),
	)
	thread := testutil.NewThread(t, s)
	if got := toolResults(runAgent(t, s, thread, "first")); !strings.Contains(got["everything_echo"], "one") {
		t.Fatalf("first results = %v", got)
	}
	first := pids(t, pidFile)
	if len(first) != 1 {
		t.Fatalf("processes = %v", first)
	}
	if err := syscall.Kill(first[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := toolResults(runAgent(t, s, thread, "second")); !strings.Contains(got["everything_echo"], "two") {
		t.Fatalf("after the process died, results = %v", got)
	}
	if ps := pids(t, pidFile); len(ps) != 2 {
		t.Fatalf("processes = %v, want a second one", ps)
	}
}

func TestToolCallTimeoutAndCancellation(t *testing.T) {
	sdk := sdkDir(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	// The same server twice: "everything" with a 5 s timeout (room for a loaded machine to start it), "patient"
	// with the default 60 s.
	patient := strings.Replace(stdioEverything(sdk, pidFile), "name: everything", "name: patient", 1)
	s, model := mcpAgent(t, stdioEverything(sdk, pidFile)+"    timeout_seconds: 5\n"+patient)
	long := func(server string) scripted.Step {
		return scripted.ToolCalls(scripted.Call(server+"_trigger-long-running-operation", map[string]any{"duration": 50, "steps": 2}))
	}
	model.Script(long("everything"), scripted.Text("gave up"))
	thread := testutil.NewThread(t, s)
	got := toolResults(runAgent(t, s, thread, "slow"))
	if msg := got["everything_trigger-long-running-operation"]; !strings.Contains(msg, "no answer within 5s") {
		t.Fatalf("timed-out call result = %q", msg)
	}
	// Cancelling the run while the call runs ends it long before the
	// operation (50 s) or the timeout (60 s) would.
	model.Script(long("patient"))
	resp := s.Stream("POST", "/threads/"+thread+"/runs/stream", map[string]any{"assistant_id": "agent", "stream_mode": []string{"tools"},
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "again"}}}}, nil)
	defer resp.Body.Close()
	rd := testutil.NewSSEReader(resp.Body)
	runID := ""
	for {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("the stream ended before the tool call started: %v", err)
		}
		if ev.Event == "metadata" {
			runID, _ = ev.Data.(map[string]any)["run_id"].(string)
		}
		if d, ok := ev.Data.(map[string]any); ok && ev.Event == "tools" && d["event"] == "on_tool_start" {
			break
		}
	}
	start := time.Now()
	s.Must(202, "POST", "/threads/"+thread+"/runs/"+runID+"/cancel?wait=0", nil)
	if _, err := rd.All(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the cancelled call ran on for %v", d)
	}
	if st := s.Must(200, "GET", "/threads/"+thread+"/runs/"+runID, nil).Object(t)["status"]; st != "interrupted" {
		t.Fatalf("run status = %v", st)
	}
}

func TestSpecValidation(t *testing.T) {
	err := testutil.BuildErr(t, testutil.Options{
		Graphs: `{"graphs": {"agent": "./agent.yaml"}}`,
		Files: map[string]string{"agent.yaml": `name: bad
model: m
mcp_servers:
  - name: "a b"
    command: x
  - name: web
    transport: sse
  - name: web
    url: http://127.0.0.1:1/mcp
`},
	})
	if err == nil {
		t.Fatal("a spec with bad mcp_servers loaded")
	}
	for _, want := range []string{"mcp_servers[0]: name", "mcp_servers[1]: url", `mcp_servers[2]: name "web" is listed twice`} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
}

func TestReloadWithoutTheServerStopsIt(t *testing.T) {
	sdk := sdkDir(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	s, model := mcpAgent(t, stdioEverything(sdk, pidFile))
	model.Script(scripted.ToolCalls(scripted.Call("everything_echo", map[string]any{"message": "x"})), scripted.Text("ok"), scripted.Text("plain"))
	thread := testutil.NewThread(t, s)
	if got := toolResults(runAgent(t, s, thread, "one")); !strings.Contains(got["everything_echo"], "x") {
		t.Fatalf("results = %v", got)
	}
	ps := pids(t, pidFile)
	if len(ps) != 1 || !alive(ps[0]) {
		t.Fatalf("processes = %v", ps)
	}
	d, _ := s.Graphs.Get("agent")
	if err := os.WriteFile(d.File, []byte(fmt.Sprintf("name: mcp\nmodel:\n  name: m\n  base_url: %s\n  max_retries: 0\n", model.URL())), 0o644); err != nil {
		t.Fatal(err)
	}
	s.ReloadGraphs()
	testutil.Eventually(t, 15*time.Second, "the stdio server of the removed entry still runs", func() bool { return !alive(ps[0]) })
	msgs := runAgent(t, s, thread, "two")
	if last := msgs[len(msgs)-1].(map[string]any)["content"]; last != "plain" {
		t.Fatalf("the reloaded agent answered %v", last)
	}
	if reqs := model.Requests(); len(reqs[len(reqs)-1].Chat.Tools) != 0 {
		t.Fatalf("the reloaded agent still offers %v", reqs[len(reqs)-1].Chat.ToolNames())
	}
}
