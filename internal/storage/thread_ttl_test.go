package storage

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The expiry index follows a thread's last update and TTL, lists expired
// threads earliest first, and loses the thread's entry when it is deleted.
func TestThreadExpiryIndex(t *testing.T) { forEachBackend(t, testThreadExpiryIndex) }

func testThreadExpiryIndex(t *testing.T, db *DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	short := newThread(nil, "idle")
	short.UpdatedAt, short.TTL = t0, map[string]any{"ttl": 1.0, "strategy": TTLDelete}
	long := newThread(nil, "idle")
	long.UpdatedAt, long.TTL = t0, map[string]any{"ttl": 10.0}
	forever := newThread(nil, "idle")
	forever.UpdatedAt = t0
	huge := newThread(nil, "idle")
	huge.UpdatedAt, huge.TTL = t0, map[string]any{"ttl": 1e30}
	put := func(ths ...Thread) {
		t.Helper()
		if err := db.Update(ctx, func(tx *Tx) error {
			for _, th := range ths {
				if err := tx.PutThread(th); err != nil {
					return err
				}
			}
			return tx.CheckThreadExpiryIndex()
		}); err != nil {
			t.Fatal(err)
		}
	}
	expired := func(at time.Time) []uuid.UUID {
		t.Helper()
		var ids []uuid.UUID
		if err := db.View(context.Background(), func(tx *Tx) error { ids = tx.ExpiredThreads(at, 100); return nil }); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	put(short, long, forever, huge)
	if got := expired(t0.Add(59 * time.Second)); len(got) != 0 {
		t.Fatalf("expired before any deadline: %v", got)
	}
	if got := expired(t0.Add(time.Minute)); len(got) != 1 || got[0] != short.ThreadID {
		t.Fatalf("expired at one minute: %v, want the short thread", got)
	}
	if got := expired(t0.Add(time.Hour)); len(got) != 2 || got[0] != short.ThreadID || got[1] != long.ThreadID {
		t.Fatalf("expired after an hour: %v, want short then long", got)
	}
	// An update moves the deadline.
	short.UpdatedAt = t0.Add(30 * time.Second)
	put(short)
	if got := expired(t0.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("the deadline did not follow the update: %v", got)
	}
	if err := db.Update(ctx, func(tx *Tx) error {
		if err := tx.DeleteThread(short.ThreadID); err != nil {
			return err
		}
		return tx.CheckThreadExpiryIndex()
	}); err != nil {
		t.Fatal(err)
	}
	if got := expired(t0.Add(time.Hour)); len(got) != 1 || got[0] != long.ThreadID {
		t.Fatalf("after delete: %v", got)
	}
}

// KeepLatestCheckpoint leaves only the newest checkpoint of its thread and
// no other thread's.
func TestKeepLatestCheckpoint(t *testing.T) { forEachBackend(t, testKeepLatestCheckpoint) }

func testKeepLatestCheckpoint(t *testing.T, db *DB) {
	ctx := context.Background()
	a, b := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	var newest uuid.UUID
	if err := db.Update(ctx, func(tx *Tx) error {
		for i := 0; i < 3; i++ {
			for _, th := range []uuid.UUID{a, b} {
				id := uuid.Must(uuid.NewV7())
				if th == a {
					newest = id
				}
				if err := tx.PutCheckpoint(Checkpoint{ThreadID: th, CheckpointID: id}); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Update(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.KeepLatestCheckpoint(a)
		return err
	}); err != nil || n != 2 {
		t.Fatalf("deleted %d, %v; want 2", n, err)
	}
	_ = db.View(context.Background(), func(tx *Tx) error {
		left, _ := tx.ListCheckpoints(a, nil, 0, nil)
		if len(left) != 1 || left[0].CheckpointID != newest {
			t.Fatalf("thread a keeps %v, want only %s", left, newest)
		}
		if other, _ := tx.ListCheckpoints(b, nil, 0, nil); len(other) != 3 {
			t.Fatalf("thread b lost checkpoints: %d left", len(other))
		}
		return nil
	})
}

// A file written before the expiry index existed gets it at open, so TTLs
// stored then are enforced.
func TestThreadExpiryBackfill(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	th := newThread(nil, "idle")
	th.TTL = map[string]any{"ttl": 5.0}
	if err := db.Update(context.Background(), func(tx *Tx) error { return tx.PutThread(th) }); err != nil {
		t.Fatal(err)
	}
	if err := db.boltDB().Update(func(btx *boltTx) error { return btx.DeleteBucket(bucketThreadsByExpiry) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(context.Background(), func(tx *Tx) error {
		if got := tx.ExpiredThreads(th.UpdatedAt.Add(5*time.Minute), 10); len(got) != 1 {
			t.Errorf("expired after reopen: %v", got)
		}
		return tx.CheckThreadExpiryIndex()
	}); err != nil {
		t.Fatal(err)
	}
}
