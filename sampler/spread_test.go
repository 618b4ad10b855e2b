package sampler

import (
	"slices"
	"testing"
)

// TestSpread: the last n CPUs are n distinct cores while there are that
// many; siblings come first; an unknown topology keeps the order.
func TestSpread(t *testing.T) {
	// 4 cores with 2 threads each, Linux's usual numbering: CPU i and
	// i+4 share core i.
	core := func(c int) string { return string(rune('a' + c%4)) }
	got := spread([]int{0, 1, 2, 3, 4, 5, 6, 7}, core)
	if want := []int{4, 5, 6, 7, 0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("spread = %v, want %v", got, want)
	}
	// Siblings numbered next to each other: (0,1) (2,3).
	core = func(c int) string { return string(rune('a' + c/2)) }
	if got, want := spread([]int{0, 1, 2, 3}, core), []int{1, 3, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("spread = %v, want %v", got, want)
	}
	unknown := func(int) string { return "" }
	if got := spread([]int{3, 5, 9}, unknown); !slices.Equal(got, []int{3, 5, 9}) {
		t.Fatalf("unknown topology: %v", got)
	}
	if _, err := SpreadCPUs(); err != nil {
		t.Skip(err)
	}
}
