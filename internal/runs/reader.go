package runs

import (
	"context"

	"github.com/google/uuid"

	"agentserver/internal/graph"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
)

// checkpointReader serves graph.CheckpointReader from the database, for
// executors that read checkpoints themselves (graph workers).
type checkpointReader struct{ db *storage.DB }

// ReadCheckpoint returns one stored checkpoint of a thread.
func (r checkpointReader) ReadCheckpoint(ctx context.Context, threadID, checkpointID uuid.UUID) (graph.Checkpoint, error) {
	var cp storage.Checkpoint
	err := r.db.View(ctx, func(tx *storage.Tx) error {
		var err error
		cp, err = tx.GetCheckpoint(threadID, checkpointID)
		return err
	})
	return threads.ExecutorCheckpoint(cp), err
}

// ListCheckpoints returns a thread's stored checkpoints newest first.
func (r checkpointReader) ListCheckpoints(ctx context.Context, threadID uuid.UUID, before *uuid.UUID, limit int) ([]graph.Checkpoint, error) {
	var cps []storage.Checkpoint
	err := r.db.View(ctx, func(tx *storage.Tx) error {
		var err error
		cps, err = tx.ListCheckpoints(threadID, before, limit, nil)
		return err
	})
	out := make([]graph.Checkpoint, len(cps))
	for i, cp := range cps {
		out[i] = threads.ExecutorCheckpoint(cp)
	}
	return out, err
}
