package subagents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"agentserver/internal/agent"
	"agentserver/internal/channels"
	"agentserver/internal/errdefs"
	"agentserver/internal/graph"
	"agentserver/internal/llm"
	"agentserver/internal/metrics"
	"agentserver/internal/storage"
	"agentserver/internal/tools"
)

// ToolName is the name of the delegation tool.
const ToolName = "task"

// briefLimit bounds result and error briefs in tool message metadata.
const briefLimit = 2000

// limitCapped is the stop reason of a task call refused by a cap.
const limitCapped = "limit_capped"

// Causes of a subagent's end other than its own completion.
var (
	errTimedOut   = errors.New("subagent timed out")
	errTokenCap   = errors.New("subagent token budget exhausted")
	errUserCancel = errors.New("subagent cancelled")
)

// Env is what delegation needs from the server.
type Env struct {
	DB        *storage.DB
	Models    agent.ModelFactory
	Tools     map[string]tools.Tool
	Workspace func(threadID string) (string, error)
	Admission *Admission
	Live      *Live
	Shell     bool
	// Graphs returns what runs a served graph (nil when it is not
	// served), for types that run a graph (Type.GraphID).
	Graphs func(graphID string) graph.Runner
}

// Delegation is the agent middleware that adds the task tool.
type Delegation struct {
	cfg    Config
	env    Env
	reg    *registry
	parent *agent.Spec
	depth  int
}

// New builds the middleware for a parent agent spec.
func New(cfg Config, parent *agent.Spec, env Env, depth int) (*Delegation, error) {
	if cfg.MaxPerResponse <= 0 {
		cfg.MaxPerResponse = DefaultMaxPerResponse
	}
	if cfg.MaxPerRun <= 0 {
		cfg.MaxPerRun = DefaultMaxPerRun
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = 1
	}
	reg, err := newRegistry(cfg, env.Shell)
	if err != nil {
		return nil, err
	}
	return &Delegation{cfg: cfg, env: env, reg: reg, parent: parent, depth: depth}, nil
}

// Name identifies the middleware.
func (d *Delegation) Name() string { return "subagents" }

// Tools adds the task tool.
func (d *Delegation) Tools() []tools.Tool { return []tools.Tool{&taskTool{d}} }

// SystemPrompt renders the subagent section with the same limits the
// middleware enforces.
func (d *Delegation) SystemPrompt(graph.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Subagents (the task tool)\n\nDelegate a self-contained sub-task with task(description, prompt, subagent_type) only when it clearly pays off: work that runs in parallel, needs a specialist, or would flood your context. Doing it yourself is the default.\n\n")
	fmt.Fprintf(&b, "HARD LIMITS: at most %d task calls per response (extra calls are not run; each gets a message saying so) and at most %d task calls per run.\n", d.cfg.MaxPerResponse, d.cfg.MaxPerRun)
	b.WriteString("The task tool waits for the subagent and returns its final answer; there is nothing to poll.\n\nAvailable subagent types:\n")
	for _, n := range d.reg.names {
		t := d.reg.types[n]
		fmt.Fprintf(&b, "- %s: %s\n", n, firstLine(t.Description))
	}
	return strings.TrimRight(b.String(), "\n")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// BeforeTools enforces the per-response and per-run caps: calls past a cap
// are answered with a tool message that says so instead of running.
func (d *Delegation) BeforeTools(ctx context.Context, batch *agent.ToolBatch) error {
	earlier := priorTaskCalls(batch.State)
	inResponse := 0
	for _, c := range batch.Calls {
		if c.Name != ToolName {
			continue
		}
		inResponse++
		var why string
		switch {
		case inResponse > d.cfg.MaxPerResponse:
			why = fmt.Sprintf("Task not run: at most %d task calls are allowed per response; this was call %d. Re-issue it in a later response if it is still needed.", d.cfg.MaxPerResponse, inResponse)
		case earlier+inResponse > d.cfg.MaxPerRun:
			why = fmt.Sprintf("Task not run: the limit of %d task calls per run is reached. Finish the work yourself.", d.cfg.MaxPerRun)
		}
		if why != "" {
			batch.Answered[c.ID] = llm.Message{
				"type": "tool", "id": uuid.NewString(), "tool_call_id": c.ID, "name": ToolName, "content": why, "status": "error",
				"additional_kwargs": map[string]any{"subagent_status": "failed", "subagent_stop_reason": limitCapped}, "response_metadata": map[string]any{},
			}
		}
	}
	return nil
}

// priorTaskCalls counts task tool messages since the last human message:
// the delegations already made in this run. Calls refused by a cap were
// not delegations and do not count.
func priorTaskCalls(st graph.State) int {
	msgs, _ := st[channels.MessagesChannel].([]any)
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["type"] == "human" {
			break
		}
		if m["type"] == "tool" && m["name"] == ToolName {
			if kw, _ := m["additional_kwargs"].(map[string]any); kw["subagent_stop_reason"] == limitCapped {
				continue
			}
			n++
		}
	}
	return n
}

