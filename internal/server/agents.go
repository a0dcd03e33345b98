package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"agentserver/internal/agent"
	"agentserver/internal/asynctasks"
	"agentserver/internal/channels"
	"agentserver/internal/config"
	"agentserver/internal/graph"
	"agentserver/internal/graphs"
	"agentserver/internal/mcptools"
	"agentserver/internal/storage"
	"agentserver/internal/subagents"
	"agentserver/internal/supervisor"
	"agentserver/internal/tools"
)

// agentRuntime holds what agent graphs need from the server and that only
// exists once the services are built: the in-process transport and the
// completion notifier of async subagents, bound after start-up wiring.
type agentRuntime struct {
	local    *asynctasks.Local
	notifier *supervisor.Notifier
	// mcp owns the MCP client sessions (and stdio processes) of agents.
	mcp *mcptools.Pool
	// localGraphs are graph ids subagents (async, or task types that run
	// a graph) expect on this server, collected while langgraph.json loads
	// and checked once it has.
	localGraphs map[string]graphNeed
	// served, set once the graphs are loaded, checks those ids directly
	// when a spec is reloaded.
	served func(graphID string) bool
	// resolve compiles agent spec files; reloads use it too.
	resolve graphs.SourceResolver

	mu sync.Mutex // guards supervisors (a reload replaces one)
	// supervisors are the supervisor middlewares by graph id.
	supervisors map[string]*supervisor.Supervisor
	// env is what task-tool subagents need from the server.
	env subagents.Env
}

// loadGraphs reads langgraph.json, compiling agent specs (with their async
// subagents) on the way and describing JavaScript graphs with code, and
// checks that co-deployed subagent graphs exist.
func loadGraphs(cfg config.Config, log *slog.Logger, clock func() time.Time, reducers *channels.Registry, db *storage.DB, code graphs.CodeResolver) (*graphs.Registry, *agentRuntime, error) {
	rt := &agentRuntime{local: &asynctasks.Local{}, notifier: supervisor.NewNotifier(log, clock), localGraphs: map[string]graphNeed{}, supervisors: map[string]*supervisor.Supervisor{}, mcp: mcptools.NewPool(log)}
	workspaces := tools.Workspaces{Root: filepath.Join(cfg.DataDir, "workspaces")}
	models := agent.NewModelFactory(os.Getenv, log)
	builtins := tools.Builtins(tools.Options{Shell: cfg.EnableShell, WorkspaceQuota: int64(cfg.WorkspaceQuota)})
	var reg *graphs.Registry // set once langgraph.json is loaded
	exec := &graph.Executor{Reducers: reducers}
	rt.env = subagents.Env{DB: db, Models: models, Tools: builtins, Workspace: workspaces.Dir,
		Admission: subagents.NewAdmission(cfg.MaxSubagents), Live: &subagents.Live{}, Shell: cfg.EnableShell,
		Graphs: func(graphID string) graph.Runner {
			if reg == nil {
				return nil
			}
			if def, ok := reg.Get(graphID); ok {
				return def.Runner(exec)
			}
			return nil
		}}
	rt.resolve = agent.Resolver(agent.Options{
		Models:    models,
		Tools:     builtins,
		Workspace: workspaces.Dir,
		Reducers:  reducers,
		Extend:    rt.middlewaresFor,
		MCP:       rt.mcp,
		Log:       log,
	})
	loaded, err := graphs.LoadWith(cfg.GraphsFile, graphs.Sources{Spec: rt.resolve, Code: code})
	if err != nil {
		return nil, nil, err
	}
	reg = loaded
	for _, id := range slices.Sorted(maps.Keys(rt.localGraphs)) { // sorted: the same error every start
		if _, ok := reg.Get(id); !ok {
			return nil, nil, rt.localGraphs[id].notServed(id)
		}
	}
	rt.served = func(graphID string) bool { _, ok := reg.Get(graphID); return ok }
	return reg, rt, nil
}

// graphNeed is an agent spec's need of a graph on this server: as an
// in-process async subagent, or as a task subagent type (task).
type graphNeed struct {
	spec string
	task bool
}

