package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The K-quant × Q8_K integer GEMVs. Per 256-weight super-block and row,
// the integer part stays in int32 lanes: Σ_sub sc·Σ q·y through
// VPMADDUBSW (u8 levels × s8 activations, int16 pairs) and VPMADDWD with
// the sub-block's scale broadcast as int16 (VPDPWSSD in the VNNI tier),
// and the min or offset term from the activations' bsums, also per lane.
// Lanes are converted to float and scaled once per super-block; the row's
// lanes are summed at the end.

// Q8_K activation block: f32 d, 256 × i8, 16 × i16 bsums.
const (
	q8kBytes = 292
	q8kQs    = 4
	q8kBsums = 260
)

var (
	q4_K = format{name: "Q4_K", bytes: 144}
	q5_K = format{name: "Q5_K", bytes: 176} // q4_K plus 32 B of fifth bits at 16; nibbles at 48
	q6_K = format{name: "Q6_K", bytes: 210}
)

// Constant rows (32 bytes) of the K-quant kernels, after the 32-block ones.
const (
	cLow2      = nConsts + iota // 0x30 bytes: the two high bits of a q6_K level in place
	cShift4                     // qword shift counts 0, 0, 4, 4 (VPSRLVQ: low then high nibbles)
	cOnes16Z   = cShift4 + 2    // int16 ones, 64 bytes (two rows)
	cMinus8    = cOnes16Z + 2   // float32 −8
	cAbsMask   = cMinus8 + 1    // 0x7fffffff
	cHalf      = cAbsMask + 1   // float32 0.5
	c127       = cHalf + 1      // float32 127
	cMinus127  = c127 + 1       // float32 −127
	cOneF      = cMinus127 + 1  // float32 1
	cInt127    = cOneF + 1      // int32 127
	cPackOrder = cInt127 + 1    // dword indices 0 4 1 5 2 6 3 7 (VPERMD after the packs)
	cLowByte   = cPackOrder + 1 // int32 0xff
	cLaneIdx   = cLowByte + 1   // int32 0…7
	cThree     = cLaneIdx + 1   // int32 3
	cMinus32   = cThree + 1     // float32 −32
	cPairIdx   = cMinus32 + 1   // cPairIdx+k: VPSHUFB picking word 2k (low half), 2k+1 (high half); 4 rows
	cSixteen   = cPairIdx + 4   // 0x10 bytes: Σ 16·y, the −16 of q5_0
	cOnes8     = cSixteen + 1   // 0x01 bytes
	cSpread    = cOnes8 + 1     // VPSHUFB: byte e ← byte e/8 (of a broadcast u32)
	cBitSel    = cSpread + 1    // bytes 1, 2, 4, …, 128 repeating
	cMinus16   = cBitSel + 1    // float32 −16
	cOne32     = cMinus16 + 1   // int32 1
	cBitIdx    = cOne32 + 1     // cBitIdx+g: int32 8g … 8g+7 (4 rows)
	cD9        = cBitIdx + 4    // int16 9j, j = 0…7: words of the f16 d of 8 q4_0 blocks (VPERMT2W)
	cQuad      = cD9 + 1        // cQuad+2k: VPERMT2W word indices of the q4_0 quad kernel (64 bytes each; quadIdx)
	cQuadLanes = cQuad + 8      // cQuadLanes+2h: int32 lanes 4j…4j+3 = 4h+j (64 bytes each; 2 of them)
	cKSpread   = cQuadLanes + 4 // cKSpread+2v: int32 lanes 0–7 = a, 8–15 = b for the sub-block pairs (0,2) (1,3) (4,6) (5,7)
	cQ6Shift   = cKSpread + 8   // cQ6Shift+2i: int16 shift counts, words 0–15 then 16–31: 4, 2 (i = 0); 0, 2 (i = 1)
	cQ6Scale   = cQ6Shift + 4   // cQ6Scale+2i: VPSHUFB, 128-bit lane j ← word j (i = 0) or 4+j (i = 1)
	cRoundC    = cQ6Scale + 4   // float32 0.5 − 2⁻²⁵ (0x3effffff): trunc(y + copysign(it, y)) is roundf(y)
	cInfBits   = cRoundC + 1    // int32 0x7f800000, the bits of +Inf
	cTinyBits  = cInfBits + 1   // int32 0x0d800000, the bits of 2⁻¹⁰⁰
	cLane4     = cTinyBits + 1  // int32 0, 4, 8, 12 twice: VPERMD gathering lane 0 of each 128-bit lane
	nKConsts   = cLane4 + 1
)

