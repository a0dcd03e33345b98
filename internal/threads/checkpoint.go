package threads

import (
	"context"

	"github.com/google/uuid"

	"agentserver/internal/graph"
	"agentserver/internal/storage"
)

// ExecutorCheckpoint converts a stored checkpoint into the executor's
// type. The two share their maps and lists: neither side modifies them
// (graph's invariant on immutable state).
func ExecutorCheckpoint(cp storage.Checkpoint) graph.Checkpoint {
	tasks := make([]graph.CheckpointTask, len(cp.Tasks))
	for i, t := range cp.Tasks {
		tasks[i] = graph.CheckpointTask(t)
	}
	return graph.Checkpoint{
		ThreadID: cp.ThreadID, CheckpointID: cp.CheckpointID, CheckpointNS: cp.CheckpointNS, ParentID: cp.ParentID,
		CreatedAt: cp.CreatedAt, Values: cp.Values, Metadata: cp.Metadata, Next: cp.Next, Tasks: tasks, RunID: cp.RunID,
		Native: cp.Native,
	}
}

// StoredCheckpoint converts an executor's checkpoint into the stored
// record.
func StoredCheckpoint(cp graph.Checkpoint) storage.Checkpoint {
	return storage.Checkpoint{
		ThreadID: cp.ThreadID, CheckpointID: cp.CheckpointID, CheckpointNS: cp.CheckpointNS, ParentID: cp.ParentID,
		CreatedAt: cp.CreatedAt, Values: cp.Values, Metadata: cp.Metadata, Next: cp.Next, Tasks: StoredTasks(cp.Tasks), RunID: cp.RunID,
		Native: cp.Native,
	}
}

// StoredTasks converts an executor's checkpoint tasks into stored ones.
func StoredTasks(tasks []graph.CheckpointTask) []storage.CheckpointTask {
	out := make([]storage.CheckpointTask, len(tasks))
	for i, t := range tasks {
		out[i] = storage.CheckpointTask(t)
	}
	return out
}

// Checkpoints reads the threads' stored checkpoints for executors that
// read them themselves (graph workers).
func (s *Service) Checkpoints() graph.CheckpointReader { return checkpointReader{s.db} }

// checkpointReader serves graph.CheckpointReader from the database.
type checkpointReader struct{ db *storage.DB }

// ReadCheckpoint returns one stored checkpoint of a thread.
func (r checkpointReader) ReadCheckpoint(ctx context.Context, threadID, checkpointID uuid.UUID) (graph.Checkpoint, error) {
	cp, err := storage.Read(ctx, r.db, func(tx *storage.Tx) (storage.Checkpoint, error) { return tx.GetCheckpoint(threadID, checkpointID) })
	return ExecutorCheckpoint(cp), err
}

// ListCheckpoints returns a thread's stored checkpoints newest first.
func (r checkpointReader) ListCheckpoints(ctx context.Context, threadID uuid.UUID, before *uuid.UUID, limit int) ([]graph.Checkpoint, error) {
	cps, err := storage.Read(ctx, r.db, func(tx *storage.Tx) ([]storage.Checkpoint, error) {
		return tx.ListCheckpoints(threadID, before, limit, nil)
	})
	return executorCheckpoints(cps), err
}

// ReadNested returns a stored checkpoint of a nested graph.
func (r checkpointReader) ReadNested(ctx context.Context, threadID uuid.UUID, ns string, id *uuid.UUID) (graph.Checkpoint, error) {
	cp, err := storage.Read(ctx, r.db, func(tx *storage.Tx) (storage.Checkpoint, error) {
		return tx.GetNestedCheckpoint(threadID, ns, id)
	})
	return ExecutorCheckpoint(cp), err
}

// ListNested returns the stored checkpoints of a nested graph's namespace
// newest first.
func (r checkpointReader) ListNested(ctx context.Context, threadID uuid.UUID, ns string, before *uuid.UUID, limit int) ([]graph.Checkpoint, error) {
	cps, err := storage.Read(ctx, r.db, func(tx *storage.Tx) ([]storage.Checkpoint, error) {
		return tx.ListNestedCheckpoints(threadID, ns, before, limit)
	})
	return executorCheckpoints(cps), err
}

func executorCheckpoints(cps []storage.Checkpoint) []graph.Checkpoint {
	out := make([]graph.Checkpoint, len(cps))
	for i, cp := range cps {
		out[i] = ExecutorCheckpoint(cp)
	}
	return out
}
