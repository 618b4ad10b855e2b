// Command _asm generates read_amd64.s, the bandwidth-measurement kernels of
// package roofline, in its own module so that avo never becomes a
// dependency of ckbench.
//
//	go generate ./roofline   (runs: go run -C _asm . -out ../read_amd64.s)
package main

import (
	"os"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

type tier struct {
	name string
	vb   int // bytes per vector
	vec  func() VecVirtual
}

// readSum generates func(p *float32, n int) float32: the sum of n floats
// (n a multiple of 8 vectors), loading 8 vectors per iteration into 8
// independent accumulators. It is the "plain load-and-sum loop": the most
// a streaming kernel can read per second on this core.
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
		VXORPS(acc[i], acc[i], acc[i])
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
	r := acc[0]
	if t.vb == 64 {
		hi := YMM()
		VEXTRACTF64X4(Imm(1), r, hi)
		VADDPS(hi, r.AsY(), hi)
		r = hi
	}
	x := XMM()
	VEXTRACTF128(Imm(1), r, x)
	VADDPS(r.AsX(), x, x)
	h := XMM()
	VMOVHLPS(x, x, h)
	VADDPS(h, x, x)
	VMOVSHDUP(x, h)
	VADDSS(h, x, x)
	VZEROUPPER()
	Store(x, ReturnIndex(0))
	RET()
}

func main() {
	os.Setenv("GOOS", "linux")
	os.Setenv("GOARCH", "amd64")
	ConstraintExpr("!purego")
	readSum(tier{"AVX2", 32, YMM})
	readSum(tier{"AVX512", 64, ZMM})
	Generate()
}
