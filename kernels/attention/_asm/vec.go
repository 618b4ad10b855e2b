package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// tier is one vector ISA level. The AVX2 and AVX-512 kernels share every
// line of generator code except where the ISAs differ (register width, the
// 512→256 fold of a reduction, and 2^n scaling in the exact exp).
type tier struct {
	name string // suffix of the generated function names
	w    int    // float32 lanes per vector
	vec  func() VecVirtual
	kv   elem // the KV cache's element type
}

// elem is a KV element type: f32 (size 4), f16 (size 2, widened by
// VCVTPH2PS as it is loaded) or q8_0 (q8 set: blocks of 32 int8 values
// and an f16 scale, 34 bytes, dequantized in registers).
type elem struct {
	name string // infix of the generated function names: "", "F16", "Q8"
	size int    // bytes per value (f32, f16)
	q8   bool
}

var (
	f32 = elem{name: "", size: 4}
	f16 = elem{name: "F16", size: 2}
	q8  = elem{name: "Q8", q8: true}
)

// with returns t for a cache of element type e.
func (t tier) with(e elem) tier { t.kv = e; return t }

// ratio is the size of a float32 over that of a KV value (1 or 2): q
// and o advance ratio bytes per byte of K or V.
func (t tier) ratio() int { return 4 / max(t.kv.size, 1) }

// kb is the bytes of K or V that fill one vector register.
func (t tier) kb() int { return t.w * t.kv.size }

// kvLoad loads one vector of K or V values at m, widened to float32.
func (t tier) kvLoad(m Mem) VecVirtual {
	x := t.vec()
	if t.kv.size == 2 {
		VCVTPH2PS(m, x)
	} else {
		VMOVUPS(m, x)
	}
	return x
}

// kvFMA is acc += (K or V vector at m)·x.
func (t tier) kvFMA(m Mem, x, acc VecVirtual) {
	if t.kv.size == 2 {
		VFMADD231PS(t.kvLoad(m), x, acc)
		return
	}
	VFMADD231PS(m, x, acc)
}

// qAt addresses the q vector that goes with the K bytes at p0+off, given
// qd = q − ratio·row0: q + ratio·(p0 − row0) + ratio·off.
func (t tier) qAt(p0, qd GPVirtual, off int) Mem {
	if t.ratio() == 1 {
		return Mem{Base: p0, Index: qd, Scale: 1, Disp: off}
	}
	return Mem{Base: qd, Index: p0, Scale: uint8(t.ratio()), Disp: off * t.ratio()}
}

// qDelta sets qd = q − ratio·row (see qAt).
func (t tier) qDelta(qd GPVirtual, q Op, row GPVirtual) {
	MOVQ(q, qd)
	for range t.ratio() {
		SUBQ(row, qd)
	}
}

var (
	avx2   = tier{name: "AVX2", w: 8, vec: YMM}
	avx512 = tier{name: "AVX512", w: 16, vec: ZMM}
)

// vb is the size of one vector in bytes.
func (t tier) vb() int { return 4 * t.w }

// Broadcast constants, one 64-byte row each, so that a ymm or zmm memory
// operand at row i reads 8 or 16 copies of the value.
const (
	cNegInf = iota
	cOne
	cLog2e
	cBias127 // int32
	cFastLo
	cFastHi
	cFastC1
	cFastC2
	cFastC3
	cFastC4
	cExactLo  // below this exp(x) is flushed to 0 (AVX2)
	cExactLoZ // clamp for AVX-512, where VSCALEFPS underflows gracefully
	cExactHi  // exp(88) < MaxFloat32
	cLn2Hi    // ln 2 = cLn2Hi + cLn2Lo (Cody–Waite)
	cLn2Lo
	cP0 // Cephes expf polynomial: e^r ≈ 1 + r + r²·P(r)
	cP1
	cP2
	cP3
	cP4
	cP5
	cZero
	cReduceIdx // int32 lane indices for reduce8Z
	nConsts
)

var constTable Mem

