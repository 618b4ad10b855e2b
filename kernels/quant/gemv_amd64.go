//go:build !purego

package quant

import (
	"math"

	"github.com/ckbench/ckbench/kernels/isa"
)

//go:generate go run -C _asm . -out ../gemv_amd64.s -stubs ../gemv_stubs_amd64.go -pkg quant

// gemvQ8Rows is one generated kernel: rb rows (fixed per function) of an
// integer GEMV, row r at w + r·stride, nb blocks, against the format's
// 8-bit activations (Q8_0, or Q8_K for the K-quants).
type gemvQ8Rows func(y *float32, w *byte, stride int, xq *byte, nb int)

// The SIMD tiers, registered whether or not this CPU runs them (callers
// check isa.Detect first; a tier the CPU lacks is reported, never run).
// Each covers the formats it has kernels for; ckbench list quant shows
// which, and the sweep skips the rest with the reason.
func init() {
	avx2 := Impl{Tier: isa.AVX2, maxRB: 4,
		dequant: map[Format]dequantFunc{
			Q4_0: dequantAsm(dequantQ4_0AVX2), Q8_0: dequantAsm(dequantQ8_0AVX2),
			Q4_1: dequantAsm(dequantQ4_1AVX2), Q5_0: dequantAsm(dequantQ5_0AVX2), Q5_1: dequantAsm(dequantQ5_1AVX2),
			Q5_K: dequantAsm(dequantQ5_KAVX2),
			Q4_K: dequantAsm(dequantQ4_KAVX2), Q6_K: dequantAsm(dequantQ6_KAVX2),
		}, quantizeQ8: map[Format]quantizeQ8Func{
			Q8_0: quantizeQ8AVX2, Q8_1: quantizeQ8AVX2, Q8_K: quantizeQ8AVX2,
		}, gemvQ8: map[Format]gemvQ8Func{
			Q4_0: gemvQ8Asm([]gemvQ8Rows{nil, gemvQ8Q4_0AVX2R1, gemvQ8Q4_0AVX2R2, gemvQ8Q4_0AVX2R3, gemvQ8Q4_0AVX2R4}),
			Q8_0: gemvQ8Asm([]gemvQ8Rows{nil, gemvQ8Q8_0AVX2R1, gemvQ8Q8_0AVX2R2, gemvQ8Q8_0AVX2R3, gemvQ8Q8_0AVX2R4}),
			Q4_1: gemvQ8Asm([]gemvQ8Rows{nil, gemvQ8Q4_1AVX2R1, gemvQ8Q4_1AVX2R2, gemvQ8Q4_1AVX2R3, gemvQ8Q4_1AVX2R4}),
			Q5_0: gemvQ8Asm([]gemvQ8Rows{nil, gemvQ8Q5_0AVX2R1, gemvQ8Q5_0AVX2R2, gemvQ8Q5_0AVX2R3, gemvQ8Q5_0AVX2R4}),
			Q5_1: gemvQ8Asm([]gemvQ8Rows{nil, gemvQ8Q5_1AVX2R1, gemvQ8Q5_1AVX2R2, gemvQ8Q5_1AVX2R3, gemvQ8Q5_1AVX2R4}),
			Q4_K: gemvQ8Asm([]gemvQ8Rows{nil, gemvQ8Q4_KAVX2R1, gemvQ8Q4_KAVX2R2, gemvQ8Q4_KAVX2R3, gemvQ8Q4_KAVX2R4}),
			Q5_K: gemvQ8Asm([]gemvQ8Rows{nil, gemvQ8Q5_KAVX2R1, gemvQ8Q5_KAVX2R2, gemvQ8Q5_KAVX2R3, gemvQ8Q5_KAVX2R4}),
			Q6_K: gemvQ8Asm([]gemvQ8Rows{nil, gemvQ8Q6_KAVX2R1, gemvQ8Q6_KAVX2R2, gemvQ8Q6_KAVX2R3, gemvQ8Q6_KAVX2R4}),
		}, gemvF32: map[Format]gemvF32Func{
			Q4_0: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q4_0AVX2R1, gemvF32Q4_0AVX2R2, gemvF32Q4_0AVX2R3, gemvF32Q4_0AVX2R4}),
			Q8_0: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q8_0AVX2R1, gemvF32Q8_0AVX2R2, gemvF32Q8_0AVX2R3, gemvF32Q8_0AVX2R4}),
			Q4_1: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q4_1AVX2R1, gemvF32Q4_1AVX2R2, gemvF32Q4_1AVX2R3, gemvF32Q4_1AVX2R4}),
			Q5_0: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q5_0AVX2R1, gemvF32Q5_0AVX2R2, gemvF32Q5_0AVX2R3, gemvF32Q5_0AVX2R4}),
			Q5_1: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q5_1AVX2R1, gemvF32Q5_1AVX2R2, gemvF32Q5_1AVX2R3, gemvF32Q5_1AVX2R4}),
			Q5_K: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q5_KAVX2R1, gemvF32Q5_KAVX2R2, gemvF32Q5_KAVX2R3, gemvF32Q5_KAVX2R4}),
			Q4_K: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q4_KAVX2R1, gemvF32Q4_KAVX2R2, gemvF32Q4_KAVX2R3, gemvF32Q4_KAVX2R4}),
			Q6_K: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q6_KAVX2R1, gemvF32Q6_KAVX2R2, gemvF32Q6_KAVX2R3, gemvF32Q6_KAVX2R4}),
		}}
	// The AVX-512 tiers' K-quant gemv-f32 are the AVX2 kernels (see _asm:
	// they use no 512-bit feature).
	avx512 := Impl{Tier: isa.AVX512, maxRB: 8, maxRBF32: kF32Rows,
		quantizeQ8: map[Format]quantizeQ8Func{
			Q8_0: quantizeQ8AVX512, Q8_1: quantizeQ8AVX512, Q8_K: quantizeQ8AVX512,
		},
		dequant: map[Format]dequantFunc{
			Q4_0: dequantAsm(dequantQ4_0AVX512), Q8_0: dequantAsm(dequantQ8_0AVX512),
			Q4_1: dequantAsm(dequantQ4_1AVX512), Q5_0: dequantAsm(dequantQ5_0AVX512), Q5_1: dequantAsm(dequantQ5_1AVX512),
			Q5_K: dequantAsm(dequantQ5_KAVX512),
			Q4_K: dequantAsm(dequantQ4_KAVX512), Q6_K: dequantAsm(dequantQ6_KAVX512),
		}, gemvQ8: map[Format]gemvQ8Func{
			Q4_0: gemvQ8AsmPrepZ(prepOctets(prepQ4_0AVX512), []gemvQ8Rows{nil, gemvQ8Q4_0AVX512R1, gemvQ8Q4_0AVX512R2, gemvQ8Q4_0AVX512R3, gemvQ8Q4_0AVX512R4, gemvQ8Q4_0AVX512R5, gemvQ8Q4_0AVX512R6, gemvQ8Q4_0AVX512R7, gemvQ8Q4_0AVX512R8}),
			Q8_0: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q8_0AVX512R1, gemvQ8Q8_0AVX512R2, gemvQ8Q8_0AVX512R3, gemvQ8Q8_0AVX512R4, gemvQ8Q8_0AVX512R5, gemvQ8Q8_0AVX512R6, gemvQ8Q8_0AVX512R7, gemvQ8Q8_0AVX512R8}),
			Q4_1: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q4_1AVX512R1, gemvQ8Q4_1AVX512R2, gemvQ8Q4_1AVX512R3, gemvQ8Q4_1AVX512R4, gemvQ8Q4_1AVX512R5, gemvQ8Q4_1AVX512R6, gemvQ8Q4_1AVX512R7, gemvQ8Q4_1AVX512R8}),
			Q5_0: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q5_0AVX512R1, gemvQ8Q5_0AVX512R2, gemvQ8Q5_0AVX512R3, gemvQ8Q5_0AVX512R4, gemvQ8Q5_0AVX512R5, gemvQ8Q5_0AVX512R6, gemvQ8Q5_0AVX512R7, gemvQ8Q5_0AVX512R8}),
			Q5_1: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q5_1AVX512R1, gemvQ8Q5_1AVX512R2, gemvQ8Q5_1AVX512R3, gemvQ8Q5_1AVX512R4, gemvQ8Q5_1AVX512R5, gemvQ8Q5_1AVX512R6, gemvQ8Q5_1AVX512R7, gemvQ8Q5_1AVX512R8}),
			Q4_K: gemvQ8AsmPrepZ(prepQ8KAVX512, []gemvQ8Rows{nil, gemvQ8Q4_KAVX512R1, gemvQ8Q4_KAVX512R2, gemvQ8Q4_KAVX512R3, gemvQ8Q4_KAVX512R4, gemvQ8Q4_KAVX512R5, gemvQ8Q4_KAVX512R6, gemvQ8Q4_KAVX512R7, gemvQ8Q4_KAVX512R8}),
			Q5_K: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q5_KAVX512R1, gemvQ8Q5_KAVX512R2, gemvQ8Q5_KAVX512R3, gemvQ8Q5_KAVX512R4, gemvQ8Q5_KAVX512R5, gemvQ8Q5_KAVX512R6, gemvQ8Q5_KAVX512R7, gemvQ8Q5_KAVX512R8}),
			Q6_K: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q6_KAVX512R1, gemvQ8Q6_KAVX512R2, gemvQ8Q6_KAVX512R3, gemvQ8Q6_KAVX512R4, gemvQ8Q6_KAVX512R5, gemvQ8Q6_KAVX512R6, gemvQ8Q6_KAVX512R7, gemvQ8Q6_KAVX512R8}),
		}, gemvF32: map[Format]gemvF32Func{
			Q4_0: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q4_0AVX512R1, gemvF32Q4_0AVX512R2, gemvF32Q4_0AVX512R3, gemvF32Q4_0AVX512R4, gemvF32Q4_0AVX512R5, gemvF32Q4_0AVX512R6, gemvF32Q4_0AVX512R7, gemvF32Q4_0AVX512R8}),
			Q8_0: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q8_0AVX512R1, gemvF32Q8_0AVX512R2, gemvF32Q8_0AVX512R3, gemvF32Q8_0AVX512R4, gemvF32Q8_0AVX512R5, gemvF32Q8_0AVX512R6, gemvF32Q8_0AVX512R7, gemvF32Q8_0AVX512R8}),
			Q4_1: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q4_1AVX512R1, gemvF32Q4_1AVX512R2, gemvF32Q4_1AVX512R3, gemvF32Q4_1AVX512R4, gemvF32Q4_1AVX512R5, gemvF32Q4_1AVX512R6, gemvF32Q4_1AVX512R7, gemvF32Q4_1AVX512R8}),
			Q5_0: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q5_0AVX512R1, gemvF32Q5_0AVX512R2, gemvF32Q5_0AVX512R3, gemvF32Q5_0AVX512R4, gemvF32Q5_0AVX512R5, gemvF32Q5_0AVX512R6, gemvF32Q5_0AVX512R7, gemvF32Q5_0AVX512R8}),
			Q5_1: gemvF32Asm([]gemvF32Rows{nil, gemvF32Q5_1AVX512R1, gemvF32Q5_1AVX512R2, gemvF32Q5_1AVX512R3, gemvF32Q5_1AVX512R4, gemvF32Q5_1AVX512R5, gemvF32Q5_1AVX512R6, gemvF32Q5_1AVX512R7, gemvF32Q5_1AVX512R8}),
			Q5_K: avx2.gemvF32[Q5_K],
			Q4_K: avx2.gemvF32[Q4_K],
			Q6_K: avx2.gemvF32[Q6_K],
		}}
	// VNNI differs from AVX-512 in the integer dot products alone: its
	// float kernels, quantizers and the q4_K activation layout are AVX-512's.
	vnni := Impl{Tier: isa.AVX512VNNI, maxRB: 8, maxRBF32: kF32Rows,
		quantizeQ8: avx512.quantizeQ8, dequant: avx512.dequant, gemvF32: avx512.gemvF32,
		gemvQ8: map[Format]gemvQ8Func{
			Q4_0: gemvQ8AsmPrepZ(prepOctets(prepQ4_0VNNI), []gemvQ8Rows{nil, gemvQ8Q4_0VNNIR1, gemvQ8Q4_0VNNIR2, gemvQ8Q4_0VNNIR3, gemvQ8Q4_0VNNIR4, gemvQ8Q4_0VNNIR5, gemvQ8Q4_0VNNIR6, gemvQ8Q4_0VNNIR7, gemvQ8Q4_0VNNIR8}),
			Q8_0: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q8_0VNNIR1, gemvQ8Q8_0VNNIR2, gemvQ8Q8_0VNNIR3, gemvQ8Q8_0VNNIR4, gemvQ8Q8_0VNNIR5, gemvQ8Q8_0VNNIR6, gemvQ8Q8_0VNNIR7, gemvQ8Q8_0VNNIR8}),
			Q4_1: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q4_1VNNIR1, gemvQ8Q4_1VNNIR2, gemvQ8Q4_1VNNIR3, gemvQ8Q4_1VNNIR4, gemvQ8Q4_1VNNIR5, gemvQ8Q4_1VNNIR6, gemvQ8Q4_1VNNIR7, gemvQ8Q4_1VNNIR8}),
			Q5_0: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q5_0VNNIR1, gemvQ8Q5_0VNNIR2, gemvQ8Q5_0VNNIR3, gemvQ8Q5_0VNNIR4, gemvQ8Q5_0VNNIR5, gemvQ8Q5_0VNNIR6, gemvQ8Q5_0VNNIR7, gemvQ8Q5_0VNNIR8}),
			Q5_1: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q5_1VNNIR1, gemvQ8Q5_1VNNIR2, gemvQ8Q5_1VNNIR3, gemvQ8Q5_1VNNIR4, gemvQ8Q5_1VNNIR5, gemvQ8Q5_1VNNIR6, gemvQ8Q5_1VNNIR7, gemvQ8Q5_1VNNIR8}),
			Q4_K: gemvQ8AsmPrepZ(prepQ8KAVX512, []gemvQ8Rows{nil, gemvQ8Q4_KVNNIR1, gemvQ8Q4_KVNNIR2, gemvQ8Q4_KVNNIR3, gemvQ8Q4_KVNNIR4, gemvQ8Q4_KVNNIR5, gemvQ8Q4_KVNNIR6, gemvQ8Q4_KVNNIR7, gemvQ8Q4_KVNNIR8}),
			Q5_K: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q5_KVNNIR1, gemvQ8Q5_KVNNIR2, gemvQ8Q5_KVNNIR3, gemvQ8Q5_KVNNIR4, gemvQ8Q5_KVNNIR5, gemvQ8Q5_KVNNIR6, gemvQ8Q5_KVNNIR7, gemvQ8Q5_KVNNIR8}),
			Q6_K: gemvQ8AsmZ([]gemvQ8Rows{nil, gemvQ8Q6_KVNNIR1, gemvQ8Q6_KVNNIR2, gemvQ8Q6_KVNNIR3, gemvQ8Q6_KVNNIR4, gemvQ8Q6_KVNNIR5, gemvQ8Q6_KVNNIR6, gemvQ8Q6_KVNNIR7, gemvQ8Q6_KVNNIR8}),
		}}
	impls = append(impls, avx2, avx512, vnni)
}

// kF32Rows: the K-quant gemv-f32 kernels go up to 4 rows per pass in
// every tier (see maxRBF32K in _asm).
var kF32Rows = map[Format]int{Q4_K: 4, Q5_K: 4, Q6_K: 4}

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
		if allFinite(y) {
			return
		}
		for r, v := range y {
			if !finite(v) {
				y[r] = dotF32(f, w[r*stride:(r+1)*stride], x)
			}
		}
	}
}

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float32) bool { return math.Float32bits(v)&0x7f800000 != 0x7f800000 }

// allFinite reports whether every element of y is finite: the largest
// |y| as bits is below Inf's. Branch-free, about 5 instructions a row
// (callgrind), well under 1 % of the cheapest GEMV row.
func allFinite(y []float32) bool {
	var mx uint32
	for _, v := range y {
		mx = max(mx, math.Float32bits(v)&0x7fffffff)
	}
	return mx < 0x7f800000
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
		if allFinite(y) {
			return
		}
		for r, v := range y {
			if !finite(v) {
				y[r] = dotQ8(f, w[r*stride:(r+1)*stride], xq, k)
			}
		}
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
