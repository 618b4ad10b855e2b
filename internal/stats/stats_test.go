package stats

import (
	"math"
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	if m := Median(nil); !math.IsNaN(m) {
		t.Errorf("Median(nil) = %v, want NaN", m)
	}
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{1, 2, 2, 9}, 2}} {
		in := slices.Clone(c.xs)
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, c.want)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("Median changed its argument: %v to %v", in, c.xs)
		}
	}
}
