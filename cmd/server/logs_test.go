package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// TestAccessLogAndStartupWarnings runs the binary with no model and an
// agent that lists bash without --enable-shell: both warnings come before
// "serving", and every request gets one info line with its route template,
// status, duration and ids, and never a body or a key.
func TestAccessLogAndStartupWarnings(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	graphs := writeGraphs(t, `{"graphs": {"echo": "builtin:echo", "shell": "./shell.yaml"}}`,
		map[string]string{"shell.yaml": "name: shell\ntools: [bash, ls]\n"})
	const key, secret = "KEY-SECRET-1", "BODY-SECRET-2"
	env := []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL="}
	p := startProcessWith(t, bin, env, "--data-dir", t.TempDir(), "--config", graphs, "--api-key", key)

	do := func(method, path, body string) []byte {
		t.Helper()
		req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-api-key", key)
		req.Header.Set("content-type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var thread struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal(do("POST", "/threads", `{"metadata": {"note": "`+secret+`"}}`), &thread); err != nil || thread.ThreadID == "" {
		t.Fatalf("create thread: %v", err)
	}
	do("POST", "/threads/"+thread.ThreadID+"/runs/wait", `{"assistant_id": "echo", "input": {"messages": [{"role": "user", "content": "`+secret+`"}]}}`)
	do("POST", "/threads/search", `{"metadata": {"note": "`+secret+`"}}`)
	do("GET", "/no/such/route", "")

	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("server exit: %v\n%s", err, p.logs)
	}
	logs := p.logs.String()
	if strings.Contains(logs, key) || strings.Contains(logs, secret) {
		t.Fatalf("the logs contain a key or a body:\n%s", logs)
	}

	var lines []map[string]any
	for _, raw := range bytes.Split(bytes.TrimSpace([]byte(logs)), []byte("\n")) {
		var line map[string]any
		if err := json.Unmarshal(raw, &line); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		lines = append(lines, line)
	}
	index := func(match func(map[string]any) bool) int {
		for i, l := range lines {
			if match(l) {
				return i
			}
		}
		return -1
	}
	msg := func(m string) func(map[string]any) bool {
		return func(l map[string]any) bool { return l["msg"] == m }
	}
	serving := index(msg("serving"))
	offline := index(func(l map[string]any) bool { return strings.Contains(l["msg"].(string), "no model is configured") })
	bash := index(func(l map[string]any) bool {
		return strings.Contains(l["msg"].(string), "lists bash") && l["graph"] == "shell"
	})
	if serving < 0 || offline < 0 || bash < 0 || offline > serving || bash > serving {
		t.Fatalf("want the offline-model and bash warnings before serving (lines %d, %d, %d):\n%s", offline, bash, serving, logs)
	}

	requests := map[string][]map[string]any{}
	for _, l := range lines {
		if l["msg"] == "request" {
			requests[l["method"].(string)+" "+l["route"].(string)] = append(requests[l["method"].(string)+" "+l["route"].(string)], l)
		}
	}
	if s := lines[serving]; s["console"] != p.url+"/ui/" || s["docs"] != p.url+"/docs" || s["api"] != p.url {
		t.Errorf("the serving line does not give the URLs of the API, /docs and the console: %v", s)
	}
	if l := requests["GET (no route)"]; len(l) != 1 || l[0]["path"] != "/no/such/route" {
		t.Errorf("the access line of an unknown route does not name its path: %v", l)
	}
	for route, status := range map[string]float64{"POST /threads": 200, "POST /threads/search": 200, "GET (no route)": 404} {
		got := requests[route]
		if len(got) != 1 {
			t.Errorf("%s: %d access lines, want 1", route, len(got))
			continue
		}
		l := got[0]
		if l["level"] != "INFO" || l["status"] != status || l["duration_ms"] == nil {
			t.Errorf("%s: line %v, want level INFO, status %v and duration_ms", route, l, status)
		}
	}
	if l := requests["POST /threads/{thread_id}/runs/wait"]; len(l) != 1 || l[0]["thread_id"] != thread.ThreadID || l[0]["run_id"] == nil {
		t.Errorf("runs/wait access lines %v, want one with thread_id %s and the run_id", l, thread.ThreadID)
	}
}
