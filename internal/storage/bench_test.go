package storage

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"agentserver/internal/testutil/stats"
)

// Storage benchmarks. Run them with
//
//	go test -run '^$' -bench . -benchmem ./internal/storage/
//
// The write benchmarks use a durable database (fsync on every commit, the
// production setting) unless their name says NoSync. ops/commit is the mean
// group-commit batch size, read from bbolt's transaction id.

// benchWriters is the number of goroutines of the parallel write benchmarks.
const benchWriters = 64

func benchOpen(b *testing.B, noSync bool) *DB {
	b.Helper()
	db, err := Open(b.TempDir(), Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func benchThread(i int) Thread {
	now := time.Now().UTC()
	return Thread{
		ThreadID: uuid.Must(uuid.NewV7()), CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now,
		Metadata: map[string]any{"user": fmt.Sprintf("u%d", i%100), "i": float64(i)},
		Status:   "idle",
	}
}

// benchTxID returns the id of the last committed write transaction.
func benchTxID(b *testing.B, db *DB) int {
	var id int
	if err := db.boltDB().View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		b.Fatal(err)
	}
	return id
}

func benchReportWrites(b *testing.B, db *DB, tx0 int, ops int64) {
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
	if commits := benchTxID(b, db) - tx0; commits > 0 {
		b.ReportMetric(float64(ops)/float64(commits), "ops/commit")
	}
}

func benchPut(db *DB, i int) error {
	th := benchThread(i)
	return db.Update(context.Background(), func(tx *Tx) error { return tx.PutThread(th) })
}

// BenchmarkPutThreadSequential is one writer: every PutThread is its own
// transaction and pays a full commit (two fdatasyncs in bbolt).
func BenchmarkPutThreadSequential(b *testing.B) {
	db := benchOpen(b, false)
	tx0 := benchTxID(b, db)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := benchPut(db, i); err != nil {
			b.Fatal(err)
		}
	}
	benchReportWrites(b, db, tx0, int64(b.N))
}

// BenchmarkPutThreadParallel has benchWriters goroutines calling Update at
// once: the writer loop groups them, so one commit serves many writes.
func BenchmarkPutThreadParallel(b *testing.B) {
	benchPutParallel(b, false)
}

// BenchmarkPutThreadParallelNoSync is BenchmarkPutThreadParallel without
// fsync: the CPU-bound ceiling of the write path.
func BenchmarkPutThreadParallelNoSync(b *testing.B) {
	benchPutParallel(b, true)
}

func benchPutParallel(b *testing.B, noSync bool) {
	db := benchOpen(b, noSync)
	tx0 := benchTxID(b, db)
	var next atomic.Int64
	b.SetParallelism((benchWriters + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := benchPut(db, int(next.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	benchReportWrites(b, db, tx0, next.Load())
}

// benchSearchThreads is the number of threads searched by
// BenchmarkSearchThreads; every 100th carries user=u42.
const benchSearchThreads = 100_000

// BenchmarkSearchThreads searches 100k threads, seeded once without fsync
// (reads do not depend on it), in the shapes the HTTP API sends.
func BenchmarkSearchThreads(b *testing.B) {
	db := benchOpen(b, true)
	t0 := time.Now()
	const perTx = 10_000
	for start := 0; start < benchSearchThreads; start += perTx {
		err := db.be.update(func(kv kvTx) error {
			tx := &Tx{kv: kv}
			for i := start; i < min(start+perTx, benchSearchThreads); i++ {
				if err := tx.PutThread(benchThread(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d threads in %s", benchSearchThreads, time.Since(t0).Round(time.Millisecond))

	for _, c := range []struct {
		name  string
		q     ThreadQuery
		total int
		page  int
	}{
		{"metadata-user-limit10", ThreadQuery{Metadata: map[string]any{"user": "u42"}, Limit: 10, Desc: true}, benchSearchThreads / 100, 10},
		{"metadata-user-count", ThreadQuery{Metadata: map[string]any{"user": "u42"}, CountOnly: true}, benchSearchThreads / 100, 0},
		{"unfiltered-limit10", ThreadQuery{Limit: 10, Desc: true}, benchSearchThreads, 10},
		{"unfiltered-count", ThreadQuery{CountOnly: true}, benchSearchThreads, 0},
		{"metadata-user-and-i-limit10", ThreadQuery{Metadata: map[string]any{"user": "u42", "i": float64(142)}, Limit: 10, Desc: true}, 1, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				err := db.View(context.Background(), func(tx *Tx) error {
					page, total, err := tx.SearchThreads(c.q)
					if err != nil {
						return err
					}
					if total != c.total || len(page) != c.page {
						return fmt.Errorf("got %d threads of %d, want %d of %d", len(page), total, c.page, c.total)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkPostgresPutThread is the write path on PostgreSQL (when
// AGENTSERVER_TEST_DATABASE_URL names a test database): one writer, then
// benchWriters writers whose writes the writer loop groups per transaction.
func BenchmarkPostgresPutThread(b *testing.B) {
	db := openPostgresOrSkip(b)
	var next atomic.Int64
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			if err := benchPut(db, int(next.Add(1))); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism((benchWriters + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := benchPut(db, int(next.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("search-metadata-limit10", func(b *testing.B) {
		q := ThreadQuery{Metadata: map[string]any{"user": "u42"}, Limit: 10, Desc: true}
		for b.Loop() {
			if err := db.View(context.Background(), func(tx *Tx) error { _, _, err := tx.SearchThreads(q); return err }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// putPrepared puts an item PrepareStoreItem encoded as the store service
// does: its value staged before the transaction that stores the item.
func putPrepared(ctx context.Context, db *DB, prepared StoreItem) error {
	if err := db.StageStoreValue(ctx, &prepared); err != nil {
		return err
	}
	return db.Update(ctx, func(tx *Tx) error { return tx.PutStoreItem(prepared) })
}

// BenchmarkSmallWriteUnderLargeStoreValues measures small writes (one
// PutThread at a time) while four writers keep replacing 9.5 MiB store
// values, fsync on: how long the group commit makes a small write wait
// behind large ones, without HTTP. It reports the small writes' p50, p99
// and max, and the large writes done meanwhile.
func BenchmarkSmallWriteUnderLargeStoreValues(b *testing.B) {
	db := benchOpen(b, false)
	chunks := make([]any, 9_500)
	for i := range chunks {
		chunks[i] = strings.Repeat("x", 1021)
	}
	items := make([]StoreItem, 4)
	for w := range items {
		// Encoded once: the benchmark measures the writer, not the encoder.
		it, err := PrepareStoreItem(StoreItem{Namespace: []string{"bench"}, Key: fmt.Sprint("large-", w), Value: map[string]any{"chunks": chunks}, UpdatedAt: time.Now().UTC()})
		if err != nil {
			b.Fatal(err)
		}
		items[w] = it
	}
	stats.UnderLoad(b, len(items), "large-writes",
		func(ctx context.Context, w int) error { return putPrepared(ctx, db, items[w]) },
		func(i int) error { return benchPut(db, i) })
}
