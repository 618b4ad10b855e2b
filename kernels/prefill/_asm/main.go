// Command _asm generates prefill_amd64.s, the register-blocked
// micro-kernels of the AVX2 and AVX-512 prefill tiers: the score block
// S = scale·Q·Kᵀ (qk), the online softmax of a score tile (tileSoftmax)
// and O = c·O + P·V (pv). Package prefill's Go drivers tile the problem
// and call them. It lives in its own module so that avo never becomes a
// dependency of ckbench.
//
//	go generate ./kernels/prefill   (runs: go run -C _asm . -out ../prefill_amd64.s)
//
// Register blocking (accumulators per inner step):
//
//	qk  avx512: 8 query rows × 32 keys (16 zmm), avx2: 6 rows × 16 keys (12 ymm);
//	    per head-dim step two K vectors are loaded and each row's q broadcast.
//	pv  avx512: 6 rows × 64 head-dim columns (24 zmm), avx2: 6 rows × 16 (12 ymm);
//	    per key the V vectors are loaded and each row's weight broadcast.
package main

import (
	. "github.com/ckbench/ckbench/kernels/_vecgen"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	Begin("github.com/ckbench/ckbench/kernels/prefill", "pfconst")
	for _, t := range []Tier{AVX2, AVX512} {
		qk(t)
		pv(t)
		for _, fast := range []bool{false, true} {
			tileSoftmax(t, fast)
		}
	}
	GenerateAligned()
}

// qkRows is the query rows of qk's register block.
func qkRows(t Tier) int {
	if t.W == 16 {
		return 8
	}
	return 6
}

// pvCols is the head-dim vectors of pv's register block (6 rows each).
func pvCols(t Tier) int {
	if t.W == 16 {
		return 4
	}
	return 2
}

const pvRows = 6

// rowPair addresses rows 0…7 of a matrix with a byte stride ld from two
// bases a (rows 0–3) and b = a + 4·ld (rows 4–7), with ld3 = 3·ld.
type rowPair struct{ a, b, ld, ld3 GPVirtual }

func newRowPair(base, ld GPVirtual) rowPair {
	r := rowPair{a: GP64(), b: GP64(), ld: ld, ld3: GP64()}
	MOVQ(base, r.a)
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, r.ld3)
	LEAQ(Mem{Base: base, Index: ld, Scale: 4}, r.b)
	return r
}

func (r rowPair) at(i, disp int) Mem {
	base := r.a
	if i >= 4 {
		base, i = r.b, i-4
	}
	switch i {
	case 1:
		return Mem{Base: base, Index: r.ld, Scale: 1, Disp: disp}
	case 2:
		return Mem{Base: base, Index: r.ld, Scale: 2, Disp: disp}
	case 3:
		return Mem{Base: base, Index: r.ld3, Scale: 1, Disp: disp}
	}
	return Mem{Base: base, Disp: disp}
}

func (r rowPair) advance(bytes int) {
	ADDQ(U32(uint32(bytes)), r.a)
	ADDQ(U32(uint32(bytes)), r.b)
}

// byteStride loads an int parameter that counts floats and returns it in bytes.
func byteStride(name string) GPVirtual {
	r := GP64()
	Load(Param(name), r)
	SHLQ(Imm(2), r)
	return r
}

// qk emits qk<tier>(s, q, k *float32, rows, cols, d, ldk, lds int, scale float32):
//
//	s[i·lds + j] = scale · Σ_{c<d} q[i·d + c] · k[c·ldk + j]   (i < rows, j < cols)
//
// k is a packed key tile, d rows of ldk floats (key j of the tile in
// column j); cols is a multiple of 2·W.
func qk(t Tier) {
	Implement("qk" + t.Name)
	Attributes(NOSPLIT)
	mr := qkRows(t)
	s, q, rows := GP64(), GP64(), GP64()
	Load(Param("s"), s)
	Load(Param("q"), q)
	Load(Param("rows"), rows)
	ldq, ldk, lds := byteStride("d"), byteStride("ldk"), byteStride("lds")
	sx := XMM()
	Load(Param("scale"), sx)
	sc := t.Vec()
	VBROADCASTSS(sx, sc)

	block := func(n int) {
		j := GP64() // byte offset of the column block
		XORQ(j, j)
		cols, next, done, loop := byteStride("cols"), NewLabel("qkcol"), NewLabel("qkcoldone"), NewLabel("qkd")
		Label(next)
		CMPQ(j, cols)
		JGE(LabelRef(done))
		acc := make([][2]VecVirtual, n)
		for i := range acc {
			for v := range 2 {
				acc[i][v] = t.Vec()
				t.Zero(acc[i][v])
			}
		}
		kp, cnt := GP64(), GP64()
		Load(Param("k"), kp)
		ADDQ(j, kp)
		Load(Param("d"), cnt)
		rp := newRowPair(q, ldq)
		Label(loop)
		k0, k1 := t.Vec(), t.Vec()
		VMOVUPS(Mem{Base: kp}, k0)
		VMOVUPS(Mem{Base: kp, Disp: t.VB()}, k1)
		for i := range n {
			b := t.Vec()
			VBROADCASTSS(rp.at(i, 0), b)
			VFMADD231PS(k0, b, acc[i][0])
			VFMADD231PS(k1, b, acc[i][1])
		}
		ADDQ(ldk, kp)
		rp.advance(4)
		DECQ(cnt)
		JNE(LabelRef(loop))
		sp := GP64()
		LEAQ(Mem{Base: s, Index: j, Scale: 1}, sp)
		for i := range n {
			for v := range 2 {
				VMULPS(sc, acc[i][v], acc[i][v])
				VMOVUPS(acc[i][v], Mem{Base: sp, Disp: v * t.VB()})
			}
			if i < n-1 {
				ADDQ(lds, sp)
			}
		}
		ADDQ(U32(uint32(2*t.VB())), j)
		JMP(LabelRef(next))
		Label(done)
	}
	rowLoops(rows, mr, func(n int) {
		block(n)
		for range n {
			ADDQ(ldq, q)
			ADDQ(lds, s)
		}
	})
	RET()
}

