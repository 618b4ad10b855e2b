package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// scores writes buf[j] = scale·(q·k_j) for j < cnt, k rows db bytes apart.
// Keys go eight at a time (eight independent FMA chains, one q load per
// eight FMAs, one tree reduction per eight keys), the rest one at a time.
func (t tier) scores(buf, q, k, cnt, db GPVirtual, scale Mem) {
	j, row, out := GP64(), GP64(), GP64()
	XORQ(j, j)
	MOVQ(k, row)
	MOVQ(buf, out)
	db3 := GP64()
	LEAQ(Mem{Base: db, Index: db, Scale: 2}, db3)

	by8, by1, done := label("scores_by8"), label("scores_by1"), label("scores_done")
	Label(by8)
	left := GP64()
	MOVQ(cnt, left)
	SUBQ(j, left)
	CMPQ(left, Imm(8))
	JL(LabelRef(by1))
	var acc [8]VecVirtual
	for i := range acc {
		acc[i] = t.vec()
		VXORPS(acc[i], acc[i], acc[i])
	}
	p0, p4, qp, c := GP64(), GP64(), GP64(), GP64()
	MOVQ(row, p0)
	LEAQ(Mem{Base: row, Index: db, Scale: 4}, p4)
	MOVQ(q, qp)
	MOVQ(db, c)
	chunk := label("scores_chunk8")
	Label(chunk)
	qv := t.vec()
	VMOVUPS(Mem{Base: qp}, qv)
	rows := []Mem{
		{Base: p0}, {Base: p0, Index: db, Scale: 1}, {Base: p0, Index: db, Scale: 2}, {Base: p0, Index: db3, Scale: 1},
		{Base: p4}, {Base: p4, Index: db, Scale: 1}, {Base: p4, Index: db, Scale: 2}, {Base: p4, Index: db3, Scale: 1},
	}
	for i, m := range rows {
		VFMADD231PS(m, qv, acc[i])
	}
	ADDQ(U32(t.vb()), p0)
	ADDQ(U32(t.vb()), p4)
	ADDQ(U32(t.vb()), qp)
	SUBQ(U32(t.vb()), c)
	JNZ(LabelRef(chunk))
	s := t.reduce8(acc)
	sc := YMM()
	VBROADCASTSS(scale, sc)
	VMULPS(sc, s, s)
	VMOVUPS(s, Mem{Base: out})
	ADDQ(Imm(32), out)
	ADDQ(Imm(8), j)
	LEAQ(Mem{Base: row, Index: db, Scale: 8}, row)
	JMP(LabelRef(by8))

	Label(by1)
	CMPQ(j, cnt)
	JGE(LabelRef(done))
	a := t.vec()
	VXORPS(a, a, a)
	MOVQ(row, p0)
	MOVQ(q, qp)
	MOVQ(db, c)
	chunk1 := label("scores_chunk1")
	Label(chunk1)
	qv1 := t.vec()
	VMOVUPS(Mem{Base: qp}, qv1)
	VFMADD231PS(Mem{Base: p0}, qv1, a)
	ADDQ(U32(t.vb()), p0)
	ADDQ(U32(t.vb()), qp)
	SUBQ(U32(t.vb()), c)
	JNZ(LabelRef(chunk1))
	x := t.hreduce(a, VADDPS)
	VMULSS(scale, x, x)
	VMOVSS(x, Mem{Base: out})
	ADDQ(Imm(4), out)
	INCQ(j)
	ADDQ(db, row)
	JMP(LabelRef(by1))
	Label(done)
}

// maxOf returns (lane 0 of an xmm) the largest of the cnt floats at buf.
func (t tier) maxOf(buf, cnt GPVirtual) VecVirtual {
	m := t.vec()
	VMOVUPS(kc(cNegInf), m)
	p, n := GP64(), GP64()
	MOVQ(buf, p)
	MOVQ(cnt, n)
	loop, tail, done := label("max_loop"), label("max_tail"), label("max_done")
	Label(loop)
	CMPQ(n, U32(t.w))
	JL(LabelRef(tail))
	VMAXPS(Mem{Base: p}, m, m)
	ADDQ(U32(t.vb()), p)
	SUBQ(U32(t.w), n)
	JMP(LabelRef(loop))
	Label(tail)
	x := t.hreduce(m, VMAXPS)
	tl := label("max_tail1")
	Label(tl)
	TESTQ(n, n)
	JZ(LabelRef(done))
	VMAXSS(Mem{Base: p}, x, x)
	ADDQ(Imm(4), p)
	DECQ(n)
	JMP(LabelRef(tl))
	Label(done)
	return x
}

