package main

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"agentserver/internal/storage"
	"agentserver/internal/testutil/pgtest"
)

// BenchmarkReplicaTakeover measures how long the runs of a replica killed
// with SIGKILL wait before they run again elsewhere: each round (b.N)
// starts a fresh replica beside two survivors, creates runs of a slow agent
// on it, kills it once they all execute there, and times, per run, the
// moment its record is running again on its second attempt (polled every
// 20 ms). Reported: p50 and max over all rounds' runs, in milliseconds.
// Rounds last about a lease each, so run it with -benchtime=Nx.
func BenchmarkReplicaTakeover(b *testing.B) {
	if !pgtest.Enabled() {
		b.Skip("replicas need PostgreSQL: set " + pgtest.EnvURL)
	}
	bin := buildServer(b)
	for _, lease := range []string{"3s", "15s"} {
		b.Run("lease="+lease, func(b *testing.B) { benchTakeover(b, bin, lease) })
	}
}

// benchTakeover runs the rounds of BenchmarkReplicaTakeover with one lease.
func benchTakeover(b *testing.B, bin, lease string) {
	const perRound = 6
	// The model answers slower than a takeover's polling resolution, so a
	// retried run is seen running before it ends.
	c := newReplicaCluster(b, bin, lease, 2*time.Second)
	c.start(b)
	c.start(b)
	client := &http.Client{Timeout: 10 * time.Second}
	var waits []time.Duration
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		b.StopTimer()
		victim := c.start(b)
		runs := make([]clusterRun, perRound)
		for i := range runs {
			runs[i] = createRun(b, client, victim, fmt.Sprintf("r%d-%d", round, i), "")
		}
		pollRuns(b, c, runs, 30*time.Second, "executing on the victim", func(rec storage.Run) bool {
			return rec.Status == storage.RunRunning && rec.Owner == victim.id && rec.Attempt == 1
		})
		b.StartTimer()
		victim.kill9(b)
		killed := time.Now()
		left := map[string]bool{}
		for _, r := range runs {
			left[r.run] = true
		}
		for len(left) > 0 {
			for _, r := range runs {
				if !left[r.run] {
					continue
				}
				rec := c.record(b, r.run)
				if rec.Attempt >= 2 && rec.Status != storage.RunPending {
					waits = append(waits, time.Since(killed))
					delete(left, r.run)
				}
			}
			if time.Since(killed) > 2*time.Minute {
				b.Fatalf("%d runs not taken over 2 minutes after the kill", len(left))
			}
			time.Sleep(20 * time.Millisecond) // the measurement's resolution
		}
		b.StopTimer()
		// The next round starts on idle survivors.
		pollRuns(b, c, runs, 60*time.Second, "ended success", func(rec storage.Run) bool {
			return rec.Status == storage.RunSuccess
		})
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(waits[len(waits)-1].Milliseconds()), "max-ms")
	b.ReportMetric(float64(waits[0].Milliseconds()), "min-ms")
}

// pollRuns waits until every run's record satisfies ok, or fails after
// timeout naming what was awaited.
func pollRuns(b *testing.B, c *replicaCluster, runs []clusterRun, timeout time.Duration, what string, ok func(storage.Run) bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for _, r := range runs {
		for rec := c.record(b, r.run); !ok(rec); rec = c.record(b, r.run) {
			if time.Now().After(deadline) {
				b.Fatalf("run %s not %s after %v: status %s, attempt %d, owner %q", r.run, what, timeout, rec.Status, rec.Attempt, rec.Owner)
			}
			time.Sleep(20 * time.Millisecond) // polling child processes with a deadline
		}
	}
}
