package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentserver/internal/storage"
	"agentserver/internal/testutil"
)

// jsFixture is the fixture LangGraph.js project's langgraph.json; the test
// is skipped, saying why, without node or the project's packages.
func jsFixture(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the JavaScript graph tests need Node 20 or newer")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "tests", "jsgraphs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@langchain", "langgraph")); err != nil {
		t.Skipf("%s/node_modules is absent: run `npm ci --no-audit --no-fund` there to run this test", dir)
	}
	return filepath.Join(dir, "langgraph.json")
}

// storeCount reads the count that js_crash's node key keeps in the store
// of the server at url for thread (0 when absent).
func storeCount(t *testing.T, client *http.Client, url, thread, key string) float64 {
	t.Helper()
	var item map[string]any
	getJSON(t, client, url+"/store/items?namespace=crash."+thread+"&key="+key, &item)
	value, _ := item["value"].(map[string]any)
	n, _ := value["n"].(float64)
	return n
}

// pollUntil polls cond every 20 ms until it holds, failing the test after
// limit.
func pollUntil(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond) // polling a child process with a deadline
	}
}

// TestKill9MidJSRun kills the server with SIGKILL while a LangGraph.js
// graph's run waits in a node (its graph worker dies with it), restarts it
// on the same data directory, and checks that the run is retried from its
// last checkpoint with attempt 2 and completes once: success, the thread's
// values complete, one checkpoint per step.
func TestKill9MidJSRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	graphs := jsFixture(t)
	bin := buildServer(t)
	dataDir := t.TempDir()
	p := startProcessWith(t, bin, nil, "--data-dir", dataDir, "--config", graphs)
	client := &http.Client{Timeout: 10 * time.Second}

	_, th, err := postJSON(t, client, p.url+"/threads", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	thread := th["thread_id"].(string)
	code, run, err := postJSON(t, client, p.url+"/threads/"+thread+"/runs", map[string]any{"assistant_id": "js_crash", "input": map[string]any{}, "stream_resumable": true})
	if err != nil || code != 200 {
		t.Fatalf("create run: %d %v", code, err)
	}
	runID := run["run_id"].(string)
	pollUntil(t, 20*time.Second, "the run's hang node waits", func() bool { return storeCount(t, client, p.url, thread, "ready") == 1 })
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	p2 := startProcessWith(t, bin, nil, "--data-dir", dataDir, "--config", graphs)
	checkJSCrashRetried(t, client, p2, thread, runID, 30*time.Second)
}

// checkJSCrashRetried checks, on the server p, that the run of js_crash
// whose first attempt was killed in its "hang" node (the worker with it)
// ends within limit, retried from its last checkpoint with attempt 2 and
// completed once: success, the thread's values complete, one checkpoint
// per step, "hang" run twice, and the run's resumable stream announcing
// attempt 2 last.
func checkJSCrashRetried(t *testing.T, client *http.Client, p *serverProcess, thread, runID string, limit time.Duration) {
	t.Helper()
	count := func(key string) float64 { return storeCount(t, client, p.url, thread, key) }
	var ended map[string]any
	pollUntil(t, limit, "the run ends on its second attempt", func() bool {
		ended = nil
		getJSON(t, client, p.url+"/threads/"+thread+"/runs/"+runID, &ended)
		return ended["status"] != "pending" && ended["status"] != "running"
	})
	if ended["status"] != "success" {
		t.Fatalf("run after the crash = %v %v\n%s", ended["status"], ended["error"], p.logs)
	}
	var state map[string]any
	getJSON(t, client, p.url+"/threads/"+thread+"/state", &state)
	values := state["values"].(map[string]any)
	if values["done"] != true || values["hang_runs"] != float64(2) {
		t.Errorf("values = %v, want done with hang run twice", values)
	}
	var history []map[string]any
	resp, err := client.Post(p.url+"/threads/"+thread+"/history", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&history)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	steps := map[float64]int{}
	for _, h := range history {
		steps[h["metadata"].(map[string]any)["step"].(float64)]++
	}
	if len(steps) != 4 || steps[-1] != 1 || steps[0] != 1 || steps[1] != 1 || steps[2] != 1 {
		t.Errorf("checkpoints per step = %v, want one each of -1 to 2", steps)
	}
	if n := count("hang"); n != 2 {
		t.Errorf("hang ran %v times, want 2", n)
	}
	// "quick" may have run twice: its pending write, sent before the
	// process died, may not have been committed yet (the crash rules of a
	// server process: the retry may start a step earlier).
	if n := count("quick"); n < 1 || n > 2 {
		t.Errorf("quick ran %v times, want 1 or 2", n)
	}
	req, _ := http.NewRequest("GET", p.url+"/threads/"+thread+"/runs/"+runID+"/stream", nil)
	req.Header.Set("Last-Event-ID", "-1")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events, err := testutil.NewSSEReader(resp.Body).All()
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var attempts []any
	for _, ev := range events {
		if ev.Event == "metadata" {
			attempts = append(attempts, ev.Data.(map[string]any)["attempt"])
		}
	}
	if len(attempts) == 0 || attempts[len(attempts)-1] != float64(2) {
		t.Errorf("the run's stream announced attempts %v, want 2 last", attempts)
	}
}

// TestReplicaKilledMidJSRun runs two replicas on one PostgreSQL schema,
// serving the fixture's LangGraph.js graphs, and kills with SIGKILL the
// replica executing a js_crash run while the run waits in its "hang" node
// (the replica's graph worker dies with it). The other replica takes the
// run over once the dead one's lease lapses: attempt 2, owned by the
// survivor, retried from the last committed checkpoint, completed once.
func TestReplicaKilledMidJSRun(t *testing.T) {
	skipWithoutReplicas(t)
	graphs := jsFixture(t)
	bin := buildServer(t)
	c := newReplicaCluster(t, bin, "3s", time.Second)
	c.config = graphs
	reps := []*replica{c.start(t), c.start(t)}
	client := &http.Client{Timeout: 10 * time.Second}

	_, th, err := postJSON(t, client, reps[0].url+"/threads", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	thread := th["thread_id"].(string)
	code, run, err := postJSON(t, client, reps[0].url+"/threads/"+thread+"/runs", map[string]any{"assistant_id": "js_crash", "input": map[string]any{}, "stream_resumable": true})
	if err != nil || code != 200 {
		t.Fatalf("create run: %d %v", code, err)
	}
	runID := run["run_id"].(string)
	pollUntil(t, 30*time.Second, "the run's hang node waits", func() bool { return storeCount(t, client, reps[0].url, thread, "ready") == 1 })
	rec := c.record(t, runID)
	if rec.Status != storage.RunRunning || rec.Attempt != 1 {
		t.Fatalf("run record before the kill: status %v, attempt %d", rec.Status, rec.Attempt)
	}
	victim, survivor := reps[0], reps[1]
	if rec.Owner == reps[1].id {
		victim, survivor = reps[1], reps[0]
	} else if rec.Owner != reps[0].id {
		t.Fatalf("run owned by %q, neither replica (%s, %s)", rec.Owner, reps[0].id, reps[1].id)
	}
	victim.kill9(t)

	checkJSCrashRetried(t, client, survivor.serverProcess, thread, runID, 60*time.Second)
	if rec := c.record(t, runID); rec.Attempt != 2 || rec.Owner != survivor.id {
		t.Errorf("run record after the takeover: attempt %d by %q, want attempt 2 by the survivor %q", rec.Attempt, rec.Owner, survivor.id)
	}
}
