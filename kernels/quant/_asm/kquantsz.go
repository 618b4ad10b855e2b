package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The q4_K × Q8_K GEMV of the AVX-512 tiers (up to 4 rows a pass), on
// 512-bit vectors. A 256-bit row of a super-block is short of ports 0 and
// 1, the only ones its 256-bit VPMADDUBSW and VPDPWSSD run on; their
// 512-bit forms run on ports 0 and 5, two a cycle (measured here), so half
// as many of them do the same work. A 512-bit vector holds 64 nibble bytes,
// two chunks: its low nibbles are sub-blocks j and j+2, its high nibbles
// j+1 and j+3. The activations are laid out to match once per call
// (prepQ8K) and each pair of sub-block scales is spread over the two
// halves by one VPERMD.

// q8kPrep is the size of one super-block's prepared activations.
const q8kPrep = 256

// prepQ8K generates func(dst *byte, xq *byte, nb int): the levels of nb
// Q8_K blocks at xq, per block as [y0 y2] [y1 y3] [y4 y6] [y5 y7] (yj the
// 32 levels of sub-block j), q8kPrep bytes a block at dst.
func prepQ8K(t tier) {
	dst, xq, nb := blocksKernel("prepQ8K"+t.name, "prepQ8K"+t.name+" lays out the levels of Q8_K blocks for the 512-bit q4_K kernels.", "dst *byte", "xq *byte")
	countLoop("prepQ8K"+t.name, nb, func() {
		for v, sb := range [4]int{0, 1, 4, 5} {
			z := ZMM()
			VMOVDQU64(Mem{Base: xq, Disp: q8kQs + 32*sb}, z.AsY())
			VINSERTI64X4(Imm(1), Mem{Base: xq, Disp: q8kQs + 32*(sb+2)}, z, z)
			VMOVDQU64(z, Mem{Base: dst, Disp: 64 * v})
		}
	}, advance{dst, q8kPrep}, advance{xq, q8kBytes})
	VZEROUPPER()
	RET()
}

// gemvQ4KZ generates gemvK for q4_K on 512-bit vectors (see above). The
// prepared activations follow the nb Q8_K blocks at xq.
func gemvQ4KZ(t tier, rb int) {
	f := q4_K
	name := fmt.Sprintf("gemvQ8%s%sR%d", f.name, t.name, rb)
	w, s, xq, nb := kernel(name, fmt.Sprintf("%s computes %d rows of a %s × Q8_K GEMV (%s tier, 512-bit).", name, rb, f.name, t.name), "xq", "*byte")
	acc := zeroAccsZ(rb)
	nibble := ZMM()
	VBROADCASTI64X4(kc(cNibble), nibble)
	// Dword indices of VPERMD: sub-block scales (a, b) to lanes 0–7, 8–15.
	var spread [4]VecVirtual
	for i := range spread {
		spread[i] = ZMM()
		VMOVDQU64(kc(cKSpread+2*i), spread[i])
	}
	prep := GP64()
	IMUL3Q(U32(q8kBytes), nb, prep)
	ADDQ(xq, prep)
	scw := AllocLocal(8) // d·dy, dmin·dy
	row := GP64()
	blockLoop(name, f, w, xq, nb, q8kBytes, newNextPass(w, s, rb, rb*f.bytes), func() {
		dy := YMM()
		VBROADCASTSS(Mem{Base: xq}, dy)
		bs8 := t.subBlockSums(xq)
		eachRow(w, s, row, rb, f.bytes, kRowDist(f, rb), func(r int) {
			sc, mn := unpackScalesMins(row)
			// Scales as dwords holding the int16 scale twice (VPDPWSSD pairs).
			x, scd := XMM(), ZMM()
			VMOVQ(sc, x)
			VPMOVZXBD(x, scd.AsY())
			hi := YMM()
			VPSLLD(Imm(16), scd.AsY(), hi)
			VPORD(hi, scd.AsY(), scd.AsY())
			msum := YMM()
			VMOVQ(mn, msum.AsX())
			VPMOVZXBW(msum.AsX(), msum.AsX())
			VPMADDWD(bs8, msum.AsX(), msum.AsX())
			iacc := ZMM()
			VPXORD(iacc, iacc, iacc)
			for half := range 2 {
				q, lo, hn := ZMM(), ZMM(), ZMM()
				VMOVDQU64(Mem{Base: row, Disp: 16 + 64*half}, q)
				VPANDD(nibble, q, lo)
				VPSRLW(Imm(4), q, hn)
				VPANDD(nibble, hn, hn)
				for k, lv := range []VecVirtual{lo, hn} {
					v := 2*half + k // prepared vector and scale pair
					sv := ZMM()
					VPERMD(scd, spread[v], sv)
					t.scaleDot(lv, Mem{Base: prep, Disp: 64 * v}, sv, iacc)
				}
			}
			t.addSuperScaled(row, dy, iacc, msum, scw, acc[r])
		})
	}, advance{prep, q8kPrep})
	t.storeRows(acc)
}

