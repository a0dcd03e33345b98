package tools

import (
	"errors"
	"fmt"
	"path/filepath"
)

// Options selects and configures the built-in tools.
type Options struct {
	// Shell adds the bash tool. It is off by default: bash is not confined
	// to the workspace.
	Shell bool
	Bash  BashOptions
	// WorkspaceQuota bounds the bytes of regular files in one workspace
	// that write_file and edit_file may reach (0: DefaultWorkspaceQuota).
	// bash is not bound by it.
	WorkspaceQuota int64
}

// Builtins returns the built-in tools by name: ls, read_file, write_file,
// edit_file, glob, grep and write_todos, plus bash when opts.Shell is set.
func Builtins(opts Options) map[string]Tool {
	m := map[string]Tool{}
	for _, t := range []Tool{
		NewLs(), NewReadFile(), NewWriteFile(), NewEditFile(),
		NewGlob(), NewGrep(), NewWriteTodos(),
	} {
		if ft, ok := t.(*fileTool); ok {
			ft.quota = opts.WorkspaceQuota
		}
		m[t.Spec().Name] = t
	}
	if opts.Shell {
		t := NewBash(opts.Bash)
		m[t.Spec().Name] = t
	}
	return m
}

// ErrInvalidThreadID reports a thread id that cannot name a workspace
// directory.
var ErrInvalidThreadID = errors.New("invalid thread id")

// maxThreadIDLen bounds thread ids used as directory names.
const maxThreadIDLen = 128

// Workspaces maps threads to their workspace directories under Root.
type Workspaces struct {
	Root string
}

// Dir returns <Root>/<threadID>. The id must be a safe single path
// segment: 1 to 128 ASCII letters, digits, '-' or '_', starting with a
// letter or digit (UUIDs qualify). The directory is not created here: the
// tools create it on first use, or PrepareWorkspace ahead of it.
func (w Workspaces) Dir(threadID string) (string, error) {
	if w.Root == "" {
		return "", errors.New("workspaces root is not set")
	}
	if !safeID(threadID) {
		return "", fmt.Errorf("%w %q: want 1-%d letters, digits, '-' or '_'", ErrInvalidThreadID, threadID, maxThreadIDLen)
	}
	return filepath.Join(w.Root, threadID), nil
}

func safeID(id string) bool {
	if id == "" || len(id) > maxThreadIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !alnum && (i == 0 || c != '-' && c != '_') {
			return false
		}
	}
	return true
}
