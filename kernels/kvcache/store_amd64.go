//go:build !purego

package kvcache

import "github.com/ckbench/ckbench/kernels/isa"

//go:generate go run -C _asm . -out ../store_amd64.s

// The AVX2 and AVX-512 tiers, registered whether or not this CPU runs them
// (callers check isa.Detect first; an unsupported tier is reported, never run).
func init() {
	impls = append(impls,
		Impl{Tier: isa.AVX2, toF16: rowsAsm(toF16RowsAVX2, 8, 2, toF16Generic), copy: rowsAsm(copyRowsAVX2, 8, 4, copyGeneric), q8: q8Rows(isa.AVX2)},
		Impl{Tier: isa.AVX512, toF16: rowsAsm(toF16RowsAVX512, 16, 2, toF16Generic), copy: rowsAsm(copyRowsAVX512, 16, 4, copyGeneric), q8: q8Rows(isa.AVX512)},
	)
}

// rowsAsm adapts an asm row store (n a multiple of w, a power of two) to
// rowsFunc; e is the bytes per value written. A row length that is no
// multiple of w (never, while D is a multiple of 16) goes to the generic
// contract.
func rowsAsm(f func(dst, dst2 *byte, dstStride int, src, src2 *float32, srcStride, nrows, n int), w, e int, generic rowsFunc) rowsFunc {
	return func(dst, dst2 []byte, dstStride int, src, src2 []float32, srcStride, nrows, n int) {
		if nrows == 0 || n == 0 {
			return
		}
		if n&(w-1) != 0 { // not n%w: a division costs a short append a tenth of its time
			generic(dst, dst2, dstStride, src, src2, srcStride, nrows, n)
			return
		}
		// The bounds checks the asm cannot do: the last row of each.
		last, lastSrc := (nrows-1)*dstStride+e*n-1, ((nrows-1)*srcStride)/4+n-1
		_, _, _, _ = dst[last], dst2[last], src[lastSrc], src2[lastSrc]
		f(&dst[0], &dst2[0], dstStride, &src[0], &src2[0], srcStride, nrows, n)
	}
}

// toF16RowsAVX2 computes, 8 values at a time, for r < nrows and i < n (a
// multiple of 8):
//
//	dst[r·dstStride + 2i : +2] = little-endian quant.F32ToF16(src[r·srcStride/4 + i])
//	dst2[r·dstStride + 2i : +2] = little-endian quant.F32ToF16(src2[r·srcStride/4 + i])
//
// with VCVTPS2PH (round to nearest even). Strides are in bytes.
//
//go:noescape
func toF16RowsAVX2(dst, dst2 *byte, dstStride int, src, src2 *float32, srcStride, nrows, n int)

// toF16RowsAVX512 is toF16RowsAVX2 16 values at a time (n a multiple of 16).
//
//go:noescape
func toF16RowsAVX512(dst, dst2 *byte, dstStride int, src, src2 *float32, srcStride, nrows, n int)

// copyRowsAVX2 copies, 8 floats at a time, for r < nrows and i < n (a
// multiple of 8):
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
