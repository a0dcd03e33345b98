package jsworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/errdefs"
	"agentserver/internal/graph"
)

// runner runs one JavaScript graph on the pool's workers.
type runner struct {
	pool    *Pool
	graphID string
}

// runParams is the run request sent to a worker.
type runParams struct {
	RunID           string         `json:"run_id"`
	ThreadID        string         `json:"thread_id"`
	GraphID         string         `json:"graph_id"`
	Input           any            `json:"input"`
	Command         map[string]any `json:"command,omitempty"`
	Config          map[string]any `json:"config,omitempty"`
	Context         map[string]any `json:"context,omitempty"`
	Metadata        map[string]any `json:"metadata,omitempty"`
	InterruptBefore []string       `json:"interrupt_before,omitempty"`
	InterruptAfter  []string       `json:"interrupt_after,omitempty"`
	// CheckpointID is the checkpoint the run named (a replay or fork of
	// an older checkpoint); empty when it starts from the thread's newest.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Start is the tuple the run starts from (null: the thread has none),
	// which the worker's first checkpoint.get of it answers without a
	// round trip.
	Start json.RawMessage `json:"start,omitempty"`
	// StreamModes are the modes someone wants when the run starts; the
	// worker sends events of those only.
	StreamModes []string `json:"stream_modes"`
	// StreamSubgraphs asks for the events of nested graphs too, named
	// "mode|outer:task|…".
	StreamSubgraphs bool `json:"stream_subgraphs,omitempty"`
}

// streamModes are the stream modes a worker can send events of; "events"
// are LangChain's own (astream_events).
var streamModes = []string{"values", "updates", "messages", "custom", "tasks", "checkpoints", "debug", "events"}

// runResult is a worker's answer to run: the thread's state when the run
// ended (the graph's getState).
type runResult struct {
	CheckpointID string          `json:"checkpoint_id"`
	Values       json.RawMessage `json:"values"`
	Next         []string        `json:"next"`
	Tasks        json.RawMessage `json:"tasks"`
}

// Run runs the graph for the run engine. Cancelling ctx aborts the run's
// AbortSignal in the worker; a worker that dies fails the run.
func (r *runner) Run(ctx context.Context, in graph.Input, sink graph.Sink) (graph.Result, error) {
	s, err := newSession(in, sink, r.pool.opts.Store)
	if err != nil {
		return graph.Result{}, err
	}
	w, err := r.pool.acquire(ctx)
	if err != nil {
		return graph.Result{}, err
	}
	defer r.pool.release(w)
	w.attach(s)
	defer w.detach(s)

	params := runParams{
		RunID: in.RunID.String(), ThreadID: in.ThreadID.String(), GraphID: r.graphID, Input: in.Values, Command: in.Command,
		Config: in.Config, Context: in.Context, Metadata: in.Metadata, InterruptBefore: in.InterruptBefore, InterruptAfter: in.InterruptAfter,
	}
	for _, m := range streamModes {
		if sink.Wants(m) {
			params.StreamModes = append(params.StreamModes, m)
		}
	}
	params.StreamSubgraphs = sink.Wants(graph.SubgraphsMode)
	if d, ok := sink.(graph.EventsDeriver); ok && slices.Contains(params.StreamModes, "events") {
		d.OwnEvents()
	}
	if in.Retry {
		params.Input, params.Command = nil, nil
	}
	if in.Addressed && in.From != nil {
		params.CheckpointID = in.From.CheckpointID.String()
	}
	if params.Start, err = s.startTuple(); err != nil {
		return graph.Result{}, err
	}
	var res runResult
	// Sent before the select, so that a cancel never overtakes the run.
	done := w.c.start("run", params, &res)

	select {
	case err = <-done:
	case <-ctx.Done():
		_ = w.c.notify("cancel", map[string]string{"run_id": in.RunID.String()})
		select {
		case <-done:
		case <-w.exited:
		case <-time.After(r.pool.opts.CancelWait):
		}
		// The writes of the tasks that finished before the cancel are kept
		// with the last checkpoint, as LangGraph's savers keep them.
		s.closeWith(nil, false)
		return graph.Result{}, context.Cause(ctx)
	}
	if refused := s.refusal(); refused != nil && !errors.Is(err, errConnClosed) {
		// The worker's writes are notifications: one the session refused
		// fails the run, whatever the worker answered.
		s.closeWith(nil, false)
		return graph.Result{}, refused
	}
	if errors.Is(err, errConnClosed) {
		// The connection failed under the run (closed, or a write to a
		// worker that is gone): the worker is lost, and so is its run's
		// attempt. The engine retries the run on another worker.
		w.kill()
		<-w.exited
		err = w.crashError()
	}
	if err != nil {
		// What the run wrote before it failed (the failed task's error,
		// the writes of the tasks that succeeded) is kept with its last
		// checkpoint, with the state the worker read after the failure.
		var we *WireError
		var state *runResult
		if errors.As(err, &we) {
			state, we.State = we.State, nil
		}
		s.closeWith(state, false)
		return graph.Result{}, err
	}
	final, err := s.closeWith(&res, true)
	if err != nil {
		return graph.Result{}, fmt.Errorf("graph worker: %w", err)
	}
	return final, nil
}

