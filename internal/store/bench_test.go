package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"agentserver/internal/testutil/testdb"
)

// denseEmbedder is a deterministic embedder of dense vectors: the text's
// FNV-1a hash seeds a generator of components in [-1, 1). Equal texts get
// equal vectors; different texts nearly orthogonal ones.
type denseEmbedder struct{ dims int }

func (e denseEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		r := rand.New(rand.NewPCG(h.Sum64(), 1))
		v := make([]float32, e.dims)
		for j := range v {
			v[j] = r.Float32()*2 - 1
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkSemanticSearch100k puts 100,000 items with one 1,536-dimension
// vector each (through Put, eight writers at a time, fsync off) and then
// searches them with a query equal to one item's text, limit 10. It reports
// the first search (which loads the in-memory index) and the p50 and p99 of
// the others, and fails unless every search ranks the item whose text it
// asked for first. The target is p50 ≤ 50 ms. Run it with
// -benchtime=200x.
func BenchmarkSemanticSearch100k(b *testing.B) {
	const items, dims = 100_000, 1536
	s := mustNew(b, testdb.Open(b), Options{})
	s.ConfigureIndex(IndexConfig{Dims: dims, Fields: []string{"text"}, Embedder: denseEmbedder{dims}})
	putItems(b, s, items)

	began := time.Now()
	searchFor(b, s, 0)
	first := time.Since(began)

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		began := time.Now()
		searchFor(b, s, (i*7919)%items)
		lat = append(lat, time.Since(began))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(ms(first), "ms-first-search")
	b.ReportMetric(ms(lat[len(lat)/2]), "ms-p50")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "ms-p99")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// putItems puts n items ["bench", "g<i%10>"] / "k<i>" with text "item <i>".
func putItems(b *testing.B, s *Service, n int) {
	b.Helper()
	next := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				ns := []string{"bench", fmt.Sprintf("g%d", i%10)}
				if err := s.Put(context.Background(), ns, fmt.Sprintf("k%d", i), map[string]any{"text": fmt.Sprintf("item %d", i)}, nil, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			b.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
}

// searchFor searches every item for the text of item i and fails unless it
// comes first with a score near 1.
func searchFor(b *testing.B, s *Service, i int) {
	b.Helper()
	got, err := s.Search(context.Background(), []string{"bench"}, nil, 10, 0, fmt.Sprintf("item %d", i), false)
	if err != nil {
		b.Fatal(err)
	}
	if len(got) != 10 || got[0].Key != fmt.Sprintf("k%d", i) || got[0].Score == nil || *got[0].Score < 0.999 {
		b.Fatalf("search for item %d: first of %d is %v", i, len(got), got[0])
	}
}
