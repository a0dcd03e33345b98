package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"agentserver/internal/errdefs"
	"agentserver/internal/storage"
	"agentserver/internal/testutil/fakeclock"
	"agentserver/internal/testutil/testdb"
)

func newTest(t *testing.T) (*Service, *fakeclock.Clock, *storage.DB) {
	t.Helper()
	return newTestWith(t, Options{})
}

// newTestWith is newTest with options.
func newTestWith(t *testing.T, opts Options) (*Service, *fakeclock.Clock, *storage.DB) {
	t.Helper()
	db := testdb.Open(t)
	c := fakeclock.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	s := mustNew(t, db, opts)
	s.now = c.Now
	return s, c, db
}

// mustNew builds a service over db.
func mustNew(t testing.TB, db *storage.DB, opts Options) *Service {
	t.Helper()
	s, err := New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func mustPut(t *testing.T, s *Service, ns []string, key string, value map[string]any, ttl *float64) {
	t.Helper()
	if err := s.Put(context.Background(), ns, key, value, nil, ttl); err != nil {
		t.Fatalf("put %v/%s: %v", ns, key, err)
	}
}

func mustGet(t *testing.T, s *Service, ns []string, key string, refresh bool) *Item {
	t.Helper()
	it, err := s.Get(context.Background(), ns, key, refresh)
	if err != nil {
		t.Fatalf("get %v/%s: %v", ns, key, err)
	}
	return it
}

func checkIndex(t *testing.T, db *storage.DB) {
	t.Helper()
	if err := db.View(context.Background(), func(tx *storage.Tx) error { return tx.CheckStoreExpiryIndex() }); err != nil {
		t.Fatal(err)
	}
}

func TestPutGetOverwrite(t *testing.T) {
	s, c, _ := newTest(t)
	ns := []string{"users", "u1", "memories"}
	created := c.Now()
	mustPut(t, s, ns, "k", map[string]any{"text": "hello", "n": 1}, nil)

	got := mustGet(t, s, ns, "k", false)
	want := &Item{Namespace: ns, Key: "k", Value: map[string]any{"text": "hello", "n": 1.0}, CreatedAt: created, UpdatedAt: created}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	c.Advance(time.Minute)
	mustPut(t, s, ns, "k", map[string]any{"text": "bye"}, nil)
	got = mustGet(t, s, ns, "k", false)
	if !got.CreatedAt.Equal(created) || !got.UpdatedAt.Equal(created.Add(time.Minute)) {
		t.Fatalf("created %v updated %v: created_at must stay, updated_at must move", got.CreatedAt, got.UpdatedAt)
	}
	if !reflect.DeepEqual(got.Value, map[string]any{"text": "bye"}) {
		t.Fatalf("value %v", got.Value)
	}
}

func TestGetMissingIsNil(t *testing.T) {
	s, _, _ := newTest(t)
	mustPut(t, s, []string{"a"}, "k", map[string]any{}, nil)
	for _, tc := range []struct {
		name string
		ns   []string
		key  string
	}{
		{"missing key", []string{"a"}, "x"},
		{"missing namespace", []string{"b"}, "k"},
		{"child namespace", []string{"a", "b"}, "k"},
		{"empty namespace", nil, "k"},
		{"unstorable label", []string{"a.b"}, "k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if it := mustGet(t, s, tc.ns, tc.key, false); it != nil {
				t.Fatalf("got %+v, want nil", it)
			}
		})
	}
	if _, err := s.Get(context.Background(), []string{"a"}, "", false); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("empty key: %v", err)
	}
}

