package threads

import (
	"agentserver/internal/authz"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/errdefs"
	"agentserver/internal/jsonx"
	"agentserver/internal/storage"
)

// State is a thread's state at one checkpoint, in the LangGraph ThreadState
// shape.
type State struct {
	Values           map[string]any
	Next             []string
	Tasks            []storage.CheckpointTask
	Metadata         map[string]any
	CreatedAt        *time.Time
	Checkpoint       *CheckpointRef
	ParentCheckpoint *CheckpointRef
	Interrupts       []any
	// Subgraphs holds, by task id, the state of the nested graph a
	// pending task runs (when read with subgraphs and it has one).
	Subgraphs map[string]State
}

// CheckpointRef names a checkpoint the way clients address it.
type CheckpointRef struct {
	ThreadID     uuid.UUID
	CheckpointNS string
	CheckpointID uuid.UUID
}

// StateOf converts a stored checkpoint to a State.
func StateOf(cp storage.Checkpoint) State {
	created := cp.CreatedAt
	st := State{
		Values: cp.Values, Next: cp.Next, Tasks: cp.Tasks, Metadata: cp.Metadata, CreatedAt: &created,
		Checkpoint: &CheckpointRef{ThreadID: cp.ThreadID, CheckpointNS: cp.CheckpointNS, CheckpointID: cp.CheckpointID},
		Interrupts: []any{},
	}
	if cp.ParentID != nil {
		st.ParentCheckpoint = &CheckpointRef{ThreadID: cp.ThreadID, CheckpointNS: cp.CheckpointNS, CheckpointID: *cp.ParentID}
	}
	for _, t := range cp.Tasks {
		st.Interrupts = append(st.Interrupts, t.Interrupts...)
	}
	if st.Values == nil {
		st.Values = map[string]any{}
	}
	if st.Next == nil {
		st.Next = []string{}
	}
	if st.Tasks == nil {
		st.Tasks = []storage.CheckpointTask{}
	}
	if st.Metadata == nil {
		st.Metadata = map[string]any{}
	}
	return st
}

// emptyState is the state of a thread that has no checkpoint yet.
func emptyState() State {
	return State{Values: map[string]any{}, Next: []string{}, Tasks: []storage.CheckpointTask{}, Metadata: map[string]any{}, Interrupts: []any{}}
}

// GetState returns the state at checkpointID, or the newest state when nil.
func (s *Service) GetState(ctx context.Context, threadID uuid.UUID, checkpointID *uuid.UUID) (State, error) {
	return s.getState(ctx, threadID, checkpointID, false)
}

// GetStateWithSubgraphs is GetState with, for every pending task that runs
// a nested graph (a subgraph of a graph worker's graph), that graph's
// newest state in State.Subgraphs, recursively: LangGraph's
// getState(subgraphs=true).
func (s *Service) GetStateWithSubgraphs(ctx context.Context, threadID uuid.UUID, checkpointID *uuid.UUID) (State, error) {
	return s.getState(ctx, threadID, checkpointID, true)
}

// maxSubgraphDepth bounds the nesting GetStateWithSubgraphs follows.
const maxSubgraphDepth = 32

