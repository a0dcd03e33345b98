package httpapi_test

import (
	"io"
	"net/http"
	"sort"
	"testing"
	"time"

	"agentserver/internal/testutil"
)

// BenchmarkAuthOverhead reads one thread over loopback HTTP with no auth
// ("off") and as an owner-scoped JWT user whose token verification is
// cached ("jwt"); the difference of their p50-ns is what authentication and
// the ownership check add to a request.
func BenchmarkAuthOverhead(b *testing.B) {
	for _, mode := range []string{"off", "jwt"} {
		b.Run(mode, func(b *testing.B) {
			opts := testutil.Options{Graphs: testutil.TestGraphs, NoSync: true}
			header := http.Header{}
			if mode == "jwt" {
				j := testutil.NewJWKS(b)
				opts.Graphs = testutil.WithSection(b, testutil.TestGraphs, "auth", j.AuthSection(map[string]any{"owner_scoped": true}))
				header = testutil.Bearer(j.Token(b, "alice", nil, nil))
			}
			s := testutil.StartServer(b, opts).As(header)
			id := s.Must(200, "POST", "/threads", map[string]any{}).Object(b)["thread_id"].(string)
			req, err := http.NewRequest("GET", s.URL()+"/threads/"+id, nil)
			if err != nil {
				b.Fatal(err)
			}
			req.Header = header
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				resp, err := s.Client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
		})
	}
}
