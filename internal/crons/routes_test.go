package crons_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentserver/internal/testutil"
	"agentserver/internal/testutil/fakeclock"
)

const cronGraphs = `{"graphs": {"echo": "builtin:echo", "other": "builtin:echo", "gated": "builtin:test-gated"}}`

func startCronServer(t *testing.T, clock *fakeclock.Clock, opts testutil.Options) *testutil.Server {
	t.Helper()
	opts.CronClock = clock.Now
	if opts.Graphs == "" {
		opts.Graphs = cronGraphs
	}
	return testutil.StartServer(t, opts)
}

// fireCrons fires the due crons as the scheduler does, then checks that
// the crons have made want runs in all. The server's own scheduler, woken
// when the crons were created, may take some of the firings itself, so the
// runs are counted rather than FireDue's result; a firing is claimed in
// its run's transaction, so once FireDue returns every due run is stored.
func fireCrons(t *testing.T, s *testutil.Server, want int) {
	t.Helper()
	if _, err := s.Crons.FireDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	made := 0
	for _, r := range s.Must(200, "POST", "/runs/search", map[string]any{"limit": 1000}).List(t) {
		if md, _ := r.(map[string]any)["metadata"].(map[string]any); md["cron_id"] != nil {
			made++
		}
	}
	if made != want {
		t.Fatalf("crons made %d runs, want %d", made, want)
	}
}

// The cron routes are not taken for /runs/{run_id}: POST /runs/crons used
// to answer 405.
func TestCronRoutesAreNotRunRoutes(t *testing.T) {
	s := startCronServer(t, fakeclock.New(time.Now()), testutil.Options{})
	c := s.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 * * * *"}).Object(t)
	for _, k := range []string{"cron_id", "assistant_id", "thread_id", "schedule", "payload", "next_run_date", "created_at", "updated_at", "metadata", "enabled", "end_time", "user_id", "timezone"} {
		if _, ok := c[k]; !ok {
			t.Errorf("cron has no %q: %v", k, c)
		}
	}
	if c["thread_id"] != nil || c["on_run_completed"] != "delete" {
		t.Fatalf("stateless cron = %v", c)
	}
	s.Must(200, "POST", "/runs/crons/search", map[string]any{})
	s.Must(200, "POST", "/runs/crons/count", map[string]any{})
	s.Must(200, "GET", "/runs/crons/"+c["cron_id"].(string), nil)
	if flags := s.Must(200, "GET", "/info", nil).Object(t)["flags"].(map[string]any); flags["crons"] != true {
		t.Fatalf("/info flags = %v", flags)
	}
}

// Bad crons are refused with 422 (or 404 for an unknown assistant or
// thread) and nothing is stored.
func TestCronCreateRejectsBadInput(t *testing.T) {
	s := startCronServer(t, fakeclock.New(time.Now()), testutil.Options{})
	tid := testutil.NewThread(t, s)
	for _, c := range []struct {
		path   string
		body   map[string]any
		status int
	}{
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "not a cron"}, 422},
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "*/5 * * * * *"}, 422}, // seconds are off
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "timezone": "Europe/Atlantis"}, 422},
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "on_run_completed": "archive"}, 422},
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "webhook": "ftp://x"}, 422},
		{"/runs/crons", map[string]any{"assistant_id": "echo"}, 422},
		{"/runs/crons", map[string]any{"schedule": "* * * * *"}, 422},
		{"/runs/crons", map[string]any{"assistant_id": "nope", "schedule": "* * * * *"}, 404},
		{"/threads/00000000-0000-0000-0000-000000000001/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *"}, 404},
		{"/threads/" + tid + "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "multitask_strategy": "sometimes"}, 422},
	} {
		r := s.Do("POST", c.path, c.body)
		if r.Status != c.status {
			t.Errorf("POST %s %v = %d %s, want %d", c.path, c.body, r.Status, r.Raw, c.status)
		}
	}
	if n := s.Must(200, "POST", "/runs/crons/count", nil).JSON; n != float64(0) {
		t.Fatalf("count after refused creations = %v", n)
	}
}

