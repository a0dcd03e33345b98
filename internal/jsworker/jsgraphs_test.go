package jsworker_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentserver/internal/config"
	"agentserver/internal/llm/scripted"
	"agentserver/internal/metrics"
	"agentserver/internal/runs"
	"agentserver/internal/server"
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
	thread := testutil.NewThread(t, s)
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
	thread := testutil.NewThread(t, s)
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
	thread := testutil.NewThread(t, s)
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
		out := wait(t, s, testutil.NewThread(t, s), map[string]any{"assistant_id": "js_store", "input": map[string]any{"user": "ann"}})
		if out["visits"] != float64(want) || out["found"] != float64(1) {
			t.Fatalf("store run %d values = %v", want, out)
		}
	}
	item := s.Do("GET", "/store/items?namespace=visits.ann&key=counter", nil).Object(t)
	if item["value"].(map[string]any)["visits"] != float64(2) {
		t.Errorf("store item = %v", item)
	}

	out := wait(t, s, testutil.NewThread(t, s), map[string]any{"assistant_id": "js_factory", "input": map[string]any{"name": "bo"}, "config": map[string]any{"configurable": map[string]any{"greeting": "hey"}}})
	if out["greeting"] != "hey, bo" {
		t.Errorf("factory run values = %v", out)
	}
}

// TestJSGraphNodeError: a node that throws ends the run in error with the
// JavaScript error's name and message; the thread keeps the checkpoint
// before the failed step.
func TestJSGraphNodeError(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := testutil.NewThread(t, s)
	th := failedRun(t, s, thread, map[string]any{"assistant_id": "js_fail", "input": map[string]any{}})
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

// failedRun runs body on thread, wants the run to end in error, and
// returns the thread after it.
func failedRun(t *testing.T, s *testutil.Server, thread string, body map[string]any) map[string]any {
	t.Helper()
	runID := s.Do("POST", "/threads/"+thread+"/runs", body).Object(t)["run_id"].(string)
	s.Do("GET", "/threads/"+thread+"/runs/"+runID+"/join", nil)
	if got := s.Do("GET", "/threads/"+thread+"/runs/"+runID, nil).Object(t); got["status"] != "error" {
		t.Fatalf("run = %v, want status error", got)
	}
	return s.Do("GET", "/threads/"+thread, nil).Object(t)
}

// storageCommits is the number of storage commits of this process so far.
func storageCommits(t *testing.T) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "agentserver_storage_commit_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no storage commit metric")
	return 0
}

// TestJSGraphShortRunCommits runs a one-node graph to its end: its
// checkpoints come with the worker's answer, and go in the run's last
// commit rather than in a background commit the last one would wait
// behind, so a run costs two commits (its creation, its end) as a Go
// graph's does; its history still holds all three checkpoints.
func TestJSGraphShortRunCommits(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	const n = 5
	threads := make([]string, n)
	for i := range threads {
		threads[i] = testutil.NewThread(t, s)
	}
	before := storageCommits(t)
	for _, thread := range threads {
		wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}})
	}
	if commits := storageCommits(t) - before; commits > 2*n {
		t.Errorf("%d runs made %d storage commits, want at most %d (creation and end)", n, commits, 2*n)
	}
	for _, thread := range threads {
		history := s.Do("GET", "/threads/"+thread+"/history", nil).List(t)
		var sources []any
		for _, h := range history {
			sources = append(sources, h.(map[string]any)["metadata"].(map[string]any)["source"])
		}
		if !reflect.DeepEqual(sources, []any{"loop", "loop", "input"}) {
			t.Errorf("thread %s: history sources %v, want [loop loop input]", thread, sources)
		}
	}
}

// TestJSGraphRefusedWrite has a node write a checkpoint of another thread
// through its run's checkpointer. The worker sends checkpoint writes as
// notifications, without waiting for an answer; the server refuses this
// one, and the run fails with that refusal rather than with what the
// graph did next (its second node throws).
func TestJSGraphRefusedWrite(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := testutil.NewThread(t, s)
	stray := testutil.NewThread(t, s)
	config := map[string]any{"configurable": map[string]any{"stray_thread": stray}}
	th := failedRun(t, s, thread, map[string]any{"assistant_id": "js_fail", "input": map[string]any{}, "config": config})
	if errText := fmt.Sprint(th["error"]); !strings.Contains(errText, "cannot reach the checkpoints of thread "+stray) {
		t.Errorf("thread error = %v, want the refusal of the write to thread %s", th["error"], stray)
	}
	if history := s.Do("GET", "/threads/"+stray+"/history", nil).JSON.([]any); len(history) != 0 {
		t.Errorf("the stray thread has %d checkpoints, want none", len(history))
	}
}

