package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The float32-activation GEMVs: each weight block is turned into float32
// levels in registers (never written to memory) and multiplied into x with
// FMA. The block's scale is applied once per block and row:
//
//	q8_0        y += d · Σ q·x
//	q4_0, q5_0  y += d · (Σ q·x − bias·Σx)   (−bias·Σx per lane shared by the rows)
//	q4_1, q5_1  y += d · Σ q·x + m · Σx
//
// x is read once per block for all rb rows.

// gemvF32 generates func(y *float32, w *byte, stride int, x *float32, nb int).
func gemvF32(t tier, f format, rb int) {
	name := fmt.Sprintf("gemvF32%s%sR%d", f.name, t.name, rb)
	w, s, x, nb := kernel(name, fmt.Sprintf("%s computes %d rows of a %s × f32 GEMV (%s tier).", name, rb, f.name, t.name), "x", "*float32")
	acc := t.zeroAccs(rb)
	var nibble VecVirtual
	if f != q8_0 {
		nibble = YMM()
		VPBROADCASTD(kc(cNibble), nibble)
	}
	row := GP64()
	blockLoop(name, f, w, x, nb, 128, nil, func() {
		xs := make([]VecVirtual, 4)
		for i := range xs {
			xs[i] = YMM()
			VMOVUPS(Mem{Base: x, Disp: 32 * i}, xs[i])
		}
		// Σx per lane: times −bias for q4_0/q5_0, as it is for q4_1/q5_1.
		var corr VecVirtual
		if f != q8_0 {
			corr = YMM()
			VADDPS(xs[0], xs[1], corr)
			VADDPS(xs[2], corr, corr)
			VADDPS(xs[3], corr, corr)
			switch f.bias {
			case 8:
				VMULPS(kc(cMinus8), corr, corr)
			case 16:
				VMULPS(kc(cMinus16), corr, corr)
			}
		}
		eachRow(w, s, row, rb, f.bytes, f32RowDist, func(r int) {
			tb := YMM()
			switch f {
			case q8_0:
				for i := range 4 {
					q := YMM()
					VPMOVSXBD(Mem{Base: row, Disp: 2 + 8*i}, q)
					VCVTDQ2PS(q, q)
					if i == 0 {
						VMULPS(xs[0], q, tb)
					} else {
						VFMADD231PS(xs[i], q, tb)
					}
				}
			default: // q4_0, q4_1, q5_0, q5_1
				// Bytes 0–7 hold weights 0–7 (low nibbles) and 16–23 (high);
				// bytes 8–15 weights 8–15 and 24–31.
				var qh VecVirtual
				if f.qh >= 0 {
					qh = YMM()
					VPBROADCASTD(Mem{Base: row, Disp: f.qh}, qh)
				}
				if f.bias > 0 {
					t.loadu(corr, tb)
				} else {
					t.zero(tb)
				}
				for half := range 2 {
					a, lo, hi := YMM(), YMM(), YMM()
					VPMOVZXBD(Mem{Base: row, Disp: f.qs + 8*half}, a)
					t.and(nibble, a, lo)
					VPSRLD(Imm(4), a, hi)
					if qh != nil {
						t.orFifthBits8(qh, half, lo)
						t.orFifthBits8(qh, 2+half, hi)
					}
					VCVTDQ2PS(lo, lo)
					VCVTDQ2PS(hi, hi)
					VFMADD231PS(xs[half], lo, tb)
					VFMADD231PS(xs[2+half], hi, tb)
				}
			}
			if f.min >= 0 { // + m·Σx
				m := YMM()
				t.halfToFloat(Mem{Base: row, Disp: f.min}, m)
				VFMADD231PS(m, corr, acc[r])
			}
			d := YMM()
			t.halfToFloat(Mem{Base: row}, d)
			VFMADD231PS(d, tb, acc[r])
		})
	})
	t.storeRows(acc)
}

// f32RowDist is the row prefetch distance of the gemv-f32 kernels: not
// tuned, they are compute-bound (no next-pass prefetch either).
const f32RowDist = 1024

// gemvF32K generates the float32-activation GEMV of a K-quant format:
// per 8 weights, w = q·(d·sc) − dmin·m (q4_K) or (q − 32)·(d·sc) (q6_K),
// then acc += w·x, both as FMAs.
func gemvF32K(t tier, f format, rb int) {
	name := fmt.Sprintf("gemvF32%s%sR%d", f.name, t.name, rb)
	w, s, x, nb := kernel(name, fmt.Sprintf("%s computes %d rows of a %s × f32 GEMV (%s tier).", name, rb, f.name, t.name), "x", "*float32")
	acc := t.zeroAccs(rb)
	nibble := YMM()
	VPBROADCASTD(kc(cNibble), nibble)
	var three VecVirtual
	if f == q6_K {
		three = YMM()
		VPBROADCASTD(kc(cThree), three)
	}
	row := GP64()
	blockLoop(name, f, w, x, nb, 1024, nil, func() {
		eachRow(w, s, row, rb, f.bytes, f32RowDist, func(r int) {
			switch f {
			case q4_K, q5_K:
				t.q4KGroups(row, f, nibble, func(j, k int, q, d1, m1 VecVirtual) {
					VFMSUB213PS(m1, d1, q) // q·d1 − m1
					VFMADD231PS(Mem{Base: x, Disp: 4 * (32*j + 8*k)}, q, acc[r])
				})
			case q6_K:
				scs := t.q6KSubScales(row)
				for n := range 2 {
					for quarter := range 4 {
						for k := range 4 {
							l := 8 * k
							lo := t.q6Levels8(row, n, quarter, l, nibble, three)
							VCVTDQ2PS(lo, lo)
							sub := 8*n + 2*quarter + k/2
							sv, s32 := laneBroadcast(scs[sub/8], sub%8), YMM()
							VMULPS(kc(cMinus32), sv, s32) // −32·s
							VFMADD213PS(s32, sv, lo)      // q·s − 32·s
							VFMADD231PS(Mem{Base: x, Disp: 4 * (128*n + 32*quarter + l)}, lo, acc[r])
						}
					}
				}
			}
		})
	})
	t.storeRows(acc)
}
