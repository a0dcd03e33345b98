package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"agentserver/internal/llm"
)

// Names of the built-in tools.
const (
	NameLs         = "ls"
	NameReadFile   = "read_file"
	NameWriteFile  = "write_file"
	NameEditFile   = "edit_file"
	NameGlob       = "glob"
	NameGrep       = "grep"
	NameWriteTodos = "write_todos"
	NameBash       = "bash"
)

// Limits of the file tools.
const (
	// MaxFileSize is the largest file read_file, edit_file and grep read and
	// write_file and edit_file write.
	MaxFileSize = 10 << 20
	// DefaultReadLimit is read_file's default number of lines.
	DefaultReadLimit = 2000
	// MaxLineLength is where read_file and grep cut long lines.
	MaxLineLength = 2000
	// maxReadOutput bounds read_file's output in bytes; the rest of the
	// window is left for the next call.
	maxReadOutput = 256 << 10
	// maxListEntries bounds ls and glob results.
	maxListEntries = 1000
)

// emptyFileReminder is deepagents' text for a file with no content.
const emptyFileReminder = "System reminder: File exists but has empty contents"

// fileTool is a tool that works inside the call's workspace.
type fileTool struct {
	spec llm.ToolSpec
	run  func(ctx context.Context, ws *Workspace, a args) (string, error)
	// quota bounds the workspace's files (0: DefaultWorkspaceQuota).
	quota int64
}

func (t *fileTool) Spec() llm.ToolSpec { return t.spec }

// UsesWorkspace reports that the tool works in the thread's workspace.
func (t *fileTool) UsesWorkspace() bool { return true }

func (t *fileTool) Call(ctx context.Context, call Call) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	ws, err := OpenWorkspace(call.Workspace)
	if err != nil {
		return Result{}, err
	}
	defer ws.Close()
	ws.quota = t.quota
	out, err := t.run(ctx, ws, args(call.Args))
	if err != nil {
		return Result{}, err
	}
	return Result{Content: out}, nil
}

// NewLs returns the ls tool.
func NewLs() Tool {
	return &fileTool{
		spec: llm.ToolSpec{
			Name: NameLs,
			Description: "List the entries of a directory in the workspace, one path per line; " +
				"directories end with \"/\". Paths are workspace-rooted (\"/\" is the workspace). " +
				"Use it to look around before reading or editing files.",
			Parameters: schema(map[string]any{
				"path": prop("string", "Directory to list, e.g. \"/\" or \"/src\". Defaults to \"/\"."),
			}),
		},
		run: runLs,
	}
}

