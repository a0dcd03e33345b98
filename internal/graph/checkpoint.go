package graph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Checkpoint is a thread's state at the end of a super-step (or after its
// input), as an executor hands it to the run engine and gets it back to
// continue from. The run engine stores it; the executor never touches
// storage.
type Checkpoint struct {
	ThreadID     uuid.UUID
	CheckpointID uuid.UUID
	// CheckpointNS is "" for the thread's own graph and names a nested
	// graph's task otherwise ("node:task_id", LangGraph's form).
	CheckpointNS string
	ParentID     *uuid.UUID
	CreatedAt    time.Time
	Values       map[string]any
	// Metadata holds source ("input", "loop", "update", "fork"), step,
	// writes, parents and the run fields that produced the checkpoint.
	Metadata map[string]any
	// Next lists the nodes that would run next; non-empty means the graph
	// is paused (interrupted) or was stopped mid-run.
	Next  []string
	Tasks []CheckpointTask
	// RunID is the run that wrote the checkpoint, if any.
	RunID *uuid.UUID
	// Native is the executor's own form of the checkpoint when it has one
	// (a graph worker's serialized checkpoint and pending writes); the run
	// engine keeps it as it is and hands it back. Nil for the Go executor.
	Native json.RawMessage
}

// CheckpointTask is a task pending at a checkpoint.
type CheckpointTask struct {
	ID         string
	Name       string
	Error      *string
	Interrupts []any
	Result     any
	// Input is the argument of a Send: the task's node runs with it as its
	// state instead of the thread's values. Nil for a task that reads the
	// thread's values.
	Input any
}

// Runner runs one graph for the run engine: the Go executor bound to a
// compiled Graph, or a worker process that hosts graph code written in
// another language. It reports everything a run produces to sink and
// returns the run's end; cancelling ctx stops it.
type Runner interface {
	Run(ctx context.Context, in Input, sink Sink) (Result, error)
}

// CheckpointReader reads a thread's stored checkpoints for an executor.
type CheckpointReader interface {
	// ReadCheckpoint returns one checkpoint of the thread; an error
	// wrapping errdefs.ErrNotFound when it has none of that id.
	ReadCheckpoint(ctx context.Context, threadID, checkpointID uuid.UUID) (Checkpoint, error)
	// ListCheckpoints returns the thread's checkpoints newest first, only
	// those older than before when it is set, at most limit (<= 0: all).
	ListCheckpoints(ctx context.Context, threadID uuid.UUID, before *uuid.UUID, limit int) ([]Checkpoint, error)
}

// CancelRepairer is implemented by runners whose graphs leave a state that
// must be repaired when a run is cancelled mid-step (an agent's tool calls
// that never got their results). CancelWrites returns the channel writes of
// a closing checkpoint for values, or nil when nothing needs repair.
type CancelRepairer interface {
	CancelWrites(values State) map[string]any
}

// Bind returns a Runner that runs g with e.
func (e *Executor) Bind(g *Graph) Runner { return boundGraph{e, g} }

type boundGraph struct {
	ex *Executor
	g  *Graph
}

func (b boundGraph) Run(ctx context.Context, in Input, sink Sink) (Result, error) {
	return b.ex.Run(ctx, b.g, in, sink)
}

// CancelWrites applies the graph's OnCancel hook.
func (b boundGraph) CancelWrites(values State) map[string]any {
	if b.g.OnCancel == nil {
		return nil
	}
	return b.g.OnCancel(values)
}