func TestDelete(t *testing.T) {
	s, _, db := newTest(t)
	ctx := context.Background()
	mustPut(t, s, []string{"a"}, "k", map[string]any{"x": 1}, ptr(5.0))
	mustPut(t, s, []string{"a"}, "other", map[string]any{"x": 2}, nil)
	if err := s.Delete(ctx, []string{"a"}, "k"); err != nil {
		t.Fatal(err)
	}
	if it := mustGet(t, s, []string{"a"}, "k", false); it != nil {
		t.Fatalf("deleted item still there: %+v", it)
	}
	if it := mustGet(t, s, []string{"a"}, "other", false); it == nil {
		t.Fatal("delete removed a sibling")
	}
	checkIndex(t, db)
	for _, ns := range [][]string{{"a"}, {"nope"}, nil} {
		if err := s.Delete(ctx, ns, "k"); err != nil {
			t.Fatalf("deleting missing item in %v: %v", ns, err)
		}
	}
	if err := s.Delete(ctx, []string{"a"}, ""); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("empty key: %v", err)
	}
}

func TestPutValidation(t *testing.T) {
	s, _, _ := newTest(t)
	ok := map[string]any{"x": 1}
	for _, tc := range []struct {
		name    string
		ns      []string
		key     string
		value   map[string]any
		index   any
		ttl     *float64
		mention string
	}{
		{"nil namespace", nil, "k", ok, nil, nil, "namespace"},
		{"empty namespace", []string{}, "k", ok, nil, nil, "namespace"},
		{"empty label", []string{"a", ""}, "k", ok, nil, nil, "label 1"},
		{"dot in label", []string{"a", "b.c"}, "k", ok, nil, nil, `"b.c"`},
		{"separator in label", []string{"a\x1fb"}, "k", ok, nil, nil, "0x1f"},
		{"empty key", []string{"a"}, "", ok, nil, nil, "key"},
		{"nil value", []string{"a"}, "k", nil, nil, nil, "value"},
		{"zero ttl", []string{"a"}, "k", ok, nil, ptr(0.0), "ttl"},
		{"negative ttl", []string{"a"}, "k", ok, nil, ptr(-1.0), "ttl"},
		{"huge ttl", []string{"a"}, "k", ok, nil, ptr(1e300), "ttl"},
		{"index true", []string{"a"}, "k", ok, true, nil, "index"},
		{"index of numbers", []string{"a"}, "k", ok, []any{1.0}, nil, "index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Put(context.Background(), tc.ns, tc.key, tc.value, tc.index, tc.ttl)
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("message %q does not mention %q", err, tc.mention)
			}
		})
	}
	if got, _ := s.Search(context.Background(), nil, nil, 100, 0, "", false); len(got) != 0 {
		t.Fatalf("rejected puts wrote %d items", len(got))
	}
	for _, index := range []any{nil, false, []string{"a.b"}, []any{"text"}} {
		if err := s.Put(context.Background(), []string{"a"}, "k", ok, index, nil); err != nil {
			t.Fatalf("index %v: %v", index, err)
		}
	}
}

func keys(items []Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, fmt.Sprintf("%v/%s", it.Namespace, it.Key))
	}
	return out
}

