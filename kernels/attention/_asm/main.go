// Command _asm generates decode_amd64.s, the AVX2 and AVX-512 tiers of the
// attention decode kernels, from one description per kernel. It lives in
// its own module so that avo never becomes a dependency of ckbench.
//
//	go generate ./kernels/attention   (runs: go run -C _asm . -out ../decode_amd64.s)
package main

import (
	. "github.com/ckbench/ckbench/kernels/_vecgen"
)

func main() {
	Begin("github.com/ckbench/ckbench/kernels/attention", "expconst")
	for _, e := range []elem{f32, f16, q8} {
		for _, t := range []tier{avx2.with(e), avx512.with(e)} {
			t.flashDecode()
			t.naiveDecode()
		}
	}
	// The position-major flash kernels (see tier.pos), after the others so
	// that their labels leave those of the others as they were.
	for _, e := range []elem{f32, f16, q8} {
		for _, t := range []tier{avx2.with(e), avx512.with(e)} {
			t.pos = true
			t.flashDecode()
		}
	}
	GenerateAligned()
}
