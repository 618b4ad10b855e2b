// Command _asm generates store_amd64.s, the AVX2 and AVX-512 f32 → f16
// conversions of the KV-cache stores. It lives in its own module so that
// avo never becomes a dependency of ckbench.
//
//	go generate ./kernels/kvcache   (runs: go run -C _asm . -out ../store_amd64.s)
package main

import (
	vecgen "github.com/ckbench/ckbench/kernels/_vecgen"
	"os"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// unroll is the vectors per iteration of the stores' main loops.
const unroll = 8

func main() {
	// Pin the target so the output does not depend on the host (mmcloughlin/avo#450).
	os.Setenv("GOOS", "linux")
	os.Setenv("GOARCH", "amd64")
	Package("github.com/ckbench/ckbench/kernels/kvcache")
	ConstraintExpr("!purego")
	pairedRows("toF16RowsAVX2", true, 8, false)
	pairedRows("copyRowsAVX2", false, 8, true)
	pairedRows("toF16RowsAVX512", true, 16, true)
	pairedRows("copyRowsAVX512", false, 16, true)
	pairedRows("toF16LinesAVX2", true, 8, true)
	vecgen.GenerateAligned() // every function 64-byte aligned
}

// pairedRows emits a store of w values a vector (8: AVX2, ymm; 16:
// AVX-512, zmm): for r < nrows, row r of n values (n a multiple of w) from
// src + r·srcStride bytes to dst + r·dstStride bytes, and the same from
// src2 to dst2 (K and V), as f16 (f16 set: VCVTPS2PH with rounding mode
// 0, round to nearest even, which is quant.F32ToF16 bit for bit: NaN made
// quiet with its payload's top bits, overflow to ±Inf, float32 denormals
// and whatever underflows to zero) or as f32 (a copy). Row r of K and row
// r of V go in one loop: each step eight vectors of each, every vector
// loaded, converted and stored as it comes, the loop tested at its bottom
// and one index (j, values done) for all four pointers; then a vector of
// each at a time. Plain stores (the row is read by the next decode step:
// it should stay in cache). One call writes every row of a store, so a
// token's append of Hkv short rows pays one call, not Hkv.
//
//   - f16: the ymm VCVTPS2PH runs one a cycle (Zen 3, measured), so what
//     else the loop issues is what it can lose: with K's rows first, then
//     V's, all of a step's loads before its stores and the loop tested at
//     its top, a token's append (8 heads, hd 128: 256 conversions) took
//     100.5–101.3 ns on Zen 3, this one 92.7–93.7 (interleaved, the asm
//     alone). Converting each vector as it is loaded, not all loads
//     first, was 5 % faster on Zen 4 (72.6 against 76.9 ns). Into a
//     register, then a plain store: the memory form of VCVTPS2PH is
//     several times slower on Zen 4 (measured).
//   - f32: K and V side by side are two streams each way, which memory
//     serves faster than one: a prefill's batch-copy (8 heads × 512
//     tokens × hd 128) from DRAM took 0.80–0.87 (head-major) and
//     0.83–0.86 (position-major) of the K-then-V shape's time, and in L3
//     0.75–0.86 (Zen 3, in one process, interleaved).
//   - AVX-512 kept the K-then-V shape until it was measured against this
//     one (Zen 5, sweeps alternated, 4 rounds, median time over the paired
//     kv-copy): from DRAM (--cold) batch-copy took 0.76 (f16) and 0.83
//     (f32) of the time position-major, 0.91 and 0.88 head-major; in L3
//     a token's append 0.83 (f16) and 0.96 (f32) head-major, 0.92 and
//     1.00 position-major, batch-copy 0.96–1.00.
//   - AVX2 f32 stores a 64-byte line's two ymm halves back to back (K's
//     two, then V's two), not a half of K, a half of V, the other half of
//     K: on an Intel Xeon (family 6 model 207; sweeps alternated, 3–4
//     rounds, against the halves alternating) batch-copy from DRAM took
//     0.68–0.95 of the time head-major (91–103 % of the paired kv-copy
//     against 64–94 %) and 0.69–1.01 position-major, in L3 0.85–0.91 and
//     0.66–0.74 (96–100 % of the copy), a token's append 0.84–1.01 and
//     0.75–0.79. AVX2 f16 (four xmm stores a line) the same way took
//     1.08–1.13 from DRAM: it keeps the halves alternating. On Zen 4
//     (EPYC family 25 model 17; sweeps alternated, 3 rounds, 8 KV heads
//     × 512 tokens, hd 128) the halves alternating took 0.99 of the time
//     from DRAM and 1.00–1.01 in L3, head- and position-major: AMD does
//     not mind either way.
//   - AVX-512 f16 (a ymm store half a line) does the same: K's two halves,
//     then V's. On the Xeon (sweeps alternated, 3–4 rounds, time over the
//     halves alternating, 8 KV heads, 512 and 4096 tokens) batch-copy from
//     DRAM took 0.68–0.82 of the time head-major (71–74 % of the paired
//     kv-copy to 97–101 %, where AVX2 f16 was already at 96–98 %) and
//     position-major 0.82–0.92 at hd 128 and 256, 0.98–1.07 at hd 64 (83–84
//     % both); in L3 0.86–0.93 (hd 64 position-major 1.01), to 96–100 %; a
//     token's append 0.98–1.02. On Zen 4 (as above) the halves
//     alternating took 0.97–0.98 from DRAM, 1.00–1.01 in L3.
//
// With byLine set a step stores a whole 64-byte line of K (its two ymm
// halves, AVX2 f32 and AVX-512 f16; its four xmm, AVX2 f16; one zmm,
// AVX-512 f32), then of V; otherwise (toF16RowsAVX2) a vector of K, a
// vector of V, in turn. AVX2 f16 has both: toF16LinesAVX2 (byLine) is a
// position-major batch-copy's store (rows of d values Hkv rows apart),
// toF16RowsAVX2 every other f16 store. toF16LinesAVX2 on the Xeon
// (family 6 model 207; sweeps alternated, 3–4 rounds, time over the
// halves alternating, 8 KV heads, hd 64, 128 and 256, 512 and 4096
// tokens) from DRAM 0.72–0.94 (64–91 % of the paired kv-copy to 82–97
// %), in L3 0.80–0.93 (77–88 % to 93–98 %); but head-major, one long row
// a head, 1.00 from DRAM and 1.04–1.06 in L3, and a token's append
// 0.65–1.55 (noise), so they keep the halves alternating. Measured on
// Intel only: an AMD session should A/B it.
func pairedRows(name string, f16 bool, w int, byLine bool) {
	Implement(name)
	Attributes(NOSPLIT)
	vec := func() VecVirtual { return YMM() }
	narrow := func(x VecVirtual) VecVirtual { return x.AsX().(VecVirtual) }
	if w == 16 {
		vec = func() VecVirtual { return ZMM() }
		narrow = func(x VecVirtual) VecVirtual { return x.AsY().(VecVirtual) }
	}
	dk, dv, sk, sv := GP64(), GP64(), GP64(), GP64()
	ds, ss, nrows, n, n8, j := GP64(), GP64(), GP64(), GP64(), GP64(), GP64()
	Load(Param("dst"), dk)
	Load(Param("dst2"), dv)
	Load(Param("src"), sk)
	Load(Param("src2"), sv)
	Load(Param("dstStride"), ds)
	Load(Param("srcStride"), ss)
	Load(Param("nrows"), nrows)
	Load(Param("n"), n)
	MOVQ(n, n8)
	ANDQ(U32(^uint32(unroll*w-1)), n8) // values done eight vectors at a time
	row, by8, by1, tail, next, done := name+"_row", name+"_by8", name+"_by1", name+"_tail", name+"_next", name+"_done"
	streams := [2][2]GPVirtual{{sk, dk}, {sv, dv}} // K's src and dst, V's
	// vector stores vector u of a stream: loaded, converted, stored.
	vector := func(pp [2]GPVirtual, u int) {
		x := vec()
		VMOVUPS(Mem{Base: pp[0], Index: j, Scale: 4, Disp: 4 * w * u}, x)
		if f16 {
			h := narrow(x)
			VCVTPS2PH(Imm(0), x, h)
			VMOVDQU(h, Mem{Base: pp[1], Index: j, Scale: 2, Disp: 2 * w * u})
		} else {
			VMOVUPS(x, Mem{Base: pp[1], Index: j, Scale: 4, Disp: 4 * w * u})
		}
	}
	one := func(u int) { // vector u of K, then of V
		for _, pp := range streams {
			vector(pp, u)
		}
	}
	TESTQ(nrows, nrows)
	JZ(LabelRef(done))
	Label(row)
	XORQ(j, j)
	TESTQ(n8, n8)
	JZ(LabelRef(tail))
	Label(by8)
	// group: the vectors of K stored back to back before V's (see the
	// doc): byLine, a 64-byte line of the destination; otherwise one.
	group := 1
	if byLine {
		stored := 4 * w // bytes a vector stores
		if f16 {
			stored = 2 * w
		}
		group = 64 / stored
	}
	for u := 0; u < unroll; u += group {
		for _, pp := range streams {
			for i := range group {
				vector(pp, u+i)
			}
		}
	}
	ADDQ(U32(unroll*w), j)
	CMPQ(j, n8)
	JB(LabelRef(by8))
	Label(tail)
	CMPQ(j, n)
	JAE(LabelRef(next))
	Label(by1)
	one(0)
	ADDQ(U32(w), j)
	CMPQ(j, n)
	JB(LabelRef(by1))
	Label(next)
	ADDQ(ds, dk)
	ADDQ(ds, dv)
	ADDQ(ss, sk)
	ADDQ(ss, sv)
	DECQ(nrows)
	JNZ(LabelRef(row))
	Label(done)
	VZEROUPPER()
	RET()
}
