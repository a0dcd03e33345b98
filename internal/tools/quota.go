package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultWorkspaceQuota is the default bound on the bytes of regular files
// in one workspace (100 MiB).
const DefaultWorkspaceQuota = 100 << 20

// ErrQuotaExceeded reports a write that would take a workspace over its
// quota.
var ErrQuotaExceeded = errors.New("workspace quota exceeded")

// checkQuota reports ErrQuotaExceeded when writing size bytes to rel would
// take the workspace's regular files over quota (the file's current size is
// replaced, not added to). A quota of zero or less means the default. The
// walk does not follow symlinks and stops once the quota is passed.
func (w *Workspace) checkQuota(rel string, size int64, quota int64) error {
	if quota <= 0 {
		quota = DefaultWorkspaceQuota
	}
	total := size
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || p == rel {
			return nil // unreadable entries do not count; rel is replaced
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		total += info.Size()
		if total > quota {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("measure workspace: %w", err)
	}
	if total > quota {
		return fmt.Errorf("%w: writing %d bytes to %s would take the workspace's files over %d bytes; delete or shorten files first",
			ErrQuotaExceeded, size, Display(rel), quota)
	}
	return nil
}

// hostPathNote explains where a file written under an absolute path really
// is, when the path reads like a location on the host (its first directory
// exists there, e.g. "/tmp/x"): file paths are rooted at the workspace, so
// the file is not at that host path. It returns "" for other paths.
func (w *Workspace) hostPathNote(given, rel string) string {
	s := filepath.ToSlash(given)
	if !strings.HasPrefix(s, "/") || w.stripHostPrefix(s) != strings.TrimLeft(s, "/") {
		return "" // relative, or already the workspace's own host path
	}
	first, _, _ := strings.Cut(strings.TrimLeft(s, "/"), "/")
	if first == "" {
		return ""
	}
	if fi, err := os.Stat("/" + first); err != nil || !fi.IsDir() {
		return ""
	}
	return fmt.Sprintf(" (file paths are rooted at the workspace: this file is %s in the workspace, on the host %s, not the host's %s)",
		Display(rel), filepath.Join(w.dir, filepath.FromSlash(rel)), given)
}
