package crons_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/storage"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/fakeclock"
	"agentserver/internal/testutil/stats"
)

// BenchmarkFire10000SameMinute creates 10,000 stateless crons due at the
// same minute (through the HTTP API, on the fake cron clock), moves the
// clock to that minute and fires them the way the scheduler does when it
// wakes. It reports the time from the due instant to the last run stored
// and fails unless every cron made exactly one run (counted by
// metadata.cron_id). The target is 10 s. Run it with -benchtime=1x.
func BenchmarkFire10000SameMinute(b *testing.B) {
	const crons = 10_000
	for range b.N {
		clock := fakeclock.New(start)
		s := startServer(b, clock, testutil.Options{MaxCrons: crons})
		ids := createCrons(b, s, crons, map[string]any{
			"assistant_id": "echo", "schedule": "0 11 * * *", "on_run_completed": "keep",
			"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "tick"}}},
		})
		clock.Advance(59*time.Minute + 30*time.Second) // 11:00:00, the due instant
		began, cpuBefore := time.Now(), stats.ProcessCPU()
		// The server's scheduler may wake and take some firings itself. A
		// firing is claimed in its run's transaction, so once no cron is
		// due every run is stored, whoever made it.
		for fire(b, s) > 0 {
		}
		testutil.Eventually(b, time.Minute, "no cron due", func() bool { return !anyDue(b, s, clock.Now()) })
		took, cpu := time.Since(began), stats.ProcessCPU()-cpuBefore
		checkOneRunEach(b, s, ids)
		b.ReportMetric(took.Seconds(), "s-due-to-last-run")
		b.ReportMetric(float64(crons)/took.Seconds(), "firings/s")
		b.ReportMetric(cpu.Seconds(), "cpu-s")
	}
}

// createCrons makes n stateless crons from body, 32 requests at a time,
// and returns their ids.
func createCrons(b *testing.B, s *testutil.Server, n int, body map[string]any) map[string]bool {
	b.Helper()
	var mu sync.Mutex
	ids := make(map[string]bool, n)
	var failed []string
	var wg sync.WaitGroup
	next := make(chan int)
	for range 32 {
		wg.Go(func() {
			for range next {
				// Must would stop the benchmark from this goroutine.
				r := s.Do("POST", "/runs/crons", body)
				id, _ := r.JSON.(map[string]any)["cron_id"].(string)
				mu.Lock()
				if r.Status != 200 || id == "" {
					failed = append(failed, fmt.Sprintf("%d %s", r.Status, r.Raw))
				}
				ids[id] = true
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(failed) > 0 {
		b.Fatalf("%d crons not created, first: %s", len(failed), failed[0])
	}
	return ids
}

func anyDue(b *testing.B, s *testutil.Server, now time.Time) bool {
	var due []uuid.UUID
	if err := s.DB().View(context.Background(), func(tx *storage.Tx) error {
		due = tx.DueCrons(now, 1)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return len(due) > 0
}

// checkOneRunEach fails unless each cron of ids made exactly one run and
// no other run exists.
func checkOneRunEach(b *testing.B, s *testutil.Server, ids map[string]bool) {
	b.Helper()
	var all []storage.Run
	if err := s.DB().View(context.Background(), func(tx *storage.Tx) error {
		var err error
		all, _, err = tx.SearchRuns(storage.RunQuery{}, nil)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	per := map[string]int{}
	for _, r := range all {
		per[fmt.Sprint(r.Metadata["cron_id"])]++
	}
	for id := range ids {
		if per[id] != 1 {
			b.Fatalf("cron %s made %d runs, want 1", id, per[id])
		}
	}
	if len(all) != len(ids) {
		b.Fatalf("%d runs for %d crons", len(all), len(ids))
	}
}
