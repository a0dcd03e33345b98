package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func openTestWorkspace(t *testing.T) (*Workspace, string) {
	t.Helper()
	dir := newWorkspace(t)
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, dir
}

func TestOpenWorkspaceCreatesDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("workspace not created: %v", err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode = %v, want 0755", fi.Mode().Perm())
	}
	if _, err := OpenWorkspace(""); !errors.Is(err, ErrNoWorkspace) {
		t.Errorf("empty dir: err = %v, want ErrNoWorkspace", err)
	}
}

func TestResolveInside(t *testing.T) {
	t.Parallel()
	ws, dir := openTestWorkspace(t)
	canon, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"":                        ".",
		".":                       ".",
		"/":                       ".",
		"//":                      ".",
		"notes.txt":               "notes.txt",
		"/notes.txt":              "notes.txt",
		"a/./b//c/":               "a/b/c",
		"a/../b":                  "b",
		"/a/b/../c":               "a/c",
		"/etc/passwd":             "etc/passwd", // workspace-rooted, not the host's
		dir + "/x.txt":            "x.txt",      // the workspace's own host path
		canon + "/sub/y.txt":      "sub/y.txt",
		dir:                       ".",
		"file..name":              "file..name",
		"..hidden":                "..hidden",
		"~/x":                     "~/x",
		"a b/c d.txt":             "a b/c d.txt",
		"/tmp/elsewhere/file.txt": "tmp/elsewhere/file.txt",
	} {
		got, err := ws.Resolve(in)
		if err != nil {
			t.Errorf("Resolve(%q): %v", in, err)
			continue
		}
		if got != want {
			t.Errorf("Resolve(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveRejectsEscapes(t *testing.T) {
	t.Parallel()
	ws, dir := openTestWorkspace(t)
	for _, in := range []string{
		"..", "../", "../x", "/..", "/../../etc/passwd", "a/../../b",
		"a/b/../../..", "./../ws/x", dir + "/../x", "/a/../../" + filepath.Base(dir) + "/x",
	} {
		_, err := ws.Resolve(in)
		if !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("Resolve(%q): err = %v, want ErrOutsideWorkspace", in, err)
			continue
		}
		if !strings.Contains(err.Error(), "is outside the workspace") {
			t.Errorf("Resolve(%q): unclear error %q", in, err)
		}
	}
	_, err := ws.Resolve("../x")
	if got, want := err.Error(), `path "../x" is outside the workspace`; got != want {
		t.Errorf("error text = %q, want %q", got, want)
	}
	for _, in := range []string{"a\x00b", "\x00", "/x\x00/../y"} {
		if _, err := ws.Resolve(in); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Resolve(%q): err = %v, want ErrInvalidPath", in, err)
		}
	}
}

func TestResolveSymlinks(t *testing.T) {
	t.Parallel()
	ws, dir := openTestWorkspace(t)
	outside := filepath.Join(filepath.Dir(dir), "outside")
	writeHost(t, filepath.Join(outside, "secret.txt"), "SECRET")
	writeHost(t, filepath.Join(dir, "sub", "in.txt"), "inside")

	symlink(t, outside, filepath.Join(dir, "abs-out"))                         // absolute, outside
	symlink(t, "../outside", filepath.Join(dir, "rel-out"))                    // relative, outside
	symlink(t, "../../outside/secret.txt", filepath.Join(dir, "sub", "file"))  // final component
	symlink(t, "../nowhere", filepath.Join(dir, "dangling-out"))               // dangling, outside
	symlink(t, filepath.Join(dir, "sub"), filepath.Join(dir, "abs-in"))        // absolute, inside
	symlink(t, "sub", filepath.Join(dir, "rel-in"))                            // relative, inside
	symlink(t, "in.txt", filepath.Join(dir, "sub", "alias.txt"))               // relative file, inside
	symlink(t, "../sub/../..", filepath.Join(dir, "sub", "updown"))            // climbs out via ..
	symlink(t, "loop2", filepath.Join(dir, "loop1"))                           // loop
	symlink(t, "loop1", filepath.Join(dir, "loop2"))                           //
	symlink(t, "rel-in/../rel-out/secret.txt", filepath.Join(dir, "indirect")) // via another link

	for _, in := range []string{
		"abs-out", "abs-out/secret.txt", "/abs-out/new.txt", "rel-out/secret.txt", "rel-out",
		"sub/file", "dangling-out", "dangling-out/x", "abs-in/in.txt", "sub/updown/outside/secret.txt",
		"indirect",
	} {
		if _, err := ws.Resolve(in); !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("Resolve(%q): err = %v, want ErrOutsideWorkspace", in, err)
		}
	}
	if _, err := ws.Resolve("loop1/x"); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("loop: err = %v", err)
	}
	for in, want := range map[string]string{
		"rel-in/in.txt":  "rel-in/in.txt",
		"sub/alias.txt":  "sub/alias.txt",
		"rel-in/new.txt": "rel-in/new.txt",
	} {
		got, err := ws.Resolve(in)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ws.Resolve("abs-out/secret.txt")
	if want := `path "abs-out/secret.txt" is outside the workspace: symlink "/abs-out" has an absolute target`; err.Error() != want {
		t.Errorf("error text = %q, want %q", err, want)
	}
	_, err = ws.Resolve("rel-out/secret.txt")
	if want := `path "rel-out/secret.txt" is outside the workspace: symlink "/rel-out" points outside`; err.Error() != want {
		t.Errorf("error text = %q, want %q", err, want)
	}
}

func TestDisplay(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{".": "/", "": "/", "a/b": "/a/b"} {
		if got := Display(in); got != want {
			t.Errorf("Display(%q) = %q, want %q", in, got, want)
		}
	}
}

// A workspace opened before and deleted since (its thread went) is created
// again on the next open, not reported missing.
func TestOpenWorkspaceAgainAfterRemoval(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "thread")
	for round := range 3 {
		ws, err := OpenWorkspace(dir)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := ws.Root().WriteFile("f.txt", []byte("x"), 0o644); err != nil {
			t.Fatalf("round %d: write: %v", round, err)
		}
		ws.Close()
		if _, err := os.Stat(filepath.Join(dir, "f.txt")); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
}