// withSubgraphs fills st.Subgraphs from the newest checkpoint of each
// task's namespace: ns of the state's own graph, then "|name:task_id".
func withSubgraphs(tx *storage.Tx, threadID uuid.UUID, ns string, st *State, depth int) error {
	if depth >= maxSubgraphDepth {
		return nil
	}
	for _, t := range st.Tasks {
		child := t.Name + ":" + t.ID
		if ns != "" {
			child = ns + "|" + child
		}
		cp, err := tx.GetNestedCheckpoint(threadID, child, nil)
		if errors.Is(err, errdefs.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		sub := StateOf(cp)
		if err := withSubgraphs(tx, threadID, child, &sub, depth+1); err != nil {
			return err
		}
		if st.Subgraphs == nil {
			st.Subgraphs = map[string]State{}
		}
		st.Subgraphs[t.ID] = sub
	}
	return nil
}

func (s *Service) getState(ctx context.Context, threadID uuid.UUID, checkpointID *uuid.UUID, subgraphs bool) (State, error) {
	restrict, err := visible(ctx, authz.Read, threadID)
	if err != nil {
		return State{}, err
	}
	var out State
	err = s.db.View(ctx, func(tx *storage.Tx) error {
		if err := checkVisible(tx, threadID, restrict); err != nil {
			return err
		}
		var cp storage.Checkpoint
		var err error
		if checkpointID != nil {
			cp, err = tx.GetCheckpoint(threadID, *checkpointID)
		} else {
			cp, err = tx.LatestCheckpoint(threadID)
			if err != nil {
				out = emptyState()
				return nil
			}
		}
		if err != nil {
			return err
		}
		out = StateOf(cp)
		if subgraphs {
			return withSubgraphs(tx, threadID, "", &out, 0)
		}
		return nil
	})
	return out, err
}

// StateUpdate is a client's write to a thread's state.
type StateUpdate struct {
	// Values is an object, a list of objects, or nil.
	Values any
	AsNode string
	// CheckpointID forks from that checkpoint instead of the newest.
	CheckpointID *uuid.UUID
}

// UpdateState applies an update through the channel reducers and writes it
// as a new checkpoint with source "update". A busy thread refuses updates.
//
// The state of a thread whose checkpoint a graph worker wrote (a
// JavaScript graph's) is updated by that graph, through its
// graph.StateUpdater (updateThroughGraph).
func (s *Service) UpdateState(ctx context.Context, threadID uuid.UUID, u StateUpdate) (CheckpointRef, error) {
	restrict, err := visible(ctx, authz.Update, threadID)
	if err != nil {
		return CheckpointRef{}, err
	}
	var ref CheckpointRef
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		if err := checkVisible(tx, threadID, restrict); err != nil {
			return err
		}
		cp, err := s.writeUpdate(tx, threadID, u.CheckpointID, u.AsNode, false, func(map[string]any) (any, error) { return u.Values, nil })
		if err == nil {
			ref = CheckpointRef{ThreadID: threadID, CheckpointNS: cp.CheckpointNS, CheckpointID: cp.CheckpointID}
		}
		return err
	})
	var owned *graphOwned
	if errors.As(err, &owned) {
		return s.updateThroughGraph(ctx, threadID, u, owned, restrict)
	}
	return ref, err
}

// UpdateStateWith computes an update from the thread's current values inside
// the write transaction, so that the decision and the write see the same
// state. fn returning a nil update writes nothing. An update beside a
// paused graph keeps it paused. A busy thread refuses.
//
// On a thread whose state a graph worker keeps, fn reads the newest
// checkpoint's values and the graph applies the update, attributing it to
// a node itself (asNode names the writer only in updates the server
// applies); the thread moving meanwhile is a conflict, as a busy thread is.
func (s *Service) UpdateStateWith(ctx context.Context, threadID uuid.UUID, asNode string, fn func(values map[string]any) (map[string]any, error)) (bool, error) {
	wrote := false
	err := s.db.Update(ctx, func(tx *storage.Tx) error {
		cp, err := s.writeUpdate(tx, threadID, nil, asNode, true, func(values map[string]any) (any, error) {
			upd, err := fn(values)
			if upd == nil {
				return nil, err // an untyped nil: nothing to write
			}
			return upd, err
		})
		wrote = err == nil && cp != nil
		return err
	})
	var owned *graphOwned
	if !errors.As(err, &owned) {
		return wrote, err
	}
	upd, err := fn(owned.parent.Values)
	if upd == nil || err != nil {
		return false, err
	}
	_, err = s.updateThroughGraph(ctx, threadID, StateUpdate{Values: upd}, owned, nil)
	return err == nil, err
}

