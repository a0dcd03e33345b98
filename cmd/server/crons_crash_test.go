package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// cronRuns returns the runs cron made on thread, oldest first.
func cronRuns(t *testing.T, c *http.Client, url, thread, cron string) []map[string]any {
	t.Helper()
	var all []map[string]any
	if code := getJSON(t, c, url+"/threads/"+thread+"/runs?limit=1000", &all); code != 200 {
		t.Fatalf("list runs: %d", code)
	}
	var out []map[string]any
	for _, r := range all {
		if md, _ := r["metadata"].(map[string]any); md["cron_id"] == cron {
			out = append([]map[string]any{r}, out...)
		}
	}
	return out
}

// TestKill9DuringCronFirings kills the server with SIGKILL while
// every-second crons fire, restarts it, and checks that the crons go on
// firing, that every run they made ends success with its input and reply
// in its thread exactly once, and that no second holds two firings of one
// cron.
func TestKill9DuringCronFirings(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	dataDir := t.TempDir()
	graphs := filepath.Join(t.TempDir(), "langgraph.json")
	if err := os.WriteFile(graphs, []byte(`{"graphs":{"echo":"builtin:echo"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() *serverProcess {
		return startProcessWith(t, bin, nil, "--data-dir", dataDir, "--config", graphs, "--cron-seconds")
	}
	p := start()
	client := &http.Client{Timeout: 10 * time.Second}
	type job struct{ thread, cron string }
	var jobs []job
	for range 4 {
		code, th, err := postJSON(t, client, p.url+"/threads", map[string]any{})
		if err != nil || code != 200 {
			t.Fatalf("create thread: %d %v", code, err)
		}
		tid := th["thread_id"].(string)
		code, c, err := postJSON(t, client, p.url+"/threads/"+tid+"/runs/crons", map[string]any{
			"assistant_id": "echo", "schedule": "* * * * * *",
			"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "tick"}}},
		})
		if err != nil || code != 200 {
			t.Fatalf("create cron: %d %v %v", code, err, c)
		}
		jobs = append(jobs, job{tid, c["cron_id"].(string)})
	}
	waitFor := func(url, msg string, cond func(j job, runs []map[string]any) bool) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok := true
			for _, j := range jobs {
				ok = ok && cond(j, cronRuns(t, client, url, j.thread, j.cron))
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", msg)
			}
			time.Sleep(50 * time.Millisecond) // polling a child process with a deadline
		}
	}
	waitFor(p.url, "two firings of every cron", func(_ job, runs []map[string]any) bool { return len(runs) >= 2 })
	p.cmd.Process.Kill()
	p.cmd.Wait()

	p2 := start()
	before := map[string]int{}
	for _, j := range jobs {
		before[j.cron] = len(cronRuns(t, client, p2.url, j.thread, j.cron))
	}
	waitFor(p2.url, "firings after the restart", func(j job, runs []map[string]any) bool { return len(runs) >= before[j.cron]+2 })
	for _, j := range jobs {
		raw, _ := json.Marshal(map[string]any{"enabled": false})
		req, _ := http.NewRequest("PATCH", p2.url+"/runs/crons/"+j.cron, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("disable cron: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	waitFor(p2.url, "every cron run to succeed", func(_ job, runs []map[string]any) bool {
		for _, r := range runs {
			if r["status"] != "success" {
				if r["status"] != "pending" && r["status"] != "running" {
					t.Fatalf("cron run %v ended %v", r["run_id"], r["status"])
				}
				return false
			}
		}
		return true
	})
	for _, j := range jobs {
		runs := cronRuns(t, client, p2.url, j.thread, j.cron)
		seconds := map[string]bool{}
		for _, r := range runs {
			at, err := time.Parse(time.RFC3339Nano, r["created_at"].(string))
			if err != nil {
				t.Fatal(err)
			}
			sec := at.Truncate(time.Second).String()
			if seconds[sec] {
				t.Fatalf("cron %s made two runs in the second %s", j.cron, sec)
			}
			seconds[sec] = true
		}
		var state map[string]any
		getJSON(t, client, p2.url+"/threads/"+j.thread+"/state", &state)
		counts := map[string]int{}
		for _, m := range state["values"].(map[string]any)["messages"].([]any) {
			counts[m.(map[string]any)["content"].(string)]++
		}
		if counts["tick"] != len(runs) || counts["echo: tick"] != len(runs) {
			t.Fatalf("cron %s made %d runs but its thread holds %d inputs and %d replies", j.cron, len(runs), counts["tick"], counts["echo: tick"])
		}
	}
}
