package main

import (
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The activation quantizers, byte for byte GGML's reference ones, in two
// vector widths: AVX2 (with F16C for the f16 scale) and AVX-512 (F+BW+VL,
// and F16C). Each tier's gemv-q8 calls those of its width.

// qwidth is one vector width of the quantizers; the generators below are
// written once against it. What differs: AND on floats is VPANDD in
// AVX-512 (VANDPS needs AVX512DQ), truncation is VRNDSCALEPS, compares
// write a mask register, and the low bytes of int32 lanes are stored by
// VPMOVDB rather than by packs and a permute.
type qwidth struct {
	name string // suffix of the generated functions
	vb   int    // bytes per vector
	vec  func() VecVirtual
}

var (
	qAVX2   = qwidth{"AVX2", 32, YMM}
	qAVX512 = qwidth{"AVX512", 64, ZMM}
)

func (w qwidth) z() bool    { return w.vb == 64 }
func (w qwidth) lanes() int { return w.vb / 4 }

// and is a bitwise AND of float vectors (a may be memory).
func (w qwidth) and(a Op, b, dst VecVirtual) {
	if w.z() {
		VPANDD(a, b, dst)
		return
	}
	VANDPS(a, b, dst)
}

// hmaxBits returns, in lane 0 of an xmm, the largest lane of m, lanes
// compared as int32. On the bits of |x| that is the float order, with +Inf
// above every finite value and NaN above +Inf, which VMAXPS does not keep
// (it returns its second source when either is NaN, so a NaN in one lane
// is lost at the next max).
func (w qwidth) hmaxBits(m VecVirtual) VecVirtual { return hreduce(m, w.z(), VPMAXSD, VPMAXSD) }

// absMaxBits returns the bits of max |x| over the vectors at x[0:n] (as
// int32: see hmaxBits), in lane 0 of an xmm.
func (w qwidth) absMaxBits(x Mem, n int, absMask VecVirtual) VecVirtual {
	m := w.vec()
	w.and(x, absMask, m)
	for i := 1; i < n; i++ {
		a := w.vec()
		w.and(x.Offset(w.vb*i), absMask, a)
		VPMAXSD(a, m, m)
	}
	return w.hmaxBits(m)
}

// jumpIfNonFinite jumps to l when the bits of max |x| (lane 0 of amax,
// from absMaxBits) are those of ±Inf or NaN.
func jumpIfNonFinite(amax VecVirtual, l string) {
	b := GP32()
	VMOVD(amax, b)
	CMPL(b, U32(0x7f800000))
	JAE(LabelRef(l))
}

// storeNaNBlock writes the block a NaN or ±Inf in x quantizes to (see
// the quantizers in the package): a NaN scale (f16 0x7e00 at each of the
// f16Scales offsets, or f32 0x7fc00000 at 0 with f32Scale) and zeros in the
// other bytes [0, n).
func (w qwidth) storeNaNBlock(dst GPVirtual, n int, f16Scales []int, f32Scale bool) {
	z := YMM()
	if w.z() {
		VPXORD(z, z, z)
	} else {
		VPXOR(z, z, z)
	}
	off := 0
	for ; off+32 <= n; off += 32 {
		VMOVDQU(z, Mem{Base: dst, Disp: off})
	}
	if off < n { // the last, overlapping store
		VMOVDQU(z, Mem{Base: dst, Disp: n - 32})
	}
	for _, o := range f16Scales {
		MOVW(U16(0x7e00), Mem{Base: dst, Disp: o})
	}
	if f32Scale {
		MOVL(U32(0x7fc00000), Mem{Base: dst})
	}
}

// hsumInt returns the sum of the int32 lanes of s in a GP register.
func (w qwidth) hsumInt(s VecVirtual) GPVirtual {
	y := s
	if w.z() {
		y = YMM()
		VEXTRACTI64X4(Imm(1), s, y)
		VPADDD(s.AsY(), y, y)
	}
	x := XMM()
	if w.z() {
		VEXTRACTI32X4(Imm(1), y, x)
	} else {
		VEXTRACTI128(Imm(1), y, x)
	}
	VPADDD(y.AsX(), x, x)
	h := XMM()
	VPSHUFD(Imm(0x4e), x, h)
	VPADDD(h, x, x)
	VPSHUFD(Imm(0xb1), x, h)
	VPADDD(h, x, x)
	r := GP32()
	VMOVD(x, r)
	return r
}

// eqBits sets bits to the mask of the lanes where a == b.
func (w qwidth) eqBits(a, b VecVirtual, bits GPVirtual) {
	if w.z() {
		k := K()
		VCMPPS(Imm(0), a, b, k)
		KMOVW(k, bits)
		return
	}
	VCMPPS(Imm(0), a, b, b)
	VMOVMSKPS(b, bits)
}

// roundHalfAway rounds v to integral values, halves away from zero (C's
// roundf): r = trunc(v); r += sign(v) where |v − r| ≥ 0.5.
func (w qwidth) roundHalfAway(v, absMask, half, one VecVirtual) {
	r, diff, sign := w.vec(), w.vec(), w.vec()
	if w.z() {
		VRNDSCALEPS(Imm(3), v, r) // toward zero
	} else {
		VROUNDPS(Imm(3), v, r)
	}
	VSUBPS(r, v, diff) // exact
	w.and(absMask, diff, diff)
	if w.z() {
		k := K()
		VCMPPS(Imm(13), half, diff, k) // |v − r| ≥ 0.5 (GE_OS)
		VPANDND(v, absMask, sign)      // sign bit of v
		VPORD(one, sign, sign)         // ±1
		VADDPS(sign, r, k, r)          // only where the remainder reached a half
		VMOVAPS(r, v)
		return
	}
	VCMPPS(Imm(13), half, diff, diff)
	VANDNPS(v, absMask, sign)
	VORPS(one, sign, sign)
	VANDPS(diff, sign, sign)
	VADDPS(sign, r, v)
}

// storeLevels stores the low byte of each int32 lane of q, in order, at
// m. The low byte, not a saturated one: that is what C's and Go's float →
// int8 conversions leave for the out-of-range results of a block whose
// scale overflows (1/d = Inf), and in range they agree.
func (w qwidth) storeLevels(q []VecVirtual, m Mem) {
	if w.z() {
		for i, v := range q {
			VPMOVDB(v, m.Offset(16*i))
		}
		return
	}
	for i := 0; i < len(q); i += 4 {
		packStore32(q[i:i+4], m.Offset(32*(i/4)))
	}
}

// sumLevels returns, in int32 lanes, the sum of the levels of q as stored
// (sign-extended low bytes).
func (w qwidth) sumLevels(q []VecVirtual) VecVirtual {
	var sum VecVirtual
	for i, v := range q {
		e := w.vec()
		VPSLLD(Imm(24), v, e)
		VPSRAD(Imm(24), e, e)
		if i == 0 {
			sum = e
		} else {
			VPADDD(e, sum, sum)
		}
	}
	return sum
}

// quantizeQ8_0 generates func(dst *byte, x *float32, nb int): nb blocks
// of 32 floats to Q8_0 (f16 d = amax/127, q = roundf(x/d), rounding half
// away from zero as C's roundf). With q81, Q8_1: the levels at 4, and at
// 2 the f16 of d·Σq (the sum of the stored int8 levels).
func quantizeQ8_0(w qwidth, q81 bool) {
	act, qs, bytes := "Q8_0", 2, 34
	if q81 {
		act, qs, bytes = "Q8_1", 4, 36
	}
	name := "quantize" + act + w.name
	dst, x, nb := blocksKernel(name, name+" quantizes nb blocks of 32 floats to "+act+", as quantize_row_"+strings.ToLower(act)+"_ref.", "dst *byte", "x *float32")
	absMask, half, one := w.vec(), w.vec(), w.vec()
	VPBROADCASTD(kc(cAbsMask), absMask)
	VBROADCASTSS(kc(cHalf), half)
	VBROADCASTSS(kc(cOneF), one)
	f127 := XMM()
	VMOVSS(kc(c127), f127)
	nanBlock, next := "nan"+name, "next"+name
	countLoop(name, nb, func() {
		v := make([]VecVirtual, 32/w.lanes())
		for i := range v {
			v[i] = w.vec()
			VMOVUPS(Mem{Base: x, Disp: w.vb * i}, v[i])
		}
		amax := w.absMaxBits(Mem{Base: x}, len(v), absMask)
		jumpIfNonFinite(amax, nanBlock)
		// d = amax/127 (float), id = d ? 1/d : 0, stored d as f16 (F16C, round
		// to nearest even: VCVTPS2PH mode 0).
		d := XMM()
		VDIVSS(f127, amax, d)
		h := XMM()
		VCVTPS2PH(Imm(0), d, h)
		tmp := GP32()
		VMOVD(h, tmp)
		MOVW(tmp.As16(), Mem{Base: dst})
		id := inverseOrZero(d)
		idv := w.vec()
		VBROADCASTSS(id, idv)
		q := make([]VecVirtual, len(v))
		for i := range v {
			q[i] = w.vec()
			VMULPS(idv, v[i], q[i])
			w.roundHalfAway(q[i], absMask, half, one)
			VCVTTPS2DQ(q[i], q[i]) // already integral
		}
		if q81 {
			storeSumTimesD(w.hsumInt(w.sumLevels(q)), d, Mem{Base: dst, Disp: 2})
		}
		w.storeLevels(q, Mem{Base: dst, Disp: qs})
		JMP(LabelRef(next))

		Label(nanBlock)
		scales := []int{0}
		if q81 {
			scales = []int{0, 2}
		}
		w.storeNaNBlock(dst, bytes, scales, false)
		Label(next)
	}, advance{dst, bytes}, advance{x, 128})
	VZEROUPPER()
	RET()
}

// inverseOrZero returns 1/d in lane 0, or 0 where d is 0.
func inverseOrZero(d VecVirtual) VecVirtual {
	one, id, z := XMM(), XMM(), XMM()
	VMOVSS(kc(cOneF), one)
	VDIVSS(d, one, id)
	VXORPS(z, z, z)
	mask := XMM()
	VCMPSS(Imm(4), z, d, mask) // d != 0
	VANDPS(mask, id, id)
	return id
}

// storeSumTimesD stores at m the f16 (nearest even) of float32(sum)·d, d
// in lane 0 of an xmm: the s of a Q8_1 block.
func storeSumTimesD(sum GPVirtual, d VecVirtual, m Mem) {
	f := XMM()
	VCVTSI2SSL(sum, f, f)
	VMULSS(d, f, f)
	h := XMM()
	VCVTPS2PH(Imm(0), f, h)
	t := GP32()
	VMOVD(h, t)
	MOVW(t.As16(), m)
}

// packStore32 stores the low byte of each int32 lane of 4 ymm as 32 bytes
// in order at m (storeLevels for AVX2).
func packStore32(q []VecVirtual, m Mem) {
	low := YMM()
	VPBROADCASTD(kc(cLowByte), low)
	for _, v := range q {
		VPAND(low, v, v)
	}
	a, b := YMM(), YMM()
	VPACKUSDW(q[1], q[0], a) // per 128-bit lane: q0 lo, q1 lo | q0 hi, q1 hi
	VPACKUSDW(q[3], q[2], b)
	VPACKUSWB(b, a, a) // dwords in the order q0 q1 q2 q3 (low halves) | q0 q1 q2 q3 (high)
	idx := YMM()
	VMOVDQU(kc(cPackOrder), idx)
	VPERMD(a, idx, a) // back to element order
	VMOVDQU(a, m)
}

// quantizeQ8_K generates func(dst *byte, x *float32, nb int): nb blocks of
// 256 floats to Q8_K, as quantize_row_q8_K_ref: the element of largest
// magnitude (the first, on ties) maps to −127, q = min(127, round(x·iscale))
// rounding to nearest even (VCVTPS2DQ), d = 1/iscale, and the sums of each
// 16 levels. An all-zero block is stored as zeros.
func quantizeQ8_K(w qwidth) {
	name := "quantizeQ8_K" + w.name
	dst, x, nb := blocksKernel(name, name+" quantizes nb blocks of 256 floats to Q8_K, as quantize_row_q8_K_ref.", "dst *byte", "x *float32")
	absMask, max127 := w.vec(), w.vec()
	VPBROADCASTD(kc(cAbsMask), absMask)
	VPBROADCASTD(kc(cInt127), max127)
	zeroBlock, nanBlock, next := "zero"+name, "nan"+name, "next"+name
	countLoop(name, nb, func() {
		// The largest magnitude.
		amax := w.absMaxBits(Mem{Base: x}, 1024/w.vb, absMask)
		jumpIfNonFinite(amax, nanBlock)
		z := XMM()
		VXORPS(z, z, z)
		VUCOMISS(z, amax)
		JE(LabelRef(zeroBlock))
		// The first element of that magnitude, with its sign.
		amaxv := w.vec()
		VBROADCASTSS(amax, amaxv)
		i, bits := GP64(), GP32()
		XORQ(i, i)
		find := "find" + name
		Label(find)
		a := w.vec()
		w.and(Mem{Base: x, Index: i, Scale: 4}, absMask, a)
		w.eqBits(amaxv, a, bits)
		ADDQ(U8(w.lanes()), i)
		TESTL(bits, bits)
		JZ(LabelRef(find))
		BSFL(bits, bits)
		SUBQ(U8(w.lanes()), i)
		ADDQ(bits.As64(), i)
		maxv := XMM()
		VMOVSS(Mem{Base: x, Index: i, Scale: 4}, maxv)
		// iscale = −127/maxv; d = 1/iscale.
		iscale := XMM()
		VMOVSS(kc(cMinus127), iscale)
		VDIVSS(maxv, iscale, iscale)
		one, d := XMM(), XMM()
		VMOVSS(kc(cOneF), one)
		VDIVSS(iscale, one, d)
		VMOVSS(d, Mem{Base: dst})
		isv := w.vec()
		VBROADCASTSS(iscale, isv)
		per16 := 16 / w.lanes() // vectors per bsum
		for g := range 8 {      // 32 levels per round: two bsums
			q := make([]VecVirtual, 2*per16)
			for j := range q {
				q[j] = w.vec()
				VMULPS(Mem{Base: x, Disp: 128*g + w.vb*j}, isv, q[j])
				VCVTPS2DQ(q[j], q[j]) // nearest even (MXCSR default), as nearest_int
				VPMINSD(max127, q[j], q[j])
			}
			for h := range 2 {
				sum := w.hsumInt(w.sumLevels(q[h*per16 : (h+1)*per16]))
				MOVW(sum.As16(), Mem{Base: dst, Disp: 4 + 256 + 2*(2*g+h)})
			}
			w.storeLevels(q, Mem{Base: dst, Disp: 4 + 32*g})
		}
		JMP(LabelRef(next))

		Label(zeroBlock)
		zy := YMM()
		if w.z() {
			VPXORD(zy, zy, zy)
		} else {
			VPXOR(zy, zy, zy)
		}
		for off := 0; off+32 <= 292; off += 32 {
			VMOVDQU(zy, Mem{Base: dst, Disp: off})
		}
		MOVL(U32(0), Mem{Base: dst, Disp: 288})
		JMP(LabelRef(next))

		Label(nanBlock)
		w.storeNaNBlock(dst, q8kBytes, nil, true)

		Label(next)
	}, advance{dst, q8kBytes}, advance{x, 1024})
	VZEROUPPER()
	RET()
}
