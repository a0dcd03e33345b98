package storage

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"agentserver/internal/errdefs"
)

var storeT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func storeAt(min int) time.Time { return storeT0.Add(time.Duration(min) * time.Minute) }

func ptrTime(t time.Time) *time.Time { return &t }

func storeItem(ns []string, key string, updated time.Time, expires *time.Time) StoreItem {
	return StoreItem{Namespace: ns, Key: key, Value: map[string]any{"k": key}, UpdatedAt: updated, ExpiresAt: expires}
}

func mustUpdate(t *testing.T, db *DB, fn func(*Tx) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func putItems(t *testing.T, db *DB, items ...StoreItem) {
	t.Helper()
	mustUpdate(t, db, func(tx *Tx) error {
		for _, it := range items {
			if err := tx.PutStoreItem(it); err != nil {
				return err
			}
		}
		return nil
	})
}

func checkExpiryIndex(t *testing.T, db *DB) {
	t.Helper()
	if err := db.View(context.Background(), func(tx *Tx) error { return tx.CheckStoreExpiryIndex() }); err != nil {
		t.Fatal(err)
	}
}

func getItem(t *testing.T, db *DB, ns []string, key string, now time.Time) (StoreItem, error) {
	t.Helper()
	var it StoreItem
	err := db.View(context.Background(), func(tx *Tx) error {
		var err error
		it, err = tx.GetStoreItem(ns, key, now)
		return err
	})
	return it, err
}

func TestStorePutGetKeepsCreatedAt(t *testing.T) { forEachBackend(t, testStorePutGetKeepsCreatedAt) }

func testStorePutGetKeepsCreatedAt(t *testing.T, db *DB) {
	ns := []string{"users", "u1"}
	putItems(t, db, storeItem(ns, "k", storeAt(0), nil))
	second := storeItem(ns, "k", storeAt(5), ptrTime(storeAt(60)))
	second.Value = map[string]any{"v": 2.0}
	putItems(t, db, second)

	got, err := getItem(t, db, ns, "k", storeAt(6))
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(storeAt(0)) || !got.UpdatedAt.Equal(storeAt(5)) {
		t.Fatalf("created %v updated %v, want %v %v", got.CreatedAt, got.UpdatedAt, storeAt(0), storeAt(5))
	}
	if !reflect.DeepEqual(got.Value, map[string]any{"v": 2.0}) || !reflect.DeepEqual(got.Namespace, ns) {
		t.Fatalf("got %+v", got)
	}
	checkExpiryIndex(t, db)

	// Moving the deadline moves the index entry; dropping it removes it.
	putItems(t, db, storeItem(ns, "k", storeAt(7), ptrTime(storeAt(90))))
	checkExpiryIndex(t, db)
	putItems(t, db, storeItem(ns, "k", storeAt(8), nil))
	checkExpiryIndex(t, db)
	if n := expiryLen(t, db); n != 0 {
		t.Fatalf("expiry entries = %d, want 0", n)
	}
}

// expiryLen counts the deadlines the backend's expiry index holds: the
// store_expiry entries, or on PostgreSQL the items whose expires_at is set.
func expiryLen(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	if err := db.View(context.Background(), func(tx *Tx) error {
		if p, ok := tx.kv.(*pgTxn); ok {
			counts, err := pgCollect[int](p, `SELECT count(*) FROM store_items WHERE expires_at IS NOT NULL`)
			if err == nil {
				n = counts[0]
			}
			return err
		}
		return tx.bucket(bucketStoreExpiry).ForEach(func(_, _ []byte) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStorePutOverExpiredItemResetsCreatedAt(t *testing.T) {
	forEachBackend(t, testStorePutOverExpiredItemResetsCreatedAt)
}

func testStorePutOverExpiredItemResetsCreatedAt(t *testing.T, db *DB) {
	ns := []string{"a"}
	putItems(t, db, storeItem(ns, "k", storeAt(0), ptrTime(storeAt(1))))
	putItems(t, db, storeItem(ns, "k", storeAt(2), nil))
	got, err := getItem(t, db, ns, "k", storeAt(3))
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(storeAt(2)) {
		t.Fatalf("created_at = %v, want %v (the old item had expired)", got.CreatedAt, storeAt(2))
	}
	checkExpiryIndex(t, db)
}

func TestStoreGetMissingAndExpired(t *testing.T) { forEachBackend(t, testStoreGetMissingAndExpired) }

func testStoreGetMissingAndExpired(t *testing.T, db *DB) {
	putItems(t, db, storeItem([]string{"a"}, "k", storeAt(0), ptrTime(storeAt(10))))
	for _, tc := range []struct {
		name string
		ns   []string
		key  string
		now  time.Time
		want error
	}{
		{"live", []string{"a"}, "k", storeAt(9), nil},
		{"at deadline", []string{"a"}, "k", storeAt(10), ErrNotFound},
		{"after deadline", []string{"a"}, "k", storeAt(11), ErrNotFound},
		{"missing key", []string{"a"}, "x", storeAt(0), ErrNotFound},
		{"missing namespace", []string{"b"}, "k", storeAt(0), ErrNotFound},
		{"empty namespace", nil, "k", storeAt(0), errdefs.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := getItem(t, db, tc.ns, tc.key, tc.now)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestStorePutRefusesUnframeableNamespace(t *testing.T) {
	forEachBackend(t, testStorePutRefusesUnframeableNamespace)
}

func testStorePutRefusesUnframeableNamespace(t *testing.T, db *DB) {
	for _, ns := range [][]string{nil, {}, {""}, {"a", ""}, {"a\x1fb"}, {"a\x00"}} {
		err := db.Update(context.Background(), func(tx *Tx) error {
			return tx.PutStoreItem(storeItem(ns, "k", storeAt(0), nil))
		})
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("namespace %q: err = %v, want invalid", ns, err)
		}
	}
	if n := countItems(t, db); n != 0 {
		t.Fatalf("%d items written", n)
	}
}

func countItems(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	_ = db.View(context.Background(), func(tx *Tx) error {
		return tx.bucket(bucketStoreItems).ForEach(func(_, _ []byte) error { n++; return nil })
	})
	return n
}

func TestStoreDelete(t *testing.T) { forEachBackend(t, testStoreDelete) }

func testStoreDelete(t *testing.T, db *DB) {
	putItems(t, db, storeItem([]string{"a"}, "k", storeAt(0), ptrTime(storeAt(10))))
	mustUpdate(t, db, func(tx *Tx) error { return tx.DeleteStoreItem([]string{"a"}, "k") })
	if _, err := getItem(t, db, []string{"a"}, "k", storeAt(0)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	checkExpiryIndex(t, db)
	if n := expiryLen(t, db); n != 0 {
		t.Fatalf("expiry entries = %d", n)
	}
	err := db.Update(context.Background(), func(tx *Tx) error { return tx.DeleteStoreItem([]string{"a"}, "k") })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func nsKeys(items []StoreItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, fmt.Sprintf("%q/%s", it.Namespace, it.Key))
	}
	return out
}

func TestStoreSearchPrefixFraming(t *testing.T) { forEachBackend(t, testStoreSearchPrefixFraming) }

func testStoreSearchPrefixFraming(t *testing.T, db *DB) {
	putItems(t, db,
		storeItem([]string{"a"}, "1", storeAt(1), nil),
		storeItem([]string{"a", "b"}, "2", storeAt(2), nil),
		storeItem([]string{"a", "b", "c"}, "3", storeAt(3), nil),
		storeItem([]string{"ab"}, "4", storeAt(4), nil),
		storeItem([]string{"a\x01"}, "5", storeAt(5), nil),
		storeItem([]string{"b"}, "6", storeAt(6), nil),
		storeItem([]string{"a", "bc"}, "7", storeAt(7), nil),
	)
	for _, tc := range []struct {
		prefix []string
		want   []string
	}{
		{nil, []string{`["a" "bc"]/7`, `["b"]/6`, `["a\x01"]/5`, `["ab"]/4`, `["a" "b" "c"]/3`, `["a" "b"]/2`, `["a"]/1`}},
		{[]string{"a"}, []string{`["a" "bc"]/7`, `["a" "b" "c"]/3`, `["a" "b"]/2`, `["a"]/1`}},
		{[]string{"a", "b"}, []string{`["a" "b" "c"]/3`, `["a" "b"]/2`}},
		{[]string{"ab"}, []string{`["ab"]/4`}},
		{[]string{"a", "b", "c", "d"}, []string{}},
		{[]string{""}, []string{}},
		{[]string{"a\x1f"}, []string{}},
	} {
		t.Run(fmt.Sprintf("%q", tc.prefix), func(t *testing.T) {
			var got []StoreItem
			err := db.View(context.Background(), func(tx *Tx) error {
				var err error
				got, err = tx.SearchStoreItems(StoreSearch{Prefix: tc.prefix, Now: storeAt(0)})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if g := nsKeys(got); !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("got %v\nwant %v", g, tc.want)
			}
		})
	}
}

func TestStoreSearchOrderPagingMatchExpiry(t *testing.T) {
	forEachBackend(t, testStoreSearchOrderPagingMatchExpiry)
}

func testStoreSearchOrderPagingMatchExpiry(t *testing.T, db *DB) {
	putItems(t, db,
		storeItem([]string{"n"}, "b", storeAt(1), nil),
		storeItem([]string{"n"}, "a", storeAt(1), nil), // same time: key order
		storeItem([]string{"n"}, "c", storeAt(2), nil),
		storeItem([]string{"n"}, "gone", storeAt(3), ptrTime(storeAt(5))),
		storeItem([]string{"m"}, "z", storeAt(1), nil), // same time: namespace order
	)
	search := func(q StoreSearch) []string {
		t.Helper()
		var got []StoreItem
		if err := db.View(context.Background(), func(tx *Tx) error {
			var err error
			got, err = tx.SearchStoreItems(q)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return nsKeys(got)
	}
	all := []string{`["n"]/gone`, `["n"]/c`, `["m"]/z`, `["n"]/a`, `["n"]/b`}
	if g := search(StoreSearch{Now: storeAt(4)}); !reflect.DeepEqual(g, all) {
		t.Fatalf("order: %v, want %v", g, all)
	}
	if g := search(StoreSearch{Now: storeAt(5)}); !reflect.DeepEqual(g, all[1:]) {
		t.Fatalf("after expiry: %v", g)
	}
	if g := search(StoreSearch{Now: storeAt(4), Offset: 1, Limit: 2}); !reflect.DeepEqual(g, all[1:3]) {
		t.Fatalf("page: %v", g)
	}
	if g := search(StoreSearch{Now: storeAt(4), Offset: 10}); len(g) != 0 {
		t.Fatalf("past the end: %v", g)
	}
	keepA := func(it *StoreItem) bool { return it.Key == "a" }
	if g := search(StoreSearch{Now: storeAt(4), Match: keepA}); !reflect.DeepEqual(g, []string{`["n"]/a`}) {
		t.Fatalf("match: %v", g)
	}
}

func TestStoreListNamespaces(t *testing.T) { forEachBackend(t, testStoreListNamespaces) }

func testStoreListNamespaces(t *testing.T, db *DB) {
	putItems(t, db,
		storeItem([]string{"a"}, "1", storeAt(0), nil),
		storeItem([]string{"a", "b"}, "1", storeAt(0), nil),
		storeItem([]string{"a", "b"}, "2", storeAt(0), nil),
		storeItem([]string{"a", "b", "c"}, "1", storeAt(0), nil),
		storeItem([]string{"a", "x", "c"}, "1", storeAt(0), nil),
		storeItem([]string{"ab", "c"}, "1", storeAt(0), nil),
		// Only the second item of this namespace is live.
		storeItem([]string{"e", "f"}, "1", storeAt(0), ptrTime(storeAt(1))),
		storeItem([]string{"e", "f"}, "2", storeAt(0), nil),
		storeItem([]string{"gone"}, "1", storeAt(0), ptrTime(storeAt(1))),
	)
	depth := func(n int) *int { return &n }
	for _, tc := range []struct {
		name string
		q    StoreNamespaceQuery
		want [][]string
	}{
		{"all", StoreNamespaceQuery{}, [][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}, {"a", "x", "c"}, {"ab", "c"}, {"e", "f"}}},
		{"prefix framing", StoreNamespaceQuery{Prefix: []string{"a"}}, [][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}, {"a", "x", "c"}}},
		{"prefix wildcard", StoreNamespaceQuery{Prefix: []string{"a", "*"}}, [][]string{{"a", "b"}, {"a", "b", "c"}, {"a", "x", "c"}}},
		{"leading wildcard", StoreNamespaceQuery{Prefix: []string{"*", "c"}}, [][]string{{"ab", "c"}}},
		{"suffix", StoreNamespaceQuery{Suffix: []string{"c"}}, [][]string{{"a", "b", "c"}, {"a", "x", "c"}, {"ab", "c"}}},
		{"suffix wildcard", StoreNamespaceQuery{Suffix: []string{"b", "*"}}, [][]string{{"a", "b", "c"}}},
		{"prefix and suffix", StoreNamespaceQuery{Prefix: []string{"a"}, Suffix: []string{"c"}}, [][]string{{"a", "b", "c"}, {"a", "x", "c"}}},
		{"max depth", StoreNamespaceQuery{MaxDepth: depth(1)}, [][]string{{"a"}, {"ab"}, {"e"}}},
		{"max depth 2 under prefix", StoreNamespaceQuery{Prefix: []string{"a"}, MaxDepth: depth(2)}, [][]string{{"a"}, {"a", "b"}, {"a", "x"}}},
		{"suffix before truncation", StoreNamespaceQuery{Suffix: []string{"c"}, MaxDepth: depth(1)}, [][]string{{"a"}, {"ab"}}},
		{"limit offset", StoreNamespaceQuery{Limit: 2, Offset: 1}, [][]string{{"a", "b"}, {"a", "b", "c"}}},
		{"no match", StoreNamespaceQuery{Prefix: []string{"zz"}}, [][]string{}},
		{"after expiry of one item", StoreNamespaceQuery{Prefix: []string{"e"}, Now: storeAt(2)}, [][]string{{"e", "f"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			if q.Now.IsZero() {
				q.Now = storeAt(1)
			}
			var got [][]string
			if err := db.View(context.Background(), func(tx *Tx) error {
				var err error
				got, err = tx.ListStoreNamespaces(q)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) || len(got) > 0 && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	// Before any expiry, "gone" is listed.
	var got [][]string
	_ = db.View(context.Background(), func(tx *Tx) error {
		got, _ = tx.ListStoreNamespaces(StoreNamespaceQuery{Prefix: []string{"gone"}, Now: storeAt(0)})
		return nil
	})
	if !reflect.DeepEqual(got, [][]string{{"gone"}}) {
		t.Fatalf("live namespace: %q", got)
	}
}

func TestStoreDeleteExpired(t *testing.T) { forEachBackend(t, testStoreDeleteExpired) }

func testStoreDeleteExpired(t *testing.T, db *DB) {
	var items []StoreItem
	for i := 0; i < 5; i++ {
		items = append(items, storeItem([]string{"t"}, fmt.Sprint(i), storeAt(0), ptrTime(storeAt(i+1))))
	}
	items = append(items, storeItem([]string{"t"}, "forever", storeAt(0), nil))
	putItems(t, db, items...)

	sweep := func(now time.Time, max int) int {
		t.Helper()
		var n int
		mustUpdate(t, db, func(tx *Tx) error {
			var err error
			n, err = tx.DeleteExpiredStoreItems(now, max)
			return err
		})
		checkExpiryIndex(t, db)
		return n
	}
	if n := sweep(storeAt(0), 0); n != 0 {
		t.Fatalf("nothing due yet, deleted %d", n)
	}
	if n := sweep(storeAt(3), 2); n != 2 {
		t.Fatalf("bounded sweep deleted %d, want 2", n)
	}
	if _, err := getItem(t, db, []string{"t"}, "0", storeAt(0)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("earliest item should be gone first: %v", err)
	}
	if n := sweep(storeAt(3), 0); n != 1 {
		t.Fatalf("rest of the due items: %d, want 1", n)
	}
	if n := sweep(storeAt(100), 0); n != 2 {
		t.Fatalf("final sweep: %d, want 2", n)
	}
	if c := countItems(t, db); c != 1 {
		t.Fatalf("%d items left, want 1 (the one without ttl)", c)
	}
	if n := expiryLen(t, db); n != 0 {
		t.Fatalf("%d expiry entries left", n)
	}
}
