//go:build !amd64 || purego

package roofline

import "github.com/ckbench/ckbench/kernels/isa"

// No asm kernels on this platform: the generic Go kernels stand in.
func kernelsFor(isa.Tier) *asmKernels { return nil }

func int8Chains(isa.Tier) int { return 0 }

func clockChainAsm(int) int { return 0 }

func rdtscAsm() uint64 { return 0 }

var fmaGenericFor = fmaGeneric

const haveClockChain = false

// fmaGeneric is x = x·a + b on genericChains float32 chains: what compiled
// Go does, where the asm twin (fmaScalar) is not built.
func fmaGeneric(iters int) float32 {
	const a, b = 0.9999999, 0.001
	// Distinct start values: identical chains could be merged.
	x0, x1, x2, x3 := float32(0.5), float32(0.501), float32(0.502), float32(0.503)
	x4, x5, x6, x7 := float32(0.504), float32(0.505), float32(0.506), float32(0.507)
	x8, x9, x10, x11 := float32(0.508), float32(0.509), float32(0.510), float32(0.511)
	for range iters {
		x0, x1, x2, x3 = x0*a+b, x1*a+b, x2*a+b, x3*a+b
		x4, x5, x6, x7 = x4*a+b, x5*a+b, x6*a+b, x7*a+b
		x8, x9, x10, x11 = x8*a+b, x9*a+b, x10*a+b, x11*a+b
	}
	return x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11
}