// answered reports whether the state holds a tool message for the call id.
func answered(st map[string]any, toolCall string) bool {
	msgs, _ := st[channels.MessagesChannel].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, _ := msgs[i].(map[string]any); m["type"] == "tool" && m["tool_call_id"] == toolCall {
			return true
		}
	}
	return false
}

// runContextKey carries the parent run's context (the run's "context"
// object, where per-run model and prompt overrides live) from WrapTool to
// the task tool, which tools.Call does not give it.
type runContextKey struct{}

// WrapTool hands the parent run's context to the task tool.
func (d *Delegation) WrapTool(ctx context.Context, call *agent.ToolCall, next agent.ToolHandler) (tools.Result, error) {
	if call.Name == ToolName && call.Runtime != nil && call.Runtime.Context != nil {
		ctx = context.WithValue(ctx, runContextKey{}, call.Runtime.Context)
	}
	return next(ctx, call)
}

func runContextOf(ctx context.Context) map[string]any {
	m, _ := ctx.Value(runContextKey{}).(map[string]any)
	return m
}

type taskTool struct{ d *Delegation }

// CancelledAnswer is the task tool's answer to a call whose parent run was
// cancelled before the subagent finished.
func (t *taskTool) CancelledAnswer() string {
	return "Task cancelled by user. Error: the parent run was cancelled"
}

func (t *taskTool) Spec() llm.ToolSpec {
	d := t.d
	return llm.ToolSpec{
		Name: ToolName,
		Description: fmt.Sprintf("Delegate a sub-task to a subagent that works in its own context and returns its final answer. At most %d calls per response and %d per run. Available types: %s.",
			d.cfg.MaxPerResponse, d.cfg.MaxPerRun, d.reg.available()),
		Parameters: map[string]any{"type": "object", "required": []string{"description", "prompt", "subagent_type"}, "properties": map[string]any{
			"description":   map[string]any{"type": "string", "description": "A short (3-5 word) label for the task."},
			"prompt":        map[string]any{"type": "string", "description": "The complete task for the subagent, with all the context it needs."},
			"subagent_type": map[string]any{"type": "string", "description": "The subagent type to use: " + d.reg.available() + "."},
		}},
	}
}

// outcome is how one subagent ended.
type outcome struct {
	status     string // completed, failed, cancelled, timed_out
	stopReason string
	result     string
	err        string
	model      string
	usage      map[string]any
}

func (t *taskTool) Call(ctx context.Context, c tools.Call) (tools.Result, error) {
	d := t.d
	desc, _ := c.Args["description"].(string)
	prompt, _ := c.Args["prompt"].(string)
	kind, _ := c.Args["subagent_type"].(string)
	conf, _ := c.Config["configurable"].(map[string]any)
	runID, _ := uuid.Parse(fmt.Sprint(conf["run_id"]))
	threadID, _ := uuid.Parse(c.ThreadID)
	emit := c.Emit
	if emit == nil {
		emit = func(any) {}
	}
	// A retried parent run reuses what finished before the crash. A call
	// whose id already has an answer in the state is not a retry: the
	// provider reused an id (some number calls per response).
	if !answered(c.State, c.ID) {
		if prev, ok := d.previous(ctx, runID, c.ID); ok {
			return resultOf(prev), nil
		}
	}
	typ, ok := d.reg.get(kind)
	if !ok {
		o := outcome{status: "failed", err: fmt.Sprintf("Unknown subagent type %q. Available types: %s", kind, d.reg.available())}
		return resultOf(o), nil
	}
	model := d.modelName(typ, c.Config, runContextOf(ctx))
	// The subagent can be cancelled alone from here on, queued or running.
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if d.env.Live != nil {
		defer d.env.Live.add(runID, c.ID, cancel)()
	}
	var o outcome
	var steps []map[string]any
	release, err := d.admit(sctx, c.ID, desc, emit)
	if err != nil {
		o = outcome{status: "cancelled", err: "Cancelled before it started: " + err.Error(), model: model}
		if errors.Is(err, errUserCancel) {
			o.err = "Cancelled by user before it started"
		}
	} else {
		started := time.Now().UTC()
		d.persist(storage.SubagentExecution{ParentRunID: runID, ThreadID: threadID, ToolCallID: c.ID, Type: kind, Description: desc, Status: "running", Model: model, StartedAt: started})
		emit(map[string]any{"type": "task_started", "task_id": c.ID, "description": desc, "model_name": model})
		// The slot is given back after the terminal event, so that the
		// next subagent's task_started follows this one's end.
		defer release()
		defer metrics.SubagentRunning()()
		o, steps = d.execute(sctx, ctx, c, typ, model, prompt, runID, threadID, emit)
	}
	rec := recorded(ctx, o)
	metrics.SubagentFinished(rec.status, rec.stopReason)
	d.record(runID, threadID, c.ID, kind, desc, rec, steps)
	event := map[string]any{"type": "task_" + o.status, "task_id": c.ID, "usage": o.usage, "model_name": model}
	if o.status == "completed" {
		event["result"] = o.result
	} else {
		event["error"] = o.err
	}
	emit(event)
	return resultOf(o), nil
}

