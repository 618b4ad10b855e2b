// Command _asm generates store_amd64.s, the AVX2 and AVX-512 f32 → f16
// conversions of the KV-cache stores. It lives in its own module so that
// avo never becomes a dependency of ckbench.
//
//	go generate ./kernels/kvcache   (runs: go run -C _asm . -out ../store_amd64.s)
package main

import (
	"fmt"
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
	pairedRows("toF16RowsAVX2", true)
	pairedRows("copyRowsAVX2", false)
	rows("toF16RowsAVX512", true)
	rows("copyRowsAVX512", false)
	vecgen.GenerateAligned() // every function 64-byte aligned
}

// rows emits, for r < nrows, row r of n values (n a multiple of 16) from
// src + r·srcStride bytes to dst + r·dstStride bytes, and the same from
// src2 to dst2 (K and V): as f16 (f16 set,
// VCVTPS2PH with rounding mode 0, round to nearest even, which is
// quant.F32ToF16 bit for bit: NaN made quiet with its payload's top bits,
// overflow to ±Inf, float32 denormals and whatever underflows to zero) or
// as f32 (a copy). Eight vectors per iteration (all loads, then all
// stores: the order the roofline's copy ceiling uses), then one at a time;
// plain stores (the row is read by the next decode step: it should stay
// in cache). One call writes every row of a store, so a token's append of
// Hkv short rows pays one call, not Hkv. The AVX-512 stores; AVX2's have
// their own shape (pairedRows).
func rows(name string, f16 bool) {
	Implement(name)
	Attributes(NOSPLIT)
	const w = 16 // values per zmm
	vec := ZMM
	dst, src, left, nrows := GP64(), GP64(), GP64(), GP64()
	dr, sr, ds, ss := GP64(), GP64(), GP64(), GP64() // row starts and strides
	Load(Param("dstStride"), ds)
	Load(Param("srcStride"), ss)
	// The rows of K (dst, src), then the same rows of V (dst2, src2): a
	// token's append is one call.
	for half, names := range [][2]string{{"dst", "src"}, {"dst2", "src2"}} {
		Load(Param("nrows"), nrows)
		Load(Param(names[0]), dr)
		Load(Param(names[1]), sr)
		row, by4, by1, next, done := fmt.Sprintf("%s_row%d", name, half), fmt.Sprintf("%s_by4%d", name, half), fmt.Sprintf("%s_by1%d", name, half), fmt.Sprintf("%s_next%d", name, half), fmt.Sprintf("%s_done%d", name, half)
		out := 2 * w // bytes written per vector
		if !f16 {
			out = 4 * w
		}
		store := func(x VecVirtual, m Mem) {
			if f16 {
				// Into a register, then a plain store: the memory form of
				// VCVTPS2PH is several times slower on Zen 4 (measured).
				h := x.AsY()
				VCVTPS2PH(Imm(0), x, h)
				VMOVDQU(h, m)
			} else {
				VMOVUPS(x, m)
			}
		}
		Label(row)
		TESTQ(nrows, nrows)
		JZ(LabelRef(done))
		MOVQ(dr, dst)
		MOVQ(sr, src)
		Load(Param("n"), left)
		Label(by4)
		CMPQ(left, U32(unroll*w))
		JL(LabelRef(by1))
		var xs [unroll]VecVirtual
		for u := range xs {
			xs[u] = vec()
			VMOVUPS(Mem{Base: src, Disp: 4 * w * u}, xs[u])
		}
		for u, x := range xs {
			store(x, Mem{Base: dst, Disp: out * u})
		}
		ADDQ(U32(unroll*4*w), src)
		ADDQ(U32(unroll*out), dst)
		SUBQ(U32(unroll*w), left)
		JMP(LabelRef(by4))
		Label(by1)
		TESTQ(left, left)
		JZ(LabelRef(next))
		x := vec()
		VMOVUPS(Mem{Base: src}, x)
		store(x, Mem{Base: dst})
		ADDQ(U32(4*w), src)
		ADDQ(U32(out), dst)
		SUBQ(U32(w), left)
		JMP(LabelRef(by1))
		Label(next)
		ADDQ(ds, dr)
		ADDQ(ss, sr)
		DECQ(nrows)
		JMP(LabelRef(row))
		Label(done)
	}
	VZEROUPPER()
	RET()
}

// pairedRows emits an AVX2 store (rows' contract), f16 (VCVTPS2PH, round
// to nearest even) or f32 (a copy), with row r of K and row r of V in one
// loop: each step eight vectors of each, every vector loaded, converted
// and stored as it comes, the loop tested at its bottom and one index (j,
// values done) for all four pointers; then a vector of each at a time.
//
//   - f16: the ymm VCVTPS2PH runs one a cycle (Zen 3, measured), so what
//     else the loop issues is what it can lose: with rows' shape (K's
//     rows, then V's, a loop tested at its top) a token's append (8 heads,
//     hd 128: 256 conversions) took 100.5–101.3 ns on Zen 3, this one
//     92.7–93.7 (interleaved, the asm alone). Converting each vector as it
//     is loaded, not all loads first, was 5 % faster on Zen 4 (72.6
//     against 76.9 ns).
//   - f32: K and V side by side are two streams each way, which memory
//     serves faster than one: a prefill's batch-copy (8 heads × 512
//     tokens × hd 128) from DRAM took 0.80–0.87 (head-major) and
//     0.83–0.86 (position-major) of rows' time, and in L3 0.75–0.86 (Zen
//     3, in one process, interleaved).
func pairedRows(name string, f16 bool) {
	Implement(name)
	Attributes(NOSPLIT)
	const w = 8
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
	one := func(u int) {
		for _, pp := range [2][2]GPVirtual{{sk, dk}, {sv, dv}} {
			x := YMM()
			VMOVUPS(Mem{Base: pp[0], Index: j, Scale: 4, Disp: 32 * u}, x)
			if f16 {
				VCVTPS2PH(Imm(0), x, x.AsX())
				VMOVDQU(x.AsX(), Mem{Base: pp[1], Index: j, Scale: 2, Disp: 16 * u})
			} else {
				VMOVUPS(x, Mem{Base: pp[1], Index: j, Scale: 4, Disp: 32 * u})
			}
		}
	}
	TESTQ(nrows, nrows)
	JZ(LabelRef(done))
	Label(row)
	XORQ(j, j)
	TESTQ(n8, n8)
	JZ(LabelRef(tail))
	Label(by8)
	for u := range unroll {
		one(u)
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