// writeUpdate applies one state update as a new checkpoint after from (nil:
// the newest). compute returns the update from the base values; nil writes
// nothing and returns a nil checkpoint.
func (s *Service) writeUpdate(tx *storage.Tx, threadID uuid.UUID, from *uuid.UUID, asNode string, keepNext bool, compute func(values map[string]any) (any, error)) (*storage.Checkpoint, error) {
	th, err := tx.GetThread(threadID)
	if err != nil {
		return nil, err
	}
	if th.Status == StatusBusy {
		return nil, fmt.Errorf("thread %s is busy: %w", threadID, errdefs.ErrConflict)
	}
	var parent *storage.Checkpoint
	if from != nil {
		cp, err := tx.GetCheckpoint(threadID, *from)
		if err != nil {
			return nil, err
		}
		parent = &cp
	} else if cp, err := tx.LatestCheckpoint(threadID); err == nil {
		parent = &cp
	}
	if parent != nil && len(parent.Native) > 0 {
		// A graph worker's checkpoint: only its graph can update it.
		owned := &graphOwned{parent: *parent}
		if owned.head, err = tx.LatestCheckpointID(threadID); err != nil {
			return nil, err
		}
		return nil, owned
	}
	var base map[string]any
	if parent != nil {
		base = parent.Values
	}
	upd, err := compute(base)
	if err != nil || (upd == nil && keepNext) {
		return nil, err
	}
	values, err := s.applyValues(base, upd)
	if err != nil {
		return nil, invalid(err)
	}
	cp := s.newCheckpoint(threadID, parent, values, map[string]any{"source": "update", "writes": map[string]any{asNodeOr(asNode): jsonx.Clone(upd)}})
	if keepNext && parent != nil {
		cp.Next, cp.Tasks = parent.Next, parent.Tasks
	}
	if err := tx.PutCheckpoint(cp); err != nil {
		return nil, err
	}
	th.UpdatedAt, th.StateUpdatedAt = cp.CreatedAt, cp.CreatedAt
	if th.Status == StatusInterrupted && len(cp.Next) == 0 {
		th.Status = StatusIdle
	}
	return &cp, tx.PutThread(th)
}

// HistoryQuery selects checkpoints for History.
type HistoryQuery struct {
	Limit    int
	Before   *uuid.UUID
	Metadata map[string]any
}

// History returns a thread's states newest first.
func (s *Service) History(ctx context.Context, threadID uuid.UUID, q HistoryQuery) ([]State, error) {
	restrict, err := visible(ctx, authz.Read, threadID)
	if err != nil {
		return nil, err
	}
	var out []State
	err = s.db.View(ctx, func(tx *storage.Tx) error {
		if err := checkVisible(tx, threadID, restrict); err != nil {
			return err
		}
		var keep func(storage.Checkpoint) bool
		if len(q.Metadata) > 0 {
			keep = func(cp storage.Checkpoint) bool { return jsonx.Contains(cp.Metadata, q.Metadata) }
		}
		cps, err := tx.ListCheckpoints(threadID, q.Before, q.Limit, keep)
		if err != nil {
			return err
		}
		out = make([]State, 0, len(cps))
		for _, cp := range cps {
			out = append(out, StateOf(cp))
		}
		return nil
	})
	return out, err
}

// PatchStateMetadata merges metadata into the metadata of the thread's
// newest checkpoint, in place: no checkpoint is added and the values do
// not change. A thread without a checkpoint has no state to patch
// (ErrNotFound); a busy thread refuses (ErrConflict).
func (s *Service) PatchStateMetadata(ctx context.Context, threadID uuid.UUID, metadata map[string]any) error {
	restrict, err := visible(ctx, authz.Update, threadID)
	if err != nil {
		return err
	}
	return s.db.Update(ctx, func(tx *storage.Tx) error {
		th, err := tx.GetThreadWhere(threadID, restrict)
		if err != nil {
			return err
		}
		if th.Status == StatusBusy {
			return fmt.Errorf("thread %s is busy: %w", threadID, errdefs.ErrConflict)
		}
		cp, err := tx.LatestCheckpoint(threadID)
		if err != nil {
			return fmt.Errorf("thread %s has no state to patch: %w", threadID, errdefs.ErrNotFound)
		}
		cp.Metadata = jsonx.Merge(cp.Metadata, metadata)
		if err := tx.PutCheckpoint(cp); err != nil {
			return err
		}
		th.UpdatedAt = s.now()
		return tx.PutThread(th)
	})
}
