package jsworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"agentserver/internal/graph"
)

// Entry is one JavaScript graph of langgraph.json.
type Entry struct {
	// Path is the graph's module, absolute.
	Path string
	// Export names the module's export ("default" when the entry has no
	// ":name").
	Export string
}

// Options configure a Pool.
type Options struct {
	// Node is the node binary ("node": found on PATH).
	Node string
	// NodeArgs are given to node before the worker's script.
	NodeArgs []string
	// NodeVersion is langgraph.json's node_version ("" for none).
	NodeVersion string
	// ProjectDir is the project's folder (langgraph.json's): its
	// node_modules provide @langchain/langgraph.
	ProjectDir string
	// Graphs are the graphs to host, by graph id.
	Graphs map[string]Entry
	// Auth is langgraph.json's auth.path: a module exporting an Auth
	// instance of @langchain/langgraph-sdk/auth (nil: none).
	Auth *Entry
	// HTTPApp is langgraph.json's http.app: a module exporting a Hono app
	// that serves custom routes (nil: none).
	HTTPApp *Entry
	// Workers is the number of worker processes (default 1).
	Workers int
	// Concurrency bounds the runs one worker runs at once (default
	// DefaultConcurrency); more wait for a free slot.
	Concurrency int
	// CacheDir receives the worker's files (default: the user cache
	// directory, else the temporary directory).
	CacheDir string
	// Env is added to the server's environment for the workers.
	Env []string
	// Store serves the graphs' BaseStore (nil: store calls fail).
	Store Store
	// APIURL is the server's own base URL: LangGraph SDK clients in the
	// graphs that name no URL (deepagents' co-deployed async subagents)
	// reach it, and graphs read it as LANGGRAPH_API_URL. APIKey, when
	// set, is sent with those clients' requests.
	APIURL, APIKey string
	// Log receives the pool's records and the workers' output.
	Log *slog.Logger
	// PingInterval and PingTimeout detect a hung worker (defaults 5s and
	// 30s); InitTimeout bounds loading the graphs (default 60s).
	PingInterval, PingTimeout, InitTimeout time.Duration
	// CancelWait is how long a cancelled run waits for its worker to
	// confirm that the run stopped (default 2s).
	CancelWait time.Duration
	// WarmUpRuns is how many runs of an internal two-node graph a worker
	// makes in memory after loading the graphs and before taking runs
	// (within WarmUpBudget), so that V8 has compiled LangGraph.js's loop
	// when the first real run comes (0: none).
	WarmUpRuns int
}

// WarmUpBudget bounds the time a worker spends on its warm-up runs, so a
// busy machine does not hold back its start.
const WarmUpBudget = time.Second

// DefaultConcurrency is the default bound of runs per worker: a worker's
// runs share one event loop and mostly wait on models and tools.
const DefaultConcurrency = 64

func (o *Options) defaults() {
	if o.Node == "" {
		o.Node = "node"
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 5 * time.Second
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = 30 * time.Second
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = 60 * time.Second
	}
	if o.CancelWait <= 0 {
		o.CancelWait = 2 * time.Second
	}
	if o.CacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			o.CacheDir = filepath.Join(d, "agentserver")
		} else {
			o.CacheDir = filepath.Join(os.TempDir(), "agentserver")
		}
	}
}

// Pool starts, supervises and stops the Node graph workers of one project
// and runs its graphs on them.
type Pool struct {
	opts   Options
	log    *slog.Logger
	node   string
	script string
	loaded map[string]loadResult
	// Version facts of the first worker, for the start-up log.
	info initResult

	mu      sync.Mutex
	procs   []*process
	closing bool
	// changed is closed (and replaced) whenever a slot frees up or a
	// worker joins, waking runs that wait for one.
	changed chan struct{}
	nextID  int
	// replacing is done when no replacement is being started.
	replacing sync.WaitGroup

	// streams are the custom-route requests in flight, by stream id.
	streams   sync.Map
	streamSeq atomic.Int64
}

// ErrLoad reports graphs the workers could not load; its message has one
// line per problem, naming the graph, its file and the cause.
var ErrLoad = errors.New("cannot serve the JavaScript graphs")

