package graph

import (
	"context"
	"encoding/json"
	"errors"
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

// ErrExecutorLost reports a run whose executor died under it (a graph
// worker process that crashed, was killed or stopped answering); runners
// wrap it. The run engine then retries the run from its last checkpoint
// with attempt+1, as after a crash of the server, since the run itself did
// not fail: what it acknowledged is in its checkpoints and pending writes.
var ErrExecutorLost = errors.New("the process executing the run died")

// StateUpdater is implemented by runners whose graphs apply a client's
// state update themselves (a graph worker: the graph's channels, reducers
// and edges live there, not in the server). UpdateState stores nothing:
// it returns the checkpoints the update wrote, oldest first (the new
// checkpoint, and the one it started from again when the update added
// pending writes to it), for the caller to store in one transaction.
type StateUpdater interface {
	UpdateState(ctx context.Context, u StateUpdate) (StateUpdated, error)
}

// StateUpdate is a client's write to a thread's state (update_state), as
// a StateUpdater receives it.
type StateUpdate struct {
	ThreadID uuid.UUID
	// From is the checkpoint the update starts from (nil: an empty
	// thread); Addressed is set when the client named it (a fork from an
	// older checkpoint) rather than the thread's newest.
	From      *Checkpoint
	Addressed bool
	// Values is the update (an object, a list of objects, or nil); AsNode
	// names the node the update is attributed to ("": the graph infers
	// it, as LangGraph does).
	Values any
	AsNode string
	// Metadata is merged into the new checkpoint's metadata.
	Metadata map[string]any
	// Checkpoints reads the thread's stored checkpoints.
	Checkpoints CheckpointReader
}

// StateUpdated is what a StateUpdater wrote: the checkpoints to store, and
// the id of the new one.
type StateUpdated struct {
	Checkpoints []Checkpoint
	Head        uuid.UUID
}

// CheckpointReader reads a thread's stored checkpoints for an executor.
type CheckpointReader interface {
	// ReadCheckpoint returns one checkpoint of the thread; an error
	// wrapping errdefs.ErrNotFound when it has none of that id.
	ReadCheckpoint(ctx context.Context, threadID, checkpointID uuid.UUID) (Checkpoint, error)
	// ListCheckpoints returns the thread's checkpoints newest first, only
	// those older than before when it is set, at most limit (<= 0: all).
	ListCheckpoints(ctx context.Context, threadID uuid.UUID, before *uuid.UUID, limit int) ([]Checkpoint, error)
	// ReadNested returns a checkpoint of a nested graph (namespace ns,
	// not ""): the one of that id, or the namespace's newest when id is
	// nil; an error wrapping errdefs.ErrNotFound when there is none.
	ReadNested(ctx context.Context, threadID uuid.UUID, ns string, id *uuid.UUID) (Checkpoint, error)
	// ListNested returns the checkpoints of namespace ns newest first,
	// as ListCheckpoints does the thread's own.
	ListNested(ctx context.Context, threadID uuid.UUID, ns string, before *uuid.UUID, limit int) ([]Checkpoint, error)
}

// CancelRepairer is implemented by runners whose graphs leave a state that
// must be repaired when a run is cancelled mid-step (an agent's tool calls
// that never got their results). CancelWrites returns the channel writes of
// a closing checkpoint for values, or nil when nothing needs repair.
type CancelRepairer interface {
	CancelWrites(values State) map[string]any
}

// Starter is implemented by runners that can tell, before a run executes,
// the checkpoints it writes before its first node (the Go executor's
// Begin), so that the run engine stores them in the transaction that
// starts the run and passes them back in Input.Begun.
type Starter interface {
	Begin(in Input) ([]Checkpoint, error)
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

// Begin returns the checkpoints a run of the graph from in writes before
// its first node (Executor.Begin).
func (b boundGraph) Begin(in Input) ([]Checkpoint, error) {
	return b.ex.Begin(b.g, in)
}

// CancelWrites applies the graph's OnCancel hook.
func (b boundGraph) CancelWrites(values State) map[string]any {
	if b.g.OnCancel == nil {
		return nil
	}
	return b.g.OnCancel(values)
}
