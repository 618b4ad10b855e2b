//go:build !purego

package quant

import (
	"bufio"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
)

// TestAVX2KernelsUseVEXRegistersOnly guards the AVX2 tier: the Go
// assembler silently picks an EVEX (AVX-512) encoding when an instruction
// names X16–X31, Y16–Y31, a ZMM or a mask register, and such code would
// fault on an AVX2-only CPU. avo's register allocator may hand those out,
// so every AVX2 function of the generated file is checked.
func TestAVX2KernelsUseVEXRegistersOnly(t *testing.T) {
	f, err := os.Open("gemv_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evexOnly := regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z[0-9]+|K[1-7])\b`)
	fn, checked := "", 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "TEXT ") {
			fn = line
			if strings.Contains(fn, "AVX2") {
				checked++
			}
			continue
		}
		if strings.Contains(fn, "AVX2") && evexOnly.MatchString(line) {
			t.Errorf("%s: %s uses an AVX-512 register", fn, strings.TrimSpace(line))
		}
	}
	if checked == 0 {
		t.Fatal("no AVX2 functions found in gemv_amd64.s")
	}
}

// TestQuantizeQ8AsmByteExact: the generated activation quantizers (AVX2
// and AVX-512) write
// the same bytes as the Go reference (and so as GGML) on random rows, ties
// of magnitude with both signs, halves that round away from zero, zeros,
// subnormal and large values.
func TestQuantizeQ8AsmByteExact(t *testing.T) {
	for _, q := range []struct {
		tier isa.Tier
		f    quantizeQ8Func
	}{{isa.AVX2, quantizeQ8AVX2}, {isa.AVX512, quantizeQ8AVX512}} {
		t.Run(string(q.tier), func(t *testing.T) {
			isatest.Skip(t, q.tier)
			checkQuantizer(t, q.f)
		})
	}
}

func checkQuantizer(t *testing.T, quantize quantizeQ8Func) {
	rows := map[string][]float32{}
	r := make([]float32, 1024)
	buf.FillUniform(r, 9, -3, 3)
	rows["random"] = r
	ties := make([]float32, 1024)
	for i := range ties {
		ties[i] = float32(i%5) - 2 // ±2 first at index 0 (−2): the sign of the first wins
	}
	rows["ties"] = ties
	halves := make([]float32, 1024)
	for i := range halves {
		halves[i] = (float32(i%255) - 127) / 2 // x/d lands on .5 often
	}
	halves[0] = 127
	rows["halves"] = halves
	zero := make([]float32, 1024)
	zero[700] = 1e-40 // all of the first super-block zero, then a subnormal
	rows["zeros"] = zero
	big := make([]float32, 1024)
	for i := range big {
		big[i] = 3e38 * float32(1-2*(i%2)) / float32(1+i)
	}
	rows["large"] = big
	// Blocks of every scale, from subnormal (1/d overflows to Inf) to
	// near the largest float, and across the 2⁻¹⁰⁰ below which AVX2's
	// quads hand a block to the one-block loop.
	scales := make([]float32, 1024)
	buf.FillUniform(scales, 5, -1, 1)
	for i := range scales {
		e := (i/32*37)%260 - 140 // the block's exponent, −140…119
		scales[i] = float32(math.Ldexp(float64(scales[i]), e))
	}
	copy(scales[64:96], []float32{0x1p-100, -0x1p-101, 0x1p-100})
	copy(scales[96:128], []float32{-0x1.fffffep-101})
	rows["scales"] = scales
	// NaN and ±Inf in single blocks among finite ones (a quad falls back
	// to one block at a time), and a row that is not a whole number of
	// quads (35 blocks: its last three one at a time).
	specials := make([]float32, 1024)
	buf.FillUniform(specials, 6, -2, 2)
	specials[5*32+7] = float32(math.NaN())
	specials[9*32] = float32(math.Inf(1))
	specials[14*32+31] = float32(math.Inf(-1))
	specials[31*32+3] = float32(math.NaN())
	rows["specials"] = specials
	odd := make([]float32, 35*32)
	buf.FillUniform(odd, 7, -50, 50)
	rows["35 blocks"] = odd
	for name, x := range rows {
		for _, act := range []Format{Q8_0, Q8_1, Q8_K} {
			if len(x)%act.Info().Block != 0 {
				continue
			}
			want, got := make([]byte, act.RowBytes(len(x))), make([]byte, act.RowBytes(len(x)))
			quantizeQ8Generic(act, want, x)
			quantize(act, got, x)
			if i := firstByteDiff(got, want); i >= 0 {
				t.Errorf("%s %s: byte %d (block %d, offset %d): asm %#02x, reference %#02x",
					act, name, i, i/act.Info().Bytes, i%act.Info().Bytes, got[i], want[i])
			}
		}
	}
}

// TestDequantAsmBitExact: every tier's dequantizers give GGML's floats bit
// for bit (the gate's tolerance would let a rounding slip through).
func TestDequantAsmBitExact(t *testing.T) {
	gen, _ := Lookup(isa.Generic)
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, f := range WeightFormats() {
			if ok, _ := im.HasFormat(Dequant, f); !ok {
				continue
			}
			for _, c := range gateCases(f) {
				p := Params{Kernel: Dequant, Fmt: f, M: c.m, K: c.k}
				b := Alloc(p)
				if c.fill == nil {
					FillRandom(p, b, 11)
				} else {
					c.fill(p, b)
				}
				want, got := run(gen, p, b), run(im, p, b)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Errorf("dequant %s %s: element %d: %v, generic %v", f, c.name, i, got[i], want[i])
						break
					}
				}
			}
		}
	})
}
