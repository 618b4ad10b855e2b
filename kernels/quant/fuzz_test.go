package quant

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckbench/ckbench/kernels/isa"
)

// Seeds from GGML's golden data when it is there (the shared folder beside
// the repository), else from a few synthetic rows.
func goldenSeeds(f *testing.F, file string, chunk int) {
	b, err := os.ReadFile(filepath.Join("../../testdata/golden", file))
	if err != nil || len(b) < chunk {
		return
	}
	for off := 0; off+chunk <= len(b); off += chunk {
		f.Add(b[off : off+chunk])
	}
}

// FuzzDequantize: any bytes are a valid block of every format: the
// dequantizer must not panic, must write every output, and must give
// finite values wherever the block's f16/f32 scales are finite.
func FuzzDequantize(f *testing.F) {
	for _, fm := range Formats() {
		goldenSeeds(f, fm.String()+".quant.bin", fm.Info().Bytes)
	}
	f.Add(make([]byte, 292))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range Formats() {
			fi := fm.Info()
			n := len(data) / fi.Bytes
			if n == 0 {
				continue
			}
			src := data[:n*fi.Bytes]
			dst := make([]float32, n*fi.Block)
			for i := range dst {
				dst[i] = float32(math.NaN())
			}
			if err := Dequantize(fm, dst, src); err != nil {
				t.Fatal(err)
			}
			for b := range n {
				if !finiteScales(fm, src[b*fi.Bytes:(b+1)*fi.Bytes]) {
					continue
				}
				for i, v := range dst[b*fi.Block : (b+1)*fi.Block] {
					if math.IsNaN(float64(v)) {
						t.Fatalf("%s block %d element %d: NaN from finite scales", fm, b, i)
					}
				}
			}
			// The integer and float dot products read the same block
			// layout: they must not panic either.
			if fi.Weight {
				x := make([]float32, n*fi.Block)
				for i := range x {
					x[i] = 1
				}
				DotF32(fm, src, x)
				aq := make([]byte, fm.Q8Act().RowBytes(len(x)))
				Quantize(fm.Q8Act(), aq, x)
				DotQ8(fm, src, aq, len(x))
			}
		}
	})
}

// finiteScales reports whether a block's scale fields hold finite numbers
// (random bytes can spell f16 Inf or NaN, which dequantize to Inf/NaN as
// GGML's do).
func finiteScales(f Format, blk []byte) bool {
	h := func(off int) bool { return binary.LittleEndian.Uint16(blk[off:])&0x7c00 != 0x7c00 }
	switch f {
	case Q4_0, Q5_0, Q8_0:
		return h(0)
	case Q4_1, Q5_1, Q8_1, Q4_K, Q5_K:
		return h(0) && h(2)
	case Q6_K:
		return h(208)
	case Q8_K:
		return !math.IsInf(float64(math.Float32frombits(binary.LittleEndian.Uint32(blk))), 0) &&
			!math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(blk))))
	}
	return true
}

// FuzzRoundTrip: quantize → dequantize of any finite row stays within the
// format's error bound (errorBound), and never panics.
func FuzzRoundTrip(f *testing.F) {
	goldenSeeds(f, "input_f32.bin", 4*QKK)
	goldenSeeds(f, "act_f32.bin", 4*QKK)
	f.Add(make([]byte, 4*QKK))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := len(data) / 4 / QKK * QKK
		if n == 0 {
			return
		}
		x := make([]float32, n)
		for i := range x {
			v := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			// Keep to what f16 scales can carry: finite, |x| ≤ 30000.
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || math.Abs(float64(v)) > 30000 {
				v = 0
			}
			x[i] = v
		}
		for _, fm := range Formats() {
			if err := checkRoundTrip(fm, x); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzDequantizeTiers: on any bytes, every SIMD tier's dequantizer gives
// the generic tier's floats bit for bit (NaN for NaN: F16C quiets a
// signalling NaN scale, Go keeps its payload as it is).
func FuzzDequantizeTiers(f *testing.F) {
	for _, fm := range WeightFormats() {
		goldenSeeds(f, fm.String()+".quant.bin", fm.Info().Bytes)
	}
	f.Add(make([]byte, 420))
	gen, _ := Lookup(isa.Generic)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range WeightFormats() {
			fi := fm.Info()
			n := len(data) / fi.Bytes
			if n == 0 {
				continue
			}
			p := Params{Kernel: Dequant, Fmt: fm, M: 1, K: n * fi.Block}
			b := Buffers{W: data[:n*fi.Bytes], D: make([]float32, p.K)}
			gen.Run(p, b)
			want := append([]float32(nil), b.D...)
			for _, im := range simdImpls(p) {
				clear(b.D)
				im.Run(p, b)
				for i, v := range b.D {
					w := want[i]
					if math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
						t.Fatalf("%s %s element %d: %v (%#08x), generic %v (%#08x)", im.Tier, fm, i, v, math.Float32bits(v), w, math.Float32bits(w))
					}
				}
			}
		}
	})
}

