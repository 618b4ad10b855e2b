package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// gemvQ4_0Pairs is gemvQ8 for q4_0 in the AVX-512 tiers: two 32-weight
// blocks per 512-bit vector, lanes 0–7 block b and 8–15 block b+1. The
// nibbles of a block are broadcast to both 128-bit halves of a 256-bit
// half and shifted by 0 or 4 per qword (VPSRLVQ), so that its low nibbles
// (weights 0–15) meet activations 0–15 and its high nibbles weights 16–31,
// without a shuffle. An odd last block runs through the 256-bit body.
func gemvQ4_0Pairs(t tier, rb int) {
	f := q4_0
	name := fmt.Sprintf("gemvQ8%s%sR%d", f.name, t.name, rb)
	w, s, xq, nb := kernel(name, fmt.Sprintf("%s computes %d rows of a %s × Q8_0 GEMV (%s tier, two blocks per vector).", name, rb, f.name, t.name), "xq", "*byte")
	row := GP64()
	acc := make([]VecVirtual, rb)
	for r := range acc {
		acc[r] = ZMM()
		VPXORD(acc[r], acc[r], acc[r])
	}
	nibble, eight, shifts := ZMM(), ZMM(), ZMM()
	VBROADCASTI64X4(kc(cNibble), nibble)
	VBROADCASTI64X4(kc(cEight), eight)
	VBROADCASTI64X4(kc(cShift4), shifts)
	pairs := GP64()
	MOVQ(nb, pairs)
	SHRQ(U8(1), pairs)
	loop, tail := "loop"+name, "tail"+name
	JZ(LabelRef(tail))
	Label(loop)

	// Shared by the rows: two blocks of activations, their scales, and
	// −8·Σy per lane.
	yv := ZMM()
	VMOVDQU64(Mem{Base: xq, Disp: 2}, yv.AsY())
	VINSERTI64X4(Imm(1), Mem{Base: xq, Disp: 2 + actBytes}, yv, yv)
	dy := ZMM()
	pairHalves(t, Mem{Base: xq}, Mem{Base: xq, Disp: actBytes}, dy)
	e := t.dotZ(eight, yv, nil)
	neg8 := ZMM()
	VPXORD(neg8, neg8, neg8)
	VPSUBD(e, neg8, neg8)
	MOVQ(w, row)
	for r := range rb {
		if r > 0 {
			ADDQ(s, row)
		}
		prefetchRow(func(off int) Mem { return Mem{Base: row, Disp: off} }, 2*f.bytes)
		lo, hi, q := YMM(), YMM(), ZMM()
		VBROADCASTI32X4(Mem{Base: row, Disp: 2}, lo)
		VBROADCASTI32X4(Mem{Base: row, Disp: 2 + f.bytes}, hi)
		VINSERTI64X4(Imm(1), hi, lo.AsZ(), q)
		VPSRLVQ(shifts, q, q)
		VPANDD(nibble, q, q)
		p := t.dotZ(q, yv, neg8)
		VCVTDQ2PS(p, p)
		d := ZMM()
		pairHalves(t, Mem{Base: row}, Mem{Base: row, Disp: f.bytes}, d)
		VMULPS(dy, d, d)
		VFMADD231PS(d, p, acc[r])
	}
	ADDQ(U32(2*f.bytes), w)
	ADDQ(U32(2*actBytes), xq)
	DECQ(pairs)
	JNZ(LabelRef(loop))

	Label(tail)
	// Fold each accumulator to 256 bits, then the odd block, if any.
	accY := make([]VecVirtual, rb)
	for r := range rb {
		accY[r] = YMM()
		VEXTRACTF64X4(Imm(1), acc[r], accY[r])
		VADDPS(acc[r].AsY(), accY[r], accY[r])
	}
	done := "done" + name
	TESTQ(U32(1), nb)
	JZ(LabelRef(done))
	oneBlockQ4_0(t, w, s, xq, rb, accY)
	Label(done)
	t.storeRows(accY)
}

// pairHalves sets dst to 8 lanes of the f16 at a, then 8 of the one at b.
func pairHalves(t tier, a, b Mem, dst VecVirtual) {
	ha, hb := XMM(), XMM()
	VPBROADCASTW(a, ha)
	VPBROADCASTW(b, hb)
	h := YMM()
	VINSERTI32X4(Imm(1), hb, ha.AsY(), h)
	VCVTPH2PS(h, dst)
}

// dotZ is dotU8S8 on 512-bit vectors.
func (t tier) dotZ(u VecVirtual, s Op, add VecVirtual) VecVirtual {
	p := ZMM()
	if t.vnni {
		if add != nil {
			VMOVDQA32(add, p)
		} else {
			VPXORD(p, p, p)
		}
		VPDPBUSD(s, u, p)
		return p
	}
	VPMADDUBSW(s, u, p)
	VPMADDWD(kc(cOnes16Z), p, p)
	if add != nil {
		VPADDD(add, p, p)
	}
	return p
}

// oneBlockQ4_0 adds one q4_0 block of rb rows (the 256-bit body of gemvQ8).
func oneBlockQ4_0(t tier, w, s, xq GPVirtual, rb int, acc []VecVirtual) {
	eight, nibble := YMM(), YMM()
	t.loadu(kc(cEight), eight)
	t.loadu(kc(cNibble), nibble)
	yv, dy, neg8, _ := t.q8_0Shared(q4_0, xq, eight, nil)
	row := GP64()
	MOVQ(w, row)
	for r := range rb {
		if r > 0 {
			ADDQ(s, row)
		}
		p := t.q4_0Dot(Mem{Base: row, Disp: 2}, yv, nibble, neg8)
		t.addScaled(p, Mem{Base: row}, dy, acc[r])
	}
}
