package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteAndReadFile(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	w, r := NewWriteFile(), NewReadFile()

	if got := mustCall(t, w, ws, map[string]any{"file_path": "/notes/today.txt", "content": "alpha\nbeta\ngamma\n"}); got != "Updated file /notes/today.txt" {
		t.Errorf("write result = %q", got)
	}
	if got := readHost(t, filepath.Join(ws, "notes", "today.txt")); got != "alpha\nbeta\ngamma\n" {
		t.Errorf("on disk = %q", got)
	}
	fi, err := os.Stat(filepath.Join(ws, "notes"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("parent dir: %v %v", fi, err)
	}

	want := "     1\talpha\n     2\tbeta\n     3\tgamma"
	if got := mustCall(t, r, ws, map[string]any{"file_path": "notes/today.txt"}); got != want {
		t.Errorf("read = %q, want %q", got, want)
	}
	// Overwrite with shorter content truncates.
	mustCall(t, w, ws, map[string]any{"file_path": "notes/today.txt", "content": "x"})
	if got := mustCall(t, r, ws, map[string]any{"file_path": "/notes/today.txt"}); got != "     1\tx" {
		t.Errorf("after overwrite = %q", got)
	}
	// Empty content is allowed and reads back as the reminder.
	mustCall(t, w, ws, map[string]any{"file_path": "empty.txt", "content": ""})
	if got := mustCall(t, r, ws, map[string]any{"file_path": "empty.txt"}); got != emptyFileReminder {
		t.Errorf("empty = %q", got)
	}
}

func TestReadFilePaging(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "line %d\r\n", i)
	}
	writeHost(t, filepath.Join(ws, "f.txt"), b.String())
	r := NewReadFile()

	got := mustCall(t, r, ws, map[string]any{"file_path": "f.txt", "offset": 10, "limit": 3})
	want := "    11\tline 11\n    12\tline 12\n    13\tline 13\n\n[Showing lines 11-13 of 30. Call read_file with offset=13 to continue.]"
	if got != want {
		t.Errorf("paged read = %q, want %q", got, want)
	}
	// Numbers may arrive as float64 (JSON) or strings.
	got = mustCall(t, r, ws, map[string]any{"file_path": "f.txt", "offset": float64(28), "limit": "5"})
	if got != "    29\tline 29\n    30\tline 30" {
		t.Errorf("tail read = %q", got)
	}
	wantErr(t, r, ws, map[string]any{"file_path": "f.txt", "offset": 30}, "line offset 30 exceeds file length (30 lines)")
	wantErr(t, r, ws, map[string]any{"file_path": "f.txt", "offset": -1}, "must not be negative")
	wantErr(t, r, ws, map[string]any{"file_path": "f.txt", "limit": 0}, "must be positive")
	wantErr(t, r, ws, map[string]any{"file_path": "f.txt", "limit": 1.5}, "must be an integer")
	err := wantErr(t, r, ws, map[string]any{"file_path": "f.txt", "offset": "abc"}, `invalid argument "offset"`)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("err = %v, want ErrInvalidArgument", err)
	}
	wantErr(t, r, ws, map[string]any{}, `invalid argument "file_path": is required`)
	wantErr(t, r, ws, map[string]any{"file_path": 3}, "must be a string")
}

func TestReadFileDefaultLimitAndLongLines(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	var b strings.Builder
	for i := 1; i <= DefaultReadLimit+5; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	writeHost(t, filepath.Join(ws, "many.txt"), b.String())
	got := mustCall(t, NewReadFile(), ws, map[string]any{"file_path": "many.txt"})
	if n := strings.Count(got, "\t"); n != DefaultReadLimit {
		t.Errorf("default read returned %d lines, want %d", n, DefaultReadLimit)
	}
	if !strings.HasSuffix(got, fmt.Sprintf("[Showing lines 1-%d of %d. Call read_file with offset=%d to continue.]", DefaultReadLimit, DefaultReadLimit+5, DefaultReadLimit)) {
		t.Errorf("missing continuation note: %q", got[len(got)-120:])
	}

	long := strings.Repeat("é", MaxLineLength) // 2 bytes per rune
	writeHost(t, filepath.Join(ws, "long.txt"), long+"\nshort\n")
	got = mustCall(t, NewReadFile(), ws, map[string]any{"file_path": "long.txt"})
	first, rest, _ := strings.Cut(got, "\n")
	if !strings.HasSuffix(first, fmt.Sprintf("... [line truncated, %d characters in total]", MaxLineLength)) {
		t.Errorf("long line not marked: %q", first[len(first)-60:])
	}
	if len(first) > MaxLineLength+100 {
		t.Errorf("long line kept %d bytes", len(first))
	}
	if rest != "     2\tshort" {
		t.Errorf("rest = %q", rest)
	}
}

