//go:build !amd64 || purego

package roofline

import "github.com/ckbench/ckbench/kernels/isa"

// asmKernels: none on this platform; the generic Go kernels stand in.
type asmKernels struct {
	readSum func(p *float32, n, reps int) float32
	copy    func(dst, src *float32, n, reps int)
	write   func(dst *float32, n, reps int)
	writeNT func(dst *float32, n, reps int)
	fma     func(iters int) float32
	fmaClk  func(iters int) int
	int8    func(iters int) int32
	chains  int
	vb      int
}

func kernelsFor(isa.Tier) *asmKernels { return nil }

func int8Chains(isa.Tier) int { return 0 }

func clockChainAsm(int) int { return 0 }

func rdtscAsm() uint64 { return 0 }

var fmaGenericFor = fmaGeneric

const haveClockChain = false
