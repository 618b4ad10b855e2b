package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The stream kernels move n floats (n a multiple of 8 vectors), 8 vectors
// per iteration: the widest loads and stores of the tier, nothing else.

// readSum generates func(p *float32, n int) float32: the sum of n floats
// into 8 independent accumulators. It is the "plain load-and-sum loop":
// the most a streaming kernel can read per second on this core.
func readSum(t tier) {
	TEXT("readSum"+t.name, NOSPLIT, "func(p *float32, n int) float32")
	Doc("readSum" + t.name + " returns the sum of n floats at p; n is a multiple of 8 vectors.")
	p, n := GP64(), GP64()
	Load(Param("p"), p)
	Load(Param("n"), n)
	SHLQ(Imm(2), n) // bytes
	var acc [8]VecVirtual
	for i := range acc {
		acc[i] = t.vec()
		VMOVUPS(kc(cZero), acc[i])
	}
	TESTQ(n, n)
	JZ(LabelRef("done" + t.name))
	Label("loop" + t.name)
	for i := range acc {
		VADDPS(Mem{Base: p, Disp: i * t.vb}, acc[i], acc[i])
	}
	ADDQ(U32(8*t.vb), p)
	SUBQ(U32(8*t.vb), n)
	JNZ(LabelRef("loop" + t.name))
	Label("done" + t.name)
	for s := 4; s >= 1; s /= 2 {
		for i := 0; i < s; i++ {
			VADDPS(acc[i+s], acc[i], acc[i])
		}
	}
	Store(horizontalSum(t, acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// copyKernel generates func(dst, src *float32, n int): dst = src.
func copyKernel(t tier) {
	TEXT("copy"+t.name, NOSPLIT, "func(dst, src *float32, n int)")
	Doc("copy" + t.name + " copies n floats from src to dst; n is a multiple of 8 vectors.")
	d, s, n := GP64(), GP64(), GP64()
	Load(Param("dst"), d)
	Load(Param("src"), s)
	Load(Param("n"), n)
	SHLQ(Imm(2), n)
	TESTQ(n, n)
	JZ(LabelRef("copy_done" + t.name))
	Label("copy_loop" + t.name)
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
	JNZ(LabelRef("copy_loop" + t.name))
	Label("copy_done" + t.name)
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
	TEXT(name, NOSPLIT, "func(dst *float32, n int)")
	Doc(name + " stores n floats at dst; n is a multiple of 8 vectors.")
	d, n := GP64(), GP64()
	Load(Param("dst"), d)
	Load(Param("n"), n)
	SHLQ(Imm(2), n)
	v := t.vec()
	VMOVUPS(kc(cSeed), v)
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Label(name + "_loop")
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
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
	if nt {
		SFENCE()
	}
	VZEROUPPER()
	RET()
}
