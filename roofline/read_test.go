package roofline

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
	"github.com/ckbench/ckbench/kernels/quant"
)

func TestReadSum(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		for _, n := range []int{0, 128, 1024, 128 * 77} {
			x := buf.Floats(n)
			for i := range x {
				x[i] = float32(i%5) - 1 // small integers: every order sums exactly
			}
			var want float32
			for _, v := range x {
				want += v
			}
			if got := ReadSum(tier, x); got != want {
				t.Errorf("%s n=%d: %v, want %v", tier, n, got, want)
			}
		}
	})
}

// TestReadXor: every word of the input counts, whatever its bits, at any
// length and offset (the asm body, the word tail and the byte tail).
func TestReadXor(t *testing.T) {
	data := make([]byte, 8*1024+64)
	for i := range data {
		data[i] = byte(i*131 + i>>8)
	}
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		for _, n := range []int{0, 5, 8, 511, 512, 1024 + 13, 8 * 1024} {
			for _, off := range []int{0, 1, 18} {
				b := data[off : off+n]
				var want uint64
				for i, v := range b {
					want ^= uint64(v) << (8 * (i % 8))
				}
				if got := ReadXor(tier, b); got != want {
					t.Errorf("%s n=%d off=%d: %#x, want %#x", tier, n, off, got, want)
				}
			}
		}
	})
}

// TestReadSum2: every float of both halves counts, at lengths on and off
// the stream granule (the asm body and the tails).
func TestReadSum2(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		for _, n := range []int{0, 5, 128, 1024, 128*77 + 33} {
			a, b := buf.Floats(n), buf.Floats(n+7) // b longer: only its first n count
			var want float32
			for i := range a {
				a[i] = float32(i%5) - 1 // small integers: every order sums exactly
				b[i] = float32(i%3) + 2
				want += a[i] + b[i]
			}
			b[n] = 1e9
			if got := ReadSum2(tier, a, b); got != want {
				t.Errorf("%s n=%d: %v, want %v", tier, n, got, want)
			}
			if got := ReadSum2Repeat(tier, a, b, 3); got != 3*want {
				t.Errorf("%s n=%d, 3 passes: %v, want %v", tier, n, got, 3*want)
			}
		}
	})
}

// TestReadXor2: every word of both inputs counts, whatever its bits, at any
// length and offset.
func TestReadXor2(t *testing.T) {
	data := make([]byte, 2*(8*1024+64))
	for i := range data {
		data[i] = byte(i*131 + i>>8)
	}
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		for _, n := range []int{0, 5, 8, 511, 512, 1024 + 13, 8 * 1024} {
			for _, off := range []int{0, 1, 18} {
				a, b := data[off:off+n], data[8*1024+64+2*off:][:n]
				var want uint64
				for i := range a {
					want ^= (uint64(a[i]) ^ uint64(b[i])) << (8 * (i % 8))
				}
				if got := ReadXor2(tier, a, b); got != want {
					t.Errorf("%s n=%d off=%d: %#x, want %#x", tier, n, off, got, want)
				}
			}
		}
	})
}

// TestReadF16: every f16 value counts, widened and scaled by 0.9999999, at
// any length and offset (the asm body and the Go tail; a last odd byte is
// ignored).
func TestReadF16(t *testing.T) {
	data := make([]byte, 8*1024+64)
	for i := 0; i+1 < len(data); i += 2 {
		binary.LittleEndian.PutUint16(data[i:], quant.F32ToF16(float32((i/2)%7)-3))
	}
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		for _, n := range []int{0, 1, 2, 255, 256, 1024 + 14, 1024 + 15, 8 * 1024} {
			for _, off := range []int{0, 2, 18} {
				b := data[off : off+n]
				var want, mag float64
				for i := 0; i+1 < len(b); i += 2 {
					x := float64(quant.F16ToF32(binary.LittleEndian.Uint16(b[i:])))
					want += 0.9999999 * x
					mag += math.Abs(x)
				}
				if got := float64(ReadF16(tier, b)); math.Abs(got-want) > 1e-6*mag {
					t.Errorf("%s n=%d off=%d: %v, want %v", tier, n, off, got, want)
				}
			}
		}
	})
}

func BenchmarkReadSum(b *testing.B) {
	for _, tier := range isa.All {
		if !isa.Detect(tier).Runs {
			continue
		}
		for _, kib := range []int{16, 256, 4096, 65536} {
			x := buf.Floats(kib * 256)
			buf.FillUniform(x, 1, -1, 1) // touch every page: untouched memory is the shared zero page
			b.Run(fmt.Sprintf("isa=%s/kib=%d", tier, kib), func(b *testing.B) {
				b.SetBytes(int64(4 * len(x)))
				for b.Loop() {
					ReadSum(tier, x)
				}
			})
		}
	}
}

