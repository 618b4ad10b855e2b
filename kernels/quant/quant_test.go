package quant

import (
	"fmt"
	"math"
	"testing"

	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
)

func TestF16RoundTrip(t *testing.T) {
	// Every half converts to float32 and back to itself (NaNs stay NaN).
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		back := F32ToF16(f)
		if math.IsNaN(float64(f)) {
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("%#04x → %v → %#04x", h, f, back)
		}
	}
}

// TestF16ToF32 checks every half against its value computed in float64:
// (-1)^s · 2^(e-15) · (1 + m/1024), m · 2^-24 when e is 0, ±Inf, and NaN
// with the payload in the top of the float32 mantissa (as VCVTPH2PS).
func TestF16ToF32(t *testing.T) {
	for h := range 1 << 16 {
		sign, e, m := h>>15, h>>10&0x1f, h&0x3ff
		var want float64
		switch e {
		case 0:
			want = math.Ldexp(float64(m), -24)
		case 0x1f:
			want = math.Inf(1)
		default:
			want = math.Ldexp(1+float64(m)/1024, e-15)
		}
		if sign == 1 {
			want = -want
		}
		got := F16ToF32(uint16(h))
		if e == 0x1f && m != 0 {
			if b := math.Float32bits(got); !math.IsNaN(float64(got)) || b>>31 != uint32(sign) || b&0x7fffff != uint32(m)<<13 {
				t.Fatalf("F16ToF32(%#04x) = %#08x, want NaN with sign %d and payload %#x", h, b, sign, m<<13)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != (sign == 1) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, got, want)
		}
	}
}

func TestF16Rounding(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, // 65520 rounds up to Inf
		{65519.996, 0x7bff},
		{1 + 1.0/2048, 0x3c00},                // tie between 1 and 1+2^-10: to even (1)
		{1 + 3.0/2048, 0x3c02},                // tie: to even (1+2·2^-10)
		{float32(math.Ldexp(1, -24)), 0x0001}, // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000}, // half of it: tie to even (0)
		{float32(math.Ldexp(3, -26)), 0x0001}, // 0.75 of it: up
		{float32(math.Ldexp(1023, -24)), 0x03ff},
		{float32(math.Ldexp(2047, -25)), 0x0400}, // rounds up into the smallest normal
		{float32(math.Inf(-1)), 0xfc00}, {float32(math.Copysign(0, -1)), 0x8000},
		{1e-10, 0},
	} {
		if got := F32ToF16(c.f); got != c.h {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
}

// TestRoundTripError: quantize → dequantize stays within each format's
// bound on smooth rows (the golden test checks exactness; this and
// FuzzRoundTrip check the error on other data).
func TestRoundTripError(t *testing.T) {
	x := make([]float32, 1024)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.37)) * float32(1+i%7)
	}
	for _, f := range Formats() {
		if err := checkRoundTrip(f, x); err != nil {
			t.Fatal(err)
		}
	}
}

// checkRoundTrip quantizes and dequantizes x in format f and checks every
// element against errorBound of its block.
func checkRoundTrip(f Format, x []float32) error {
	q := make([]byte, f.RowBytes(len(x)))
	y := make([]float32, len(x))
	if err := Quantize(f, q, x); err != nil {
		return err
	}
	if err := Dequantize(f, y, q); err != nil {
		return err
	}
	blk := f.Info().Block
	for b := 0; b < len(x); b += blk {
		bound := errorBound(f, x[b:b+blk])
		for i := b; i < b+blk; i++ {
			if e := math.Abs(float64(x[i] - y[i])); !(e <= bound) {
				return fmt.Errorf("%s: x[%d] = %v came back %v (error %.3g > bound %.3g)", f, i, x[i], y[i], e, bound)
			}
		}
	}
	return nil
}

