// Package stats holds the small latency helpers benchmarks share. It
// imports only the standard library, so in-package tests of any package may
// use it.
package stats

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Quantile returns the q-quantile (0..1) of sorted durations: the element
// at index q·n, clamped to the last one; 0 for no samples.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}

// Millis converts a duration to fractional milliseconds.
func Millis(d time.Duration) float64 {
	return float64(d.Nanoseconds()) / 1e6
}

// Mean returns the mean of d (0 for no samples).
func Mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(max(len(d), 1))
}

// MeanFloat returns the mean of x (0 for no samples).
func MeanFloat(x []float64) float64 {
	var sum float64
	for _, v := range x {
		sum += v
	}
	return sum / float64(max(len(x), 1))
}

// StdErr returns the standard error of the mean of x: the samples'
// standard deviation over √n (0 for fewer than two samples).
func StdErr(x []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	m := MeanFloat(x)
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}

// MedianFloat returns the median of x (0 for no samples); x is not
// changed.
func MedianFloat(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(x))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// ReportLatencies sorts lat and reports its p50, p99 and max in
// milliseconds as the benchmark's p50-ms, p99-ms and max-ms.
func ReportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(Millis(Quantile(lat, 0.50)), "p50-ms")
	b.ReportMetric(Millis(Quantile(lat, 0.99)), "p99-ms")
	b.ReportMetric(Millis(lat[len(lat)-1]), "max-ms")
}

// UnderLoad measures op, one call at a time, b.N times, while writers
// goroutines each call background(ctx, w) over and over until the
// measurement ends. Measuring starts once a background call has completed
// (within a minute). It reports op's latencies (ReportLatencies) and, as
// unit, how many background calls completed meanwhile. A background error
// while ctx is live fails the benchmark and stops that writer.
func UnderLoad(b *testing.B, writers int, unit string, background func(ctx context.Context, w int) error, op func(i int) error) {
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var done atomic.Int64
	first := make(chan struct{})
	var once sync.Once
	for w := range writers {
		wg.Go(func() {
			for ctx.Err() == nil {
				err := background(ctx, w)
				if ctx.Err() != nil {
					return // the call the end cut short does not count
				}
				if err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
				once.Do(func() { close(first) })
			}
		})
	}
	if writers > 0 {
		select {
		case <-first:
		case <-time.After(time.Minute):
			stop()
			wg.Wait()
			b.Fatal("no background call completed within a minute")
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		began := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(began))
	}
	b.StopTimer()
	stop()
	wg.Wait()
	ReportLatencies(b, lat)
	b.ReportMetric(float64(done.Load()), unit)
}
