package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Checkpoint is one saved state of a thread, written after each super-step
// of a run and by every state update.
type Checkpoint struct {
	ThreadID     uuid.UUID      `json:"thread_id"`
	CheckpointID uuid.UUID      `json:"checkpoint_id"`
	CheckpointNS string         `json:"checkpoint_ns"`
	ParentID     *uuid.UUID     `json:"parent_checkpoint_id,omitempty"`
	CreatedAt    time.Time      `json:"created_at"`
	Values       map[string]any `json:"values"`
	// Metadata holds source ("input", "loop", "update", "fork"), step,
	// writes, parents and the run fields that produced the checkpoint.
	Metadata map[string]any `json:"metadata"`
	// Next lists the nodes that would run next; non-empty means the graph
	// is paused (interrupted) or was stopped mid-run.
	Next  []string         `json:"next"`
	Tasks []CheckpointTask `json:"tasks"`
	// RunID is the run that wrote the checkpoint, if any.
	RunID *uuid.UUID `json:"run_id,omitempty"`
	// Native is a graph worker's own serialized form of the checkpoint,
	// kept as it is (nil for graphs the Go executor runs).
	Native json.RawMessage `json:"native,omitempty"`
}

// CheckpointTask is a task pending at a checkpoint.
type CheckpointTask struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Error      *string `json:"error"`
	Interrupts []any   `json:"interrupts"`
	Result     any     `json:"result,omitempty"`
	// Input is the argument of a Send: the task's node runs with it as its
	// state instead of the thread's values. Nil for a task that reads the
	// thread's values.
	Input any `json:"input,omitempty"`
}

// PutCheckpoint stores a checkpoint: a thread's own, or a nested graph's
// (CheckpointNS set). Checkpoint ids are time-ordered (UUIDv6, or the
// UUIDv7 of earlier releases), so the newest checkpoint of a thread has
// the largest key.
func (t *Tx) PutCheckpoint(cp Checkpoint) error {
	raw, err := encode(cp)
	if err != nil {
		return err
	}
	if cp.CheckpointNS != "" {
		return t.putNested(cp.ThreadID, cp.CheckpointNS, cp.CheckpointID, raw)
	}
	return t.bucket(bucketCheckpoints).Put(pairKey(cp.ThreadID, cp.CheckpointID), raw)
}

// GetCheckpoint returns one checkpoint of a thread, or ErrNotFound.
func (t *Tx) GetCheckpoint(threadID, checkpointID uuid.UUID) (Checkpoint, error) {
	var cp Checkpoint
	raw := t.bucket(bucketCheckpoints).Get(pairKey(threadID, checkpointID))
	if raw == nil {
		return cp, fmt.Errorf("checkpoint %s: %w", checkpointID, ErrNotFound)
	}
	err := decode(raw, &cp)
	return cp, err
}

// LatestCheckpoint returns the newest checkpoint of a thread, or ErrNotFound
// when the thread has none.
func (t *Tx) LatestCheckpoint(threadID uuid.UUID) (Checkpoint, error) {
	var cp Checkpoint
	c := t.bucket(bucketCheckpoints).Cursor()
	k, v := seekLastWithPrefix(c, threadID[:])
	if k == nil {
		return cp, fmt.Errorf("thread %s has no checkpoint: %w", threadID, ErrNotFound)
	}
	err := decode(v, &cp)
	return cp, err
}

// LatestCheckpointID returns the id of a thread's newest checkpoint without
// decoding it, or ErrNotFound.
func (t *Tx) LatestCheckpointID(threadID uuid.UUID) (uuid.UUID, error) {
	k, _ := seekLastWithPrefix(t.bucket(bucketCheckpoints).Cursor(), threadID[:])
	if k == nil {
		return uuid.Nil, fmt.Errorf("thread %s has no checkpoint: %w", threadID, ErrNotFound)
	}
	return uuid.FromBytes(k[16:])
}

// ListCheckpoints returns a thread's checkpoints newest first. With before
// set, only checkpoints older than it are returned. keep filters them (nil
// keeps all); at most limit are returned (limit <= 0: no limit).
func (t *Tx) ListCheckpoints(threadID uuid.UUID, before *uuid.UUID, limit int, keep func(Checkpoint) bool) ([]Checkpoint, error) {
	c := t.bucket(bucketCheckpoints).Cursor()
	var k, v []byte
	if before != nil {
		k, v = c.Seek(pairKey(threadID, *before))
		if k != nil {
			k, v = c.Prev()
		} else {
			k, v = seekLastWithPrefix(c, threadID[:])
		}
	} else {
		k, v = seekLastWithPrefix(c, threadID[:])
	}
	var out []Checkpoint
	for ; k != nil && bytes.HasPrefix(k, threadID[:]); k, v = c.Prev() {
		var cp Checkpoint
		if err := decode(v, &cp); err != nil {
			return nil, err
		}
		if keep != nil && !keep(cp) {
			continue
		}
		out = append(out, cp)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// DeleteCheckpoints removes the given checkpoints of a thread.
func (t *Tx) DeleteCheckpoints(threadID uuid.UUID, ids []uuid.UUID) error {
	b := t.bucket(bucketCheckpoints)
	for _, id := range ids {
		if err := b.Delete(pairKey(threadID, id)); err != nil {
			return err
		}
	}
	return nil
}

// seekLastWithPrefix positions c on the last key that starts with prefix.
func seekLastWithPrefix(c kvCursor, prefix []byte) ([]byte, []byte) {
	end := prefixEnd(prefix)
	var k, v []byte
	if end == nil {
		k, v = c.Last()
	} else if k, v = c.Seek(end); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil, nil
	}
	return k, v
}

// prefixEnd returns the smallest key greater than every key with prefix, or
// nil if there is none.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// deletePrefix deletes every key of b that starts with prefix.
func deletePrefix(b kvBucket, prefix []byte) error {
	if rd, ok := b.(rangeDeleter); ok {
		return rd.deleteRange(prefix, prefixEnd(prefix))
	}
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// DeleteRunCheckpoints removes the checkpoints a run wrote on a thread,
// nested graphs' included.
func (t *Tx) DeleteRunCheckpoints(threadID, runID uuid.UUID) error {
	if _, err := t.deleteNested(threadID, func(_ []byte, cp Checkpoint) bool { return cp.RunID != nil && *cp.RunID == runID }); err != nil {
		return err
	}
	c := t.bucket(bucketCheckpoints).Cursor()
	prefix := threadID[:]
	var doomed [][]byte
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var cp Checkpoint
		if err := decode(v, &cp); err != nil {
			return err
		}
		if cp.RunID != nil && *cp.RunID == runID {
			doomed = append(doomed, append([]byte(nil), k...))
		}
	}
	b := t.bucket(bucketCheckpoints)
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