// startSlow starts the slow graph and waits until it runs.
func startSlow(t *testing.T, s *testutil.Server) (thread, run string) {
	t.Helper()
	thread = testutil.NewThread(t, s)
	run = s.Do("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "js_slow", "input": map[string]any{"seconds": 60}}).Object(t)["run_id"].(string)
	testutil.Eventually(t, 10*time.Second, "slow run starts", func() bool { return testutil.RunStatus(t, s, thread, run) == "running" })
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
		if st := testutil.RunStatus(t, s, thread, run); st != "interrupted" {
			t.Fatalf("cancelled run status = %s", st)
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("cancel to run end over %d runs: p50 %v, max (p99) %v", len(took), took[len(took)/2], took[len(took)-1])
	if worst := took[len(took)-1]; worst > time.Second {
		t.Errorf("a cancel took %v to end the run (target 100 ms)", worst)
	}
}

// storeCount reads a count the crash graph keeps in the store (0: none).
func storeCount(t *testing.T, s *testutil.Server, thread, key string) float64 {
	t.Helper()
	item, _ := s.Do("GET", "/store/items?namespace=crash."+thread+"&key="+key, nil).JSON.(map[string]any)
	value, _ := item["value"].(map[string]any)
	n, _ := value["n"].(float64)
	return n
}

// killWhenReady waits until the crash graph's "hang" node of thread has
// started for the nth time (and its sibling "quick" has finished), then
// kills the worker running it with SIGKILL.
func killWhenReady(t *testing.T, s *testutil.Server, thread string, n float64) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, "the hang node is ready", func() bool { return storeCount(t, s, thread, "ready") == n })
	if _, err := s.GraphWorkers().Kill(0); err != nil {
		t.Fatal(err)
	}
}

// TestJSGraphWorkerKilledRunRetried kills the worker with SIGKILL while
// one task of a super-step waits and its sibling has finished: the run is
// retried from its last checkpoint with attempt 2 on the worker that
// replaces the killed one, and completes. The finished sibling's pending
// write was kept (it ran once in all), the waiting task ran again, and no
// step was committed twice.
func TestJSGraphWorkerKilledRunRetried(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := testutil.NewThread(t, s)
	before := s.GraphWorkers().Workers()
	run := s.Do("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "js_crash", "input": map[string]any{}, "stream_resumable": true, "stream_mode": []string{"values"}}).Object(t)["run_id"].(string)
	killWhenReady(t, s, thread, 1)
	s.Do("GET", "/threads/"+thread+"/runs/"+run+"/join", nil)
	got := s.Do("GET", "/threads/"+thread+"/runs/"+run, nil).Object(t)
	if got["status"] != "success" {
		t.Fatalf("run after the worker was killed = %v %v", got["status"], got["error"])
	}
	if now := s.GraphWorkers().Workers(); len(now) != 1 || now[0] == before[0] {
		t.Errorf("workers %v after killing %v", now, before)
	}
	values := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)["values"].(map[string]any)
	if values["quick_runs"] != float64(1) || values["hang_runs"] != float64(2) || values["done"] != true {
		t.Errorf("values = %v, want quick 1 (its write kept), hang 2 (run again), done", values)
	}
	if q, h := storeCount(t, s, thread, "quick"), storeCount(t, s, thread, "hang"); q != 1 || h != 2 {
		t.Errorf("quick ran %v times and hang %v, want 1 and 2", q, h)
	}
	steps := map[float64]int{}
	for _, h := range s.Do("POST", "/threads/"+thread+"/history", map[string]any{}).List(t) {
		steps[h.(map[string]any)["metadata"].(map[string]any)["step"].(float64)]++
	}
	if len(steps) != 4 || steps[-1] != 1 || steps[0] != 1 || steps[1] != 1 || steps[2] != 1 {
		t.Errorf("checkpoints per step = %v, want one each of -1 to 2", steps)
	}
	resp := s.Stream("GET", "/threads/"+thread+"/runs/"+run+"/stream", nil, http.Header{"Last-Event-ID": {"-1"}})
	events, err := testutil.NewSSEReader(resp.Body).All()
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var attempts []float64
	for _, ev := range events {
		if ev.Event == "metadata" {
			attempts = append(attempts, ev.Data.(map[string]any)["attempt"].(float64))
		}
	}
	if !slices.Equal(attempts, []float64{1, 2}) {
		t.Errorf("the run's stream announced attempts %v, want 1 then 2", attempts)
	}
}

