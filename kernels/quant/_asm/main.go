// Command _asm generates gemv_amd64.s, the AVX2, AVX-512 and AVX-512 VNNI
// tiers of the quantized GEMV kernels, from one description per format.
// It lives in its own module so that avo never becomes a dependency of
// ckbench.
//
//	go generate ./kernels/quant   (runs: go run -C _asm . -out ../gemv_amd64.s)
package main

import (
	"os"

	. "github.com/mmcloughlin/avo/build"
)

// maxRBF32K caps the rows per pass of the K-quant gemv-f32 kernels: each
// row unrolls a whole super-block, and more rows do not make the (compute
// bound) f32 path faster, only the file larger.
const maxRBF32K = 4

func main() {
	// avo loads the package for type information; pin the target so the
	// output does not depend on the host (mmcloughlin/avo#450).
	os.Setenv("GOOS", "linux")
	os.Setenv("GOARCH", "amd64")
	ConstraintExpr("!purego")
	emitConsts()
	for _, t := range tiers {
		// VNNI adds only integer dot instructions: its float kernels
		// (gemv-f32, dequant) and the activation layout prepQ8K would be
		// AVX-512's byte for byte, so the VNNI tier registers those.
		floats := !t.vnni
		// The K-quant gemv-f32 kernels use no 512-bit vector, upper
		// register or mask: in the AVX-512 tiers they would be the AVX2
		// code in EVEX encodings (VPANDD for VPAND), measured no faster
		// (go test -bench 'Quant/gemv-f32/.*fmt=q[456]_K', ±1 %, n.s.).
		// The AVX-512 tiers register the AVX2 ones.
		floatsK := floats && !t.evex
		if t.evex {
			prepQ4_0(t)
		}
		for rb := 1; rb <= t.maxRB; rb++ {
			if t.evex {
				gemvQ4_0Pairs(t, rb)
			} else {
				gemvQ8(t, q4_0, rb)
			}
		}
		for _, f := range []format{q8_0, q4_1, q5_0, q5_1} {
			for rb := 1; rb <= t.maxRB; rb++ {
				gemvQ8(t, f, rb)
			}
		}
		for _, f := range []format{q4_0, q4_1, q5_0, q5_1, q8_0} {
			for rb := 1; floats && rb <= t.maxRB; rb++ {
				gemvF32(t, f, rb)
			}
		}
		for rb := 1; rb <= t.maxRB; rb++ {
			gemvK(t, q5_K, rb)
		}
		for rb := 1; floatsK && rb <= min(t.maxRB, maxRBF32K); rb++ {
			gemvF32K(t, q5_K, rb)
		}
		if t.evex && floats {
			prepQ8K(t)
		}
		for _, f := range []format{q4_K, q6_K} {
			for rb := 1; rb <= t.maxRB; rb++ {
				switch {
				case f == q4_K && t.evex && rb <= 4:
					gemvQ4KZ(t, rb)
				case f == q6_K && t.evex && rb <= 4:
					gemvQ6KZ(t, rb)
				default:
					gemvK(t, f, rb)
				}
			}
			for rb := 1; floatsK && rb <= min(t.maxRB, maxRBF32K); rb++ {
				gemvF32K(t, f, rb)
			}
		}
	}
	for _, t := range tiers {
		if t.vnni {
			continue // AVX-512's dequantizers (see floats above)
		}
		dequant(t, q4_0, 32)
		dequant(t, q8_0, 32)
		dequant(t, q4_1, 32)
		dequant(t, q5_0, 32)
		dequant(t, q5_1, 32)
		dequant(t, q4_K, 256)
		dequant(t, q5_K, 256)
		dequant(t, q6_K, 256)
	}
	for _, w := range []qwidth{qAVX2, qAVX512} {
		quantizeQ8_0(w, false)
		quantizeQ8_0(w, true)
		quantizeQ8_K(w)
	}
	Generate()
}