func TestReadFileRefusals(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	r := NewReadFile()
	writeHost(t, filepath.Join(ws, "bin.dat"), "abc\x00def")
	wantErr(t, r, ws, map[string]any{"file_path": "bin.dat"}, `file "/bin.dat" looks binary`)

	big := filepath.Join(ws, "big.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileSize + 1); err != nil { // sparse: cheap
		t.Fatal(err)
	}
	f.Close()
	wantErr(t, r, ws, map[string]any{"file_path": "big.txt"}, "is too large")

	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantErr(t, r, ws, map[string]any{"file_path": "d"}, `"/d" is a directory`)
	wantErr(t, r, ws, map[string]any{"file_path": "/"}, `"/" is a directory`)
	err = wantErr(t, r, ws, map[string]any{"file_path": "missing.txt"}, `file "/missing.txt" not found`)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want os.ErrNotExist in chain", err)
	}
	wantErr(t, r, ws, map[string]any{"file_path": "bin.dat/x"}, "not a directory")

	// A FIFO must not block the open.
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantErr(t, r, ws, map[string]any{"file_path": "pipe"}, "not a regular file")
	wantErr(t, NewWriteFile(), ws, map[string]any{"file_path": "pipe", "content": "x"}, "")
}

func TestWriteFileRefusals(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	w := NewWriteFile()
	wantErr(t, w, ws, map[string]any{"file_path": "a.txt"}, `invalid argument "content": is required`)
	wantErr(t, w, ws, map[string]any{"content": "x"}, `invalid argument "file_path": is required`)
	wantErr(t, w, ws, map[string]any{"file_path": "/", "content": "x"}, "is a directory")
	wantErr(t, w, ws, map[string]any{"file_path": "a.txt", "content": strings.Repeat("x", MaxFileSize+1)}, "is too large")
	writeHost(t, filepath.Join(ws, "file"), "x")
	wantErr(t, w, ws, map[string]any{"file_path": "file/child.txt", "content": "x"}, `cannot create directory "/file": a file with that name exists`)
	if err := os.Mkdir(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantErr(t, w, ws, map[string]any{"file_path": "dir", "content": "x"}, `"/dir" is a directory`)
	if _, err := w.Call(t.Context(), Call{Args: map[string]any{"file_path": "a", "content": "x"}}); !errors.Is(err, ErrNoWorkspace) {
		t.Errorf("no workspace: err = %v", err)
	}
}

func TestWriteFileThroughInnerSymlink(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	writeHost(t, filepath.Join(ws, "real", "target.txt"), "old")
	symlink(t, "real", filepath.Join(ws, "alias"))
	symlink(t, "target.txt", filepath.Join(ws, "real", "link.txt"))
	mustCall(t, NewWriteFile(), ws, map[string]any{"file_path": "alias/link.txt", "content": "new"})
	if got := readHost(t, filepath.Join(ws, "real", "target.txt")); got != "new" {
		t.Errorf("target = %q", got)
	}
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	e := NewEditFile()
	p := filepath.Join(ws, "code.py")
	writeHost(t, p, "def f():\n    return 1\n\nx = 1\ny = 1\n")

	got := mustCall(t, e, ws, map[string]any{"file_path": "/code.py", "old_string": "return 1", "new_string": "return 2"})
	if got != "Successfully replaced 1 instance(s) of the string in '/code.py'" {
		t.Errorf("result = %q", got)
	}
	if got := readHost(t, p); got != "def f():\n    return 2\n\nx = 1\ny = 1\n" {
		t.Errorf("after edit = %q", got)
	}

	wantErr(t, e, ws, map[string]any{"file_path": "code.py", "old_string": "= 1", "new_string": "= 3"},
		"old_string appears 2 times in /code.py; set replace_all to true")
	got = mustCall(t, e, ws, map[string]any{"file_path": "code.py", "old_string": "= 1", "new_string": "= 3", "replace_all": true})
	if got != "Successfully replaced 2 instance(s) of the string in '/code.py'" {
		t.Errorf("replace_all result = %q", got)
	}
	if got := readHost(t, p); got != "def f():\n    return 2\n\nx = 3\ny = 3\n" {
		t.Errorf("after replace_all = %q", got)
	}
	// Shrinking edits truncate; deleting text is allowed.
	mustCall(t, e, ws, map[string]any{"file_path": "code.py", "old_string": "\nx = 3\ny = 3\n", "new_string": ""})
	if got := readHost(t, p); got != "def f():\n    return 2\n" {
		t.Errorf("after delete = %q", got)
	}

	wantErr(t, e, ws, map[string]any{"file_path": "code.py", "old_string": "nope", "new_string": "x"}, "old_string not found in /code.py")
	wantErr(t, e, ws, map[string]any{"file_path": "code.py", "old_string": "f", "new_string": "f"}, "identical")
	wantErr(t, e, ws, map[string]any{"file_path": "code.py", "old_string": "", "new_string": "x"}, `"old_string": must not be empty`)
	wantErr(t, e, ws, map[string]any{"file_path": "code.py", "old_string": "f"}, `"new_string": is required`)
	wantErr(t, e, ws, map[string]any{"file_path": "code.py", "old_string": "f", "new_string": "g", "replace_all": "maybe"}, "must be a boolean")
	wantErr(t, e, ws, map[string]any{"file_path": "missing.py", "old_string": "a", "new_string": "b"}, `file "/missing.py" not found`)
	if got := readHost(t, p); got != "def f():\n    return 2\n" {
		t.Errorf("failed edits changed the file: %q", got)
	}
}

func TestLs(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	ls := NewLs()
	if got := mustCall(t, ls, ws, map[string]any{}); got != "No files found" {
		t.Errorf("empty ls = %q", got)
	}
	writeHost(t, filepath.Join(ws, "b.txt"), "b")
	writeHost(t, filepath.Join(ws, "a.txt"), "a")
	writeHost(t, filepath.Join(ws, "src", "main.go"), "package main")
	writeHost(t, filepath.Join(ws, ".hidden"), "")

	if got, want := mustCall(t, ls, ws, map[string]any{"path": "/"}), "/.hidden\n/a.txt\n/b.txt\n/src/"; got != want {
		t.Errorf("ls / = %q, want %q", got, want)
	}
	if got := mustCall(t, ls, ws, map[string]any{"path": "src"}); got != "/src/main.go" {
		t.Errorf("ls src = %q", got)
	}
	if got := mustCall(t, ls, ws, map[string]any{"path": "/src/main.go"}); got != "/src/main.go" {
		t.Errorf("ls of a file = %q", got)
	}
	wantErr(t, ls, ws, map[string]any{"path": "nope"}, `directory "/nope" not found`)

	for i := range maxListEntries + 5 {
		writeHost(t, filepath.Join(ws, "many", fmt.Sprintf("f%04d", i)), "")
	}
	got := mustCall(t, ls, ws, map[string]any{"path": "many"})
	if !strings.HasSuffix(got, "... [5 more entries not shown; narrow the path or pattern]") {
		t.Errorf("capped ls ends with %q", got[len(got)-80:])
	}
}

func TestFileToolsHonourCancelledContext(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	writeHost(t, filepath.Join(ws, "a.txt"), "a")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tool := range Builtins(Options{}) {
		if tool.Spec().Name == NameWriteTodos {
			continue
		}
		_, err := tool.Call(ctx, Call{Args: map[string]any{"pattern": "a", "file_path": "a.txt", "content": "x", "old_string": "a", "new_string": "b"}, Workspace: ws})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", tool.Spec().Name, err)
		}
	}
	if got := readHost(t, filepath.Join(ws, "a.txt")); got != "a" {
		t.Errorf("cancelled call changed the file: %q", got)
	}
}