// TestJSGraphWorkerKilledEveryAttempt: a run whose worker is killed on
// each of its attempts ends in error once it used them all, saying so.
func TestJSGraphWorkerKilledEveryAttempt(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := testutil.NewThread(t, s)
	run := s.Do("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "js_crash", "input": map[string]any{}, "config": map[string]any{"configurable": map[string]any{"hang_times": 9}}}).Object(t)["run_id"].(string)
	for n := 1; n <= runs.MaxAttempts; n++ {
		killWhenReady(t, s, thread, float64(n))
	}
	testutil.Eventually(t, 20*time.Second, "the run ends", func() bool { return testutil.RunStatus(t, s, thread, run) == "error" })
	got := s.Do("GET", "/threads/"+thread+"/runs/"+run, nil).Object(t)
	th := s.Do("GET", "/threads/"+thread, nil).Object(t)
	if msg := fmt.Sprint(th["error"]); !strings.Contains(msg, "graph worker running this run exited") || !strings.Contains(msg, "started 3 times and is not retried again") {
		t.Errorf("run %v: thread error = %v", got, th["error"])
	}
	if h := storeCount(t, s, thread, "hang"); h != runs.MaxAttempts {
		t.Errorf("hang ran %v times, want %d", h, runs.MaxAttempts)
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
// a fresh thread, over HTTP, each followed by a run of the same graph in
// Node alone (tests/jsgraphs/bench/steps.mjs: LangGraph.js's MemorySaver,
// the same stream modes), so that both see the same machine load. It
// reports the p50 and p90 of a run's time divided by its steps through the
// server ("server-ns/step", which includes LangGraph.js's own loop, the
// engine's checkpoint writes and the run's fixed cost amortized), the p50
// of the Node-alone runs ("node-ns/step"), and the p50 of the paired
// differences, the boundary's cost ("boundary-ns/step", target 1 ms).
func BenchmarkJSGraphSuperStep(b *testing.B) {
	dir, file := fixture(b)
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
	alone := nodeAlone(b, dir, steps)
	run() // warm the worker's module cache and JIT
	alone()
	b.ResetTimer()
	var server, node, diff []float64
	for i := 0; i < b.N; i++ {
		sv := float64(run().Nanoseconds()) / steps
		b.StopTimer()
		nd := alone()
		b.StartTimer()
		server, node, diff = append(server, sv), append(node, nd), append(diff, sv-nd)
	}
	b.StopTimer()
	for _, v := range [][]float64{server, node, diff} {
		sort.Float64s(v)
	}
	b.ReportMetric(server[len(server)/2], "server-ns/step")
	b.ReportMetric(server[len(server)*9/10], "server-p90-ns/step")
	b.ReportMetric(node[len(node)/2], "node-ns/step")
	b.ReportMetric(diff[len(diff)/2], "boundary-ns/step")
}

// nodeAlone starts the Node-alone reference of BenchmarkJSGraphSuperStep
// in the fixture project dir and returns a function that runs it once and
// returns its time per step in ns.
func nodeAlone(b *testing.B, dir string, steps int) func() float64 {
	b.Helper()
	cmd := exec.Command("node", filepath.Join("bench", "steps.mjs"), strconv.Itoa(steps))
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	return func() float64 {
		if _, err := io.WriteString(in, "run\n"); err != nil {
			b.Fatal(err)
		}
		if !lines.Scan() {
			b.Fatalf("the Node-alone reference stopped: %v", lines.Err())
		}
		ns, err := strconv.ParseFloat(lines.Text(), 64)
		if err != nil {
			b.Fatalf("the Node-alone reference printed %q", lines.Text())
		}
		return ns
	}
}

// history reads a thread's checkpoints, newest first.
func history(t *testing.T, s *testutil.Server, thread string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, h := range s.Do("POST", "/threads/"+thread+"/history", map[string]any{"limit": 100}).List(t) {
		out = append(out, h.(map[string]any))
	}
	return out
}

func checkpointID(state map[string]any) string {
	return state["checkpoint"].(map[string]any)["checkpoint_id"].(string)
}

// TestJSGraphUpdateState updates JS threads' state through their graph:
// LangGraph.js's reducers apply it (messages are appended), as_node picks
// what runs next (an interrupted node's answer supplied by hand lets the
// graph continue after it), the new checkpoint is the thread's newest,
// and an update the graph refuses is a 422 that changes nothing.
func TestJSGraphUpdateState(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := testutil.NewThread(t, s)
	wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}})
	r := s.Do("POST", "/threads/"+thread+"/state", map[string]any{"values": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "added by hand"}}}})
	if r.Status != 200 {
		t.Fatalf("update_state: %d %s", r.Status, r.Raw)
	}
	ref := r.Object(t)["checkpoint"].(map[string]any)["checkpoint_id"].(string)
	state := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)
	msgs := messages(t, state["values"].(map[string]any))
	if len(msgs) != 3 || msgs[2]["content"] != "added by hand" || msgs[2]["type"] != "human" || msgs[0]["content"] != "hi" {
		t.Fatalf("messages after the update = %v", msgs)
	}
	if checkpointID(state) != ref || state["metadata"].(map[string]any)["source"] != "update" {
		t.Errorf("state after the update: checkpoint %v (update answered %s), metadata %v", state["checkpoint"], ref, state["metadata"])
	}
	if h := history(t, s, thread); len(h) != 4 || checkpointID(h[0]) != ref {
		t.Errorf("history newest first: %d entries, first %v; want 4 with the update first", len(h), h[0]["checkpoint"])
	}
	out := wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "more"}}}})
	if msgs := messages(t, out); len(msgs) != 5 || msgs[4]["content"] != "you said: more" {
		t.Errorf("a run after the update = %v", msgs)
	}

	before := len(history(t, s, thread))
	bad := s.Do("POST", "/threads/"+thread+"/state", map[string]any{"values": map[string]any{"messages": []any{}}, "as_node": "nope"})
	if bad.Status != 422 || !strings.Contains(string(bad.Raw), `Node \"nope\" does not exist`) {
		t.Errorf("update as an unknown node: %d %s", bad.Status, bad.Raw)
	}
	if after := len(history(t, s, thread)); after != before {
		t.Errorf("a refused update changed the history from %d to %d checkpoints", before, after)
	}

	paused := testutil.NewThread(t, s)
	wait(t, s, paused, map[string]any{"assistant_id": "js_interrupt", "input": map[string]any{"question": "ship it?"}})
	r = s.Do("POST", "/threads/"+paused+"/state", map[string]any{"values": map[string]any{"answer": "by hand"}, "as_node": "ask"})
	if r.Status != 200 {
		t.Fatalf("update_state as ask: %d %s", r.Status, r.Raw)
	}
	state = s.Do("GET", "/threads/"+paused+"/state", nil).Object(t)
	if next := state["next"].([]any); len(next) != 1 || next[0] != "finish" {
		t.Errorf("next after answering as ask = %v, want [finish]", next)
	}
	out = wait(t, s, paused, map[string]any{"assistant_id": "js_interrupt", "input": nil})
	if out["done"] != "answered: by hand" {
		t.Errorf("the run after the update = %v", out)
	}
}