// admit waits for an admission slot, announcing the wait with task_queued.
func (d *Delegation) admit(ctx context.Context, taskID, desc string, emit func(any)) (func(), error) {
	if d.env.Admission == nil {
		return func() {}, nil
	}
	unqueued := func() {}
	defer func() { unqueued() }()
	return d.env.Admission.Acquire(ctx, func(pos int) {
		unqueued = metrics.SubagentQueued()
		emit(map[string]any{"type": "task_queued", "task_id": taskID, "description": desc, "position": pos})
	})
}

// recorded is the outcome as the execution record keeps it: a subagent
// stopped because its parent run stopped (a cancel, or a shutdown that will
// resume the parent) is interrupted, not cancelled by the user, so that a
// resumed parent reports it as cut off instead of as a user's decision.
func recorded(parent context.Context, o outcome) outcome {
	if o.status == "cancelled" && parent.Err() != nil {
		o.status = "interrupted"
	}
	return o
}

// modelName is the model a subagent of type t runs with: its own, or for
// "inherit" the parent's effective one (the run's context wins over the
// assistant's configurable, as for the parent itself).
func (d *Delegation) modelName(t resolved, config, runContext map[string]any) string {
	if t.GraphID != "" {
		return "graph:" + t.GraphID
	}
	if t.Model != "" && t.Model != "inherit" {
		return t.Model
	}
	if m, ok := runContext["model"].(string); ok && m != "" {
		return m
	}
	if conf, ok := config["configurable"].(map[string]any); ok {
		if m, ok := conf["model"].(string); ok && m != "" {
			return m
		}
	}
	return d.parent.Model.Name
}

// withoutOverrides copies m without the keys that override an agent's
// prompt and model, which belong to the parent agent; an inheriting type
// keeps the model.
func withoutOverrides(m map[string]any, t resolved) map[string]any {
	if m == nil {
		return nil
	}
	m = maps.Clone(m)
	delete(m, "system_prompt")
	if t.Model != "inherit" {
		delete(m, "model")
	}
	return m
}

// childConfig is the run config a subagent runs with: the parent's (so
// that run, thread and assistant ids correlate), minus the parent agent's
// prompt and model overrides, and with a recursion limit that lets the
// subagent use all of its turns (max_turns counts model calls; each turn
// is up to two super-steps).
func childConfig(parent map[string]any, t resolved) map[string]any {
	out := maps.Clone(parent)
	if out == nil {
		out = map[string]any{}
	}
	if conf, ok := parent["configurable"].(map[string]any); ok {
		out["configurable"] = withoutOverrides(conf, t)
	}
	out["recursion_limit"] = 2*t.maxTurns + 1
	return out
}