// TestCronIntervalRules creates and changes @every crons: intervals under
// a minute are refused without --cron-seconds (as six-field schedules
// are), zero, negative and sub-second intervals always; nothing refused is
// stored. Before, every one of them was accepted and ran each second.
func TestCronIntervalRules(t *testing.T) {
	bad := []string{"@every 0s", "@every -1s", "@every 1ms", "@every 1500ms"}
	for _, seconds := range []bool{false, true} {
		t.Run(fmt.Sprintf("seconds=%v", seconds), func(t *testing.T) {
			s := startCronServer(t, fakeclock.New(time.Now()), testutil.Options{CronSeconds: seconds})
			refused := bad
			if !seconds {
				refused = append([]string{"@every 1s", "@every 59s"}, bad...)
			}
			for _, schedule := range refused {
				r := s.Do("POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": schedule})
				testutil.WantError(t, r, http.StatusUnprocessableEntity, "invalid_request")
				if !strings.Contains(r.Object(t)["detail"].(string), "interval") {
					t.Fatalf("%q: the error does not say why: %s", schedule, r.Raw)
				}
			}
			if n := s.Must(200, "POST", "/runs/crons/count", nil).JSON; n != float64(0) {
				t.Fatalf("count after refused creations = %v", n)
			}
			ok := []string{"@every 1m", "@every 90s", "@every 1h30m"}
			if seconds {
				ok = append(ok, "@every 1s")
			}
			for _, schedule := range ok {
				s.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": schedule})
			}
			id := s.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "@every 2m"}).Object(t)["cron_id"].(string)
			for _, schedule := range refused {
				s.Must(422, "PATCH", "/runs/crons/"+id, map[string]any{"schedule": schedule})
			}
			if got := s.Must(200, "GET", "/runs/crons/"+id, nil).Object(t)["schedule"]; got != "@every 2m" {
				t.Fatalf("schedule after refused changes = %v", got)
			}
		})
	}
}

// Creating more crons than the configured cap answers 429.
func TestCronCapAnswers429(t *testing.T) {
	s := startCronServer(t, fakeclock.New(time.Now()), testutil.Options{MaxCrons: 2})
	body := map[string]any{"assistant_id": "echo", "schedule": "@daily"}
	s.Must(200, "POST", "/runs/crons", body)
	s.Must(200, "POST", "/runs/crons", body)
	r := s.Do("POST", "/runs/crons", body)
	if r.Status != 429 || r.Object(t)["code"] != "too_many_requests" {
		t.Fatalf("third cron = %d %s, want 429", r.Status, r.Raw)
	}
}

// Search filters by assistant, thread, enabled and metadata, sorts,
// pages and selects; count uses the same filters.
func TestCronSearchAndCount(t *testing.T) {
	// Midnight, so that the schedules at 1, 2 and 3 o'clock come due in
	// that order whatever the time the test runs.
	s := startCronServer(t, fakeclock.New(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)), testutil.Options{})
	tid := testutil.NewThread(t, s)
	a := s.Must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 1 * * *", "metadata": map[string]any{"k": "a"}}).Object(t)
	b := s.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "other", "schedule": "0 2 * * *", "metadata": map[string]any{"k": "b"}, "enabled": false}).Object(t)
	c := s.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 3 * * *", "metadata": map[string]any{"k": "b"}}).Object(t)
	ids := func(body map[string]any) []string {
		var out []string
		for _, it := range s.Must(200, "POST", "/runs/crons/search", body).List(t) {
			out = append(out, it.(map[string]any)["cron_id"].(string))
		}
		return out
	}
	same := func(got []string, want ...map[string]any) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %v, want %d crons", got, len(want))
		}
		for i := range want {
			if got[i] != want[i]["cron_id"] {
				t.Fatalf("item %d = %s, want %s", i, got[i], want[i]["cron_id"])
			}
		}
	}
	same(ids(map[string]any{}), a, b, c)
	same(ids(map[string]any{"sort_order": "desc"}), c, b, a)
	same(ids(map[string]any{"assistant_id": "echo"}), a, c)
	same(ids(map[string]any{"thread_id": tid}), a)
	same(ids(map[string]any{"enabled": false}), b)
	same(ids(map[string]any{"metadata": map[string]any{"k": "b"}}), b, c)
	same(ids(map[string]any{"limit": 1, "offset": 1}), b)
	same(ids(map[string]any{"sort_by": "next_run_date", "enabled": true}), a, c)
	sel := s.Must(200, "POST", "/runs/crons/search", map[string]any{"select": []string{"cron_id", "schedule"}, "limit": 1}).List(t)
	if got := sel[0].(map[string]any); len(got) != 2 || got["schedule"] != "0 1 * * *" {
		t.Fatalf("selected = %v", got)
	}
	s.Must(422, "POST", "/runs/crons/search", map[string]any{"select": []string{"password"}})
	if n := s.Must(200, "POST", "/runs/crons/count", map[string]any{"metadata": map[string]any{"k": "b"}}).JSON; n != float64(2) {
		t.Fatalf("count = %v, want 2", n)
	}
	if n := s.Must(200, "POST", "/runs/crons/count", map[string]any{"assistant_id": "echo", "thread_id": tid}).JSON; n != float64(1) {
		t.Fatalf("count = %v, want 1", n)
	}
}