// expInPlace replaces buf[j] by exp(buf[j] - m) for j < cnt and returns
// their sum (lane 0 of an xmm). The last vector may run into the buffer's
// padding (every buffer is a multiple of 16 floats); padding lanes are
// written but never summed.
func (t tier) expInPlace(fast bool, buf, cnt GPVirtual, m VecVirtual) VecVirtual {
	acc := t.vec()
	VXORPS(acc, acc, acc)
	p, n := GP64(), GP64()
	MOVQ(buf, p)
	MOVQ(cnt, n)
	loop, tail, done := label("exp_loop"), label("exp_tail"), label("exp_done")
	Label(loop)
	CMPQ(n, U32(t.w))
	JL(LabelRef(tail))
	x := t.vec()
	VMOVUPS(Mem{Base: p}, x)
	VSUBPS(m, x, x)
	t.exp(fast, x)
	VMOVUPS(x, Mem{Base: p})
	VADDPS(x, acc, acc)
	ADDQ(U32(t.vb()), p)
	SUBQ(U32(t.w), n)
	JMP(LabelRef(loop))
	Label(tail)
	s := t.hreduce(acc, VADDPS)
	TESTQ(n, n)
	JZ(LabelRef(done))
	y := t.vec()
	VMOVUPS(Mem{Base: p}, y)
	VSUBPS(m, y, y)
	t.exp(fast, y)
	VMOVUPS(y, Mem{Base: p})
	tl := label("exp_tail1")
	Label(tl)
	VADDSS(Mem{Base: p}, s, s)
	ADDQ(Imm(4), p)
	DECQ(n)
	JNZ(LabelRef(tl))
	Label(done)
	return s
}

// scaleRow multiplies the db bytes of floats at row by the vector c.
func (t tier) scaleRow(row, db GPVirtual, c VecVirtual) {
	p, n := GP64(), GP64()
	MOVQ(row, p)
	MOVQ(db, n)
	loop := label("scale_loop")
	Label(loop)
	x := t.vec()
	VMULPS(Mem{Base: p}, c, x)
	VMOVUPS(x, Mem{Base: p})
	ADDQ(U32(t.vb()), p)
	SUBQ(U32(t.vb()), n)
	JNZ(LabelRef(loop))
}

// zeroRow clears db bytes at row.
func (t tier) zeroRow(row, db GPVirtual) {
	z := t.vec()
	VXORPS(z, z, z)
	p, n := GP64(), GP64()
	MOVQ(row, p)
	MOVQ(db, n)
	loop := label("zero_loop")
	Label(loop)
	VMOVUPS(z, Mem{Base: p})
	ADDQ(U32(t.vb()), p)
	SUBQ(U32(t.vb()), n)
	JNZ(LabelRef(loop))
}

// pv accumulates o += Σ_j w[j]·v_j over cnt rows of v (db bytes apart).
// The row of o is walked in column blocks of 8, 4, 2 and 1 vectors held in
// registers while all cnt rows stream past; every byte of v is still read
// once, and each block keeps up to eight independent FMA chains.
func (t tier) pv(o, w, v, cnt, db GPVirtual) {
	col := GP64()
	XORQ(col, col)
	for _, nb := range []int{8, 4, 2, 1} {
		top, next := label("pv_block"), label("pv_next")
		Label(top)
		left := GP64()
		MOVQ(db, left)
		SUBQ(col, left)
		CMPQ(left, U32(nb*t.vb()))
		JL(LabelRef(next))
		acc := make([]VecVirtual, nb)
		for u := range acc {
			acc[u] = t.vec()
			VMOVUPS(Mem{Base: o, Index: col, Scale: 1, Disp: u * t.vb()}, acc[u])
		}
		wp, rp, n := GP64(), GP64(), GP64()
		MOVQ(w, wp)
		LEAQ(Mem{Base: v, Index: col, Scale: 1}, rp)
		MOVQ(cnt, n)
		inner := label("pv_row")
		Label(inner)
		wv := t.vec()
		VBROADCASTSS(Mem{Base: wp}, wv)
		for u := range acc {
			VFMADD231PS(Mem{Base: rp, Disp: u * t.vb()}, wv, acc[u])
		}
		ADDQ(Imm(4), wp)
		ADDQ(db, rp)
		DECQ(n)
		JNZ(LabelRef(inner))
		for u := range acc {
			VMOVUPS(acc[u], Mem{Base: o, Index: col, Scale: 1, Disp: u * t.vb()})
		}
		ADDQ(U32(nb*t.vb()), col)
		JMP(LabelRef(top))
		Label(next)
	}
}