// errorBound is the largest round-trip error format f allows on block x:
//   - symmetric formats: one step, amax/levels (the clamped end of the
//     range, opposite the signed maximum, is a full step away);
//   - q4_1, q5_1: half a step of the range, plus the f16 rounding of the min;
//   - K-quants: a step of the super-block's range (or amax for q6_K) plus
//     what the 6- or 8-bit scales lose (amax/50);
//
// plus f16 rounding of the scales (2⁻¹⁰ of amax) and an absolute floor
// for blocks whose scale is below f16's smallest subnormal (they round to
// zero: GGML's q6_K zeroes such super-blocks on purpose).
func errorBound(f Format, x []float32) float64 {
	lo, hi := minMax(x)
	amax := math.Max(math.Abs(float64(lo)), math.Abs(float64(hi)))
	rng := float64(hi - lo)
	var b, floor float64 = 0, 1e-5
	switch f {
	case Q4_0:
		b = amax / 8
	case Q5_0:
		b = amax / 16
	case Q8_0, Q8_1, Q8_K:
		b = amax / 127
	case Q4_1:
		b = rng/30 + rng/1024
	case Q5_1:
		b = rng/62 + rng/1024
	case Q4_K:
		b, floor = rng/15+amax/50, 3e-4
	case Q5_K:
		b, floor = rng/31+amax/50, 3e-4
	case Q6_K:
		b, floor = amax/32+amax/50, 3e-4
	}
	return b*1.01 + amax/1024 + floor
}

// gemvCase is one shape of the tier gate.
type gemvCase struct {
	name string
	m, k int
	fill func(p Params, b Buffers) // nil: random
}

// gateCases covers M not a multiple of rb, K = one block, zero blocks,
// and the largest magnitudes.
func gateCases(f Format) []gemvCase {
	blk := f.Info().Block
	return []gemvCase{
		{"random", 13, 4 * QKK, nil},
		{"one-block", 5, blk, nil},
		{"odd-blocks", 6, 7 * blk, nil},    // pairs of blocks and a last one alone
		{"mixed-blocks", 3, 13 * blk, nil}, // a group of 8, two pairs, one alone
		{"m-one", 1, 2 * QKK, nil},
		{"zero-blocks", 9, 2 * QKK, func(p Params, b Buffers) {
			row := make([]float32, p.K)
			for i := range row {
				row[i] = float32(i%11) - 5
			}
			for i := range QKK { // the first super-block (all first blocks) zero
				row[i] = 0
			}
			fillRows(p, b, row)
			for i := range b.X[:blk] {
				b.X[i] = 0
			}
		}},
		{"max-magnitude", 7, 2 * QKK, func(p Params, b Buffers) {
			row := make([]float32, p.K)
			for i := range row {
				row[i] = 60000 * float32(1-2*(i%2)) // near f16's largest finite
			}
			fillRows(p, b, row)
			for i := range b.X[:p.K] {
				b.X[i] = 1e4 * float32(1-2*(i%3%2))
			}
		}},
	}
}

func fillRows(p Params, b Buffers, row []float32) {
	rb := p.Fmt.RowBytes(p.K)
	for m := range max(p.M, 1) {
		Quantize(p.Fmt, b.W[m*rb:(m+1)*rb], row)
	}
}

// TestTiersMatchGeneric is the gate of every tier: each kernel and format
// it has matches the generic tier within Tolerance, at every rows-per-pass
// the tier offers (so every generated R1…R8 function runs: the 13-row case
// takes a pass of each and a remainder), and writes nothing past its
// outputs (a guard region after each is checked).
func TestTiersMatchGeneric(t *testing.T) {
	gen, _ := Lookup(isa.Generic)
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, f := range WeightFormats() {
			for _, k := range Kernels {
				if ok, _ := im.HasFormat(k, f); !ok {
					continue
				}
				for _, c := range gateCases(f) {
					for rb := 1; rb <= MaxRB; rb++ {
						p := Params{Kernel: k, Fmt: f, M: c.m, K: c.k, RB: rb}
						if ok, _ := im.Has(p); !ok {
							continue
						}
						matchGeneric(t, gen, im, p, c.name, func(b Buffers) {
							if c.fill == nil {
								FillRandom(p, b, 7)
							} else {
								c.fill(p, b)
							}
						})
					}
				}
			}
		}
	})
}

