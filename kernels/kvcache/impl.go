package kvcache

import (
	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/quant"
)

// rowsFunc writes nrows rows of n float32 values, row r from src at byte
// offset r·srcStride to dst at byte offset r·dstStride, and the same from
// src2 to dst2, in the cache's element type (f16, or f32 for a copy). One
// call covers every row of K and V that share their strides: a token's
// append is one call.
type rowsFunc func(dst, dst2 []byte, dstStride int, src, src2 []float32, srcStride, nrows, n int)

// Impl is one ISA tier's implementation of the stores: how it writes
// float32 rows as f32 (a copy), f16 and q8_0.
type Impl struct {
	Tier  isa.Tier
	copy  rowsFunc
	toF16 rowsFunc
	q8    quant.Q8_0RowsFunc // package quant's q8_0 rows quantizer of the tier
}

// impls holds every tier compiled into this binary, generic first; the
// per-arch file appends to it in init.
var impls = []Impl{{Tier: isa.Generic, copy: copyGeneric, toF16: toF16Generic, q8: q8Rows(isa.Generic)}}

// q8Rows is package quant's q8_0 rows quantizer of tier t (the generic
// one where quant has no tier t).
func q8Rows(t isa.Tier) quant.Q8_0RowsFunc {
	im, ok := quant.Lookup(t)
	if !ok {
		im, _ = quant.Lookup(isa.Generic)
	}
	return im.Q8_0Rows()
}

// Impls returns the tiers compiled into this binary, whether or not the CPU
// can run them: check isa.Detect before calling Run on one.
func Impls() []Impl { return impls }

// Tiers lists the tiers this binary has stores for.
func Tiers() []isa.Tier { return isa.TiersOf(impls) }

// Lookup returns the implementation of tier t, if this binary has one.
func Lookup(t isa.Tier) (Impl, bool) { return isa.Find(impls, t) }

// TierOf makes Impl an isa.Implemented.
func (im Impl) TierOf() isa.Tier { return im.Tier }

// toF16Generic is the contract of the f16 store: attention's f16 row
// encoding (each value rounded to nearest even, little-endian).
func toF16Generic(dst, dst2 []byte, dstStride int, src, src2 []float32, srcStride, nrows, n int) {
	for r := range nrows {
		s := r * srcStride / 4
		attention.EncodeRow(attention.F16, dst[r*dstStride:r*dstStride+2*n], src[s:s+n])
		attention.EncodeRow(attention.F16, dst2[r*dstStride:r*dstStride+2*n], src2[s:s+n])
	}
}

// copyGeneric is the f32 store: the values, row by row (Go's copy).
func copyGeneric(dst, dst2 []byte, dstStride int, src, src2 []float32, srcStride, nrows, n int) {
	for r := range nrows {
		copy(buf.FloatsOf(dst[r*dstStride:r*dstStride+4*n]), src[r*srcStride/4:r*srcStride/4+n])
		copy(buf.FloatsOf(dst2[r*dstStride:r*dstStride+4*n]), src2[r*srcStride/4:r*srcStride/4+n])
	}
}

// Run executes p on b. The caller must have checked p.Check(b) == nil and
// that the CPU runs im.Tier; Run does not allocate. It takes pointers: a
// token's append is ~60 ns, and passing Impl, Params and Buffers by value
// (~40 words) cost it 10 more (Zen 4, interleaved A/B).
//
// Head-major, head kh's new rows are contiguous in the cache and in the
// scratch: one row of n·D values per head, Capacity rows apart, one call
// for all heads of K and V. Position-major, the heads of one position are
// contiguous: one call per head (its rows Hkv, or PosHeads, apart) or, when a store
// writes fewer tokens than there are heads (append), one per token (its
// Hkv rows).
func (im *Impl) Run(p *Params, b *Buffers) {
	k, v := b.KEnc, b.VEnc
	if p.KV == attention.F32 {
		k, v = buf.BytesOf(b.K), buf.BytesOf(b.V)
	}
	d, n, rb := p.D, p.Count(), p.KV.RowBytes(p.D)
	switch {
	case p.Layout == attention.HeadMajor:
		at := p.Row(0, p.Pos) * rb
		im.rows(p.KV, k[at:], v[at:], p.Capacity()*rb, b.SrcK, b.SrcV, 4*n*d, p.Hkv, n*d)
	case n < p.Hkv:
		for j := range n {
			at := p.Row(0, p.Pos+j) * rb
			im.rows(p.KV, k[at:], v[at:], rb, b.SrcK[j*d:], b.SrcV[j*d:], 4*n*d, p.Hkv, d)
		}
	default:
		for kh := range p.Hkv {
			at := p.Row(kh, p.Pos) * rb
			im.rows(p.KV, k[at:], v[at:], p.cache().PosStride()*rb, b.SrcK[kh*n*d:], b.SrcV[kh*n*d:], 4*d, n, d)
		}
	}
}

// rows writes nrows rows of n values of K and of V (strides in bytes) in
// type kv: f32 and f16 in one call of the tier's row store, q8_0 in one
// call of the tier's q8_0 rows quantizer for K and one for V (a row is
// whole blocks).
func (im *Impl) rows(kv attention.KVType, dst, dst2 []byte, dstStride int, src, src2 []float32, srcStride, nrows, n int) {
	switch kv {
	case attention.F32:
		im.copy(dst, dst2, dstStride, src, src2, srcStride, nrows, n)
	case attention.F16:
		im.toF16(dst, dst2, dstStride, src, src2, srcStride, nrows, n)
	case attention.Q8_0:
		// One call for all rows of K, one for V: the quantizer overlaps
		// the rows' chains (see quant.Impl.Q8_0Rows).
		for _, x := range [2]struct {
			dst []byte
			src []float32
		}{{dst, src}, {dst2, src2}} {
			if err := im.q8(x.dst, dstStride, x.src, srcStride/4, nrows, n); err != nil {
				panic(err) // D is a multiple of the block and the buffers fit: Validate checked it
			}
		}
	}
}
