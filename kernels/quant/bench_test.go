package quant

import (
	"fmt"
	"testing"

	"github.com/ckbench/ckbench/kernels/isa"
)

// BenchmarkQuant times every kernel, format and tier at 4096×4096 (rb 4)
// under the names ckbench writes to bench.txt, so that go test's own
// tooling sees the same numbers:
//
//	go test -run '^$' -bench 'Quant/gemv-q8/.*fmt=q4_K' ./kernels/quant
func BenchmarkQuant(b *testing.B) {
	const m, k, rb = 4096, 4096, 4
	for _, im := range Impls() {
		if !isa.Detect(im.Tier).Runs {
			continue
		}
		for _, kern := range Kernels {
			for _, f := range WeightFormats() {
				p := Params{Kernel: kern, Fmt: f, M: m, K: k, RB: rb}
				if ok, _ := im.Has(p); !ok {
					continue
				}
				act, fmtName, shape := "f32", f.String(), fmt.Sprintf("m=%d/k=%d/rb=%d", m, k, rb)
				switch kern {
				case GemvQ8:
					act = f.Q8Act().String()
				case QuantizeQ8:
					if f != Q4_0 && f != Q4_1 && f != Q4_K { // one per activation format
						continue
					}
					fmtName, shape = f.Q8Act().String(), fmt.Sprintf("m=0/k=%d/rb=0", k)
				case Dequant:
					act = "none"
				}
				name := fmt.Sprintf("%s/isa=%s/fmt=%s/act=%s/%s", kern, im.Tier, fmtName, act, shape)
				b.Run(name, func(b *testing.B) {
					bufs := Alloc(p)
					FillRandom(p, bufs, 1)
					b.SetBytes(int64(p.Work().Bytes))
					for b.Loop() {
						im.Run(p, bufs)
					}
				})
			}
		}
	}
}
