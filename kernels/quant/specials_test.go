package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
)

// class sorts a float into the four kinds the specials contract speaks of.
func class(v float32) string {
	switch {
	case v != v:
		return "NaN"
	case math.IsInf(float64(v), 1):
		return "+Inf"
	case math.IsInf(float64(v), -1):
		return "-Inf"
	}
	return "finite"
}

// gemvSpecial plants non-finite or huge values in a GEMV problem.
type gemvSpecial struct {
	name string
	set  func(p Params, b Buffers)
}

func gemvSpecials() []gemvSpecial {
	setX := func(i int, v float32) func(Params, Buffers) {
		return func(p Params, b Buffers) { b.X[i] = v }
	}
	// scale writes an f16 (or, for the Q8_K-scaled kinds, nothing: the
	// weights' scales are f16 in every weight format) at the scale of the
	// first block of row r.
	scale := func(r int, h uint16) func(Params, Buffers) {
		return func(p Params, b Buffers) {
			off := r * p.Fmt.RowBytes(p.K)
			if p.Fmt == Q6_K {
				off += 208
			}
			binary.LittleEndian.PutUint16(b.W[off:], h)
		}
	}
	return []gemvSpecial{
		{"nan-x", setX(37, float32(math.NaN()))},
		{"pinf-x", setX(5, float32(math.Inf(1)))},
		{"ninf-x", setX(300, float32(math.Inf(-1)))},
		// |x| ≈ 1e37: w·x is finite, and so is the true sum; taking the
		// scale out of it (d·Σq·x) or Σx first would overflow.
		{"huge-x", func(p Params, b Buffers) {
			for i := range b.X {
				b.X[i] *= 1e37
			}
		}},
		{"nan-scale", scale(2, 0x7e00)},
		{"inf-scale", scale(3, 0x7c00)},
	}
}

// TestGemvSpecials: NaN, ±Inf and overflow-prone x, and non-finite weight
// scales, give in every tier the class (NaN, +Inf, −Inf, finite) the
// generic tier gives, row for row, and finite rows within Tolerance. The
// contract is in the package doc (Float specials).
func TestGemvSpecials(t *testing.T) {
	gen, _ := Lookup(isa.Generic)
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, k := range []Kernel{GemvF32, GemvQ8} {
			for _, f := range WeightFormats() {
				for _, sp := range gemvSpecials() {
					p := Params{Kernel: k, Fmt: f, M: 6, K: 512, RB: 4}
					if ok, _ := im.Has(p); !ok {
						p.RB = 1
					}
					if ok, why := im.Has(p); !ok {
						t.Logf("%s %s: %s", k, f, why)
						continue
					}
					t.Run(fmt.Sprintf("%s/%s/%s", k, f, sp.name), func(t *testing.T) {
						b := Alloc(p)
						FillRandom(p, b, 11)
						sp.set(p, b)
						gen.Run(p, b)
						want := append([]float32(nil), b.Y...)
						mag := Magnitudes(p, b)
						clear(b.Y)
						im.Run(p, b)
						checkRows(t, b.Y, want, mag, nil)
					})
				}
			}
		}
	})
}

// checkRows compares a GEMV's rows with the generic tier's: same class, and
// finite rows within Tolerance of Σ|w·x| (mag).
func checkRows(t *testing.T, got, want []float32, mag []float64, free []bool) {
	t.Helper()
	for r := range want {
		if free != nil && free[r] {
			continue
		}
		if class(got[r]) != class(want[r]) {
			t.Fatalf("row %d: %v, generic %v", r, got[r], want[r])
		}
		if class(want[r]) != "finite" {
			continue
		}
		scale := 1.0
		if mag != nil && mag[r] > 0 && !math.IsInf(mag[r], 0) {
			scale = mag[r]
		}
		if e := math.Abs(float64(got[r])-float64(want[r])) / scale; e > Tolerance {
			t.Fatalf("row %d: %v, generic %v (relative error %.3g)", r, got[r], want[r], e)
		}
	}
}

// TestQuantizeNonFinite: a NaN or ±Inf in a block of activations gives the
// block a NaN scale and zero levels (GGML leaves it undefined); the other
// blocks are quantized as usual.
func TestQuantizeNonFinite(t *testing.T) {
	for _, act := range []Format{Q8_0, Q8_1, Q8_K} {
		for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			blk := act.Info().Block
			x := make([]float32, 2*blk)
			for i := range x {
				x[i] = float32(i%13) - 6
			}
			x[blk+blk/2] = v
			q := make([]byte, act.RowBytes(len(x)))
			if err := Quantize(act, q, x); err != nil {
				t.Fatal(err)
			}
			n := act.Info().Bytes
			good, bad := q[:n], q[n:]
			d := make([]float32, len(x))
			Dequantize(act, d, q)
			if class(d[0]) != "finite" {
				t.Errorf("%s: the finite block dequantizes to %v", act, d[0])
			}
			for i, y := range d[blk:] {
				if y == y {
					t.Fatalf("%s, %v in x: element %d of its block dequantizes to %v, not NaN", act, v, i, y)
				}
			}
			if firstByteDiff(good, bad) < 0 {
				t.Fatalf("%s: the two blocks are the same", act)
			}
			for i, c := range bad {
				switch {
				case act == Q8_K && i < 4, act != Q8_K && i < 2, act == Q8_1 && i < 4:
					continue
				}
				if c != 0 {
					t.Fatalf("%s, %v in x: byte %d of its block is %#02x, not 0", act, v, i, c)
				}
			}
		}
	}
}