// scaleDot adds to iacc the int32 lanes of Σ pairs (q·y) · sc for one
// 32-byte chunk (or two, in 512-bit vectors): q unsigned levels (register), y signed activations
// (memory), sc the int16 scale per lane pair: a register, or memory
// holding one dword with the scale twice. From memory the VNNI tier takes
// it as an embedded broadcast of VPDPWSSD and the others broadcast it
// with a load-port-only VPBROADCASTD: no shuffle port spent on the scale.
func (t tier) scaleDot(q VecVirtual, y Mem, sc Op, iacc VecVirtual) {
	p := YMM()
	if q.Size() == 64 {
		p = ZMM()
	}
	VPMADDUBSW(y, q, p)
	m, inMem := sc.(Mem)
	switch {
	case t.vnni && inMem:
		VPDPWSSD_BCST(m, p, iacc)
		return
	case t.vnni:
		VPDPWSSD(sc, p, iacc)
		return
	case inMem:
		b := YMM()
		VPBROADCASTD(m, b)
		sc = b
	}
	VPMADDWD(sc, p, p)
	VPADDD(p, iacc, iacc)
}

// superScale returns the f16 at m times the Q8_K d in dy, in 8 lanes.
func (t tier) superScale(m Mem, dy VecVirtual) VecVirtual {
	d := YMM()
	t.halfToFloat(m, d)
	VMULPS(dy, d, d)
	return d
}

// gemvK generates func(y *float32, w *byte, stride int, xq *byte, nb int)
// for a K-quant format: rb rows at w + r·stride, nb super-blocks, against
// nb Q8_K activation blocks at xq.
func gemvK(t tier, f format, rb int) {
	name := fmt.Sprintf("gemvQ8%s%sR%d", f.name, t.name, rb)
	w, s, xq, nb := kernel(name, fmt.Sprintf("%s computes %d rows of a %s × Q8_K GEMV (%s tier).", name, rb, f.name, t.name), "xq", "*byte")
	acc := t.zeroAccs(rb)
	nibble := YMM()
	t.loadu(kc(cNibble), nibble)
	var low2 VecVirtual
	if f == q6_K {
		low2 = YMM()
		t.loadu(kc(cLow2), low2)
	}
	row := GP64()
	var scw Mem
	if f != q6_K {
		scw = AllocLocal(40) // 8 scales as dwords, d·dy and dmin·dy
	}
	blockLoop(name, f, w, xq, nb, q8kBytes, newNextPass(w, s, rb, rb*f.bytes), func() {
		dy := YMM()
		VBROADCASTSS(Mem{Base: xq}, dy)
		bsums := YMM()
		var bs8 VecVirtual
		if f == q6_K {
			t.loadu(Mem{Base: xq, Disp: q8kBsums}, bsums)
		} else {
			bs8 = t.subBlockSums(xq)
		}
		eachRow(w, s, row, rb, f.bytes, kRowDist(f, rb), func(r int) {
			switch f {
			case q4_K, q5_K:
				t.q4KBlock(row, xq, nibble, bs8, dy, acc[r], scw, f == q5_K)
			case q6_K:
				t.q6KBlock(row, xq, nibble, low2, bsums, dy, acc[r])
			}
		})
	})
	t.storeRows(acc)
}

// kRowDist is the row prefetch distance of a K-quant kernel: q6_K's is
// twice prefetchDist (at 0.82 bytes a weight the same lead in time is more
// bytes; A/B: 3-4 % at rb 1).
func kRowDist(f format, rb int) int {
	if f == q6_K {
		return 2 * prefetchDist(rb)
	}
	return prefetchDist(rb)
}

// subBlockSums returns, in the 8 int16 words of an xmm, the sums of the
// Q8_K activations at xq per 32-weight sub-block (bsums in pairs): shared
// by the rows of a pass, one VPMADDWD with a row's 8 mins then gives its
// whole min term.
func (t tier) subBlockSums(xq GPVirtual) VecVirtual {
	lo, hi := XMM(), XMM()
	t.loadu(Mem{Base: xq, Disp: q8kBsums}, lo)
	t.loadu(Mem{Base: xq, Disp: q8kBsums + 16}, hi)
	VPHADDW(hi, lo, lo) // |pair| ≤ 2·16·128: fits int16
	return lo
}

