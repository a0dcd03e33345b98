package graphs

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"
)

// fileStamp identifies a version of a file cheaply: its size and
// modification time. The zero stamp stands for a file that cannot be read.
type fileStamp struct {
	size    int64
	modNano int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{size: fi.Size(), modNano: fi.ModTime().UnixNano()}
}

// Reloader recompiles the graphs of a registry that come from spec files
// when their file changes (Run polls the files' size and modification time)
// or when asked to (ReloadAll, on SIGHUP). A reloaded definition replaces
// the old one in the registry, so new runs and the assistants' graph info
// use it while runs already executing keep the version they started with.
// A file that fails to compile leaves the old definition in place and is
// reported by one error log line naming the file and the reason; it is tried
// again when it changes again. The set of graphs (langgraph.json) is not
// reloaded: a change to it is logged as a warning that asks for a restart.
type Reloader struct {
	reg     *Registry
	resolve SourceResolver
	log     *slog.Logger

	mu sync.Mutex // serialises checks, so a file is compiled by one at a time
	// seen is the stamp of each spec graph's file when it was last read.
	seen map[string]fileStamp
	// configSeen is the stamp of langgraph.json when it was last looked at.
	configSeen fileStamp
}

// NewReloader returns a Reloader of reg's spec-file graphs; resolve is the
// resolver reg was loaded with.
func NewReloader(reg *Registry, resolve SourceResolver, log *slog.Logger) *Reloader {
	w := &Reloader{reg: reg, resolve: resolve, log: log, seen: map[string]fileStamp{}, configSeen: reg.fileStamp}
	for _, d := range reg.specGraphs() {
		w.seen[d.ID] = d.stamp
	}
	return w
}

// Run checks the spec files every interval until ctx ends.
func (w *Reloader) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.ReloadChanged()
		}
	}
}

// ReloadChanged reloads the graphs whose spec file changed since it was last
// read.
func (w *Reloader) ReloadChanged() {
	w.check(false)
}

// ReloadAll reloads every spec-file graph, changed or not.
func (w *Reloader) ReloadAll() {
	w.check(true)
}

func (w *Reloader) check(all bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checkConfig()
	for _, d := range w.reg.specGraphs() {
		stamp := stampOf(d.File)
		if !all && stamp == w.seen[d.ID] {
			continue
		}
		w.seen[d.ID] = stamp
		nd, err := compileSpec(d.ID, d.Source, d.File, w.resolve)
		if err != nil {
			w.log.Error("agent spec not reloaded; the previous version stays in use", "graph", d.ID, "file", d.File, "err", err.Error())
			continue
		}
		w.seen[d.ID] = nd.stamp
		w.reg.replace(nd)
		w.log.Info("agent spec reloaded", "graph", d.ID, "file", d.File)
	}
}

// checkConfig warns once per change that an edit of langgraph.json needs a
// restart.
func (w *Reloader) checkConfig() {
	if w.reg.file == "" {
		return
	}
	if stamp := stampOf(w.reg.file); stamp != w.configSeen {
		w.configSeen = stamp
		w.log.Warn("graph configuration changed; restart the server to apply it (agent spec files reload by themselves)", "file", w.reg.file)
	}
}