func TestSearch(t *testing.T) {
	s, c, _ := newTest(t)
	put := func(ns []string, key string, v map[string]any) {
		t.Helper()
		c.Advance(time.Second) // distinct updated_at, later puts first
		mustPut(t, s, ns, key, v, nil)
	}
	put([]string{"a"}, "1", map[string]any{"kind": "note", "score": 3, "text": "Buy MILK"})
	put([]string{"a", "b"}, "2", map[string]any{"kind": "note", "score": 7, "tags": []any{"x", "y"}})
	put([]string{"ab"}, "3", map[string]any{"kind": "todo", "score": 5, "meta": map[string]any{"p": 1, "q": 2}})
	put([]string{"a", "b", "c"}, "4", map[string]any{"kind": "todo", "text": "call mom"})
	put([]string{"z"}, "5", map[string]any{"Milkshake": true})

	for _, tc := range []struct {
		name          string
		prefix        []string
		filter        map[string]any
		query         string
		limit, offset int
		want          []string
	}{
		{"all, newest first", nil, nil, "", 0, 0, []string{"[z]/5", "[a b c]/4", "[ab]/3", "[a b]/2", "[a]/1"}},
		{"prefix framing", []string{"a"}, nil, "", 0, 0, []string{"[a b c]/4", "[a b]/2", "[a]/1"}},
		{"deeper prefix", []string{"a", "b"}, nil, "", 0, 0, []string{"[a b c]/4", "[a b]/2"}},
		{"ab only", []string{"ab"}, nil, "", 0, 0, []string{"[ab]/3"}},
		{"filter scalar", nil, map[string]any{"kind": "note"}, "", 0, 0, []string{"[a b]/2", "[a]/1"}},
		{"filter int vs stored float", nil, map[string]any{"score": 5}, "", 0, 0, []string{"[ab]/3"}},
		{"filter two fields", []string{"a"}, map[string]any{"kind": "todo", "text": "call mom"}, "", 0, 0, []string{"[a b c]/4"}},
		{"filter missing field", nil, map[string]any{"nope": "x"}, "", 0, 0, []string{}},
		{"filter array contains", nil, map[string]any{"tags": []any{"y"}}, "", 0, 0, []string{"[a b]/2"}},
		{"filter object contains", nil, map[string]any{"meta": map[string]any{"q": 2}}, "", 0, 0, []string{"[ab]/3"}},
		{"filter $gt", nil, map[string]any{"score": map[string]any{"$gt": 3}}, "", 0, 0, []string{"[ab]/3", "[a b]/2"}},
		{"filter $gte $lt", nil, map[string]any{"score": map[string]any{"$gte": 3, "$lt": 7}}, "", 0, 0, []string{"[ab]/3", "[a]/1"}},
		{"filter $ne", nil, map[string]any{"kind": map[string]any{"$ne": "note"}}, "", 0, 0, []string{"[z]/5", "[a b c]/4", "[ab]/3"}},
		{"filter $eq", nil, map[string]any{"kind": map[string]any{"$eq": "todo"}}, "", 0, 0, []string{"[a b c]/4", "[ab]/3"}},
		{"query case-insensitive", nil, nil, "milk", 0, 0, []string{"[z]/5", "[a]/1"}},
		{"query number", nil, nil, "7", 0, 0, []string{"[a b]/2"}},
		{"query and filter", nil, map[string]any{"kind": "note"}, "MILK", 0, 0, []string{"[a]/1"}},
		{"query no match", nil, nil, "zebra", 0, 0, []string{}},
		{"limit", nil, nil, "", 2, 0, []string{"[z]/5", "[a b c]/4"}},
		{"limit offset", nil, nil, "", 2, 3, []string{"[a b]/2", "[a]/1"}},
		{"offset past end", nil, nil, "", 0, 9, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Search(context.Background(), tc.prefix, tc.filter, tc.limit, tc.offset, tc.query, false)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("nil slice; want empty")
			}
			if g := keys(got); !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("got %v\nwant %v", g, tc.want)
			}
		})
	}
	if _, err := s.Search(context.Background(), nil, nil, -1, 0, "", false); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("negative limit: %v", err)
	}
}

