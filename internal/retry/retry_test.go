package retry_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"agentserver/internal/retry"
)

const ms = time.Millisecond

// TestDelayWithoutJitter: the delay grows by Factor from Base, stops at
// Max, never overflows, and a server's hint replaces it, capped at
// MaxAfter.
func TestDelayWithoutJitter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       retry.Policy
		attempt int
		after   time.Duration
		want    time.Duration
	}{
		{"first retry is Base", retry.Policy{Base: 100 * ms, Max: 5 * time.Second}, 0, 0, 100 * ms},
		{"doubles by default", retry.Policy{Base: 100 * ms, Max: 5 * time.Second}, 3, 0, 800 * ms},
		{"capped at Max", retry.Policy{Base: 100 * ms, Max: 5 * time.Second}, 6, 0, 5 * time.Second},
		{"a huge attempt stays at Max", retry.Policy{Base: 100 * ms, Max: 5 * time.Second}, 1 << 30, 0, 5 * time.Second},
		{"Factor 4", retry.Policy{Base: 200 * ms, Factor: 4}, 1, 0, 800 * ms},
		{"a Factor below 2 is 2", retry.Policy{Base: 200 * ms, Factor: 1}, 2, 0, 800 * ms},
		{"no Max saturates instead of overflowing", retry.Policy{Base: time.Second}, 200, 0, math.MaxInt64},
		{"zero Policy retries at once", retry.Policy{}, 5, 0, 0},
		{"a hint replaces the backoff", retry.Policy{Base: 100 * ms, MaxAfter: time.Minute}, 4, 2 * time.Second, 2 * time.Second},
		{"a hint is capped at MaxAfter", retry.Policy{Base: 100 * ms, MaxAfter: 30 * time.Second}, 0, time.Hour, 30 * time.Second},
		{"no MaxAfter takes the hint as is", retry.Policy{Base: 100 * ms}, 0, time.Hour, time.Hour},
		{"a hint may be longer than Max", retry.Policy{Base: 100 * ms, Max: time.Second}, 0, 3 * time.Second, 3 * time.Second},
		{"a negative hint is no hint", retry.Policy{Base: 100 * ms}, 1, -time.Second, 200 * ms},
	} {
		if got := tc.p.Delay(tc.attempt, tc.after); got != tc.want {
			t.Errorf("%s: Delay(%d, %v) = %v, want %v", tc.name, tc.attempt, tc.after, got, tc.want)
		}
	}
}

// TestDelayJitter: with jitter, each delay lies in [d·(1−Jitter), d], and
// the draws differ; a hint is never jittered.
func TestDelayJitter(t *testing.T) {
	for _, tc := range []struct {
		jitter   float64
		attempt  int
		min, max time.Duration
	}{
		{0.25, 0, 75 * ms, 100 * ms},
		{0.25, 2, 300 * ms, 400 * ms},
		{0.5, 1, 100 * ms, 200 * ms},
		{0.5, 10, 2500 * ms, 5 * time.Second},
		{1, 0, 0, 100 * ms},
		{7, 0, 0, 100 * ms}, // more than 1 is 1
	} {
		p := retry.Policy{Base: 100 * ms, Max: 5 * time.Second, Jitter: tc.jitter}
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.Delay(tc.attempt, 0)
			if d < tc.min || d > tc.max {
				t.Fatalf("jitter %v attempt %d: %v outside [%v, %v]", tc.jitter, tc.attempt, d, tc.min, tc.max)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("jitter %v attempt %d: only %d distinct delays in 200 draws", tc.jitter, tc.attempt, len(seen))
		}
		if d := p.Delay(tc.attempt, 3*time.Second); d != 3*time.Second {
			t.Errorf("jitter %v: hint 3s gave %v", tc.jitter, d)
		}
	}
}

// TestAfter reads both forms of Retry-After and refuses what is not a
// future delay.
func TestAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{" 3 ", 3 * time.Second},
		{"0.25", 250 * ms},
		{"0", 0},
		{"-3", 0},
		{"NaN", 0},
		{"Inf", 0},
		{"1e300", 1e6 * time.Second},
		{"soon", 0},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(90 * time.Minute).Format(time.RFC850), 90 * time.Minute},
		{now.Format(http.TimeFormat), 0},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := retry.After(tc.value, now); got != tc.want {
			t.Errorf("After(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

// TestWait waits the whole delay, or returns the cause as soon as the
// context ends.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := retry.Wait(context.Background(), 3*time.Second); err != nil || time.Since(start) != 3*time.Second {
			t.Fatalf("Wait(3s) = %v after %v", err, time.Since(start))
		}
		cause := errors.New("run cancelled")
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(time.Second, func() { cancel(cause) })
		start = time.Now()
		if err := retry.Wait(ctx, time.Hour); !errors.Is(err, cause) || time.Since(start) != time.Second {
			t.Fatalf("Wait(1h) cancelled after 1s = %v after %v", err, time.Since(start))
		}
	})
}
