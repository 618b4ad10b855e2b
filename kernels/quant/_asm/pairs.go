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
	nibble, eight, shifts, d9 := ZMM(), ZMM(), ZMM(), ZMM()
	VBROADCASTI32X4(kc(cD9), d9)
	VBROADCASTI64X4(kc(cNibble), nibble)
	VBROADCASTI64X4(kc(cEight), eight)
	VBROADCASTI64X4(kc(cShift4), shifts)
	// Groups of 8 blocks first (up to 4 rows per pass: with more, avo runs
	// out of the registers these forms allow): the 8 block scales of a row
	// are gathered and converted once (d·dy for 8 blocks in one vector)
	// and handed to each pair by a lane permute, which keeps the f16
	// conversions and multiplies off the port the 512-bit integer and FMA
	// work needs.
	pairsStart := "pairs" + name
	np := newNextPass(w, s, rb, 8*rb*f.bytes)
	if rb <= 4 {
		octets := GP64()
		MOVQ(nb, octets)
		SHRQ(U8(3), octets)
		octLoop := "oct" + name
		// Index vectors of the quads, in registers for the whole loop.
		var qIdx, lanes [2]VecVirtual
		for k := range 2 {
			qIdx[k], lanes[k] = ZMM(), ZMM()
			VMOVDQU64(kc(cQuad+2*k), qIdx[k])
			VMOVDQU64(kc(cQuadLanes+2*k), lanes[k])
		}
		// The activations in the quads' layout, prepared once per call
		// (prepQ4_0): after the nb Q8_0 blocks, octAct bytes per octet.
		prep := GP64()
		IMUL3Q(U32(actBytes), nb, prep)
		ADDQ(xq, prep)
		TESTQ(octets, octets)
		JZ(LabelRef(pairsStart))
		Label(octLoop)
		np.step()
		dy8 := YMM()
		VMOVUPS(Mem{Base: prep, Disp: octDy}, dy8)
		s8 := make([]VecVirtual, rb)
		MOVQ(w, row)
		for r := range rb {
			if r > 0 {
				ADDQ(s, row)
			}
			s8[r] = ZMM()
			q4_0Scales8(Mem{Base: row}, d9, s8[r])
			VMULPS(dy8, s8[r].AsY(), s8[r].AsY())
		}
		for qd := range 2 {
			ylo, yhi, neg8 := Mem{Base: prep, Disp: octYlo + 128*qd}, Mem{Base: prep, Disp: octYlo + 128*qd + 64}, Mem{Base: prep, Disp: octNeg8 + 64*qd}
			MOVQ(w, row)
			for r := range rb {
				if r > 0 {
					ADDQ(s, row)
				}
				prefetchRow(func(o int) Mem { return Mem{Base: row, Disp: o + 4*qd*f.bytes} }, 4*f.bytes, prefetchDist(rb))
				p := t.q4_0QuadDot(row, qd, qIdx[qd], ylo, yhi, neg8, nibble)
				VCVTDQ2PS(p, p)
				d := ZMM()
				VPERMPS(s8[r], lanes[qd], d)
				VFMADD231PS(d, p, acc[r])
			}
		}
		ADDQ(U32(8*f.bytes), w)
		ADDQ(U32(8*actBytes), xq)
		ADDQ(U32(octAct), prep)
		DECQ(octets)
		JNZ(LabelRef(octLoop))

	}
	Label(pairsStart)
	pairs := GP64()
	MOVQ(nb, pairs)
	if rb <= 4 {
		ANDQ(U8(7), pairs) // the octets took the rest
	}
	SHRQ(U8(1), pairs)
	loop, tail := "loop"+name, "tail"+name
	JZ(LabelRef(tail))
	Label(loop)
	np.stepBytes(2 * rb * f.bytes)

	// Shared by the rows: two blocks of activations, their scales, and
	// −8·Σy per lane.
	yv, neg8 := t.q4_0PairShared(xq, 0, eight)
	dy := ZMM()
	pairHalves(t, Mem{Base: xq}, Mem{Base: xq, Disp: actBytes}, dy)
	MOVQ(w, row)
	for r := range rb {
		if r > 0 {
			ADDQ(s, row)
		}
		prefetchRow(func(off int) Mem { return Mem{Base: row, Disp: off} }, 2*f.bytes, prefetchDist(rb))
		p := t.q4_0PairDot(Mem{Base: row}, f, yv, neg8, shifts, nibble)
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

// The octets of gemvQ4_0Pairs go four blocks to a 512-bit vector (a
// quad): 128-bit lane j holds the 16 nibble bytes of block j, so that one
// AND gives the low nibbles (weights 0–15) of all four and one shift and
// AND the high ones (16–31), each against activations laid out to match;
// one VPDPBUSD per half, one conversion, permute and FMA per quad. Per 256
// weights and row that is about 24 vector uops against 36 in pairs.
//
// The permutes (VPERMT2W, two tables of 64 bytes) gather 16-byte runs at
// even offsets; the tables are placed so that no read passes the octet's
// 144 weight bytes or 272 activation bytes (the last octet of a buffer
// ends its allocation). quadIdx[k](w) is word w of index vector k:
//
//	0  weights, quad 0, tables at 0 and 64: block j's nibbles at byte 2+18j
//	1  weights, quad 1, tables at 16 and 80: block 4+j's at byte 74+18j
//	2  activations at bytes 2+34j of tables at base and base+64 (low halves
//	   of quad 0 from 0, high halves of quad 0 from 16, low of quad 1 from 136)
//	3  activations, high halves of quad 1, tables at 144 and 208: at 154+34j
var quadIdx = [4]func(w int) int{
	func(w int) int { return 1 + 9*(w/8) + w%8 },
	func(w int) int { return 29 + 9*(w/8) + w%8 },
	func(w int) int { return 1 + 17*(w/8) + w%8 },
	func(w int) int { return 5 + 17*(w/8) + w%8 },
}

// The prepared activations of one octet (prepQ4_0), octAct bytes: per
// quad the low and high halves (64 bytes each), then −8·Σy per lane of
// each quad (int32), then dy of the 8 blocks (float32).
const (
	octYlo  = 0   // + 128·quad; the high halves 64 bytes on
	octNeg8 = 256 // + 64·quad
	octDy   = 384
	octAct  = 416
)

// prepQ4_0 generates func(dst *byte, xq *byte, octets int): the Q8_0
// activations of each octet of blocks at xq in the layout the q4_0 quad
// kernels read (octAct bytes an octet at dst). It runs once per call, not
// once per pass of rb rows.
func prepQ4_0(t tier) {
	dst, xq, octets := blocksKernel("prepQ4_0"+t.name, "prepQ4_0"+t.name+" lays out the Q8_0 activations of octets of blocks for the q4_0 quad kernels.", "dst *byte", "xq *byte")
	eight := ZMM()
	VBROADCASTI64X4(kc(cEight), eight)
	countLoop("prepQ4_0"+t.name, octets, func() {
		for qd := range 2 {
			ylo, yhi, neg8 := t.q4_0QuadShared(xq, qd, eight)
			VMOVDQU64(ylo, Mem{Base: dst, Disp: octYlo + 128*qd})
			VMOVDQU64(yhi, Mem{Base: dst, Disp: octYlo + 128*qd + 64})
			VMOVDQU64(neg8, Mem{Base: dst, Disp: octNeg8 + 64*qd})
		}
		dy8 := YMM()
		gatherHalves8(Mem{Base: xq}, actBytes, dy8)
		VMOVUPS(dy8, Mem{Base: dst, Disp: octDy})
	}, advance{dst, octAct}, advance{xq, 8 * actBytes})
	VZEROUPPER()
	RET()
}

// q4_0QuadShared loads the Q8_0 activations of quad qd of the octet at
// xq: low halves (y 0–15 of its four blocks, 16 bytes each) and high
// halves, and −8·Σy per lane (eight: 0x08 bytes).
func (t tier) q4_0QuadShared(xq GPVirtual, qd int, eight VecVirtual) (ylo, yhi, neg8 VecVirtual) {
	lo, hi := 0, 16 // table bases
	loIdx, hiIdx := 2, 2
	if qd == 1 {
		lo, hi, hiIdx = 136, 144, 3
	}
	ylo, yhi = ZMM(), ZMM()
	for _, h := range []struct {
		dst       VecVirtual
		base, idx int
	}{{ylo, lo, loIdx}, {yhi, hi, hiIdx}} {
		ix := ZMM()
		VMOVDQU64(kc(cQuad+2*h.idx), ix)
		VMOVDQU64(Mem{Base: xq, Disp: h.base}, h.dst)
		VPERMT2W(Mem{Base: xq, Disp: h.base + 64}, ix, h.dst)
	}
	e := t.dotZ(eight, ylo, nil)
	e = t.dotZ(eight, yhi, e)
	neg8 = ZMM()
	VPXORD(neg8, neg8, neg8)
	VPSUBD(e, neg8, neg8)
	return ylo, yhi, neg8
}

// q4_0QuadDot returns the int32 lanes of Σ (q−8)·y for quad qd of the
// octet of the row at row (128-bit lane j: block 4qd+j), with the
// prepared activations' halves and −8·Σy at ylo, yhi and neg8.
func (t tier) q4_0QuadDot(row GPVirtual, qd int, qIdx VecVirtual, ylo, yhi, neg8 Mem, nibble VecVirtual) VecVirtual {
	base := 0
	if qd == 1 {
		base = 16
	}
	q, hi := ZMM(), ZMM()
	VMOVDQU64(Mem{Base: row, Disp: base}, q)
	VPERMT2W(Mem{Base: row, Disp: base + 64}, qIdx, q)
	VPSRLW(Imm(4), q, hi)
	VPANDD(nibble, q, q)
	VPANDD(nibble, hi, hi)
	p := ZMM()
	VMOVDQU64(neg8, p)
	if t.vnni {
		VPDPBUSD(ylo, q, p)
		VPDPBUSD(yhi, hi, p)
		return p
	}
	p = t.dotZ(q, ylo, p)
	return t.dotZ(hi, yhi, p)
}

// q4_0PairShared loads the Q8_0 activations of blocks off and off+1 at xq
// into one 512-bit vector and −8·Σy per lane (eight: 0x08 bytes).
func (t tier) q4_0PairShared(xq GPVirtual, off int, eight VecVirtual) (yv, neg8 VecVirtual) {
	yv = ZMM()
	VMOVDQU64(Mem{Base: xq, Disp: 2 + off*actBytes}, yv.AsY())
	VINSERTI64X4(Imm(1), Mem{Base: xq, Disp: 2 + (off+1)*actBytes}, yv, yv)
	e := t.dotZ(eight, yv, nil)
	neg8 = ZMM()
	VPXORD(neg8, neg8, neg8)
	VPSUBD(e, neg8, neg8)
	return yv, neg8
}

// q4_0PairDot returns the int32 lanes of Σ (q−8)·y for the two q4_0
// blocks at m (lanes 0–7 the first, 8–15 the second).
func (t tier) q4_0PairDot(m Mem, f format, yv, neg8, shifts, nibble VecVirtual) VecVirtual {
	lo, hi, q := YMM(), YMM(), ZMM()
	VBROADCASTI32X4(m.Offset(2), lo)
	VBROADCASTI32X4(m.Offset(2+f.bytes), hi)
	VINSERTI64X4(Imm(1), hi, lo.AsZ(), q)
	VPSRLVQ(shifts, q, q)
	VPANDD(nibble, q, q)
	return t.dotZ(q, yv, neg8)
}

// gatherHalves8 converts the 8 f16 at m, m+stride, … m+7·stride to 8
// float32 lanes of dst. The halves are gathered in GP registers: VPINSRW
// would need one of X0–X15, all taken with 5 rows and more.
func gatherHalves8(m Mem, stride int, dst Op) {
	var q [2]GPVirtual
	for h := range 2 {
		q[h] = GP64()
		MOVWQZX(m.Offset(4*h*stride), q[h])
		for i := 1; i < 4; i++ {
			v := GP64()
			MOVWQZX(m.Offset((4*h+i)*stride), v)
			SHLQ(U8(16*i), v)
			ORQ(v, q[h])
		}
	}
	lo, hi := XMM(), XMM()
	VPBROADCASTQ(q[0], lo) // EVEX-capable, unlike VMOVQ from a GP register in avo
	VPBROADCASTQ(q[1], hi)
	VPUNPCKLQDQ(hi, lo, lo)
	VCVTPH2PS(lo, dst)
}

// q4_0Scales8 converts the f16 d of the 8 q4_0 blocks at m (18 bytes
// apart, so at words 0, 9, … 63 of its first 128 bytes) to float32 lanes
// 0–7 of dst: one two-table word permute (VPERMT2W, AVX-512BW) instead of
// 8 loads and 12 integer ops per row and octet.
func q4_0Scales8(m Mem, d9, dst VecVirtual) {
	h := ZMM()
	VMOVDQU64(m, h)
	VPERMT2W(m.Offset(64), d9, h)
	VCVTPH2PS(h.AsX(), dst.AsY())
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
	return t.dotIn(ZMM, kc(cOnes16Z), u, s, add)
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
