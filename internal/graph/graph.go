package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"

	"agentserver/internal/channels"
	"agentserver/internal/jsonx"
	"agentserver/internal/tracing"
)

// Start and End name the virtual entry and exit of every graph.
const (
	Start = "__start__"
	End   = "__end__"
)

// DefaultRecursionLimit bounds super-steps when config.recursion_limit is unset.
const DefaultRecursionLimit = 25

// ErrRecursionLimit reports a run that exceeded its super-step budget.
var ErrRecursionLimit = errors.New("recursion limit reached without hitting a stop condition")

// State is a thread's values.
type State = map[string]any

// Update is what a node returns: channel writes and, optionally, the nodes
// to run next (overriding the graph's edges).
type Update struct {
	Values map[string]any
	Goto   []string
}

// Node computes an update from a snapshot of the state.
type Node func(ctx context.Context, rt *Runtime, state State) (Update, error)

// Router picks the nodes that follow a node; returning nothing ends the run.
type Router func(state State) []string

// Graph is a compiled graph.
type Graph struct {
	Entry string
	Nodes map[string]Node
	// Edges maps a node to its router; a node without one leads to End.
	Edges map[string]Router
	// Initial holds channel values a thread has before any write to them:
	// a run that applies an input first sets each channel of Initial that
	// the state lacks, so the input's checkpoint already carries it (e.g.
	// async_tasks = {}).
	Initial State
	// OnCancel, when set, returns the channel writes that repair the state
	// a cancelled run left (see CancelRepairer); nil means nothing to do.
	OnCancel func(values State) map[string]any
}

// Sink receives what a run produces. Implementations must not block for long:
// Emit is called on the run's hot path.
type Sink interface {
	// Checkpoint persists cp. final is true for the run's last checkpoint.
	Checkpoint(ctx context.Context, cp Checkpoint, final bool) error
	// Wants reports whether anyone asked for a stream mode, so that costly
	// payloads are only built when needed.
	Wants(mode string) bool
	// Emit publishes one stream payload of a mode ("values", "updates",
	// "messages", "custom", "tasks", "checkpoints", "debug").
	Emit(mode string, payload any)
	// Usage adds one model call's token usage to the run's totals.
	Usage(u Usage)
	// Note records a fact about the run's outcome (e.g. "stop_reason").
	Note(key string, value any)
}

// EventsDeriver is implemented by sinks that derive the "events" stream
// mode (LangChain's astream_events) from a run's messages and updates. A
// runner whose executor streams LangChain's own events (a graph worker)
// calls OwnEvents before the run starts, so that they are not derived as
// well.
type EventsDeriver interface {
	OwnEvents()
}

// EndWriter is implemented by sinks that can write intermediate
// checkpoints with the run's last commit instead of a commit of their own.
// A runner hands over with CheckpointAtEnd, in order and before the final
// checkpoint, the intermediate ones it still holds when its executor has
// returned (a graph worker's checkpoints that came with the run's answer).
type EndWriter interface {
	CheckpointAtEnd(cp Checkpoint)
}

// Usage is the token usage of one model call.
type Usage struct {
	Model        string
	InputTokens  int
	OutputTokens int
	TotalTokens  int
	// Subagent marks tokens spent by a synchronous subagent of the run.
	Subagent bool
}

// InterruptError pauses a run inside a node to wait for human input. The
// node's step is not applied; a later run resumes it with command.resume,
// which the node reads with Runtime.Resume.
type InterruptError struct {
	ID    string
	Value any
}

func (e *InterruptError) Error() string { return "interrupted: waiting for input" }

// Interrupt returns the error a node returns to pause with value as the
// question shown to the client.
func Interrupt(value any) error {
	return &InterruptError{ID: uuid.NewString(), Value: value}
}

// errPaused ends the loop after a step paused on interrupts.
var errPaused = errors.New("paused")

