package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The dequantizers: blocks to float32 rows, bit for bit GGML's
// dequantize_row_* (each product rounded on its own: VMULPS then VSUBPS,
// never an FMA). 8 weights per 256-bit vector.

// levels8 loads 8 bytes at m as int32 lanes (signed or not) and converts
// them to float32 after masking (mask, shift: the nibble or bits wanted).
func (t tier) levels8(m Mem, signed bool, shift uint64, mask VecVirtual) VecVirtual {
	v := YMM()
	if signed {
		VPMOVSXBD(m, v)
	} else {
		VPMOVZXBD(m, v)
	}
	if shift > 0 {
		VPSRLD(Imm(shift), v, v)
	}
	if mask != nil {
		t.and(mask, v, v)
	}
	VCVTDQ2PS(v, v)
	return v
}

func (t tier) storeu8(v VecVirtual, m Mem) { VMOVUPS(v, m) } // VEX or EVEX, as the register needs

// dequant generates func(dst *float32, w *byte, nb int).
func dequant(t tier, f format, block int) {
	name := fmt.Sprintf("dequant%s%s", f.name, t.name)
	dst, w, nb := blocksKernel(name, fmt.Sprintf("%s dequantizes nb %s blocks to float32, as dequantize_row_%s (%s tier).", name, f.name, f.name, t.name),
		"dst *float32", "w *byte")
	nibble := YMM()
	VPBROADCASTD(kc(cNibble), nibble)
	countLoop(name, nb, func() {
		switch f {
		case q4_0, q4_1, q5_0, q5_1:
			// x = d·(q − bias), or d·q + m; q5 levels get bit e of the u32 qh.
			d := YMM()
			t.halfToFloat(Mem{Base: w}, d)
			var bias, m, qh VecVirtual
			if f.bias > 0 {
				bias = YMM()
				c := cMinus8
				if f.bias == 16 {
					c = cMinus16
				}
				VBROADCASTSS(kc(c), bias)
			}
			if f.min >= 0 {
				m = YMM()
				t.halfToFloat(Mem{Base: w, Disp: f.min}, m)
			}
			if f.qh >= 0 {
				qh = YMM()
				VPBROADCASTD(Mem{Base: w, Disp: f.qh}, qh)
			}
			for g := range 4 { // weights 8g…8g+7: low nibbles of bytes 0–15, then high ones
				q := t.levels8raw(Mem{Base: w, Disp: f.qs + 8*(g%2)}, uint64(4*(g/2)), nibble)
				if qh != nil {
					t.orFifthBits8(qh, g, q)
				}
				VCVTDQ2PS(q, q)
				if bias != nil {
					VADDPS(bias, q, q) // q − bias, exact
				}
				VMULPS(d, q, q)
				if m != nil {
					VADDPS(m, q, q)
				}
				t.storeu8(q, Mem{Base: dst, Disp: 32 * g})
			}
		case q8_0:
			d := YMM()
			t.halfToFloat(Mem{Base: w}, d)
			for g := range 4 {
				q := t.levels8(Mem{Base: w, Disp: 2 + 8*g}, true, 0, nil)
				VMULPS(d, q, q)
				t.storeu8(q, Mem{Base: dst, Disp: 32 * g})
			}
		case q4_K, q5_K:
			// Per sub-block j: d·sc_j and dmin·m_j in the lanes of two vectors,
			// then broadcast (VPERMPS) for its 32 weights. q5_K: bit j of the
			// weight's byte in qh (32 B at 16) is its fifth bit.
			t.q4KGroups(w, f, nibble, func(j, k int, q, d1, m1 VecVirtual) {
				VMULPS(d1, q, q) // apart, as GGML rounds them: bit for bit
				VSUBPS(m1, q, q)
				t.storeu8(q, Mem{Base: dst, Disp: 4 * (32*j + 8*k)})
			})
		case q6_K:
			// y = (d·sc)·(q − 32) per sub-block of 16; q from 4 low bits (ql)
			// and 2 high bits (qh).
			scs := t.q6KSubScales(w)
			three, minus32 := YMM(), YMM()
			VPBROADCASTD(kc(cThree), three)
			VBROADCASTSS(kc(cMinus32), minus32)
			for n := range 2 {
				for quarter := range 4 { // elements 128n + 32·quarter + l, l < 32
					for k := range 4 { // 8 of them: l = 8k…8k+7
						l := 8 * k
						lo := t.q6Levels8(w, n, quarter, l, nibble, three)
						VCVTDQ2PS(lo, lo)
						VADDPS(minus32, lo, lo)      // q − 32, exact
						sub := 8*n + 2*quarter + k/2 // (128n + 32·quarter + l) / 16
						VMULPS(laneBroadcast(scs[sub/8], sub%8), lo, lo)
						t.storeu8(lo, Mem{Base: dst, Disp: 4 * (128*n + 32*quarter + l)})
					}
				}
			}
		}
	}, advance{dst, 4 * block}, advance{w, f.bytes})
	VZEROUPPER()
	RET()
}

// orFifthBits8 ORs, into the int32 levels q of weights 8g…8g+7 of a q5
// block, their fifth bits (bits 8g… of the u32 broadcast in qh) as 16.
func (t tier) orFifthBits8(qh VecVirtual, g int, q VecVirtual) {
	h := YMM()
	VPSRLVD(kc(cBitIdx+g), qh, h)
	t.and2(kc(cOne32), h, h)
	VPSLLD(Imm(4), h, h)
	t.or(h, q, q)
}

