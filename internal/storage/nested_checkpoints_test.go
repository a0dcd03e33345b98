package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// TestNestedCheckpoints: checkpoints of nested graphs are kept apart from
// the thread's own (its newest stays its own), read by namespace and id or
// as a namespace's newest, listed newest first; a rolled-back run's are
// deleted, keep_latest keeps the newest of each namespace, and deleting
// the thread deletes them.
func TestNestedCheckpoints(t *testing.T) { forEachBackend(t, testNestedCheckpoints) }

func testNestedCheckpoints(t *testing.T, db *DB) {
	ctx := context.Background()
	th := newThread(nil, "idle")
	run, other := uuid.New(), uuid.New()
	const outer, inner = "middle:1", "middle:1|inner:2"
	var root uuid.UUID
	ids := map[string][]uuid.UUID{}
	put := func(tx *Tx, ns string, runID uuid.UUID) error {
		id := uuid.Must(uuid.NewV7())
		if ns == "" {
			root = id
		} else {
			ids[ns] = append(ids[ns], id)
		}
		return tx.PutCheckpoint(Checkpoint{ThreadID: th.ThreadID, CheckpointID: id, CheckpointNS: ns, RunID: &runID, Values: map[string]any{"ns": ns}})
	}
	err := db.Update(ctx, func(tx *Tx) error {
		if err := tx.PutThread(th); err != nil {
			return err
		}
		for _, step := range []struct {
			ns  string
			run uuid.UUID
		}{{"", other}, {outer, other}, {outer, run}, {inner, run}, {inner, run}} {
			if err := put(tx, step.ns, step.run); err != nil {
				return err
			}
		}
		if err := tx.PutCheckpoint(Checkpoint{ThreadID: th.ThreadID, CheckpointID: uuid.New(), CheckpointNS: "bad\x00ns"}); !errors.Is(err, ErrInvalidNamespace) {
			return fmt.Errorf("a namespace with NUL: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(ctx, func(tx *Tx) error {
		if latest, err := tx.LatestCheckpoint(th.ThreadID); err != nil || latest.CheckpointID != root {
			return fmt.Errorf("the thread's newest = %v %v, want its own %s", latest.CheckpointID, err, root)
		}
		if all, _ := tx.ListCheckpoints(th.ThreadID, nil, 0, nil); len(all) != 1 {
			return fmt.Errorf("the thread's own list has %d checkpoints, want 1", len(all))
		}
		newest, err := tx.GetNestedCheckpoint(th.ThreadID, inner, nil)
		if err != nil || newest.CheckpointID != ids[inner][1] || newest.CheckpointNS != inner {
			return fmt.Errorf("newest of %s = %v %v", inner, newest.CheckpointID, err)
		}
		if cp, err := tx.GetNestedCheckpoint(th.ThreadID, outer, &ids[outer][0]); err != nil || cp.Values["ns"] != outer {
			return fmt.Errorf("checkpoint of %s by id = %v %v", outer, cp, err)
		}
		if _, err := tx.GetNestedCheckpoint(th.ThreadID, "middle", nil); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("a namespace that is a prefix of others has no checkpoint of its own: %v", err)
		}
		list, err := tx.ListNestedCheckpoints(th.ThreadID, outer, nil, 0)
		if err != nil || len(list) != 2 || list[0].CheckpointID != ids[outer][1] {
			return fmt.Errorf("list of %s = %d %v", outer, len(list), err)
		}
		if list, _ := tx.ListNestedCheckpoints(th.ThreadID, inner, &ids[inner][1], 5); len(list) != 1 || list[0].CheckpointID != ids[inner][0] {
			return fmt.Errorf("list of %s before its newest = %d", inner, len(list))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		all, err := Read(ctx, db, func(tx *Tx) ([]Checkpoint, error) { return tx.AllNestedCheckpoints(th.ThreadID) })
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	if err := db.Update(ctx, func(tx *Tx) error { return tx.DeleteRunCheckpoints(th.ThreadID, run) }); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d nested checkpoints after the run's rollback, want the other run's 1", n)
	}
	err = db.Update(ctx, func(tx *Tx) error {
		for i := 0; i < 3; i++ {
			if err := put(tx, inner, run); err != nil {
				return err
			}
		}
		n, err := tx.KeepLatestCheckpoint(th.ThreadID)
		if err == nil && n != 2 {
			err = fmt.Errorf("keep_latest deleted %d, want 2", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d nested checkpoints after keep_latest, want the newest of each namespace", n)
	}
	if err := db.Update(ctx, func(tx *Tx) error { return tx.DeleteThread(th.ThreadID) }); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d nested checkpoints after the thread's deletion", n)
	}
}
