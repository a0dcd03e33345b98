package tools

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBuiltins(t *testing.T) {
	t.Parallel()
	names := func(m map[string]Tool) []string {
		var out []string
		for n, tool := range m {
			if tool.Spec().Name != n {
				t.Errorf("tool %q is registered as %q", tool.Spec().Name, n)
			}
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	base := []string{"edit_file", "glob", "grep", "ls", "read_file", "write_file", "write_todos"}
	if got := names(Builtins(Options{})); !slices.Equal(got, base) {
		t.Errorf("default tools = %v", got)
	}
	withShell := append(slices.Clone(base), "bash")
	slices.Sort(withShell)
	all := Builtins(Options{Shell: true})
	if got := names(all); !slices.Equal(got, withShell) {
		t.Errorf("with shell = %v", got)
	}
	for name, tool := range all {
		s := tool.Spec()
		if s.Description == "" || len(s.Description) > 1000 {
			t.Errorf("%s: description length %d", name, len(s.Description))
		}
		if s.Parameters["type"] != "object" {
			t.Errorf("%s: parameters %v", name, s.Parameters)
		}
		props, _ := s.Parameters["properties"].(map[string]any)
		req, _ := s.Parameters["required"].([]string)
		for _, r := range req {
			if _, ok := props[r]; !ok {
				t.Errorf("%s: required %q is not a property", name, r)
			}
		}
	}
	// Argument names follow deepagents.
	for name, want := range map[string][]string{
		"ls":          {"path"},
		"read_file":   {"file_path", "limit", "offset"},
		"write_file":  {"content", "file_path"},
		"edit_file":   {"file_path", "new_string", "old_string", "replace_all"},
		"glob":        {"path", "pattern"},
		"grep":        {"glob", "output_mode", "path", "pattern"},
		"write_todos": {"todos"},
		"bash":        {"command"},
	} {
		var got []string
		for p := range all[name].Spec().Parameters["properties"].(map[string]any) {
			got = append(got, p)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s arguments = %v, want %v", name, got, want)
		}
	}
}

func TestWorkspacesDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	w := Workspaces{Root: root}
	for _, id := range []string{"0f8b6a8e-3c1d-4f5e-9a7b-1c2d3e4f5a6b", "thread_1", "A", strings.Repeat("a", 128)} {
		got, err := w.Dir(id)
		if err != nil || got != filepath.Join(root, id) {
			t.Errorf("Dir(%q) = %q, %v", id, got, err)
		}
	}
	for _, id := range []string{"", ".", "..", "../x", "a/b", "/abs", "-x", "_x", "a b", "a\x00b", "é", strings.Repeat("a", 129), "a.b"} {
		if _, err := w.Dir(id); !errors.Is(err, ErrInvalidThreadID) {
			t.Errorf("Dir(%q): err = %v, want ErrInvalidThreadID", id, err)
		}
	}
	if _, err := (Workspaces{}).Dir("t1"); err == nil {
		t.Error("empty root accepted")
	}
}
