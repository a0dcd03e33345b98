package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

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
	bodies := make([][]byte, writers)
	for i := range bodies {
		bodies[i] = largeStoreBody(b, fmt.Sprintf("large-%d", i), large)
		if len(bodies[i]) > 10<<20 {
			b.Fatalf("large body is %d bytes, over the limit", len(bodies[i]))
		}
	}
	stats.UnderLoad(b, writers, "large-puts",
		func(ctx context.Context, w int) error {
			status := rawPut(ctx, s, bodies[w])
			if ctx.Err() == nil && status != http.StatusNoContent {
				return fmt.Errorf("large PUT: status %d", status)
			}
			return nil
		},
		func(i int) error {
			body := fmt.Appendf(nil, `{"namespace":["bench","small"],"key":"k%d","value":{"n":%d}}`, i, i)
			if status := rawPut(context.Background(), s, body); status != http.StatusNoContent {
				return fmt.Errorf("small PUT: status %d", status)
			}
			return nil
		})
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