// matchGeneric checks that im gives what the generic tier gen gives for p
// over the inputs fill writes (within Tolerance of each row's magnitude),
// and writes nothing past its outputs.
func matchGeneric(t *testing.T, gen, im Impl, p Params, name string, fill func(Buffers)) {
	t.Helper()
	b, guards := allocGuarded(p)
	fill(b)
	want := run(gen, p, b)
	mag := Magnitudes(p, b)
	got := run(im, p, b)
	if e := MaxRelErr(got, want, mag); !(e <= Tolerance) {
		t.Errorf("%s %s %s rb=%d: max rel err %.3g > %.0e", p.Kernel, p.Fmt, name, p.RB, e, Tolerance)
	}
	if err := guards(); err != nil {
		t.Errorf("%s %s %s rb=%d: %v", p.Kernel, p.Fmt, name, p.RB, err)
	}
}

// FuzzTiersMatchGeneric is TestTiersMatchGeneric over any shape: every
// kernel and weight format, 1–40 rows of 1–40 blocks (of 32, or of 256
// for the k-quants), 1…MaxRB rows per pass, random data of any seed;
// every SIMD tier this CPU runs that has the kernel, a subtest each.
func FuzzTiersMatchGeneric(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(12), uint8(6), uint8(3), uint64(1))
	f.Add(uint8(1), uint8(7), uint8(0), uint8(0), uint8(1), uint64(2))
	gen, _ := Lookup(isa.Generic)
	f.Fuzz(func(t *testing.T, kernel, format, m, blocks, rb uint8, seed uint64) {
		fs := WeightFormats()
		fm := fs[int(format)%len(fs)]
		p := Params{Kernel: Kernels[int(kernel)%len(Kernels)], Fmt: fm, M: 1 + int(m)%40, K: (1 + int(blocks)%40) * fm.Info().Block, RB: 1 + int(rb)%MaxRB}
		if p.Validate() != nil {
			t.Skip()
		}
		isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
			if im.Tier == isa.Generic {
				t.Skip("the reference of this test")
			}
			if ok, why := im.Has(p); !ok {
				t.Skip(why)
			}
			matchGeneric(t, gen, im, p, "fuzz", func(b Buffers) { FillRandom(p, b, seed) })
		})
	})
}

// guardLen is the size of the region after each output buffer that a
// kernel must leave as it was.
const guardLen = 64

// allocGuarded is Alloc with a guard region after Y, D and XQ (inside
// their capacity, beyond their length), and the check of those regions.
func allocGuarded(p Params) (Buffers, func() error) {
	b := Alloc(p)
	const sentinel = 0x5a
	grow := func(f []float32) []float32 {
		if f == nil {
			return nil
		}
		g := make([]float32, len(f)+guardLen)
		for i := len(f); i < len(g); i++ {
			g[i] = math.Float32frombits(sentinel * 0x01010101)
		}
		return g[:len(f)]
	}
	b.Y, b.D = grow(b.Y), grow(b.D)
	xq := make([]byte, len(b.XQ)+guardLen)
	for i := len(b.XQ); i < len(xq); i++ {
		xq[i] = sentinel
	}
	b.XQ = xq[:len(b.XQ)]
	check := func() error {
		for name, f := range map[string][]float32{"y": b.Y, "d": b.D} {
			if f == nil {
				continue
			}
			for i, v := range f[len(f):cap(f)] {
				if math.Float32bits(v) != sentinel*0x01010101 {
					return fmt.Errorf("wrote %s[%d], %d past its end", name, len(f)+i, i)
				}
			}
		}
		for i, v := range b.XQ[len(b.XQ):cap(b.XQ)] {
			if v != sentinel {
				return fmt.Errorf("wrote xq[%d], %d past its end", len(b.XQ)+i, i)
			}
		}
		return nil
	}
	return b, check
}

// run returns the output of p on b by im (fresh outputs each time).
func run(im Impl, p Params, b Buffers) []float32 {
	for i := range b.Y {
		b.Y[i] = float32(math.NaN())
	}
	for i := range b.D {
		b.D[i] = float32(math.NaN())
	}
	clear(b.XQ)
	im.Run(p, b)
	switch p.Kernel {
	case QuantizeQ8:
		// Compare the dequantized activations: bytes must match exactly,
		// which a float compare at tolerance 0 on them shows.
		act := p.Fmt.Q8Act()
		out := make([]float32, p.K)
		Dequantize(act, out, b.XQ[:act.RowBytes(p.K)])
		return out
	case Dequant:
		return append([]float32(nil), b.D...)
	}
	return append([]float32(nil), b.Y[:p.M]...)
}

