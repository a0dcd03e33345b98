package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// ErrOutsideWorkspace reports a path that would leave the workspace: a ".."
// that climbs out, or a symlink that points out (or has an absolute target).
var ErrOutsideWorkspace = errors.New("outside the workspace")

// ErrInvalidPath reports a path that is malformed (e.g. holds a NUL byte).
var ErrInvalidPath = errors.New("invalid path")

// ErrNoWorkspace reports a call without a workspace directory.
var ErrNoWorkspace = errors.New("no workspace is configured for this thread")

// maxSymlinkHops matches os.Root's limit, so the pre-check and the actual
// operation agree on which paths resolve.
const maxSymlinkHops = 8

// afterResolve runs at the end of every successful Resolve. Tests set it to
// swap path components for symlinks between the check and the use.
var afterResolve func(rel string)

// Workspace is a directory the file tools are confined to. All file system
// access goes through an os.Root opened on it; Resolve adds a lexical and
// symlink check in front for clear error messages. A Workspace is safe for
// concurrent use.
type Workspace struct {
	dir   string // canonical absolute path (symlinks resolved)
	alias string // absolute path as given, before symlink resolution
	root  *os.Root
	quota int64 // bound on its files' bytes for writes (0: the default)
}

// OpenWorkspace creates dir (0o755) if needed and opens it.
func OpenWorkspace(dir string) (*Workspace, error) {
	if dir == "" {
		return nil, ErrNoWorkspace
	}
	if w, ok := reopenWorkspace(dir); ok {
		return w, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	canon, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("resolve workspace: %w", err)
	}
	root, err := os.OpenRoot(canon)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	opened.remember(dir, abs, canon)
	return &Workspace{dir: canon, alias: abs, root: root}, nil
}

// PrepareWorkspace creates and resolves a workspace ahead of its first
// use, so that the first tool call of a thread does not wait for the
// directory to be made. It does nothing for a workspace already opened by
// this process; errors are left for the tool call to report.
func PrepareWorkspace(dir string) {
	if _, _, known := opened.lookup(dir); known || dir == "" {
		return
	}
	if ws, err := OpenWorkspace(dir); err == nil {
		ws.Close()
	}
}

// WorkspaceKnown reports whether this process has opened the workspace
// before (PrepareWorkspace would do nothing).
func WorkspaceKnown(dir string) bool {
	_, _, known := opened.lookup(dir)
	return known
}

// reopenWorkspace opens a workspace this process has opened before without
// creating and resolving its path again (a tool call's hot path); it fails
// when the directory is gone (e.g. its thread was deleted), and the caller
// then takes the full way.
func reopenWorkspace(dir string) (*Workspace, bool) {
	abs, canon, ok := opened.lookup(dir)
	if !ok {
		return nil, false
	}
	root, err := os.OpenRoot(canon)
	if err != nil {
		opened.forget(dir)
		return nil, false
	}
	return &Workspace{dir: canon, alias: abs, root: root}, true
}

// openedWorkspaces remembers the resolved paths of recently opened
// workspaces, up to a bound (it starts over when full).
type openedWorkspaces struct {
	mu    sync.Mutex
	paths map[string][2]string // dir -> abs, canonical
}

const maxRememberedWorkspaces = 4096

var opened = openedWorkspaces{paths: map[string][2]string{}}

func (o *openedWorkspaces) lookup(dir string) (abs, canon string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.paths[dir]
	return p[0], p[1], ok
}

func (o *openedWorkspaces) remember(dir, abs, canon string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.paths) >= maxRememberedWorkspaces {
		clear(o.paths)
	}
	o.paths[dir] = [2]string{abs, canon}
}

func (o *openedWorkspaces) forget(dir string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.paths, dir)
}

// Close releases the workspace's directory handle.
func (w *Workspace) Close() error { return w.root.Close() }

// Dir returns the workspace's canonical host path.
func (w *Workspace) Dir() string { return w.dir }

// Root returns the os.Root all access should go through.
func (w *Workspace) Root() *os.Root { return w.root }

// Display returns the workspace-rooted form of rel ("/" for the root), the
// form tools show to the model.
func Display(rel string) string {
	if rel == "" || rel == "." {
		return "/"
	}
	return "/" + rel
}

// Resolve maps a path given by the model to a clean slash-separated path
// relative to the workspace ("." for the root), suitable for Root's
// methods. It refuses NUL bytes, ".." segments that climb above the root,
// and paths through symlinks that leave the workspace or have absolute
// targets. Absolute paths are workspace-rooted, except that a path under the
// workspace's own host path is taken as that file.
func (w *Workspace) Resolve(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte: %w", p, ErrInvalidPath)
	}
	s := filepath.ToSlash(p)
	if strings.HasPrefix(s, "/") {
		s = w.stripHostPrefix(s)
	}
	depth := 0
	for _, seg := range strings.Split(s, "/") {
		switch seg {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return "", fmt.Errorf("path %q is %w", p, ErrOutsideWorkspace)
			}
		default:
			depth++
		}
	}
	rel := path.Clean("/" + s)[1:]
	if rel == "" {
		rel = "."
	}
	if err := w.checkLinks(p, rel); err != nil {
		return "", err
	}
	if afterResolve != nil {
		afterResolve(rel)
	}
	return rel, nil
}