// execute runs the subagent's agent loop to its end. ctx is the
// subagent's own context (cancelled alone by Live.Cancel), parent the
// parent run's.
func (d *Delegation) execute(ctx, parent context.Context, c tools.Call, t resolved, model, prompt string, runID, threadID uuid.UUID, emit func(any)) (outcome, []map[string]any) {
	in := graph.Input{RunID: runID, ThreadID: threadID, Values: map[string]any{channels.MessagesChannel: []any{map[string]any{"role": "user", "content": prompt}}}, Config: childConfig(c.Config, t), Context: withoutOverrides(runContextOf(ctx), t)}
	runner, err := d.childRunner(t)
	if err != nil {
		return outcome{status: "failed", err: err.Error(), model: model}, nil
	}
	if t.GraphID != "" {
		// A graph of its own: a run and a thread of its own, which
		// nothing stores.
		in.RunID, in.ThreadID = uuid.New(), uuid.New()
	}
	timeout := time.Duration(t.timeoutSeconds * float64(time.Second))
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cctx, cancelTimeout := context.WithTimeoutCause(cctx, timeout, errTimedOut)
	defer cancelTimeout()

	sink := &childSink{taskID: c.ID, model: model, emit: emit, budget: t.tokenBudget, cancel: cancel, d: d, runID: runID, toolCall: c.ID, log: d.startStepLog(runID, c.ID)}
	if c.Namespaced != nil {
		sink.fwd = c.Namespaced(graph.ToolNamespace(c.ID))
	}
	res, runErr := runner.Run(cctx, in, sink)
	sink.log.close() // before the terminal record is written
	o := outcome{model: model, usage: sink.usageSummary()}
	last := lastAIText(res.Values)
	if last == "" {
		last = sink.lastText()
	}
	cause := context.Cause(cctx)
	switch {
	case runErr == nil:
		o.status, o.result, o.stopReason = "completed", nonEmpty(last), sink.stopReason()
	case errors.Is(cause, errTokenCap):
		o.stopReason = "token_capped"
		if last != "" {
			o.status, o.result = "completed", last
		} else {
			o.status, o.err = "failed", "token budget exhausted before any answer"
		}
	case errors.Is(cause, errTimedOut):
		o.status, o.err = "timed_out", fmt.Sprintf("Execution timed out after %g seconds", t.timeoutSeconds)
	case errors.Is(cause, errUserCancel):
		o.status, o.err = "cancelled", "Cancelled by user"
	case parent.Err() != nil:
		o.status, o.err = "cancelled", "The parent run was cancelled"
	default:
		o.status, o.err = "failed", runErr.Error()
	}
	// Usage reaches the parent run exactly once, whatever the ending.
	sink.reportToParent(c)
	return o, sink.steps
}

// childRunner returns what runs a subagent of type t: the served graph it
// names, or an agent loop built from the type and the lead's spec.
func (d *Delegation) childRunner(t resolved) (graph.Runner, error) {
	if t.GraphID != "" {
		var r graph.Runner
		if d.env.Graphs != nil {
			r = d.env.Graphs(t.GraphID)
		}
		if r == nil {
			return nil, fmt.Errorf("graph %q is not served by this server", t.GraphID)
		}
		return r, nil
	}
	spec := &agent.Spec{Name: t.Name, Model: d.parent.Model, SystemPrompt: t.SystemPrompt, Tools: childTools(t, d.parent.Tools, d.depth+1 < d.cfg.MaxDepth), MaxTurns: t.maxTurns}
	if t.Model != "inherit" {
		spec.Model.Name = t.Model
	}
	opts := agent.Options{Models: d.env.Models, Tools: d.env.Tools, Workspace: d.env.Workspace}
	if d.depth+1 < d.cfg.MaxDepth {
		opts.Extend = func(string, *agent.Spec) ([]agent.Middleware, error) {
			child, err := New(d.cfg, spec, d.env, d.depth+1)
			return []agent.Middleware{child}, err
		}
	}
	child, err := agent.New("subagent:"+t.Name, spec, opts)
	if err != nil {
		return nil, err
	}
	ex := &graph.Executor{Reducers: channels.NewRegistry()}
	return ex.Bind(child.Graph()), nil
}

func nonEmpty(s string) string {
	if s == "" {
		return "No response generated"
	}
	return s
}

func lastAIText(values map[string]any) string {
	msgs, _ := values[channels.MessagesChannel].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, ok := msgs[i].(map[string]any); ok && m["type"] == "ai" {
			return llm.MessageText(m)
		}
	}
	return ""
}

