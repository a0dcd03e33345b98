// Package version reports what build of the server is running: its version
// and the commit it was built from.
//
// The commit comes from the VCS stamp the go command writes into binaries
// built inside a git checkout (runtime/debug.ReadBuildInfo). Release builds
// may override both values at link time:
//
//	go build -ldflags "-X agentserver/internal/version.Version=v1.2.0 -X agentserver/internal/version.Commit=$(git rev-parse HEAD)" ./cmd/server
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Base is the version of a build that was given none at link time and was
// not built as a versioned module.
const Base = "0.1.0"

// Version and Commit, when set with -ldflags -X, win over the build info.
var (
	Version string
	Commit  string
)

// Info describes the running build.
type Info struct {
	Version string `json:"version"`
	// Commit is the VCS revision, or "unknown" when the build has none.
	Commit string `json:"commit"`
	// Modified is true when the working tree had uncommitted changes.
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

// Get returns the running build's Info.
func Get() Info {
	info := Info{Version: Base, Commit: "unknown", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if Version != "" {
		info.Version = Version
	}
	if Commit != "" {
		info.Commit, info.Modified = Commit, false
	}
	return info
}

// String is the one line --version prints, e.g.
// "agentserver 0.1.0 (commit 1b3fd09c…, modified; go1.26.8)".
func (i Info) String() string {
	dirty := ""
	if i.Modified {
		dirty = ", modified"
	}
	return fmt.Sprintf("agentserver %s (commit %s%s; %s)", i.Version, i.Commit, dirty, i.GoVersion)
}