// rowLoops emits blocks of mr rows while rows ≥ mr, then one block of the
// rows left (1 … mr−1, each size its own code), so that no row runs in a
// block narrower than it has to; step(n) emits one block of n rows and
// advances past it.
func rowLoops(rows GPVirtual, mr int, step func(n int)) {
	big, rest, done := NewLabel("rows"), NewLabel("rowsrest"), NewLabel("rowsdone")
	Label(big)
	CMPQ(rows, U32(uint32(mr)))
	JL(LabelRef(rest))
	step(mr)
	SUBQ(U32(uint32(mr)), rows)
	JMP(LabelRef(big))
	Label(rest)
	for n := mr - 1; n >= 1; n-- {
		next := NewLabel("rowsnot")
		CMPQ(rows, U32(uint32(n)))
		JNE(LabelRef(next))
		step(n)
		JMP(LabelRef(done))
		Label(next)
	}
	Label(done)
}

// pv emits pv<tier>(o, p, v, c *float32, rows, n, d, ldp int):
//
//	o[i·d + e] = c[i]·o[i·d + e] + Σ_{j<n} p[i·ldp + j] · v[j·d + e]   (i < rows, e < d)
//
// d a multiple of W.
func pv(t Tier) {
	Implement("pv" + t.Name)
	Attributes(NOSPLIT)
	o, p, c, rows := GP64(), GP64(), GP64(), GP64()
	Load(Param("o"), o)
	Load(Param("p"), p)
	Load(Param("c"), c)
	Load(Param("rows"), rows)
	ldo, ldp := byteStride("d"), byteStride("ldp")

	// block emits rows n × nd vectors at the head-dim byte offset e.
	block := func(n, nd int, e GPVirtual) {
		acc := make([][]VecVirtual, n)
		op := GP64()
		LEAQ(Mem{Base: o, Index: e, Scale: 1}, op)
		for i := range acc {
			b := t.Vec()
			VBROADCASTSS(Mem{Base: c, Disp: 4 * i}, b)
			acc[i] = make([]VecVirtual, nd)
			for v := range nd {
				acc[i][v] = t.Vec()
				VMULPS(Mem{Base: op, Disp: v * t.VB()}, b, acc[i][v])
			}
			if i < n-1 {
				ADDQ(ldo, op)
			}
		}
		vp, cnt := GP64(), GP64()
		Load(Param("v"), vp)
		ADDQ(e, vp)
		Load(Param("n"), cnt)
		skip, loop := NewLabel("pvskip"), NewLabel("pvj")
		TESTQ(cnt, cnt)
		JE(LabelRef(skip))
		rp := newRowPair(p, ldp)
		Label(loop)
		vv := make([]VecVirtual, nd)
		for v := range nd {
			vv[v] = t.Vec()
			VMOVUPS(Mem{Base: vp, Disp: v * t.VB()}, vv[v])
		}
		for i := range n {
			b := t.Vec()
			VBROADCASTSS(rp.at(i, 0), b)
			for v := range nd {
				VFMADD231PS(vv[v], b, acc[i][v])
			}
		}
		ADDQ(ldo, vp)
		rp.advance(4)
		DECQ(cnt)
		JNE(LabelRef(loop))
		Label(skip)
		LEAQ(Mem{Base: o, Index: e, Scale: 1}, op)
		for i := range n {
			for v := range nd {
				VMOVUPS(acc[i][v], Mem{Base: op, Disp: v * t.VB()})
			}
			if i < n-1 {
				ADDQ(ldo, op)
			}
		}
	}
	// cols runs the head dim in blocks of nd vectors, then of one.
	cols := func(n int) {
		e := GP64()
		XORQ(e, e)
		nd := pvCols(t)
		wide, one, done := NewLabel("pvwide"), NewLabel("pvone"), NewLabel("pvcolsdone")
		left := GP64()
		Label(wide)
		MOVQ(ldo, left)
		SUBQ(e, left)
		CMPQ(left, U32(uint32(nd*t.VB())))
		JL(LabelRef(one))
		block(n, nd, e)
		ADDQ(U32(uint32(nd*t.VB())), e)
		JMP(LabelRef(wide))
		Label(one)
		CMPQ(e, ldo)
		JGE(LabelRef(done))
		block(n, 1, e)
		ADDQ(U32(uint32(t.VB())), e)
		JMP(LabelRef(one))
		Label(done)
	}
	rowLoops(rows, pvRows, func(n int) {
		cols(n)
		for range n {
			ADDQ(ldo, o)
			ADDQ(ldp, p)
		}
		ADDQ(U32(uint32(4*n)), c)
	})
	RET()
}