// q4KBlock adds one q4_K super-block of the row at p to acc:
// d·dy·Σ_j sc_j·Σ q·y − dmin·dy·Σ_j m_j·(bsum_2j + bsum_2j+1).
// bs8 holds the bsum pairs (subBlockSums); scw is 40 bytes of scratch.
//
// With fifth (q5_K) each level also gets its fifth bit: for sub-block j,
// bit j of byte i of the 32 bytes at 16, and the nibbles sit at 48.
func (t tier) q4KBlock(p, xq GPVirtual, nibble, bs8, dy, acc VecVirtual, scw Mem, fifth bool) {
	sc, mn := unpackScalesMins(p)
	// Scales as dwords holding the int16 scale twice, in scratch memory:
	// each chunk reads its sub-block's as a broadcast operand.
	x, scd := XMM(), YMM()
	VMOVQ(sc, x)
	VPMOVZXBD(x, scd)
	hi := YMM()
	VPSLLD(Imm(16), scd, hi)
	t.or(hi, scd, scd)
	t.storeu(scd, scw)
	// Min term: 8 mins as int16 against the 8 bsum pairs, 4 int32 lanes
	// (the upper lanes of msum are zero).
	msum := YMM()
	VMOVQ(mn, msum.AsX())
	VPMOVZXBW(msum.AsX(), msum.AsX())
	VPMADDWD(bs8, msum.AsX(), msum.AsX())

	iacc := YMM()
	t.zero(iacc)
	qsOff := 16
	var qh VecVirtual
	if fifth {
		qsOff = 48
		qh = YMM()
		t.loadu(Mem{Base: p, Disp: 16}, qh)
	}
	for ch := range 4 {
		q, lo, hi := YMM(), YMM(), YMM()
		t.loadu(Mem{Base: p, Disp: qsOff + 32*ch}, q)
		t.and(nibble, q, lo)
		VPSRLW(Imm(4), q, hi)
		t.and(nibble, hi, hi)
		if fifth {
			t.orBit(qh, 2*ch, lo)
			t.orBit(qh, 2*ch+1, hi)
		}
		t.scaleDot(lo, Mem{Base: xq, Disp: q8kQs + 64*ch}, scw.Offset(4*(2*ch)), iacc)
		t.scaleDot(hi, Mem{Base: xq, Disp: q8kQs + 64*ch + 32}, scw.Offset(4*(2*ch+1)), iacc)
	}
	t.addSuperScaled(p, dy, iacc, msum, scw.Offset(32), acc)
}

// addSuperScaled adds d·dy·iacc − dmin·dy·msum to acc (int32 lanes
// converted here), d and dmin the f16 pair at p: one conversion of the
// pair, through 8 bytes of scratch at scw, from which the FMAs read them
// as broadcast operands (embedded in the EVEX tiers, a load-port-only
// VBROADCASTSS in AVX2). msum may be narrower than acc (zero lanes above).
func (t tier) addSuperScaled(p GPVirtual, dy, iacc, msum VecVirtual, scw Mem, acc VecVirtual) {
	VCVTDQ2PS(iacc, iacc)
	VCVTDQ2PS(msum, msum)
	dm := XMM()
	VMOVD(Mem{Base: p}, dm)
	VCVTPH2PS(dm, dm)
	VMULPS(dy.AsX(), dm, dm)
	VMOVQ(dm, scw)
	var m Op = msum
	if acc.Size() == 64 {
		m = msum.AsZ()
	}
	if t.evex {
		VFMADD231PS_BCST(scw, iacc, acc)
		VFNMADD231PS_BCST(scw.Offset(4), m, acc)
		return
	}
	d, dmin := YMM(), YMM()
	VBROADCASTSS(scw, d)
	VFMADD231PS(d, iacc, acc)
	VBROADCASTSS(scw.Offset(4), dmin)
	VFNMADD231PS(dmin, msum, acc)
}