func TestSearchDefaultLimit(t *testing.T) {
	s, _, _ := newTest(t)
	for i := 0; i < DefaultSearchLimit+3; i++ {
		mustPut(t, s, []string{"n"}, fmt.Sprint(i), map[string]any{}, nil)
	}
	got, err := s.Search(context.Background(), []string{"n"}, nil, 0, 0, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != DefaultSearchLimit {
		t.Fatalf("%d items, want the default %d", len(got), DefaultSearchLimit)
	}
}

func TestListNamespaces(t *testing.T) {
	s, _, _ := newTest(t)
	for _, ns := range [][]string{
		{"users", "u1", "memories"}, {"users", "u1", "prefs"}, {"users", "u2", "memories"},
		{"users"}, {"usersx", "memories"}, {"docs", "v1"},
	} {
		mustPut(t, s, ns, "k", map[string]any{}, nil)
	}
	for _, tc := range []struct {
		name           string
		prefix, suffix []string
		maxDepth       *int
		limit, offset  int
		want           [][]string
	}{
		{"all sorted", nil, nil, nil, 0, 0, [][]string{{"docs", "v1"}, {"users"}, {"users", "u1", "memories"}, {"users", "u1", "prefs"}, {"users", "u2", "memories"}, {"usersx", "memories"}}},
		{"prefix framing", []string{"users"}, nil, nil, 0, 0, [][]string{{"users"}, {"users", "u1", "memories"}, {"users", "u1", "prefs"}, {"users", "u2", "memories"}}},
		{"suffix", nil, []string{"memories"}, nil, 0, 0, [][]string{{"users", "u1", "memories"}, {"users", "u2", "memories"}, {"usersx", "memories"}}},
		{"wildcard prefix", []string{"users", "*", "memories"}, nil, nil, 0, 0, [][]string{{"users", "u1", "memories"}, {"users", "u2", "memories"}}},
		{"wildcard suffix", nil, []string{"*", "memories"}, nil, 0, 0, [][]string{{"users", "u1", "memories"}, {"users", "u2", "memories"}, {"usersx", "memories"}}},
		{"prefix and suffix", []string{"users"}, []string{"prefs"}, nil, 0, 0, [][]string{{"users", "u1", "prefs"}}},
		{"max depth dedups", []string{"users"}, nil, ptr(2), 0, 0, [][]string{{"users"}, {"users", "u1"}, {"users", "u2"}}},
		{"max depth 1", nil, nil, ptr(1), 0, 0, [][]string{{"docs"}, {"users"}, {"usersx"}}},
		{"limit", nil, nil, nil, 2, 0, [][]string{{"docs", "v1"}, {"users"}}},
		{"offset", nil, nil, nil, 2, 4, [][]string{{"users", "u2", "memories"}, {"usersx", "memories"}}},
		{"none", []string{"nope"}, nil, nil, 0, 0, [][]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListNamespaces(context.Background(), tc.prefix, tc.suffix, tc.maxDepth, tc.limit, tc.offset)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	if _, err := s.ListNamespaces(context.Background(), nil, nil, ptr(-1), 0, 0); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("negative max_depth: %v", err)
	}
}

func TestTTLExpiryAndSweep(t *testing.T) {
	s, c, db := newTest(t)
	ctx := context.Background()
	mustPut(t, s, []string{"tmp"}, "short", map[string]any{"v": "s"}, ptr(1.0))
	mustPut(t, s, []string{"tmp"}, "long", map[string]any{"v": "l"}, ptr(10.0))
	mustPut(t, s, []string{"keep"}, "forever", map[string]any{"v": "f"}, nil)
	checkIndex(t, db)

	c.Advance(59 * time.Second)
	if mustGet(t, s, []string{"tmp"}, "short", false) == nil {
		t.Fatal("item gone before its deadline")
	}
	c.Advance(time.Second) // exactly at the deadline: expired
	if it := mustGet(t, s, []string{"tmp"}, "short", false); it != nil {
		t.Fatalf("expired item visible to get: %+v", it)
	}
	found, err := s.Search(ctx, []string{"tmp"}, nil, 0, 0, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if g := keys(found); !reflect.DeepEqual(g, []string{"[tmp]/long"}) {
		t.Fatalf("search sees %v", g)
	}

	n, err := s.SweepExpired(ctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want 1", n, err)
	}
	checkIndex(t, db)
	if n, _ := s.SweepExpired(ctx); n != 0 {
		t.Fatalf("second sweep deleted %d", n)
	}

	c.Advance(time.Hour)
	if ns, _ := s.ListNamespaces(ctx, nil, nil, nil, 0, 0); !reflect.DeepEqual(ns, [][]string{{"keep"}}) {
		t.Fatalf("expired namespace still listed before sweep: %q", ns)
	}
	if n, _ := s.SweepExpired(ctx); n != 1 {
		t.Fatalf("sweep deleted %d, want 1", n)
	}
	checkIndex(t, db)
	if mustGet(t, s, []string{"keep"}, "forever", false) == nil {
		t.Fatal("sweep deleted an item without ttl")
	}
	// Writing over an expired-and-swept key starts a new item.
	mustPut(t, s, []string{"tmp"}, "short", map[string]any{}, nil)
	if it := mustGet(t, s, []string{"tmp"}, "short", false); !it.CreatedAt.Equal(c.Now()) {
		t.Fatalf("created_at %v, want %v", it.CreatedAt, c.Now())
	}
}

func TestSweepManyBatches(t *testing.T) {
	s, c, db := newTest(t)
	const n = sweepBatch + 10
	err := db.Update(context.Background(), func(tx *storage.Tx) error {
		exp := c.Now().Add(time.Minute)
		for i := 0; i < n; i++ {
			it := storage.StoreItem{Namespace: []string{"b"}, Key: fmt.Sprint(i), Value: map[string]any{}, UpdatedAt: c.Now(), ExpiresAt: &exp, TTLMinutes: ptr(1.0)}
			if err := tx.PutStoreItem(it); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if got, err := s.SweepExpired(context.Background()); err != nil || got != n {
		t.Fatalf("sweep = %d, %v; want %d", got, err, n)
	}
	checkIndex(t, db)
}

func TestRefreshTTL(t *testing.T) {
	s, c, db := newTest(t)
	ctx := context.Background()
	mustPut(t, s, []string{"r"}, "get", map[string]any{}, ptr(1.0))
	mustPut(t, s, []string{"r"}, "search", map[string]any{}, ptr(1.0))
	mustPut(t, s, []string{"r"}, "plain", map[string]any{}, nil)
	put := c.Now()

	c.Advance(50 * time.Second)
	if it := mustGet(t, s, []string{"r"}, "get", true); it == nil || !it.UpdatedAt.Equal(put) {
		t.Fatalf("refreshing get: %+v (updated_at must not move)", it)
	}
	if _, err := s.Search(ctx, []string{"r"}, nil, 0, 0, "", true); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, db)
	// Plain reads do not refresh.
	mustGet(t, s, []string{"r"}, "plain", true)

	c.Advance(50 * time.Second) // 100 s after put, 50 s after refresh
	for _, key := range []string{"get", "search", "plain"} {
		if mustGet(t, s, []string{"r"}, key, false) == nil {
			t.Fatalf("%s expired although its ttl was refreshed", key)
		}
	}
	c.Advance(10 * time.Second) // 60 s after refresh
	for _, key := range []string{"get", "search"} {
		if it := mustGet(t, s, []string{"r"}, key, false); it != nil {
			t.Fatalf("%s still visible a full ttl after its refresh", key)
		}
	}
	if n, _ := s.SweepExpired(ctx); n != 2 {
		t.Fatalf("swept %d, want 2", n)
	}
	checkIndex(t, db)
}

func TestParseNamespaceParam(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"absent", nil, []string{}},
		{"empty", []string{""}, []string{}},
		{"dot-joined", []string{"a.b.c"}, []string{"a", "b", "c"}},
		{"single label", []string{"users"}, []string{"users"}},
		{"repeated", []string{"a", "b"}, []string{"a", "b"}},
		{"json array", []string{`["a","b"]`}, []string{"a", "b"}},
		{"json array with dots kept", []string{`["a.b","c"]`}, []string{"a.b", "c"}},
		{"empty json array", []string{"[]"}, []string{}},
		{"not json", []string{"[a.b"}, []string{"[a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseNamespaceParam(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRunSweepsAndStopsOnCancel(t *testing.T) {
	// In a synctest bubble the clock is fake and synctest.Wait returns once
	// Run is parked on its ticker, so nothing here sleeps on real time.
	synctest.Test(t, func(t *testing.T) {
		db, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s := mustNew(t, db, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		live := func() int {
			var n int
			_ = db.View(context.Background(), func(tx *storage.Tx) error {
				items, err := tx.SearchStoreItems(storage.StoreSearch{}) // zero Now: expired items too
				n = len(items)
				return err
			})
			return n
		}

		mustPut(t, s, []string{"x"}, "early", map[string]any{}, ptr(1.0))
		time.Sleep(2 * time.Minute) // fake time
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Run(ctx)
		}()
		synctest.Wait()
		if n := live(); n != 0 {
			t.Fatalf("%d items left after the sweep at start", n)
		}

		mustPut(t, s, []string{"x"}, "late", map[string]any{}, ptr(0.25)) // 15 s
		time.Sleep(DefaultSweepInterval)
		synctest.Wait()
		if n := live(); n != 0 {
			t.Fatalf("%d items left after a ticker sweep", n)
		}

		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute): // fake time: fails only if Run never returns
			t.Fatal("Run did not return after cancel")
		}
	})
}

func FuzzParseNamespaceParam(f *testing.F) {
	for _, s := range []string{"", "a", "a.b.c", `["a","b"]`, "[", "[]", `["a",1]`, "..", " a "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := ParseNamespaceParam([]string{v})
		if got == nil {
			t.Fatal("nil namespace")
		}
		trimmed := strings.TrimSpace(v)
		if trimmed == "" || strings.HasPrefix(trimmed, "[") {
			return
		}
		if j := strings.Join(got, "."); j != v {
			t.Fatalf("%q parsed to %q, which joins back to %q", v, got, j)
		}
	})
}

func TestSearchSetOperators(t *testing.T) {
	s, _, _ := newTest(t)
	ctx := context.Background()
	for i, color := range []string{"red", "green", "blue"} {
		if err := s.Put(ctx, []string{"ops"}, color, map[string]any{"color": color, "n": float64(i)}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	in, err := s.Search(ctx, []string{"ops"}, map[string]any{"color": map[string]any{"$in": []any{"red", "blue"}}}, 10, 0, "", false)
	if err != nil || len(in) != 2 {
		t.Fatalf("$in: %v %v", in, err)
	}
	nin, err := s.Search(ctx, []string{"ops"}, map[string]any{"color": map[string]any{"$nin": []any{"red"}}}, 10, 0, "", false)
	if err != nil || len(nin) != 2 {
		t.Fatalf("$nin: %v %v", nin, err)
	}
	for _, bad := range []map[string]any{
		{"color": map[string]any{"$regex": "r.*"}},
		{"color": map[string]any{"$in": "red"}},
	} {
		if _, err := s.Search(ctx, []string{"ops"}, bad, 10, 0, "", false); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("filter %v: err = %v, want ErrInvalid", bad, err)
		}
	}
}

// The configured default TTL applies to items put without one; an item's
// own TTL wins.
func TestDefaultTTL(t *testing.T) {
	s, c, db := newTestWith(t, Options{TTL: &TTLConfig{DefaultTTL: 2, RefreshOnRead: false}})
	if s.RefreshOnRead() {
		t.Fatal("RefreshOnRead ignores the configuration")
	}
	mustPut(t, s, []string{"d"}, "default", map[string]any{}, nil)
	mustPut(t, s, []string{"d"}, "own", map[string]any{}, ptr(10.0))
	checkIndex(t, db)
	c.Advance(2 * time.Minute)
	if mustGet(t, s, []string{"d"}, "default", false) != nil {
		t.Fatal("an item without a ttl outlived the default ttl")
	}
	if mustGet(t, s, []string{"d"}, "own", false) == nil {
		t.Fatal("an item with its own ttl expired at the default one")
	}
	if _, err := New(db, Options{TTL: &TTLConfig{DefaultTTL: -1}}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("negative default ttl: %v", err)
	}
	if mustNew(t, db, Options{}).RefreshOnRead() != true {
		t.Fatal("reads must refresh by default, as LangGraph's stores do")
	}
}