// Input describes where a run starts.
type Input struct {
	RunID    uuid.UUID
	ThreadID uuid.UUID
	// From is the checkpoint to continue from (nil: an empty thread).
	From *Checkpoint
	// Addressed is set when the run named From (checkpoint_id: a replay or
	// fork from an older checkpoint) rather than starting from the
	// thread's newest.
	Addressed bool
	// Retry continues From.Next without applying Values (crash recovery).
	Retry bool
	// Values is the run input; nil continues From.Next (resume).
	Values  any
	Command map[string]any
	// Begun holds the checkpoints Begin returned for this input, stored
	// by the caller already: the run streams them and continues from the
	// last one instead of applying Values and Command again.
	Begun []Checkpoint
	// InterruptBefore and InterruptAfter list node names, or "*" for all.
	InterruptBefore []string
	InterruptAfter  []string
	Config          map[string]any
	Context         map[string]any
	// Metadata is copied into every checkpoint's metadata.
	Metadata map[string]any
	// Checkpoints reads the thread's stored checkpoints, for executors
	// that look them up themselves (a graph worker's checkpointer); nil
	// when the run has none to read (the Go executor never reads).
	Checkpoints CheckpointReader
}

// Result is the end of a run.
type Result struct {
	Values map[string]any
	// Next is non-empty when the run paused (interrupt) before finishing.
	Next []string
}

// Executor runs graphs with a reducer registry.
type Executor struct {
	Reducers *channels.Registry
	Now      func() time.Time
}

type runState struct {
	ex      *Executor
	g       *Graph
	in      Input
	sink    Sink
	values  State
	step    int
	parent  *uuid.UUID
	last    *Checkpoint
	emitted map[string]bool // message ids already streamed
	// resume is the command.resume value for the first step of this run;
	// resumeByID is set instead when that value maps interrupt ids to values.
	resume     any
	hasResume  bool
	resumeByID map[string]any
}

// Run executes g from in and reports what it produced to sink.
func (e *Executor) Run(ctx context.Context, g *Graph, in Input, sink Sink) (Result, error) {
	rs := e.newRunState(g, in, sink)
	next, resumed, err := rs.start(ctx)
	if err != nil {
		return Result{}, err
	}
	limit := recursionLimit(in.Config)
	for steps := 0; len(next) > 0; steps++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if !resumed && matches(in.InterruptBefore, TaskNames(next)) {
			return rs.pause(ctx, TaskNames(next))
		}
		resumed = false
		if steps >= limit {
			return Result{}, fmt.Errorf("%w (limit %d)", ErrRecursionLimit, limit)
		}
		ran := TaskNames(next)
		next, err = rs.superstep(ctx, next)
		rs.hasResume, rs.resume, rs.resumeByID = false, nil, nil
		if errors.Is(err, errPaused) {
			return Result{Values: rs.values, Next: ran}, nil
		}
		if err != nil {
			return Result{}, err
		}
		if len(next) > 0 && matches(in.InterruptAfter, ran) {
			return rs.pause(ctx, TaskNames(next))
		}
	}
	return Result{Values: rs.values}, rs.finish(ctx)
}

// Begin returns the checkpoints a run starting from in writes before its
// first node runs, as LangGraph writes them: for an input, an "input"
// checkpoint holding the thread's values before it (Next: the virtual
// __start__ task; metadata.writes: the input) and the __start__ step's
// "loop" checkpoint, which applies it; for a command's update or goto, one
// "input" checkpoint with them applied; nothing for a run that resumes what
// its checkpoint left pending. A caller that stores them before the run
// executes, so that the input shows in the thread's state at once, passes
// them back as Input.Begun.
func (e *Executor) Begin(g *Graph, in Input) ([]Checkpoint, error) {
	if in.Retry || len(in.Begun) > 0 {
		return nil, nil
	}
	cps, _, _, err := e.newRunState(g, in, nil).begin()
	return cps, err
}

