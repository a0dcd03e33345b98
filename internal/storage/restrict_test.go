package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/jsonx"
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

func TestSearchAssistantsRestrict(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		shared := uuid.New()
		mustUpdate(t, db, func(tx *Tx) error {
			for i := 0; i < 9; i++ {
				a := Assistant{AssistantID: uuid.New(), GraphID: "g", Name: fmt.Sprint("a", i), Metadata: map[string]any{"owner": fmt.Sprint("u", i%3)}, Version: 1}
				if err := tx.PutAssistant(a); err != nil {
					return err
				}
			}
			return tx.PutAssistant(Assistant{AssistantID: shared, GraphID: "g", Name: "system", Metadata: map[string]any{"created_by": "system"}, Version: 1})
		})
		isShared := func(a Assistant) bool { return a.AssistantID == shared }
		err := db.View(context.Background(), func(tx *Tx) error {
			for _, c := range []struct {
				q    AssistantQuery
				want int
			}{
				{AssistantQuery{}, 10},
				{AssistantQuery{Restrict: map[string]any{"owner": "u1"}}, 3},
				{AssistantQuery{Restrict: map[string]any{"owner": "u1"}, Shared: isShared}, 4},
				{AssistantQuery{Restrict: map[string]any{"owner": "u1"}, Metadata: map[string]any{"owner": "u2"}}, 0},
				{AssistantQuery{Restrict: map[string]any{"owner": "u1"}, Name: "A1"}, 1},
			} {
				got, err := tx.SearchAssistants(c.q)
				if err != nil {
					return err
				}
				if len(got) != c.want {
					t.Errorf("%+v: %d assistants, want %d", c.q, len(got), c.want)
				}
			}
			if _, err := tx.GetAssistantWhere(shared, AssistantQuery{Restrict: map[string]any{"owner": "u1"}}); !errors.Is(err, ErrNotFound) {
				t.Errorf("the shared assistant without Shared: %v", err)
			}
			if _, err := tx.GetAssistantWhere(shared, AssistantQuery{Restrict: map[string]any{"owner": "u1"}, Shared: isShared}); err != nil {
				t.Errorf("the shared assistant with Shared: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestSearchCronsRestrict(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		var ids []uuid.UUID
		mustUpdate(t, db, func(tx *Tx) error {
			for i := 0; i < 6; i++ {
				c := Cron{CronID: uuid.Must(uuid.NewV7()), Schedule: "0 * * * *", Metadata: map[string]any{"owner": fmt.Sprint("u", i%2)}}
				ids = append(ids, c.CronID)
				if err := tx.PutCron(c); err != nil {
					return err
				}
			}
			return nil
		})
		err := db.View(context.Background(), func(tx *Tx) error {
			page, total, err := tx.SearchCrons(CronQuery{Restrict: map[string]any{"owner": "u1"}, Limit: 2}, jsonx.Contains)
			if err != nil {
				return err
			}
			if total != 3 || len(page) != 2 {
				t.Errorf("u1's crons: page %d of %d, want 2 of 3", len(page), total)
			}
			if _, n, _ := tx.SearchCrons(CronQuery{Restrict: map[string]any{"owner": "u1"}, CountOnly: true}, jsonx.Contains); n != 3 {
				t.Errorf("u1's count: %d", n)
			}
			if _, err := tx.GetCronWhere(ids[0], map[string]any{"owner": "u1"}); !errors.Is(err, ErrNotFound) {
				t.Errorf("u0's cron for u1: %v", err)
			}
			if _, err := tx.GetCronWhere(ids[1], map[string]any{"owner": "u1"}); err != nil {
				t.Errorf("u1's cron: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestListStoreNamespacesMatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		now := time.Now()
		put := func(ns []string, key, owner string) StoreItem {
			return StoreItem{Namespace: ns, Key: key, Value: map[string]any{"owner": owner}, UpdatedAt: now}
		}
		putItems(t, db,
			put([]string{"a"}, "1", "u1"), put([]string{"a"}, "2", "u2"),
			put([]string{"b"}, "1", "u2"),
			put([]string{"c", "d"}, "1", "u1"))
		mine := func(it *StoreItem) bool { return it.Value["owner"] == "u1" }
		err := db.View(context.Background(), func(tx *Tx) error {
			got, err := tx.ListStoreNamespaces(StoreNamespaceQuery{Now: now, Match: mine})
			if err != nil {
				return err
			}
			if fmt.Sprint(got) != "[[a] [c d]]" {
				t.Errorf("u1's namespaces: %v", got)
			}
			all, err := tx.ListStoreNamespaces(StoreNamespaceQuery{Now: now})
			if err != nil {
				return err
			}
			if len(all) != 3 {
				t.Errorf("every namespace: %v", all)
			}
			found, err := tx.SearchStoreItems(StoreSearch{Now: now, Match: mine})
			if err != nil {
				return err
			}
			if len(found) != 2 {
				t.Errorf("u1's items: %d", len(found))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
