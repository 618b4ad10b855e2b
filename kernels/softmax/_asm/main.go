// Command _asm generates softmax_amd64.s, the AVX2 and AVX-512 tiers of
// the row softmax, from one description per variant. It lives in its own
// module so that avo never becomes a dependency of ckbench; the exps,
// reductions and constants are vecgen's, shared with the attention kernels.
//
//	go generate ./kernels/softmax   (runs: go run -C _asm . -out ../softmax_amd64.s)
package main

import (
	. "github.com/ckbench/ckbench/kernels/_vecgen"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	Begin("github.com/ckbench/ckbench/kernels/softmax", "smconst")
	for _, t := range []Tier{AVX2, AVX512} {
		for _, fast := range []bool{false, true} {
			threePass(t, fast)
			online(t, fast)
		}
	}
	GenerateAligned()
}

// unroll is the vectors per iteration of the main loops: four independent
// max, sum or exp chains.
const unroll = 4

// threePass emits threePass{Exact,Fast}{AVX2,AVX512}(x *float32, kept, n int).
func threePass(t Tier, fast bool) {
	x, kept, n, i := rowKernel("threePass", t, fast)

	Comment("pass 1: the max of the kept columns")
	var acc [unroll]VecVirtual
	for j := range acc {
		acc[j] = t.Vec()
		VMOVUPS(KC(CNegInf), acc[j])
	}
	XORQ(i, i)
	sweep(t, x, i, kept, func(ms []Mem, mk *mask) {
		for j, m := range ms {
			if mk != nil {
				VMAXPS(loadTail(t, m, *mk, CNegInf), acc[j], acc[j])
				continue
			}
			VMAXPS(m, acc[j], acc[j]) // a NaN in x is what VMAXPS returns
		}
	})
	for j := 1; j < unroll; j++ {
		VMAXPS(acc[j], acc[0], acc[0])
	}
	mb := broadcast(t, t.HReduce(acc[0], VMAXPS))

	Comment("pass 2: x = exp(x - max), and their sum")
	var sum [unroll]VecVirtual
	for j := range sum {
		sum[j] = t.Vec()
		t.Zero(sum[j])
	}
	XORQ(i, i)
	sweep(t, x, i, kept, func(ms []Mem, mk *mask) {
		for j, m := range ms {
			v := load(t, m, mk, CNegInf) // exp(−Inf − max) = 0
			VSUBPS(mb, v, v)
			t.Exp(fast, v)
			store(t, v, m, mk)
			VADDPS(v, sum[j], sum[j])
		}
	})
	for j := 1; j < unroll; j++ {
		VADDPS(sum[j], sum[0], sum[0])
	}
	r := reciprocal(t, broadcast(t, t.HReduce(sum[0], VADDPS)))

	Comment("pass 3: x *= 1/sum")
	XORQ(i, i)
	sweep(t, x, i, kept, func(ms []Mem, mk *mask) {
		for _, m := range ms {
			v := load(t, m, mk, CZero)
			VMULPS(r, v, v)
			store(t, v, m, mk)
		}
	})
	zeroFuture(t, x, kept, n)
	RET()
}

