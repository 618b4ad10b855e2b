package main

import (
	"math/bits"
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
// scale overflows (1/d = Inf), and in range they agree. AVX-512 (q in
// pairs) goes through registers, one 32-byte store a pair: VPMOVDB's
// store form was no faster (Zen 5, the Q8_0 quads in one process,
// interleaved, rows of 4 to 2048 blocks in L1 to L3: this form took
// 0.97–0.99 of its time in one run, 0.97–1.04 in another).
func (w qwidth) storeLevels(q []VecVirtual, m Mem) {
	if w.z() {
		for i := 0; i < len(q); i += 2 {
			lo, hi := XMM(), XMM()
			VPMOVDB(q[i], lo)
			VPMOVDB(q[i+1], hi)
			y := YMM()
			VINSERTI128(Imm(1), hi, lo.AsY(), y)
			VMOVDQU(y, m.Offset(16*i))
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
//
// Q8_0 goes four blocks at a time (quadRows: AVX2 in rows of 64 blocks,
// AVX-512 a row of one quad each) while four remain, the rest one block
// at a time (block). Over a long row (Zen 4, L2) the quads take 4.1–4.3
// ns a block in both widths, one block at a time 8.9 (AVX-512) and 11.1
// (AVX2); a row of four blocks (hd 128) 24–27 ns, against 36–37 (AVX-512)
// and 45–47 (AVX2).
func quantizeQ8_0(w qwidth, q81 bool) {
	act, bytes := "Q8_0", 2+32
	if q81 {
		act, bytes = "Q8_1", 4+32
	}
	name := "quantize" + act + w.name
	dst, x, nb := blocksKernel(name, name+" quantizes nb blocks of 32 floats to "+act+", as quantize_row_"+strings.ToLower(act)+"_ref.", "dst *byte", "x *float32")
	absMask, half, one := w.vec(), w.vec(), w.vec()
	VPBROADCASTD(kc(cAbsMask), absMask)
	VBROADCASTSS(kc(cHalf), half)
	VBROADCASTSS(kc(cOneF), one)
	if !q81 {
		// The quads as rows of 1<<shift blocks (quadRows): AVX-512 one
		// quad each, AVX2 64, then one row of the quads left; then the
		// blocks left one at a time. AVX2's rows of one quad had spent
		// much of a row's time in the row loops: with both passes' work
		// removed, the loops and pass 2's prefetches still took 0.20–0.29
		// of a 128-block row's time in L1 (Zen 3). Rows of 64, in one
		// process, interleaved (B/A): that row 0.90; a head-major
		// batch-copy's rows (8 KV heads × 512 tokens × hd 128) 0.90 in
		// L3, 0.99 from DRAM.
		shift := 2
		if !w.z() {
			shift = 6
		}
		rb := 1 << shift
		lDst, lX, lRows := AllocLocal(8), AllocLocal(8), AllocLocal(8)
		MOVQ(dst, lDst)
		MOVQ(x, lX)
		r := GP64()
		MOVQ(nb, r)
		SHRQ(Imm(uint64(shift)), r)
		MOVQ(r, lRows)
		scales := w.scalesScratch()
		w.quadRows(name, lDst, lX, lRows, U32(rb*bytes), U32(rb*128), U32(rb), scales, absMask, half, one)
		if rb > 4 {
			lNb, lDS, lXS := AllocLocal(8), AllocLocal(8), AllocLocal(8)
			MOVQ(nb, r)
			ANDQ(Imm(uint64((rb-1)&^3)), r)
			short := "short" + name
			JZ(LabelRef(short))
			MOVQ(r, lNb)
			t := GP64()
			IMUL3Q(U32(bytes), r, t)
			MOVQ(t, lDS)
			SHLQ(Imm(7), r)
			MOVQ(r, lXS)
			MOVQ(U32(1), lRows)
			w.quadRows(name+"r", lDst, lX, lRows, lDS, lXS, lNb, scales, absMask, half, one)
			Label(short)
		}
		MOVQ(lDst, dst)
		MOVQ(lX, x)
		ANDQ(Imm(3), nb)
	}
	countLoop(name, nb, func() { w.block(name, dst, x, q81, absMask, half, one) }, advance{dst, bytes}, advance{x, 128})
	VZEROUPPER()
	RET()
}

// quantizeRowsQ8_0 generates func(dst *byte, dstStride int, x *float32,
// xStride int, nrows, nb int): nrows rows of nb Q8_0 blocks (nb a
// positive multiple of 4), row r from x + r·xStride bytes to dst +
// r·dstStride bytes, as quantizeQ8_0 writes each: the KV cache's stores,
// a short row (hd 128: 4 blocks) per KV head and token, into a strided
// cache. One call runs the quads of several rows, pass 1 for all of them
// then pass 2, so that short rows overlap as a long one's quads do; a
// chunk (whole rows, about 64 blocks) with a block the quads do not take
// is then written again one block at a time. A chunk is at least a row,
// so rows longer than a chunk go to quantizeQ8_0 instead, a row a call
// (the package's rowsChunk).
func quantizeRowsQ8_0(w qwidth) {
	name := "quantizeRowsQ8_0" + w.name
	TEXT(name, NOSPLIT, "func(dst *byte, dstStride int, x *float32, xStride int, nrows, nb int)")
	Pragma("noescape")
	Doc(name + " quantizes nrows rows of nb Q8_0 blocks (nb a positive multiple of 4), row r from x + r·xStride bytes to dst + r·dstStride bytes, as quantize_row_q8_0_ref.")
	lDst, lX, lRows := AllocLocal(8), AllocLocal(8), AllocLocal(8)
	{
		r := GP64()
		Load(Param("dst"), r)
		MOVQ(r, lDst)
		Load(Param("x"), r)
		MOVQ(r, lX)
		Load(Param("nrows"), r)
		MOVQ(r, lRows)
	}
	absMask, half, one := w.vec(), w.vec(), w.vec()
	VPBROADCASTD(kc(cAbsMask), absMask)
	VBROADCASTSS(kc(cHalf), half)
	VBROADCASTSS(kc(cOneF), one)
	w.quadRows(name, lDst, lX, lRows, paramAddr("dstStride"), paramAddr("xStride"), paramAddr("nb"), w.scalesScratch(), absMask, half, one)
	VZEROUPPER()
	RET()
}

// scalesScratch allocates the frame bytes where pass 1 leaves a chunk's
// scales for pass 2: 64 float32 1/d, then 64 f16 d.
func (w qwidth) scalesScratch() Mem {
	return AllocLocal(64*4 + 64*2)
}

// quadRows emits the Q8_0 quads of the lRows rows of nb blocks (a
// multiple of 4) from lX to lDst, rows xStride and dstStride bytes apart
// (registers or memory): in chunks of whole rows, up to 64 blocks, the
// scales of every quad (pass 1: quadScales, AVX2 scalesAVX2), then the
// levels of every block (pass 2, levels); a chunk with a block the quads
// do not take is then written again one block at a time. It leaves lDst
// and lX on the row after the last and lRows 0.
//
// Two passes over a chunk, not one software-pipelined loop: an AVX2 loop
// doing pass 1 of the next eight blocks beside pass 2 of these eight
// (their scales handed on through a two-slot ring) wrote the same bytes
// and took 1.01–1.05 times as long (Zen 3, a 64- and a 2048-block row, one
// process, interleaved, 15 runs; 0.92–0.93 in two more while the host
// slowed the committed loop by a third). So the passes' order is not what
// bounds AVX2 here. Taken out one at a time, the levels cost 5.3 of a
// block's 13.2 cycles, the maxima 4.1, and the rest (loops, scales,
// copies, prefetches) 3.5. On Zen 3, VMULPS and VBLENDVPS share two pipes
// (two a cycle together) and VADDPS and VCVTTPS2DQ the other two, so each
// pair carries at least 4 cycles of a block's levels; with pass 1 the
// pipes' floor is about 8 cycles a block, and what else holds it at 13 is
// not known.
//
// Zen 5, AVX-512 (rows of 4 to 2048 blocks in L1 to L3, one process,
// interleaved, B/A against the committed code): the same kind of
// ablation, timing only, shows neither its vector ops nor its
// instruction count bound it. Without pass 2's levels a call took
// 0.64–0.69 of the time, without its stores' packing 0.98, without the
// rounding's copysign and add 0.96–0.98, both 0.91–0.96; without pass
// 1's shuffles and divisions as well as the levels 0.51–0.58, so pass 1
// runs at about 1.5 vector ops a cycle. Pass 2 takes two blocks an
// iteration, its rounding constant made once a chunk (per, below): in
// one process, interleaved, 6 rounds, 0.94–0.99 (rows of 4 blocks in L1
// to L3, 0.98 in L3; rows of 2048 0.985); in sweeps (a q8_0 batch-copy,
// 8 KV heads × 512 tokens × hd 128, 3–5 rounds) 0.97 head-major and
// 0.95–0.96 position-major in L3, 0.99 and 0.95 from DRAM; an append in
// L3 0.95–0.96. Four blocks an iteration (a quad) measured 0.97–0.99 in
// one process, but a head-major batch-copy in L3 ran at either 75 or 86
// µs from one sweep to the next (two blocks: 76–79, one: 77–80), as a
// stop before, when it went 1.07; two it is. AVX2 two at a time: 0.98–1.02
// in both kinds of run, so it keeps one. Not kept: the levels packed by
// VPACKSSDW, VPMOVWB and one VPERMD instead of two VPMOVDB, 1.02–1.04;
// chunks of 16 or 32 blocks, 1.00–1.20 (and more than 64 no longer fit
// a NOSPLIT frame); the maxima by VRANGEPS (AVX512DQ; a pair of vectors
// in one op), which drops a NaN, 0.96–0.98. The AVX2 quads run 1.1–1.25
// times as long as AVX-512's on Zen 5.
func (w qwidth) quadRows(name string, lDst, lX, lRows Mem, dstStride, xStride, nb Op, scales Mem, absMask, half, one VecVirtual) {
	// eachRow emits, for the k rows from the chunk's first, body(d, x)
	// with d, x the row's first block; it leaves pd, px on the row after.
	pd, px := GP64(), GP64()
	eachRow := func(label string, k GPVirtual, body func(d, x GPVirtual)) {
		MOVQ(lDst, pd)
		MOVQ(lX, px)
		kk := GP64()
		MOVQ(k, kk)
		Label(label)
		d, x := GP64(), GP64()
		MOVQ(pd, d)
		MOVQ(px, x)
		body(d, x)
		ADDQ(dstStride, pd)
		ADDQ(xStride, px)
		DECQ(kk)
		JNZ(LabelRef(label))
	}
	// eachBlocks emits body for the nb blocks of the row at (d, x), per
	// blocks at a time (nb a multiple of per).
	eachBlocks := func(label string, per int, d, x GPVirtual, body func()) {
		j := GP64()
		MOVQ(nb, j)
		if per > 1 {
			SHRQ(Imm(uint64(bits.TrailingZeros(uint(per)))), j)
		}
		Label(label)
		body()
		ADDQ(U32(34*per), d)
		ADDQ(U32(128*per), x)
		DECQ(j)
		JNZ(LabelRef(label))
	}
	eachBlock := func(label string, d, x GPVirtual, body func()) { eachBlocks(label, 1, d, x, body) }
	chunk, done := "quadchunk"+name, "quaddone"+name
	k, flag := GP64(), GP64()
	Label(chunk)
	CMPQ(lRows, Imm(0))
	JE(LabelRef(done))
	// Pass 1: the scales of whole rows' quads, while the chunk stays
	// within 64 blocks and rows remain (k rows).
	XORQ(k, k)
	XORQ(flag, flag)
	if !w.z() {
		w.scalesAVX2(name, lDst, lX, lRows, dstStride, xStride, nb, k, flag, pd, px, scales, absMask)
	} else {
		o := GP64() // the quad's offset in the scales: 8 bytes of f16 d a quad
		XORQ(o, o)
		c := newScaleConsts(absMask)
		w.eachQuad(name, lDst, lX, lRows, dstStride, xStride, nb, k, pd, px, "p2"+name, func(d, x GPVirtual) {
			slow, next := "p1slow"+name, "p1next"+name
			w.quadScales(x, scales, o, slow, c)
			JMP(LabelRef(next))
			Label(slow)
			MOVQ(U32(1), flag)
			Label(next)
			ADDQ(U32(8), o)
		})
	}
	// Pass 2: the levels of the k rows. Pass 1 only reads, at memory's
	// pace, and pass 2 only computes, on the chunk pass 1 left in cache;
	// so each block of pass 2 also prefetches its 128 source bytes of the
	// next chunk, k rows on, into L1. (The next chunk has as many rows
	// while they last; past the end a prefetch touches whatever follows,
	// harmlessly: it never faults.) Zen 3, AVX2, a prefill's q8_0
	// batch-copy (8 KV heads × 512 tokens × hd 128) from DRAM, in one
	// process, interleaved: 15.2–18.4 → 13.3–15.0 ns a block (B/A
	// 0.82–0.85 in five runs; in L3 0.92–0.94), into L2 (PREFETCHT1).
	// Into L1 (PREFETCHT0) was no better there, and better on Zen 5
	// (sweep A/B, 3–4 rounds, that batch-copy, head- and position-major:
	// AVX-512 0.90 in L3 and 0.94–0.96 from DRAM, AVX2 0.95–0.97 and
	// 0.97–0.98; a scratch loop over rows of 4 to 2048 blocks in L2 and
	// L3, 0.86–0.91 and 0.95–0.99). Two chunks ahead: no better on
	// either. AVX-512 prefetches the next chunk's destination line of the
	// block too; AVX2's pass 1 fetches its own (scalesAVX2).
	Label("p2" + name)
	// rowsAhead is the bytes from a row to the row k rows on, rows
	// stride bytes apart: ahead in the source, aheadD (AVX-512) in the
	// destination.
	rowsAhead := func(stride Op) GPVirtual {
		r := GP64()
		MOVQ(k, r)
		if c, ok := stride.(U32); ok {
			IMUL3Q(c, r, r)
		} else {
			IMULQ(stride, r)
		}
		return r
	}
	ahead := rowsAhead(xStride)
	var aheadD GPVirtual
	if w.z() {
		aheadD = rowsAhead(dstStride)
	}
	// AVX2: levels' loop-invariant constants (rc, −rc, the pack order),
	// made once per chunk, not per block (Zen 3, in one process,
	// interleaved, B/A: 0.955–0.97 in L1 and L3, 1.00 from DRAM).
	var consts []VecVirtual
	if w.z() {
		rc := w.vec()
		VBROADCASTSS(kc(cRoundC), rc)
		consts = []VecVirtual{rc}
	} else {
		rc, nrc, idx := w.vec(), w.vec(), w.vec()
		VBROADCASTSS(kc(cRoundC), rc)
		VXORPS(nrc, nrc, nrc)
		VSUBPS(rc, nrc, nrc)
		VMOVDQU(kc(cPackOrder), idx)
		consts = []VecVirtual{rc, nrc, idx}
	}
	j := GP64() // the block's index in the chunk, in scales
	XORQ(j, j)
	per := 1 // blocks an iteration: AVX-512 two (see above)
	if w.z() {
		per = 2
	}
	eachRow("p2row"+name, k, func(d, x GPVirtual) {
		eachBlocks("p2blk"+name, per, d, x, func() {
			if w.z() {
				PREFETCHT0(Mem{Base: d, Index: aheadD, Scale: 1})
			}
			for b := range per {
				xb := Mem{Base: x, Index: ahead, Scale: 1, Disp: 128 * b}
				PREFETCHT0(xb)
				PREFETCHT0(xb.Offset(64))
				h := GP32() // d, from scales to the block
				MOVWLZX(scales.Idx(j, 2).Offset(64*4+2*b), h)
				MOVW(h.As16(), Mem{Base: d, Disp: 34 * b})
				w.levels(d, x, 34*b, 128*b, scales.Idx(j, 4).Offset(4*b), absMask, consts)
			}
			ADDQ(U32(per), j)
		})
	})
	// A quad the quads did not take: the chunk again, a block at a time.
	{
		ok := "p3skip" + name
		TESTQ(flag, flag)
		JZ(LabelRef(ok))
		eachRow("p3row"+name, k, func(d, x GPVirtual) {
			eachBlock("p3blk"+name, d, x, func() { w.block("p3"+name, d, x, false, absMask, half, one) })
		})
		Label(ok)
	}
	MOVQ(pd, lDst) // the rows after the chunk
	MOVQ(px, lX)
	SUBQ(k, lRows)
	JMP(LabelRef(chunk))
	Label(done)
}

// block emits the quantization of the block at x to dst (one Q8_0 or,
// with q81, Q8_1 block); name makes its labels unique.
func (w qwidth) block(name string, dst, x GPVirtual, q81 bool, absMask, half, one VecVirtual) {
	qs, bytes := 2, 34
	if q81 {
		qs, bytes = 4, 36
	}
	f127 := XMM()
	VMOVSS(kc(c127), f127)
	nanBlock, next := "nan"+name, "next"+name
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
}

// scalesAVX2 is quadRows' pass 1 in AVX2: each quad's four maxima
// (quadMaxima), and the scales of two quads at a time (scalePair): one ymm
// division for d and one for 1/d per eight blocks, the f16 conversion and
// the tests of non-finite and tiny maxima likewise. The first quad of a
// pair waits at scr; an odd quad at the end is paired with itself (the
// copy's scales land past the chunk's last block, unread). Rows while the
// chunk stays within 64 blocks (at least one row).
//
// The scales go to the frame bytes at scales (block j's 1/d at 4j, its d
// at 256 + 2j), two stores a pair, where pass 2 takes them; each quad
// prefetches its destination's lines instead (into L1: pass 2 writes
// them once pass 1 has been through the chunk). Against storing each
// block's d and 1/d into the destination (16 scalar stores a pair, and
// pass 2's prefetch of the next chunk's destination), in one process,
// interleaved (B/A, Zen 3, the shapes below): a 128-block row in L1
// 0.94–0.96, batch-copy rows in L3 0.93–0.95, from DRAM 0.97–0.99
// head-major and 0.95 position-major. Without the destination's
// prefetch, from DRAM: 1.04–1.06.
//
// Quad by quad (as quadScales, two ymm of two blocks each), a quad took
// four ymm divisions, a quad's chain of two of them about 25 cycles on
// Zen 3. Paired, against that, in one process, interleaved (B/A, Zen 3;
// 8 KV heads × 512 tokens × hd 128, one of K or V): a 128-block row in
// L1 0.90–0.92, the head-major batch-copy's rows in L3 0.92–0.93 and from
// DRAM 0.94–0.95, the position-major one's 0.93 and 0.97–0.98. A bad
// block does not stop the pass: flag is set and pass 3 writes the chunk
// again. It leaves k, pd and px as pass 1 does.
func (w qwidth) scalesAVX2(name string, lDst, lX, lRows Mem, dstStride, xStride, nb Op, k, flag, pd, px GPVirtual, scales Mem, absMask VecVirtual) {
	scr := AllocLocal(24) // the pair's first quad: its maxima; the pair's offset in scales
	odd := GP64()
	XORQ(odd, odd)
	MOVQ(U32(0), scr.Offset(16))
	done := "p1done" + name
	w.eachQuad(name, lDst, lX, lRows, dstStride, xStride, nb, k, pd, px, done, func(d, x GPVirtual) {
		m := w.quadMaxima(x, absMask)
		for _, off := range []int{0, 64, 128} {
			PREFETCHT0(Mem{Base: d, Disp: off})
		}
		second, next := "p1second"+name, "p1next"+name
		XORQ(U32(1), odd)
		JZ(LabelRef(second))
		VMOVDQU(m, scr)
		JMP(LabelRef(next))
		Label(second)
		w.scalePair(name+"b", scr, m, flag, scales)
		Label(next)
	})
	Label(done)
	{
		even := "p1even" + name
		TESTQ(odd, odd)
		JZ(LabelRef(even))
		m := XMM()
		VMOVDQU(scr, m)
		w.scalePair(name+"t", scr, m, flag, scales)
		Label(even)
	}
}

// eachQuad emits pass 1's walk over a chunk: body(d, x) for each quad of
// whole rows from lDst and lX (d, x its first block), k counting the
// rows, while the next row keeps the chunk within 64 blocks (the scales'
// room: scalesScratch) and rows remain; it jumps to end when they run
// out and falls through otherwise, pd and px on the row after the chunk.
func (w qwidth) eachQuad(name string, lDst, lX, lRows Mem, dstStride, xStride, nb Op, k, pd, px GPVirtual, end string, body func(d, x GPVirtual)) {
	blocks := GP64()
	XORQ(blocks, blocks)
	MOVQ(lDst, pd)
	MOVQ(lX, px)
	row, quad := "p1row"+name, "p1quad"+name
	Label(row)
	d, x, nq := GP64(), GP64(), GP64()
	MOVQ(pd, d)
	MOVQ(px, x)
	MOVQ(nb, nq)
	ADDQ(nq, blocks)
	SHRQ(Imm(2), nq)
	Label(quad)
	body(d, x)
	ADDQ(U32(4*34), d)
	ADDQ(U32(4*128), x)
	DECQ(nq)
	JNZ(LabelRef(quad))
	INCQ(k)
	ADDQ(dstStride, pd)
	ADDQ(xStride, px)
	CMPQ(k, lRows)
	JE(LabelRef(end))
	t := GP64()
	MOVQ(nb, t)
	ADDQ(blocks, t)
	CMPQ(t, U32(64))
	JBE(LabelRef(row))
}

// scalePair stores the scales of two quads (see quadScales) at scales: the
// first's maxima at scr, the second's in m; the pair's offset in the 1/d
// (32 bytes a pair) at scr+16, which it advances. It sets flag
// where a block is not for the quads: a NaN or ±Inf, or a largest |x|
// below 2⁻¹⁰⁰ but not 0 (its 1/d overflows, and the levels of an Inf
// multiplier are kept as their low bytes, which AVX2's saturating packs
// do not).
func (w qwidth) scalePair(name string, scr Mem, m VecVirtual, flag GPVirtual, scales Mem) {
	g := YMM()
	VMOVDQU(scr, g.AsX())
	VINSERTI128(Imm(1), m, g, g) // [first's m0–m3 | second's]
	{
		big, tiny, zero := YMM(), YMM(), YMM()
		VPBROADCASTD(kc(cInfBits), big)
		VPBROADCASTD(kc(cTinyBits), tiny)
		VPXOR(zero, zero, zero)
		nf, lo, nz := YMM(), YMM(), YMM()
		VPCMPEQD(big, g, nf)
		VPCMPGTD(big, g, lo) // bits > +Inf's: NaN
		VPOR(lo, nf, nf)
		VPCMPGTD(g, tiny, lo) // below 2⁻¹⁰⁰
		VPCMPGTD(zero, g, nz) // and not 0
		VPAND(nz, lo, lo)
		VPOR(lo, nf, nf)
		ok := "p1ok" + name
		VPTEST(nf, nf)
		JZ(LabelRef(ok))
		MOVQ(U32(1), flag)
		Label(ok)
	}
	// d = amax/127, id = d ? 1/d : 0; d as f16 (round to nearest even).
	f127, fone, dv, id, z := YMM(), YMM(), YMM(), YMM(), YMM()
	VBROADCASTSS(kc(c127), f127)
	VBROADCASTSS(kc(cOneF), fone)
	VDIVPS(f127, g, dv)
	VDIVPS(dv, fone, id)
	VXORPS(z, z, z)
	VCMPPS(Imm(4), z, dv, z)
	VANDPS(z, id, id)
	h := XMM()
	VCVTPS2PH(Imm(0), dv, h) // the eight blocks' d, in order
	o := GP64()
	MOVQ(scr.Offset(16), o)
	VMOVUPS(id, scales.Idx(o, 1))
	SHRQ(Imm(1), o)
	VMOVDQU(h, scales.Idx(o, 1).Offset(64*4))
	ADDQ(U32(32), scr.Offset(16))
}

// laneMaxima returns, for each of the four blocks at x, the largest |x|
// (as int32 bits: see hmaxBits) of each lane over the block's vectors.
func (w qwidth) laneMaxima(x GPVirtual, absMask VecVirtual) []VecVirtual {
	m := make([]VecVirtual, 4)
	for b := range m {
		m[b] = w.vec()
		w.and(Mem{Base: x, Disp: 128 * b}, absMask, m[b])
		for i := 1; i < 32/w.lanes(); i++ {
			a := w.vec()
			w.and(Mem{Base: x, Disp: 128*b + w.vb*i}, absMask, a)
			VPMAXSD(a, m[b], m[b])
		}
	}
	return m
}

// quadMaxima returns, in an xmm, the largest |x| (as int32 bits: see
// hmaxBits) of each of the four blocks at x (AVX2): lane b, block b's.
func (w qwidth) quadMaxima(x GPVirtual, absMask VecVirtual) VecVirtual {
	m := w.laneMaxima(x, absMask)
	var g [2]VecVirtual // g[0]: blocks 0 | 1 by 128-bit lane, g[1]: 2 | 3
	for i := range g {
		g[i] = w.vec()
		t := w.vec()
		VPERM2I128(Imm(0x20), m[2*i+1], m[2*i], g[i])
		VPERM2I128(Imm(0x31), m[2*i+1], m[2*i], t)
		VPMAXSD(t, g[i], g[i])
	}
	lo, hi := w.vec(), w.vec()
	VPUNPCKLQDQ(g[1], g[0], lo) // [b0₀ b0₁ b2₀ b2₁ | b1₀ b1₁ b3₀ b3₁]
	VPUNPCKHQDQ(g[1], g[0], hi) // lanes 2, 3 of each
	VPMAXSD(hi, lo, lo)
	VPSHUFD(Imm(0xb1), lo, hi)
	VPMAXSD(hi, lo, lo) // [m0 m0 m2 m2 | m1 m1 m3 m3]
	u, mm := XMM(), XMM()
	VEXTRACTI128(Imm(1), lo, u)
	VPBLENDD(Imm(0b1010), u, lo.AsX(), mm) // [m0 m1 m2 m3]
	return mm
}

// quadScales is pass 1 of the Q8_0 quantizer for the four blocks at x
// (AVX-512; AVX2's is scalesAVX2): it stores the blocks' 1/d (float32)
// at scales + 2·o and their f16 d at scales + 256 + o, where pass 2
// takes them (o: 8 bytes a quad), or jumps to slow, having written
// nothing, if one of them has a NaN or ±Inf.
//
// Per block it computes what block does, with the four blocks' maxima
// side by side (block b in 128-bit lane b, then lane b of an xmm), so
// that the divisions, the f16 conversion and the tests are done once per
// quad, on an xmm, and stored in two stores. It had stored each block's d
// and 1/d into the block (8 stores and 3 extractions a quad) and divided
// zmm: against that, with pass 2 storing its levels through registers
// (levels), in one process, interleaved (B/A, Zen 5, rows of 4 blocks
// in L1 and L2): 0.92–0.97. Two
// passes, not one: a quad's chain (maxima, two divisions, then the
// levels) is ~70 cycles long, and done in one pass the levels waiting on
// it fill the scheduler, so that quads did not overlap (Zen 4, a long
// row: 6.5 ns a block in one pass with AVX-512, 5.5 with AVX2; 4.2 and
// 4.3 in two). Dividing for two quads at once in a ymm, as AVX2 does
// (scalePair), was no better on Zen 5 (one process, interleaved, 6
// rounds, B/A): rows of 4 blocks in L1 and L2 0.96–0.97, in L3 and
// from DRAM 1.02–1.03, rows of 2048 blocks 1.02. A cpu-clock profile of
// the batch-copy in L3 charges 15 % of the quantizer's samples to the
// instruction after the second VDIVPS (45 % to pass 1, 54 % to pass 2);
// as halving the divisions did not help, that is most likely the quad
// waiting for its maxima (its loads, then the max tree), not the
// divider.
func (w qwidth) quadScales(x GPVirtual, scales Mem, o GPVirtual, slow string, c scaleConsts) {
	m := w.laneMaxima(x, c.absMask)
	// g: the maxima, block b's in every lane of 128-bit lane b.
	pair := func(a, b VecVirtual, lo, hi uint64) VecVirtual {
		s, t := w.vec(), w.vec()
		VSHUFI32X4(Imm(lo), b, a, s)
		VSHUFI32X4(Imm(hi), b, a, t)
		VPMAXSD(t, s, s)
		return s
	}
	ab := pair(m[0], m[1], 0x44, 0xee) // lanes: a0∨a2, a1∨a3, b0∨b2, b1∨b3
	cd := pair(m[2], m[3], 0x44, 0xee)
	g := pair(ab, cd, 0x88, 0xdd) // lane b: block b
	{
		t := w.vec()
		VPSHUFD(Imm(0x4e), g, t)
		VPMAXSD(t, g, g)
		VPSHUFD(Imm(0xb1), g, t)
		VPMAXSD(t, g, g)
	}
	// gm: block b's maximum in lane b of an xmm.
	VPERMD(g, c.idx, g)
	gm := g.AsX()
	// To slow if a block is not for the quads.
	k := K()
	VPCMPUD(Imm(5), c.inf, gm, k) // not below +Inf: NaN or ±Inf
	KORTESTW(k, k)
	JNZ(LabelRef(slow))
	// d = amax/127, id = d ? 1/d : 0 for the four blocks at once.
	d, id := XMM(), XMM()
	VDIVPS(c.f127, gm, d)
	nz := K()
	VCMPPS(Imm(4), c.zero, d, nz) // d != 0
	VDIVPS_Z(d, c.one, nz, id)
	h := XMM()
	VCVTPS2PH(Imm(0), d, h) // the four blocks' f16 d, in order
	VMOVQ(h, scales.Idx(o, 1).Offset(64*4))
	VMOVUPS(id, scales.Idx(o, 2))
}

// scaleConsts are quadScales' constants, made once per chunk (quadRows).
type scaleConsts struct {
	absMask, idx         VecVirtual // zmm
	inf, f127, one, zero VecVirtual // xmm
}

func newScaleConsts(absMask VecVirtual) scaleConsts {
	c := scaleConsts{absMask: absMask, idx: ZMM(), inf: XMM(), f127: XMM(), one: XMM(), zero: XMM()}
	VMOVDQU(kc(cLane4), c.idx.AsY())
	VPBROADCASTD(kc(cInfBits), c.inf)
	VBROADCASTSS(kc(c127), c.f127)
	VBROADCASTSS(kc(cOneF), c.one)
	VXORPS(c.zero, c.zero, c.zero)
	return c
}

// levels is pass 2 of the Q8_0 quantizer for the block xOff bytes from x,
// into the block dOff bytes from dst: the levels roundf(x·id) over the
// 1/d at id (pass 1 left it in its scales; see scalesAVX2 and
// quadScales). The rounding
// is roundf's in two steps: trunc(y + copysign(0.5 − 2⁻²⁵, y)), exact for
// every finite float y (the sum rounds to nearest; checked exhaustively),
// truncated by VCVTTPS2DQ. The copysign is one instruction: AVX-512 a
// VPTERNLOGD, AVX2 a VBLENDVPS picking −(0.5 − 2⁻²⁵) by y's sign bit
// (against a VANDNPS and a VORPS: Zen 3, in one process, interleaved,
// B/A 0.93 in L1 and L3, 0.99–1.00 from DRAM, head- and position-major
// rows). Its constants come made once a chunk (quadRows): AVX-512 rc,
// AVX2 rc, −rc and the pack order.
func (w qwidth) levels(dst, x GPVirtual, dOff, xOff int, id Mem, absMask VecVirtual, consts []VecVirtual) {
	at := Mem{Base: dst, Disp: 2 + dOff}
	idb := w.vec()
	VBROADCASTSS(id, idb)
	rc := consts[0]
	var nrc, idx VecVirtual
	if !w.z() {
		nrc, idx = consts[1], consts[2]
	}
	q := make([]VecVirtual, 32/w.lanes())
	for i := range q {
		q[i] = w.vec()
		VMULPS(Mem{Base: x, Disp: xOff + w.vb*i}, idb, q[i])
		s := w.vec()
		if w.z() {
			VMOVAPS(rc, s)
			VPTERNLOGD(Imm(0xe2), q[i], absMask, s) // absMask ? s : y: y's sign, rc's bits
		} else {
			VBLENDVPS(q[i], nrc, rc, s) // y's sign picks −rc
		}
		VADDPS(s, q[i], q[i])
		VCVTTPS2DQ(q[i], q[i])
	}
	if w.z() {
		w.storeLevels(q, at)
		return
	}
	// AVX2 packs here itself, not by storeLevels: |level| ≤ 127 here, so
	// saturating packs keep it with no masking (packStore32 masks, for
	// the block path's out-of-range levels), and the order is hoisted.
	a, c := w.vec(), w.vec()
	VPACKSSDW(q[1], q[0], a)
	VPACKSSDW(q[3], q[2], c)
	VPACKSSWB(c, a, a)
	VPERMD(a, idx, a)
	VMOVDQU(a, at)
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

// paramAddr is the stack address of the argument name.
func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}
