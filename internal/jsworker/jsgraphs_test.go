package jsworker_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// fixture returns the fixture LangGraph.js project (tests/jsgraphs) and
// its langgraph.json. It skips the test, saying why, when node is missing
// or the project's packages are not installed; CI installs them.
func fixture(t testing.TB) (dir, file string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the JavaScript graph tests need Node 20 or newer")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(wd, "..", "..", "tests", "jsgraphs")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@langchain", "langgraph")); err != nil {
		t.Skipf("%s/node_modules is absent: run `npm ci --no-audit --no-fund` there to run this test", dir)
	}
	return dir, filepath.Join(dir, "langgraph.json")
}

// startFixture serves the fixture project.
func startFixture(t *testing.T, opts testutil.Options) *testutil.Server {
	t.Helper()
	_, file := fixture(t)
	opts.GraphsFile = file
	return testutil.StartServer(t, opts)
}

func newThread(t *testing.T, s *testutil.Server) string {
	t.Helper()
	r := s.Do("POST", "/threads", map[string]any{})
	if r.Status != 200 {
		t.Fatalf("create thread: %d %s", r.Status, r.Raw)
	}
	return r.Object(t)["thread_id"].(string)
}

func wait(t *testing.T, s *testutil.Server, thread string, body map[string]any) map[string]any {
	t.Helper()
	r := s.Do("POST", "/threads/"+thread+"/runs/wait", body)
	if r.Status != 200 {
		t.Fatalf("runs/wait: %d %s", r.Status, r.Raw)
	}
	return r.Object(t)
}

func messages(t *testing.T, values map[string]any) []map[string]any {
	t.Helper()
	list, _ := values["messages"].([]any)
	out := make([]map[string]any, len(list))
	for i, m := range list {
		out[i] = m.(map[string]any)
	}
	return out
}

// TestJSGraphRunStateHistoryRestart runs a TypeScript StateGraph and reads
// its state and history back, also after a restart: the checkpoints are in
// our storage, in their native form too, since a second run after the
// restart continues the conversation.
func TestJSGraphRunStateHistoryRestart(t *testing.T) {
	data := t.TempDir()
	s := startFixture(t, testutil.Options{DataDir: data})
	thread := newThread(t, s)
	out := wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}})
	msgs := messages(t, out)
	if len(msgs) != 2 || msgs[0]["type"] != "human" || msgs[1]["type"] != "ai" || msgs[1]["content"] != "you said: hi" {
		t.Fatalf("values = %v", out)
	}
	if _, ok := msgs[1]["tool_calls"].([]any); !ok || msgs[1]["id"] == "" {
		t.Errorf("an AI message as clients expect it has id and tool_calls: %v", msgs[1])
	}
	state := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)
	if md := state["metadata"].(map[string]any); md["source"] != "loop" || md["step"] != float64(1) || md["graph_id"] != "js_chat" {
		t.Errorf("state metadata = %v", md)
	}
	history := s.Do("POST", "/threads/"+thread+"/history", map[string]any{}).List(t)
	var sources []string
	for _, h := range history {
		sources = append(sources, h.(map[string]any)["metadata"].(map[string]any)["source"].(string))
	}
	if !slices.Equal(sources, []string{"loop", "loop", "input"}) {
		t.Errorf("history sources newest first = %v, want loop loop input", sources)
	}
	s.Shutdown(t.Context())

	s = startFixture(t, testutil.Options{DataDir: data})
	again := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)
	if got := messages(t, again["values"].(map[string]any)); len(got) != 2 || got[1]["content"] != "you said: hi" {
		t.Fatalf("state after restart = %v", again["values"])
	}
	out = wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "again"}}}})
	if msgs := messages(t, out); len(msgs) != 4 || msgs[3]["content"] != "you said: again" || msgs[0]["content"] != "hi" {
		t.Fatalf("second run after restart = %v", out)
	}
}

