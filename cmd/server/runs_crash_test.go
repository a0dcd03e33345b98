package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"
)

func postJSON(t testing.TB, c *http.Client, url string, body any) (int, map[string]any, error) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := c.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, nil
}

func getJSON(t testing.TB, c *http.Client, url string, out any) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(out)
	return resp.StatusCode
}

// TestKill9MidRunsEveryRunFinishesOnce queues many runs on a few threads,
// kills the server with SIGKILL while they execute, restarts it, and checks
// that every accepted run ends success and that its effect (one echo reply)
// appears exactly once in its thread.
func TestKill9MidRunsEveryRunFinishesOnce(t *testing.T) {
	stopMidRuns(t, syscall.SIGKILL)
}

// A graceful stop (SIGTERM) in the middle of runs puts the running ones back
// in the queue; after the restart each run's input and reply are in its
// thread exactly once.
func TestGracefulStopMidRunsAppliesEveryInputOnce(t *testing.T) {
	stopMidRuns(t, syscall.SIGTERM)
}

// stopMidRuns queues runs on several threads, stops the server with sig
// half way through, restarts it on the same data directory, and requires
// every accepted run to end success with its input and its reply exactly
// once in its thread.
func stopMidRuns(t *testing.T, sig syscall.Signal) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	dataDir := t.TempDir()
	p := startProcess(t, bin, dataDir)
	client := &http.Client{Timeout: 10 * time.Second}

	const nThreads, perThread = 8, 40
	threads := make([]string, nThreads)
	for i := range threads {
		code, th, err := postJSON(t, client, p.url+"/threads", map[string]any{})
		if err != nil || code != 200 {
			t.Fatalf("create thread: %d %v", code, err)
		}
		threads[i] = th["thread_id"].(string)
	}
	type accepted struct{ thread, run, text string }
	var runs []accepted
	killed := false
	for j := 0; j < perThread && !killed; j++ {
		for i, tid := range threads {
			text := fmt.Sprintf("m-%d-%d", i, j)
			code, run, err := postJSON(t, client, p.url+"/threads/"+tid+"/runs", map[string]any{
				"assistant_id": "echo", "multitask_strategy": "enqueue",
				"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}},
			})
			if err != nil || code != 200 {
				t.Fatalf("create run: %d %v", code, err)
			}
			runs = append(runs, accepted{tid, run["run_id"].(string), text})
			if len(runs) == nThreads*perThread/2 {
				// Half the runs are queued and the first are executing.
				p.cmd.Process.Signal(sig)
				p.cmd.Wait()
				killed = true
				break
			}
		}
	}
	p2 := startProcess(t, bin, dataDir)
	deadline := time.Now().Add(60 * time.Second)
	for _, r := range runs {
		for {
			var run map[string]any
			if code := getJSON(t, client, p2.url+"/threads/"+r.thread+"/runs/"+r.run, &run); code != 200 {
				t.Fatalf("accepted run %s lost after kill -9: %d", r.run, code)
			}
			if run["status"] == "success" {
				break
			}
			if run["status"] != "pending" && run["status"] != "running" {
				t.Fatalf("run %s ended %v: %v", r.run, run["status"], run["error"])
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s still %v after restart", r.run, run["status"])
			}
			time.Sleep(10 * time.Millisecond) // polling a child process with a deadline
		}
	}
	for _, tid := range threads {
		var state map[string]any
		getJSON(t, client, p2.url+"/threads/"+tid+"/state", &state)
		counts := map[string]int{}
		for _, m := range state["values"].(map[string]any)["messages"].([]any) {
			counts[m.(map[string]any)["content"].(string)]++
		}
		for _, r := range runs {
			if r.thread == tid && (counts[r.text] != 1 || counts["echo: "+r.text] != 1) {
				t.Fatalf("run %s (%s) left %d inputs and %d replies in its thread, want exactly 1 of each", r.run, r.text, counts[r.text], counts["echo: "+r.text])
			}
		}
	}
	t.Logf("%d runs accepted before %v, all finished exactly once", len(runs), sig)
}
