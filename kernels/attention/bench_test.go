package attention

import (
	"fmt"
	"testing"

	"github.com/ckbench/ckbench/kernels/isa"
)

// BenchmarkDecode runs every decode kernel in every tier this CPU runs,
// named like ckbench's own results so benchstat can compare the two:
//
//	go test -run '^$' -bench 'Decode/decode-flash/isa=avx512' ./kernels/attention
//
// b.SetBytes is the compulsory traffic, so MB/s is the useful bandwidth.
func BenchmarkDecode(b *testing.B) {
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
					name := fmt.Sprintf("%s/isa=%s/exp=%s/hd=%d/ctx=%d/h=%d/kvh=%d", k, im.Tier, e, s.D, s.T, s.H, s.Hkv)
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
