package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"agentserver/internal/config"
	"agentserver/internal/graph"
	"agentserver/internal/graphs"
	"agentserver/internal/httpapi"
	"agentserver/internal/jsworker"
	"agentserver/internal/threads"
)

// jsGraphsStartTimeout bounds starting the graph workers and loading the
// JavaScript graphs in them.
const jsGraphsStartTimeout = 2 * time.Minute

// startJSGraphs starts the Node graph workers of langgraph.json's
// JavaScript graphs, auth module (authModule) and custom routes' app
// (app); nil when it has none of them. The file's env is loaded first,
// so that the workers inherit it. apiURL is where the workers reach the
// server's API.
func startJSGraphs(cfg config.Config, log *slog.Logger, st jsworker.Store, apiURL string, authModule, app *config.Module) (*jsworker.Pool, error) {
	file, err := filepath.Abs(cfg.GraphsFile)
	if err != nil {
		return nil, err
	}
	entries, nodeVersion, err := graphs.ReadCode(file)
	if err != nil || len(entries) == 0 && authModule == nil && app == nil {
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
		Auth: workerModule(authModule), HTTPApp: workerModule(app),
		Workers: cfg.JSWorkers, Concurrency: cfg.JSWorkerConcurrency, WarmUpRuns: cfg.JSWarmUpRuns, NodeArgs: strings.Fields(cfg.JSNodeArgs),
		CacheDir: filepath.Join(cfg.DataDir, "graph-worker"), Store: st, Log: log, APIURL: apiURL, APIKey: cfg.APIKey,
	})
}

// workerModule is a module of langgraph.json as the workers load it.
func workerModule(m *config.Module) *jsworker.Entry {
	if m == nil {
		return nil
	}
	return &jsworker.Entry{Path: m.Path, Export: m.Export}
}

// codeResolver builds the definitions of the JavaScript graphs the pool
// loaded.
func codeResolver(pool *jsworker.Pool) graphs.CodeResolver {
	if pool == nil {
		return nil
	}
	return func(e graphs.CodeEntry) (*graphs.Definition, error) {
		return graphs.CodeDefinition(e, pool.Runner(e.ID), graphs.CodeLoad{Drawing: pool.Drawing(e.ID), StateKeys: pool.StateKeys(e.ID), Subgraphs: pool.Subgraphs(e.ID), Schemas: pool.Schemas(e.ID)})
	}
}

// watchJSGraphs reloads the JavaScript graphs when their project's files
// change (--watch), then redraws their definitions, until ctx ends.
func (s *Server) watchJSGraphs(ctx context.Context) {
	file, err := filepath.Abs(s.cfg.GraphsFile)
	if err != nil {
		s.log.Error("watch graphs", "err", err)
		return
	}
	resolve := codeResolver(s.jsGraphs)
	s.jsGraphs.Watch(ctx, s.reloadEvery, func() {
		entries, _, err := graphs.ReadCode(file)
		if err != nil {
			s.log.Error("watch graphs", "err", err)
			return
		}
		for _, e := range entries {
			d, err := resolve(e)
			if err == nil {
				err = s.Graphs.Replace(d)
			}
			if err != nil {
				s.log.Error("redraw reloaded graph", "graph_id", e.ID, "err", err)
			}
		}
	})
}

// graphUpdaters finds the graphs that apply state updates themselves: those
// run by a graph worker.
func graphUpdaters(reg *graphs.Registry) threads.StateUpdaters {
	return func(graphID string) graph.StateUpdater {
		def, ok := reg.Get(graphID)
		if !ok {
			return nil
		}
		up, _ := def.Worker.(graph.StateUpdater)
		return up
	}
}

// GraphWorkers is the pool of Node graph workers (nil when langgraph.json
// has no JavaScript graphs), for tests and operations.
func (s *Server) GraphWorkers() *jsworker.Pool {
	return s.jsGraphs
}

// customRoutes serves langgraph.json's http.app from the graph workers
// (nil: none).
func customRoutes(c config.HTTP, pool *jsworker.Pool) *httpapi.CustomRoutes {
	if c.App == nil || pool == nil || !pool.HasApp() {
		return nil
	}
	return &httpapi.CustomRoutes{App: appRoutes{pool}, Auth: c.CustomRouteAuth, Public: c.PublicRoutes}
}

// appRoutes is the workers' Hono app as the HTTP layer serves it.
type appRoutes struct{ *jsworker.Pool }

// AppRoutes implements httpapi.App.
func (a appRoutes) AppRoutes() []httpapi.AppRoute {
	routes := a.Routes()
	out := make([]httpapi.AppRoute, len(routes))
	for i, r := range routes {
		out[i] = httpapi.AppRoute{Method: r.Method, Path: r.Path}
	}
	return out
}