// TestJSGraphAgentStreams runs the tool-calling agent (@langchain/openai
// against the scripted model) and checks the stream: values, updates of
// both nodes, token chunks in messages-tuple, then end.
func TestJSGraphAgentStreams(t *testing.T) {
	llm, err := scripted.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(llm.Close)
	llm.Script(scripted.ToolCalls(scripted.Call("get_weather", map[string]any{"city": "Paris"})), scripted.Text("Sunny in Paris today.").Split(4))
	t.Setenv("OPENAI_BASE_URL", llm.URL())
	t.Setenv("OPENAI_API_KEY", "test")
	s := startFixture(t, testutil.Options{})
	thread := newThread(t, s)
	resp := s.Stream("POST", "/threads/"+thread+"/runs/stream", map[string]any{
		"assistant_id": "js_agent", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "weather in Paris?"}}},
		"stream_mode": []string{"values", "updates", "messages-tuple"},
	}, nil)
	defer resp.Body.Close()
	events, err := testutil.NewSSEReader(resp.Body).All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var tokens strings.Builder
	updated := map[string]bool{}
	for _, ev := range events {
		names = append(names, ev.Event)
		switch ev.Event {
		case "messages":
			pair := ev.Data.([]any)
			msg := pair[0].(map[string]any)
			if msg["type"] == "AIMessageChunk" {
				c, _ := msg["content"].(string)
				tokens.WriteString(c)
			}
			if md := pair[1].(map[string]any); md["langgraph_node"] == nil {
				t.Errorf("messages metadata lacks langgraph_node: %v", md)
			}
		case "updates":
			for node := range ev.Data.(map[string]any) {
				updated[node] = true
			}
		case "error":
			t.Fatalf("error event: %v", ev.Data)
		}
	}
	if names[0] != "metadata" || names[len(names)-1] != "end" {
		t.Errorf("events = %v, want metadata first and end last", names)
	}
	if tokens.String() != "Sunny in Paris today." {
		t.Errorf("streamed tokens = %q", tokens.String())
	}
	if !updated["agent"] || !updated["tools"] {
		t.Errorf("updates came from %v, want agent and tools", updated)
	}
	state := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)
	msgs := messages(t, state["values"].(map[string]any))
	if len(msgs) != 4 || msgs[1]["tool_calls"].([]any)[0].(map[string]any)["name"] != "get_weather" || msgs[2]["type"] != "tool" || msgs[2]["content"] != "It is sunny in Paris." || msgs[3]["type"] != "ai" || msgs[3]["content"] != "Sunny in Paris today." {
		t.Fatalf("final messages = %v", msgs)
	}
}

// TestJSGraphInterruptResume pauses on interrupt() and resumes with a
// Command: the pending interrupt is kept in our storage between the runs.
func TestJSGraphInterruptResume(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := newThread(t, s)
	out := wait(t, s, thread, map[string]any{"assistant_id": "js_interrupt", "input": map[string]any{"question": "ship it?"}})
	ints, _ := out["__interrupt__"].([]any)
	if len(ints) != 1 || ints[0].(map[string]any)["value"].(map[string]any)["question"] != "ship it?" {
		t.Fatalf("paused run values = %v", out)
	}
	if st := s.Do("GET", "/threads/"+thread, nil).Object(t)["status"]; st != "interrupted" {
		t.Errorf("thread status = %v, want interrupted", st)
	}
	state := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)
	tasks := state["tasks"].([]any)
	if next := state["next"].([]any); len(next) != 1 || next[0] != "ask" || len(tasks) != 1 || len(tasks[0].(map[string]any)["interrupts"].([]any)) != 1 {
		t.Fatalf("paused state next=%v tasks=%v", state["next"], tasks)
	}
	out = wait(t, s, thread, map[string]any{"assistant_id": "js_interrupt", "command": map[string]any{"resume": "yes"}})
	if out["done"] != "answered: yes" || out["__interrupt__"] != nil {
		t.Fatalf("resumed run values = %v", out)
	}
	if st := s.Do("GET", "/threads/"+thread, nil).Object(t)["status"]; st != "idle" {
		t.Errorf("thread status after resume = %v, want idle", st)
	}
}

