package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGHUPReloadsAgentSpecs edits an agent spec in a way the file poller
// cannot see (same size, same modification time) and checks that SIGHUP
// makes the running binary serve the new version, and that it still shuts
// down cleanly afterwards.
func TestSIGHUPReloadsAgentSpecs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "agent.yaml")
	writeSpec := func(title string) {
		t.Helper()
		body := "name: hup\nmodel: test-model\nsystem_prompt: You help.\nschemas:\n  input:\n    type: object\n    title: " + title + "\n"
		if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeSpec("One")
	graphs := filepath.Join(dir, "langgraph.json")
	if err := os.WriteFile(graphs, []byte(`{"graphs":{"agent":"./agent.yaml"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcessWith(t, bin, nil, "--data-dir", t.TempDir(), "--config", graphs)
	if title := inputTitle(t, p.url); title != "One" {
		t.Fatalf("input title %q, want One", title)
	}

	fi, err := os.Stat(spec)
	if err != nil {
		t.Fatal(err)
	}
	writeSpec("Two")
	if err := os.Chtimes(spec, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for inputTitle(t, p.url) != "Two" {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not reload the spec")
		}
		time.Sleep(20 * time.Millisecond) // polling a child process with a deadline
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGHUP and SIGTERM: %v\n%s", err, p.logs)
	}
	if logs := p.logs.String(); !strings.Contains(logs, "agent spec reloaded") {
		t.Fatalf("no reload logged:\n%s", logs)
	}
}

// inputTitle returns the title of the input schema of assistant "agent".
func inputTitle(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/assistants/agent/schemas")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		InputSchema struct {
			Title string `json:"title"`
		} `json:"input_schema"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("schemas: %d %v", resp.StatusCode, err)
	}
	return body.InputSchema.Title
}