// BenchmarkReadSumL1 reads an L1-sized set many times per call, as the
// roofline does: the loop itself, without the cost of a call.
func BenchmarkReadSumL1(b *testing.B) {
	for _, tier := range isa.All {
		if !isa.Detect(tier).Runs {
			continue
		}
		for _, kib := range []int{8, 16} {
			x := buf.Floats(kib * 256)
			buf.FillUniform(x, 1, -1, 1)
			const reps = 256
			b.Run(fmt.Sprintf("isa=%s/kib=%d", tier, kib), func(b *testing.B) {
				b.SetBytes(int64(4 * len(x) * reps))
				for b.Loop() {
					ReadSumRepeat(tier, x, reps)
				}
			})
		}
	}
}

// copyReadCases are TestCopyRead's and TestCopyRead2's: sizes on and off
// the stream granule (which take one call or fall back to two) and reads
// of every proportion to the copy (the asm spreads the read over the
// copy).
var copyReadCases = []struct{ n, rest int }{{1024, 3000}, {1024, 0}, {256, 128}, {100, 300}, {0, 512}, {1024, 1024},
	{5120, 128}, {128, 5120}, {384, 896}, {640, 1000}, {2048, 3072}, {256, 100}}

// TestCopyRead: dst gets the first len(dst) floats of src and the sum is
// of the rest, in every tier.
func TestCopyRead(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		for _, c := range copyReadCases {
			src := make([]float32, c.n+c.rest)
			for i := range src {
				src[i] = float32(i%7 + 1) // small integers: every order sums them exactly
			}
			dst := make([]float32, c.n)
			var want float32
			for _, v := range src[c.n:] {
				want += v
			}
			if got := CopyRead(tier, dst, src); got != want {
				t.Errorf("copy %d, read %d: sum %v, want %v", c.n, c.rest, got, want)
			}
			for i := range dst {
				if dst[i] != src[i] {
					t.Fatalf("copy %d, read %d: dst[%d] = %v, want %v", c.n, c.rest, i, dst[i], src[i])
				}
			}
		}
	})
}

// TestCopyRead2: dst gets len(dst) floats of src in order (a subsequence)
// and the sum is of the others, in every tier.
func TestCopyRead2(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		for _, c := range copyReadCases {
			src, total := countingFloats(c.n+c.rest, 1)
			dst := make([]float32, c.n)
			got := CopyRead2(tier, dst, src)
			copied := checkSubsequence(t, fmt.Sprintf("copy %d, read %d", c.n, c.rest), dst, src)
			if want := total - copied; float64(got) != want {
				t.Errorf("copy %d, read %d: sum %v, want %v (the floats not copied)", c.n, c.rest, got, want)
			}
		}
	})
}

// TestCopyReadPair: each dst gets len(dst) floats of its own src in order
// and the sum is of the others, in every tier, for alike pairs on and off
// the granule and for pairs that are not alike (two CopyReads).
func TestCopyReadPair(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		for _, c := range copyReadCases {
			for _, other := range []int{c.n, c.n / 2} {
				name := fmt.Sprintf("copy %d and %d, read %d", c.n, other, c.rest)
				src, total := smallFloats(c.n+c.rest, 1)
				src2, total2 := smallFloats(other+c.rest, 8) // apart from src's: a float shows its pair
				dst, dst2 := make([]float32, c.n), make([]float32, other)
				got := CopyReadPair(tier, dst, src, dst2, src2)
				copied := checkSubsequence(t, name, dst, src) + checkSubsequence(t, name+" (second pair)", dst2, src2)
				if want := total + total2 - copied; float64(got) != want {
					t.Errorf("%s: sum %v, want %v (the floats not copied)", name, got, want)
				}
			}
		}
	})
}

// countingFloats are n distinct floats from first, first+1, …, and their
// sum (below 2²⁴ in every case: exact in any order).
func countingFloats(n, first int) ([]float32, float64) {
	x := make([]float32, n)
	var sum float64
	for i := range x {
		x[i] = float32(first + i)
		sum += float64(first + i)
	}
	return x, sum
}

// smallFloats are n floats cycling through first … first+6, and their sum:
// small integers, summed exactly in any order.
func smallFloats(n, first int) ([]float32, float64) {
	x := make([]float32, n)
	var sum float64
	for i := range x {
		x[i] = float32(first + i%7)
		sum += float64(x[i])
	}
	return x, sum
}

// checkSubsequence fails unless dst is a subsequence of src, and returns
// the sum of dst.
func checkSubsequence(t *testing.T, name string, dst, src []float32) float64 {
	t.Helper()
	var sum float64
	j := 0 // src index after the last float found in dst
	for i, v := range dst {
		at := slices.Index(src[j:], v)
		if at < 0 {
			t.Fatalf("%s: dst[%d] = %v is not a float of src after the ones before it", name, i, v)
		}
		j += at + 1
		sum += float64(v)
	}
	return sum
}