// stripHostPrefix turns a host path inside the workspace into a relative
// one; any other absolute path is returned without its leading slashes.
func (w *Workspace) stripHostPrefix(s string) string {
	for _, prefix := range []string{filepath.ToSlash(w.dir), filepath.ToSlash(w.alias)} {
		if s == prefix {
			return ""
		}
		if rest, ok := strings.CutPrefix(s, prefix+"/"); ok {
			return rest
		}
	}
	return strings.TrimLeft(s, "/")
}

// checkLinks walks rel from the workspace root, following symlinks the way
// os.Root does, and reports the first one that leads out. Components that do
// not exist yet are checked lexically.
func (w *Workspace) checkLinks(orig, rel string) error {
	if rel == "." {
		return nil
	}
	pending := strings.Split(rel, "/")
	cur := w.dir
	missing := false
	hops := 0
	lastLink := "" // the last symlink followed, for error text
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur == w.dir {
				if lastLink != "" {
					return fmt.Errorf("path %q is %w: symlink %q points outside", orig, ErrOutsideWorkspace, lastLink)
				}
				return fmt.Errorf("path %q is %w", orig, ErrOutsideWorkspace)
			}
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if missing {
			cur = next
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				missing = true
				cur = next
				continue
			}
			return fmt.Errorf("check path %q: %w", orig, unwrapPathError(err))
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return fmt.Errorf("path %q: too many levels of symbolic links: %w", orig, ErrInvalidPath)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return fmt.Errorf("check path %q: %w", orig, unwrapPathError(err))
		}
		link := w.display(next)
		if filepath.IsAbs(target) {
			return fmt.Errorf("path %q is %w: symlink %q has an absolute target", orig, ErrOutsideWorkspace, link)
		}
		lastLink = link
		pending = append(strings.Split(filepath.ToSlash(target), "/"), pending...)
	}
	return nil
}

// display turns a host path inside the workspace into its workspace-rooted
// form.
func (w *Workspace) display(host string) string {
	rel, err := filepath.Rel(w.dir, host)
	if err != nil {
		return host
	}
	return Display(filepath.ToSlash(rel))
}

// pathError is a file system error with model-friendly text that keeps the
// underlying error for errors.Is.
type pathError struct {
	msg string
	err error
}

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return e.err }

// fsError turns an error from an os.Root operation on the path shown as
// disp into clear text. noun names what the path should be ("file",
// "directory").
func fsError(noun, disp string, err error) error {
	inner := unwrapPathError(err)
	switch {
	case errors.Is(inner, fs.ErrNotExist):
		return &pathError{fmt.Sprintf("%s %q not found", noun, disp), err}
	case isEscape(inner):
		return &pathError{fmt.Sprintf("path %q is outside the workspace", disp), errors.Join(ErrOutsideWorkspace, err)}
	case errors.Is(inner, syscall.ELOOP):
		return &pathError{fmt.Sprintf("path %q: too many levels of symbolic links", disp), err}
	case errors.Is(inner, syscall.EISDIR):
		return &pathError{fmt.Sprintf("%q is a directory", disp), err}
	case errors.Is(inner, syscall.ENOTDIR):
		return &pathError{fmt.Sprintf("%q: a parent is not a directory", disp), err}
	case errors.Is(inner, fs.ErrPermission):
		return &pathError{fmt.Sprintf("%q: permission denied", disp), err}
	}
	return &pathError{fmt.Sprintf("%q: %v", disp, inner), err}
}

// isEscape recognises os.Root's refusal to leave the root. Its sentinel is
// unexported, so the text is the only handle.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// openRegular opens rel (already resolved) through the root and makes sure
// it is a regular file. O_NONBLOCK keeps a FIFO from blocking the open.
func (w *Workspace) openRegular(rel string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	disp := Display(rel)
	if rel == "." {
		return nil, nil, &pathError{fmt.Sprintf("%q is a directory", disp), syscall.EISDIR}
	}
	f, err := w.root.OpenFile(rel, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, nil, fsError("file", disp, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fsError("file", disp, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, &pathError{fmt.Sprintf("%q is a directory", disp), syscall.EISDIR}
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &pathError{fmt.Sprintf("%q is not a regular file", disp), ErrInvalidPath}
	}
	return f, fi, nil
}
