// Package stats holds the small latency helpers benchmarks share. It
// imports only the standard library, so in-package tests of any package may
// use it.
package stats

import "time"

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