// TestJSGraphCustomStoreFactory covers the custom stream writer, a store
// round trip through our store service, and a factory export called with
// the run's config.
func TestJSGraphCustomStoreFactory(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	resp := s.Stream("POST", "/runs/stream", map[string]any{"assistant_id": "js_custom", "input": map[string]any{"count": 3}, "stream_mode": []string{"custom"}}, nil)
	events, err := testutil.NewSSEReader(resp.Body).All()
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var progress []float64
	for _, ev := range events {
		if ev.Event == "custom" {
			progress = append(progress, ev.Data.(map[string]any)["progress"].(float64))
		}
	}
	if !slices.Equal(progress, []float64{1, 2, 3}) {
		t.Errorf("custom progress = %v", progress)
	}

	for want := 1; want <= 2; want++ {
		out := wait(t, s, newThread(t, s), map[string]any{"assistant_id": "js_store", "input": map[string]any{"user": "ann"}})
		if out["visits"] != float64(want) || out["found"] != float64(1) {
			t.Fatalf("store run %d values = %v", want, out)
		}
	}
	item := s.Do("GET", "/store/items?namespace=visits.ann&key=counter", nil).Object(t)
	if item["value"].(map[string]any)["visits"] != float64(2) {
		t.Errorf("store item = %v", item)
	}

	out := wait(t, s, newThread(t, s), map[string]any{"assistant_id": "js_factory", "input": map[string]any{"name": "bo"}, "config": map[string]any{"configurable": map[string]any{"greeting": "hey"}}})
	if out["greeting"] != "hey, bo" {
		t.Errorf("factory run values = %v", out)
	}
}

// TestJSGraphNodeError: a node that throws ends the run in error with the
// JavaScript error's name and message; the thread keeps the checkpoint
// before the failed step.
func TestJSGraphNodeError(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := newThread(t, s)
	run := s.Do("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "js_fail", "input": map[string]any{}}).Object(t)
	runID := run["run_id"].(string)
	s.Do("GET", "/threads/"+thread+"/runs/"+runID+"/join", nil)
	got := s.Do("GET", "/threads/"+thread+"/runs/"+runID, nil).Object(t)
	if got["status"] != "error" {
		t.Fatalf("run = %v, want status error", got)
	}
	th := s.Do("GET", "/threads/"+thread, nil).Object(t)
	if th["status"] != "error" || !strings.Contains(fmt.Sprint(th["error"]), "the explode node failed on purpose") {
		t.Errorf("thread = status %v error %v", th["status"], th["error"])
	}
	state := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)
	if steps := state["values"].(map[string]any)["steps"].([]any); len(steps) != 1 || steps[0] != "first" {
		t.Errorf("values after the failure = %v", state["values"])
	}
	if next := state["next"].([]any); len(next) != 1 || next[0] != "explode" {
		t.Errorf("next after the failure = %v, want [explode]", next)
	}
}

// runStatus reads a run's status.
func runStatus(t *testing.T, s *testutil.Server, thread, run string) string {
	t.Helper()
	return s.Do("GET", "/threads/"+thread+"/runs/"+run, nil).Object(t)["status"].(string)
}

