package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentserver/internal/testutil"
	"agentserver/internal/testutil/stats"
)

// largeStoreBody is a PUT /store/items body of about size bytes: a value
// of 1 KiB strings, as a document or a transcript is stored.
func largeStoreBody(tb testing.TB, key string, size int) []byte {
	tb.Helper()
	chunk := strings.Repeat("x", 1024)
	n := size / (len(chunk) + 3)
	chunks := make([]string, n)
	for i := range chunks {
		chunks[i] = chunk
	}
	body, err := json.Marshal(map[string]any{"namespace": []string{"bench", "large"}, "key": key, "value": map[string]any{"chunks": chunks}})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// BenchmarkSmallStorePutUnderLargePuts measures small PUT /store/items
// requests (one at a time) while four clients keep putting 9.5 MiB values
// (just under the default body limit), fsync on; large=0 is the same
// without the large clients, the floor the machine gives. It reports the
// small PUTs' p50, p99 and max, and how many large PUTs completed
// meanwhile.
func BenchmarkSmallStorePutUnderLargePuts(b *testing.B) {
	for _, writers := range []int{0, 4} {
		b.Run(fmt.Sprintf("large=%d", writers), func(b *testing.B) { benchSmallPuts(b, writers) })
	}
}

func benchSmallPuts(b *testing.B, writers int) {
	s := testutil.StartServer(b, testutil.Options{})
	const large = 9_500 << 10
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var largeDone atomic.Int64
	for i := range writers {
		body := largeStoreBody(b, fmt.Sprintf("large-%d", i), large)
		if len(body) > 10<<20 {
			b.Fatalf("large body is %d bytes, over the limit", len(body))
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				status := rawPut(ctx, s, body)
				if ctx.Err() != nil {
					return
				}
				if status != http.StatusNoContent {
					b.Errorf("large PUT: status %d", status)
					return
				}
				largeDone.Add(1)
			}
		})
	}
	if writers > 0 {
		// The large writers are under way before the first small PUT.
		testutil.Eventually(b, time.Minute, "a large PUT to complete", func() bool { return largeDone.Load() > 0 })
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body := fmt.Appendf(nil, `{"namespace":["bench","small"],"key":"k%d","value":{"n":%d}}`, i, i)
		began := time.Now()
		if status := rawPut(context.Background(), s, body); status != http.StatusNoContent {
			b.Fatalf("small PUT: status %d", status)
		}
		lat = append(lat, time.Since(began))
	}
	b.StopTimer()
	stop()
	wg.Wait()
	stats.ReportLatencies(b, lat)
	b.ReportMetric(float64(largeDone.Load()), "large-puts")
}

// rawPut sends body to PUT /store/items and returns the status (0 when the
// request failed).
func rawPut(ctx context.Context, s *testutil.Server, body []byte) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.URL()+"/store/items", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