// newRunState prepares a run of g from in; sink may be nil when nothing is
// executed (Begin).
func (e *Executor) newRunState(g *Graph, in Input, sink Sink) *runState {
	// An empty thread's input checkpoint is step -1, as in LangGraph.
	rs := &runState{ex: e, g: g, in: in, sink: sink, values: State{}, step: -2, emitted: map[string]bool{}}
	if in.From != nil {
		rs.values = in.From.Values
		rs.step = -1
		if s, ok := in.From.Metadata["step"].(float64); ok {
			rs.step = int(s)
		}
		id := in.From.CheckpointID
		rs.parent = &id
		rs.last = in.From
	}
	if in.Command != nil {
		rs.resume, rs.hasResume = in.Command["resume"]
		rs.resumeByID = resumeMap(rs.resume, in.From)
	}
	return rs
}

// start applies the input and returns the first tasks to run, and whether
// they continue a paused checkpoint (so interrupt_before does not re-fire).
// The checkpoints the input makes go to the sink (unless the caller stored
// them: Input.Begun) and to the stream.
func (rs *runState) start(ctx context.Context) ([]Task, bool, error) {
	in := rs.in
	var cps []Checkpoint
	var next []Task
	var resumed bool
	var err error
	switch {
	case len(in.Begun) > 0:
		cps = in.Begun
		last := cps[len(cps)-1]
		rs.values, rs.last, rs.parent = last.Values, &last, &last.CheckpointID
		if s, ok := last.Metadata["step"].(float64); ok {
			rs.step = int(s)
		}
		next = PendingTasks(last)
	case in.Retry && in.From != nil:
		if cps, next, err = rs.startPending(); err != nil || cps == nil {
			return next, true, err
		}
	default:
		if cps, next, resumed, err = rs.begin(); err != nil {
			return nil, false, err
		}
	}
	for i, cp := range cps {
		// The final checkpoint is handed over once, by finish.
		if len(in.Begun) == 0 && (i < len(cps)-1 || len(next) > 0) {
			if err := rs.sink.Checkpoint(ctx, cp, false); err != nil {
				return nil, false, err
			}
		}
		rs.emitCheckpoint(cp, len(cp.Next) != 1 || cp.Next[0] != Start)
	}
	return next, resumed, nil
}

// begin applies the run's input without handing anything to the sink: it
// returns the checkpoints the input makes (Begin), the first tasks, and
// whether they continue a paused checkpoint.
func (rs *runState) begin() ([]Checkpoint, []Task, bool, error) {
	in := rs.in
	var update any = in.Values
	var targets []Task
	command := false
	if in.Command != nil {
		if u, ok := in.Command["update"]; ok && u != nil {
			update, command = commandUpdate(u), true
		}
		var err error
		if targets, err = ParseGoto(in.Command["goto"]); err != nil {
			return nil, nil, false, err
		}
	}
	if update == nil && len(targets) == 0 {
		cps, next, err := rs.startPending()
		return cps, next, cps == nil && len(next) > 0, err
	}
	var m map[string]any
	if update != nil {
		var ok bool
		if m, ok = update.(map[string]any); !ok {
			return nil, nil, false, fmt.Errorf("%w: input must be an object", channels.ErrInvalidUpdate)
		}
	}
	if !command && len(targets) == 0 {
		// An input: recorded before it is applied, as LangGraph does, on
		// the values the thread has before any write (Graph.Initial).
		rs.values = withInitial(rs.values, rs.g.Initial)
		input := rs.newCheckpoint("input", map[string]any{Start: jsonx.Clone(update)}, []Task{{Node: Start}})
		applied, next, err := rs.applyStart(m)
		if err != nil {
			return nil, nil, false, err
		}
		return []Checkpoint{input, applied}, next, false, nil
	}
	if m != nil {
		values, err := rs.ex.Reducers.Apply(withInitial(rs.values, rs.g.Initial), m)
		if err != nil {
			return nil, nil, false, err
		}
		rs.values = values
	}
	// A goto naming only End ends the run after the input checkpoint.
	next := withoutEnd(targets)
	if len(targets) == 0 {
		next = []Task{{Node: rs.g.Entry}}
	}
	cp := rs.newCheckpoint("input", map[string]any{Start: jsonx.Clone(update)}, next)
	return []Checkpoint{cp}, next, false, nil
}

