package jsworker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/graph"
)

// process is one running Node graph worker.
type process struct {
	id   int
	pool *Pool
	cmd  *exec.Cmd
	c    *conn
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[uuid.UUID]*session
	// ready are the sessions that were sent checkpoints since the reader
	// last paused (touched by the reader only).
	ready    map[*session]struct{}
	load     int  // runs assigned to it (guarded by the pool's mu)
	retired  bool // replaced by a reload (guarded by the pool's mu)
	stopping bool // stopped on purpose: its exit is not a crash

	// exited is closed once the process has exited and its connection is
	// closed; exitErr is set before.
	exited  chan struct{}
	exitErr error
	// output is done when the worker's stdout and stderr are drained.
	output sync.WaitGroup
}

// initResult is the worker's answer to init.
type initResult struct {
	Protocol   int                   `json:"protocol"`
	Node       string                `json:"node"`
	LangGraph  string                `json:"langgraph"`
	TypeScript string                `json:"typescript"`
	Graphs     map[string]loadResult `json:"graphs"`
	Errors     []loadError           `json:"errors"`
	// Auth is what the auth module has (nil: none loaded).
	Auth *authLoad `json:"auth"`
	// HTTP is what the custom routes' app serves (nil: none loaded).
	HTTP *appLoad `json:"http"`
	// WarmUp is what the warm-up did (Options.WarmUpRuns).
	WarmUp struct {
		Runs int `json:"runs"`
		MS   int `json:"ms"`
		// Error is what stopped the warm-up early ("" when nothing did).
		Error string `json:"error"`
	} `json:"warm_up"`
}

// loadResult is what the worker found behind one graph entry.
type loadResult struct {
	// Kind is "compiled" (a compiled graph, or a StateGraph compiled at
	// load) or "factory" (a function called with each run's config).
	Kind     string          `json:"kind"`
	Drawable json.RawMessage `json:"drawable"`
	// StateKeys are the graph's state channels (its output).
	StateKeys []string `json:"state_keys"`
	// Subgraphs are the graph's subgraphs by namespace ("node",
	// "node|inner").
	Subgraphs map[string]struct {
		StateKeys []string `json:"state_keys"`
	} `json:"subgraphs"`
	// Schemas are the JSON Schemas derived from the graph's zod or
	// StateSchema definitions (input, output, state, config), when it has
	// them.
	Schemas map[string]map[string]any `json:"schemas"`
}

// loadError is one graph the worker could not load.
type loadError struct {
	Graph   string `json:"graph"`
	File    string `json:"file"`
	Message string `json:"message"`
}

// startProcess starts worker number id and initializes it with the pool's
// graphs.
func (p *Pool) startProcess(ctx context.Context, id int) (*process, *initResult, error) {
	fds, err := socketPair()
	if err != nil {
		return nil, nil, fmt.Errorf("graph worker socket: %w", err)
	}
	child := os.NewFile(uintptr(fds[0]), "graph-worker-child")
	parent := os.NewFile(uintptr(fds[1]), "graph-worker-parent")
	nc, err := net.FileConn(parent)
	parent.Close()
	if err != nil {
		child.Close()
		return nil, nil, fmt.Errorf("graph worker socket: %w", err)
	}
	cmd := exec.Command(p.node, p.opts.NodeArgs...)
	cmd.Args = append(cmd.Args, p.script)
	cmd.Dir = p.opts.ProjectDir
	cmd.Env = append(os.Environ(), p.opts.Env...)
	cmd.ExtraFiles = []*os.File{child} // fd 3
	cmd.SysProcAttr = childAttr()
	w := &process{id: id, pool: p, cmd: cmd, c: newConn(nc), sessions: map[uuid.UUID]*session{}, ready: map[*session]struct{}{}, exited: make(chan struct{}),
		log: p.log.With("worker", id)}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		child.Close()
		nc.Close()
		return nil, nil, fmt.Errorf("start graph worker: %w", err)
	}
	child.Close()
	w.output.Add(2)
	go w.pipeLog(stdout, "stdout")
	go w.pipeLog(stderr, "stderr")
	go w.serve()
	w.log.Debug("graph worker started", "pid", cmd.Process.Pid)

	var res initResult
	ictx, cancel := context.WithTimeout(ctx, p.opts.InitTimeout)
	defer cancel()
	init := map[string]any{"project_dir": p.opts.ProjectDir, "graphs": p.wireGraphs(), "api_url": p.opts.APIURL, "api_key": p.opts.APIKey,
		"auth": wireModule(p.opts.Auth), "http_app": wireModule(p.opts.HTTPApp),
		"warm_up_runs": p.opts.WarmUpRuns, "warm_up_ms": WarmUpBudget.Milliseconds()}
	if err := w.c.call(ictx, "init", init, &res); err != nil {
		w.kill()
		<-w.exited
		if w.exitErr != nil {
			err = fmt.Errorf("%w (%v)", err, w.exitErr)
		}
		return nil, nil, fmt.Errorf("graph worker did not start: %w", err)
	}
	if res.Protocol != protocolVersion {
		w.kill()
		<-w.exited
		return nil, nil, fmt.Errorf("graph worker speaks protocol %d, not %d", res.Protocol, protocolVersion)
	}
	return w, &res, nil
}