// Draw draws the graph in a worker with its subgraphs expanded to depth
// xray (graphs.Drawer).
func (r *runner) Draw(ctx context.Context, xray int) (json.RawMessage, error) {
	return r.pool.Draw(ctx, r.graphID, xray)
}

// updateParams is the update_state request sent to a worker.
type updateParams struct {
	// RunID names the update's session: the worker's checkpointer calls
	// carry it as a run's calls do.
	RunID        string `json:"run_id"`
	ThreadID     string `json:"thread_id"`
	GraphID      string `json:"graph_id"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	Values       any    `json:"values"`
	AsNode       string `json:"as_node,omitempty"`
}

// UpdateState applies a client's state update with the graph's own
// updateState in a worker (graph.StateUpdater): LangGraph.js runs the
// update through the graph's channels and attributes it to a node, and
// the checkpoints it writes come back to be stored by the caller. An
// update the graph refuses fails with errdefs.ErrInvalid.
func (r *runner) UpdateState(ctx context.Context, u graph.StateUpdate) (graph.StateUpdated, error) {
	in := graph.Input{RunID: uuid.New(), ThreadID: u.ThreadID, From: u.From, Addressed: u.Addressed, Metadata: u.Metadata, Checkpoints: u.Checkpoints}
	var col collector
	s, err := newSession(in, &col, r.pool.opts.Store)
	if err != nil {
		return graph.StateUpdated{}, err
	}
	s.update = true
	params := updateParams{RunID: in.RunID.String(), ThreadID: u.ThreadID.String(), GraphID: r.graphID, Values: u.Values, AsNode: u.AsNode}
	if u.Addressed && u.From != nil {
		params.CheckpointID = u.From.CheckpointID.String()
	}
	var res struct {
		CheckpointID string `json:"checkpoint_id"`
	}
	err = r.pool.call(ctx, s, "update_state", params, &res)
	if refused := s.refusal(); refused != nil {
		err = refused
	}
	if _, cerr := s.closeWith(nil, false); err == nil {
		err = cerr
	}
	var we *WireError
	if errors.As(err, &we) {
		return graph.StateUpdated{}, fmt.Errorf("%w: %s: %s", errdefs.ErrInvalid, we.ErrorName(), we.Message)
	}
	if err != nil {
		return graph.StateUpdated{}, fmt.Errorf("graph worker: %w", err)
	}
	head, err := uuid.Parse(res.CheckpointID)
	if err != nil {
		return graph.StateUpdated{}, fmt.Errorf("graph worker: update_state answered checkpoint id %q", res.CheckpointID)
	}
	return graph.StateUpdated{Checkpoints: col.cps, Head: head}, nil
}

// collector is the sink of a state update: it keeps the checkpoints.
type collector struct{ cps []graph.Checkpoint }

func (c *collector) Checkpoint(_ context.Context, cp graph.Checkpoint, _ bool) error {
	c.cps = append(c.cps, cp)
	return nil
}
func (c *collector) Wants(string) bool { return false }
func (c *collector) Emit(string, any)  {}
func (c *collector) Usage(graph.Usage) {}
func (c *collector) Note(string, any)  {}