// FuzzQuantizeQ8Tiers: on any floats, every SIMD tier's activation
// quantizer (quantize-q8: Q8_0, Q8_1, Q8_K) writes the generic tier's
// bytes: GGML's for finite blocks, the NaN block for blocks holding NaN
// or ±Inf.
func FuzzQuantizeQ8Tiers(f *testing.F) {
	goldenSeeds(f, "act_f32.bin", 4*QKK)
	f.Add(make([]byte, 4*QKK))
	gen, _ := Lookup(isa.Generic)
	f.Fuzz(func(t *testing.T, data []byte) {
		n := len(data) / 4 / QKK * QKK
		if n == 0 {
			return
		}
		for _, wf := range []Format{Q4_0, Q4_1, Q4_K} { // their activations: Q8_0, Q8_1, Q8_K
			p := Params{Kernel: QuantizeQ8, Fmt: wf, K: n}
			b := Alloc(p)
			for i := range b.X[:n] {
				b.X[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
			gen.Run(p, b)
			want := append([]byte(nil), b.XQ...)
			for _, im := range simdImpls(p) {
				clear(b.XQ)
				im.Run(p, b)
				if i := firstByteDiff(b.XQ, want); i >= 0 {
					act := wf.Q8Act()
					t.Fatalf("%s %s: byte %d (block %d, offset %d): %#02x, generic %#02x", im.Tier, act, i, i/act.Info().Bytes, i%act.Info().Bytes, b.XQ[i], want[i])
				}
			}
		}
	})
}

// firstByteDiff returns the first index where a and b differ, or −1.
func firstByteDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// simdImpls returns the SIMD tiers that run here and have p.
func simdImpls(p Params) []Impl {
	var out []Impl
	for _, im := range Impls() {
		if im.Tier == isa.Generic || !isa.Detect(im.Tier).Runs {
			continue
		}
		if ok, _ := im.Has(p); ok {
			out = append(out, im)
		}
	}
	return out
}

// FuzzGemvSpecials: x of moderate values with NaN, ±Inf and huge values
// where the fuzzer puts them; every SIMD tier's gemv-f32 and gemv-q8 give
// the generic tier's class row for row, finite rows within Tolerance of
// looseMagnitudes. A gemv-q8 row whose looseMagnitudes reaches the float32
// range is left free: whether its partial sums overflow depends on the
// order of the additions (see Float specials in the package doc).
// Two bytes make one x: 0xff 0x00–0x02 are NaN, +Inf, −Inf; 0xfe e is
// ±2^e (e up to 127: huge); anything else is int16/256.
func FuzzGemvSpecials(f *testing.F) {
	f.Add([]byte{0xff, 0, 10, 20, 0xff, 1, 30, 40, 0xfe, 120, 1, 2})
	f.Add([]byte{0xfe, 126, 0xfe, 127, 0xfe, 125, 0xff, 2})
	f.Add([]byte{0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe}) // 2¹²⁷ three times: gemv-q8 q4_K overflows in one order only
	gen, _ := Lookup(isa.Generic)
	f.Fuzz(func(t *testing.T, data []byte) {
		const k = 256
		xs := make([]float32, k)
		for i := 0; 2*i+1 < len(data) && i < k; i++ {
			a, c := data[2*i], data[2*i+1]
			switch {
			case a == 0xff && c < 3:
				xs[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[c]
			case a == 0xfe:
				xs[i] = float32(math.Ldexp(1-2*float64(c&1), int(c>>1)))
			default:
				xs[i] = float32(int16(uint16(a)<<8|uint16(c))) / 256
			}
		}
		for _, kern := range []Kernel{GemvF32, GemvQ8} {
			for _, fm := range WeightFormats() {
				p := Params{Kernel: kern, Fmt: fm, M: 3, K: k, RB: 2}
				b := Alloc(p)
				FillRandom(p, b, 5)
				copy(b.X, xs)
				gen.Run(p, b)
				want := append([]float32(nil), b.Y...)
				mag := looseMagnitudes(p, b)
				var free []bool // gemv-q8 rows whose partial sums can overflow
				if kern == GemvQ8 {
					free = make([]bool, len(mag))
					for r, m := range mag {
						free[r] = m >= math.MaxFloat32
					}
				}
				for _, im := range simdImpls(p) {
					clear(b.Y)
					im.Run(p, b)
					checkRows(t, b.Y, want, mag, free)
				}
			}
		}
	})
}

// looseMagnitudes is 2·max|w|·Σ|x| per row: the scale of the rounding
// error of the SIMD kernels, which sum q·x and the bias·Σx term apart
// (Magnitudes, Σ|w·x|, is the finer scale of random data, but one huge x
// against a weight of level 0 makes it small where those sums are not).
func looseMagnitudes(p Params, b Buffers) []float64 {
	var sx float64
	for _, v := range activations(p, b) {
		sx += math.Abs(float64(v))
	}
	w := make([]float32, p.K)
	rb := p.Fmt.RowBytes(p.K)
	mag := make([]float64, p.M)
	for m := range p.M {
		Dequantize(p.Fmt, w, b.W[m*rb:(m+1)*rb])
		var mw float64
		for _, v := range w {
			mw = max(mw, math.Abs(float64(v)))
		}
		mag[m] = 2 * mw * sx
	}
	return mag
}
