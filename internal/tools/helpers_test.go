package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newWorkspace returns a path for a workspace that does not exist yet (the
// tools create it).
func newWorkspace(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "ws")
}

func callTool(t *testing.T, tool Tool, ws string, a map[string]any) (Result, error) {
	t.Helper()
	return tool.Call(context.Background(), Call{ID: "call_1", Args: a, Workspace: ws, ThreadID: "t1"})
}

func mustCall(t *testing.T, tool Tool, ws string, a map[string]any) string {
	t.Helper()
	res, err := callTool(t, tool, ws, a)
	if err != nil {
		t.Fatalf("%s(%v): %v", tool.Spec().Name, a, err)
	}
	return res.Content
}

func wantErr(t *testing.T, tool Tool, ws string, a map[string]any, substr string) error {
	t.Helper()
	res, err := callTool(t, tool, ws, a)
	if err == nil {
		t.Fatalf("%s(%q): want error containing %q, got result %q", tool.Spec().Name, a, substr, res.Content)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("%s(%q): error %q does not contain %q", tool.Spec().Name, a, err, substr)
	}
	return err
}

func writeHost(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readHost(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// processAlive reports whether pid exists and is not a zombie (a killed
// child may wait a moment for its reaper).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond) // poll interval, bounded by the deadline
	}
}