// resultOf renders the tool result the lead model reads (DeerFlow's
// contract: text plus structured metadata).
func resultOf(o outcome) tools.Result {
	meta := map[string]any{"subagent_status": o.status}
	if o.stopReason != "" {
		meta["subagent_stop_reason"] = o.stopReason
	}
	if o.model != "" {
		meta["subagent_model_name"] = o.model
	}
	if o.usage != nil {
		meta["subagent_token_usage"] = o.usage
	}
	capped := ""
	if o.stopReason != "" {
		capped = " (capped: " + map[string]string{"token_capped": "token budget", "turn_capped": "turn budget"}[o.stopReason] + ")"
	}
	var text string
	switch o.status {
	case "completed":
		sum := sha256.Sum256([]byte(o.result))
		meta["subagent_result_brief"] = bounded(o.result)
		meta["subagent_result_sha256"] = hex.EncodeToString(sum[:])
		text = "Task Succeeded" + capped + ". Result: " + o.result
	case "cancelled":
		meta["subagent_error"] = bounded(o.err)
		text = "Task cancelled by user. Error: " + o.err
	case "timed_out":
		meta["subagent_error"] = bounded(o.err)
		text = "Task timed out. Error: " + o.err
	default:
		meta["subagent_error"] = bounded(o.err)
		text = "Task failed" + capped + ". Error: " + o.err
	}
	return tools.Result{Content: text, Metadata: meta}
}

// bounded keeps the head two thirds and the tail of a long text, counting
// characters (not bytes) so that the brief stays valid UTF-8.
func bounded(s string) string {
	if len(s) <= briefLimit || utf8.RuneCountInString(s) <= briefLimit {
		return s
	}
	r := []rune(s)
	head := briefLimit * 2 / 3
	tail := briefLimit - head - 5
	return string(r[:head]) + "\n...\n" + string(r[len(r)-tail:])
}

// previous returns the outcome a subagent of this parent run already
// reached before a restart; an execution cut off by the crash is reported
// as interrupted, never left running.
func (d *Delegation) previous(ctx context.Context, runID uuid.UUID, toolCall string) (outcome, bool) {
	if d.env.DB == nil {
		return outcome{}, false
	}
	e, err := storage.Read(ctx, d.env.DB, func(tx *storage.Tx) (storage.SubagentExecution, error) { return tx.GetSubagent(runID, toolCall) })
	if err != nil {
		return outcome{}, false
	}
	switch e.Status {
	case "pending", "running":
		return outcome{}, false // cannot happen after start-up recovery
	case "interrupted":
		return outcome{status: "failed", err: "Interrupted by a server restart; run the task again if it is still needed", model: e.Model, usage: e.Usage}, true
	}
	return outcome{status: e.Status, stopReason: e.StopReason, result: e.Result, err: e.Error, model: e.Model, usage: e.Usage}, true
}

func (d *Delegation) record(runID, threadID uuid.UUID, toolCall, kind, desc string, o outcome, steps []map[string]any) {
	now := time.Now().UTC()
	d.persist(storage.SubagentExecution{ParentRunID: runID, ThreadID: threadID, ToolCallID: toolCall, Type: kind, Description: desc,
		Status: o.status, StopReason: o.stopReason, Result: o.result, Error: o.err, Model: o.model, Usage: o.usage, Steps: steps, StartedAt: now, EndedAt: &now})
}

func (d *Delegation) persist(e storage.SubagentExecution) {
	if d.env.DB == nil || e.ParentRunID == uuid.Nil {
		return
	}
	_ = d.env.DB.Update(context.Background(), func(tx *storage.Tx) error {
		if prev, err := tx.GetSubagent(e.ParentRunID, e.ToolCallID); err == nil && !prev.StartedAt.IsZero() {
			e.StartedAt = prev.StartedAt
		}
		return tx.PutSubagent(e)
	})
}

// Live tracks running subagents so that one can be cancelled alone.
type Live struct {
	mu      sync.Mutex
	cancels map[string]context.CancelCauseFunc
}

func liveKey(run uuid.UUID, toolCall string) string { return run.String() + "/" + toolCall }

func (l *Live) add(run uuid.UUID, toolCall string, cancel context.CancelCauseFunc) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancels == nil {
		l.cancels = map[string]context.CancelCauseFunc{}
	}
	k := liveKey(run, toolCall)
	l.cancels[k] = cancel
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.cancels, k)
	}
}

// Cancel stops one running subagent of a run.
func (l *Live) Cancel(run uuid.UUID, toolCall string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cancel, ok := l.cancels[liveKey(run, toolCall)]
	if !ok {
		return fmt.Errorf("run %s has no running subagent with tool call id %q: %w", run, toolCall, errdefs.ErrNotFound)
	}
	cancel(errUserCancel)
	return nil
}