// online emits online{Exact,Fast}{AVX2,AVX512}(x *float32, kept, n int).
func online(t Tier, fast bool) {
	x, kept, n, i := rowKernel("online", t, fast)

	Comment("pass 1: per lane, a running max m (from -MaxFloat32) and sum s of exp(x - m)")
	m, s := t.Vec(), t.Vec()
	VMOVUPS(KC(CNegMax), m)
	t.Zero(s)
	XORQ(i, i)
	sweep(t, x, i, kept, func(ms []Mem, mk *mask) {
		xs := make([]VecVirtual, len(ms))
		for j, mm := range ms {
			xs[j] = load(t, mm, mk, CNegInf)
		}
		// bm = max(m, the block), as a tree. The tree may drop a NaN of x
		// (VMAXPS returns its second source when either is NaN), but
		// exp(NaN − bm) still makes the sum NaN.
		bm := maxTree(t, m, xs)
		e := t.Vec()
		for j, xj := range xs {
			VSUBPS(bm, xj, xj)
			t.Exp(fast, xj)
			if j == 0 {
				VMOVUPS(xj, e)
			} else {
				VADDPS(xj, e, e)
			}
		}
		// The max rarely grows after the first blocks: only then is s
		// rescaled, s = s·exp(m − bm) + Σ exp(x − bm); otherwise s += Σ.
		// (A NaN bm counts as grown: the rescale makes s NaN.)
		grown, next := NewLabel("grown"), NewLabel("next")
		anyLaneDiffers(t, m, bm, grown)
		VADDPS(e, s, s)
		JMP(LabelRef(next))
		Label(grown)
		c := t.Vec()
		VSUBPS(bm, m, c)
		t.Exp(fast, c)
		VFMADD213PS(e, c, s) // s = s·c + e
		VMOVUPS(bm, m)
		Label(next)
	})
	Comment("the lanes' (m, s) into one: M = max m, S = sum s·exp(m - M)")
	mb := broadcast(t, t.HReduce(m, VMAXPS))
	w := t.Vec()
	VSUBPS(mb, m, w)
	t.Exp(fast, w)
	VMULPS(w, s, s)
	r := reciprocal(t, broadcast(t, t.HReduce(s, VADDPS)))

	Comment("pass 2: x = exp(x - M) / S")
	XORQ(i, i)
	sweep(t, x, i, kept, func(ms []Mem, mk *mask) {
		for _, mm := range ms {
			v := load(t, mm, mk, CZero)
			VSUBPS(mb, v, v)
			t.Exp(fast, v)
			VMULPS(r, v, v)
			store(t, v, mm, mk)
		}
	})
	zeroFuture(t, x, kept, n)
	RET()
}

// maxTree returns max(m, xs...) as a tree of VMAXPS (depth 3 for four
// vectors, where a chain through m would be 4 deep).
func maxTree(t Tier, m VecVirtual, xs []VecVirtual) VecVirtual {
	level := []VecVirtual{m}
	level = append(level, xs...)
	for len(level) > 1 {
		var next []VecVirtual
		for j := 0; j+1 < len(level); j += 2 {
			r := t.Vec()
			VMAXPS(level[j+1], level[j], r)
			next = append(next, r)
		}
		if len(level)%2 == 1 {
			next = append(next, level[len(level)-1])
		}
		level = next
	}
	return level[0]
}

// anyLaneDiffers jumps to label when a lane of a and b differs or is NaN
// (CMPPS predicate NEQ_UQ).
func anyLaneDiffers(t Tier, a, b VecVirtual, label string) {
	if t.W == 16 {
		k := K()
		VCMPPS(Imm(4), a, b, k)
		KORTESTW(k, k)
	} else {
		d := t.Vec()
		VCMPPS(Imm(4), a, b, d)
		VTESTPS(d, d)
	}
	JNE(LabelRef(label))
}

// rowKernel starts the kernel <variant><Exp><tier>(x *float32, kept, n
// int): it loads x, kept and n and gives a register for the column index.
func rowKernel(variant string, t Tier, fast bool) (x, kept, n, i GPVirtual) {
	Implement(variant + ExpName(fast) + t.Name)
	Attributes(NOSPLIT)
	x, kept, n, i = GP64(), GP64(), GP64(), GP64()
	Load(Param("x"), x)
	Load(Param("kept"), kept)
	Load(Param("n"), n)
	return x, kept, n, i
}

// zeroFuture emits x[kept:n] = 0.
func zeroFuture(t Tier, x, kept, n GPVirtual) {
	Comment("x[kept:n] = 0: the future")
	z := t.Vec()
	t.Zero(z)
	i := GP64()
	MOVQ(kept, i)
	sweep(t, x, i, n, func(ms []Mem, mk *mask) {
		for _, m := range ms {
			store(t, z, m, mk)
		}
	})
}

