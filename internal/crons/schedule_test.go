package crons

import (
	"errors"
	"testing"
	"time"

	"agentserver/internal/errdefs"
)

func mustParse(t *testing.T, expr, tz string, seconds bool) Schedule {
	t.Helper()
	s, err := ParseSchedule(expr, tz, seconds)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// nexts returns the n firings after t.
func nexts(s Schedule, t time.Time, n int) []time.Time {
	var out []time.Time
	for range n {
		next, ok := s.Next(t)
		if !ok {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// A schedule is read in its time zone: 09:00 in Tokyo is 00:00 UTC.
func TestScheduleTimezone(t *testing.T) {
	s := mustParse(t, "0 9 * * *", "Asia/Tokyo", false)
	got, _ := s.Next(time.Date(2026, 6, 1, 1, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("next = %v, want %v", got, want)
	}
	if got.Location() != time.UTC {
		t.Fatalf("next is in %v, want UTC", got.Location())
	}
}

// Across a DST change a wall-clock schedule keeps its local hour: 09:00 in
// New York is 13:00 UTC in summer and 14:00 UTC in winter.
func TestScheduleFollowsDST(t *testing.T) {
	s := mustParse(t, "0 9 * * *", "America/New_York", false)
	got := nexts(s, time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC), 2)
	want := []time.Time{time.Date(2026, 10, 31, 13, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 14, 0, 0, 0, time.UTC)}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("firings = %v, want %v", got, want)
		}
	}
}

// A time skipped by spring-forward (02:30 on 8 March 2026 in New York)
// does not fire that day; a time repeated by fall-back (01:30 on 1
// November) fires once.
func TestScheduleDSTGapAndOverlap(t *testing.T) {
	s := mustParse(t, "30 2 * * *", "America/New_York", false)
	got := nexts(s, time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC), 2)
	loc, _ := time.LoadLocation("America/New_York")
	for _, g := range got {
		if l := g.In(loc); l.Day() == 8 && l.Hour() != 3 {
			t.Fatalf("fired at %v on the day 02:30 does not exist", l)
		}
	}
	if d := got[0].In(loc).Day(); d != 8 && d != 9 {
		t.Fatalf("first firing %v, want 8 or 9 March", got[0].In(loc))
	}
	s = mustParse(t, "30 1 * * *", "America/New_York", false)
	got = nexts(s, time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC), 2) // 00:00 EDT
	if !got[0].Equal(time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)) {
		t.Fatalf("first firing %v, want 01:30 EDT (05:30 UTC)", got[0])
	}
	if !got[1].Equal(time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC)) {
		t.Fatalf("second firing %v, want the next day (01:30 EST repeated must not fire)", got[1])
	}
}

// Bad expressions and unknown zones are invalid requests; a seconds field
// is accepted only when enabled.
func TestParseScheduleErrors(t *testing.T) {
	for _, c := range []struct{ expr, tz string }{
		{"* * * *", ""}, {"61 * * * *", ""}, {"* * * * *", "Mars/Olympus"}, {"* * * * *", "Local"},
		{"CRON_TZ=UTC * * * * *", ""}, {"*/10 * * * * *", ""},
	} {
		if _, err := ParseSchedule(c.expr, c.tz, false); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("ParseSchedule(%q, %q) = %v, want ErrInvalid", c.expr, c.tz, err)
		}
	}
	s := mustParse(t, "*/10 * * * * *", "", true)
	got, _ := s.Next(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC))
	if want := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("seconds schedule next = %v, want %v", got, want)
	}
	five := mustParse(t, "5 * * * *", "", true)
	got, _ = five.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("five fields with seconds enabled: next = %v, want %v (minute first)", got, want)
	}
}

// TestEveryIntervals checks the rules of @every schedules: under a minute
// only with seconds, zero, negative and sub-second never; a stored cron is
// read whatever the rules say now.
func TestEveryIntervals(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		expr          string
		plain, second bool // accepted without and with seconds
		every         time.Duration
	}{
		{"@every 1s", false, true, time.Second},
		{"@every 59s", false, true, 59 * time.Second},
		{"@every 1m", true, true, time.Minute},
		{"@every 90s", true, true, 90 * time.Second},
		{"@every 0s", false, false, 0},
		{"@every -1s", false, false, 0},
		{"@every 1ms", false, false, 0},
		{"@every 1500ms", false, false, 0},
	} {
		for _, seconds := range []bool{false, true} {
			want := c.plain
			if seconds {
				want = c.second
			}
			s, err := ParseSchedule(c.expr, "", seconds)
			if want != (err == nil) || err != nil && !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("ParseSchedule(%q, seconds=%v) = %v, accepted want %v", c.expr, seconds, err, want)
				continue
			}
			if err != nil {
				continue
			}
			if got, _ := s.Next(at); !got.Equal(at.Add(c.every)) {
				t.Errorf("%q: next after %v = %v, want %v later", c.expr, at, got, c.every)
			}
		}
		if _, err := parseStored(c.expr, ""); err != nil {
			t.Errorf("a stored %q does not read: %v", c.expr, err)
		}
	}
}

// A schedule that never matches has no next firing.
func TestScheduleNever(t *testing.T) {
	s := mustParse(t, "0 0 30 2 *", "", false)
	if _, ok := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); ok {
		t.Fatal("30 February fired")
	}
}

// An every-minute schedule does not run the repeated hour a second time.
func TestScheduleEveryMinuteAcrossFallBack(t *testing.T) {
	s := mustParse(t, "* * * * *", "America/New_York", false)
	last := time.Date(2026, 11, 1, 5, 59, 0, 0, time.UTC) // 01:59 EDT
	got, _ := s.Next(last)
	if want := time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC); !got.Equal(want) { // 02:00 EST
		t.Fatalf("next after 01:59 EDT = %v, want %v", got, want)
	}
}
