//go:build !purego

package attention

import "github.com/ckbench/ckbench/kernels/isa"

//go:generate go run -C _asm . -out ../decode_amd64.s

// The AVX2 and AVX-512 tiers, registered whether or not this CPU runs them
// (callers check isa.Detect first; an unsupported tier is reported, never run).
func init() {
	impls = append(impls,
		Impl{Tier: isa.AVX2,
			flash: flashAsm(flashDecodeExactAVX2, flashDecodeFastAVX2),
			naive: naiveAsm(naiveDecodeExactAVX2, naiveDecodeFastAVX2)},
		Impl{Tier: isa.AVX512,
			flash: flashAsm(flashDecodeExactAVX512, flashDecodeFastAVX512),
			naive: naiveAsm(naiveDecodeExactAVX512, naiveDecodeFastAVX512)},
	)
}

type flashAsmFunc func(o, q *float32, ng int, k, v *float32, n, d, tk int, scale float32, state, tiles *float32, tileStride int)

type naiveAsmFunc func(o, q, k, v *float32, n, d int, scale float32, ws *float32)

// flashAsm adapts a pair of asm flash kernels to flashFunc. The slice
// expressions are the bounds checks the asm cannot do.
func flashAsm(exact, fast flashAsmFunc) flashFunc {
	return func(o, q []float32, g int, k, v []float32, n, d, tk int, scale float32, e Exp, ws []float32) {
		f := exact
		if e == ExpFast {
			f = fast
		}
		tb := tileBufLen(tk)
		tiles := ws[flashStateLen(g) : flashStateLen(g)+g*tb]
		o, q, k, v = o[:g*d], q[:g*d], k[:n*d], v[:n*d]
		f(&o[0], &q[0], g, &k[0], &v[0], n, d, tk, scale, &ws[0], &tiles[0], 4*tb)
	}
}

func naiveAsm(exact, fast naiveAsmFunc) naiveFunc {
	return func(o, q, k, v []float32, n, d int, scale float32, e Exp, ws []float32) {
		f := exact
		if e == ExpFast {
			f = fast
		}
		o, q, k, v, ws = o[:d], q[:d], k[:n*d], v[:n*d], ws[:roundUp(n, 16)]
		f(&o[0], &q[0], &k[0], &v[0], n, d, scale, &ws[0])
	}
}

// flashDecodeExactAVX2 computes, for ng query heads sharing one KV head, what flashGeneric does with ExpExact:
// per tile of tk of the n keys, x[j] = scale·q·k[j] for each head, the running max and sum
// rescaled when the max grows, o += exp(x[j]−m)·v[j]; then o /= s. state holds m, s and
// the tile maxima (3·ng floats); tiles holds ng buffers of tileStride bytes.
//
//go:noescape
func flashDecodeExactAVX2(o, q *float32, ng int, k, v *float32, n, d, tk int, scale float32, state, tiles *float32, tileStride int)

// flashDecodeFastAVX2 is flashDecodeExact with CKE's polynomial exp (FastExp) for exp.
//
//go:noescape
func flashDecodeFastAVX2(o, q *float32, ng int, k, v *float32, n, d, tk int, scale float32, state, tiles *float32, tileStride int)

// flashDecodeExactAVX512 computes, for ng query heads sharing one KV head, what flashGeneric does with ExpExact:
// per tile of tk of the n keys, x[j] = scale·q·k[j] for each head, the running max and sum
// rescaled when the max grows, o += exp(x[j]−m)·v[j]; then o /= s. state holds m, s and
// the tile maxima (3·ng floats); tiles holds ng buffers of tileStride bytes.
//
//go:noescape
func flashDecodeExactAVX512(o, q *float32, ng int, k, v *float32, n, d, tk int, scale float32, state, tiles *float32, tileStride int)

// flashDecodeFastAVX512 is flashDecodeExact with CKE's polynomial exp (FastExp) for exp.
//
//go:noescape
func flashDecodeFastAVX512(o, q *float32, ng int, k, v *float32, n, d, tk int, scale float32, state, tiles *float32, tileStride int)

// naiveDecodeExactAVX2 computes what naiveGeneric does with ExpExact for one head: ws[j] =
// scale·q·k[j] for the n keys, then ws[j] = exp(ws[j]−max), s = Σ ws[j], and
// o = Σ (ws[j]/s)·v[j]. ws holds n floats rounded up to 16.
//
//go:noescape
func naiveDecodeExactAVX2(o, q, k, v *float32, n, d int, scale float32, ws *float32)

// naiveDecodeFastAVX2 is naiveDecodeExact with FastExp for exp.
//
//go:noescape
func naiveDecodeFastAVX2(o, q, k, v *float32, n, d int, scale float32, ws *float32)

// naiveDecodeExactAVX512 computes what naiveGeneric does with ExpExact for one head: ws[j] =
// scale·q·k[j] for the n keys, then ws[j] = exp(ws[j]−max), s = Σ ws[j], and
// o = Σ (ws[j]/s)·v[j]. ws holds n floats rounded up to 16.
//
//go:noescape
func naiveDecodeExactAVX512(o, q, k, v *float32, n, d int, scale float32, ws *float32)

// naiveDecodeFastAVX512 is naiveDecodeExact with FastExp for exp.
//
//go:noescape
func naiveDecodeFastAVX512(o, q, k, v *float32, n, d int, scale float32, ws *float32)