func runLs(ctx context.Context, ws *Workspace, a args) (string, error) {
	p, err := a.str("path", false)
	if err != nil {
		return "", err
	}
	rel, err := ws.Resolve(p)
	if err != nil {
		return "", err
	}
	disp := Display(rel)
	f, err := ws.root.Open(rel)
	if err != nil {
		return "", fsError("directory", disp, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fsError("directory", disp, err)
	}
	if !fi.IsDir() {
		return disp, nil
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return "", fsError("directory", disp, err)
	}
	if len(entries) == 0 {
		return "No files found", nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		n := path.Join(disp, e.Name())
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return joinCapped(names, maxListEntries, "entries"), nil
}

// NewReadFile returns the read_file tool.
func NewReadFile() Tool {
	return &fileTool{
		spec: llm.ToolSpec{
			Name: NameReadFile,
			Description: fmt.Sprintf("Read a text file from the workspace. The result shows each line "+
				"prefixed with its 1-based line number and a tab, like `cat -n`. At most %d lines are "+
				"returned per call (use offset and limit to page through longer files) and lines longer "+
				"than %d characters are cut. Read a file before you edit it.", DefaultReadLimit, MaxLineLength),
			Parameters: schema(map[string]any{
				"file_path": prop("string", "Path of the file, e.g. \"/notes.txt\"."),
				"offset":    prop("integer", "0-based index of the first line to return. Defaults to 0."),
				"limit":     prop("integer", fmt.Sprintf("Maximum number of lines to return. Defaults to %d.", DefaultReadLimit)),
			}, "file_path"),
		},
		run: runReadFile,
	}
}

func runReadFile(ctx context.Context, ws *Workspace, a args) (string, error) {
	p, err := a.str("file_path", true)
	if err != nil {
		return "", err
	}
	offset, err := a.int("offset", 0)
	if err != nil {
		return "", err
	}
	if offset < 0 {
		return "", argError("offset", "must not be negative")
	}
	limit, err := a.int("limit", DefaultReadLimit)
	if err != nil {
		return "", err
	}
	if limit <= 0 {
		return "", argError("limit", "must be positive")
	}
	rel, err := ws.Resolve(p)
	if err != nil {
		return "", err
	}
	data, err := ws.readFile(rel)
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return emptyFileReminder, nil
	}
	if isBinary(data) {
		return "", fmt.Errorf("file %q looks binary; read_file only shows text", Display(rel))
	}
	lines := splitLines(string(data))
	if offset >= len(lines) {
		return "", fmt.Errorf("line offset %d exceeds file length (%d lines)", offset, len(lines))
	}
	end := min(offset+limit, len(lines))
	var b strings.Builder
	for i := offset; i < end; i++ {
		if b.Len() >= maxReadOutput {
			end = i
			break
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, cutLine(lines[i], MaxLineLength))
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if end < len(lines) {
		out += fmt.Sprintf("\n\n[Showing lines %d-%d of %d. Call read_file with offset=%d to continue.]",
			offset+1, end, len(lines), end)
	}
	return out, nil
}

// readFile reads a regular file of at most MaxFileSize bytes.
func (w *Workspace) readFile(rel string) ([]byte, error) {
	f, fi, err := w.openRegular(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, fi.Size(), Display(rel))
}

func readCapped(f *os.File, size int64, disp string) ([]byte, error) {
	if size > MaxFileSize {
		return nil, fmt.Errorf("file %q is too large (%d bytes; the limit is %d)", disp, size, MaxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fsError("file", disp, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file %q is too large (the limit is %d bytes)", disp, MaxFileSize)
	}
	return data, nil
}

// NewWriteFile returns the write_file tool.
func NewWriteFile() Tool {
	return &fileTool{
		spec: llm.ToolSpec{
			Name: NameWriteFile,
			Description: "Write a text file in the workspace, replacing it completely if it exists; " +
				"missing parent directories are created. To change part of an existing file, " +
				"prefer edit_file.",
			Parameters: schema(map[string]any{
				"file_path": prop("string", "Path of the file, e.g. \"/notes.txt\"."),
				"content":   prop("string", "The complete new content of the file."),
			}, "file_path", "content"),
		},
		run: runWriteFile,
	}
}

func runWriteFile(ctx context.Context, ws *Workspace, a args) (string, error) {
	p, err := a.str("file_path", true)
	if err != nil {
		return "", err
	}
	if _, ok := a["content"]; !ok {
		return "", argError("content", "is required")
	}
	content, err := a.str("content", false)
	if err != nil {
		return "", err
	}
	if len(content) > MaxFileSize {
		return "", argError("content", "is too large (%d bytes; the limit is %d)", len(content), MaxFileSize)
	}
	rel, err := ws.Resolve(p)
	if err != nil {
		return "", err
	}
	disp := Display(rel)
	if dir := path.Dir(rel); dir != "." {
		if err := ws.root.MkdirAll(dir, 0o755); err != nil {
			var pe *fs.PathError
			if errors.Is(err, fs.ErrExist) && errors.As(err, &pe) {
				return "", &pathError{fmt.Sprintf("cannot create directory %q: a file with that name exists", Display(pe.Path)), err}
			}
			return "", fsError("directory", Display(dir), err)
		}
	}
	if err := ws.checkQuota(rel, int64(len(content)), ws.quota); err != nil {
		return "", err
	}
	f, _, err := ws.openRegular(rel, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return "", err
	}
	if err := writeAll(f, []byte(content)); err != nil {
		return "", fsError("file", disp, err)
	}
	return "Updated file " + disp + ws.hostPathNote(p, rel), nil
}

// writeAll replaces f's content and closes it.
func writeAll(f *os.File, data []byte) error {
	err := f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// NewEditFile returns the edit_file tool.
func NewEditFile() Tool {
	return &fileTool{
		spec: llm.ToolSpec{
			Name: NameEditFile,
			Description: "Replace exact text in a workspace file. old_string must match the file byte for " +
				"byte (keep its indentation; leave out the line-number prefixes read_file shows) and must " +
				"occur exactly once, unless replace_all is true. Read the file first.",
			Parameters: schema(map[string]any{
				"file_path":   prop("string", "Path of the file to change."),
				"old_string":  prop("string", "The exact text to replace."),
				"new_string":  prop("string", "The text to put in its place; must differ from old_string."),
				"replace_all": prop("boolean", "Replace every occurrence instead of requiring a unique one. Defaults to false."),
			}, "file_path", "old_string", "new_string"),
		},
		run: runEditFile,
	}
}

func runEditFile(ctx context.Context, ws *Workspace, a args) (string, error) {
	p, err := a.str("file_path", true)
	if err != nil {
		return "", err
	}
	oldS, err := a.str("old_string", true)
	if err != nil {
		return "", err
	}
	if _, ok := a["new_string"]; !ok {
		return "", argError("new_string", "is required")
	}
	newS, err := a.str("new_string", false)
	if err != nil {
		return "", err
	}
	all, err := a.bool("replace_all", false)
	if err != nil {
		return "", err
	}
	if oldS == newS {
		return "", argError("new_string", "is identical to old_string")
	}
	rel, err := ws.Resolve(p)
	if err != nil {
		return "", err
	}
	disp := Display(rel)
	// One descriptor for the read and the write: nothing can be swapped in
	// between.
	f, fi, err := ws.openRegular(rel, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	data, err := readCapped(f, fi.Size(), disp)
	if err != nil {
		f.Close()
		return "", err
	}
	content := string(data)
	n := strings.Count(content, oldS)
	switch {
	case n == 0:
		f.Close()
		return "", fmt.Errorf("old_string not found in %s", disp)
	case n > 1 && !all:
		f.Close()
		return "", fmt.Errorf("old_string appears %d times in %s; set replace_all to true to replace every "+
			"occurrence, or include more surrounding text to make it unique", n, disp)
	}
	updated := strings.Replace(content, oldS, newS, -1)
	if len(updated) > MaxFileSize {
		f.Close()
		return "", fmt.Errorf("edit would make %s too large (%d bytes; the limit is %d)", disp, len(updated), MaxFileSize)
	}
	if err := ws.checkQuota(rel, int64(len(updated)), ws.quota); err != nil {
		f.Close()
		return "", err
	}
	if err := writeAll(f, []byte(updated)); err != nil {
		return "", fsError("file", disp, err)
	}
	return fmt.Sprintf("Successfully replaced %d instance(s) of the string in '%s'", n, disp) + ws.hostPathNote(p, rel), nil
}

// isBinary reports whether data looks binary: a NUL byte in its first 8000
// bytes, as git and grep decide.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// splitLines splits text into lines without their terminators ("\n" or
// "\r\n"); a final terminator does not start another line.
func splitLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// cutLine shortens a line to at most n bytes (on a rune boundary) and says
// how long it was; invalid UTF-8 is replaced.
func cutLine(line string, n int) string {
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "\uFFFD")
	}
	if len(line) <= n {
		return line
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... [line truncated, %d characters in total]", line[:cut], utf8.RuneCountInString(line))
}

// joinCapped joins items one per line, keeping at most max and saying how
// many were left out.
func joinCapped(items []string, max int, what string) string {
	if len(items) <= max {
		return strings.Join(items, "\n")
	}
	return strings.Join(items[:max], "\n") +
		fmt.Sprintf("\n... [%d more %s not shown; narrow the path or pattern]", len(items)-max, what)
}
