// Command _asm generates kernels_amd64.s, the measurement kernels of
// package roofline (bandwidth, FP32 FMA and int8 dot peaks, a clock
// chain), in its own module so that avo never becomes a dependency of
// ckbench.
//
//	go generate ./roofline   (runs: go run -C _asm . -out ../kernels_amd64.s)
package main

import (
	vecgen "github.com/ckbench/ckbench/kernels/_vecgen"
	"os"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/reg"
)

type tier struct {
	name string
	vb   int // bytes per vector
	vec  func() VecVirtual
}

var (
	avx2   = tier{"AVX2", 32, YMM}
	avx512 = tier{"AVX512", 64, ZMM}
)

func main() {
	os.Setenv("GOOS", "linux")
	os.Setenv("GOARCH", "amd64")
	// The kernels implement the stubs declared in package roofline
	// (kernels_amd64.go): Implement takes each signature from there.
	Package("github.com/ckbench/ckbench/roofline")
	ConstraintExpr("!purego")
	emitConsts()
	for _, t := range []tier{avx2, avx512} {
		readSum(t)
		readXor(t, false)
		readXor(t, true)
		readSum2(t)
		readF16(t)
		copyKernel(t)
		copyRead(t)
		copyRead2(t)
		writeKernel(t, false)
		writeKernel(t, true)
		fmaPeak(t)
		f16FMAPeak(t)
		q8FMAPeak(t)
		q8DecodePeak(t)
		fmaClock(t)
		int8Peak(t, false)
	}
	int8Peak(avx512, true)
	fmaScalar()
	clockChain()
	rdtsc()
	vecgen.GenerateAligned() // every function and the constant table 64-byte aligned
}