// reduceIdx picks lane 0 of each 128-bit lane, then lane 1 (see reduce8Z).
var reduceIdx = [16]uint32{0, 4, 8, 12, 1, 5, 9, 13}

func emitConsts() {
	vals := [nConsts]uint32{
		cNegInf:   math.Float32bits(float32(math.Inf(-1))),
		cOne:      math.Float32bits(1),
		cLog2e:    math.Float32bits(math.Log2E),
		cBias127:  127,
		cFastLo:   math.Float32bits(-88),
		cFastHi:   math.Float32bits(88),
		cFastC1:   math.Float32bits(0.6931471805599453),
		cFastC2:   math.Float32bits(0.2402265069591007),
		cFastC3:   math.Float32bits(0.05550410866482158),
		cFastC4:   math.Float32bits(0.009618129107628478),
		cExactLo:  math.Float32bits(-87.33654), // ln(2^-126): smallest normal result
		cExactLoZ: math.Float32bits(-104),      // e^-104 < 2^-149: underflows to 0
		cExactHi:  math.Float32bits(88),
		cLn2Hi:    math.Float32bits(0.693359375),
		cLn2Lo:    math.Float32bits(-2.12194440e-4),
		cP0:       math.Float32bits(1.9875691500e-4),
		cP1:       math.Float32bits(1.3981999507e-3),
		cP2:       math.Float32bits(8.3334519073e-3),
		cP3:       math.Float32bits(4.1665795894e-2),
		cP4:       math.Float32bits(1.6666665459e-1),
		cP5:       math.Float32bits(5.0000001201e-1),
		cZero:     0,
	}
	constTable = GLOBL("expconst", RODATA|NOPTR)
	for i, v := range vals {
		for lane := 0; lane < 16; lane++ {
			if i == cReduceIdx {
				v = reduceIdx[lane]
			}
			DATA(64*i+4*lane, U32(v))
		}
	}
}

// kc is the memory operand of broadcast constant i.
func kc(i int) Mem { return constTable.Offset(64 * i) }

var labels = map[string]int{}

// label returns a fresh label name with the given stem.
func label(stem string) string {
	labels[stem]++
	return fmt.Sprintf("%s_%d", stem, labels[stem])
}

// clamp limits x to [lo, hi] (constants) and lets NaN through: x is the
// second source of VMAXPS/VMINPS, which is what they return when either
// source is NaN. (With the constant as a memory operand, the only form
// that takes one, NaN would become lo: a NaN score turned into a weight.)
func (t tier) clamp(x VecVirtual, lo, hi int) {
	c := t.vec()
	VMOVUPS(kc(lo), c)
	VMAXPS(x, c, x)
	VMOVUPS(kc(hi), c)
	VMINPS(x, c, x)
}

// expFast overwrites x with CKE's polynomial exp of x (DESIGN.md §1); NaN
// stays NaN.
func (t tier) expFast(x VecVirtual) {
	t.clamp(x, cFastLo, cFastHi)
	VMULPS(kc(cLog2e), x, x) // z
	n := t.vec()
	VCVTPS2DQ(x, n) // round to nearest even (MXCSR default)
	nf := t.vec()
	VCVTDQ2PS(n, nf)
	VSUBPS(nf, x, x) // f = z - n
	p := t.vec()
	VMOVUPS(kc(cFastC4), p)
	VFMADD213PS(kc(cFastC3), x, p)
	VFMADD213PS(kc(cFastC2), x, p)
	VFMADD213PS(kc(cFastC1), x, p)
	VFMADD213PS(kc(cOne), x, p)
	VPADDD(kc(cBias127), n, n)
	VPSLLD(Imm(23), n, n) // 2^n in the exponent field; n = -127 gives +0
	VMULPS(n, p, x)
}

