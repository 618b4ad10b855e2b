package main

import (
	. "github.com/ckbench/ckbench/kernels/_vecgen"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// tier is one vector ISA level (vecgen.Tier: width and register kind) for
// a KV cache of one element type.
type tier struct {
	Tier
	kv elem // the KV cache's element type
	// pos: the flash kernels for a position-major cache (names end in
	// Pos), whose K and V rows are stride > row bytes apart: the same
	// code but for the software prefetch, which walks rows (stepRows).
	pos bool
}

// elem is a KV element type: f32 (size 4), f16 (size 2, widened by
// VCVTPH2PS as it is loaded) or q8_0 (q8 set: blocks of 32 int8 values
// and an f16 scale, 34 bytes: K's in int8 dots against the quantized
// query, V's dequantized in registers).
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
func (t tier) kb() int { return t.W * t.kv.size }

// blockBytes is the bytes of a row's column block of nb vectors: nb·kb,
// or for q8_0 its whole blocks of 34 bytes.
func (t tier) blockBytes(nb int) int {
	if t.kv.q8 {
		return nb * t.W / q8Block * q8BlockBytes
	}
	return nb * t.kb()
}

// kvLoad loads one vector of K or V values at m, widened to float32.
func (t tier) kvLoad(m Mem) VecVirtual {
	x := t.Vec()
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
	avx2   = tier{Tier: AVX2}
	avx512 = tier{Tier: AVX512}
)

// reduce8 returns a ymm whose lane i is the sum of all lanes of acc[i].
func (t tier) reduce8(acc [8]VecVirtual) VecVirtual {
	if t.W == 16 {
		return reduce8Z(acc)
	}
	var y [8]Register
	for i, a := range acc {
		y[i] = t.Fold256(a, VADDPS)
	}
	var h [4]Register
	for i := range h {
		h[i] = t.hadd(y[2*i], y[2*i+1]) // [a0+a1, a2+a3, b0+b1, b2+b3 | same for the high lane]
	}
	lo03 := t.hadd(h[0], h[1]) // per 128-bit lane: partial sums of acc 0..3
	lo47 := t.hadd(h[2], h[3]) //                   and of acc 4..7
	a, b := YMM(), YMM()
	if t.W == 16 {
		VSHUFF32X4(Imm(0), lo47, lo03, a) // low lanes:  [acc0..3 | acc4..7]
		VSHUFF32X4(Imm(3), lo47, lo03, b) // high lanes
	} else {
		VPERM2F128(Imm(0x20), lo47, lo03, a)
		VPERM2F128(Imm(0x31), lo47, lo03, b)
	}
	VADDPS(b, a, a)
	return a
}

// reduce4 returns an xmm whose lane i is the sum of all lanes of acc[i]
// (four ymm, or four zmm: reduce4Z).
func (t tier) reduce4(acc []VecVirtual) VecVirtual {
	if t.W == 16 {
		return t.reduce4Z(acc)
	}
	h := t.hadd(t.hadd(acc[0], acc[1]), t.hadd(acc[2], acc[3])) // per 128-bit lane: [Σacc0 … Σacc3]
	x := XMM()
	VEXTRACTF128(Imm(1), h, x)
	VADDPS(h.AsX(), x, x)
	return x
}

// reduce8Z is reduce8 for zmm accumulators as a transposing tree: 128-bit
// lanes of pairs first (VSHUFF32X4), then floats within lanes (VSHUFPS),
// then one VPERMPS to order the eight sums: 17 shuffles and 8 adds, where
// folding each zmm to a ymm and then running VHADDPS trees takes 22 and 15.
//
// Two other trees, measured on Zen 5 (AVX-512 GQA calls at ctx 64–1024,
// one process per run, paired rounds, median B/A of 12): level 1 as one
// VSHUFF32X4 and two VADDPS, the second merge-masked to the upper half,
// 0.99–1.02; floats within lanes first (VSHUFPS), 4 cross-lane shuffles
// where this takes 13, f16 64:8 0.98 but f32 32:8 1.08 and 64:8 1.02. Yet
// on their own, beside 16 independent FMAs (7.8 cycles), 16 VSHUFPS or
// VBLENDMPS cost nothing, 16 VSHUFF32X4 or VPERMPS 3.6 cycles, VPERMT2PS
// 5.4. No reduction at all (timing only) took 0.93–0.97 of the time: the
// reductions are not where scores4 loses a quarter of the FMA roof.
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
	return reduceLanes(s)
}