// pipeLog copies one of the worker's output streams to the server's log,
// a record per line.
func (w *process) pipeLog(r io.Reader, stream string) {
	defer w.output.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		level := slog.LevelInfo
		if stream == "stderr" {
			level = slog.LevelWarn
		}
		w.log.Log(context.Background(), level, "graph worker output", "stream", stream, "line", sc.Text())
	}
}

// serve reads the worker's messages until its connection ends, then waits
// for the process and tells the pool.
func (w *process) serve() {
	err := w.c.readLoop(w.handle, w.handReady)
	if err != nil {
		w.log.Error("graph worker connection", "err", err)
		w.kill()
	}
	w.output.Wait()
	werr := w.cmd.Wait()
	if werr == nil {
		werr = errors.New("exited")
	}
	w.exitErr = werr
	close(w.exited)
	w.pool.exited(w)
}

// kill ends the process at once.
func (w *process) kill() {
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
	w.c.close()
}

// stop asks the worker to exit (its end of the connection closes, on
// which it exits) and kills it if it has not after grace.
func (w *process) stop(grace time.Duration) {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.c.close()
	select {
	case <-w.exited:
	case <-time.After(grace):
		w.kill()
		<-w.exited
	}
}

// watch pings the worker every interval and kills it when a ping goes
// unanswered for timeout (a hung event loop): the pool then replaces it.
func (w *process) watch(interval, timeout time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.exited:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := w.c.call(ctx, "ping", struct{}{}, nil)
		cancel()
		if err != nil && !errors.Is(err, errConnClosed) {
			w.log.Error("graph worker stopped answering; replacing it", "err", err, "timeout", timeout)
			w.kill()
			return
		}
	}
}

// handle serves one request or notification of the worker. Requests that
// change a run's state are handled here, in order; those that read storage
// run on their own goroutine so that one slow read holds up no other run.
func (w *process) handle(m message) {
	var head struct {
		RunID uuid.UUID `json:"run_id"`
	}
	_ = json.Unmarshal(m.Params, &head)
	switch m.Method {
	case "hello":
		return
	case "http.head", "http.body":
		w.pool.httpPart(m.Method, m.Params)
		return
	}
	s := w.session(head.RunID)
	if s == nil {
		if m.ID != 0 {
			w.c.reply(m.ID, nil, &WireError{Name: "RunEnded", Message: fmt.Sprintf("run %s is not running on this worker", head.RunID)})
		}
		return
	}
	switch m.Method {
	case "event":
		s.event(m.Params)
	case "snapshot":
		s.snapshot(m.Params)
		w.ready[s] = struct{}{}
	case "checkpoint.put":
		w.refuse(s, s.put(m.Params))
		w.ready[s] = struct{}{}
	case "checkpoint.putWrites":
		w.refuse(s, s.putWrites(m.Params))
	case "checkpoint.get":
		go func() { r, err := s.getTuple(m.Params); w.c.reply(m.ID, r, err) }()
	case "checkpoint.list":
		go func() { r, err := s.list(m.Params); w.c.reply(m.ID, r, err) }()
	case "store.batch":
		go func() { r, err := s.storeBatch(m.Params); w.c.reply(m.ID, r, err) }()
	default:
		if m.ID != 0 {
			w.c.reply(m.ID, nil, &WireError{Name: "MethodNotFound", Message: "unknown method " + m.Method})
		}
	}
}

// handReady hands the sinks the checkpoints that arrived since the reader
// last paused: the checkpoints of one write of the worker (a burst of
// steps, and often the run's end with them) are handed together, so that
// those a run's end follows go with its last commit (session.handReady).
func (w *process) handReady() {
	for s := range w.ready {
		s.handReady()
		delete(w.ready, s)
	}
}

// refuse records the refusal of a write the worker sent as a
// notification (nil: none) and cancels the run in the worker, which then
// fails with it (runner.Run).
func (w *process) refuse(s *session, err error) {
	if err == nil || !s.refuse(err) {
		return
	}
	_ = w.c.notify("cancel", map[string]string{"run_id": s.in.RunID.String()})
}

func (w *process) session(runID uuid.UUID) *session {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sessions[runID]
}

func (w *process) attach(s *session) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sessions[s.in.RunID] = s
}

func (w *process) detach(s *session) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.sessions, s.in.RunID)
}

// crashError describes the worker's exit to the runs it took with it.
func (w *process) crashError() error {
	return &workerLost{exit: w.exitErr}
}

// workerLost is the error of a run whose worker exited under it. It wraps
// graph.ErrExecutorLost: the run engine retries such a run from its last
// checkpoint on another worker.
type workerLost struct{ exit error }

func (e *workerLost) Error() string {
	return fmt.Sprintf("the graph worker running this run exited (%v)", e.exit)
}

// ErrorName is the name a run that is not retried again records.
func (e *workerLost) ErrorName() string { return "WorkerCrashed" }

func (e *workerLost) Unwrap() error { return graph.ErrExecutorLost }