// tileSoftmax emits tileSoftmax{Exact,Fast}<tier>(s, m, l, c *float32, rows, cols, lds int),
// one online-softmax step per row i < rows of a score tile (cols a
// multiple of W):
//
//	mn = max(m[i], max_j s[i·lds + j]); c[i] = exp(m[i] − mn)
//	s[i·lds + j] = exp(s[i·lds + j] − mn); l[i] = l[i]·c[i] + Σ_j s[i·lds + j]; m[i] = mn
//
// The caller starts m at −MaxFloat32, never −Inf, so a row whose keys are
// all masked (−Inf) so far keeps c = 1 and weights 0 instead of NaN.
func tileSoftmax(t Tier, fast bool) {
	Implement("tileSoftmax" + ExpName(fast) + t.Name)
	Attributes(NOSPLIT)
	s, m, l, c, rows := GP64(), GP64(), GP64(), GP64(), GP64()
	Load(Param("s"), s)
	Load(Param("m"), m)
	Load(Param("l"), l)
	Load(Param("c"), c)
	Load(Param("rows"), rows)
	lds, cols := byteStride("lds"), byteStride("cols")
	row, done := NewLabel("smrow"), NewLabel("smdone")
	Label(row)
	TESTQ(rows, rows)
	JE(LabelRef(done))
	// The row's max.
	mx := t.Vec()
	VMOVUPS(KC(CNegInf), mx)
	j := GP64()
	XORQ(j, j)
	maxLoop, maxDone := NewLabel("smmax"), NewLabel("smmaxdone")
	Label(maxLoop)
	CMPQ(j, cols)
	JGE(LabelRef(maxDone))
	VMAXPS(Mem{Base: s, Index: j, Scale: 1}, mx, mx) // a NaN score is what VMAXPS returns
	ADDQ(U32(uint32(t.VB())), j)
	JMP(LabelRef(maxLoop))
	Label(maxDone)
	mb := t.Vec()
	VBROADCASTSS(t.HReduce(mx, VMAXPS), mb)
	mOld := t.Vec()
	VBROADCASTSS(Mem{Base: m}, mOld)
	mn := t.Vec()
	VMAXPS(mb, mOld, mn)
	cv := t.Vec()
	VSUBPS(mn, mOld, cv)
	t.Exp(fast, cv) // exp(m − mn)
	// The weights and their sum.
	sum := t.Vec()
	t.Zero(sum)
	XORQ(j, j)
	expLoop, expDone := NewLabel("smexp"), NewLabel("smexpdone")
	Label(expLoop)
	CMPQ(j, cols)
	JGE(LabelRef(expDone))
	x := t.Vec()
	VMOVUPS(Mem{Base: s, Index: j, Scale: 1}, x)
	VSUBPS(mn, x, x)
	t.Exp(fast, x)
	VMOVUPS(x, Mem{Base: s, Index: j, Scale: 1})
	VADDPS(x, sum, sum)
	ADDQ(U32(uint32(t.VB())), j)
	JMP(LabelRef(expLoop))
	Label(expDone)
	sb := t.Vec()
	VBROADCASTSS(t.HReduce(sum, VADDPS), sb)
	lv := t.Vec()
	VBROADCASTSS(Mem{Base: l}, lv)
	VFMADD213PS(sb, cv, lv) // l·c + sum
	VMOVSS(lv.AsX(), Mem{Base: l})
	VMOVSS(cv.AsX(), Mem{Base: c})
	VMOVSS(mn.AsX(), Mem{Base: m})
	ADDQ(Imm(4), m)
	ADDQ(Imm(4), l)
	ADDQ(Imm(4), c)
	ADDQ(lds, s)
	DECQ(rows)
	JMP(LabelRef(row))
	Label(done)
	RET()
}