// TestGenericAgainstFloat64: the generic GEMVs equal the float64 dot of
// the dequantized operands to float32 accuracy.
func TestGenericAgainstFloat64(t *testing.T) {
	gen, _ := Lookup(isa.Generic)
	for _, f := range WeightFormats() {
		for _, k := range []Kernel{GemvF32, GemvQ8} {
			p := Params{Kernel: k, Fmt: f, M: 6, K: 2 * QKK}
			b := Alloc(p)
			FillRandom(p, b, 3)
			gen.Run(p, b)
			w := make([]float32, p.K)
			x := b.X[:p.K]
			if k == GemvQ8 {
				x = make([]float32, p.K)
				Dequantize(f.Q8Act(), x, b.XQ[:f.Q8Act().RowBytes(p.K)])
			}
			rb := f.RowBytes(p.K)
			for m := range p.M {
				Dequantize(f, w, b.W[m*rb:(m+1)*rb])
				var want, mag float64
				for i := range w {
					want += float64(w[i]) * float64(x[i])
					mag += math.Abs(float64(w[i]) * float64(x[i]))
				}
				if e := math.Abs(float64(b.Y[m]) - want); e > 1e-6*mag {
					t.Errorf("%s %s row %d: %v, float64 %v (error %.3g of Σ|w·x| %.3g)", k, f, m, b.Y[m], want, e, mag)
				}
			}
		}
	}
}

