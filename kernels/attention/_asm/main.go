// Command _asm generates decode_amd64.s, the AVX2 and AVX-512 tiers of the
// attention decode kernels, from one description per kernel. It lives in
// its own module so that avo never becomes a dependency of ckbench.
//
//	go generate ./kernels/attention   (runs: go run -C _asm . -out ../decode_amd64.s)
package main

import (
	"os"

	. "github.com/ckbench/ckbench/kernels/_vecgen"
	. "github.com/mmcloughlin/avo/build"
)

func main() {
	// avo loads the package for type information; pin the target so the
	// output does not depend on the host (mmcloughlin/avo#450).
	os.Setenv("GOOS", "linux")
	os.Setenv("GOARCH", "amd64")
	// The kernels implement the stubs declared in package attention:
	// Implement takes each signature from there, so a stub and its asm
	// cannot disagree.
	Package("github.com/ckbench/ckbench/kernels/attention")
	ConstraintExpr("!purego")
	EmitConsts("expconst")
	for _, e := range []elem{f32, f16, q8} {
		for _, t := range []tier{avx2.with(e), avx512.with(e)} {
			for _, fast := range []bool{false, true} {
				t.flashDecode(fast)
				t.naiveDecode(fast)
			}
		}
	}
	Generate()
}