// TestJSGraphForkCopy: a run from an older checkpoint of a JS thread
// (time travel) replays from there, an update of an older checkpoint
// forks the thread, and a copied thread continues on its own.
func TestJSGraphForkCopy(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := testutil.NewThread(t, s)
	say := func(text string) map[string]any {
		return map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}
	}
	wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": say("one")})
	wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": say("two")})
	h := history(t, s, thread)
	// Newest first: loop(two) loop input(two) | loop(one) loop input(one).
	if len(h) != 6 {
		t.Fatalf("history has %d checkpoints, want 6", len(h))
	}
	afterOne := h[3]
	if msgs := messages(t, afterOne["values"].(map[string]any)); len(msgs) != 2 {
		t.Fatalf("checkpoint after the first run = %v", afterOne["values"])
	}

	out := wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": say("three"), "checkpoint_id": checkpointID(afterOne)})
	if msgs := messages(t, out); len(msgs) != 4 || msgs[2]["content"] != "three" || msgs[3]["content"] != "you said: three" {
		t.Fatalf("run from the checkpoint after the first run = %v", msgs)
	}
	h = history(t, s, thread)
	if parent := h[2]["parent_checkpoint"].(map[string]any)["checkpoint_id"]; parent != checkpointID(afterOne) {
		t.Errorf("the fork's first checkpoint has parent %v, want %s", parent, checkpointID(afterOne))
	}

	r := s.Do("POST", "/threads/"+thread+"/state", map[string]any{"values": say("edited"), "checkpoint_id": checkpointID(afterOne)})
	if r.Status != 200 {
		t.Fatalf("update of an older checkpoint: %d %s", r.Status, r.Raw)
	}
	state := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)
	if msgs := messages(t, state["values"].(map[string]any)); len(msgs) != 3 || msgs[2]["content"] != "edited" {
		t.Errorf("state after forking the older checkpoint = %v", msgs)
	}
	if parent := state["parent_checkpoint"].(map[string]any)["checkpoint_id"]; parent != checkpointID(afterOne) {
		t.Errorf("the update's parent = %v, want %s", parent, checkpointID(afterOne))
	}

	copied := s.Do("POST", "/threads/"+thread+"/copy", nil).Object(t)["thread_id"].(string)
	out = wait(t, s, copied, map[string]any{"assistant_id": "js_chat", "input": say("on the copy")})
	if msgs := messages(t, out); len(msgs) != 5 || msgs[4]["content"] != "you said: on the copy" {
		t.Errorf("a run on the copy = %v", msgs)
	}
	if msgs := messages(t, s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)["values"].(map[string]any)); len(msgs) != 3 {
		t.Errorf("the original thread changed with its copy: %v", msgs)
	}
}