// applyStart runs the virtual __start__ step: it applies the input through
// the reducers (with the graph's initial channel values) and returns the
// step's checkpoint and the entry task.
func (rs *runState) applyStart(input map[string]any) (Checkpoint, []Task, error) {
	values, err := rs.ex.Reducers.Apply(withInitial(rs.values, rs.g.Initial), input)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	rs.values = values
	next := []Task{{Node: rs.g.Entry}}
	return rs.newCheckpoint("loop", map[string]any{Start: jsonx.Clone(input)}, next), next, nil
}

// startPending continues the checkpoint the run starts from: its pending
// __start__ step when it is an input checkpoint (a run forked from one, or
// the retry of a run stopped right after writing it), else its pending
// tasks, returned without a checkpoint.
func (rs *runState) startPending() ([]Checkpoint, []Task, error) {
	if rs.in.From == nil {
		return nil, nil, nil
	}
	if input, ok := pendingInput(*rs.in.From); ok {
		cp, next, err := rs.applyStart(input)
		if err != nil {
			return nil, nil, err
		}
		return []Checkpoint{cp}, next, nil
	}
	return nil, PendingTasks(*rs.in.From), nil
}

// pendingInput returns the input an input checkpoint holds when its
// __start__ step has not run.
func pendingInput(cp Checkpoint) (map[string]any, bool) {
	if len(cp.Next) != 1 || cp.Next[0] != Start {
		return nil, false
	}
	writes, _ := cp.Metadata["writes"].(map[string]any)
	input, ok := writes[Start].(map[string]any)
	return input, ok
}

// withInitial returns values with the channels of initial it lacks set;
// values itself is not modified.
func withInitial(values, initial State) State {
	var out State
	for k, v := range initial {
		if _, ok := values[k]; ok {
			continue
		}
		if out == nil {
			out = make(State, len(values)+len(initial))
			for k, v := range values {
				out[k] = v
			}
		}
		out[k] = jsonx.Clone(v)
	}
	if out == nil {
		return values
	}
	return out
}

// commandUpdate accepts an object or a list of [key, value] pairs.
func commandUpdate(u any) any {
	pairs, ok := u.([]any)
	if !ok {
		return u
	}
	m := map[string]any{}
	for _, p := range pairs {
		if kv, ok := p.([]any); ok && len(kv) == 2 {
			if k, ok := kv[0].(string); ok {
				m[k] = kv[1]
			}
		}
	}
	return m
}

// resumeMap returns resume as a map of interrupt ids to values when every
// key of it is the id of an interrupt the paused checkpoint from waits on,
// as LangGraph accepts for a step paused on several interrupts; nil
// otherwise (the whole value then goes to every resumed task).
func resumeMap(resume any, from *Checkpoint) map[string]any {
	byID, ok := resume.(map[string]any)
	if !ok || len(byID) == 0 || from == nil {
		return nil
	}
	var ids []string
	for _, t := range PendingTasks(*from) {
		ids = append(ids, t.interrupts...)
	}
	for id := range byID {
		if !slices.Contains(ids, id) {
			return nil
		}
	}
	return byID
}

// resumeFor returns the resume value task t gets, if any.
func (rs *runState) resumeFor(t Task) (any, bool) {
	if !rs.hasResume || rs.resumeByID == nil {
		return rs.resume, rs.hasResume
	}
	for _, id := range t.interrupts {
		if v, ok := rs.resumeByID[id]; ok {
			return v, true
		}
	}
	return nil, false
}

type nodeResult struct {
	name   string
	update Update
	err    error
}

