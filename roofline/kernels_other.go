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
