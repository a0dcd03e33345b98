package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// prefixed is the key prefix p followed by the byte i.
func prefixed(p byte, i byte) []byte {
	k := make([]byte, 17)
	k[15], k[16] = p, i
	return k
}

// scanned lists the keys under prefix p of b as "p.i" strings, read
// through scanPrefix.
func scanned(b kvBucket, p byte) (string, error) {
	var out []string
	err := scanPrefix(b, prefixed(p, 0)[:16], func(k, _ []byte) error {
		out = append(out, fmt.Sprintf("%d.%d", k[15], k[16]))
		return nil
	})
	return strings.Join(out, " "), err
}

// prefetchKV prefetches keys and prefixes where the backend can.
func prefetchKV(kv kvTx, keys, prefixes []bucketKey) {
	if p, ok := kv.(*pgTxn); ok {
		p.prefetch(keys, prefixes)
	}
}

// A prefix scan answered from a prefetch sees the transaction's writes made
// before the prefetch (still queued, not yet sent) and after it, range
// deletes included, and a prefetched point key reads as stored; what
// commits is the same as on bbolt.
func TestPrefetchedScanSeesTheTransactionsWrites(t *testing.T) {
	forEachBackend(t, testPrefetchedScanSeesTheTransactionsWrites)
}

func testPrefetchedScanSeesTheTransactionsWrites(t *testing.T, db *DB) {
	b := bucketRunsByThread
	err := db.be.update(func(kv kvTx) error {
		rb := kv.bucket(b)
		for _, k := range [][]byte{prefixed(1, 1), prefixed(1, 2), prefixed(1, 3), prefixed(2, 1), prefixed(0, 9)} {
			if err := rb.Put(k, nil); err != nil {
				return err
			}
		}
		return kv.bucket(bucketRunsActive).Put(prefixed(7, 7), []byte("token"))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.be.update(func(kv kvTx) error {
		rb := kv.bucket(b)
		check := func(step string, want string) error {
			got, err := scanned(rb, 1)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("%s: scan = %q, want %q", step, got, want)
			}
			return nil
		}
		// Queued before the prefetch.
		if err := rb.Put(prefixed(1, 4), nil); err != nil {
			return err
		}
		if err := rb.Delete(prefixed(1, 2)); err != nil {
			return err
		}
		prefetchKV(kv, []bucketKey{{bucketRunsActive, prefixed(7, 7)}, {bucketRunsActive, prefixed(7, 8)}},
			[]bucketKey{{b, prefixed(1, 0)[:16]}})
		if got := kv.bucket(bucketRunsActive).Get(prefixed(7, 7)); string(got) != "token" {
			return fmt.Errorf("prefetched key = %q, want %q", got, "token")
		}
		if got := kv.bucket(bucketRunsActive).Get(prefixed(7, 8)); got != nil {
			return fmt.Errorf("prefetched absent key = %q, want nil", got)
		}
		if err := check("after the prefetch", "1.1 1.3 1.4"); err != nil {
			return err
		}
		if err := rb.Put(prefixed(1, 5), nil); err != nil {
			return err
		}
		if err := rb.Delete(prefixed(1, 1)); err != nil {
			return err
		}
		if err := check("after more writes", "1.3 1.4 1.5"); err != nil {
			return err
		}
		if err := deleteKeys(rb, prefixed(1, 3), prefixed(1, 5)); err != nil {
			return err
		}
		if err := check("after a range delete", "1.5"); err != nil {
			return err
		}
		_, _ = rb.Cursor().First() // sends the queued writes
		if err := check("after the writes were sent", "1.5"); err != nil {
			return err
		}
		if got, err := scanned(rb, 2); err != nil || got != "2.1" {
			return fmt.Errorf("scan of a prefix not prefetched = %q, %v; want \"2.1\"", got, err)
		}
		return kv.failure()
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.be.view(context.Background(), func(kv kvTx) error {
		var all []string
		c := kv.bucket(b).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			all = append(all, fmt.Sprintf("%d.%d", k[15], k[16]))
		}
		if got, want := strings.Join(all, " "), "0.9 1.5 2.1"; got != want {
			return fmt.Errorf("committed keys = %q, want %q", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The members of a group commit that declare their reads (UpdateReading)
// each see the writes of the members before them, when their reads were
// fetched together before the first ran: two run ends deleting the same
// temporary thread, the second finds it gone.
func TestGroupCommitPrefetchSeesEarlierMembers(t *testing.T) {
	forEachBackend(t, testGroupCommitPrefetchSeesEarlierMembers)
}

func testGroupCommitPrefetchSeesEarlierMembers(t *testing.T, db *DB) {
	now := time.Now().UTC()
	th := Thread{ThreadID: uuid.Must(uuid.NewV7()), CreatedAt: now, UpdatedAt: now, Metadata: map[string]any{}}
	runs := []Run{
		{RunID: uuid.Must(uuid.NewV7()), ThreadID: th.ThreadID, Status: RunRunning, Token: 3, CreatedAt: now, NotBefore: now},
		{RunID: uuid.Must(uuid.NewV7()), ThreadID: th.ThreadID, Status: RunPending, CreatedAt: now, NotBefore: now},
	}
	err := db.Update(context.Background(), func(tx *Tx) error {
		if err := tx.PutNewThread(th); err != nil {
			return err
		}
		for _, r := range runs {
			if err := tx.PutRun(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var held []bool
	var deleted []error
	member := func(r Run) *writeRequest {
		return &writeRequest{
			reads: func(tx *Tx) { tx.PrefetchThreadDeletion(r.ThreadID, r.RunID) },
			fn: func(tx *Tx) error {
				held = append(held, tx.RunHeldBy(r.RunID, r.Token))
				ids, err := threadIndexIDs(tx.bucket(bucketRunsByThread), r.ThreadID)
				if err != nil {
					return err
				}
				if len(held) == 1 && !slices.Equal(ids, []uuid.UUID{runs[0].RunID, runs[1].RunID}) {
					return fmt.Errorf("first member: thread's runs = %v, want both", ids)
				}
				if len(held) == 2 && len(ids) != 0 {
					return fmt.Errorf("second member: thread's runs = %v, want none (deleted by the first)", ids)
				}
				deleted = append(deleted, tx.DeleteThread(r.ThreadID))
				return nil
			},
			done: make(chan error, 1),
		}
	}
	batch := []*writeRequest{member(runs[0]), member(runs[1])}
	db.commit(batch)
	for i, req := range batch {
		if err := <-req.done; err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	if !slices.Equal(held, []bool{true, false}) {
		t.Errorf("RunHeldBy = %v, want [true false] (the second run's token is 0, and it is deleted first)", held)
	}
	if deleted[0] != nil || deleted[1] == nil {
		t.Errorf("DeleteThread = %v, want nil then ErrNotFound", deleted)
	}
	err = db.View(context.Background(), func(tx *Tx) error {
		if tx.ThreadExists(th.ThreadID) {
			return fmt.Errorf("thread still stored")
		}
		for _, r := range runs {
			if _, err := tx.GetRun(r.RunID); err == nil || tx.RunIsActive(r.RunID) {
				return fmt.Errorf("run %s still stored", r.RunID)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A run's queue row follows its last write in a transaction: a run put
// pending and then ended in the same transaction leaves no row, and one
// deleted and put again has one.
func TestRunQueueRowsNetPerTransaction(t *testing.T) {
	db := openPostgresOrSkip(t)
	now := time.Now().UTC()
	thread := uuid.Must(uuid.NewV7())
	ended := Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: thread, Status: RunPending, CreatedAt: now, NotBefore: now}
	kept := Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: thread, Status: RunPending, CreatedAt: now, NotBefore: now}
	err := db.Update(context.Background(), func(tx *Tx) error {
		for _, r := range []Run{ended, kept} {
			if err := tx.PutRun(r); err != nil {
				return err
			}
		}
		if err := tx.DeleteRun(kept.RunID); err != nil {
			return err
		}
		if err := tx.PutRun(kept); err != nil {
			return err
		}
		done := ended
		done.Status = RunSuccess
		return tx.PutRun(done)
	})
	if err != nil {
		t.Fatal(err)
	}
	pending, _, err := db.QueueState()
	if err != nil {
		t.Fatal(err)
	}
	if pending != 1 {
		t.Fatalf("pending queue rows = %d, want 1 (the run put again)", pending)
	}
	var ids []uuid.UUID
	err = db.Update(context.Background(), func(tx *Tx) error {
		var err error
		ids, err = tx.ClaimableRuns("replica", 10)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []uuid.UUID{kept.RunID}) {
		t.Fatalf("claimable = %v, want [%s]", ids, kept.RunID)
	}
}

// ViewLatest reads what a view reads, and sees a write committed between
// two of its calls.
func TestViewLatestReadsCommittedRecords(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		now := time.Now().UTC()
		a := Assistant{AssistantID: uuid.Must(uuid.NewV7()), GraphID: "g", Name: "one", CreatedAt: now, UpdatedAt: now, Version: 1}
		read := func() (Assistant, error) {
			var got Assistant
			err := db.ViewLatest(context.Background(), func(tx *Tx) error {
				var err error
				got, err = tx.GetAssistant(a.AssistantID)
				return err
			})
			return got, err
		}
		if _, err := read(); err == nil {
			t.Fatal("read of an absent assistant succeeded")
		}
		for _, name := range []string{"one", "two"} {
			a.Name = name
			if err := db.Update(context.Background(), func(tx *Tx) error { return tx.PutAssistant(a) }); err != nil {
				t.Fatal(err)
			}
			got, err := read()
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != name {
				t.Fatalf("name = %q, want %q", got.Name, name)
			}
		}
	})
}