// q6KBlock adds one q6_K super-block of the row at p to acc:
// d·dy·(Σ_j sc_j·Σ q·y − 32·Σ_j sc_j·bsum_j), q the unsigned level 0…63.
func (t tier) q6KBlock(p, xq GPVirtual, nibble, low2, bsums, dy, acc VecVirtual) {
	sc16 := YMM()
	VPMOVSXBW(Mem{Base: p, Disp: 192}, sc16)
	// Scales 0–7 and 8–15 each in both 128-bit halves: one VPSHUFB then
	// puts sub-block s's scale in the low half and s+1's in the high half.
	scHalf := [2]VecVirtual{YMM(), YMM()}
	VPERMQ(Imm(0x44), sc16, scHalf[0])
	VPERMQ(Imm(0xee), sc16, scHalf[1])
	iacc := YMM()
	VPMADDWD(bsums, sc16, iacc)
	VPSLLD(Imm(5), iacc, iacc) // 32·Σ sc·bsum
	zero := YMM()
	t.zero(zero)
	VPSUBD(iacc, zero, iacc)
	for n := range 2 {
		l4lo, l4hi, h2 := YMM(), YMM(), YMM()
		t.loadu(Mem{Base: p, Disp: 64 * n}, l4lo)
		t.loadu(Mem{Base: p, Disp: 64*n + 32}, l4hi)
		t.loadu(Mem{Base: p, Disp: 128 + 32*n}, h2)
		// Quarter k of this half: 32 levels, 4 low bits from l4lo or l4hi
		// (low or high nibble), 2 high bits from h2 (bits 2k, 2k+1).
		for k := range 4 {
			l4 := l4lo
			if k%2 == 1 {
				l4 = l4hi
			}
			q, h := YMM(), YMM()
			if k < 2 {
				t.and(nibble, l4, q)
			} else {
				VPSRLW(Imm(4), l4, q)
				t.and(nibble, q, q)
			}
			// Bring bits 2k, 2k+1 of h2 to bits 4, 5.
			switch sh := 4 - 2*k; {
			case sh > 0:
				VPSLLW(Imm(uint64(sh)), h2, h)
			case sh < 0:
				VPSRLW(Imm(uint64(-sh)), h2, h)
			default:
				t.loadu(h2, h)
			}
			t.and(low2, h, h)
			t.or(h, q, q)
			// Its two sub-blocks of 16 are 8n+2k and 8n+2k+1: words 2k and
			// 2k+1 of scales half n.
			sc := YMM()
			VPSHUFB(kc(cPairIdx+k), scHalf[n], sc)
			t.scaleDot(q, Mem{Base: xq, Disp: q8kQs + 128*n + 32*k}, sc, iacc)
		}
	}
	VCVTDQ2PS(iacc, iacc)
	VFMADD231PS(t.superScale(Mem{Base: p, Disp: 208}, dy), iacc, acc)
}

// orBit ORs bit b of each byte of qh, moved to bit 4 (16), into q.
func (t tier) orBit(qh VecVirtual, b int, q VecVirtual) {
	h := YMM()
	switch {
	case b < 4:
		VPSLLW(Imm(uint64(4-b)), qh, h)
	case b > 4:
		VPSRLW(Imm(uint64(b-4)), qh, h)
	default:
		t.loadu(qh, h)
	}
	t.and2(kc(cSixteen), h, h)
	t.or(h, q, q)
}

func (t tier) storeu(v VecVirtual, m Mem) {
	if t.evex {
		VMOVDQU64(v, m)
		return
	}
	VMOVDQU(v, m)
}

func (t tier) or(a, b, dst VecVirtual) {
	if t.evex {
		VPORD(a, b, dst)
		return
	}
	VPOR(a, b, dst)
}

// unpackScalesMins unpacks the 12 bytes of 6-bit scales and mins of the
// q4_K super-block at p (see packScalesMins) into the 8 scales and the 8
// mins, one byte each, in two GP registers: a = bytes 0–3, b = 4–7,
// c = 8–11. No trip through memory: a narrow store read back wider stalls
// store forwarding.
func unpackScalesMins(p GPVirtual) (sc, mn GPVirtual) {
	a, b, c, sc, mn := GP64(), GP64(), GP64(), GP64(), GP64()
	MOVL(Mem{Base: p, Disp: 4}, a.As32())
	MOVL(Mem{Base: p, Disp: 8}, b.As32())
	MOVL(Mem{Base: p, Disp: 12}, c.As32())
	MOVL(c.As32(), sc.As32())
	ANDL(U32(0x0f0f0f0f), sc.As32())
	MOVL(a.As32(), mn.As32())
	SHRL(U8(2), mn.As32()) // bits 6–7 of each byte to bits 4–5
	ANDL(U32(0x30303030), mn.As32())
	ORL(mn.As32(), sc.As32()) // scales 4–7
	SHLQ(U8(32), sc)
	ANDL(U32(0x3f3f3f3f), a.As32())
	ORQ(a, sc) // scales 0–7
	SHRL(U8(4), c.As32())
	ANDL(U32(0x0f0f0f0f), c.As32())
	MOVL(b.As32(), mn.As32())
	SHRL(U8(2), mn.As32())
	ANDL(U32(0x30303030), mn.As32())
	ORL(c.As32(), mn.As32()) // mins 4–7
	SHLQ(U8(32), mn)
	ANDL(U32(0x3f3f3f3f), b.As32())
	ORQ(b, mn) // mins 0–7
	return sc, mn
}

// super reports whether f is a K-quant (256-weight super-blocks).
func (f format) super() bool { return f == q4_K || f == q5_K || f == q6_K }