// PATCH merges metadata, replaces the other fields it names, clears
// end_time with null, and moves next_run_date when the schedule changes;
// DELETE removes the cron (404 after).
func TestCronUpdateAndDelete(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 6, 1, 10, 0, 30, 0, time.UTC))
	s := startCronServer(t, clock, testutil.Options{})
	c := s.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 * * * *", "metadata": map[string]any{"a": 1},
		"end_time": "2026-07-01T00:00:00Z", "input": map[string]any{"x": 1}}).Object(t)
	id := c["cron_id"].(string)
	clock.Advance(time.Minute)
	u := s.Must(200, "PATCH", "/runs/crons/"+id, map[string]any{"schedule": "30 12 * * *", "timezone": "Europe/Paris", "metadata": map[string]any{"b": 2},
		"input": map[string]any{"x": 2}, "end_time": nil}).Object(t)
	if md := u["metadata"].(map[string]any); md["a"] != float64(1) || md["b"] != float64(2) {
		t.Fatalf("metadata = %v, want merged", md)
	}
	if u["end_time"] != nil || u["timezone"] != "Europe/Paris" || u["schedule"] != "30 12 * * *" {
		t.Fatalf("patched cron = %v", u)
	}
	if p := u["payload"].(map[string]any); p["input"].(map[string]any)["x"] != float64(2) {
		t.Fatalf("payload = %v", p)
	}
	if next := u["next_run_date"]; next != "2026-06-01T10:30:00Z" { // 12:30 in Paris (UTC+2)
		t.Fatalf("next_run_date = %v, want 2026-06-01T10:30:00Z", next)
	}
	if u["updated_at"] == c["updated_at"] {
		t.Fatal("updated_at did not move")
	}
	s.Must(422, "PATCH", "/runs/crons/"+id, map[string]any{"timezone": "Nowhere/Land"})
	s.Must(422, "PATCH", "/runs/crons/"+id, map[string]any{"end_time": "tomorrow"})
	if got := s.Must(200, "GET", "/runs/crons/"+id, nil).Object(t); got["timezone"] != "Europe/Paris" {
		t.Fatalf("a refused patch changed the cron: %v", got)
	}
	s.Must(204, "DELETE", "/runs/crons/"+id, nil)
	s.Must(404, "GET", "/runs/crons/"+id, nil)
	s.Must(404, "DELETE", "/runs/crons/"+id, nil)
	s.Must(404, "PATCH", "/runs/crons/"+id, map[string]any{"enabled": false})
}

// A disabled cron does not fire; enabling it schedules it from now.
func TestCronDisabledDoesNotFire(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 6, 1, 10, 0, 30, 0, time.UTC))
	s := startCronServer(t, clock, testutil.Options{})
	tid := testutil.NewThread(t, s)
	id := s.Must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "enabled": false}).Object(t)["cron_id"].(string)
	clock.Advance(5 * time.Minute)
	fireCrons(t, s, 0)
	u := s.Must(200, "PATCH", "/runs/crons/"+id, map[string]any{"enabled": true}).Object(t)
	if u["next_run_date"] != "2026-06-01T10:06:00Z" {
		t.Fatalf("next_run_date = %v", u["next_run_date"])
	}
	clock.Advance(time.Minute)
	fireCrons(t, s, 1)
}

// A stateless cron runs each firing on a new thread: deleted once the run
// ends by default, kept with on_run_completed keep.
func TestStatelessCronThreads(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 6, 1, 10, 0, 30, 0, time.UTC))
	s := startCronServer(t, clock, testutil.Options{})
	gate := fmt.Sprint("cron-stateless-", time.Now().UnixNano()) // a gate of its own on every run of the test
	defer testutil.Release(gate)
	del := s.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "gated", "schedule": "* * * * *", "input": map[string]any{"gate": gate}}).Object(t)["cron_id"].(string)
	keep := s.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "on_run_completed": "keep", "input": testutil.UserInput("hi")}).Object(t)["cron_id"].(string)
	clock.Advance(time.Minute)
	fireCrons(t, s, 2)
	runOf := func(cron string) map[string]any {
		l := s.Must(200, "POST", "/runs/search", map[string]any{"metadata": map[string]any{"cron_id": cron}}).List(t)
		if len(l) != 1 {
			t.Fatalf("cron %s made %d runs, want 1", cron, len(l))
		}
		return l[0].(map[string]any)
	}
	held := runOf(del)
	kept := runOf(keep)
	testutil.Release(gate)
	testutil.Eventually(t, 10*time.Second, "the deleted cron's thread to go", func() bool {
		return s.Do("GET", "/threads/"+held["thread_id"].(string), nil).Status == 404
	})
	testutil.WaitStatus(t, s, kept["thread_id"].(string), kept["run_id"].(string), "success")
	s.Must(200, "GET", "/threads/"+kept["thread_id"].(string), nil)
}

// Deleting a thread deletes its crons.
func TestDeleteThreadDeletesItsCrons(t *testing.T) {
	s := startCronServer(t, fakeclock.New(time.Now()), testutil.Options{})
	tid := testutil.NewThread(t, s)
	id := s.Must(200, "POST", "/threads/"+tid+"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "@hourly"}).Object(t)["cron_id"].(string)
	other := s.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "@hourly"}).Object(t)["cron_id"].(string)
	s.Must(204, "DELETE", "/threads/"+tid, nil)
	s.Must(404, "GET", "/runs/crons/"+id, nil)
	s.Must(200, "GET", "/runs/crons/"+other, nil)
}