// TestJSThreadOrdersServerCheckpoints: checkpoints the server writes on a
// thread whose checkpoints LangGraph.js wrote (a Go graph's run here) are
// its newest, as they were made last: the server's ids sort with
// LangGraph's uuid6 ids by time.
func TestJSThreadOrdersServerCheckpoints(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := testutil.NewThread(t, s)
	wait(t, s, thread, map[string]any{"assistant_id": "js_chat", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}})
	out := wait(t, s, thread, map[string]any{"assistant_id": "echo", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "and echo"}}}})
	state := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)
	if msgs := messages(t, state["values"].(map[string]any)); len(msgs) != 4 || msgs[3]["content"] != "echo: and echo" || fmt.Sprint(out["messages"]) != fmt.Sprint(state["values"].(map[string]any)["messages"]) {
		t.Fatalf("state after the echo run = %v (run values %v)", msgs, out)
	}
	h := history(t, s, thread)
	if h[0]["metadata"].(map[string]any)["graph_id"] != "echo" || checkpointID(h[0]) != checkpointID(state) {
		t.Errorf("newest checkpoint is %v, want the echo run's", h[0]["metadata"])
	}
	for i := 1; i < len(h); i++ {
		if checkpointID(h[i-1]) <= checkpointID(h[i]) {
			t.Errorf("history is not newest first at %d: %s then %s", i, checkpointID(h[i-1]), checkpointID(h[i]))
		}
	}
}

// TestJSGraphSubgraphInterrupt pauses inside a subgraph of a subgraph: the
// nested graphs' checkpoints are in our storage, so the paused state with
// subgraphs=true shows each level's state, a stream with
// stream_subgraphs names the nested events "mode|ns", and after a restart
// a Command resumes the innermost node and the run completes.
func TestJSGraphSubgraphInterrupt(t *testing.T) {
	data := t.TempDir()
	s := startFixture(t, testutil.Options{DataDir: data})
	thread := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+thread+"/runs/stream", map[string]any{"assistant_id": "js_nested", "input": map[string]any{}, "stream_mode": []string{"updates"}, "stream_subgraphs": true}, nil)
	events, err := testutil.NewSSEReader(resp.Body).All()
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ev := range events {
		names = append(names, ev.Event)
	}
	hasPrefix := func(prefix string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, prefix) })
	}
	if !slices.Contains(names, "updates") || !hasPrefix("updates|middle:") || !hasPrefix("updates|middle:") || !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "|inner:") }) {
		t.Errorf("stream events %v, want updates of the graph, of middle and of middle|inner", names)
	}

	state := s.Do("GET", "/threads/"+thread+"/state?subgraphs=true", nil).Object(t)
	if next := state["next"].([]any); len(next) != 1 || next[0] != "middle" {
		t.Fatalf("paused state next = %v", next)
	}
	task := state["tasks"].([]any)[0].(map[string]any)
	middle, _ := task["state"].(map[string]any)
	if middle == nil || fmt.Sprint(middle["next"]) != "[inner]" || fmt.Sprint(middle["values"].(map[string]any)["trail"]) != "[prepared middle entered]" {
		t.Fatalf("the middle subgraph's state = %v", task["state"])
	}
	inner, _ := middle["tasks"].([]any)[0].(map[string]any)["state"].(map[string]any)
	if inner == nil || fmt.Sprint(inner["next"]) != "[ask]" || !strings.Contains(fmt.Sprint(inner["tasks"]), "which way?") {
		t.Fatalf("the inner subgraph's state = %v", middle["tasks"])
	}
	if plain := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t)["tasks"].([]any)[0].(map[string]any); plain["state"] != nil {
		t.Errorf("without subgraphs=true a task has state %v", plain["state"])
	}
	s.Shutdown(t.Context())

	s = startFixture(t, testutil.Options{DataDir: data})
	out := wait(t, s, thread, map[string]any{"assistant_id": "js_nested", "command": map[string]any{"resume": "left"}})
	// What LangGraph.js gives with its own MemorySaver: each subgraph
	// returns its whole trail to its parent, whose reducer appends it.
	if fmt.Sprint(out["trail"]) != "[prepared prepared middle entered prepared middle entered inner asked finished with left]" {
		t.Fatalf("resumed run values = %v", out)
	}
	if st := s.Do("GET", "/threads/"+thread, nil).Object(t)["status"]; st != "idle" {
		t.Errorf("thread status after the resume = %v", st)
	}
}

// TestJSGraphSubgraphs lists a JS graph's subgraphs as LangGraph names
// them: the graph's own, the nested ones with recurse, and those at a
// namespace; each with schemas of its state channels.
func TestJSGraphSubgraphs(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	a := s.Do("POST", "/assistants/search", map[string]any{"graph_id": "js_nested"}).List(t)[0].(map[string]any)["assistant_id"].(string)
	keys := func(path string) []string {
		r := s.Do("GET", "/assistants/"+a+path, nil)
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
		}
		var out []string
		for ns := range r.Object(t) {
			out = append(out, ns)
		}
		sort.Strings(out)
		return out
	}
	if got := keys("/subgraphs"); !slices.Equal(got, []string{"middle"}) {
		t.Errorf("subgraphs = %v", got)
	}
	if got := keys("/subgraphs?recurse=true"); !slices.Equal(got, []string{"middle", "middle|inner"}) {
		t.Errorf("subgraphs with recurse = %v", got)
	}
	if got := keys("/subgraphs/middle?recurse=true"); !slices.Equal(got, []string{"middle", "middle|inner"}) {
		t.Errorf("subgraphs at middle with recurse = %v", got)
	}
	if got := keys("/subgraphs/middle"); !slices.Equal(got, []string{"middle"}) {
		t.Errorf("subgraphs at middle = %v", got)
	}
	sc := s.Do("GET", "/assistants/"+a+"/subgraphs?recurse=true", nil).Object(t)["middle|inner"].(map[string]any)
	props := sc["state_schema"].(map[string]any)["properties"].(map[string]any)
	if _, ok := props["trail"]; !ok {
		t.Errorf("the inner subgraph's state schema = %v", sc["state_schema"])
	}
	if got := keys("/subgraphs/nope"); len(got) != 0 {
		t.Errorf("subgraphs at an unknown namespace = %v", got)
	}
}

