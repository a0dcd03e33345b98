package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// escapeFixture is a workspace next to an "outside" directory holding a
// secret, with symlinks that point out of the workspace.
type escapeFixture struct {
	ws, outside, secret string
}

func newEscapeFixture(t *testing.T) escapeFixture {
	t.Helper()
	base := t.TempDir()
	f := escapeFixture{
		ws:      filepath.Join(base, "ws"),
		outside: filepath.Join(base, "outside"),
	}
	f.secret = filepath.Join(f.outside, "secret.txt")
	writeHost(t, f.secret, "SECRET\n")
	writeHost(t, filepath.Join(f.ws, "ok.txt"), "fine\n")
	symlink(t, f.outside, filepath.Join(f.ws, "evildir"))                            // symlinked directory, absolute
	symlink(t, "../outside", filepath.Join(f.ws, "reldir"))                          // symlinked directory, relative
	symlink(t, f.secret, filepath.Join(f.ws, "evilfile"))                            // final component, absolute
	symlink(t, "../../outside/secret.txt", filepath.Join(f.ws, "sub/link"))          // final component, relative
	symlink(t, filepath.Join(f.outside, "new.txt"), filepath.Join(f.ws, "dangling")) // dangling, outside
	return f
}

// check asserts the outside directory still holds exactly the secret,
// unchanged.
func (f escapeFixture) check(t *testing.T) {
	t.Helper()
	if got := readHost(t, f.secret); got != "SECRET\n" {
		t.Errorf("secret changed to %q", got)
	}
	entries, err := os.ReadDir(f.outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"secret.txt"}) {
		t.Errorf("outside directory now holds %v", names)
	}
}

var escapePaths = []string{
	"../outside/secret.txt",
	"/../outside/secret.txt",
	"/../../etc/passwd",
	"a/../../outside/secret.txt",
	"ok.txt/../../outside/secret.txt",
	"evilfile",
	"/evilfile",
	"evildir/secret.txt",
	"evildir/new.txt",
	"reldir/secret.txt",
	"reldir/new.txt",
	"sub/link",
	"dangling",
	"nul\x00.txt",
}

func TestFileToolsRefuseEscapes(t *testing.T) {
	t.Parallel()
	f := newEscapeFixture(t)
	tools := Builtins(Options{})
	for _, p := range escapePaths {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{NameReadFile, map[string]any{"file_path": p}},
			{NameWriteFile, map[string]any{"file_path": p, "content": "PWNED"}},
			{NameEditFile, map[string]any{"file_path": p, "old_string": "SECRET", "new_string": "PWNED"}},
			{NameLs, map[string]any{"path": p}},
			{NameGlob, map[string]any{"pattern": "*", "path": p}},
			{NameGrep, map[string]any{"pattern": "SECRET", "path": p}},
		} {
			res, err := callTool(t, tools[c.tool], f.ws, c.args)
			if err == nil {
				t.Errorf("%s(%q) succeeded: %q", c.tool, p, res.Content)
				continue
			}
			if !strings.Contains(err.Error(), "outside the workspace") && !strings.Contains(err.Error(), "NUL") {
				t.Errorf("%s(%q): unclear error %q", c.tool, p, err)
			}
		}
	}
	f.check(t)
}

func TestWalkToolsDoNotFollowSymlinks(t *testing.T) {
	t.Parallel()
	f := newEscapeFixture(t)
	tools := Builtins(Options{})

	// Walks from the root neither descend into nor read through links.
	for _, mode := range []string{GrepFilesWithMatches, GrepContent, GrepCount} {
		if got := mustCall(t, tools[NameGrep], f.ws, map[string]any{"pattern": "SECRET", "output_mode": mode}); got != "No matches found" {
			t.Errorf("grep %s from root = %q", mode, got)
		}
	}
	for _, pattern := range []string{"**", "**/*", "evildir/*", "reldir/**", "**/secret.txt", "*"} {
		got := mustCall(t, tools[NameGlob], f.ws, map[string]any{"pattern": pattern})
		if strings.Contains(got, "secret") || strings.Contains(got, "evil") || strings.Contains(got, "link") {
			t.Errorf("glob %q = %q", pattern, got)
		}
	}
	// ls of the root shows the links' names (they live in the workspace)
	// but not what they point to.
	got := mustCall(t, tools[NameLs], f.ws, map[string]any{"path": "/"})
	if strings.Contains(got, "secret") {
		t.Errorf("ls / = %q", got)
	}
	f.check(t)
}

// TestSwappedParentAfterCheck swaps a checked directory for a symlink
// between Resolve and the file operation. What is guaranteed: the
// operation goes through os.Root, so it fails instead of following the new
// link out of the workspace.
func TestSwappedParentAfterCheck(t *testing.T) {
	// Not parallel: it sets the package's afterResolve hook.
	for _, target := range []string{"abs", "rel"} {
		t.Run(target, func(t *testing.T) {
			f := newEscapeFixture(t)
			writeHost(t, filepath.Join(f.ws, "dir", "secret.txt"), "SECRET\n")
			swap := func(rel string) {
				if rel != "dir" && !strings.HasPrefix(rel, "dir/") {
					return
				}
				dir := filepath.Join(f.ws, "dir")
				if err := os.Rename(dir, dir+".old"); err != nil {
					t.Errorf("swap: %v", err)
					return
				}
				link := f.outside
				if target == "rel" {
					link = "../outside"
				}
				if err := os.Symlink(link, dir); err != nil {
					t.Errorf("swap: %v", err)
				}
			}
			restore := func() {
				dir := filepath.Join(f.ws, "dir")
				if err := os.Remove(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(dir+".old", dir); err != nil {
					t.Fatal(err)
				}
			}
			afterResolve = swap
			defer func() { afterResolve = nil }()

			tools := Builtins(Options{})
			for _, c := range []struct {
				tool string
				args map[string]any
			}{
				{NameWriteFile, map[string]any{"file_path": "dir/new.txt", "content": "PWNED"}},
				{NameWriteFile, map[string]any{"file_path": "dir/secret.txt", "content": "PWNED"}},
				{NameWriteFile, map[string]any{"file_path": "dir/deeper/new.txt", "content": "PWNED"}},
				{NameReadFile, map[string]any{"file_path": "dir/secret.txt"}},
				{NameEditFile, map[string]any{"file_path": "dir/secret.txt", "old_string": "SECRET", "new_string": "PWNED"}},
				{NameLs, map[string]any{"path": "dir"}},
				{NameGrep, map[string]any{"pattern": "SECRET", "path": "dir"}},
				{NameGlob, map[string]any{"pattern": "*", "path": "dir"}},
			} {
				res, err := callTool(t, tools[c.tool], f.ws, c.args)
				if err == nil {
					t.Errorf("%s(%v) after swap succeeded: %q", c.tool, c.args, res.Content)
				} else if !strings.Contains(err.Error(), "outside the workspace") {
					t.Errorf("%s(%v): unclear error %q", c.tool, c.args, err)
				}
				restore()
			}
			afterResolve = nil
			f.check(t)
		})
	}
}
