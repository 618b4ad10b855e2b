package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The stream kernels move n floats (n a multiple of 8 vectors), 8 vectors
// per iteration: the widest loads and stores of the tier, nothing else.

// Every stream kernel takes reps: it passes over the same n floats reps
// times in one call, so that an L1-sized working set is not measured
// against the cost of the call.

// readSum generates func(p *float32, n, reps int) float32: the sum of n
// floats (reps times) into 8 independent accumulators. It is the "plain
// load-and-sum loop": the most a streaming kernel can read per second on
// this core.
func readSum(t tier) {
	Implement("readSum" + t.name)
	Attributes(NOSPLIT)
	Doc("readSum" + t.name + " returns the sum of n floats at p, read reps times; n is a multiple of 8 vectors.")
	p0, n0, reps := GP64(), GP64(), GP64()
	Load(Param("p"), p0)
	Load(Param("n"), n0)
	Load(Param("reps"), reps)
	SHLQ(Imm(2), n0) // bytes
	acc := zeroAcc(t)
	p, n := GP64(), GP64()
	repeat(t, "read", n0, reps, func() {
		MOVQ(p0, p)
		MOVQ(n0, n)
	}, func() { sum8(t, acc, p, n) }, n)
	Store(horizontalSum(t, foldAcc(acc)), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// sideBySide emits one step of a read of two streams side by side: the
// next 8 vectors at p and the 8 at q, two of p then two of q, each vector
// folded by op into one of 8 accumulators (p's into the first four, q's
// into the last four); p and q move on and n (bytes left in each) shrinks
// by 8 vectors.
func sideBySide(t tier, acc [8]VecVirtual, p, q, n GPVirtual, op func(m Mem, acc VecVirtual)) {
	for j := 0; j < 8; j += 2 {
		for s, b := range []GPVirtual{p, q} {
			for k := range 2 {
				op(Mem{Base: b, Disp: (j + k) * t.vb}, acc[4*s+(j+k)%4])
			}
		}
	}
	ADDQ(U32(8*t.vb), p)
	ADDQ(U32(8*t.vb), q)
	SUBQ(U32(8*t.vb), n)
}

// readSum2 generates func(p, q *float32, n, reps int) float32: the sum of
// the n floats at p and the n at q (reps times), read side by side
// (sideBySide), as a decode reads a KV head's K and V. It is the read
// ceiling's loop (the roofline's read curve, kv-read): two streams read
// faster than one from memory, and never slower from cache (Zen 3, one
// thread, 2 × 8 MB from DRAM: 14–16.5 GB/s against 10–13 for one stream
// and 15–18 for four; 2 × 4 MB in L3 ~14 % faster; in L1 and L2 alike).
func readSum2(t tier) {
	name := "readSum2" + t.name
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name + " returns the sum of the n floats at p and the n at q, read side by side, reps times; n is a multiple of 8 vectors.")
	p0, q0, n0, reps := GP64(), GP64(), GP64(), GP64()
	Load(Param("p"), p0)
	Load(Param("q"), q0)
	Load(Param("n"), n0)
	Load(Param("reps"), reps)
	SHLQ(Imm(2), n0) // bytes
	acc := zeroAcc(t)
	p, q, n := GP64(), GP64(), GP64()
	repeat(t, "read2", n0, reps, func() {
		MOVQ(p0, p)
		MOVQ(q0, q)
		MOVQ(n0, n)
	}, func() {
		sideBySide(t, acc, p, q, n, func(m Mem, a VecVirtual) { VADDPS(m, a, a) })
	}, n)
	Store(horizontalSum(t, foldAcc(acc)), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// copyKernel generates func(dst, src *float32, n, reps int): dst = src.
func copyKernel(t tier) {
	Implement("copy" + t.name)
	Attributes(NOSPLIT)
	Doc("copy" + t.name + " copies n floats from src to dst, reps times; n is a multiple of 8 vectors.")
	d0, s0, n0, reps := GP64(), GP64(), GP64(), GP64()
	Load(Param("dst"), d0)
	Load(Param("src"), s0)
	Load(Param("n"), n0)
	Load(Param("reps"), reps)
	SHLQ(Imm(2), n0)
	d, s, n := GP64(), GP64(), GP64()
	repeat(t, "copy", n0, reps, func() {
		MOVQ(d0, d)
		MOVQ(s0, s)
		MOVQ(n0, n)
	}, func() { copy8(t, d, s, n) }, n)
	VZEROUPPER()
	RET()
}

// zeroAcc returns 8 zeroed accumulators.
func zeroAcc(t tier) [8]VecVirtual {
	var acc [8]VecVirtual
	for i := range acc {
		acc[i] = t.vec()
		VMOVUPS(kc(cZero), acc[i])
	}
	return acc
}

// sum8 emits one step of a read: acc[i] += the 8 vectors at p; p moves on
// and n (bytes left) shrinks by 8 vectors.
func sum8(t tier, acc [8]VecVirtual, p, n GPVirtual) {
	for i := range acc {
		VADDPS(Mem{Base: p, Disp: i * t.vb}, acc[i], acc[i])
	}
	ADDQ(U32(8*t.vb), p)
	SUBQ(U32(8*t.vb), n)
}

// foldAcc adds the 8 accumulators into acc[0] (a tree) and returns it.
func foldAcc(acc [8]VecVirtual) VecVirtual {
	for s := 4; s >= 1; s /= 2 {
		for i := 0; i < s; i++ {
			VADDPS(acc[i+s], acc[i], acc[i])
		}
	}
	return acc[0]
}

// copy8 emits one step of a copy: the 8 vectors at s loaded, then stored
// at d (all loads, then all stores); s and d move on and n (bytes left)
// shrinks by 8 vectors.
func copy8(t tier, d, s, n GPVirtual) {
	var v [8]VecVirtual
	for i := range v {
		v[i] = t.vec()
		VMOVUPS(Mem{Base: s, Disp: i * t.vb}, v[i])
	}
	for i := range v {
		VMOVUPS(v[i], Mem{Base: d, Disp: i * t.vb})
	}
	ADDQ(U32(8*t.vb), s)
	ADDQ(U32(8*t.vb), d)
	SUBQ(U32(8*t.vb), n)
}

// whileBytes emits "for n > 0 { step }" under label name (step shrinks n).
func whileBytes(name string, n GPVirtual, step func()) {
	Label(name)
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	step()
	JMP(LabelRef(name))
	Label(name + "_done")
}

// copyRead generates func(dst, src *float32, n, m int) float32: dst = src
// for n floats, and the sum of the m floats after them at src + n, in one
// call: the kvcache family's ceiling, reading and writing what a store
// does (a store that reads more than it writes was faster than a copy and
// a read taken as two calls). The read is spread over the copy in
// proportion, as a store reads and writes side by side: after each step of
// 8 vectors copied, as many steps of the read as keep it at m/n of the
// copy (a running credit: + m bytes a copy step, − n a read step). After k
// copy steps of s bytes the read has done ⌊k·m/n⌋ steps, so exactly m/s by
// the copy's end: only a copy of nothing (n = 0) leaves it a loop of its
// own. Copying first and reading after was 5–10 % slower than a loop that
// reads two vectors and stores one half each (the shape of an f16 store),
// warm and from DRAM (Zen 3, 2 MB written, 4 MB read), and an f16
// batch-copy came out at 115–124 % of it.
func copyRead(t tier) {
	Implement("copyRead" + t.name)
	Attributes(NOSPLIT)
	Doc("copyRead"+t.name+" copies n floats from src to dst and returns the sum of the m floats at src+n, read",
		"spread over the copy; n and m are multiples of 8 vectors.")
	d, s, n, m := GP64(), GP64(), GP64(), GP64()
	Load(Param("dst"), d)
	Load(Param("src"), s)
	Load(Param("n"), n)
	Load(Param("m"), m)
	SHLQ(Imm(2), n)
	SHLQ(Imm(2), m)
	r, left := GP64(), GP64()
	LEAQ(Mem{Base: s, Index: n, Scale: 1}, r) // the read starts where the copy ends
	MOVQ(m, left)
	acc := zeroAcc(t)
	creditLoop("copyread"+t.name, n, m, left, func() { copy8(t, d, s, n) }, func() { sum8(t, acc, r, left) })
	Store(horizontalSum(t, foldAcc(acc)), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// creditLoop emits a copy of n bytes (copy, a step of 8 vectors that
// shrinks n) with a read of m bytes spread over it (read, a step that
// shrinks left, which starts at m): after each copy step, as many read
// steps as keep the read at m/n of the copy (a running credit: + m bytes a
// copy step, − n a read step). After k copy steps of s bytes the read has
// done ⌊k·m/n⌋ steps, so exactly m/s by the copy's end: only a copy of
// nothing (n = 0) leaves the read a loop of its own.
func creditLoop(name string, n, m, left GPVirtual, copy, read func()) {
	credit, total := GP64(), GP64()
	MOVQ(n, total)
	XORQ(credit, credit)
	copyLoop, readLoop, next := name+"_copy", name+"_mix", name+"_next"
	TESTQ(n, n)
	JZ(LabelRef(copyLoop + "_done"))
	Label(copyLoop)
	copy()
	ADDQ(m, credit)
	Label(readLoop)
	CMPQ(credit, total)
	JB(LabelRef(next))
	read()
	SUBQ(total, credit)
	JMP(LabelRef(readLoop))
	Label(next)
	TESTQ(n, n)
	JNZ(LabelRef(copyLoop))
	Label(copyLoop + "_done")
	whileBytes(name+"_sum", left, read)
}

// copyRead2 generates func(dst, src, dst2, src2 *float32, n, m int)
// float32: copyRead's work on two halves side by side, as a store writes a
// row of K and one of V, each reading n + m floats of its src front to
// back and writing n of them to its dst. A step copies 8 vectors of each
// half, two of each at a time, loaded then stored (a half's loads never
// follow the other's stores to the same offset, 4 KiB-aliased when the
// halves are a multiple of 4 KiB apart; a half's 8 vectors, then the
// other's, copied 4 MB from DRAM 1.3 times slower than one stream), then
// as many read steps of 8 as keep the read at m/n of the copy (copyRead's
// credit). It returns the sum of the floats read and not copied.
//
// From DRAM (Zen 3, one thread, interleaved, best of 20): 4 MB copied in
// 505–586 µs against one stream's 626–658; 2 MB written and 4 MB read
// (the f16 stores) 310–377 against 400–540 in one stream, the f16
// batch-copy itself (K and V side by side) 350–420. In cache they are all
// alike. Which of the two is faster depends on the machine and the
// proportion, so the kvcache sweep measures both (roofline.CopyRead2).
func copyRead2(t tier) {
	name := "copyRead2" + t.name
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" reads n+m floats from src and from src2, front to back, writing n of each to dst and dst2",
		"(a step of 8 vectors copied, then the read steps that keep the read at m/n of the copy), and returns",
		"the sum of the floats read and not copied; n and m are multiples of 8 vectors.")
	d, s, d2, s2, n, m := GP64(), GP64(), GP64(), GP64(), GP64(), GP64()
	Load(Param("dst"), d)
	Load(Param("src"), s)
	Load(Param("dst2"), d2)
	Load(Param("src2"), s2)
	Load(Param("n"), n)
	Load(Param("m"), m)
	SHLQ(Imm(2), n)
	SHLQ(Imm(2), m)
	left := GP64()
	MOVQ(m, left)
	acc := zeroAcc(t)
	const step = 8 // vectors
	// read emits a read step of each half.
	read := func() {
		for _, p := range []GPVirtual{s, s2} {
			for i := range acc {
				VADDPS(Mem{Base: p, Disp: i * t.vb}, acc[i], acc[i])
			}
			ADDQ(U32(step*t.vb), p)
		}
		SUBQ(U32(step*t.vb), left)
	}
	// copy: two vectors of each half at a time, loaded, then stored.
	copy := func() {
		const per = 2
		for sub := range step / per {
			var v [2][per]VecVirtual
			for h, p := range []GPVirtual{s, s2} {
				for i := range v[h] {
					v[h][i] = t.vec()
					VMOVUPS(Mem{Base: p, Disp: (sub*per + i) * t.vb}, v[h][i])
				}
			}
			for h, p := range []GPVirtual{d, d2} {
				for i := range v[h] {
					VMOVUPS(v[h][i], Mem{Base: p, Disp: (sub*per + i) * t.vb})
				}
			}
		}
		for _, p := range []GPVirtual{d, s, d2, s2} {
			ADDQ(U32(step*t.vb), p)
		}
		SUBQ(U32(step*t.vb), n)
	}
	creditLoop("copyread2"+t.name, n, m, left, copy, read)
	Store(horizontalSum(t, foldAcc(acc)), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// writeKernel generates func(dst *float32, n int): dst = 1.0. With nt the
// stores are non-temporal (VMOVNTPS, then SFENCE): they bypass the caches
// and skip the read-for-ownership a normal store pays. dst must be
// vector-aligned.
func writeKernel(t tier, nt bool) {
	name := "write" + t.name
	if nt {
		name = "writeNT" + t.name
	}
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name + " stores n floats at dst, reps times; n is a multiple of 8 vectors.")
	d0, n0, reps := GP64(), GP64(), GP64()
	Load(Param("dst"), d0)
	Load(Param("n"), n0)
	Load(Param("reps"), reps)
	SHLQ(Imm(2), n0)
	v := t.vec()
	VMOVUPS(kc(cSeed), v)
	d, n := GP64(), GP64()
	repeat(t, name, n0, reps, func() {
		MOVQ(d0, d)
		MOVQ(n0, n)
	}, func() {
		for i := 0; i < 8; i++ {
			m := Mem{Base: d, Disp: i * t.vb}
			if nt {
				VMOVNTPS(v, m)
			} else {
				VMOVUPS(v, m)
			}
		}
		ADDQ(U32(8*t.vb), d)
		SUBQ(U32(8*t.vb), n)
	}, n)
	if nt {
		SFENCE()
	}
	VZEROUPPER()
	RET()
}

// repeat emits: reps times { start(); while left != 0 { body() } }, where
// body must decrease left to 0. Nothing runs when bytes or reps is 0.
func repeat(t tier, name string, bytes, reps GPVirtual, start, body func(), left GPVirtual) {
	outer, inner, done := name+"_rep"+t.name, name+"_loop"+t.name, name+"_done"+t.name
	TESTQ(bytes, bytes)
	JZ(LabelRef(done))
	TESTQ(reps, reps)
	JZ(LabelRef(done))
	Label(outer)
	start()
	Label(inner)
	body()
	TESTQ(left, left)
	JNZ(LabelRef(inner))
	DECQ(reps)
	JNZ(LabelRef(outer))
	Label(done)
}

// readXor generates func(p *byte, n int) uint64: the XOR of the n bytes at
// p as 64-bit words (n a multiple of 8 vectors), into 8 independent
// accumulators. It is readSum for data that are not floats (quantized
// weights, which as floats hold NaNs and subnormals): the same loads, an
// integer op that costs nothing whatever the bits.
//
// With two set (readXor2: func(p, q *byte, n int) uint64), the XOR of the
// n bytes at p and the n at q, read side by side (sideBySide; see
// readSum2).
func readXor(t tier, two bool) {
	name := "readXor" + t.name
	if two {
		name = "readXor2" + t.name
	}
	Implement(name)
	Attributes(NOSPLIT)
	if two {
		Doc(name + " returns the XOR of the n bytes at p and the n at q as 64-bit words, read side by side; n is a multiple of 8 vectors.")
	} else {
		Doc(name + " returns the XOR of the n bytes at p as 64-bit words; n is a multiple of 8 vectors.")
	}
	p, q, n := GP64(), GPVirtual(nil), GP64()
	Load(Param("p"), p)
	if two {
		q = GP64()
		Load(Param("q"), q)
	}
	Load(Param("n"), n)
	xor := func(a, b Op, dst VecVirtual) {
		if t.vb == 64 {
			VPXORQ(a, b, dst)
		} else {
			VPXOR(a, b, dst)
		}
	}
	var acc [8]VecVirtual
	for i := range acc {
		acc[i] = t.vec()
		xor(acc[i], acc[i], acc[i])
	}
	loop, done := name+"_loop", name+"_done"
	TESTQ(n, n)
	JZ(LabelRef(done))
	Label(loop)
	if two {
		sideBySide(t, acc, p, q, n, func(m Mem, a VecVirtual) { xor(m, a, a) })
	} else {
		for i := range acc {
			xor(Mem{Base: p, Disp: i * t.vb}, acc[i], acc[i])
		}
		ADDQ(U32(8*t.vb), p)
		SUBQ(U32(8*t.vb), n)
	}
	JNZ(LabelRef(loop))
	Label(done)
	for s := 4; s >= 1; s /= 2 {
		for i := 0; i < s; i++ {
			xor(acc[i+s], acc[i], acc[i])
		}
	}
	y := VecVirtual(acc[0])
	if t.vb == 64 {
		hi := YMM()
		VEXTRACTI64X4(Imm(1), acc[0], hi)
		VPXORQ(hi, acc[0].AsY(), hi)
		y = hi
	}
	x := XMM()
	if t.vb == 64 {
		VEXTRACTI32X4(Imm(1), y, x) // EVEX: y may be one of Y16–Y31
		VPXORQ(y.AsX(), x, x)
	} else {
		VEXTRACTI128(Imm(1), y, x)
		VPXOR(y.AsX(), x, x)
	}
	h := XMM()
	VPUNPCKHQDQ(x, x, h)
	if t.vb == 64 {
		VPXORQ(h, x, x)
	} else {
		VPXOR(h, x, x)
	}
	r := GP64()
	VMOVQ(x, r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// readF16 generates func(p *byte, n int) float32: Σ 0.9999999·x over the
// n/2 f16 values x at p (n bytes, a multiple of 8 vectors of halves: 4
// vectors' bytes), each widened from memory by VCVTPH2PS (half a vector
// of bytes per load) and added by an FMA into one of 8 independent
// accumulators. It is the least a kernel over an f16 KV cache does per
// byte it reads (every value widened and multiplied once), streamed like
// readXor: what such a kernel can read per second at most, against
// readXor's plain read of the same bytes.
func readF16(t tier) {
	name := "readF16" + t.name
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name + " returns Σ 0.9999999·x over the f16 values x in the n bytes at p, each widened from memory and added by an FMA; n is a multiple of 4 vectors.")
	p, n := GP64(), GP64()
	Load(Param("p"), p)
	Load(Param("n"), n)
	a := t.vec()
	VMOVUPS(kc(cMul), a)
	acc := zeroAcc(t)
	half := t.vb / 2 // bytes of f16 per widened vector
	loop, done := "f16_loop"+t.name, "f16_done"+t.name
	TESTQ(n, n)
	JZ(LabelRef(done))
	Label(loop)
	for i := range acc {
		x := t.vec()
		VCVTPH2PS(Mem{Base: p, Disp: i * half}, x)
		VFMADD231PS(x, a, acc[i])
	}
	ADDQ(U32(8*half), p)
	SUBQ(U32(8*half), n)
	JNZ(LabelRef(loop))
	Label(done)
	Store(horizontalSum(t, foldAcc(acc)), ReturnIndex(0))
	VZEROUPPER()
	RET()
}
