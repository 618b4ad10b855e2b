package kvcache

import (
	"fmt"
	"testing"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
)

// BenchmarkStores: go test's view of the stores (ckbench sweep kvcache is
// the real tool: it checks, pins and holds each to its in-run ceiling).
func BenchmarkStores(b *testing.B) {
	for _, im := range Impls() {
		if !isa.Detect(im.Tier).Runs {
			continue
		}
		for _, op := range Ops {
			for _, kv := range attention.KVTypes {
				for _, l := range attention.Layouts {
					p := Params{Op: op, Hkv: 8, D: 128, KV: kv, Pos: 4096, Tokens: 512, Layout: l}
					bufs := Alloc(p)
					FillRandom(bufs, 1)
					w := p.Work()
					b.Run(fmt.Sprintf("%s/%s/%s/%s", op, im.Tier, kv, l), func(b *testing.B) {
						b.SetBytes(int64(w.Bytes()))
						for b.Loop() {
							im.Run(&p, &bufs)
						}
					})
				}
			}
		}
	}
}
