package storage

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"agentserver/internal/errdefs"
)

// The checkpoints of nested graphs (a subgraph run as a node of a graph
// worker's graph: checkpoint_ns "node:task_id", "outer:task|inner:task")
// live in bucketNestedCheckpoints, keyed thread_id(16) | checkpoint_ns |
// 0x00 | checkpoint_id(16), so that a thread's own checkpoints are the
// only keys of bucketCheckpoints (its newest is its last key) and the
// checkpoints of one namespace are adjacent, oldest first.

// ErrInvalidNamespace reports a checkpoint namespace that cannot be
// stored: one with a 0x00 byte.
var ErrInvalidNamespace = fmt.Errorf("checkpoint namespace contains a NUL byte: %w", errdefs.ErrInvalid)

func nestedPrefix(threadID uuid.UUID, ns string) []byte {
	k := make([]byte, 0, 16+len(ns)+1+16)
	k = append(k, threadID[:]...)
	k = append(k, ns...)
	return append(k, 0)
}

func nestedKey(threadID uuid.UUID, ns string, id uuid.UUID) []byte {
	return append(nestedPrefix(threadID, ns), id[:]...)
}

// putNested stores the encoded checkpoint of a nested graph.
func (t *Tx) putNested(threadID uuid.UUID, ns string, id uuid.UUID, raw []byte) error {
	if strings.IndexByte(ns, 0) >= 0 {
		return ErrInvalidNamespace
	}
	return t.bucket(bucketNestedCheckpoints).Put(nestedKey(threadID, ns, id), raw)
}

// GetNestedCheckpoint returns a checkpoint of namespace ns of a thread:
// the one of that id, or the namespace's newest when id is nil;
// ErrNotFound when there is none.
func (t *Tx) GetNestedCheckpoint(threadID uuid.UUID, ns string, id *uuid.UUID) (Checkpoint, error) {
	var cp Checkpoint
	var raw []byte
	if id != nil {
		raw = t.bucket(bucketNestedCheckpoints).Get(nestedKey(threadID, ns, *id))
	} else {
		_, raw = seekLastWithPrefix(t.bucket(bucketNestedCheckpoints).Cursor(), nestedPrefix(threadID, ns))
	}
	if raw == nil {
		return cp, fmt.Errorf("checkpoint of %q: %w", ns, ErrNotFound)
	}
	err := decode(raw, &cp)
	return cp, err
}

// ListNestedCheckpoints returns the checkpoints of namespace ns of a
// thread, newest first: only those older than before when it is set, at
// most limit (limit <= 0: all).
func (t *Tx) ListNestedCheckpoints(threadID uuid.UUID, ns string, before *uuid.UUID, limit int) ([]Checkpoint, error) {
	prefix := nestedPrefix(threadID, ns)
	c := t.bucket(bucketNestedCheckpoints).Cursor()
	var k, v []byte
	if before != nil {
		if k, v = c.Seek(append(bytes.Clone(prefix), before[:]...)); k != nil {
			k, v = c.Prev()
		} else {
			k, v = seekLastWithPrefix(c, prefix)
		}
	} else {
		k, v = seekLastWithPrefix(c, prefix)
	}
	var out []Checkpoint
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+16; k, v = c.Prev() {
		var cp Checkpoint
		if err := decode(v, &cp); err != nil {
			return nil, err
		}
		out = append(out, cp)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// AllNestedCheckpoints returns every nested checkpoint of a thread, by
// namespace and then oldest first.
func (t *Tx) AllNestedCheckpoints(threadID uuid.UUID) ([]Checkpoint, error) {
	var out []Checkpoint
	c := t.bucket(bucketNestedCheckpoints).Cursor()
	for k, v := c.Seek(threadID[:]); k != nil && bytes.HasPrefix(k, threadID[:]); k, v = c.Next() {
		var cp Checkpoint
		if err := decode(v, &cp); err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	return out, nil
}

// deleteNested deletes the nested checkpoints of a thread that doomed
// picks (all of them when doomed is nil).
func (t *Tx) deleteNested(threadID uuid.UUID, doomed func(k []byte, cp Checkpoint) bool) (int, error) {
	b := t.bucket(bucketNestedCheckpoints)
	if doomed == nil {
		return 0, deletePrefix(b, threadID[:])
	}
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.Seek(threadID[:]); k != nil && bytes.HasPrefix(k, threadID[:]); k, v = c.Next() {
		var cp Checkpoint
		if err := decode(v, &cp); err != nil {
			return 0, err
		}
		if doomed(k, cp) {
			keys = append(keys, bytes.Clone(k))
		}
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// keepLatestNested deletes every nested checkpoint of a thread but the
// newest of each namespace (what a paused subgraph resumes from).
func (t *Tx) keepLatestNested(threadID uuid.UUID) (int, error) {
	newest := map[string][]byte{}
	c := t.bucket(bucketNestedCheckpoints).Cursor()
	for k, _ := c.Seek(threadID[:]); k != nil && bytes.HasPrefix(k, threadID[:]); k, _ = c.Next() {
		ns := string(k[16 : len(k)-17])
		newest[ns] = bytes.Clone(k) // keys of a namespace come oldest first
	}
	return t.deleteNested(threadID, func(k []byte, _ Checkpoint) bool {
		return !bytes.Equal(newest[string(k[16:len(k)-17])], k)
	})
}