// superstep runs the tasks of one step and returns the next ones.
func (rs *runState) superstep(ctx context.Context, tasks []Task) ([]Task, error) {
	results := make([]nodeResult, len(tasks))
	snapshot := rs.values
	var wg sync.WaitGroup
	for i, t := range tasks {
		fn, ok := rs.g.Nodes[t.Node]
		if !ok {
			return nil, fmt.Errorf("graph has no node %q", t.Node)
		}
		resume, hasResume := rs.resumeFor(t)
		rt := &Runtime{RunID: rs.in.RunID, ThreadID: rs.in.ThreadID, Node: t.Node, Step: rs.step + 1, Config: rs.in.Config, Context: rs.in.Context,
			sink: rs.sink, emitted: &rs.emitted, resume: resume, hasResume: hasResume}
		input := t.stateOr(snapshot)
		rs.emitTask(t.Node, input)
		if len(tasks) == 1 {
			u, err := runNode(ctx, fn, rt, input)
			results[i] = nodeResult{t.Node, u, err}
			break
		}
		wg.Add(1)
		go func(i int, name string) {
			defer wg.Done()
			u, err := runNode(ctx, fn, rt, input)
			results[i] = nodeResult{name, u, err}
		}(i, t.Node)
	}
	wg.Wait()
	writes := map[string]any{}
	var interrupts []*InterruptError
	for _, r := range results {
		var ie *InterruptError
		switch {
		case errors.As(r.err, &ie):
			interrupts = append(interrupts, ie)
		case r.err != nil:
			return nil, fmt.Errorf("node %s: %w", r.name, r.err)
		}
	}
	if len(interrupts) > 0 {
		return nil, rs.interruptStep(ctx, tasks, results)
	}
	for _, r := range results {
		values, err := rs.ex.Reducers.Apply(rs.values, r.update.Values)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", r.name, err)
		}
		rs.values = values
		addWrite(writes, r.name, r.update.Values)
		rs.emitNodeMessages(r.name, r.update.Values)
		if rs.sink.Wants("updates") {
			rs.sink.Emit("updates", map[string]any{r.name: orEmpty(r.update.Values)})
		}
		rs.emitTaskResult(r.name, r.update.Values)
	}
	next := rs.route(results)
	return next, rs.checkpoint(ctx, "loop", writes, next, len(next) == 0)
}

// runNode executes one node in a span of its own; an interrupt is not a
// failure.
func runNode(ctx context.Context, fn Node, rt *Runtime, input State) (Update, error) {
	ctx, span := tracing.Start(ctx, "node "+rt.Node, attribute.String("langgraph.node", rt.Node), attribute.Int("langgraph.step", rt.Step))
	u, err := fn(ctx, rt, input)
	var ie *InterruptError
	if errors.As(err, &ie) {
		span.SetAttributes(attribute.Bool("langgraph.interrupted", true))
		tracing.End(span, nil)
	} else {
		tracing.End(span, err)
	}
	return u, err
}

// route returns the tasks that follow a step: each node's own goto, or else
// its router's choice, once per node name.
func (rs *runState) route(results []nodeResult) []Task {
	var next []Task
	for _, r := range results {
		targets := r.update.Goto
		if len(targets) == 0 {
			if route := rs.g.Edges[r.name]; route != nil {
				targets = route(rs.values)
			}
		}
		for _, t := range targets {
			if t != End && !slices.Contains(TaskNames(next), t) {
				next = append(next, Task{Node: t})
			}
		}
	}
	return next
}

// addWrite records a node's update in a checkpoint's metadata.writes; the
// updates of several tasks of one node (Sends) become a list, in order.
func addWrite(writes map[string]any, node string, update map[string]any) {
	switch prev := writes[node].(type) {
	case nil:
		writes[node] = update
	case []any:
		writes[node] = append(prev, update)
	default:
		writes[node] = []any{prev, update}
	}
}

// interruptStep records a step that paused on interrupts: a checkpoint with
// the same values, the step's nodes as Next and the interrupts on their
// tasks, so that the thread shows what it waits for.
func (rs *runState) interruptStep(ctx context.Context, tasks []Task, results []nodeResult) error {
	var all []any
	if err := rs.writeCheckpoint(ctx, "loop", map[string]any{}, tasks, true, false); err != nil {
		return err
	}
	for i, r := range results {
		var ie *InterruptError
		if errors.As(r.err, &ie) {
			item := map[string]any{"value": ie.Value, "id": ie.ID}
			rs.last.Tasks[i].Interrupts = []any{item}
			all = append(all, item)
		}
	}
	if rs.sink.Wants("updates") {
		rs.sink.Emit("updates", map[string]any{"__interrupt__": all})
	}
	if rs.sink.Wants("values") {
		rs.sink.Emit("values", jsonx.Merge(rs.values, map[string]any{"__interrupt__": all}))
	}
	if err := rs.sink.Checkpoint(ctx, *rs.last, true); err != nil {
		return err
	}
	return errPaused
}