// broadcast returns a vector with lane 0 of xmm x in every lane.
func broadcast(t Tier, x VecVirtual) VecVirtual {
	v := t.Vec()
	VBROADCASTSS(x, v)
	return v
}

// reciprocal returns 1/v (a division: exact, 1/0 = +Inf, 1/NaN = NaN).
func reciprocal(t Tier, v VecVirtual) VecVirtual {
	r := t.Vec()
	VMOVUPS(KC(COne), r)
	VDIVPS(v, r, r)
	return r
}

// sweep emits a loop over the floats x[i:end] (i and end in registers; i is
// advanced): body is given unroll vectors at a time, then one, then, for
// the last end−i < W floats, one vector with a tail mask (mk not nil).
func sweep(t Tier, x, i, end GPVirtual, body func(ms []Mem, mk *mask)) {
	loop, one, tail, done := NewLabel("loop"), NewLabel("one"), NewLabel("tail"), NewLabel("done")
	left := GP64()
	at := func(j int) Mem { return Mem{Base: x, Index: i, Scale: 4, Disp: j * t.VB()} }
	Label(loop)
	MOVQ(end, left)
	SUBQ(i, left)
	CMPQ(left, U32(unroll*t.W))
	JL(LabelRef(one))
	ms := make([]Mem, unroll)
	for j := range ms {
		ms[j] = at(j)
	}
	body(ms, nil)
	ADDQ(U32(unroll*t.W), i)
	JMP(LabelRef(loop))

	Label(one)
	MOVQ(end, left)
	SUBQ(i, left)
	CMPQ(left, U32(t.W))
	JL(LabelRef(tail))
	body([]Mem{at(0)}, nil)
	ADDQ(U32(t.W), i)
	JMP(LabelRef(one))

	Label(tail)
	MOVQ(end, left)
	SUBQ(i, left)
	JLE(LabelRef(done))
	mk := tailMask(t, left)
	body([]Mem{at(0)}, &mk)
	Label(done)
}

// mask selects the first rem lanes of a vector: a K register (AVX-512) or
// a vector of all-ones lanes (AVX2, for VMASKMOVPS and VBLENDVPS).
type mask struct {
	k Register
	y VecVirtual
}

// tailMask returns the mask of lanes < rem (1 ≤ rem < W).
func tailMask(t Tier, rem GPVirtual) mask {
	r := t.Vec()
	if t.W == 16 {
		VPBROADCASTD(rem.As32(), r)
		k := K()
		VPCMPGTD(KC(CLaneIdx), r, k) // rem > lane
		return mask{k: k}
	}
	VMOVD(rem.As32(), r.AsX())
	VPBROADCASTD(r.AsX(), r)
	VPCMPGTD(KC(CLaneIdx), r, r)
	return mask{y: r}
}

// loadTail loads the lanes of mk from m, and constant fill elsewhere.
// Masked-off lanes are never read (no fault past the end of x).
func loadTail(t Tier, m Mem, mk mask, fill int) VecVirtual {
	x := t.Vec()
	VMOVUPS(KC(fill), x)
	if t.W == 16 {
		VMOVUPS(m, mk.k, x)
		return x
	}
	v := t.Vec()
	VMASKMOVPS(m, mk.y, v)
	VBLENDVPS(mk.y, v, x, x) // mask ? v : fill
	return x
}

// load loads one vector at m, or a tail (fill elsewhere) when mk is set.
func load(t Tier, m Mem, mk *mask, fill int) VecVirtual {
	if mk != nil {
		return loadTail(t, m, *mk, fill)
	}
	v := t.Vec()
	VMOVUPS(m, v)
	return v
}

// store stores v at m, only the lanes of mk when it is set.
func store(t Tier, v VecVirtual, m Mem, mk *mask) {
	switch {
	case mk == nil:
		VMOVUPS(v, m)
	case t.W == 16:
		VMOVUPS(v, mk.k, m)
	default:
		VMASKMOVPS(v, mk.y, m)
	}
}
