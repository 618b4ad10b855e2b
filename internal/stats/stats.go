// Package stats holds the order statistics that ckbench's packages share.
package stats

import (
	"math"
	"slices"
)

// Median returns the median of xs (the mean of the two middle values when
// their number is even), NaN when xs is empty. It leaves xs as it is.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	s := xs
	if !slices.IsSorted(xs) {
		s = slices.Sorted(slices.Values(xs))
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