// expExact overwrites x with an accurate exp (≤ 2 ulp): Cody–Waite range
// reduction x = n·ln2 + r with ln 2 split in two constants, then the Cephes
// degree-5 minimax polynomial for e^r on |r| ≤ ln2/2, then a scale by 2^n.
// NaN stays NaN; −Inf gives 0.
func (t tier) expExact(x VecVirtual) {
	var keep VecVirtual
	if t.w == 16 {
		t.clamp(x, cExactLoZ, cExactHi)
	} else {
		keep = t.vec()
		VCMPPS(Imm(0x05), kc(cExactLo), x, keep) // !(x < lo) (NLT_US): false for -Inf, true for NaN
		t.clamp(x, cExactLo, cExactHi)
	}
	nf := t.vec()
	VMULPS(kc(cLog2e), x, nf)
	n := t.vec()
	VCVTPS2DQ(nf, n)
	VCVTDQ2PS(n, nf)
	VFNMADD231PS(kc(cLn2Hi), nf, x) // r = x - n·ln2hi
	VFNMADD231PS(kc(cLn2Lo), nf, x) //   - n·ln2lo
	p := t.vec()
	VMOVUPS(kc(cP0), p)
	for _, c := range []int{cP1, cP2, cP3, cP4, cP5} {
		VFMADD213PS(kc(c), x, p)
	}
	r2 := t.vec()
	VMULPS(x, x, r2)
	VFMADD213PS(x, r2, p) // r²·P(r) + r
	VADDPS(kc(cOne), p, p)
	if t.w == 16 {
		VSCALEFPS(nf, p, x) // p·2^n, underflowing to denormals and 0
		return
	}
	VPADDD(kc(cBias127), n, n)
	VPSLLD(Imm(23), n, n)
	VMULPS(n, p, x)
	VANDPS(keep, x, x) // flush results below the smallest normal to 0
}

func (t tier) exp(fast bool, x VecVirtual) {
	if fast {
		t.expFast(x)
	} else {
		t.expExact(x)
	}
}

// fold256 returns a ymm holding the pairwise sum (or max) of the two halves
// of a zmm; for AVX2 it returns v itself.
func (t tier) fold256(v VecVirtual, op func(...Op)) Register {
	if t.w == 8 {
		return v
	}
	hi := YMM()
	VEXTRACTF64X4(Imm(1), v, hi)
	op(hi, v.AsY(), hi)
	return hi
}

// hreduce folds all lanes of v with op (VADDPS or VMAXPS) into lane 0 of
// the returned xmm.
func (t tier) hreduce(v VecVirtual, op func(...Op)) VecVirtual {
	return t.hreduce128(t.fold256(v, op), op)
}

// The AVX-512 tier may be given registers 16–31, which only EVEX encodings
// reach: it must use EVEX forms (VEXTRACTF32X4 for VEXTRACTF128,
// VSHUFF32X4 for VPERM2F128, shuffles for VHADDPS, a zero load for VXORPS, the
// latter also because VXORPS on zmm is AVX512DQ, outside the tier).

// zero clears v.
//
// AVX-512 loads zeros from the constant table: avo's liveness analysis
// knows VXORPS x,x,x as a zeroing idiom but not VPXORD, and would keep the
// register live from the function entry.
func (t tier) zero(v VecVirtual) {
	if t.w == 16 {
		VMOVUPS(kc(cZero), v)
		return
	}
	VXORPS(v, v, v)
}

// hreduce128 folds the eight lanes of a ymm with op into lane 0 of an xmm.
func (t tier) hreduce128(y Register, op func(...Op)) VecVirtual {
	x := XMM()
	if t.w == 16 {
		VEXTRACTF32X4(Imm(1), y, x)
	} else {
		VEXTRACTF128(Imm(1), y, x)
	}
	op(y.(VecVirtual).AsX(), x, x)
	h := XMM()
	VMOVHLPS(x, x, h)
	op(h, x, x)
	VMOVSHDUP(x, h)
	op(h, x, x)
	return x
}

