package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"agentserver/internal/storage"
)

func newIndexedTest(t *testing.T, dims int) (*Service, func(d time.Duration)) {
	t.Helper()
	s, clock, _ := newTest(t)
	s.ConfigureIndex(IndexConfig{Dims: dims, Fields: []string{"text"}, Embedder: denseEmbedder{dims}})
	return s, clock.Advance
}

func firstKey(t *testing.T, s *Service, query string) (string, *float64) {
	t.Helper()
	got, err := s.Search(context.Background(), []string{"a"}, nil, 1, 0, query, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("search %q: %d items", query, len(got))
	}
	return got[0].Key, got[0].Score
}

// The in-memory index follows puts, overwrites, deletes and expiry after
// it was loaded: a search never returns a deleted or expired item, and
// finds an item put after the load.
func TestVectorIndexFollowsWrites(t *testing.T) {
	s, advance := newIndexedTest(t, 64)
	for i := range 100 {
		mustPut(t, s, []string{"a"}, fmt.Sprint(i), map[string]any{"text": fmt.Sprint("item ", i)}, nil)
	}
	if k, score := firstKey(t, s, "item 7"); k != "7" || *score < 0.999 {
		t.Fatalf("first = %s (%v), want 7", k, *score)
	}
	mustPut(t, s, []string{"a"}, "new", map[string]any{"text": "late"}, nil)
	if k, _ := firstKey(t, s, "late"); k != "new" {
		t.Fatalf("item put after the load: first = %s", k)
	}
	if err := s.Delete(context.Background(), []string{"a"}, "7"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, []string{"a"}, "8", map[string]any{"text": "other words"}, nil)
	for _, q := range []string{"item 7", "item 8"} {
		if k, _ := firstKey(t, s, q); k == "7" || k == "8" {
			t.Fatalf("search %q returned %s, deleted or changed", q, k)
		}
	}
	mustPut(t, s, []string{"a"}, "brief", map[string]any{"text": "short lived"}, ptr(1.0))
	advance(2 * time.Minute)
	if k, _ := firstKey(t, s, "short lived"); k == "brief" {
		t.Fatal("expired item returned")
	}
	if _, err := s.SweepExpired(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.vectors.mu.RLock()
	n := len(s.vectors.items)
	s.vectors.mu.RUnlock()
	if n != 100 { // 100 puts, one new, one deleted, one swept
		t.Fatalf("index holds %d items, want 100", n)
	}
}

// The index's ranking agrees with ranking every item exactly, for the
// first page and a later one.
func TestVectorIndexRanksAsFullScan(t *testing.T) {
	s, _ := newIndexedTest(t, 256)
	for i := range 500 {
		mustPut(t, s, []string{"a", fmt.Sprint(i % 3)}, fmt.Sprint(i), map[string]any{"text": fmt.Sprint("item ", i)}, nil)
	}
	ctx := context.Background()
	for _, page := range [][2]int{{10, 0}, {5, 20}} {
		for i := range 20 {
			query := fmt.Sprint("query ", i)
			got, err := s.Search(ctx, []string{"a"}, nil, page[0], page[1], query, false)
			if err != nil {
				t.Fatal(err)
			}
			want := fullScanKeys(t, s, query, page[0], page[1])
			var gotKeys []string
			for _, it := range got {
				gotKeys = append(gotKeys, it.Key)
			}
			if !slices.Equal(gotKeys, want) {
				t.Fatalf("query %q page %v: index %v, full scan %v", query, page, gotKeys, want)
			}
		}
	}
}

// fullScanKeys ranks every item under ["a"] exactly and returns the keys
// of one page.
func fullScanKeys(t *testing.T, s *Service, query string, limit, offset int) []string {
	t.Helper()
	vecs, err := s.embed(context.Background(), []string{query})
	if err != nil {
		t.Fatal(err)
	}
	var all []storage.StoreItem
	err = s.db.View(context.Background(), func(tx *storage.Tx) error {
		all, err = tx.SearchStoreItems(storage.StoreSearch{Prefix: []string{"a"}, Now: s.now(), WithVectors: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ranked, _ := rankBySimilarity(all, vecs[0])
	var out []string
	for _, it := range pageSlice(ranked, offset, limit) {
		out = append(out, it.Key)
	}
	return out
}

// Vectors of another length (stored before store.index.dims changed) score 0
// instead of being read past their end.
func TestCosineOfUnequalLengthsIsZero(t *testing.T) {
	if got := cosine([]float32{1, 0, 0}, []float32{1, 0}); got != 0 {
		t.Fatalf("cosine of unequal lengths = %v", got)
	}
	if got := cosine([]float32{1, 0}, []float32{1, 0}); got != 1 {
		t.Fatalf("cosine of equal vectors = %v", got)
	}
}
