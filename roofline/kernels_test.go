package roofline

import (
	"math"
	"testing"

	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
	"github.com/ckbench/ckbench/kernels/quant"
)

func TestCopyWrite(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		for _, n := range []int{0, 5, 128, 1000, 128 * 33} {
			src, dst := buf.Floats(n), buf.Floats(n)
			buf.FillUniform(src, uint64(n), -1, 1)
			Copy(tier, dst, src, 2)
			for i := range n {
				if dst[i] != src[i] {
					t.Fatalf("%s Copy n=%d: dst[%d] = %v, want %v", tier, n, i, dst[i], src[i])
				}
			}
			for _, nt := range []bool{false, true} {
				Write(tier, dst, nt, 2)
				for i := range n {
					if dst[i] != 0.5 {
						t.Fatalf("%s Write(nt=%v) n=%d: dst[%d] = %v", tier, nt, n, i, dst[i])
					}
				}
			}
		}
	})
}

// fmaModel is the value FMA(t, iters) must return: every lane of chain i
// starts at 0.5 + 0.001·i and takes x = 0.9999999·x + 0.001 each round.
func fmaModel(chains, lanes, iters int) float64 {
	var sum float64
	for i := range chains {
		x := 0.5 + 0.001*float64(i)
		for range iters {
			x = 0.9999999*x + 0.001
		}
		sum += float64(lanes) * x
	}
	return sum
}

func TestReadSumRepeat(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		x := buf.Floats(128*3 + 5)
		for i := range x {
			x[i] = float32(i % 3)
		}
		if one, three := ReadSum(tier, x), ReadSumRepeat(tier, x, 3); three != 3*one {
			t.Errorf("%s: 3 passes sum to %v, one to %v", tier, three, one)
		}
	})
}

func TestFMA(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		got := float64(FMA(tier, 1000))
		chains, lanes := genericChains, 1
		if k := kernelsFor(tier); k != nil {
			chains, lanes = k.chains, k.vb/4
		}
		want := fmaModel(chains, lanes, 1000)
		if math.Abs(got-want) > 1e-4*want {
			t.Errorf("%s: FMA = %v, want %v", tier, got, want)
		}
		if FMAFlopsPerIter(tier) != float64(chains*lanes*2) {
			t.Errorf("%s: %v FLOP per iteration", tier, FMAFlopsPerIter(tier))
		}
	})
}

// TestWidenFMA: every lane of every chain starts at 0.5 and adds x·0.9999999
// each round, x the operands widened exactly from cAdd's rows (0.001's
// float32 bits): as f16, 0x126F in even lanes and 0x3A83 in odd ones; as
// int8, the bytes 0x6F, 0x12, 0x83, 0x3A (111, 18, -125, 58, repeating).
// The generic tier has neither kernel.
func TestWidenFMA(t *testing.T) {
	f16 := float64(quant.F16ToF32(0x126F)) + float64(quant.F16ToF32(0x3A83))
	for _, c := range []struct {
		name    string
		f       func(isa.Tier, int) (float32, bool)
		period  int     // lanes after which the operands repeat
		operand float64 // their sum over one period
	}{
		{"F16FMA", F16FMA, 2, f16},
		{"Q8FMA", Q8FMA, 4, 111 + 18 - 125 + 58},
	} {
		t.Run(c.name, func(t *testing.T) {
			isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
				got, ok := c.f(tier, 1000)
				k := kernelsFor(tier)
				if k == nil {
					if ok {
						t.Errorf("%s: %s where there are no asm kernels", tier, c.name)
					}
					return
				}
				lanes := k.vb / 4
				want := float64(k.chains*lanes)*0.5 + float64(k.chains*lanes/c.period)*1000*c.operand*0.9999999
				if !ok || math.Abs(float64(got)-want) > 1e-4*want {
					t.Errorf("%s: %s = %v (%v), want %v", tier, c.name, got, ok, want)
				}
			})
		})
	}
}

func TestInt8(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		if tier == isa.Generic {
			return
		}
		// Each int32 lane starts at 0x00010001 and adds u·s over 4 bytes:
		// (3,1,2,3)·(1,-1,2,-3) = -3 per round; lane 0 sums every chain.
		k := int8Chains(tier)
		want := int32(k * (0x00010001 - 3*100))
		if got := Int8(tier, 100); got != want {
			t.Errorf("%s: Int8 = %d, want %d", tier, got, want)
		}
	})
}

func TestFMAClock(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		k := kernelsFor(tier)
		if k == nil {
			return
		}
		if got, want := FMAClock(tier, 100), 100*(k.chains*4/3); got != want {
			t.Errorf("%s: FMAClock(100) = %d adds, want %d", tier, got, want)
		}
	})
}

func TestClockChain(t *testing.T) {
	if got, ok := ClockChain(1000); ok && got != 8000 {
		t.Fatalf("ClockChain(1000) = %d, want 8000", got)
	} else if !ok {
		t.Skip("no clock-chain kernel on this platform")
	}
}

// TestAVX2IsVEX: no AVX2 kernel uses a register only AVX-512 has (it would
// pass here on an AVX-512 machine and fault on an AVX2-only one).
func TestAVX2IsVEX(t *testing.T) { isatest.VEXOnly(t, "kernels_amd64.s") }

// TestQ8Decode: the q8_0 decode ceiling kernel computes what it claims,
// one round over q8DecodeRows: Σ over keys and blocks of the int8 dot of
// the query's block with the key's times both scales, plus Σ over keys,
// blocks and values of the value times its block's scale times the
// weight 0.9999999, summed in float32 (to 1e-5). A tier without asm
// kernels has none.
func TestQ8Decode(t *testing.T) {
	const row = 4 * 34
	b := q8DecodeRows()
	scale := func(o int) float64 { return float64(quant.F16ToF32(uint16(b[o]) | uint16(b[o+1])<<8)) }
	val := func(o int) float64 { return float64(int8(b[o])) }
	var want float64
	for k := range Q8DecodeKeys {
		for blk := range 4 {
			q, kk, v := blk*34, row*(1+k)+blk*34, row*(1+Q8DecodeKeys+k)+blk*34
			dot := 0.0
			for j := range 32 {
				dot += val(q+2+j) * val(kk+2+j)
				want += val(v+2+j) * scale(v) * float64(float32(0.9999999))
			}
			want += dot * scale(q) * scale(kk)
		}
	}
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		got, ok := Q8Decode(tier, 1)
		if kernelsFor(tier) == nil {
			if ok {
				t.Errorf("%s: Q8Decode where there are no asm kernels", tier)
			}
			return
		}
		if !ok || math.Abs(float64(got)-want) > 1e-5*math.Abs(want)+1e-6 {
			t.Errorf("%s: Q8Decode = %v (%v), want %v", tier, got, ok, want)
		}
	})
}
