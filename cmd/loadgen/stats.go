package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// stats summarises the latencies of one measured loop.
type stats struct {
	n                   int
	errors              int
	wall                time.Duration
	p50, p90, p99, pmax time.Duration
	mean                time.Duration
	// capped reports that the loop stopped at its time cap, not its count.
	capped bool
}

// summarize sorts lat in place and computes its percentiles (nearest rank).
func summarize(lat []time.Duration, errs int, wall time.Duration, capped bool) stats {
	s := stats{n: len(lat), errors: errs, wall: wall, capped: capped}
	if len(lat) == 0 {
		return s
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	s.mean = sum / time.Duration(len(lat))
	s.p50 = percentile(lat, 50)
	s.p90 = percentile(lat, 90)
	s.p99 = percentile(lat, 99)
	s.pmax = lat[len(lat)-1]
	return s
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// rate is completed requests per second of wall time.
func (s stats) rate() float64 {
	if s.wall <= 0 {
		return 0
	}
	return float64(s.n) / s.wall.Seconds()
}

func (s stats) String() string {
	c := ""
	if s.capped {
		c = " (stopped at the time cap)"
	}
	return fmt.Sprintf("n=%d errors=%d wall=%s rate=%.0f req/s  p50=%s p90=%s p99=%s max=%s mean=%s%s",
		s.n, s.errors, s.wall.Round(time.Millisecond), s.rate(), ms(s.p50), ms(s.p90), ms(s.p99), ms(s.pmax), ms(s.mean), c)
}

// ms formats d in milliseconds with enough precision for sub-ms latencies.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return fmt.Sprintf("%.3fms", v)
	case v < 100:
		return fmt.Sprintf("%.2fms", v)
	default:
		return fmt.Sprintf("%.1fms", v)
	}
}
