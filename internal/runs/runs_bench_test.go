package runs_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"agentserver/internal/testutil"
	"agentserver/internal/testutil/pgtest"
	"agentserver/internal/testutil/stats"
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
	reportPercentiles(b, lat, "")
}

// reportPercentiles reports the p50 and p99 of lat in milliseconds, as
// <prefix>p50-ms and <prefix>p99-ms.
func reportPercentiles(b *testing.B, lat []time.Duration, prefix string) {
	slices.Sort(lat)
	b.ReportMetric(stats.Millis(stats.Quantile(lat, 0.50)), prefix+"p50-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(lat, 0.99)), prefix+"p99-ms")
}

// BenchmarkCrossReplicaCancel measures a cancel sent to replica B of a
// run blocked in a node on replica A (two replicas on one PostgreSQL
// schema): reach is the time until the node on A sees its context end
// (what stops an in-flight model call), ended the time until B's
// cancel?wait=1 returns (the run's end committed on A and announced).
func BenchmarkCrossReplicaCancel(b *testing.B) {
	if !pgtest.Enabled() {
		b.Skip("replicas share a PostgreSQL database: " + pgtest.EnvURL + " is not set")
	}
	first := b.TempDir()
	a := testutil.StartServer(b, testutil.Options{Graphs: testutil.TestGraphs, DataDir: first})
	r := testutil.StartServer(b, testutil.Options{Graphs: testutil.TestGraphs, DataDir: b.TempDir(), ReplicaOf: first})
	tid := a.Must(200, "POST", "/threads", nil).Object(b)["thread_id"].(string)
	reach := make([]time.Duration, 0, b.N)
	ended := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		gate := fmt.Sprintf("cross-cancel-%s-%d", tid, i)
		rid := a.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}).Object(b)["run_id"].(string)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := testutil.AwaitWaiters(wctx, gate, 1); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		done := make(chan time.Duration, 1)
		go func() {
			if err := testutil.AwaitWaitersBelow(wctx, gate, 1); err != nil {
				b.Error(err)
			}
			done <- time.Since(began)
		}()
		r.Must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
		ended = append(ended, time.Since(began))
		reach = append(reach, <-done)
		cancel()
	}
	b.StopTimer()
	reportPercentiles(b, reach, "reach-")
	reportPercentiles(b, ended, "ended-")
}