// reduce4Z is reduce4 for zmm accumulators: their tree at full width
// first (VSHUFPS and VADDPS work in each 128-bit lane: two levels leave
// each lane [Σ0 Σ1 Σ2 Σ3] of its part), then the four lanes folded, 13
// instructions where folding each accumulator to a ymm first (the ymm
// tree of reduce4) took 19. Against that (Zen 5 family 26 model 2,
// 2026-12-02, the lone fused loop, tile 128, sweeps alternated, 5
// rounds, share of the paired kv-read): hd 128 in L3 (ctx 4096)
// 89.6–94.9 %, medians 92.6 and 92.6, against 87.4–91.7 (89.2 and 89.0),
// hd 64 (ctx 8192) 84.7–88.9 (88.3) against 83.3–86.2 (83.9), from DRAM
// (ctx 32768 --cold) 92.9–98.9 (96.7) against 94.7–97.3 (95.6).
func (t tier) reduce4Z(acc []VecVirtual) VecVirtual {
	hadd := func(a, b Register) VecVirtual { return haddLanes(a, b, ZMM) }
	h := hadd(hadd(acc[0], acc[1]), hadd(acc[2], acc[3]))
	y := t.Fold256(h, VADDPS)
	x := XMM()
	VEXTRACTF32X4(Imm(1), y, x)
	VADDPS(y.(VecVirtual).AsX(), x, x)
	return x
}

// reduceLanes is reduce8Z from its second level on: 128-bit lanes 0 and 1
// of s[i] hold partial sums of acc 2i, lanes 2 and 3 of acc 2i+1. So are
// the accumulators of row pairs laid out (q8DotPair: row 2i in the low
// eight lanes, row 2i+1 in the high), which it reduces whole.
func reduceLanes(s [4]VecVirtual) VecVirtual {
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
	VMOVUPS(KC(CReduceIdx), idx)
	VPERMPS(p, idx, p)
	return p.AsY().(VecVirtual)
}

// hadd is VHADDPS(a, b) on ymm: per 128-bit lane [a0+a1, a2+a3, b0+b1, b2+b3].
func (t tier) hadd(a, b Register) VecVirtual {
	if t.W == 8 {
		r := YMM()
		VHADDPS(b, a, r)
		return r
	}
	return haddLanes(a, b, YMM)
}

// haddLanes is VHADDPS(a, b) by shuffles, at the width of vec's
// registers (ymm or zmm; VHADDPS has no EVEX form): per 128-bit lane
// [a0+a1, a2+a3, b0+b1, b2+b3].
func haddLanes(a, b Register, vec func() VecVirtual) VecVirtual {
	even, odd, r := vec(), vec(), vec()
	VSHUFPS(Imm(0x88), b, a, even) // [a0, a2, b0, b2]
	VSHUFPS(Imm(0xDD), b, a, odd)  // [a1, a3, b1, b3]
	VADDPS(odd, even, r)
	return r
}

// reduce2 returns [Σa, Σb, Σa, Σb]: two AVX2 accumulators summed (an xmm).
func (t tier) reduce2(a, b VecVirtual) VecVirtual {
	h := t.hadd(a, b)
	h = t.hadd(h, h)
	x := XMM()
	VEXTRACTF128(Imm(1), h, x)
	VADDPS(h.AsX(), x, x)
	return x
}