// startSlow starts the slow graph and waits until it runs.
func startSlow(t *testing.T, s *testutil.Server) (thread, run string) {
	t.Helper()
	thread = newThread(t, s)
	run = s.Do("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "js_slow", "input": map[string]any{"seconds": 60}}).Object(t)["run_id"].(string)
	testutil.Eventually(t, 10*time.Second, "slow run starts", func() bool { return runStatus(t, s, thread, run) == "running" })
	return thread, run
}

// TestJSGraphCancel cancels the slow graph's runs: the AbortSignal reaches
// the running node, and the run is interrupted. It reports the latency
// from the cancel request to the run's end.
func TestJSGraphCancel(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	var took []time.Duration
	for i := 0; i < 5; i++ {
		thread, run := startSlow(t, s)
		start := time.Now()
		if r := s.Do("POST", "/threads/"+thread+"/runs/"+run+"/cancel?wait=true", nil); r.Status >= 300 {
			t.Fatalf("cancel: %d %s", r.Status, r.Raw)
		}
		took = append(took, time.Since(start))
		if st := runStatus(t, s, thread, run); st != "interrupted" {
			t.Fatalf("cancelled run status = %s", st)
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("cancel to run end over %d runs: p50 %v, max (p99) %v", len(took), took[len(took)/2], took[len(took)-1])
	if worst := took[len(took)-1]; worst > time.Second {
		t.Errorf("a cancel took %v to end the run (target 100 ms)", worst)
	}
}

// TestJSGraphWorkerKilled kills the worker with SIGKILL mid-run: the run
// ends in error saying what happened, a new worker replaces it, and the
// next run succeeds.
func TestJSGraphWorkerKilled(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread, run := startSlow(t, s)
	pool := s.GraphWorkers()
	before := pool.Workers()
	if _, err := pool.Kill(0); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the killed worker's run ends", func() bool { return runStatus(t, s, thread, run) == "error" })
	th := s.Do("GET", "/threads/"+thread, nil).Object(t)
	if !strings.Contains(fmt.Sprint(th["error"]), "graph worker running this run exited") {
		t.Errorf("thread error = %v", th["error"])
	}
	testutil.Eventually(t, 30*time.Second, "a new worker replaces the killed one", func() bool {
		now := pool.Workers()
		return len(now) == 1 && now[0] != before[0]
	})
	out := wait(t, s, newThread(t, s), map[string]any{"assistant_id": "js_chat", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "still there?"}}}})
	if msgs := messages(t, out); len(msgs) != 2 || msgs[1]["content"] != "you said: still there?" {
		t.Errorf("run on the new worker = %v", out)
	}
}