// Start checks node, writes the worker's files, starts the workers and
// loads every graph in each. It fails when a graph does not load.
func Start(ctx context.Context, opts Options) (*Pool, error) {
	opts.defaults()
	p := &Pool{opts: opts, log: opts.Log.With("component", "jsworker"), changed: make(chan struct{})}
	version, err := CheckNode(ctx, opts.Node, opts.NodeVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLoad, err)
	}
	p.node = opts.Node
	if p.script, err = install(opts.CacheDir); err != nil {
		return nil, err
	}
	for i := 0; i < opts.Workers; i++ {
		w, res, err := p.startProcess(ctx, p.newID())
		if err != nil {
			p.Close(context.Background())
			return nil, err
		}
		p.adopt(w)
		if i == 0 {
			if err := loadErrors(res); err != nil {
				p.Close(context.Background())
				return nil, err
			}
			p.loaded, p.info = res.Graphs, *res
		}
	}
	p.log.Info("graph workers started", "workers", opts.Workers, "concurrency", opts.Concurrency, "node", version,
		"langgraph", p.info.LangGraph, "typescript", p.info.TypeScript, "graphs", len(p.loaded),
		"warm_up_runs", p.info.WarmUp.Runs, "warm_up_ms", p.info.WarmUp.MS)
	if p.info.WarmUp.Error != "" {
		p.log.Warn("graph worker warm-up stopped early: its first runs may be slower", "err", p.info.WarmUp.Error)
	}
	return p, nil
}

// loadErrors turns the worker's load errors into one error, a line each,
// sorted by graph id.
func loadErrors(res *initResult) error {
	if len(res.Errors) == 0 {
		return nil
	}
	errs := slices.Clone(res.Errors)
	sort.Slice(errs, func(i, j int) bool { return errs[i].Graph < errs[j].Graph })
	lines := make([]string, len(errs))
	for i, e := range errs {
		switch e.Graph {
		case moduleAuth, moduleHTTPApp:
			lines[i] = fmt.Sprintf("%s (%s): %s", e.Graph, e.File, e.Message)
		default:
			lines[i] = fmt.Sprintf("graph %q (%s): %s", e.Graph, e.File, e.Message)
		}
	}
	return fmt.Errorf("%w:\n%s", ErrLoad, strings.Join(lines, "\n"))
}

func (p *Pool) newID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	return p.nextID
}

func (p *Pool) wireGraphs() map[string]any {
	out := make(map[string]any, len(p.opts.Graphs))
	for id, e := range p.opts.Graphs {
		out[id] = map[string]string{"path": e.Path, "export": e.Export}
	}
	return out
}

// Names of the modules that load beside the graphs, as load errors name
// them.
const (
	moduleAuth    = "auth.path"
	moduleHTTPApp = "http.app"
)

// wireModule is a module of the project as init names it (nil: none).
func wireModule(e *Entry) any {
	if e == nil {
		return nil
	}
	return map[string]string{"path": e.Path, "export": e.Export}
}

// pick returns the live worker with the fewest runs, for a short call
// that takes no run slot (auth, custom routes), waiting while none is up.
func (p *Pool) pick(ctx context.Context) (*process, error) {
	return p.choose(ctx, false)
}

// adopt adds a started worker to the pool and starts watching it.
func (p *Pool) adopt(w *process) {
	p.mu.Lock()
	p.procs = append(p.procs, w)
	p.wake()
	p.mu.Unlock()
	go w.watch(p.opts.PingInterval, p.opts.PingTimeout)
}

// wake wakes the runs waiting for a slot; p.mu is held.
func (p *Pool) wake() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// exited is called once a worker's process has exited: its runs fail (they
// notice w.exited) and, unless the pool is closing or the worker was
// stopped, a replacement starts.
func (p *Pool) exited(w *process) {
	p.mu.Lock()
	p.procs = slices.DeleteFunc(p.procs, func(x *process) bool { return x == w })
	w.mu.Lock()
	stopped := w.stopping
	w.mu.Unlock()
	replace := !p.closing && !stopped
	if replace {
		p.replacing.Add(1)
	}
	p.mu.Unlock()
	if !replace {
		return
	}
	p.log.Error("graph worker exited; starting another", "worker", w.id, "err", w.exitErr)
	go p.replace()
}

// replace starts a worker in place of one that exited, retrying with a
// growing pause while it fails (a project edited into a broken state).
func (p *Pool) replace() {
	defer p.replacing.Done()
	pause := 100 * time.Millisecond
	for {
		p.mu.Lock()
		closing := p.closing
		p.mu.Unlock()
		if closing {
			return
		}
		w, res, err := p.startProcess(context.Background(), p.newID())
		if err == nil {
			if err = loadErrors(res); err != nil {
				w.stop(time.Second)
			}
		}
		if err == nil {
			p.adopt(w)
			p.log.Info("graph worker replaced", "worker", w.id)
			return
		}
		p.log.Error("start graph worker", "err", err, "retry_in", pause)
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Second)
	}
}