// TestJSGraphStreamModes streams the modes LangGraph.js produces itself:
// checkpoints (named as checkpoint objects, configs without internal
// keys), tasks (starts and results), debug (both, typed), and events
// (LangChain's own astream_events, not derived from the other modes).
func TestJSGraphStreamModes(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	thread := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+thread+"/runs/stream", map[string]any{
		"assistant_id": "js_chat", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "modes"}}},
		"stream_mode": []string{"checkpoints", "tasks", "debug", "events"},
	}, nil)
	events, err := testutil.NewSSEReader(resp.Body).All()
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]map[string]any{}
	for _, ev := range events {
		if m, ok := ev.Data.(map[string]any); ok {
			byName[ev.Event] = append(byName[ev.Event], m)
		}
	}
	cps := byName["checkpoints"]
	if len(cps) != 3 {
		t.Fatalf("%d checkpoints events, want 3 (input, start, respond): %v", len(cps), byName)
	}
	last := cps[2]
	cfg := last["config"].(map[string]any)["configurable"].(map[string]any)
	if last["checkpoint"].(map[string]any)["checkpoint_id"] != cfg["checkpoint_id"] || last["parent_checkpoint"].(map[string]any)["checkpoint_id"] != cps[1]["checkpoint"].(map[string]any)["checkpoint_id"] {
		t.Errorf("last checkpoints event = %v", last)
	}
	for k := range cfg {
		if strings.HasPrefix(k, "__") {
			t.Errorf("a checkpoints event's config has the internal key %s", k)
		}
	}
	if state := s.Do("GET", "/threads/"+thread+"/state", nil).Object(t); checkpointID(state) != cfg["checkpoint_id"] {
		t.Errorf("the last checkpoints event names %v, the thread's state %v", cfg["checkpoint_id"], state["checkpoint"])
	}
	var started, finished bool
	for _, task := range byName["tasks"] {
		if task["name"] != "respond" {
			continue
		}
		if _, ok := task["input"]; ok {
			started = true
		}
		if _, ok := task["result"]; ok {
			finished = true
		}
	}
	if !started || !finished {
		t.Errorf("tasks events = %v, want the respond task's start and result", byName["tasks"])
	}
	kinds := map[any]bool{}
	for _, d := range byName["debug"] {
		kinds[d["type"]] = true
	}
	if !kinds["checkpoint"] || !kinds["task"] || !kinds["task_result"] {
		t.Errorf("debug event types = %v", kinds)
	}
	evs := map[any]int{}
	for _, e := range byName["events"] {
		evs[fmt.Sprint(e["event"], " ", e["name"])]++
	}
	if evs["on_chain_start LangGraph"] != 1 || evs["on_chain_end LangGraph"] != 1 || evs["on_chain_start respond"] != 1 {
		t.Errorf("events = %v, want LangGraph's start and end and respond's start", evs)
	}
}

// TestJSGraphSchemasAndXray: a graph whose state is a zod schema gets
// schemas derived from it (types, descriptions, required fields); a graph
// built on Annotation keeps the channel-based ones; getGraph with xray
// draws the subgraphs' nodes, as LangGraph names them.
func TestJSGraphSchemasAndXray(t *testing.T) {
	s := startFixture(t, testutil.Options{})
	assistant := func(graphID string) string {
		return s.Do("POST", "/assistants/search", map[string]any{"graph_id": graphID}).List(t)[0].(map[string]any)["assistant_id"].(string)
	}
	sc := s.Do("GET", "/assistants/"+assistant("js_typed")+"/schemas", nil).Object(t)
	state := sc["state_schema"].(map[string]any)
	question, _ := state["properties"].(map[string]any)["question"].(map[string]any)
	if question["type"] != "string" || question["description"] != "What to answer" || fmt.Sprint(state["required"]) != "[question]" {
		t.Errorf("state schema of the zod graph = %v", state)
	}
	if in := sc["input_schema"].(map[string]any); in["required"] != nil || in["properties"].(map[string]any)["answer"] == nil {
		t.Errorf("input schema of the zod graph (every field optional) = %v", in)
	}
	chat := s.Do("GET", "/assistants/"+assistant("js_chat")+"/schemas", nil).Object(t)
	if _, ok := chat["state_schema"].(map[string]any)["properties"].(map[string]any)["messages"]; !ok {
		t.Errorf("state schema of the Annotation graph = %v", chat["state_schema"])
	}

	ids := func(query string) []string {
		var out []string
		for _, n := range s.Do("GET", "/assistants/"+assistant("js_nested")+"/graph"+query, nil).Object(t)["nodes"].([]any) {
			out = append(out, n.(map[string]any)["id"].(string))
		}
		sort.Strings(out)
		return out
	}
	if got := ids(""); !slices.Equal(got, []string{"__end__", "__start__", "finish", "middle", "prepare"}) {
		t.Errorf("nodes = %v", got)
	}
	if got := ids("?xray=true"); !slices.Contains(got, "middle:enter") || !slices.Contains(got, "middle:inner") || slices.Contains(got, "middle") {
		t.Errorf("nodes with xray = %v, want middle's nodes in its place", got)
	}
}