// reciprocalOrZero returns (broadcast) 1/s, or 0 when s == 0.
func (t tier) reciprocalOrZero(s VecVirtual) VecVirtual {
	r := XMM()
	VXORPS(r, r, r)
	zero := label("recip_zero")
	VUCOMISS(r, s)
	JEQ(LabelRef(zero))
	VMOVSS(kc(cOne), r)
	VDIVSS(s, r, r)
	Label(zero)
	b := t.vec()
	VBROADCASTSS(r, b)
	return b
}

func expName(fast bool) string {
	if fast {
		return "Fast"
	}
	return "Exact"
}

// flashDecode generates the online-softmax decode for g query heads sharing
// one KV head (g = 1 is decode-flash; g = H/Hkv is decode-flash-gqa). Per
// tile of tk keys, every head computes its scores into its own tile buffer,
// rescales its (m, s, o) when the running max grows, exponentiates and
// accumulates P·V, while the K and V tile stays in L1.
func (t tier) flashDecode(fast bool) {
	TEXT("flashDecode"+expName(fast)+t.name, NOSPLIT,
		"func(o, q *float32, ng int, k, v *float32, n, d, tk int, scale float32, state, tiles *float32, tileStride int)")
	Doc("flashDecode"+expName(fast)+t.name+" is flash decode with "+map[bool]string{true: "the fast", false: "the exact"}[fast]+" exp; see flashGeneric.",
		"state holds m[0..g) then s[0..g); tiles holds g tile buffers of tileStride bytes.")
	lKp, lVp, lRem, lCnt, lH := AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8)
	scale := paramAddr("scale")

	// m = -Inf, s = 0, o = 0 for every head of the group.
	{
		g, st, o, db, h := GP64(), GP64(), GP64(), GP64(), GP64()
		Load(Param("ng"), g)
		Load(Param("state"), st)
		Load(Param("o"), o)
		Load(Param("d"), db)
		SHLQ(Imm(2), db)
		XORQ(h, h)
		ninf := XMM()
		VMOVSS(kc(cNegInf), ninf)
		loop, done := label("init"), label("init_done")
		Label(loop)
		CMPQ(h, g)
		JGE(LabelRef(done))
		VMOVSS(ninf, Mem{Base: st, Index: h, Scale: 4})
		sp := GP64()
		LEAQ(Mem{Base: st, Index: g, Scale: 4}, sp)
		MOVL(U32(0), Mem{Base: sp, Index: h, Scale: 4})
		t.zeroRow(o, db)
		ADDQ(db, o)
		INCQ(h)
		JMP(LabelRef(loop))
		Label(done)
	}
	{
		r := GP64()
		Load(Param("k"), r)
		MOVQ(r, lKp)
		Load(Param("v"), r)
		MOVQ(r, lVp)
		Load(Param("n"), r)
		MOVQ(r, lRem)
	}

	tile, finish := label("tile"), label("finish")
	Label(tile)
	{
		rem, cnt := GP64(), GP64()
		MOVQ(lRem, rem)
		TESTQ(rem, rem)
		JLE(LabelRef(finish))
		Load(Param("tk"), cnt)
		CMPQ(rem, cnt)
		CMOVQLT(rem, cnt)
		MOVQ(cnt, lCnt)
		MOVQ(U32(0), lH)
	}
	head, tileDone := label("head"), label("tile_done")
	Label(head)
	{
		h, g := GP64(), GP64()
		MOVQ(lH, h)
		Load(Param("ng"), g)
		CMPQ(h, g)
		JGE(LabelRef(tileDone))
		db, qh, oh, bufh := GP64(), GP64(), GP64(), GP64()
		Load(Param("d"), db)
		SHLQ(Imm(2), db)
		MOVQ(h, qh)
		IMULQ(db, qh)
		MOVQ(qh, oh)
		q := GP64()
		Load(Param("q"), q)
		ADDQ(q, qh)
		o := GP64()
		Load(Param("o"), o)
		ADDQ(o, oh)
		Load(Param("tileStride"), bufh)
		IMULQ(h, bufh)
		tiles := GP64()
		Load(Param("tiles"), tiles)
		ADDQ(tiles, bufh)
		kp, cnt := GP64(), GP64()
		MOVQ(lKp, kp)
		MOVQ(lCnt, cnt)

		t.scores(bufh, qh, kp, cnt, db, scale)
		mblk := t.maxOf(bufh, cnt)

		st, sp := GP64(), GP64()
		Load(Param("state"), st)
		Load(Param("ng"), g)
		LEAQ(Mem{Base: st, Index: g, Scale: 4}, sp)
		mAddr := Mem{Base: st, Index: h, Scale: 4}
		sAddr := Mem{Base: sp, Index: h, Scale: 4}
		mold, mnew := XMM(), XMM()
		VMOVSS(mAddr, mold)
		VMAXSS(mold, mblk, mnew)
		same := label("no_rescale")
		VUCOMISS(mold, mnew)
		JEQ(LabelRef(same))
		// The running max grew: c = exp(m_old - m_new) (0 on the first
		// tile, where m_old = -Inf), s *= c, o *= c, m = m_new.
		cx := XMM()
		VSUBSS(mnew, mold, cx)
		c := t.vec()
		VBROADCASTSS(cx, c)
		t.exp(fast, c)
		sv := XMM()
		VMULSS(sAddr, c.AsX(), sv)
		VMOVSS(sv, sAddr)
		t.scaleRow(oh, db, c)
		VMOVSS(mnew, mAddr)
		Label(same)

		mb := t.vec()
		VBROADCASTSS(mAddr, mb)
		sum := t.expInPlace(fast, bufh, cnt, mb)
		VADDSS(sAddr, sum, sum)
		VMOVSS(sum, sAddr)

		vp := GP64()
		MOVQ(lVp, vp)
		t.pv(oh, bufh, vp, cnt, db)
		INCQ(lH)
		JMP(LabelRef(head))
	}
	Label(tileDone)
	{
		cnt, db, adv := GP64(), GP64(), GP64()
		MOVQ(lCnt, cnt)
		Load(Param("d"), db)
		MOVQ(cnt, adv)
		IMULQ(db, adv)
		SHLQ(Imm(2), adv)
		ADDQ(adv, lKp)
		ADDQ(adv, lVp)
		SUBQ(cnt, lRem)
		JMP(LabelRef(tile))
	}

	// o *= 1/s per head (o = 0 when s == 0).
	Label(finish)
	{
		g, st, o, db, h := GP64(), GP64(), GP64(), GP64(), GP64()
		Load(Param("ng"), g)
		Load(Param("state"), st)
		Load(Param("o"), o)
		Load(Param("d"), db)
		SHLQ(Imm(2), db)
		XORQ(h, h)
		loop, done := label("norm"), label("norm_done")
		Label(loop)
		CMPQ(h, g)
		JGE(LabelRef(done))
		sp := GP64()
		LEAQ(Mem{Base: st, Index: g, Scale: 4}, sp)
		s := XMM()
		VMOVSS(Mem{Base: sp, Index: h, Scale: 4}, s)
		inv := t.reciprocalOrZero(s)
		t.scaleRow(o, db, inv)
		ADDQ(db, o)
		INCQ(h)
		JMP(LabelRef(loop))
		Label(done)
	}
	VZEROUPPER()
	RET()
}

