package stats

import (
	"math"
	"slices"
	"testing"
)

func TestMeanFloatAndStdErr(t *testing.T) {
	for _, tc := range []struct {
		x        []float64
		mean, se float64
	}{
		{nil, 0, 0},
		{[]float64{5}, 5, 0},
		{[]float64{1, 3}, 2, 1}, // sd √2, n 2
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0/7) / math.Sqrt(8)},
	} {
		if m, se := MeanFloat(tc.x), StdErr(tc.x); math.Abs(m-tc.mean) > 1e-12 || math.Abs(se-tc.se) > 1e-12 {
			t.Errorf("%v: mean %v se %v, want %v %v", tc.x, m, se, tc.mean, tc.se)
		}
	}
}

func TestMedianFloat(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{9, 1, 5}, 5},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := slices.Clone(tc.x)
		if got := MedianFloat(in); got != tc.want || !slices.Equal(in, tc.x) {
			t.Errorf("MedianFloat(%v) = %v (input now %v), want %v", tc.x, got, in, tc.want)
		}
	}
}