// project writes a LangGraph.js project in a temporary folder: files, a
// langgraph.json with graphs, and node_modules linked to the fixture's
// packages named in modules (all of them when modules is nil).
func project(t *testing.T, graphs string, files map[string]string, modules []string) string {
	t.Helper()
	fixtureDir, _ := fixture(t)
	dir := t.TempDir()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type": "module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(fixtureDir, "node_modules")
	if modules == nil {
		if err := os.Symlink(src, filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range modules {
		target := filepath.Join(dir, "node_modules", m)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(src, m), target); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "langgraph.json")
	if err := os.WriteFile(file, []byte(graphs), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestJSGraphBadConfigs: each project the server cannot serve is refused
// at start with one line naming the graph, its file and the cause.
func TestJSGraphBadConfigs(t *testing.T) {
	const good = "import { graph as g } from './ok.mjs';\n"
	okGraph := map[string]string{"ok.mjs": `import { Annotation, StateGraph } from "@langchain/langgraph";
export const graph = new StateGraph(Annotation.Root({ x: Annotation() })).addNode("n", () => ({ x: 1 })).addEdge("__start__", "n").compile();
`}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range okGraph {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	// Node finds a linked package's own dependencies from its real path.
	langchain := []string{"@langchain/langgraph"}
	cases := []struct {
		name, graphs string
		files        map[string]string
		modules      []string
		want         []string
	}{
		{"python file", `{"graphs": {"py": "./agent.py:graph"}}`, nil, nil, []string{`graphs.py`, "Python graphs are not served yet"}},
		{"python module", `{"graphs": {"py": "my_pkg.agent:graph"}}`, nil, nil, []string{"Python graphs are not served yet"}},
		{"missing export", `{"graphs": {"g": "./ok.mjs:nope"}}`, okGraph, nil, []string{`graph "g" (`, "ok.mjs", `has no export named "nope" (it exports: graph)`}},
		{"not a graph", `{"graphs": {"g": "./bad.mjs:value"}}`, with(map[string]string{"bad.mjs": good + "export const value = 42;\n"}), nil, []string{`graph "g"`, "bad.mjs", "is not a graph, a StateGraph or a factory function (it is number)"}},
		{"syntax error", `{"graphs": {"g": "./broken.mjs:graph"}}`, with(map[string]string{"broken.mjs": "export const graph = {;\n"}), nil, []string{`graph "g"`, "broken.mjs", "cannot import", "SyntaxError"}},
		{"missing file", `{"graphs": {"g": "./absent.mjs:graph"}}`, okGraph, nil, []string{`graph "g"`, "absent.mjs", "cannot import", "Cannot find module"}},
		{"two problems, a line each", `{"graphs": {"a": "./ok.mjs:nope", "b": "./absent.js:graph"}}`, okGraph, nil, []string{"\ngraph \"a\"", "\ngraph \"b\""}},
		{"no langgraph", `{"graphs": {"g": "./ok.mjs:graph"}}`, okGraph, []string{}, []string{`graph "g"`, "@langchain/langgraph is not installed in"}},
		{"typescript without a transpiler", `{"graphs": {"g": "./g.ts:graph"}}`, with(map[string]string{"g.ts": "export { graph } from './ok.mjs';\n"}), langchain, []string{`graph "g"`, "g.ts", "no TypeScript transpiler", "npm install --save-dev tsx"}},
		{"node too old for node_version", `{"node_version": "99", "graphs": {"g": "./ok.mjs:graph"}}`, okGraph, nil, []string{`older than langgraph.json's node_version "99"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := project(t, c.graphs, c.files, c.modules)
			err := testutil.BuildErr(t, testutil.Options{GraphsFile: file})
			if err == nil {
				t.Fatal("the server started")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	t.Run("node missing", func(t *testing.T) {
		file := project(t, `{"graphs": {"g": "./ok.mjs:graph"}}`, okGraph, nil)
		t.Setenv("PATH", t.TempDir())
		err := testutil.BuildErr(t, testutil.Options{GraphsFile: file})
		if err == nil || !strings.Contains(err.Error(), "node (node) is not installed or not on PATH") {
			t.Fatalf("err = %v", err)
		}
	})
}

// BenchmarkJSGraphSuperStep measures the worker boundary's cost per
// super-step: runs of the steps graph (200 super-steps, a trivial node
// each, a checkpoint put and its snapshot per step), one after another on
// a fresh thread, over HTTP. It reports the p50 and p90 of a run's time
// divided by its steps ("ns/step"), which includes LangGraph.js's own
// loop and the engine's checkpoint writes, and the run's fixed cost
// amortized.
func BenchmarkJSGraphSuperStep(b *testing.B) {
	_, file := fixture(b)
	s := testutil.StartServer(b, testutil.Options{GraphsFile: file})
	const steps = 200
	run := func() time.Duration {
		r := s.Do("POST", "/threads", map[string]any{})
		thread := r.JSON.(map[string]any)["thread_id"].(string)
		start := time.Now()
		out := s.Do("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "js_steps", "input": map[string]any{"steps": steps}, "config": map[string]any{"recursion_limit": steps + 10}})
		took := time.Since(start)
		if out.JSON.(map[string]any)["count"] != float64(steps) {
			b.Fatalf("run = %s", out.Raw)
		}
		return took
	}
	run() // warm the worker's module cache and JIT
	b.ResetTimer()
	per := make([]float64, 0, b.N)
	for i := 0; i < b.N; i++ {
		per = append(per, float64(run().Nanoseconds())/steps)
	}
	b.StopTimer()
	sort.Float64s(per)
	b.ReportMetric(per[len(per)/2], "p50-ns/step")
	b.ReportMetric(per[len(per)*9/10], "p90-ns/step")
}