// TestJSGraphSchemasFromTypes: a TypeScript graph built on Annotation.Root
// gets schemas derived from its types with the project's typescript
// (types, doc comments, string-literal unions as enums, arrays of objects,
// nested objects, a field that admits undefined is not required, messages
// as message schemas, the config annotation), derived afresh for a new
// file and read from the cache on the next start; in a project without
// typescript the same graph keeps the channel-based schemas, and the log
// says why.
func TestJSGraphSchemasFromTypes(t *testing.T) {
	logs := &testutil.LogBuffer{}
	s := startFixture(t, testutil.Options{Log: logs})
	id := s.Do("POST", "/assistants/search", map[string]any{"graph_id": "js_annotated"}).List(t)[0].(map[string]any)["assistant_id"].(string)
	sc := s.Do("GET", "/assistants/"+id+"/schemas", nil).Object(t)
	props := func(schema any) map[string]any {
		p, _ := schema.(map[string]any)["properties"].(map[string]any)
		return p
	}
	state := sc["state_schema"].(map[string]any)
	sp := props(state)
	for field, want := range map[string]string{"topic": "string", "attempts": "number", "summary": "string", "mood": "string", "steps": "array", "owner": "object", "messages": "array"} {
		if got := sp[field].(map[string]any)["type"]; got != want {
			t.Errorf("state %s type = %v, want %s", field, got, want)
		}
	}
	if got := fmt.Sprint(state["required"]); got != "[attempts messages mood owner steps topic]" {
		t.Errorf("state required = %s, want every field but the optional summary", got)
	}
	if got := sp["topic"].(map[string]any)["description"]; got != "What the graph works on." {
		t.Errorf("topic description = %v, want the channel's doc comment", got)
	}
	if got := fmt.Sprint(sp["mood"].(map[string]any)["enum"]); got != "[away busy calm]" {
		t.Errorf("mood enum = %s", got)
	}
	step := sp["steps"].(map[string]any)["items"].(map[string]any)
	if props(step)["title"].(map[string]any)["type"] != "string" || props(step)["done"].(map[string]any)["type"] != "boolean" || fmt.Sprint(step["required"]) != "[done title]" {
		t.Errorf("steps items = %v", step)
	}
	owner := sp["owner"].(map[string]any)
	if city := props(props(owner)["address"])["city"].(map[string]any); city["type"] != "string" || fmt.Sprint(owner["required"]) != "[address name]" {
		t.Errorf("owner = %v", owner)
	}
	if items := sp["messages"].(map[string]any)["items"].(map[string]any); items["$ref"] != "#/definitions/BaseMessage" {
		t.Errorf("messages items = %v", items)
	}
	if msg, _ := state["definitions"].(map[string]any)["BaseMessage"].(map[string]any); props(msg)["content"] == nil {
		t.Errorf("state definitions = %v", state["definitions"])
	}
	input := sc["input_schema"].(map[string]any)
	if input["required"] != nil || props(input)["mood"].(map[string]any)["type"] != "string" || props(input)["messages"].(map[string]any)["type"] != "array" {
		t.Errorf("input schema (every field optional) = %v", input)
	}
	if out := sc["output_schema"].(map[string]any); fmt.Sprint(out["required"]) != "[attempts messages mood owner steps topic]" {
		t.Errorf("output schema = %v", out)
	}
	config := sc["config_schema"].(map[string]any)
	if props(config)["model"].(map[string]any)["type"] != "string" || props(config)["temperature"].(map[string]any)["type"] != "number" {
		t.Errorf("config schema = %v", config)
	}
	testutil.Eventually(t, 10*time.Second, "the worker logs the derivation", func() bool {
		return strings.Contains(logs.String(), "schemas derived from the TypeScript types of") && strings.Contains(logs.String(), "annotated.ts in ")
	})
	// A .mjs graph has no types: its channels stand.
	nested := s.Do("POST", "/assistants/search", map[string]any{"graph_id": "js_nested"}).List(t)[0].(map[string]any)["assistant_id"].(string)
	if st := s.Do("GET", "/assistants/"+nested+"/schemas", nil).Object(t)["state_schema"].(map[string]any); fmt.Sprint(props(st)["trail"]) != "map[]" {
		t.Errorf("state schema of the .mjs Annotation graph = %v, want the channel-based one", st)
	}

	src, err := os.ReadFile(filepath.Join("..", "..", "tests", "jsgraphs", "src", "annotated.ts"))
	if err != nil {
		t.Fatal(err)
	}
	// serve serves the fixture graph as "g" of a project of its own (file)
	// and returns its state schema and the server's log.
	serve := func(t *testing.T, file string) (map[string]any, string) {
		logs := &testutil.LogBuffer{}
		s := testutil.StartServer(t, testutil.Options{GraphsFile: file, Log: logs})
		g := s.Do("POST", "/assistants/search", map[string]any{"graph_id": "g"}).List(t)[0].(map[string]any)["assistant_id"].(string)
		st := s.Do("GET", "/assistants/"+g+"/schemas", nil).Object(t)["state_schema"].(map[string]any)
		testutil.Eventually(t, 10*time.Second, "the worker logs its schemas", func() bool { return strings.Contains(logs.String(), `graph \"g\": schemas`) })
		return st, logs.String()
	}
	files := map[string]string{"g.ts": string(src)}
	t.Run("derived, then cached", func(t *testing.T) {
		file := project(t, `{"graphs": {"g": "./g.ts:graph"}}`, files, nil)
		for i, cached := range []bool{false, true} {
			got, logs := serve(t, file)
			if !reflect.DeepEqual(got, state) {
				t.Errorf("start %d: state schema = %v\nwant %v", i+1, got, state)
			}
			// The second start reads the project's node_modules/.cache.
			if !strings.Contains(logs, "g.ts in ") || strings.Contains(logs, "(cached)") != cached {
				t.Errorf("start %d: want a derivation logged (cached: %v):\n%s", i+1, cached, logs)
			}
		}
	})
	t.Run("project without typescript", func(t *testing.T) {
		st, logs := serve(t, project(t, `{"graphs": {"g": "./g.ts:graph"}}`, files, []string{"@langchain", "tsx"}))
		if fmt.Sprint(props(st)["topic"]) != "map[]" || st["required"] != nil || props(st)["messages"] == nil {
			t.Errorf("state schema = %v, want one property per channel", st)
		}
		if !strings.Contains(logs, "schemas from its state channels only: typescript is not installed in the project of") {
			t.Errorf("the log does not say why:\n%s", logs)
		}
	})
}

