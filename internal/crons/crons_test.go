package crons_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"agentserver/internal/storage"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/fakeclock"
	"agentserver/internal/testutil/pgtest"
)

// start is a fixed wall time the fake clock begins at: 10:00:30 UTC.
var start = time.Date(2026, 6, 1, 10, 0, 30, 0, time.UTC)

func startServer(t testing.TB, clock *fakeclock.Clock, opts testutil.Options) *testutil.Server {
	t.Helper()
	opts.CronClock = clock.Now
	return testutil.StartServer(t, opts)
}

func fire(t testing.TB, s *testutil.Server) int {
	t.Helper()
	n, err := s.Crons.FireDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	str, ok := v.(string)
	if !ok {
		t.Fatalf("not a date-time: %v", v)
	}
	at, err := time.Parse(time.RFC3339Nano, str)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func checkIndexes(t *testing.T, s *testutil.Server) {
	t.Helper()
	// The database is reached through a fresh read: a cron's indexes must
	// hold exactly its records.
	if err := s.DB().View(context.Background(), func(tx *storage.Tx) error { return tx.CheckCronIndexes() }); err != nil {
		t.Fatal(err)
	}
}

// A thread cron fires at its schedule's dates, on its thread, and each
// run carries metadata.cron_id; nothing fires before the date.
func TestThreadCronFiresOnSchedule(t *testing.T) {
	clock := fakeclock.New(start)
	s := startServer(t, clock, testutil.Options{})
	tid := testutil.NewThread(t, s)
	c := s.Must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{
		"assistant_id": "echo", "schedule": "*/5 * * * *", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "tick"}}},
		"metadata": map[string]any{"team": "a"},
	}).Object(t)
	cid := c["cron_id"].(string)
	if got := parseTime(t, c["next_run_date"]); !got.Equal(time.Date(2026, 6, 1, 10, 5, 0, 0, time.UTC)) {
		t.Fatalf("next_run_date = %v, want 10:05", got)
	}
	if c["thread_id"] != tid || c["enabled"] != true || c["schedule"] != "*/5 * * * *" {
		t.Fatalf("cron = %v", c)
	}
	if p := c["payload"].(map[string]any); p["input"] == nil || p["schedule"] != nil {
		t.Fatalf("payload = %v", p)
	}
	clock.Advance(4 * time.Minute)
	if n := fire(t, s); n != 0 {
		t.Fatalf("fired %d runs before the date", n)
	}
	clock.Advance(30 * time.Second) // 10:05:00
	// The server's own scheduler, woken by the cron's creation, may fire
	// the date first: the runs are counted below.
	fire(t, s)
	if n := fire(t, s); n != 0 {
		t.Fatalf("the same firing ran again: %d", n)
	}
	rs := testutil.ThreadRuns(t, s, tid)
	if len(rs) != 1 {
		t.Fatalf("thread has %d runs, want 1", len(rs))
	}
	run := rs[0].(map[string]any)
	if md := run["metadata"].(map[string]any); md["cron_id"] != cid || md["team"] != "a" {
		t.Fatalf("run metadata = %v", md)
	}
	got := s.Must(200, "GET", "/runs/crons/"+cid, nil).Object(t)
	if next := parseTime(t, got["next_run_date"]); !next.Equal(time.Date(2026, 6, 1, 10, 10, 0, 0, time.UTC)) {
		t.Fatalf("next_run_date after firing = %v, want 10:10", next)
	}
	checkIndexes(t, s)
}

// Firings missed while nothing ran (the server was down) collapse into one
// run, and the next date is the first one after now.
func TestCronMissedFiringsRunOnce(t *testing.T) {
	clock := fakeclock.New(start)
	s := startServer(t, clock, testutil.Options{})
	tid := testutil.NewThread(t, s)
	cid := s.Must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *"}).Object(t)["cron_id"].(string)
	clock.Advance(3*time.Hour + 10*time.Second) // 13:00:40, 180 slots missed
	fire(t, s)                                  // or the server's own scheduler: the runs are counted below
	if rs := testutil.ThreadRuns(t, s, tid); len(rs) != 1 {
		t.Fatalf("thread has %d runs, want 1", len(rs))
	}
	next := parseTime(t, s.Must(200, "GET", "/runs/crons/"+cid, nil).Object(t)["next_run_date"])
	if !next.Equal(time.Date(2026, 6, 1, 13, 1, 0, 0, time.UTC)) {
		t.Fatalf("next_run_date = %v, want 13:01", next)
	}
}