// reduce8 returns a ymm whose lane i is the sum of all lanes of acc[i].
func (t tier) reduce8(acc [8]VecVirtual) VecVirtual {
	if t.w == 16 {
		return reduce8Z(acc)
	}
	var y [8]Register
	for i, a := range acc {
		y[i] = t.fold256(a, VADDPS)
	}
	var h [4]Register
	for i := range h {
		h[i] = t.hadd(y[2*i], y[2*i+1]) // [a0+a1, a2+a3, b0+b1, b2+b3 | same for the high lane]
	}
	lo03 := t.hadd(h[0], h[1]) // per 128-bit lane: partial sums of acc 0..3
	lo47 := t.hadd(h[2], h[3]) //                   and of acc 4..7
	a, b := YMM(), YMM()
	if t.w == 16 {
		VSHUFF32X4(Imm(0), lo47, lo03, a) // low lanes:  [acc0..3 | acc4..7]
		VSHUFF32X4(Imm(3), lo47, lo03, b) // high lanes
	} else {
		VPERM2F128(Imm(0x20), lo47, lo03, a)
		VPERM2F128(Imm(0x31), lo47, lo03, b)
	}
	VADDPS(b, a, a)
	return a
}

// reduce8Z is reduce8 for zmm accumulators as a transposing tree: 128-bit
// lanes of pairs first (VSHUFF32X4), then floats within lanes (VSHUFPS),
// then one VPERMPS to order the eight sums: 17 shuffles and 8 adds, where
// folding each zmm to a ymm and then running VHADDPS trees takes 22 and 15.
func reduce8Z(a [8]VecVirtual) VecVirtual {
	// Level 1: (a0,a1) → [A0+A2, A1+A3, B0+B2, B1+B3] in 128-bit lanes.
	var s [4]VecVirtual
	for i := range s {
		u, v := ZMM(), ZMM()
		VSHUFF32X4(Imm(0x44), a[2*i+1], a[2*i], u) // [A0 A1 B0 B1]
		VSHUFF32X4(Imm(0xEE), a[2*i+1], a[2*i], v) // [A2 A3 B2 B3]
		VADDPS(v, u, u)
		s[i] = u
	}
	// Level 2: lane i of t[j] holds a 4-float partial sum of acc 4j+i.
	var t [2]VecVirtual
	for j := range t {
		u, v := ZMM(), ZMM()
		VSHUFF32X4(Imm(0x88), s[2*j+1], s[2*j], u)
		VSHUFF32X4(Imm(0xDD), s[2*j+1], s[2*j], v)
		VADDPS(v, u, u)
		t[j] = u
	}
	// Level 3: within each lane, [x0 x1 x2 x3], [y0 y1 y2 y3] → [Σx, Σy, Σx, Σy].
	p, q := ZMM(), ZMM()
	VSHUFPS(Imm(0x88), t[1], t[0], p) // [x0 x2 y0 y2]
	VSHUFPS(Imm(0xDD), t[1], t[0], q) // [x1 x3 y1 y3]
	VADDPS(q, p, p)
	VSHUFPS(Imm(0x88), p, p, q) // [r0 r2 r0 r2]
	VSHUFPS(Imm(0xDD), p, p, p) // [r1 r3 r1 r3]
	VADDPS(q, p, p)
	// Lane i is [acc i, acc 4+i, ...]: gather into [acc 0 … acc 7].
	idx := ZMM()
	VMOVUPS(kc(cReduceIdx), idx)
	VPERMPS(p, idx, p)
	return p.AsY().(VecVirtual)
}

// hadd is VHADDPS(a, b) on ymm: per 128-bit lane [a0+a1, a2+a3, b0+b1, b2+b3].
func (t tier) hadd(a, b Register) VecVirtual {
	r := YMM()
	if t.w == 8 {
		VHADDPS(b, a, r)
		return r
	}
	even, odd := YMM(), YMM()
	VSHUFPS(Imm(0x88), b, a, even) // [a0, a2, b0, b2]
	VSHUFPS(Imm(0xDD), b, a, odd)  // [a1, a3, b1, b3]
	VADDPS(odd, even, r)
	return r
}
