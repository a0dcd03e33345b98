package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {"0.25"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"0"}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After-Ms": {"150"}, "Retry-After": {"9"}}, 150 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"junk"}, "Retry-After": {"1"}}, time.Second},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.header, now); got != tt.want {
			t.Errorf("%v: got %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	o := NewOpenAI(Config{BaseURL: "http://127.0.0.1:1/v1", RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second, MaxRetryAfter: 5 * time.Second}, nil)
	for attempt, base := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		base *= time.Millisecond
		if attempt == 4 || attempt == 5 {
			base = time.Second
		}
		for range 50 {
			d := o.backoff(attempt, 0)
			if d > base || d < base*3/4 {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, base*3/4, base)
			}
		}
	}
	if d := o.backoff(100, 0); d > time.Second || d < 750*time.Millisecond {
		t.Fatalf("large attempt: %v", d)
	}
	if d := o.backoff(0, 2*time.Second); d != 2*time.Second {
		t.Fatalf("hint: %v", d)
	}
	if d := o.backoff(0, time.Hour); d != 5*time.Second {
		t.Fatalf("capped hint: %v", d)
	}
}
