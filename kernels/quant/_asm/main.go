// Command _asm generates gemv_amd64.s, the AVX2, AVX-512 and AVX-512 VNNI
// tiers of the quantized GEMV kernels, from one description per format.
// It lives in its own module so that avo never becomes a dependency of
// ckbench.
//
//	go generate ./kernels/quant   (runs: go run -C _asm . -out ../gemv_amd64.s)
package main

import (
	"flag"
	vecgen "github.com/ckbench/ckbench/kernels/_vecgen"
	"log"
	"os"

	. "github.com/mmcloughlin/avo/build"
)

var (
	tiersOut  = flag.String("tiers", "", "write the tier table (Go) to this file")
	layoutOut = flag.String("layout", "", "write the sizes of the prepared activation layouts (Go) to this file")
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
			layout(t, q4_0, "prepQ4_0"+t.name, true)
		}
		for rb := 1; rb <= t.maxRB; rb++ {
			if t.evex {
				gemvQ4_0Pairs(t, rb)
			} else {
				gemvQ8(t, q4_0, rb)
			}
			record(t, kGemvQ8, q4_0, rb)
		}
		for _, f := range []format{q8_0, q4_1, q5_0, q5_1} {
			for rb := 1; rb <= t.maxRB; rb++ {
				gemvQ8(t, f, rb)
				record(t, kGemvQ8, f, rb)
			}
		}
		for _, f := range []format{q4_0, q4_1, q5_0, q5_1, q8_0} {
			for rb := 1; floats && rb <= t.maxRB; rb++ {
				gemvF32(t, f, rb)
				record(t, kGemvF32, f, rb)
			}
			if !floats {
				reuse(t, kGemvF32, f, tiers[1])
			}
		}
		for rb := 1; rb <= t.maxRB; rb++ {
			gemvK(t, q5_K, rb)
			record(t, kGemvQ8, q5_K, rb)
		}
		f32K := func(f format) {
			for rb := 1; floatsK && rb <= min(t.maxRB, maxRBF32K); rb++ {
				gemvF32K(t, f, rb)
				record(t, kGemvF32, f, rb)
			}
			switch {
			case !floats:
				reuse(t, kGemvF32, f, tiers[1]) // VNNI: AVX-512's (in turn AVX2's)
			case !floatsK:
				reuse(t, kGemvF32, f, tiers[0])
			}
		}
		f32K(q5_K)
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
				record(t, kGemvQ8, f, rb)
			}
			if f == q4_K && t.evex {
				layout(t, f, "prepQ8KAVX512", false) // VNNI reads AVX-512's layout
			}
			f32K(f)
		}
	}
	for _, t := range tiers {
		for _, f := range []format{q4_0, q8_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K} {
			if t.vnni {
				reuse(t, kDequant, f, tiers[1]) // AVX-512's dequantizers (see floats above)
				continue
			}
			block := 32
			if f.super() {
				block = 256
			}
			dequant(t, f, block)
			record(t, kDequant, f, 0)
		}
	}
	for _, w := range []qwidth{qAVX2, qAVX512} {
		quantizeQ8_0(w, false)
		quantizeQ8_0(w, true)
		quantizeRowsQ8_0(w)
		quantizeQ8_K(w)
	}
	vecgen.GenerateAligned() // every function and the constant table 64-byte aligned
	if *tiersOut != "" {
		if err := writeTable(*tiersOut); err != nil {
			log.Fatal(err)
		}
	}
	if *layoutOut != "" {
		if err := writeLayout(*layoutOut); err != nil {
			log.Fatal(err)
		}
	}
}
