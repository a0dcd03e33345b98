package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

func openTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newThread(meta map[string]any, status string) Thread {
	now := time.Now().UTC()
	return Thread{ThreadID: uuid.Must(uuid.NewV7()), CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now, Metadata: meta, Status: status}
}

func TestGroupCommitIsolatesFailingMember(t *testing.T) {
	forEachBackend(t, testGroupCommitIsolatesFailingMember)
}

func testGroupCommitIsolatesFailingMember(t *testing.T, db *DB) {
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	ids := make([]uuid.UUID, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			th := newThread(map[string]any{"i": float64(i)}, "idle")
			ids[i] = th.ThreadID
			errs[i] = db.Update(context.Background(), func(tx *Tx) error {
				if err := tx.PutThread(th); err != nil {
					return err
				}
				if i%10 == 0 {
					return fmt.Errorf("member %d: %w", i, ErrConflict)
				}
				return nil
			})
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		wantErr := i%10 == 0
		if gotErr := errors.Is(errs[i], ErrConflict); gotErr != wantErr {
			t.Fatalf("member %d: err = %v, want conflict %v", i, errs[i], wantErr)
		}
		err := db.View(context.Background(), func(tx *Tx) error {
			if tx.ThreadExists(ids[i]) == wantErr {
				return fmt.Errorf("member %d: exists = %v after err %v", i, !wantErr, errs[i])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestAfterCommitRunsOnlyOnSuccess(t *testing.T) {
	forEachBackend(t, testAfterCommitRunsOnlyOnSuccess)
}

func testAfterCommitRunsOnlyOnSuccess(t *testing.T, db *DB) {
	var ran atomic.Int32
	_ = db.Update(context.Background(), func(tx *Tx) error {
		tx.AfterCommit(func() { ran.Add(1) })
		return ErrConflict
	})
	if err := db.Update(context.Background(), func(tx *Tx) error {
		tx.AfterCommit(func() { ran.Add(10) })
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := ran.Load(); got != 10 {
		t.Fatalf("after-commit total = %d, want 10", got)
	}
}

func TestReopenKeepsDataAndRejectsNewerSchema(t *testing.T) {
	forEachBackendAt(t, testReopenKeepsDataAndRejectsNewerSchema)
}

func testReopenKeepsDataAndRejectsNewerSchema(t *testing.T, be testBackend) {
	dir := be.location(t)
	db, err := be.open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	th := newThread(map[string]any{"k": "v"}, "idle")
	if err := db.Update(context.Background(), func(tx *Tx) error { return tx.PutThread(th) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(context.Background(), func(tx *Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("update after close: %v", err)
	}
	db, err = be.open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(context.Background(), func(tx *Tx) error {
		got, err := tx.GetThread(th.ThreadID)
		if err != nil {
			return err
		}
		if got.Metadata["k"] != "v" {
			return fmt.Errorf("metadata = %v", got.Metadata)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Pretend a newer build wrote the database.
	if err := db.be.update(func(kv kvTx) error {
		return kv.bucket(bucketMeta).Put(keySchemaVersion, []byte("99"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := be.open(dir, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open newer schema: %v", err)
	}
}

func TestSearchThreadsIndexes(t *testing.T) { forEachBackend(t, testSearchThreadsIndexes) }

func testSearchThreadsIndexes(t *testing.T, db *DB) {
	var all []Thread
	for i := 0; i < 30; i++ {
		status := "idle"
		if i%3 == 0 {
			status = "busy"
		}
		th := newThread(map[string]any{"user": fmt.Sprintf("u%d", i%5), "n": float64(i), "nested": map[string]any{"a": float64(i % 2)}}, status)
		th.CreatedAt = time.Unix(1000+int64(i), 0).UTC()
		all = append(all, th)
	}
	if err := db.Update(context.Background(), func(tx *Tx) error {
		for _, th := range all {
			if err := tx.PutThread(th); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Change one thread's metadata and status: old index entries must go.
	moved := all[0]
	moved.Metadata = map[string]any{"user": "u4", "n": 0.0}
	moved.Status = "idle"
	if err := db.Update(context.Background(), func(tx *Tx) error { return tx.PutThread(moved) }); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		q     ThreadQuery
		total int
		first float64
	}{
		{"all newest first", ThreadQuery{Desc: true, Limit: 2}, 30, 29},
		{"meta", ThreadQuery{Metadata: map[string]any{"user": "u1"}, Limit: 10}, 6, 1},
		{"meta moved", ThreadQuery{Metadata: map[string]any{"user": "u4"}, Desc: true, Limit: 10}, 7, 29},
		{"meta old value gone", ThreadQuery{Metadata: map[string]any{"user": "u0"}, Limit: 10}, 5, 5},
		{"status", ThreadQuery{Status: "busy", Limit: 10}, 9, 3},
		{"meta and status", ThreadQuery{Metadata: map[string]any{"user": "u3"}, Status: "busy", Limit: 10}, 2, 3},
		{"nested meta scans", ThreadQuery{Metadata: map[string]any{"nested": map[string]any{"a": 1.0}}, Limit: 1, Offset: 1}, 15, 3},
		{"sort by status", ThreadQuery{SortBy: "status", Limit: 1}, 30, 3},
		{"offset past end", ThreadQuery{Offset: 100, Limit: 10}, 30, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := db.View(context.Background(), func(tx *Tx) error {
				page, total, err := tx.SearchThreads(c.q)
				if err != nil {
					return err
				}
				if total != c.total {
					return fmt.Errorf("total = %d, want %d", total, c.total)
				}
				if c.first < 0 {
					if len(page) != 0 {
						return fmt.Errorf("page = %d items, want none", len(page))
					}
					return nil
				}
				if len(page) == 0 || page[0].Metadata["n"] != c.first {
					return fmt.Errorf("first = %v, want n=%v", page, c.first)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCheckpointsNewestFirstAndDeleteThread(t *testing.T) {
	forEachBackend(t, testCheckpointsNewestFirstAndDeleteThread)
}

func testCheckpointsNewestFirstAndDeleteThread(t *testing.T, db *DB) {
	th := newThread(nil, "idle")
	var ids []uuid.UUID
	err := db.Update(context.Background(), func(tx *Tx) error {
		if err := tx.PutThread(th); err != nil {
			return err
		}
		for i := 0; i < 5; i++ {
			id := uuid.Must(uuid.NewV7())
			ids = append(ids, id)
			if err := tx.PutCheckpoint(Checkpoint{ThreadID: th.ThreadID, CheckpointID: id, Values: map[string]any{"i": float64(i)}}); err != nil {
				return err
			}
		}
		// A neighbouring thread must not leak into the listing.
		other := newThread(nil, "idle")
		return tx.PutCheckpoint(Checkpoint{ThreadID: other.ThreadID, CheckpointID: uuid.Must(uuid.NewV7())})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(context.Background(), func(tx *Tx) error {
		latest, err := tx.LatestCheckpoint(th.ThreadID)
		if err != nil || latest.CheckpointID != ids[4] {
			return fmt.Errorf("latest = %v, %v", latest.CheckpointID, err)
		}
		list, err := tx.ListCheckpoints(th.ThreadID, &ids[3], 2, nil)
		if err != nil {
			return err
		}
		if len(list) != 2 || list[0].CheckpointID != ids[2] || list[1].CheckpointID != ids[1] {
			return fmt.Errorf("before listing wrong: %d items", len(list))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(context.Background(), func(tx *Tx) error { return tx.DeleteThread(th.ThreadID) }); err != nil {
		t.Fatal(err)
	}
	err = db.View(context.Background(), func(tx *Tx) error {
		if _, err := tx.LatestCheckpoint(th.ThreadID); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("checkpoints survive delete: %v", err)
		}
		if _, total, _ := tx.SearchThreads(ThreadQuery{}); total != 0 {
			return fmt.Errorf("index keeps %d deleted threads", total)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// bucketRoots returns the root page of each named bucket: bbolt copies a
// bucket's pages on write, so a bucket whose root is unchanged was not
// written by the commits in between.
func bucketRoots(t *testing.T, db *DB, names ...[]byte) []uint64 {
	t.Helper()
	var roots []uint64
	err := db.boltDB().View(func(tx *boltTx) error {
		for _, n := range names {
			roots = append(roots, uint64(tx.Bucket(n).Root()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return roots
}

// Updating a thread's status, or a run's status between two active ones,
// leaves the indexes it does not change untouched: each page a commit
// dirties costs write and fsync time.
func TestUpdatesWriteOnlyChangedIndexes(t *testing.T) {
	db := openTest(t)
	th := newThread(map[string]any{"owner": "a"}, "idle")
	run := Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: th.ThreadID, Status: RunPending, CreatedAt: th.CreatedAt}
	put := func(fn func(tx *Tx) error) {
		t.Helper()
		if err := db.Update(context.Background(), fn); err != nil {
			t.Fatal(err)
		}
	}
	// Enough threads and runs that every bucket has pages of its own
	// (small buckets are stored inline in their parent's page).
	put(func(tx *Tx) error {
		for i := range 300 {
			other := newThread(map[string]any{"owner": "b", "i": float64(i)}, "idle")
			if err := tx.PutThread(other); err != nil {
				return err
			}
			if err := tx.PutRun(Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: other.ThreadID, Status: RunPending, CreatedAt: other.CreatedAt}); err != nil {
				return err
			}
		}
		if err := tx.PutThread(th); err != nil {
			return err
		}
		return tx.PutRun(run)
	})
	untouched := [][]byte{bucketThreadsByCreated, bucketThreadsByMeta, bucketRunsByThread, bucketRunsActive}
	before := bucketRoots(t, db, untouched...)
	if slices.Contains(before, 0) {
		t.Fatalf("bucket roots %v: a bucket is still inline", before)
	}
	statusBefore := bucketRoots(t, db, bucketThreadsByStatus)
	th.Status = "busy"
	run.Status = RunRunning
	put(func(tx *Tx) error {
		if err := tx.PutThread(th); err != nil {
			return err
		}
		return tx.PutRun(run)
	})
	if after := bucketRoots(t, db, untouched...); !slices.Equal(before, after) {
		t.Fatalf("unchanged index buckets were rewritten: roots %v -> %v", before, after)
	}
	if after := bucketRoots(t, db, bucketThreadsByStatus); slices.Equal(statusBefore, after) {
		t.Fatal("the status index was not updated")
	}
	// The entries are right: the thread is found by its new status only,
	// and by its metadata.
	err := db.View(context.Background(), func(tx *Tx) error {
		for _, q := range []struct {
			q    ThreadQuery
			want int
		}{
			{ThreadQuery{Status: "busy"}, 1}, {ThreadQuery{Status: "idle"}, 300},
			{ThreadQuery{Metadata: map[string]any{"owner": "a"}}, 1},
		} {
			_, n, err := tx.SearchThreads(q.q)
			if err != nil {
				return err
			}
			if n != q.want {
				t.Errorf("search %+v: %d threads, want %d", q.q, n, q.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ActiveThreadRuns returns the thread's pending and running runs, oldest
// first, and follows their status changes.
func TestActiveThreadRuns(t *testing.T) { forEachBackend(t, testActiveThreadRuns) }

func testActiveThreadRuns(t *testing.T, db *DB) {
	th, other := newThread(nil, "busy"), newThread(nil, "busy")
	statuses := []string{RunSuccess, RunPending, RunError, RunRunning, RunInterrupted}
	var runs []Run
	err := db.Update(context.Background(), func(tx *Tx) error {
		for _, st := range statuses {
			r := Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: th.ThreadID, Status: st, CreatedAt: th.CreatedAt}
			runs = append(runs, r)
			if err := tx.PutRun(r); err != nil {
				return err
			}
		}
		return tx.PutRun(Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: other.ThreadID, Status: RunPending})
	})
	if err != nil {
		t.Fatal(err)
	}
	active := func() []uuid.UUID {
		t.Helper()
		var ids []uuid.UUID
		err := db.View(context.Background(), func(tx *Tx) error {
			rs, err := tx.ActiveThreadRuns(th.ThreadID)
			for _, r := range rs {
				ids = append(ids, r.RunID)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got, want := active(), []uuid.UUID{runs[1].RunID, runs[3].RunID}; !slices.Equal(got, want) {
		t.Fatalf("active runs %v, want %v", got, want)
	}
	runs[1].Status = RunSuccess
	if err := db.Update(context.Background(), func(tx *Tx) error { return tx.PutRun(runs[1]) }); err != nil {
		t.Fatal(err)
	}
	if got, want := active(), []uuid.UUID{runs[3].RunID}; !slices.Equal(got, want) {
		t.Fatalf("after the pending run ended: %v, want %v", got, want)
	}
	// In a write transaction, its own writes not yet sent count: a run
	// ended and one created in it.
	err = db.Update(context.Background(), func(tx *Tx) error {
		runs[3].Status = RunSuccess
		if err := tx.PutRun(runs[3]); err != nil {
			return err
		}
		added := Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: th.ThreadID, Status: RunPending, CreatedAt: th.CreatedAt}
		if err := tx.PutRun(added); err != nil {
			return err
		}
		tx.PrefetchThreadRuns(th.ThreadID)
		rs, err := tx.ActiveThreadRuns(th.ThreadID)
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].RunID != added.RunID || rs[0].Status != RunPending {
			return fmt.Errorf("in the transaction: active runs %v, want only %s", rs, added.RunID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenNamesTheFileWhenItCannot checks that a database another process
// (here: another open) holds is reported at once as in use, and that a
// file that is not a database is reported with its path.
func TestOpenNamesTheFileWhenItCannot(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) {
		t.Fatalf("second open: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the lock was reported after %v", took)
	}

	junk := t.TempDir()
	path := filepath.Join(junk, FileName)
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(junk, Options{}); err == nil || !strings.Contains(err.Error(), "open database "+path+": ") {
		t.Fatalf("open of a corrupt file: %v", err)
	}
}

// A bbolt file of a newer schema is refused before anything is written to
// it: a bucket this build would create stays absent.
func TestNewerFileIsLeftUntouched(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.boltDB().Update(func(tx *boltTx) error {
		if err := tx.DeleteBucket(bucketSubagents); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte("99"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open newer schema: %v", err)
	}
	b, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.View(func(tx *boltTx) error {
		if tx.Bucket(bucketSubagents) != nil {
			return errors.New("the refused file got a new bucket")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A read with a cancelled context does not run, on every backend; on
// PostgreSQL a read that follows the cancellation inside a view fails too.
func TestViewStopsWhenItsContextIsCancelled(t *testing.T) {
	forEachBackendAt(t, func(t *testing.T, be testBackend) {
		db := be.openNew(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ran := false
		err := db.View(ctx, func(tx *Tx) error { ran = true; return nil })
		if !errors.Is(err, context.Canceled) || ran {
			t.Fatalf("View with a cancelled context: err = %v, ran = %v", err, ran)
		}
		if _, err := Read(ctx, db, func(tx *Tx) (int, error) { return 1, nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("Read with a cancelled context: %v", err)
		}
		if be.name != "postgres" {
			return
		}
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		err = db.View(ctx, func(tx *Tx) error {
			if _, err := tx.ListAssistants(); err != nil {
				return err
			}
			cancel()
			_, err := tx.ListAssistants()
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a read after the cancel inside a view: %v", err)
		}
	})
}

// Threads created within one microsecond or in other time zones come
// back in the order of their creation to the nanosecond, as the embedded
// backend orders them (PostgreSQL's timestamptz keeps microseconds: its
// search orders by created_ns).
func TestSearchThreadsOrderToTheNanosecond(t *testing.T) {
	forEachBackend(t, testSearchThreadsOrderToTheNanosecond)
}

func testSearchThreadsOrderToTheNanosecond(t *testing.T, db *DB) {
	base := time.Date(2026, 12, 6, 8, 30, 0, 999_999_000, time.UTC)
	times := []time.Time{
		base.Add(1), base.Add(999), base, base.Add(500).In(time.FixedZone("east", 5*3600+1800)),
		base.Add(1000).In(time.FixedZone("west", -8*3600)), base.Add(-1), base.Truncate(time.Second), base.Add(1_000_001),
	}
	var ths []Thread
	if err := db.Update(context.Background(), func(tx *Tx) error {
		for i, at := range times {
			th := newThread(map[string]any{"i": float64(i)}, "idle")
			th.CreatedAt = at
			ths = append(ths, th)
			if err := tx.PutThread(th); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ths)
	sortThreads(want, "", false)
	for _, desc := range []bool{false, true} {
		for _, q := range []ThreadQuery{{Desc: desc}, {Desc: desc, Status: "idle"}, {Desc: desc, Limit: 3, Offset: 4}} {
			var got []Thread
			if err := db.View(context.Background(), func(tx *Tx) error {
				var err error
				got, _, err = tx.SearchThreads(q)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			exp := slices.Clone(want)
			if desc {
				slices.Reverse(exp)
			}
			exp = pageOf(exp, q.Offset, q.Limit)
			if len(got) != len(exp) {
				t.Fatalf("%+v: %d threads, want %d", q, len(got), len(exp))
			}
			for i := range exp {
				if got[i].ThreadID != exp[i].ThreadID {
					t.Errorf("%+v: thread %d created %v, want the one created %v", q, i, got[i].CreatedAt, exp[i].CreatedAt)
				}
			}
		}
	}
}
