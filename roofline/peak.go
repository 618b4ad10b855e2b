package roofline

import (
	"sync"
	"time"

	"github.com/ckbench/ckbench/kernels/isa"
)

// asmKernels are the measurement kernels of one tier in asm (kernelsFor
// returns nil where there are none: other platforms, purego, generic).
type asmKernels struct {
	readSum func(p *float32, n, reps int) float32
	readSm2 func(p, q *float32, n, reps int) float32
	readXor func(p *byte, n int) uint64
	readXr2 func(p, q *byte, n int) uint64
	readF16 func(p *byte, n int) float32
	copy    func(dst, src *float32, n, reps int)
	copyRd  func(dst, src *float32, n, m int) float32
	copyRd2 func(dst, src, dst2, src2 *float32, n, m int) float32
	write   func(dst *float32, n, reps int)
	writeNT func(dst *float32, n, reps int)
	fma     func(iters int) float32
	f16fma  func(iters int) float32
	q8fma   func(iters int) float32
	q8dec   func(p *byte, iters int) float32
	fmaClk  func(iters int) int
	int8    func(iters int) int32
	chains  int // accumulators of fma (and of int8 with VNNI; AVX2 int8 uses 11)
	vb      int // bytes per vector
}

// FMAFlopsPerIter is the FLOP count of one iteration of FMA(t): one FMA (2
// FLOP per lane) on every independent accumulator.
func FMAFlopsPerIter(t isa.Tier) float64 {
	if k := kernelsFor(t); k != nil {
		return float64(k.chains * k.vb / 4 * 2)
	}
	return genericChains * 2
}

// FMA runs iters iterations of the FP32 FMA peak kernel of t and returns a
// value that depends on all of them. The generic tier is what pure Go does:
// scalar multiply-adds on independent chains (the compiler does not fuse
// them without GOAMD64=v3).
func FMA(t isa.Tier, iters int) float32 {
	if k := kernelsFor(t); k != nil {
		return k.fma(iters)
	}
	return fmaGenericFor(iters)
}

// F16FMA runs iters iterations of the f16-widened FMA peak kernel of t
// (FMA's, each operand converted from f16 in memory first, FLOPs as
// FMAFlopsPerIter) and reports whether t has one: the generic tier has
// none (its f16 widening is a table lookup, bounded by its FMA ceiling).
func F16FMA(t isa.Tier, iters int) (float32, bool) {
	if k := kernelsFor(t); k != nil {
		return k.f16fma(iters), true
	}
	return 0, false
}

// Q8FMA is F16FMA with the operands widened from int8 (VPMOVSXBD,
// VCVTDQ2PS): the FMA rate of P·V over a q8_0 cache, its blocks' scales
// left out.
func Q8FMA(t isa.Tier, iters int) (float32, bool) {
	if k := kernelsFor(t); k != nil {
		return k.q8fma(iters), true
	}
	return 0, false
}

// Q8Decode runs iters rounds of the q8_0 decode ceiling kernel of t (the
// arithmetic of Q8DecodeKeys keys of hd 128: Q·K as int8 dots against a
// quantized query and P·V widening V, every block's f16 scale included;
// nothing else) and reports whether t has one. FLOPs per round:
// Q8DecodeFlopsPerIter, as a decode counts them.
func Q8Decode(t isa.Tier, iters int) (float32, bool) {
	if k := kernelsFor(t); k != nil && k.q8dec != nil {
		return k.q8dec(&q8DecodeRows()[0], iters), true
	}
	return 0, false
}

// Q8DecodeKeys is the keys (hd 128) of one round of Q8Decode.
const Q8DecodeKeys = 8

// Q8DecodeFlopsPerIter is the FLOP count of one round of Q8Decode: 4·D a
// key (2·D for Q·K, 2·D for P·V), D = 128.
const Q8DecodeFlopsPerIter = Q8DecodeKeys * 4 * 128

