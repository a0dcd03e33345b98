package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"agentserver/internal/errdefs"
)

// bigMetadata returns n metadata keys with short values, the shape of the
// write that stalled every other writer (100k keys, 1.8 MB).
func bigMetadata(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[fmt.Sprintf("key-%06d", i)] = "value"
	}
	return m
}

// smallWriteLatency starts big in the writer and measures how long a small
// write queued while big is in flight takes to commit.
func smallWriteLatency(t *testing.T, db *DB, big func(*Tx) error) (time.Duration, error) {
	t.Helper()
	entered := make(chan struct{})
	bigDone := make(chan error, 1)
	go func() {
		bigDone <- db.Update(context.Background(), func(tx *Tx) error {
			select {
			case <-entered:
			default:
				close(entered)
			}
			return big(tx)
		})
	}()
	<-entered
	start := time.Now()
	err := db.Update(context.Background(), func(tx *Tx) error { return tx.PutThread(newThread(map[string]any{"small": true}, "idle")) })
	if err != nil {
		t.Fatal(err)
	}
	return time.Since(start), <-bigDone
}

// TestBigMetadataDoesNotStarveSmallWrites puts a thread with a huge
// metadata object while a small write waits behind it in the single
// writer: the huge one is refused at once (too many keys), and one at the
// limit is indexed in time proportional to its size, so the small write
// commits promptly either way.
func TestBigMetadataDoesNotStarveSmallWrites(t *testing.T) {
	db := openTest(t)
	huge := newThread(bigMetadata(100_000), "idle")
	took, err := smallWriteLatency(t, db, func(tx *Tx) error { return tx.PutThread(huge) })
	if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "keys") {
		t.Fatalf("100k metadata keys: err = %v, want invalid (too many keys)", err)
	}
	if took > 2*time.Second {
		t.Fatalf("a small write waited %s behind a refused 100k-key metadata write", took)
	}
	atLimit := newThread(bigMetadata(MaxThreadMetadataKeys), "idle")
	took, err = smallWriteLatency(t, db, func(tx *Tx) error {
		if err := tx.PutThread(atLimit); err != nil {
			return err
		}
		atLimit.Metadata["one-more-change"] = "x"
		delete(atLimit.Metadata, "key-000000")
		return tx.PutThread(atLimit) // reindexes against the stored copy
	})
	if err != nil {
		t.Fatal(err)
	}
	if took > 2*time.Second {
		t.Fatalf("a small write waited %s behind a metadata write at the limit", took)
	}
	err = db.View(context.Background(), func(tx *Tx) error {
		got, n, err := tx.SearchThreads(ThreadQuery{Metadata: map[string]any{"one-more-change": "x"}, Limit: 10})
		if err != nil || n != 1 || got[0].ThreadID != atLimit.ThreadID {
			return fmt.Errorf("search by the changed key: %d threads, %v", n, err)
		}
		_, n, err = tx.SearchThreads(ThreadQuery{Metadata: map[string]any{"key-000000": "value"}, Limit: 10})
		if err != nil || n != 0 {
			return fmt.Errorf("search by the removed key: %d threads, %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBigStoreValueDoesNotStarveSmallWrites replaces a large store item
// while a small write waits behind it: the value is encoded before the
// transaction and the old copy is not decoded into maps, so the small
// write waits less than encoding the value alone takes (the yardstick
// adapts to the machine and to -race). Before, both were done inside the
// writer and the small write waited for both.
func TestBigStoreValueDoesNotStarveSmallWrites(t *testing.T) {
	db := openTest(t)
	it := StoreItem{Namespace: []string{"n"}, Key: "k", Value: bigMetadata(100_000), UpdatedAt: time.Now().UTC()}
	first, err := PrepareStoreItem(it)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(context.Background(), func(tx *Tx) error { return tx.PutStoreItem(first) }); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	prepared, err := PrepareStoreItem(it)
	if err != nil {
		t.Fatal(err)
	}
	encoding := time.Since(start)
	took, err := smallWriteLatency(t, db, func(tx *Tx) error { return tx.PutStoreItem(prepared) })
	if err != nil {
		t.Fatal(err)
	}
	if took > encoding {
		t.Fatalf("a small write waited %s behind a large store value (encoding it takes %s)", took, encoding)
	}
	err = db.View(context.Background(), func(tx *Tx) error {
		got, err := tx.GetStoreItem([]string{"n"}, "k", time.Now())
		if err != nil || len(got.Value) != 100_000 || !got.CreatedAt.Equal(first.UpdatedAt) || got.Key != "k" {
			return fmt.Errorf("read back: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFullDiskIsErrNoSpace checks that a write failing with ENOSPC is
// reported as ErrNoSpace (507 at the HTTP edge), with a text that does not
// name the file. TestDiskFullAnswers507 (cmd/server) fills a real disk.
func TestFullDiskIsErrNoSpace(t *testing.T) {
	db := openTest(t)
	full := &fs.PathError{Op: "write", Path: "/data/agentserver.db", Err: syscall.ENOSPC}
	err := db.Update(context.Background(), func(tx *Tx) error { return full })
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err = %v, want ErrNoSpace wrapping ENOSPC", err)
	}
	if strings.Contains(err.Error(), "/data") {
		t.Fatalf("the text names the file: %q", err)
	}
	pgFull := &pgconn.PgError{Code: "53100", Message: "could not extend file"}
	if err := db.Update(context.Background(), func(tx *Tx) error { return pgFull }); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("PostgreSQL disk_full: err = %v, want ErrNoSpace", err)
	}
	other := errors.New("other")
	if err := db.Update(context.Background(), func(tx *Tx) error { return other }); err != other {
		t.Fatalf("another error became %v", err)
	}
}