// TestJSGraphWatchReload serves a project with --watch: an edited graph
// file is loaded by new workers that replace the old ones, a broken edit
// is refused with the old graphs still serving, and the next good edit is
// loaded again.
func TestJSGraphWatchReload(t *testing.T) {
	version := func(v string) string {
		return `import { Annotation, StateGraph } from "@langchain/langgraph";
export const graph = new StateGraph(Annotation.Root({ x: Annotation() })).addNode("n", () => ({ x: "` + v + `" })).addEdge("__start__", "n").compile();
`
	}
	file := project(t, `{"graphs": {"g": "./g.mjs:graph"}}`, map[string]string{"g.mjs": version("v1")}, nil)
	src := filepath.Join(filepath.Dir(file), "g.mjs")
	logs := &testutil.LogBuffer{}
	s := testutil.StartServer(t, testutil.Options{GraphsFile: file, Log: logs, Configure: func(c *config.Config) { c.Watch = true },
		Server: server.Options{ReloadInterval: 20 * time.Millisecond}})
	x := func() any {
		return wait(t, s, testutil.NewThread(t, s), map[string]any{"assistant_id": "g", "input": map[string]any{}})["x"]
	}
	if got := x(); got != "v1" {
		t.Fatalf("first run x = %v", got)
	}
	before := s.GraphWorkers().Workers()
	write := func(body string) {
		if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(version("v2"))
	testutil.Eventually(t, 30*time.Second, "the edited graph is served", func() bool { return x() == "v2" })
	testutil.Eventually(t, 10*time.Second, "the old worker stops", func() bool {
		now := s.GraphWorkers().Workers()
		return len(now) == 1 && now[0] != before[0]
	})
	write("export const graph = {;\n")
	testutil.Eventually(t, 30*time.Second, "the broken edit is refused", func() bool {
		return strings.Contains(logs.String(), "the previous ones keep serving") && strings.Contains(logs.String(), "SyntaxError")
	})
	if got := x(); got != "v2" {
		t.Errorf("after a broken edit x = %v, want the previous graph's v2", got)
	}
	write(version("v3"))
	testutil.Eventually(t, 30*time.Second, "the fixed graph is served", func() bool { return x() == "v3" })
}