// q4KGroups emits each(j, k, q, d1, m1) for the 32 groups of 8 levels of
// the q4_K/q5_K super-block at p: q the levels of group k of sub-block j
// as floats, d1 = d·sc_j and m1 = dmin·m_j in every lane. Dequantizing and
// the f32 GEMV apply them differently (apart or fused).
func (t tier) q4KGroups(p GPVirtual, f format, nibble VecVirtual, each func(j, k int, q, d1, m1 VecVirtual)) {
	dsc, dmn := t.q4KSubScales(p)
	for j := range 8 {
		d1, m1 := laneBroadcast(dsc, j), laneBroadcast(dmn, j)
		for k := range 4 {
			q := t.kLevels8(p, f, j, k, nibble)
			VCVTDQ2PS(q, q)
			each(j, k, q, d1, m1)
		}
	}
}

// kLevels8 returns the int32 levels of weights 32j+8k … 32j+8k+7 of the
// q4_K or q5_K super-block at p (sub-block j: low nibbles of chunk j/2 for
// even j, high for odd; q5_K adds bit j of the weight's qh byte as 16).
func (t tier) kLevels8(p GPVirtual, f format, j, k int, nibble VecVirtual) VecVirtual {
	qsOff := 16
	if f == q5_K {
		qsOff = 48
	}
	q := t.levels8raw(Mem{Base: p, Disp: qsOff + 32*(j/2) + 8*k}, uint64(4*(j%2)), nibble)
	if f == q5_K {
		h := t.levels8raw(Mem{Base: p, Disp: 16 + 8*k}, uint64(j), kc(cOne32))
		VPSLLD(Imm(4), h, h)
		t.or(h, q, q)
	}
	return q
}

// q6Levels8 returns the int32 levels (0…63) of weights 128n + 32·quarter +
// l … +7 of the q6_K super-block at p: 4 low bits from ql (low or high
// nibble), 2 high bits from qh (bits 2·quarter, 2·quarter+1).
func (t tier) q6Levels8(p GPVirtual, n, quarter, l int, nibble, three VecVirtual) VecVirtual {
	lo := t.levels8raw(Mem{Base: p, Disp: 64*n + 32*(quarter%2) + l}, uint64(4*(quarter/2)), nibble)
	hi := t.levels8raw(Mem{Base: p, Disp: 128 + 32*n + l}, uint64(2*quarter), three)
	VPSLLD(Imm(4), hi, hi)
	t.or(hi, lo, lo)
	return lo
}

// levels8raw is levels8 without the conversion: int32 lanes.
func (t tier) levels8raw(m Mem, shift uint64, mask Op) VecVirtual {
	v := YMM()
	VPMOVZXBD(m, v)
	if shift > 0 {
		VPSRLD(Imm(shift), v, v)
	}
	t.and2(mask, v, v)
	return v
}

// q4KSubScales returns d·sc_j and dmin·m_j of the q4_K super-block at p,
// sub-block j in lane j.
func (t tier) q4KSubScales(p GPVirtual) (dsc, dmn VecVirtual) {
	sc, mn := t.q4KScalesMins(p)
	dsc, dmn = YMM(), YMM()
	t.halfToFloat(Mem{Base: p}, dsc)
	t.halfToFloat(Mem{Base: p, Disp: 2}, dmn)
	VMULPS(sc, dsc, dsc)
	VMULPS(mn, dmn, dmn)
	return dsc, dmn
}

// laneBroadcast returns lane j of v in all 8 lanes (VPERMPS).
func laneBroadcast(v VecVirtual, j int) VecVirtual {
	idx, out := YMM(), YMM()
	VPBROADCASTD(kc(cLaneIdx).Offset(4*j), idx)
	VPERMPS(v, idx, out)
	return out
}

// q6KSubScales returns d·sc for the 16 sub-blocks of the q6_K super-block
// at p: sub-blocks 0–7 in the lanes of the first vector, 8–15 the second.
func (t tier) q6KSubScales(p GPVirtual) [2]VecVirtual {
	d := YMM()
	t.halfToFloat(Mem{Base: p, Disp: 208}, d)
	var scs [2]VecVirtual
	for h := range 2 {
		scs[h] = YMM()
		VPMOVSXBD(Mem{Base: p, Disp: 192 + 8*h}, scs[h])
		VCVTDQ2PS(scs[h], scs[h])
		VMULPS(d, scs[h], scs[h])
	}
	return scs
}

// q4KScalesMins returns the 8 six-bit scales and the 8 mins of the q4_K
// super-block at p as float32 lanes.
func (t tier) q4KScalesMins(p GPVirtual) (sc, mn VecVirtual) {
	s, m := unpackScalesMins(p)
	sc, mn = YMM(), YMM()
	x := XMM()
	VMOVQ(s, x)
	VPMOVZXBD(x, sc)
	VCVTDQ2PS(sc, sc)
	VMOVQ(m, x)
	VPMOVZXBD(x, mn)
	VCVTDQ2PS(mn, mn)
	return sc, mn
}