// naiveDecode generates the materialized decode for one query head: scores
// for all n keys into ws, max, exp and sum, normalize, then P·V.
func (t tier) naiveDecode(fast bool) {
	TEXT("naiveDecode"+expName(fast)+t.name, NOSPLIT,
		"func(o, q, k, v *float32, n, d int, scale float32, ws *float32)")
	Doc("naiveDecode"+expName(fast)+t.name+" is the textbook decode; see naiveGeneric.",
		"ws holds n scores rounded up to a multiple of 16 floats.")
	ws, q, k, n, db := GP64(), GP64(), GP64(), GP64(), GP64()
	Load(Param("ws"), ws)
	Load(Param("q"), q)
	Load(Param("k"), k)
	Load(Param("n"), n)
	Load(Param("d"), db)
	SHLQ(Imm(2), db)
	t.scores(ws, q, k, n, db, paramAddr("scale"))
	m := t.maxOf(ws, n)
	mb := t.vec()
	VBROADCASTSS(m, mb)
	s := t.expInPlace(fast, ws, n, mb)
	inv := t.reciprocalOrZero(s)
	// Normalize the probabilities (vector loop may touch the padding).
	{
		p, left := GP64(), GP64()
		MOVQ(ws, p)
		MOVQ(n, left)
		loop, done := label("normp"), label("normp_done")
		Label(loop)
		x := t.vec()
		VMULPS(Mem{Base: p}, inv, x)
		VMOVUPS(x, Mem{Base: p})
		ADDQ(U32(t.vb()), p)
		SUBQ(U32(t.w), left)
		JG(LabelRef(loop))
		Label(done)
	}
	o, v := GP64(), GP64()
	Load(Param("o"), o)
	Load(Param("v"), v)
	t.zeroRow(o, db)
	t.pv(o, ws, v, n, db)
	VZEROUPPER()
	RET()
}

// paramAddr is the frame address of a scalar argument, for use as a memory
// operand (e.g. VBROADCASTSS straight from the argument).
func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}