// pause stops before the given nodes: the last checkpoint already lists
// them in Next, so a later run with a null input continues there.
func (rs *runState) pause(ctx context.Context, next []string) (Result, error) {
	if rs.sink.Wants("updates") {
		rs.sink.Emit("updates", map[string]any{"__interrupt__": []any{}})
	}
	if rs.last != nil && rs.last.CheckpointID != uuid.Nil {
		if err := rs.sink.Checkpoint(ctx, *rs.last, true); err != nil {
			return Result{}, err
		}
	}
	return Result{Values: rs.values, Next: next}, nil
}

// finish makes sure the final checkpoint reached the sink as final.
func (rs *runState) finish(ctx context.Context) error {
	if rs.last == nil {
		return nil
	}
	return rs.sink.Checkpoint(ctx, *rs.last, true)
}

func (rs *runState) checkpoint(ctx context.Context, source string, writes map[string]any, next []Task, final bool) error {
	return rs.writeCheckpoint(ctx, source, writes, next, final, true)
}

// writeCheckpoint builds the next checkpoint; the final one is handed to
// the sink by finish, pause or interruptStep. emitValues is false when the
// caller streams the values itself.
func (rs *runState) writeCheckpoint(ctx context.Context, source string, writes map[string]any, next []Task, final, emitValues bool) error {
	cp := rs.newCheckpoint(source, writes, next)
	// The final checkpoint is handed over once, by finish or pause.
	if !final {
		if err := rs.sink.Checkpoint(ctx, cp, false); err != nil {
			return err
		}
	}
	rs.emitCheckpoint(cp, emitValues)
	return nil
}

// newCheckpoint builds the run's next checkpoint, a child of the last one,
// from the current values, and makes it the last one.
func (rs *runState) newCheckpoint(source string, writes map[string]any, next []Task) Checkpoint {
	rs.step++
	meta := jsonx.Merge(rs.in.Metadata, map[string]any{
		"source": source, "step": float64(rs.step), "writes": writes, "parents": map[string]any{},
		"run_id": rs.in.RunID.String(), "thread_id": rs.in.ThreadID.String(),
	})
	runID := rs.in.RunID
	cp := Checkpoint{
		ThreadID: rs.in.ThreadID, CheckpointID: NewCheckpointID(), ParentID: rs.parent,
		CreatedAt: rs.ex.now(), Values: rs.values, Metadata: meta, RunID: &runID,
	}
	cp.Next, cp.Tasks = CheckpointTasks(next)
	id := cp.CheckpointID
	rs.parent = &id
	rs.last = &cp
	return cp
}

// emitCheckpoint streams a checkpoint: its values (when emitValues) and its
// checkpoints and debug events.
func (rs *runState) emitCheckpoint(cp Checkpoint, emitValues bool) {
	if emitValues && rs.sink.Wants("values") {
		rs.sink.Emit("values", cp.Values)
	}
	if !rs.sink.Wants("checkpoints") && !rs.sink.Wants("debug") {
		return
	}
	payload := map[string]any{
		"values": cp.Values, "metadata": cp.Metadata, "next": cp.Next,
		"config":        map[string]any{"configurable": map[string]any{"thread_id": rs.in.ThreadID.String(), "checkpoint_ns": "", "checkpoint_id": cp.CheckpointID.String()}},
		"parent_config": parentConfig(rs.in.ThreadID, cp.ParentID),
		"tasks":         streamTasks(cp.Tasks),
	}
	if rs.sink.Wants("checkpoints") {
		rs.sink.Emit("checkpoints", payload)
	}
	step, _ := cp.Metadata["step"].(float64)
	rs.debugAt(step, "checkpoint", payload)
}