// Schedulers racing for the same firings make one run each: four callers
// of FireDue and the server's own scheduler, which the clock also wakes.
func TestCronFiringIsClaimedOnce(t *testing.T) {
	clock := fakeclock.New(start)
	s := startServer(t, clock, testutil.Options{})
	tid := testutil.NewThread(t, s)
	for range 5 {
		s.Must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *"})
	}
	clock.Advance(time.Minute)
	var wg sync.WaitGroup
	counts := make([]int, 4)
	for i := range counts {
		wg.Go(func() {
			n, err := s.Crons.FireDue(context.Background())
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		})
	}
	wg.Wait()
	total := 0
	for _, n := range counts {
		total += n
	}
	if total > 5 {
		t.Fatalf("racing schedulers fired %d runs (%v), want at most 5", total, counts)
	}
	testutil.Eventually(t, 10*time.Second, "one run per cron", func() bool { return len(testutil.ThreadRuns(t, s, tid)) >= 5 })
	if n, err := s.Crons.FireDue(context.Background()); err != nil || n != 0 {
		t.Fatalf("a late scheduler fired %d (%v), want nothing due", n, err)
	}
	if rs := testutil.ThreadRuns(t, s, tid); len(rs) != 5 {
		t.Fatalf("thread has %d runs, want 5", len(rs))
	}
}

// A cron stops at its end_time: it fires up to it, then has no next date.
func TestCronEndTime(t *testing.T) {
	clock := fakeclock.New(start)
	s := startServer(t, clock, testutil.Options{})
	tid := testutil.NewThread(t, s)
	end := time.Date(2026, 6, 1, 10, 12, 0, 0, time.UTC)
	cid := s.Must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "*/5 * * * *", "end_time": end.Format(time.RFC3339)}).Object(t)["cron_id"].(string)
	for range 4 {
		clock.Advance(5 * time.Minute)
		fire(t, s) // the server's own scheduler may fire a date first
	}
	if n := fire(t, s); n != 0 {
		t.Fatalf("%d firings still due after end_time", n)
	}
	if rs := testutil.ThreadRuns(t, s, tid); len(rs) != 2 {
		t.Fatalf("fired %d runs before end_time 10:12, want 2 (10:05, 10:10)", len(rs))
	}
	c := s.Must(200, "GET", "/runs/crons/"+cid, nil).Object(t)
	if c["next_run_date"] != nil {
		t.Fatalf("next_run_date past end_time = %v, want null", c["next_run_date"])
	}
	checkIndexes(t, s)
}

// A firing whose run cannot be made (its assistant was deleted) is
// skipped: no run, and the cron moves on to its next date.
func TestCronFiringWithoutAssistantIsSkipped(t *testing.T) {
	clock := fakeclock.New(start)
	s := startServer(t, clock, testutil.Options{})
	tid := testutil.NewThread(t, s)
	aid := s.Must(200, "POST", "/assistants", map[string]any{"graph_id": "echo"}).Object(t)["assistant_id"].(string)
	cid := s.Must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": aid, "schedule": "* * * * *"}).Object(t)["cron_id"].(string)
	s.Must(200, "DELETE", "/assistants/"+aid, nil)
	clock.Advance(time.Minute)
	if n := fire(t, s); n != 0 {
		t.Fatalf("fired %d runs without an assistant", n)
	}
	if rs := testutil.ThreadRuns(t, s, tid); len(rs) != 0 {
		t.Fatalf("thread has %d runs", len(rs))
	}
	next := parseTime(t, s.Must(200, "GET", "/runs/crons/"+cid, nil).Object(t)["next_run_date"])
	if !next.After(clock.Now()) {
		t.Fatalf("next_run_date %v did not move past now %v", next, clock.Now())
	}
}

// Replicas sharing one PostgreSQL database fire each cron date exactly
// once, however their schedulers race: the firing is claimed in the
// transaction that creates its run.
func TestCronFiresOnceAcrossReplicas(t *testing.T) {
	if !pgtest.Enabled() {
		t.Skip("replicas share a PostgreSQL database: " + pgtest.EnvURL + " is not set")
	}
	clock := fakeclock.New(start)
	first := t.TempDir()
	var replicas []*testutil.Server
	for i := range 3 {
		opts := testutil.Options{DataDir: t.TempDir()}
		if i == 0 {
			opts.DataDir = first
		} else {
			opts.ReplicaOf = first
		}
		replicas = append(replicas, startServer(t, clock, opts))
	}
	tid := testutil.NewThread(t, replicas[0])
	for i := range 6 {
		replicas[i%3].Must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *"})
	}
	for minute := 1; minute <= 2; minute++ {
		clock.Advance(time.Minute)
		var wg sync.WaitGroup
		for _, s := range replicas {
			for range 2 {
				wg.Go(func() {
					if _, err := s.Crons.FireDue(context.Background()); err != nil {
						t.Error(err)
					}
				})
			}
		}
		wg.Wait()
		want := 6 * minute
		all := func(s *testutil.Server) []any {
			return s.Must(200, "GET", "/threads/"+tid+"/runs?limit=100", nil).List(t)
		}
		testutil.Eventually(t, 20*time.Second, "one run per cron and date", func() bool { return len(all(replicas[1])) >= want })
		for _, s := range replicas {
			if n, err := s.Crons.FireDue(context.Background()); err != nil || n != 0 {
				t.Fatalf("a late scheduler fired %d (%v), want nothing due", n, err)
			}
		}
		if rs := all(replicas[2]); len(rs) != want {
			t.Fatalf("after minute %d the thread has %d runs, want %d", minute, len(rs), want)
		}
	}
}