// q8DecodeRows returns Q8Decode's input, made on first use: 1 +
// 2·Q8DecodeKeys q8_0 rows of hd 128 (the query, the K rows, the V rows; 4
// blocks of 34 bytes each), and slack (AVX-512 reads a block's 32 values
// as 32 bytes): every scale 0.01 (f16 0x211f), the values −3…3, so no
// value is a NaN or subnormal that could slow an instruction down.
var q8DecodeRows = sync.OnceValue(func() []byte {
	const rows = 1 + 2*Q8DecodeKeys
	b := make([]byte, rows*4*34+64)
	for blk := range rows * 4 {
		o := blk * 34
		b[o], b[o+1] = 0x1f, 0x21
		for j := range 32 {
			b[o+2+j] = byte(int8((blk+j)%7 - 3))
		}
	}
	return b
})

// genericChains is the number of independent float32 chains of fmaGeneric
// (and of its amd64 asm twin, fmaScalar).
const genericChains = 12

// Int8OpsPerIter is the op count of one iteration of Int8(t): every
// accumulator takes one vector of unsigned × signed int8 multiply-adds,
// 2 ops each (the generic tier: one scalar multiply-add per chain).
func Int8OpsPerIter(t isa.Tier) float64 {
	k := kernelsFor(t)
	if k == nil {
		return genericInt8Chains * 2
	}
	return float64(int8Chains(t) * k.vb * 2)
}

// Int8 runs iters iterations of the int8 dot-product peak kernel of t
// (VPMADDUBSW+VPMADDWD on avx2/avx512, VPDPBUSD on avx512vnni; the
// generic tier: what pure Go does, scalar int32 multiply-adds of widened
// int8 values on independent chains).
func Int8(t isa.Tier, iters int) int32 {
	if k := kernelsFor(t); k != nil {
		return k.int8(iters)
	}
	return int8Generic(iters)
}

// genericInt8Chains is the number of independent chains of int8Generic.
const genericInt8Chains = 12

// int8Generic is the generic tier's int8 ceiling: each chain multiplies
// its running value by a widened int8 and adds another, as the generic
// dot product does per pair (one multiply, one add: 2 ops). The chain
// feeds the multiply, so nothing can be hoisted out of the loop.
func int8Generic(iters int) int32 {
	const a, b = int32(int8(-3)), int32(uint8(201))
	x0, x1, x2, x3 := int32(1), int32(2), int32(3), int32(4)
	x4, x5, x6, x7 := int32(5), int32(6), int32(7), int32(8)
	x8, x9, x10, x11 := int32(9), int32(10), int32(11), int32(12)
	for range iters {
		x0, x1, x2, x3 = x0*a+b, x1*a+b, x2*a+b, x3*a+b
		x4, x5, x6, x7 = x4*a+b, x5*a+b, x6*a+b, x7*a+b
		x8, x9, x10, x11 = x8*a+b, x9*a+b, x10*a+b, x11*a+b
	}
	return x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7 ^ x8 ^ x9 ^ x10 ^ x11
}

// FMAClock runs iters rounds of the tier's FMAs beside a dependent add
// chain that sets the pace, and returns the adds done (= core cycles);
// 0 when t has no such kernel. Its time gives the core clock under the
// tier's vector load.
func FMAClock(t isa.Tier, iters int) int {
	if k := kernelsFor(t); k != nil {
		return k.fmaClk(iters)
	}
	return 0
}

// TSCGHz measures the time-stamp counter's rate against the OS clock over
// 50 ms (0 where the build has no RDTSC kernel). The TSC ticks at a fixed
// rate that is neither the core clock nor its cycles.
func TSCGHz() float64 {
	if !haveClockChain {
		return 0
	}
	t0, c0 := time.Now(), rdtscAsm()
	time.Sleep(50 * time.Millisecond)
	c1, t1 := rdtscAsm(), time.Now()
	return float64(c1-c0) / float64(t1.Sub(t0).Nanoseconds())
}

// ClockChain runs n rounds of 8 dependent integer adds (8n core cycles)
// and reports whether this build has the kernel (amd64 only today).
func ClockChain(n int) (int, bool) {
	return clockChainAsm(n), haveClockChain
}
