package attention

import (
	"fmt"
	"testing"

	"github.com/ckbench/ckbench/kernels/isa"
)

// BenchmarkAttention runs every decode kernel in every tier this CPU runs,
// with the names ckbench writes to bench.txt, so benchstat can compare the
// two:
//
//	go test -run '^$' -bench 'Attention/decode-flash/isa=avx512' ./kernels/attention
//
// b.SetBytes is the compulsory traffic, so MB/s is the useful bandwidth.
func BenchmarkAttention(b *testing.B) {
	shapes := []Shape{
		{H: 1, Hkv: 1, D: 128, T: 4096},
		{H: 32, Hkv: 8, D: 128, T: 4096},
		{H: 1, Hkv: 1, D: 128, T: 32768},
	}
	for _, im := range Impls() {
		if st := isa.Detect(im.Tier); !st.Runs {
			continue
		}
		for _, k := range Kernels {
			for _, e := range []Exp{ExpFast, ExpExact} {
				for _, s := range shapes {
					p := Params{Kernel: k, Shape: s, Exp: e}
					tk := "auto"
					if k == DecodeNaive {
						tk = "none"
					}
					name := fmt.Sprintf("%s/isa=%s/exp=%s/hd=%d/tk=%s/ctx=%d/h=%d/kvh=%d/kv=f32", k, im.Tier, e, s.D, tk, s.T, s.H, s.Hkv)
					b.Run(name, func(b *testing.B) {
						bufs := Alloc(p)
						FillRandom(bufs, 1)
						b.SetBytes(int64(p.Work().Bytes))
						for b.Loop() {
							im.Run(p, bufs)
						}
					})
				}
			}
		}
	}
}