func (n graphNeed) notServed(graph string) error {
	if n.task {
		return fmt.Errorf("%w: agent %q: subagent type graph %q is not served by this server (add it to langgraph.json)", graphs.ErrInvalidConfig, n.spec, graph)
	}
	return fmt.Errorf("%w: agent %q: async subagent graph %q is not served by this server (add it to langgraph.json or give the subagent a url)", graphs.ErrInvalidConfig, n.spec, graph)
}

// needLocalGraph records that an agent spec runs graph on this server:
// while langgraph.json loads the check waits for the whole set of graphs;
// on a reload it is made at once.
func (rt *agentRuntime) needLocalGraph(n graphNeed, graph string) error {
	if rt.served == nil {
		rt.localGraphs[graph] = n
		return nil
	}
	if !rt.served(graph) {
		return n.notServed(graph)
	}
	return nil
}

// middlewaresFor builds the middlewares of spec sections the agent package
// leaves to the server: the task tool and async subagents.
func (rt *agentRuntime) middlewaresFor(graphID string, spec *agent.Spec) ([]agent.Middleware, error) {
	var out []agent.Middleware
	if len(spec.Subagents) > 0 && string(spec.Subagents) != "null" {
		cfg, err := subagents.ParseConfig(spec.Subagents)
		if err != nil {
			return nil, err
		}
		for _, id := range cfg.Graphs() {
			if err := rt.needLocalGraph(graphNeed{spec: spec.Name, task: true}, id); err != nil {
				return nil, err
			}
		}
		d, err := subagents.New(cfg, spec, rt.env, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	sup, err := rt.supervisorFor(graphID, spec)
	return append(out, sup...), err
}

// supervisorFor builds the supervisor middleware of a spec that lists async
// subagents: no url means this server (in-process), a url means HTTP, and
// protocol a2a means A2A at url.
func (rt *agentRuntime) supervisorFor(graphID string, spec *agent.Spec) ([]agent.Middleware, error) {
	if spec.AsyncSubagents == nil {
		rt.setSupervisor(graphID, nil) // a reload may have removed them
		return nil, nil
	}
	cfg := supervisor.Config{Prompt: spec.AsyncSystemPrompt, NotifyOnCompletion: spec.NotifyOnCompletion, CancelOnThreadDelete: spec.CancelTasksOnThreadDelete}
	for _, a := range *spec.AsyncSubagents {
		cfg.Subagents = append(cfg.Subagents, supervisor.Subagent{Name: a.Name, Description: a.Description, GraphID: a.GraphID, URL: a.URL, Headers: a.Headers, Protocol: a.Protocol, ForwardCredentials: a.ForwardCredentials})
		if a.URL != "" || a.Protocol != "" {
			continue
		}
		if err := rt.needLocalGraph(graphNeed{spec: spec.Name}, a.GraphID); err != nil {
			return nil, err
		}
	}
	sup, err := supervisor.New(cfg, func(sub supervisor.Subagent) (asynctasks.Transport, error) {
		switch {
		case sub.Protocol == supervisor.ProtocolA2A:
			return asynctasks.NewA2A(asynctasks.HTTPConfig{URL: sub.URL, Headers: sub.Headers, ForwardCredentials: sub.ForwardCredentials})
		case sub.URL == "":
			return rt.local, nil
		}
		return asynctasks.NewHTTP(asynctasks.HTTPConfig{URL: sub.URL, Headers: sub.Headers, ForwardCredentials: sub.ForwardCredentials})
	}, rt.notifier)
	if err != nil {
		return nil, err
	}
	rt.setSupervisor(graphID, sup)
	return []agent.Middleware{sup}, nil
}

// setSupervisor records the supervisor of a graph's current spec (nil: none).
func (rt *agentRuntime) setSupervisor(graphID string, sup *supervisor.Supervisor) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if sup == nil {
		delete(rt.supervisors, graphID)
		return
	}
	rt.supervisors[graphID] = sup
}

// threadDeleted lets the supervisor of a deleted thread cancel its tasks.
func (rt *agentRuntime) threadDeleted(ctx context.Context, graphID string, values map[string]any) {
	rt.mu.Lock()
	sup := rt.supervisors[graphID]
	rt.mu.Unlock()
	if sup != nil {
		sup.ThreadDeleted(ctx, values)
	}
}
