package jsworker

import (
	"context"
	"errors"
	"hash/fnv"
	"io/fs"
	"path/filepath"
	"strings"
	"time"
)

// errClosing refuses a reload of a pool that is closing.
var errClosing = errors.New("graph workers are shutting down")

// Reload starts a fresh set of workers, which import the project's graphs
// anew, and once every one of them loaded without error sends new runs to
// them; the old workers take no new run and stop once their runs have
// ended. A project that fails to load leaves the old workers serving and
// returns the errors (one line per problem, as at start).
func (p *Pool) Reload(ctx context.Context) error {
	var fresh []*process
	var first *initResult
	discard := func() {
		for _, w := range fresh {
			w.stop(time.Second)
		}
	}
	for i := 0; i < p.opts.Workers; i++ {
		w, res, err := p.startProcess(ctx, p.newID())
		if err == nil {
			if err = loadErrors(res); err != nil {
				w.stop(time.Second)
			}
		}
		if err != nil {
			discard()
			return err
		}
		fresh = append(fresh, w)
		if first == nil {
			first = res
		}
	}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		discard()
		return errClosing
	}
	old := p.procs
	p.procs = nil
	for _, w := range old {
		p.retire(w)
	}
	p.loaded, p.info = first.Graphs, *first
	p.mu.Unlock()
	for _, w := range fresh {
		p.adopt(w)
	}
	p.log.Info("graph workers reloaded", "workers", len(fresh), "graphs", len(first.Graphs))
	return nil
}

// retire takes a worker out of service: it gets no new run, its exit is
// not replaced, and it stops once its runs have ended (release stops it
// then). p.mu is held.
func (p *Pool) retire(w *process) {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.retired = true
	if w.load == 0 {
		go w.stop(p.opts.CancelWait)
	}
}

// Watch reloads the graphs (Reload) whenever a file of the project that a
// graph may import changes, checking every interval until ctx ends: the
// files with a JavaScript, TypeScript or JSON extension outside
// node_modules, hidden folders and the workers' own folder. After each
// successful reload it calls reloaded; a failed one is logged, and tried
// again at the next change.
func (p *Pool) Watch(ctx context.Context, interval time.Duration, reloaded func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	seen := p.fingerprint()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := p.fingerprint()
		if now == seen {
			continue
		}
		seen = now
		p.log.Info("graph files changed; reloading the graphs", "project", p.opts.ProjectDir)
		if err := p.Reload(ctx); err != nil {
			if !errors.Is(err, errClosing) && ctx.Err() == nil {
				p.log.Error("reload graphs; the previous ones keep serving", "err", err)
			}
			continue
		}
		if reloaded != nil {
			reloaded()
		}
	}
}

// watchedExt are the extensions of the files Watch looks at.
var watchedExt = map[string]bool{".ts": true, ".mts": true, ".cts": true, ".tsx": true, ".js": true, ".mjs": true, ".cjs": true, ".jsx": true, ".json": true}

// fingerprint hashes the paths, sizes and modification times of the
// project's watched files.
func (p *Pool) fingerprint() uint64 {
	h := fnv.New64a()
	cache, _ := filepath.Abs(p.opts.CacheDir)
	_ = filepath.WalkDir(p.opts.ProjectDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file that vanished meanwhile: the next look sees it
		}
		if d.IsDir() {
			name := d.Name()
			if path != p.opts.ProjectDir && (name == "node_modules" || strings.HasPrefix(name, ".") || path == cache) {
				return filepath.SkipDir
			}
			return nil
		}
		if !watchedExt[strings.ToLower(filepath.Ext(path))] {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		h.Write([]byte(path))
		var b [16]byte
		for i, v := range []int64{info.Size(), info.ModTime().UnixNano()} {
			for j := 0; j < 8; j++ {
				b[i*8+j] = byte(v >> (8 * j))
			}
		}
		h.Write(b[:])
		return nil
	})
	return h.Sum64()
}
