package httpapi_test

import (
	"sort"
	"testing"
	"time"

	"agentserver/internal/testutil"
)

// BenchmarkCancelBlockedRun measures request → run interrupted for a run
// blocked inside a graph node (the gated test graph waits on a channel that
// is never released, standing in for a 30-second model or tool call).
// POST .../cancel?wait=1 returns once the run has ended, so its latency is
// the cancel latency.
func BenchmarkCancelBlockedRun(b *testing.B) {
	s := testutil.StartServer(b, testutil.Options{Graphs: testutil.TestGraphs})
	tid := s.Must(200, "POST", "/threads", nil).Object(b)["thread_id"].(string)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": "blocked-forever"}}).Object(b)["run_id"].(string)
		testutil.Eventually(b, 5*time.Second, "run to start", func() bool {
			return s.Must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).Object(b)["status"] == "running"
		})
		b.StartTimer()
		began := time.Now()
		s.Must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
		lat = append(lat, time.Since(began))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
