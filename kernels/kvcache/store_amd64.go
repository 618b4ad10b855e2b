//go:build !purego

package kvcache

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/ckbench/ckbench/kernels/isa"
)

//go:generate go run -C _asm . -out ../store_amd64.s

// The AVX2 and AVX-512 tiers, registered whether or not this CPU runs them
// (callers check isa.Detect first; an unsupported tier is reported, never run).
func init() {
	v, fam := cpuid.CPU.VendorID, cpuid.CPU.Family
	copy512, other := store{copyRowsAVX512, 16, 4, copyGeneric}, store{copyRowsAVX2, 8, 4, copyGeneric}
	if ymmCopyOn(v, fam) {
		copy512, other = other, copy512
	}
	if zen4PosBlocksOn(v, fam, cpuid.CPU.Supports(cpuid.AVX512F)) {
		posBlockBytes = zen4PosBlockBytes
	}
	impls = append(impls,
		Impl{Tier: isa.AVX2, toF16: store{toF16RowsAVX2, 8, 2, toF16Generic}, toF16Pos: store{toF16LinesAVX2, 8, 2, toF16Generic}, copy: store{copyRowsAVX2, 8, 4, copyGeneric}, toQ8: q8Store(isa.AVX2)},
		Impl{Tier: isa.AVX512, toF16: store{toF16RowsAVX512, 16, 2, toF16Generic}, toF16Pos: store{toF16RowsAVX512, 16, 2, toF16Generic}, copy: copy512, copyAlt: other, toQ8: q8Store(isa.AVX512)},
	)
}

// ymmCopyOn reports whether the AVX-512 tier copies f32 rows with AVX2's
// ymm copy (copyRowsAVX2) rather than its own zmm one on a CPU of vendor
// v and family fam: on Zen 4 (AMD family 0x19, the only family-25 core
// with AVX-512, its 512-bit operations on 256-bit units). There (EPYC
// family 25 model 17, 2026-11-29, sweep kvcache --kernel
// batch-copy,kv-copy, f32, 8 KV heads × 512 tokens, hd 128, ctx 4096,
// the binaries alternated, 3 rounds, median time ymm over zmm) batch-copy
// took 0.87 head-major in L3 (89 % of the paired kv-copy to 100 %), 0.98
// position-major; from DRAM (--cold) 0.97 head-major and 0.90
// position-major (63–65 % to 71–74 %). Intel and Zen 5 keep zmm, never
// measured against it.
func ymmCopyOn(v cpuid.Vendor, fam int) bool { return isa.Zen4(v, fam, true) }

// zen4PosBlocksOn reports whether a position-major batch-copy of f32 or
// f16 takes its tokens in blocks of zen4PosBlockBytes (1 MB of the cache)
// rather than defaultPosBlockBytes (posBlockBytes) on a CPU of vendor v
// and family fam, with AVX-512 or without: on Zen 4 (AMD family 0x19 with
// AVX-512), in every tier. There (EPYC family 25 model 17, 2026-11-29,
// sweep kvcache --kernel batch-copy,kv-copy --kv f32,f16 --hd 128 --heads
// 8 --ctx 4096 --tokens 512 --layout pos --isa avx2,avx512, the binaries
// alternated, 3 rounds), from DRAM (--cold) 1 MB blocks took 0.85–0.90
// of 256 KB's time for f32 (410–425 µs to 357–369; 69–72 % of the
// paired kv-copy to 78–85 %) and 0.89–0.93 for f16 (68–72 % to 75–84
// %); in L3 (2 rounds) the same for f32 (88–89 GB/s both), f16 91–95
// GB/s against 91–93. Blocks of 64 KB took 1.08–1.14 from DRAM; the
// whole batch as one block (2 MB of f32) 0.81 (f32) and 0.94 (f16) from
// DRAM, but f32 1.06 in L3. Zen 3 (no
// AVX-512), Zen 5 and Intel keep 256 KB: Zen 3 measured 1 MB's 256
// positions 0.92 of the whole batch's time in L3 against 0.79–0.87 for
// 256 KB's 64.
func zen4PosBlocksOn(v cpuid.Vendor, fam int, avx512 bool) bool { return isa.Zen4(v, fam, avx512) }

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
