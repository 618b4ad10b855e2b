package main

import (
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The activation quantizers in AVX2 (with F16C for the f16 scale), byte
// for byte GGML's reference ones; every SIMD tier's gemv-q8 calls them.

// quantizeQ8_0 generates func(dst *byte, x *float32, nb int): nb blocks
// of 32 floats to Q8_0 (f16 d = amax/127, q = roundf(x/d), rounding half
// away from zero as C's roundf). With q81, Q8_1: the levels at 4, and at
// 2 the f16 of d·Σq (the sum of the stored int8 levels).
func quantizeQ8_0(q81 bool) {
	name, act, qs, bytes := "quantizeQ8_0AVX2", "Q8_0", 2, 34
	if q81 {
		name, act, qs, bytes = "quantizeQ8_1AVX2", "Q8_1", 4, 36
	}
	dst, x, nb := blocksKernel(name, name+" quantizes nb blocks of 32 floats to "+act+", as quantize_row_"+strings.ToLower(act)+"_ref.", "dst *byte", "x *float32")
	absMask, half, f127 := YMM(), YMM(), YMM()
	VBROADCASTSS(kc(cAbsMask), absMask)
	VBROADCASTSS(kc(cHalf), half)
	VBROADCASTSS(kc(c127), f127)
	loop, done := "loop"+name, "done"+name
	TESTQ(nb, nb)
	JZ(LabelRef(done))
	Label(loop)
	v := make([]VecVirtual, 4)
	for i := range v {
		v[i] = YMM()
		VMOVUPS(Mem{Base: x, Disp: 32 * i}, v[i])
	}
	amax := hmaxAbs(v, absMask)
	// d = amax/127 (float), id = d ? 1/d : 0, stored d as f16 (F16C, round
	// to nearest even: VCVTPS2PH mode 0).
	d := XMM()
	VDIVSS(f127.AsX(), amax, d)
	h := XMM()
	VCVTPS2PH(Imm(0), d, h)
	tmp := GP32()
	VMOVD(h, tmp)
	MOVW(tmp.As16(), Mem{Base: dst})
	id := inverseOrZero(d)
	idv := YMM()
	VBROADCASTSS(id, idv)
	q := make([]VecVirtual, 4)
	for i := range v {
		q[i] = YMM()
		VMULPS(idv, v[i], q[i])
		roundHalfAway(q[i], absMask, half)
		VCVTTPS2DQ(q[i], q[i]) // already integral
	}
	if q81 {
		// Σ of the stored levels (sign-extended low bytes), times d, to f16.
		sum := YMM()
		for i, v := range q {
			e := YMM()
			VPSLLD(Imm(24), v, e)
			VPSRAD(Imm(24), e, e)
			if i == 0 {
				sum = e
			} else {
				VPADDD(e, sum, sum)
			}
		}
		storeSumTimesD(hsumInt(sum), d, Mem{Base: dst, Disp: 2})
	}
	packStore32(q, Mem{Base: dst, Disp: qs})
	ADDQ(U32(bytes), dst)
	ADDQ(U32(128), x)
	DECQ(nb)
	JNZ(LabelRef(loop))
	Label(done)
	VZEROUPPER()
	RET()
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

// hmaxAbs returns, in lane 0 of an xmm, the largest |v| over the vectors.
func hmaxAbs(v []VecVirtual, absMask VecVirtual) VecVirtual {
	m := YMM()
	VANDPS(absMask, v[0], m)
	for _, x := range v[1:] {
		a := YMM()
		VANDPS(absMask, x, a)
		VMAXPS(a, m, m)
	}
	return hmax(m)
}

// hmax returns, in lane 0 of an xmm, the largest lane of m.
func hmax(m VecVirtual) VecVirtual {
	x := XMM()
	VEXTRACTF128(Imm(1), m, x)
	VMAXPS(m.AsX(), x, x)
	h := XMM()
	VMOVHLPS(x, x, h)
	VMAXPS(h, x, x)
	VMOVSHDUP(x, h)
	VMAXSS(h, x, x)
	return x
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

// roundHalfAway rounds v to integral values, halves away from zero (C's
// roundf): r = trunc(v); r += sign(v) where |v − r| ≥ 0.5.
func roundHalfAway(v, absMask, half VecVirtual) {
	r, diff, sign := YMM(), YMM(), YMM()
	VROUNDPS(Imm(3), v, r) // toward zero
	VSUBPS(r, v, diff)     // exact
	VANDPS(absMask, diff, diff)
	VCMPPS(Imm(13), half, diff, diff) // |v − r| ≥ 0.5 (GE_OS)
	VANDNPS(v, absMask, sign)         // sign bit of v
	VORPS(kc(cOneF), sign, sign)      // ±1
	VANDPS(diff, sign, sign)
	VADDPS(sign, r, v)
}

// packStore32 stores the low byte of each int32 lane of 4 vectors as 32
// bytes in order at m. The low byte, not a saturated one: that is what C's
// and Go's float → int8 conversions leave for the out-of-range results of
// a block whose scale overflows (1/d = Inf), and in range they agree.
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
func quantizeQ8_K() {
	dst, x, nb := blocksKernel("quantizeQ8_KAVX2", "quantizeQ8_KAVX2 quantizes nb blocks of 256 floats to Q8_K, as quantize_row_q8_K_ref.", "dst *byte", "x *float32")
	absMask, max127 := YMM(), YMM()
	VBROADCASTSS(kc(cAbsMask), absMask)
	VPBROADCASTD(kc(cInt127), max127)
	loop, done := "loopquantizeQ8_K", "donequantizeQ8_K"
	zeroBlock, next := "zeroquantizeQ8_K", "nextquantizeQ8_K"
	TESTQ(nb, nb)
	JZ(LabelRef(done))
	Label(loop)
	// The largest magnitude.
	m := YMM()
	VANDPS(Mem{Base: x}, absMask, m)
	for i := 1; i < 32; i++ {
		a := YMM()
		VANDPS(Mem{Base: x, Disp: 32 * i}, absMask, a)
		VMAXPS(a, m, m)
	}
	amax := hmax(m)
	z := XMM()
	VXORPS(z, z, z)
	VUCOMISS(z, amax)
	JE(LabelRef(zeroBlock))
	// The first element of that magnitude, with its sign.
	amaxv := YMM()
	VBROADCASTSS(amax, amaxv)
	i, bits := GP64(), GP32()
	XORQ(i, i)
	find := "findquantizeQ8_K"
	Label(find)
	a := YMM()
	VANDPS(Mem{Base: x, Index: i, Scale: 4}, absMask, a)
	VCMPPS(Imm(0), amaxv, a, a) // == amax
	VMOVMSKPS(a, bits)
	ADDQ(U8(8), i)
	TESTL(bits, bits)
	JZ(LabelRef(find))
	BSFL(bits, bits)
	SUBQ(U8(8), i)
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
	isv := YMM()
	VBROADCASTSS(iscale, isv)
	for g := range 8 { // 32 levels per round: two bsums
		q := make([]VecVirtual, 4)
		for j := range q {
			q[j] = YMM()
			VMULPS(Mem{Base: x, Disp: 128*g + 32*j}, isv, q[j])
			VCVTPS2DQ(q[j], q[j]) // nearest even (MXCSR default), as nearest_int
			VPMINSD(max127, q[j], q[j])
		}
		for h := range 2 {
			// Sum the levels as the stored int8 (sign-extended low bytes).
			s, u := YMM(), YMM()
			VPSLLD(Imm(24), q[2*h], s)
			VPSRAD(Imm(24), s, s)
			VPSLLD(Imm(24), q[2*h+1], u)
			VPSRAD(Imm(24), u, u)
			VPADDD(u, s, s)
			sum := hsumInt(s)
			MOVW(sum.As16(), Mem{Base: dst, Disp: 4 + 256 + 2*(2*g+h)})
		}
		packStore32(q, Mem{Base: dst, Disp: 4 + 32*g})
	}
	JMP(LabelRef(next))

	Label(zeroBlock)
	zy := YMM()
	VPXOR(zy, zy, zy)
	for off := 0; off+32 <= 292; off += 32 {
		VMOVDQU(zy, Mem{Base: dst, Disp: off})
	}
	MOVL(U32(0), Mem{Base: dst, Disp: 288})

	Label(next)
	ADDQ(U32(292), dst)
	ADDQ(U32(1024), x)
	DECQ(nb)
	JNZ(LabelRef(loop))
	Label(done)
	VZEROUPPER()
	RET()
}

// hsumInt returns the sum of the 8 int32 lanes of s in a GP register.
func hsumInt(s VecVirtual) GPVirtual {
	x := XMM()
	VEXTRACTI128(Imm(1), s, x)
	VPADDD(s.AsX(), x, x)
	h := XMM()
	VPSHUFD(Imm(0x4e), x, h)
	VPADDD(h, x, x)
	VPSHUFD(Imm(0xb1), x, h)
	VPADDD(h, x, x)
	r := GP32()
	VMOVD(x, r)
	return r
}
