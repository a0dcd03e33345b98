package retry

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy is an exponential backoff with a cap and jitter that gives way to
// a server's Retry-After. The zero Policy retries at once.
type Policy struct {
	// Base is the delay before the first retry.
	Base time.Duration
	// Factor multiplies the delay from one retry to the next; below 2 it
	// is 2.
	Factor int
	// Max caps the delay computed from Base; 0 means no cap.
	Max time.Duration
	// Jitter is the share of the delay taken off at random, from 0 (none)
	// to 1: the delay is drawn from [d·(1−Jitter), d].
	Jitter float64
	// MaxAfter caps a server's hint; 0 means no cap.
	MaxAfter time.Duration
}

// Delay is the pause before retry number attempt (0 for the first retry):
// the server's hint after when it is positive (capped at MaxAfter), else
// Base·Factor^attempt capped at Max, less the jitter.
func (p Policy) Delay(attempt int, after time.Duration) time.Duration {
	if after > 0 {
		if p.MaxAfter > 0 {
			return min(after, p.MaxAfter)
		}
		return after
	}
	d := p.backoff(attempt)
	if p.Jitter > 0 && d > 0 {
		d -= time.Duration(rand.Int64N(int64(float64(d)*min(p.Jitter, 1)) + 1))
	}
	return d
}

// backoff is Base·Factor^attempt capped at Max, saturating instead of
// overflowing.
func (p Policy) backoff(attempt int) time.Duration {
	f := time.Duration(max(p.Factor, 2))
	d := p.Base
	for i := 0; i < attempt && d > 0 && (p.Max == 0 || d < p.Max); i++ {
		if d > math.MaxInt64/f {
			d = math.MaxInt64
			break
		}
		d *= f
	}
	if p.Max > 0 {
		d = min(d, p.Max)
	}
	return max(d, 0)
}

// After reads a Retry-After header value received at now: a number of
// seconds (fractions allowed) or an HTTP-date. It is 0 for an empty or
// unreadable value, a value that is not positive, and a date that is not
// after now.
func After(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && !math.IsInf(s, 0) {
			return time.Duration(min(s, maxSeconds) * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// maxSeconds bounds a Retry-After in seconds, so that the duration does
// not overflow (about 11.6 days; callers cap far lower).
const maxSeconds = 1e6

// Wait pauses for d, or until ctx ends: then it returns the context's
// cause.
func Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
