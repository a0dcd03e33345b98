package tools

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// quotaTools returns write_file and edit_file bound by quota.
func quotaTools(quota int64) (Tool, Tool) {
	b := Builtins(Options{WorkspaceQuota: quota})
	return b[NameWriteFile], b[NameEditFile]
}

// TestWorkspaceQuota fills a workspace up to its quota: a write or an edit
// that would pass it fails with ErrQuotaExceeded and leaves the files as
// they were; replacing a file counts its new size, not both.
func TestWorkspaceQuota(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	w, e := quotaTools(1000)
	mustCall(t, w, ws, map[string]any{"file_path": "a.txt", "content": strings.Repeat("a", 600)})
	err := wantErr(t, w, ws, map[string]any{"file_path": "dir/b.txt", "content": strings.Repeat("b", 401)}, "quota")
	if !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("err = %v, want ErrQuotaExceeded", err)
	}
	mustCall(t, w, ws, map[string]any{"file_path": "dir/b.txt", "content": strings.Repeat("b", 400)})
	mustCall(t, w, ws, map[string]any{"file_path": "a.txt", "content": strings.Repeat("c", 600)}) // same size: fits
	wantErr(t, e, ws, map[string]any{"file_path": "a.txt", "old_string": "c", "new_string": "cc", "replace_all": true}, "quota")
	if got := readHost(t, filepath.Join(ws, "a.txt")); got != strings.Repeat("c", 600) {
		t.Fatalf("a refused edit changed the file: %d bytes", len(got))
	}
	mustCall(t, e, ws, map[string]any{"file_path": "a.txt", "old_string": strings.Repeat("c", 600), "new_string": "short"})
	mustCall(t, w, ws, map[string]any{"file_path": "c.txt", "content": strings.Repeat("d", 500)})
}

// TestAbsoluteHostPathIsExplained writes to "/tmp/x": the file lands in the
// workspace, and the answer says so and names where it really is, instead
// of reading like the host's /tmp/x was written. A workspace-style path
// ("/notes.txt") keeps deepagents' plain answer.
func TestAbsoluteHostPathIsExplained(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	w, e := quotaTools(0)
	got := mustCall(t, w, ws, map[string]any{"file_path": "/tmp/x", "content": "hello"})
	real := filepath.Join(ws, "tmp", "x")
	if canon, err := filepath.EvalSymlinks(filepath.Dir(ws)); err == nil {
		real = filepath.Join(canon, "ws", "tmp", "x")
	}
	if !strings.HasPrefix(got, "Updated file /tmp/x (") || !strings.Contains(got, real) || !strings.Contains(got, "not the host's /tmp/x") {
		t.Fatalf("answer = %q, want it to name %s", got, real)
	}
	if readHost(t, filepath.Join(ws, "tmp", "x")) != "hello" {
		t.Fatal("the file is not in the workspace")
	}
	got = mustCall(t, e, ws, map[string]any{"file_path": "/tmp/x", "old_string": "hello", "new_string": "bye"})
	if !strings.Contains(got, real) {
		t.Fatalf("edit answer = %q, want it to name %s", got, real)
	}
	if got := mustCall(t, w, ws, map[string]any{"file_path": "/notes-not-on-host/a.txt", "content": "x"}); got != "Updated file /notes-not-on-host/a.txt" {
		t.Fatalf("workspace-style path: %q", got)
	}
	if got := mustCall(t, w, ws, map[string]any{"file_path": "tmp/y", "content": "x"}); got != "Updated file /tmp/y" {
		t.Fatalf("relative path: %q", got)
	}
}
