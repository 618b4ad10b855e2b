package main

import (
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The activation quantizers of the AVX-512 tiers (F+BW+VL; with F16C for
// the f16 scale): the AVX2 ones on 512-bit vectors, byte for byte the
// same. Differences forced by the ISA: AND on floats is VPANDD (VANDPS
// needs AVX512DQ), truncation is VRNDSCALEPS, compares write a mask, and
// VPMOVDB stores the low byte of each int32 lane (the same truncation
// packStore32 does).

// quantizeQ8_0Z generates func(dst *byte, x *float32, nb int): Q8_0 (or
// with q81 Q8_1), as quantizeQ8_0 (the AVX2 one).
func quantizeQ8_0Z(q81 bool) {
	name, act, qs, bytes := "quantizeQ8_0AVX512", "Q8_0", 2, 34
	if q81 {
		name, act, qs, bytes = "quantizeQ8_1AVX512", "Q8_1", 4, 36
	}
	dst, x, nb := blocksKernel(name, name+" quantizes nb blocks of 32 floats to "+act+", as quantize_row_"+strings.ToLower(act)+"_ref.", "dst *byte", "x *float32")
	absMask, half, one := ZMM(), ZMM(), ZMM()
	VPBROADCASTD(kc(cAbsMask), absMask)
	VBROADCASTSS(kc(cHalf), half)
	VBROADCASTSS(kc(cOneF), one)
	f127 := XMM()
	VMOVSS(kc(c127), f127)
	loop, done := "loop"+name, "done"+name
	TESTQ(nb, nb)
	JZ(LabelRef(done))
	Label(loop)
	v := [2]VecVirtual{ZMM(), ZMM()}
	a := [2]VecVirtual{ZMM(), ZMM()}
	for i := range v {
		VMOVUPS(Mem{Base: x, Disp: 64 * i}, v[i])
		VPANDD(absMask, v[i], a[i])
	}
	VMAXPS(a[1], a[0], a[0])
	amax := hmaxZ(a[0])
	d := XMM()
	VDIVSS(f127, amax, d)
	h := XMM()
	VCVTPS2PH(Imm(0), d, h)
	tmp := GP32()
	VMOVD(h, tmp)
	MOVW(tmp.As16(), Mem{Base: dst})
	id := inverseOrZero(d)
	idv := ZMM()
	VBROADCASTSS(id, idv)
	var sum VecVirtual
	for i := range v {
		q := ZMM()
		VMULPS(idv, v[i], q)
		roundHalfAwayZ(q, absMask, half, one)
		VCVTTPS2DQ(q, q)
		VPMOVDB(q, Mem{Base: dst, Disp: qs + 16*i})
		if q81 { // Σ of the stored levels (sign-extended low bytes)
			e := ZMM()
			VPSLLD(Imm(24), q, e)
			VPSRAD(Imm(24), e, e)
			if i == 0 {
				sum = e
			} else {
				VPADDD(e, sum, sum)
			}
		}
	}
	if q81 {
		storeSumTimesD(hsumIntZ(sum), d, Mem{Base: dst, Disp: 2})
	}
	ADDQ(U32(bytes), dst)
	ADDQ(U32(128), x)
	DECQ(nb)
	JNZ(LabelRef(loop))
	Label(done)
	VZEROUPPER()
	RET()
}

// hmaxZ returns, in lane 0 of an xmm, the largest of the 16 lanes of m.
func hmaxZ(m VecVirtual) VecVirtual {
	y := YMM()
	VEXTRACTF64X4(Imm(1), m, y)
	VMAXPS(m.AsY(), y, y)
	x := XMM()
	VEXTRACTF32X4(Imm(1), y, x)
	VMAXPS(y.AsX(), x, x)
	h := XMM()
	VMOVHLPS(x, x, h)
	VMAXPS(h, x, x)
	VMOVSHDUP(x, h)
	VMAXSS(h, x, x)
	return x
}

// roundHalfAwayZ is roundHalfAway on 16 lanes: r = trunc(v); r += sign(v)
// where |v − r| ≥ 0.5.
func roundHalfAwayZ(v, absMask, half, one VecVirtual) {
	r, diff, sign := ZMM(), ZMM(), ZMM()
	VRNDSCALEPS(Imm(3), v, r) // toward zero
	VSUBPS(r, v, diff)        // exact
	VPANDD(absMask, diff, diff)
	k := K()
	VCMPPS(Imm(13), half, diff, k) // |v − r| ≥ 0.5 (GE_OS)
	VPANDND(v, absMask, sign)      // sign bit of v
	VPORD(one, sign, sign)         // ±1
	VADDPS(sign, r, k, r)          // only where the remainder reached a half
	VMOVAPS(r, v)
}

// quantizeQ8_KZ generates func(dst *byte, x *float32, nb int): Q8_K, as
// quantizeQ8_K (the AVX2 one): one 512-bit vector is one bsum group.
func quantizeQ8_KZ() {
	dst, x, nb := blocksKernel("quantizeQ8_KAVX512", "quantizeQ8_KAVX512 quantizes nb blocks of 256 floats to Q8_K, as quantize_row_q8_K_ref.", "dst *byte", "x *float32")
	absMask, max127 := ZMM(), ZMM()
	VPBROADCASTD(kc(cAbsMask), absMask)
	VPBROADCASTD(kc(cInt127), max127)
	loop, done := "loopquantizeQ8_KZ", "donequantizeQ8_KZ"
	zeroBlock, next := "zeroquantizeQ8_KZ", "nextquantizeQ8_KZ"
	TESTQ(nb, nb)
	JZ(LabelRef(done))
	Label(loop)
	m := ZMM()
	VPANDD(Mem{Base: x}, absMask, m)
	for i := 1; i < 16; i++ {
		a := ZMM()
		VPANDD(Mem{Base: x, Disp: 64 * i}, absMask, a)
		VMAXPS(a, m, m)
	}
	amax := hmaxZ(m)
	z := XMM()
	VXORPS(z, z, z)
	VUCOMISS(z, amax)
	JE(LabelRef(zeroBlock))
	// The first element of that magnitude, with its sign.
	amaxv := ZMM()
	VBROADCASTSS(amax, amaxv)
	i, bits := GP64(), GP32()
	XORQ(i, i)
	find := "findquantizeQ8_KZ"
	Label(find)
	a := ZMM()
	VPANDD(Mem{Base: x, Index: i, Scale: 4}, absMask, a)
	k := K()
	VCMPPS(Imm(0), amaxv, a, k) // == amax
	KMOVW(k, bits)
	ADDQ(U8(16), i)
	TESTL(bits, bits)
	JZ(LabelRef(find))
	BSFL(bits, bits)
	SUBQ(U8(16), i)
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
	isv := ZMM()
	VBROADCASTSS(iscale, isv)
	for g := range 16 { // 16 levels: one bsum
		q := ZMM()
		VMULPS(Mem{Base: x, Disp: 64 * g}, isv, q)
		VCVTPS2DQ(q, q) // nearest even (MXCSR default), as nearest_int
		VPMINSD(max127, q, q)
		VPMOVDB(q, Mem{Base: dst, Disp: 4 + 16*g})
		// Sum the levels as the stored int8 (sign-extended low bytes).
		s := ZMM()
		VPSLLD(Imm(24), q, s)
		VPSRAD(Imm(24), s, s)
		MOVW(hsumIntZ(s).As16(), Mem{Base: dst, Disp: 4 + 256 + 2*g})
	}
	JMP(LabelRef(next))

	Label(zeroBlock)
	zv := ZMM()
	VPXORD(zv, zv, zv)
	for off := 0; off+64 <= 292; off += 64 {
		VMOVDQU64(zv, Mem{Base: dst, Disp: off})
	}
	VMOVDQU64(zv.AsY(), Mem{Base: dst, Disp: 256})
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

// hsumIntZ returns the sum of the 16 int32 lanes of s in a GP register.
func hsumIntZ(s VecVirtual) GPVirtual {
	y := YMM()
	VEXTRACTI64X4(Imm(1), s, y)
	VPADDD(s.AsY(), y, y)
	x := XMM()
	VEXTRACTI32X4(Imm(1), y, x)
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
