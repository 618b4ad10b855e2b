//go:build !purego

package kvcache

import "github.com/ckbench/ckbench/kernels/isa"

//go:generate go run -C _asm . -out ../store_amd64.s

// The AVX2 and AVX-512 tiers, registered whether or not this CPU runs them
// (callers check isa.Detect first; an unsupported tier is reported, never run).
func init() {
	impls = append(impls,
		Impl{Tier: isa.AVX2, toF16: store{toF16RowsAVX2, 8, 2, toF16Generic}, toF16Pos: store{toF16LinesAVX2, 8, 2, toF16Generic}, copy: store{copyRowsAVX2, 8, 4, copyGeneric}, toQ8: q8Store(isa.AVX2)},
		Impl{Tier: isa.AVX512, toF16: store{toF16RowsAVX512, 16, 2, toF16Generic}, toF16Pos: store{toF16RowsAVX512, 16, 2, toF16Generic}, copy: store{copyRowsAVX512, 16, 4, copyGeneric}, toQ8: q8Store(isa.AVX512)},
	)
}

// toF16RowsAVX2 computes, 8 values at a time, for r < nrows and i < n (a
// multiple of 8):
//
//	dst[r·dstStride + 2i : +2] = little-endian quant.F32ToF16(src[r·srcStride/4 + i])
//	dst2[r·dstStride + 2i : +2] = little-endian quant.F32ToF16(src2[r·srcStride/4 + i])
//
// with VCVTPS2PH (round to nearest even), row r of src and row r of src2
// side by side. Strides are in bytes.
//
//go:noescape
func toF16RowsAVX2(dst, dst2 *byte, dstStride int, src, src2 *float32, srcStride, nrows, n int)

// toF16LinesAVX2 is toF16RowsAVX2 storing a line of K, then of V (the
// generator's byLine): a position-major batch-copy's store.
//
//go:noescape
func toF16LinesAVX2(dst, dst2 *byte, dstStride int, src, src2 *float32, srcStride, nrows, n int)

// toF16RowsAVX512 is toF16RowsAVX2 16 values at a time (n a multiple of 16).
//
//go:noescape
func toF16RowsAVX512(dst, dst2 *byte, dstStride int, src, src2 *float32, srcStride, nrows, n int)

// copyRowsAVX2 copies, 8 floats at a time, row r of src and row r of src2
// side by side, for r < nrows and i < n (a multiple of 8):
//
//	dst[r·dstStride + 4i : +4] = src[r·srcStride/4 + i]
//	dst2[r·dstStride + 4i : +4] = src2[r·srcStride/4 + i]
//
// Strides are in bytes.
//
//go:noescape
func copyRowsAVX2(dst, dst2 *byte, dstStride int, src, src2 *float32, srcStride, nrows, n int)

// copyRowsAVX512 is copyRowsAVX2 16 floats at a time (n a multiple of 16).
//
//go:noescape
func copyRowsAVX512(dst, dst2 *byte, dstStride int, src, src2 *float32, srcStride, nrows, n int)
