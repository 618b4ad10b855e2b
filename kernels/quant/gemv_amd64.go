//go:build !purego

package quant

//go:generate go run -C _asm . -out ../gemv_amd64.s -stubs ../gemv_stubs_amd64.go -pkg quant -tiers ../gemv_tiers_amd64.go -layout ../layout_gen.go

// gemvQ8Rows is one generated kernel: rb rows (fixed per function) of an
// integer GEMV, row r at w + r·stride, nb blocks, against the format's
// 8-bit activations (Q8_0, or Q8_K for the K-quants).
type gemvQ8Rows func(y *float32, w *byte, stride int, xq *byte, nb int)

// The SIMD tiers are registered by gemv_tiers_amd64.go, which the
// generator writes from what it generates: which formats and rows per pass
// each tier has kernels for, which it reuses from another tier (VNNI takes
// AVX-512's float kernels, quantizers and dequantizers; the AVX-512 tiers
// take the AVX2 K-quant gemv-f32), and the activation layouts.

// dequantBlocks is one generated dequantizer: nb blocks to float32.
type dequantBlocks func(dst *float32, w *byte, nb int)

// dequantAsm adapts a generated dequantizer to dequantFunc.
func dequantAsm(fn dequantBlocks) dequantFunc {
	return func(f Format, d []float32, w []byte, m, k int) {
		fi := formats[f]
		nb := m * k / fi.Block
		if nb == 0 {
			return
		}
		d, w = d[:nb*fi.Block], w[:nb*fi.Bytes]
		fn(&d[0], &w[0], nb)
	}
}

// gemvF32Rows is one generated float32-activation kernel: rb rows of a
// GEMV against x in float32.
type gemvF32Rows func(y *float32, w *byte, stride int, x *float32, nb int)

// gemvF32Asm adapts the kernels of one format and tier (index = rows per
// pass) to gemvF32Func, rb rows at a time and the remainder one at a time.
//
// The kernels take the block scale out of the sum (d·Σq·x), which can
// overflow where the dot of the dequantized weights does not (|x| ≳ 1e36),
// and subtract the bias as bias·Σx, which is Inf − Inf for an infinite x.
// A row that comes out NaN or ±Inf is therefore recomputed by the generic
// contract (dotF32), which sums exact products in float64: every tier then
// has its float specials (see Float specials in the package doc). The check
// costs one compare per row; rows are recomputed only where a special is.
func gemvF32Asm(rows []gemvF32Rows) gemvF32Func {
	return func(f Format, y []float32, w []byte, x []float32, m, k, rb int) {
		nb, stride := k/formats[f].Block, f.RowBytes(k)
		y, w, x = y[:m], w[:m*stride], x[:k]
		r := 0
		for ; r+rb <= m; r += rb {
			rows[rb](&y[r], &w[r*stride], stride, &x[0], nb)
		}
		for ; r < m; r++ {
			rows[1](&y[r], &w[r*stride], stride, &x[0], nb)
		}
		redoNonFinite(y, func(r int) float32 { return dotF32(f, w[r*stride:(r+1)*stride], x) })
	}
}

// redoNonFinite replaces every row of y that is NaN or ±Inf by the generic
// contract's value of that row (dot). All rows finite, the usual case, it
// costs one branch-free pass over y (allFinite).
func redoNonFinite(y []float32, dot func(r int) float32) {
	if allFinite(y) {
		return
	}
	for r, v := range y {
		if !finite(v) {
			y[r] = dot(r)
		}
	}
}

// gemvQ8Asm adapts the AVX2 kernels of one format (index = rows per pass)
// to gemvQ8Func: x quantized by the AVX2 quantizers.
func gemvQ8Asm(rows []gemvQ8Rows) gemvQ8Func { return gemvQ8AsmWith(quantizeQ8AVX2, nil, rows) }

// gemvQ8AsmZ is gemvQ8Asm for the AVX-512 tiers: x quantized by the
// AVX-512 quantizers.
func gemvQ8AsmZ(rows []gemvQ8Rows) gemvQ8Func { return gemvQ8AsmWith(quantizeQ8AVX512, nil, rows) }

// gemvQ8AsmPrepZ is gemvQ8AsmZ for the formats whose 512-bit kernels
// read the activations in a layout of their own (Q4_0, Q4_K): after
// quantizing x it lays them out with prep, once per call, in the room
// XQLen gives after them.
func gemvQ8AsmPrepZ(prep func(dst, xq *byte, nb int), rows []gemvQ8Rows) gemvQ8Func {
	return gemvQ8AsmWith(quantizeQ8AVX512, prep, rows)
}