// streamTasks writes a checkpoint's tasks as LangGraph's checkpoints
// events carry them: id, name, error, interrupts (a list, empty when none)
// and state, each always present.
func streamTasks(tasks []CheckpointTask) []map[string]any {
	out := make([]map[string]any, len(tasks))
	for i, t := range tasks {
		interrupts := t.Interrupts
		if interrupts == nil {
			interrupts = []any{}
		}
		out[i] = map[string]any{"id": t.ID, "name": t.Name, "error": t.Error, "interrupts": interrupts, "state": nil}
	}
	return out
}

func parentConfig(thread uuid.UUID, parent *uuid.UUID) any {
	if parent == nil {
		return nil
	}
	return map[string]any{"configurable": map[string]any{"thread_id": thread.String(), "checkpoint_ns": "", "checkpoint_id": parent.String()}}
}

func (rs *runState) emitTask(name string, input State) {
	if !rs.sink.Wants("tasks") && !rs.sink.Wants("debug") {
		return
	}
	payload := map[string]any{"id": name + ":" + rs.in.RunID.String(), "name": name, "input": input, "triggers": []string{"branch:to:" + name}}
	if rs.sink.Wants("tasks") {
		rs.sink.Emit("tasks", payload)
	}
	rs.debug("task", payload)
}

func (rs *runState) emitTaskResult(name string, update map[string]any) {
	if !rs.sink.Wants("tasks") && !rs.sink.Wants("debug") {
		return
	}
	var result []any
	for k, v := range update {
		result = append(result, []any{k, v})
	}
	payload := map[string]any{"id": name + ":" + rs.in.RunID.String(), "name": name, "error": nil, "result": nonNilAny(result), "interrupts": []any{}}
	if rs.sink.Wants("tasks") {
		rs.sink.Emit("tasks", payload)
	}
	rs.debug("task_result", payload)
}

func (rs *runState) debug(kind string, payload any) {
	rs.debugAt(float64(rs.step), kind, payload)
}

// debugAt streams a debug event of the given step.
func (rs *runState) debugAt(step float64, kind string, payload any) {
	if rs.sink.Wants("debug") {
		rs.sink.Emit("debug", map[string]any{"type": kind, "step": step, "timestamp": rs.ex.now().Format(time.RFC3339Nano), "payload": payload})
	}
}

// emitNodeMessages streams messages a node wrote to state that it did not
// already stream token by token, as LangGraph's messages mode does.
func (rs *runState) emitNodeMessages(node string, update map[string]any) {
	if !rs.sink.Wants("messages") {
		return
	}
	msgs, err := channels.NormalizeMessages(update[channels.MessagesChannel])
	if update[channels.MessagesChannel] == nil || err != nil {
		return
	}
	for _, m := range msgs {
		msg := m.(map[string]any)
		id, _ := msg["id"].(string)
		if rs.emitted[id] || msg["type"] == "human" || msg["type"] == "remove" {
			continue
		}
		rs.emitted[id] = true
		rs.sink.Emit("messages", []any{msg, MessageMetadata(rs.in, node, rs.step+1)})
	}
}

// MessageMetadata is the metadata half of a messages-tuple event.
func MessageMetadata(in Input, node string, step int) map[string]any {
	md := jsonx.Merge(in.Metadata, map[string]any{
		"langgraph_node": node, "langgraph_step": float64(step), "langgraph_checkpoint_ns": node + ":" + in.RunID.String(),
		"langgraph_triggers": []string{"branch:to:" + node}, "run_id": in.RunID.String(), "thread_id": in.ThreadID.String(),
	})
	return md
}

func (e *Executor) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now().UTC()
}

func matches(list []string, nodes []string) bool {
	for _, n := range list {
		if n == "*" || slices.Contains(nodes, n) {
			return true
		}
	}
	return false
}

func recursionLimit(cfg map[string]any) int {
	switch v := cfg["recursion_limit"].(type) {
	case float64:
		if v > 0 {
			return int(v)
		}
	case int:
		if v > 0 {
			return v
		}
	}
	return DefaultRecursionLimit
}

func nonNilAny(s []any) []any {
	if s == nil {
		return []any{}
	}
	return s
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
