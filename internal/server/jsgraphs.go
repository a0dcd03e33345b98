package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"agentserver/internal/config"
	"agentserver/internal/graphs"
	"agentserver/internal/jsworker"
)

// jsGraphsStartTimeout bounds starting the graph workers and loading the
// JavaScript graphs in them.
const jsGraphsStartTimeout = 2 * time.Minute

// startJSGraphs starts the Node graph workers of langgraph.json's
// JavaScript graphs; nil when it has none. The file's env is loaded first,
// so that the workers inherit it.
func startJSGraphs(cfg config.Config, log *slog.Logger, st jsworker.Store) (*jsworker.Pool, error) {
	file, err := filepath.Abs(cfg.GraphsFile)
	if err != nil {
		return nil, err
	}
	entries, nodeVersion, err := graphs.ReadCode(file)
	if err != nil || len(entries) == 0 {
		return nil, err // graphs.Load reports a bad file in its own words
	}
	if err := graphs.ApplyEnv(file); err != nil {
		return nil, err
	}
	specs := make(map[string]jsworker.Entry, len(entries))
	for _, e := range entries {
		specs[e.ID] = jsworker.Entry{Path: e.Path, Export: e.Export}
	}
	ctx, cancel := context.WithTimeout(context.Background(), jsGraphsStartTimeout)
	defer cancel()
	return jsworker.Start(ctx, jsworker.Options{
		NodeVersion: nodeVersion, ProjectDir: filepath.Dir(file), Graphs: specs,
		Workers: cfg.JSWorkers, Concurrency: cfg.JSWorkerConcurrency,
		CacheDir: filepath.Join(cfg.DataDir, "graph-worker"), Store: st, Log: log,
	})
}

// codeResolver builds the definitions of the JavaScript graphs the pool
// loaded.
func codeResolver(pool *jsworker.Pool) graphs.CodeResolver {
	if pool == nil {
		return nil
	}
	return func(e graphs.CodeEntry) (*graphs.Definition, error) {
		return graphs.CodeDefinition(e, pool.Runner(e.ID), pool.Drawing(e.ID), pool.StateKeys(e.ID))
	}
}

// GraphWorkers is the pool of Node graph workers (nil when langgraph.json
// has no JavaScript graphs), for tests and operations.
func (s *Server) GraphWorkers() *jsworker.Pool {
	return s.jsGraphs
}
