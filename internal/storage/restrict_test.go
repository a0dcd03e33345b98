package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/testutil/pgtest"
)

func putThreads(tb testing.TB, db *DB, n int, owner func(i int) string) []uuid.UUID {
	tb.Helper()
	ids := make([]uuid.UUID, 0, n)
	for start := 0; start < n; start += 1000 {
		err := db.Update(context.Background(), func(tx *Tx) error {
			for i := start; i < min(n, start+1000); i++ {
				th := benchThread(i)
				th.Metadata = map[string]any{"owner": owner(i), "i": float64(i)}
				if err := tx.PutThread(th); err != nil {
					return err
				}
				ids = append(ids, th.ThreadID)
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return ids
}

func TestSearchThreadsRestrict(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ids := putThreads(t, db, 30, func(i int) string { return fmt.Sprint("u", i%3) })
		err := db.View(context.Background(), func(tx *Tx) error {
			page, total, err := tx.SearchThreads(ThreadQuery{Restrict: map[string]any{"owner": "u1"}, Limit: 4, Offset: 8})
			if err != nil {
				return err
			}
			if total != 10 || len(page) != 2 {
				t.Errorf("u1 page 3: %d of %d, want 2 of 10", len(page), total)
			}
			for _, th := range page {
				if th.Metadata["owner"] != "u1" {
					t.Errorf("u1 sees %v", th.Metadata)
				}
			}
			// A search for another owner's metadata finds nothing.
			if _, total, _ := tx.SearchThreads(ThreadQuery{Metadata: map[string]any{"owner": "u2"}, Restrict: map[string]any{"owner": "u1"}}); total != 0 {
				t.Errorf("owner u2 restricted to u1: %d threads", total)
			}
			if _, total, _ := tx.SearchThreads(ThreadQuery{Metadata: map[string]any{"owner": "u1"}, Restrict: map[string]any{"owner": "u1"}, CountOnly: true}); total != 10 {
				t.Errorf("owner u1 restricted to u1: %d threads", total)
			}
			if _, err := tx.GetThreadWhere(ids[1], map[string]any{"owner": "u1"}); err != nil {
				t.Errorf("u1's own thread: %v", err)
			}
			if _, err := tx.GetThreadWhere(ids[2], map[string]any{"owner": "u1"}); !errors.Is(err, ErrNotFound) {
				t.Errorf("u2's thread for u1: %v, want ErrNotFound", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkSearchOwnedThreads searches the 10 threads one user owns among
// 100,000, as an owner-scoped caller's thread search does (p50-ns is the
// median latency of one search of the first page).
func BenchmarkSearchOwnedThreads(b *testing.B) {
	for _, be := range testBackends() {
		b.Run(be.name, func(b *testing.B) {
			loc := b.TempDir()
			if be.name == "postgres" {
				loc = pgtest.FreshSchema(b)
			}
			db, err := be.open(loc, Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			putThreads(b, db, 100_000, func(i int) string {
				if i%10_000 == 0 {
					return "target"
				}
				return fmt.Sprint("u", i%997)
			})
			q := ThreadQuery{Restrict: map[string]any{"owner": "target"}, Limit: 10}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				var n, total int
				err := db.View(context.Background(), func(tx *Tx) error {
					page, tot, err := tx.SearchThreads(q)
					n, total = len(page), tot
					return err
				})
				lat = append(lat, time.Since(t0))
				if err != nil || n != 10 || total != 10 {
					b.Fatalf("search: %d of %d, %v", n, total, err)
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
		})
	}
}