// zeroAccsZ returns rb zeroed 512-bit accumulators, one per row.
func zeroAccsZ(rb int) []VecVirtual {
	acc := make([]VecVirtual, rb)
	for r := range acc {
		acc[r] = ZMM()
		VPXORD(acc[r], acc[r], acc[r])
	}
	return acc
}

// gemvQ6KZ generates gemvK for q6_K on 512-bit vectors (AVX-512 tiers, up
// to 4 rows a pass). Per half of a super-block (128 levels), the 64 bytes
// of low bits are one vector: their low nibbles are quarters 0 and 1,
// their high nibbles quarters 2 and 3, each 64 levels whose activations
// are contiguous. The 32 bytes of high bits, loaded into both halves of a
// vector, are brought into place by one variable word shift per pair of
// quarters. A 128-bit lane is then one 16-level sub-block, whose scale a
// VPSHUFB spreads over the lane.
func gemvQ6KZ(t tier, rb int) {
	f := q6_K
	name := fmt.Sprintf("gemvQ8%s%sR%d", f.name, t.name, rb)
	w, s, xq, nb := kernel(name, fmt.Sprintf("%s computes %d rows of a %s × Q8_K GEMV (%s tier, 512-bit).", name, rb, f.name, t.name), "xq", "*byte")
	acc := zeroAccsZ(rb)
	nibble, low2 := ZMM(), ZMM()
	VBROADCASTI64X4(kc(cNibble), nibble)
	VBROADCASTI64X4(kc(cLow2), low2)
	var cnt, ctrl [2]VecVirtual
	for i := range 2 {
		cnt[i], ctrl[i] = ZMM(), ZMM()
		VMOVDQU64(kc(cQ6Shift+2*i), cnt[i])
		VMOVDQU64(kc(cQ6Scale+2*i), ctrl[i])
	}
	scw := AllocLocal(8) // d·dy (8: frames are whole words)
	row := GP64()
	blockLoop(name, f, w, xq, nb, q8kBytes, newNextPass(w, s, rb, rb*f.bytes), func() {
		bsums := YMM()
		t.loadu(Mem{Base: xq, Disp: q8kBsums}, bsums)
		eachRow(w, s, row, rb, f.bytes, kRowDist(f, rb), func(r int) {
			// −32·Σ sc·bsum, in the low 8 lanes.
			sc16, iacc := YMM(), ZMM()
			VPMOVSXBW(Mem{Base: row, Disp: 192}, sc16)
			VPMADDWD(bsums, sc16, iacc.AsY())
			VPSLLD(Imm(5), iacc.AsY(), iacc.AsY())
			zero := YMM()
			VPXORD(zero, zero, zero)
			VPSUBD(iacc.AsY(), zero, iacc.AsY())
			for n := range 2 {
				l4, h := ZMM(), ZMM()
				VMOVDQU64(Mem{Base: row, Disp: 64 * n}, l4)
				VBROADCASTI64X4(Mem{Base: row, Disp: 128 + 32*n}, h)
				sc8, bc := XMM(), ZMM()
				VPMOVSXBW(Mem{Base: row, Disp: 192 + 8*n}, sc8)
				VSHUFI32X4(Imm(0), sc8.AsZ(), sc8.AsZ(), bc) // the 8 scales in every 128-bit lane
				// Quarters 0 and 1 (low nibbles), then 2 and 3 (high nibbles).
				for pair := range 2 {
					q, hb := ZMM(), ZMM()
					if pair == 0 {
						VPANDD(nibble, l4, q)
						VPSLLVW(cnt[0], h, hb) // bits 0–1 (quarter 0) and 2–3 (quarter 1) to 4–5
					} else {
						VPSRLW(Imm(4), l4, q)
						VPANDD(nibble, q, q)
						VPSRLVW(cnt[1], h, hb) // bits 4–5 (quarter 2) stay, 6–7 (quarter 3) to 4–5
					}
					VPANDD(low2, hb, hb)
					VPORD(hb, q, q)
					sv := ZMM()
					VPSHUFB(ctrl[pair], bc, sv)
					t.scaleDot(q, Mem{Base: xq, Disp: q8kQs + 128*n + 64*pair}, sv, iacc)
				}
			}
			VCVTDQ2PS(iacc, iacc)
			d := XMM()
			t.halfToFloat(Mem{Base: row, Disp: 208}, d)
			VMULSS(Mem{Base: xq}, d, d)
			VMOVSS(d, scw)
			VFMADD231PS_BCST(scw, iacc, acc[r])
		})
	})
	t.storeRows(acc)
}
