package runs

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/storage"
	"agentserver/internal/testutil/testdb"
)

// Checkpoints handed over faster than commits finish all land: the ones
// the background commits took, and the rest written by the caller after
// drain, with the newest last.
func TestCheckpointWriterLosesNothing(t *testing.T) {
	db := openDB(t)
	thread := uuid.Must(uuid.NewV7())
	w := checkpointWriter{db: db, run: putRun(t, db, thread, storage.RunRunning)}
	const n = 300
	var ids []uuid.UUID
	msgs := []any{}
	for i := range n {
		msgs = append(msgs, map[string]any{"type": "human", "id": uuid.NewString(), "content": "m"})
		cp := storage.Checkpoint{ThreadID: thread, CheckpointID: uuid.Must(uuid.NewV7()), CreatedAt: time.Now().UTC(),
			Values: map[string]any{"messages": msgs, "i": float64(i)}, Metadata: map[string]any{}, Next: []string{}, Tasks: []storage.CheckpointTask{}}
		ids = append(ids, cp.CheckpointID)
		w.add(cp)
	}
	rest := w.drain()
	w.add(storage.Checkpoint{ThreadID: thread, CheckpointID: uuid.Must(uuid.NewV7())}) // after drain: ignored
	encoded, err := w.encode(rest)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(context.Background(), func(tx *storage.Tx) error { return putEncoded(tx, encoded) }); err != nil {
		t.Fatal(err)
	}
	if err := w.settled(); err != nil {
		t.Fatal(err)
	}
	err = db.View(context.Background(), func(tx *storage.Tx) error {
		all, err := tx.ListCheckpoints(thread, nil, 0, nil)
		if err != nil {
			return err
		}
		if len(all) != n {
			t.Fatalf("%d checkpoints stored, want %d (%d were left to the caller)", len(all), n, len(rest))
		}
		for i, cp := range all {
			if want := ids[n-1-i]; cp.CheckpointID != want {
				t.Fatalf("checkpoint %d is %s, want %s", i, cp.CheckpointID, want)
			}
			if got := len(cp.Values["messages"].([]any)); got != n-i {
				t.Fatalf("checkpoint %d holds %d messages, want %d", i, got, n-i)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// openDB opens a store in a temporary directory, closed when the test ends.
func openDB(t *testing.T) *storage.DB {
	t.Helper()
	db := testdb.OpenWith(t, storage.Options{})
	return db
}

// putRun stores a run of thread with a status and returns its id.
func putRun(t *testing.T, db *storage.DB, thread uuid.UUID, status string) uuid.UUID {
	t.Helper()
	run := storage.Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: thread, Status: status}
	if err := db.Update(context.Background(), func(tx *storage.Tx) error { return tx.PutRun(run) }); err != nil {
		t.Fatal(err)
	}
	return run.RunID
}

// A run that no longer owns its thread (it ended, or was deleted with its
// thread) has its background commits dropped.
func TestCheckpointWriterFenced(t *testing.T) {
	db := openDB(t)
	thread := uuid.Must(uuid.NewV7())
	for _, status := range []string{storage.RunInterrupted, storage.RunTimeout, "deleted"} {
		w := checkpointWriter{db: db, run: uuid.Must(uuid.NewV7())}
		if status != "deleted" {
			w.run = putRun(t, db, thread, status)
		}
		w.add(storage.Checkpoint{ThreadID: thread, CheckpointID: uuid.Must(uuid.NewV7()), Values: map[string]any{}})
		w.drain()
		if err := w.settled(); err != nil {
			t.Fatal(err)
		}
	}
	err := db.View(context.Background(), func(tx *storage.Tx) error {
		all, err := tx.ListCheckpoints(thread, nil, 0, nil)
		if len(all) != 0 {
			t.Fatalf("%d checkpoints written by runs that lost their thread", len(all))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A run that never handed over a checkpoint drains at once.
func TestCheckpointWriterIdle(t *testing.T) {
	w := checkpointWriter{}
	if rest := w.drain(); len(rest) != 0 {
		t.Fatalf("rest = %v", rest)
	}
	if err := w.settled(); err != nil {
		t.Fatal(err)
	}
}
