//go:build !purego

package softmax

import (
	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
)

//go:generate go run -C _asm . -out ../softmax_amd64.s

// The AVX2 and AVX-512 tiers, registered whether or not this CPU runs them
// (callers check isa.Detect first; an unsupported tier is reported, never run).
func init() {
	impls = append(impls,
		Impl{Tier: isa.AVX2,
			threePass: rowAsm(threePassExactAVX2, threePassFastAVX2),
			online:    rowAsm(onlineExactAVX2, onlineFastAVX2)},
		Impl{Tier: isa.AVX512,
			threePass: rowAsm(threePassExactAVX512, threePassFastAVX512),
			online:    rowAsm(onlineExactAVX512, onlineFastAVX512)},
	)
}

// rowAsm adapts the exact and fast asm kernels of one variant to rowFunc.
func rowAsm(exact, fast func(x *float32, kept, n int)) rowFunc {
	return func(x []float32, kept int, e Exp) {
		_ = x[kept-1] // the bounds the asm cannot check
		f := exact
		if e == attention.ExpFast {
			f = fast
		}
		f(&x[0], kept, len(x))
	}
}

// threePassExactAVX2 is threePassGeneric over x[:n] with the exact exp, 8
// floats at a time (a masked vector for the last kept ones and the last
// zeroed ones):
//
//	m = max(x[:kept]); x[i] = exp(x[i] − m), s = Σ x[i]; x[i] *= 1/s (i < kept)
//	x[i] = 0 (kept ≤ i < n)
//
//go:noescape
func threePassExactAVX2(x *float32, kept, n int)

// threePassFastAVX2 is threePassExactAVX2 with CKE's fast exp.
//
//go:noescape
func threePassFastAVX2(x *float32, kept, n int)

// threePassExactAVX512 is threePassExactAVX2 16 floats at a time.
//
//go:noescape
func threePassExactAVX512(x *float32, kept, n int)

// threePassFastAVX512 is threePassExactAVX512 with CKE's fast exp.
//
//go:noescape
func threePassFastAVX512(x *float32, kept, n int)

// onlineExactAVX2 is onlineGeneric over x[:n] with the exact exp, a
// running max and sum per lane, rescaled once per block of four vectors:
//
//	for each block b of x[:kept]: mb = max(m, b); s = s·exp(m − mb) + Σ exp(b − mb); m = mb
//	M = max over lanes of m; S = Σ over lanes of s·exp(m − M)
//	x[i] = exp(x[i] − M) · (1/S) (i < kept); x[i] = 0 (kept ≤ i < n)
//
// with m starting at −MaxFloat32 (see onlineGeneric).
//
//go:noescape
func onlineExactAVX2(x *float32, kept, n int)

// onlineFastAVX2 is onlineExactAVX2 with CKE's fast exp.
//
//go:noescape
func onlineFastAVX2(x *float32, kept, n int)

// onlineExactAVX512 is onlineExactAVX2 16 floats at a time.
//
//go:noescape
func onlineExactAVX512(x *float32, kept, n int)

// onlineFastAVX512 is onlineExactAVX512 with CKE's fast exp.
//
//go:noescape
func onlineFastAVX512(x *float32, kept, n int)