// prepOctets adapts a Q4_0 layout kernel (it takes octets of blocks) to a
// prep of gemvQ8AsmPrepZ (which passes blocks).
func prepOctets(prep func(dst, xq *byte, octets int)) func(dst, xq *byte, nb int) {
	return func(dst, xq *byte, nb int) {
		if nb >= 8 {
			prep(dst, xq, nb/8)
		}
	}
}

// gemvQ8AsmWith adapts the kernels of one format and tier to gemvQ8Func:
// it quantizes x with quantize (and lays it out with prep, if any), runs
// the rows rb at a time and the remainder one at a time. The slice
// expressions are the bounds checks the asm cannot do.
func gemvQ8AsmWith(quantize quantizeQ8Func, prep func(dst, xq *byte, nb int), rows []gemvQ8Rows) gemvQ8Func {
	return func(f Format, y []float32, w []byte, x []float32, xq []byte, m, k, rb int) {
		act := f.Q8Act()
		quantize(act, xq, x[:k])
		nb, stride := k/formats[f].Block, f.RowBytes(k)
		if n, room := act.RowBytes(k), prepRoom(f, k); prep != nil && room > 0 {
			_ = xq[n+room-1] // the room the kernels read
			prep(&xq[n], &xq[0], nb)
		}
		y, w, xq = y[:m], w[:m*stride], xq[:act.RowBytes(k)]
		r := 0
		for ; r+rb <= m; r += rb {
			rows[rb](&y[r], &w[r*stride], stride, &xq[0], nb)
		}
		for ; r < m; r++ {
			rows[1](&y[r], &w[r*stride], stride, &xq[0], nb)
		}
		// As in gemvF32Asm: a row that is not finite takes the generic
		// dot's value, so that where scales overflow (Inf·0, Inf − Inf in
		// another order) every tier gives the generic tier's class.
		redoNonFinite(y, func(r int) float32 { return dotQ8(f, w[r*stride:(r+1)*stride], xq, k) })
	}
}

// quantizeQ8AVX2 quantizes x to Q8_0, Q8_1 or Q8_K with the generated
// AVX2+F16C quantizers, byte for byte GGML's reference ones.
func quantizeQ8AVX2(act Format, xq []byte, x []float32) {
	quantizeQ8With(quantizeQ8_0AVX2, quantizeQ8_1AVX2, quantizeQ8_KAVX2, act, xq, x)
}

// quantizeQ8AVX512 is quantizeQ8AVX2 with the AVX-512 quantizers.
func quantizeQ8AVX512(act Format, xq []byte, x []float32) {
	quantizeQ8With(quantizeQ8_0AVX512, quantizeQ8_1AVX512, quantizeQ8_KAVX512, act, xq, x)
}

// rowsQ8_0Asm adapts a tier's asm Q8_0 quantizers to rowsQ8_0Func:
// short rows of whole quads (nb a multiple of 4 up to rowsChunk, as at hd
// 128) in one call of rows, the others one call of row each.
// The caller checked the bounds.
func rowsQ8_0Asm(rows func(dst *byte, dstStride int, x *float32, xStride, nrows, nb int), row func(dst *byte, x *float32, nb int)) rowsQ8_0Func {
	return func(dst []byte, dstStride int, x []float32, xStride, nrows, nb int) {
		if nb%4 == 0 && nb <= rowsChunk {
			rows(&dst[0], dstStride, &x[0], 4*xStride, nrows, nb)
			return
		}
		for r := range nrows {
			row(&dst[r*dstStride], &x[r*xStride], nb)
		}
	}
}

// rowsChunk is the longest row (blocks) that rows takes. Both asm
// quantizers work in chunks of about 64 blocks (the scales, then the
// levels, while the next chunk is prefetched), but rows' chunks are
// whole rows, and a head-major batch-copy hands it one row a KV head
// (2048 blocks at 512 tokens of hd 128): the levels were read back from
// L2, not L1, and a prefetch ran a whole row (256 KB) ahead. row chunks
// a long row. Zen 3, AVX2, that batch-copy from DRAM (sweep kvcache
// --cold, 8 heads, sweep A/B, 3 rounds): 53–58 → 59–67 % of kv-copy with
// this alone, 69–75 % with the prefetches (see the generator's quadRows).
const rowsChunk = 64

func quantizeQ8With(q8_0, q8_1, q8_K func(dst *byte, x *float32, nb int), act Format, xq []byte, x []float32) {
	fi := formats[act]
	nb := len(x) / fi.Block
	if nb == 0 {
		return
	}
	xq = xq[:nb*fi.Bytes]
	switch act {
	case Q8_0:
		q8_0(&xq[0], &x[0], nb)
	case Q8_1:
		q8_1(&xq[0], &x[0], nb)
	case Q8_K:
		q8_K(&xq[0], &x[0], nb)
	default:
		quantizeQ8Generic(act, xq, x)
	}
}
