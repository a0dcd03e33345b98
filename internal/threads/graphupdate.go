package threads

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"agentserver/internal/errdefs"
	"agentserver/internal/graph"
	"agentserver/internal/storage"
)

// StateUpdaters returns the graph.StateUpdater of a graph id, or nil when
// the server applies that graph's updates itself (or does not serve it).
type StateUpdaters func(graphID string) graph.StateUpdater

// graphOwned stops a state update inside its transaction when the
// checkpoint it starts from was written by a graph worker (it has a
// native form): the update is then the graph's to apply. head is the
// thread's newest checkpoint when it was read.
type graphOwned struct {
	parent storage.Checkpoint
	head   uuid.UUID
}

func (g *graphOwned) Error() string {
	return fmt.Sprintf("checkpoint %s was written by a graph worker", g.parent.CheckpointID)
}

// graphOf names the graph that wrote a checkpoint.
func graphOf(cp storage.Checkpoint) string {
	id, _ := cp.Metadata["graph_id"].(string)
	return id
}

// updateThroughGraph applies a client's update to a thread whose state a
// graph worker keeps: the graph applies it outside any transaction (its
// reducers and its choice of the node run in the worker), then the
// checkpoints it wrote are stored in one transaction, unless the thread
// became busy or gained a checkpoint meanwhile (a conflict: nothing is
// written). restrict is the caller's restriction of the thread (nil:
// none), checked again when writing.
func (s *Service) updateThroughGraph(ctx context.Context, threadID uuid.UUID, u StateUpdate, owned *graphOwned, restrict map[string]any) (CheckpointRef, error) {
	graphID := graphOf(owned.parent)
	var up graph.StateUpdater
	if s.updaters != nil {
		up = s.updaters(graphID)
	}
	if up == nil {
		return CheckpointRef{}, fmt.Errorf("thread %s: its state was written by graph %q, which this server does not serve, so it cannot apply the update: %w", threadID, graphID, errdefs.ErrConflict)
	}
	from := ExecutorCheckpoint(owned.parent)
	res, err := up.UpdateState(ctx, graph.StateUpdate{
		ThreadID: threadID, From: &from, Addressed: u.CheckpointID != nil, Values: u.Values, AsNode: u.AsNode,
		Metadata: map[string]any{"graph_id": graphID}, Checkpoints: s.Checkpoints(),
	})
	if err != nil {
		return CheckpointRef{}, err
	}
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		th, err := tx.GetThreadWhere(threadID, restrict)
		if err != nil {
			return err
		}
		if th.Status == StatusBusy {
			return fmt.Errorf("thread %s is busy: %w", threadID, errdefs.ErrConflict)
		}
		if head, err := tx.LatestCheckpointID(threadID); err != nil || head != owned.head {
			return fmt.Errorf("thread %s: its state changed while the update was applied; send it again: %w", threadID, errdefs.ErrConflict)
		}
		var next []string
		for _, cp := range res.Checkpoints {
			if err := tx.PutCheckpoint(StoredCheckpoint(cp)); err != nil {
				return err
			}
			if cp.CheckpointID == res.Head {
				next = cp.Next
			}
		}
		now := s.now()
		th.UpdatedAt, th.StateUpdatedAt = now, now
		if th.Status == StatusInterrupted && len(next) == 0 {
			th.Status = StatusIdle
		}
		return tx.PutThread(th)
	})
	if err != nil {
		return CheckpointRef{}, err
	}
	return CheckpointRef{ThreadID: threadID, CheckpointID: res.Head}, nil
}
