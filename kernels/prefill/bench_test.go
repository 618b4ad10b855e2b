package prefill

import (
	"fmt"
	"testing"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
)

// BenchmarkPrefill runs both prefill kernels in every tier this CPU runs
// on a causal shape (#13's is Tq = Tk = 2048, H = Hkv = 8, hd 128; this one
// is a quarter of its keys, to keep go test quick):
//
//	go test -run '^$' -bench 'Prefill/prefill-flash/isa=avx512' ./kernels/prefill
//
// It reports GFLOP/s of the unmasked work, without an LSE output.
func BenchmarkPrefill(b *testing.B) {
	s := Shape{H: 8, Hkv: 8, D: 128, Tq: 512, Tk: 512, Mask: Causal}
	for _, im := range Impls() {
		if !isa.Detect(im.Tier).Runs {
			continue
		}
		for _, k := range Kernels {
			p := Params{Kernel: k, Shape: s, Exp: attention.ExpFast}
			b.Run(fmt.Sprintf("%s/isa=%s/hd=%d/h=%d/kvh=%d/tq=%d/ctx=%d", k, im.Tier, s.D, s.H, s.Hkv, s.Tq, s.Tk), func(b *testing.B) {
				bufs := Alloc(p)
				FillRandom(bufs, 1)
				bufs.LSE = nil // the common case: no LSE wanted
				for b.Loop() {
					im.Run(p, bufs)
				}
				b.ReportMetric(p.Work().Flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