func TestWork(t *testing.T) {
	p := Params{Kernel: GemvF32, Fmt: Q4_0, M: 4096, K: 4096}
	w := p.Work()
	if w.Flops != 2*4096*4096 || w.Bytes != 4096*128*18+4*4096+4*4096 {
		t.Fatalf("gemv-f32 q4_0 4096²: %+v", w)
	}
	p = Params{Kernel: GemvQ8, Fmt: Q6_K, M: 2, K: 512}
	if w := p.Work(); w.IntOps != 2*2*512 || w.Bytes != 2*2*210+4*512+8 {
		t.Fatalf("gemv-q8 q6_K: %+v", w)
	}
	p = Params{Kernel: QuantizeQ8, Fmt: Q4_K, K: 512}
	if w := p.Work(); w.Flops != 0 || w.Bytes != 4*512+2*292 {
		t.Fatalf("quantize-q8 to q8_K: %+v", w)
	}
	p = Params{Kernel: Dequant, Fmt: Q8_0, M: 3, K: 64}
	if w := p.Work(); w.Bytes != 3*2*34+4*3*64 {
		t.Fatalf("dequant: %+v", w)
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []Params{
		{Kernel: GemvF32, Fmt: Q4_K, M: 4, K: 100}, // K not a multiple of 256
		{Kernel: GemvF32, Fmt: Q8_K, M: 4, K: 256}, // activation format as weights
		{Kernel: GemvQ8, Fmt: Q4_0, M: 0, K: 32},   // no rows
		{Kernel: GemvQ8, Fmt: Q4_0, M: 4, K: 32, RB: 9},
		{Kernel: "gemm", Fmt: Q4_0, M: 4, K: 32},
	} {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

func TestRunDoesNotAllocate(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, k := range Kernels {
			p := Params{Kernel: k, Fmt: Q4_K, M: 8, K: QKK, RB: 4}
			if ok, _ := im.Has(p); !ok {
				continue
			}
			b := Alloc(p)
			FillRandom(p, b, 1)
			if n := testing.AllocsPerRun(5, func() { im.Run(p, b) }); n != 0 {
				t.Errorf("%s allocates %.0f times per call", k, n)
			}
		}
	})
}

// TestGuardsCatch: the guard check of allocGuarded sees a write past each
// output.
func TestGuardsCatch(t *testing.T) {
	p := Params{Kernel: Dequant, Fmt: Q4_0, M: 2, K: 64}
	for _, poke := range []func(Buffers){
		func(b Buffers) { b.Y[:len(b.Y)+1][len(b.Y)] = 0 },
		func(b Buffers) { b.D[:len(b.D)+guardLen][len(b.D)+guardLen-1] = 0 },
		func(b Buffers) { b.XQ[:len(b.XQ)+3][len(b.XQ)+2] = 0 },
	} {
		b, check := allocGuarded(p)
		if err := check(); err != nil {
			t.Fatal(err)
		}
		poke(b)
		if check() == nil {
			t.Error("a write past the end went unseen")
		}
	}
}

// TestQ8_0Rows: every tier's strided-rows Q8_0 quantizer writes each row
// as Quantize does, touches no byte between the rows, and takes rows of
// whole quads (one call of the asm rows kernel, chunks spanning several
// rows) and rows of 1–3 blocks, with NaN, ±Inf, a subnormal-scale block
// and a block at 2⁻¹⁰⁰ among them.
func TestQ8_0Rows(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		rows := im.Q8_0Rows()
		// 64 and 68: the longest rows that go in one call and the
		// shortest that go a row a call (rowsChunk, amd64).
		for _, nb := range []int{1, 2, 3, 4, 8, 12, 20, 64, 68} {
			for _, nrows := range []int{1, 3, 17, 40} {
				n := nb * 32
				xStride, dstStride := n+7, nb*34+10
				x := make([]float32, (nrows-1)*xStride+n)
				buf.FillUniform(x, uint64(nb*100+nrows), -4, 4)
				if nrows > 5 {
					x[5*xStride+nb*32-1] = float32(math.NaN())
					x[3*xStride] = float32(math.Inf(-1))
					for i := range 32 {
						x[4*xStride+i] *= 1e-39 // 1/d overflows
						x[2*xStride+(nb-1)*32+i] = 0x1p-100
					}
				}
				got := make([]byte, (nrows-1)*dstStride+nb*34)
				for i := range got {
					got[i] = 0xa5
				}
				if err := rows(got, dstStride, x, xStride, nrows, n); err != nil {
					t.Fatal(err)
				}
				for r := range nrows {
					want := make([]byte, nb*34)
					Quantize(Q8_0, want, x[r*xStride:r*xStride+n])
					if i := firstByteDiff(got[r*dstStride:r*dstStride+nb*34], want); i >= 0 {
						t.Fatalf("nb %d, %d rows: row %d byte %d (block %d): %#02x, Quantize %#02x", nb, nrows, r, i, i/34, got[r*dstStride+i], want[i])
					}
					if r+1 < nrows {
						for i, b := range got[r*dstStride+nb*34 : (r+1)*dstStride] {
							if b != 0xa5 {
								t.Fatalf("nb %d, %d rows: byte %d after row %d written (%#02x)", nb, nrows, i, r, b)
							}
						}
					}
				}
			}
		}
		for _, c := range []struct {
			name              string
			dst, dstStride    int
			x, xStride, nrows int
			n                 int
		}{
			{"dst one byte short", 33, 34, 32, 32, 1, 32},
			{"dst short of the last row", 2*34 + 33, 34, 96, 32, 3, 32},
			{"x short of the last row", 3 * 34, 34, 95, 32, 3, 32},
			{"rows overlap in dst", 3 * 34, 33, 96, 32, 3, 32},
			{"rows overlap in x", 3 * 34, 34, 96, 31, 3, 32},
			{"n not whole blocks", 34, 34, 40, 40, 1, 40},
		} {
			if err := rows(make([]byte, c.dst), c.dstStride, make([]float32, c.x), c.xStride, c.nrows, c.n); err == nil {
				t.Errorf("%s: no error", c.name)
			}
		}
	})
}

// TestAVX2IsVEX: no AVX2 kernel uses a register only AVX-512 has (it would
// pass here on an AVX-512 machine and fault on an AVX2-only one).
func TestAVX2IsVEX(t *testing.T) { isatest.VEXOnly(t, "gemv_amd64.s") }
