package jsworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	// StreamModes are the modes someone wants when the run starts; the
	// worker sends events of those only.
	StreamModes []string `json:"stream_modes"`
}

// streamModes are the stream modes a worker can send events of.
var streamModes = []string{"values", "updates", "messages", "custom"}

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
	if in.Retry {
		params.Input, params.Command = nil, nil
	}
	var res runResult
	done := make(chan error, 1)
	go func() { done <- w.c.call(context.Background(), "run", params, &res) }()

	select {
	case err = <-done:
	case <-ctx.Done():
		_ = w.c.notify("cancel", map[string]string{"run_id": in.RunID.String()})
		select {
		case <-done:
		case <-w.exited:
		case <-time.After(r.pool.opts.CancelWait):
		}
		s.close()
		return graph.Result{}, context.Cause(ctx)
	}
	if errors.Is(err, errConnClosed) {
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