// acquire returns the worker with the fewest runs that has a free slot,
// and takes the slot, waiting for one while all are full (or being
// replaced).
func (p *Pool) acquire(ctx context.Context) (*process, error) {
	return p.choose(ctx, true)
}

// choose returns the live worker with the fewest runs, among those with a
// free slot when slot is set (and then takes the slot), waiting while
// there is none.
func (p *Pool) choose(ctx context.Context, slot bool) (*process, error) {
	for {
		p.mu.Lock()
		if p.closing {
			p.mu.Unlock()
			return nil, errors.New("graph workers are shutting down")
		}
		var best *process
		for _, w := range p.procs {
			if (!slot || w.load < p.opts.Concurrency) && (best == nil || w.load < best.load) {
				best = w
			}
		}
		if best != nil {
			if slot {
				best.load++
			}
			p.mu.Unlock()
			return best, nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// release gives back a slot taken by acquire; a retired worker stops
// with its last run.
func (p *Pool) release(w *process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.load--
	if w.retired && w.load == 0 {
		go w.stop(p.opts.CancelWait)
	}
	p.wake()
}

// Loaded reports the graph ids the workers loaded.
func (p *Pool) Loaded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.loaded))
	for id := range p.loaded {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Drawing is a graph's drawing as the worker made it at load (LangChain's
// Graph.toJSON(): nodes with id, type and data; edges with source, target,
// conditional); nil for a factory whose graph cannot be made without a
// run's config.
func (p *Pool) Drawing(graphID string) json.RawMessage {
	return p.load(graphID).Drawable
}

// load is what the workers found behind a graph entry.
func (p *Pool) load(graphID string) loadResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loaded[graphID]
}

// StateKeys lists a graph's state channels as the worker found them at
// load (empty for a factory that needs a run's config).
func (p *Pool) StateKeys(graphID string) []string {
	return p.load(graphID).StateKeys
}

// Schemas returns the JSON Schemas the worker derived at load from a
// graph's zod or StateSchema definitions, by kind ("input", "output",
// "state", "config"); empty for a graph built on Annotation.
func (p *Pool) Schemas(graphID string) map[string]map[string]any {
	return p.load(graphID).Schemas
}

// Subgraphs maps the namespaces of a graph's subgraphs ("node",
// "node|inner", as LangGraph names them) to their state channels, as the
// worker found them at load (none for a factory that needs a run's
// config).
func (p *Pool) Subgraphs(graphID string) map[string][]string {
	out := map[string][]string{}
	for ns, sg := range p.load(graphID).Subgraphs {
		out[ns] = sg.StateKeys
	}
	return out
}

// Draw asks a worker for a graph's drawing with its subgraphs expanded to
// depth xray (0: none, negative: all).
func (p *Pool) Draw(ctx context.Context, graphID string, xray int) (json.RawMessage, error) {
	w, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer p.release(w)
	var depth any = xray
	if xray < 0 {
		depth = true // LangGraph's "every level"
	}
	var out json.RawMessage
	err = w.c.call(ctx, "graph", map[string]any{"graph_id": graphID, "xray": depth}, &out)
	return out, err
}

// call sends one request for session s to the worker with the fewest
// runs, with s attached while it lasts.
func (p *Pool) call(ctx context.Context, s *session, method string, params, out any) error {
	w, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer p.release(w)
	w.attach(s)
	defer w.detach(s)
	return w.c.call(ctx, method, params, out)
}

// Runner returns the graph.Runner of one graph.
func (p *Pool) Runner(graphID string) graph.Runner {
	return &runner{pool: p, graphID: graphID}
}

// Close stops the workers: each is asked to exit and killed if it has not
// within a second or ctx's deadline. Runs still on them fail.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	procs := slices.Clone(p.procs)
	p.wake()
	p.mu.Unlock()
	grace := time.Second
	if d, ok := ctx.Deadline(); ok {
		grace = min(grace, max(time.Until(d), 0))
	}
	var wg sync.WaitGroup
	for _, w := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.stop(grace)
		}()
	}
	wg.Wait()
	p.replacing.Wait()
	return nil
}

// Kill kills worker process number i (in start order among the live ones)
// with SIGKILL, as a crash would; for tests of the crash rules.
func (p *Pool) Kill(i int) (pid int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i >= len(p.procs) {
		return 0, fmt.Errorf("no worker %d", i)
	}
	w := p.procs[i]
	return w.cmd.Process.Pid, w.cmd.Process.Kill()
}

// Workers reports the pids of the live workers.
func (p *Pool) Workers() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int, len(p.procs))
	for i, w := range p.procs {
		out[i] = w.cmd.Process.Pid
	}
	return out
}
