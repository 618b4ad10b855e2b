//go:build !purego

package prefill

import "github.com/ckbench/ckbench/kernels/isa"

//go:generate go run -C _asm . -out ../prefill_amd64.s

// The AVX2 and AVX-512 tiers, registered whether or not this CPU runs them
// (callers check isa.Detect first; an unsupported tier is reported, never run).
func init() {
	impls = append(impls,
		Impl{Tier: isa.AVX2, sm: smTier(isa.AVX2), mk: &micro{
			qk: qkAVX2, pv: pvAVX2, soft: [2]softFunc{tileSoftmaxExactAVX2, tileSoftmaxFastAVX2}}},
		Impl{Tier: isa.AVX512, sm: smTier(isa.AVX512), mk: &micro{
			qk: qkAVX512, pv: pvAVX512, soft: [2]softFunc{tileSoftmaxExactAVX512, tileSoftmaxFastAVX512}}},
	)
}

// qkAVX2 computes, for i < rows and j < cols (a multiple of 16), in
// register blocks of 6 rows × 16 keys:
//
//	s[i·lds + j] = scale · Σ_{c<d} q[i·d + c] · k[c·ldk + j]
//
//go:noescape
func qkAVX2(s, q, k *float32, rows, cols, d, ldk, lds int, scale float32)

// qkAVX512 is qkAVX2 in blocks of 8 rows × 32 keys (cols a multiple of 32).
//
//go:noescape
func qkAVX512(s, q, k *float32, rows, cols, d, ldk, lds int, scale float32)

// pvAVX2 computes, for i < rows and e < d (a multiple of 8), in register
// blocks of 6 rows × 16 head-dim columns:
//
//	o[i·d + e] = c[i]·o[i·d + e] + Σ_{j<n} p[i·ldp + j] · v[j·d + e]
//
//go:noescape
func pvAVX2(o, p, v, c *float32, rows, n, d, ldp int)

// pvAVX512 is pvAVX2 in blocks of 6 rows × 64 columns (d a multiple of 16).
//
//go:noescape
func pvAVX512(o, p, v, c *float32, rows, n, d, ldp int)

// tileSoftmaxExactAVX2 takes one online-softmax step per row i < rows of
// a score tile (cols a multiple of 8), with the exact exp:
//
//	mn = max(m[i], max_j s[i·lds + j]); c[i] = exp(m[i] − mn)
//	s[i·lds + j] = exp(s[i·lds + j] − mn); l[i] = l[i]·c[i] + Σ_j s[i·lds + j]; m[i] = mn
//
//go:noescape
func tileSoftmaxExactAVX2(s, m, l, c *float32, rows, cols, lds int)

// tileSoftmaxFastAVX2 is tileSoftmaxExactAVX2 with CKE's fast exp.
//
//go:noescape
func tileSoftmaxFastAVX2(s, m, l, c *float32, rows, cols, lds int)

// tileSoftmaxExactAVX512 is tileSoftmaxExactAVX2 16 floats at a time.
//
//go:noescape
func tileSoftmaxExactAVX512(s, m, l, c *float32, rows, cols, lds int)

// tileSoftmaxFastAVX512 is tileSoftmaxExactAVX512 with CKE's fast exp.
//
//go:noescape
func tileSoftmaxFastAVX512(s, m, l, c *float32, rows, cols, lds int)
