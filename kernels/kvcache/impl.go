package kvcache

import (
	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/quant"
)

// rowsFunc writes nrows rows of n float32 values, row r from src at byte
// offset r·srcStride to dst at byte offset r·dstStride, and the same from
// src2 to dst2, in the cache's element type (f32, a copy; f16; q8_0,
// whole blocks). One call covers every row of K and V that share their
// strides: a token's append is one call.
type rowsFunc func(dst, dst2 []byte, dstStride int, src, src2 []float32, srcStride, nrows, n int)

// rowsAsm is an asm row store: rowsFunc over the first bytes and floats of
// each, for rows of a multiple of its tier's vector width, bounds checked
// by its caller (store.rows).
type rowsAsm func(dst, dst2 *byte, dstStride int, src, src2 *float32, srcStride, nrows, n int)

// store is a tier's row store of one element type: asm where the tier has
// it, the generic contract for the rest (q8_0: package quant's quantizer
// of the tier, as generic). Run calls it directly, not through an adapter
// closure: a token's f16 append (~100 ns) paid 6 ns for that layer (Zen 3,
// in-process A/B).
type store struct {
	asm     rowsAsm // nil: generic only
	w       int     // values per vector of asm (a power of two)
	e       int     // bytes written per value (0: q8_0, rows never merged)
	generic rowsFunc
}

// rows runs the store: asm for rows of a multiple of w values (always,
// while D is a multiple of 16), else the generic contract.
func (s *store) rows(dst, dst2 []byte, dstStride int, src, src2 []float32, srcStride, nrows, n int) {
	if nrows == 0 || n == 0 {
		return
	}
	if s.e > 0 && dstStride == s.e*n && srcStride == 4*n {
		// Rows back to back in both (a position-major append: a
		// position's heads): one row, one loop.
		n, nrows = n*nrows, 1
	}
	if s.asm == nil || n&(s.w-1) != 0 { // not n%w: a division costs a short append a tenth of its time
		s.generic(dst, dst2, dstStride, src, src2, srcStride, nrows, n)
		return
	}
	// The bounds checks the asm cannot do: the last row of each.
	last, lastSrc := (nrows-1)*dstStride+s.e*n-1, ((nrows-1)*srcStride)/4+n-1
	_, _, _, _ = dst[last], dst2[last], src[lastSrc], src2[lastSrc]
	s.asm(&dst[0], &dst2[0], dstStride, &src[0], &src2[0], srcStride, nrows, n)
}

// Impl is one ISA tier's implementation of the stores: how it writes
// float32 rows as f32 (a copy), f16 and q8_0.
type Impl struct {
	Tier isa.Tier
	copy store
	// copyAlt is the tier's other f32 copy, where it has one (AVX-512:
	// its zmm copy or AVX2's ymm one, whichever copy is not; ymmCopyOn):
	// the tests run both.
	copyAlt store
	toF16   store
	// toF16Pos is the f16 store of a position-major batch-copy (posMajor):
	// AVX2's toF16LinesAVX2, every other tier's toF16.
	toF16Pos store
	toQ8     store // package quant's q8_0 rows quantizer of the tier (q8Store)
}

// impls holds every tier compiled into this binary, generic first; the
// per-arch file appends to it in init.
var impls = []Impl{{Tier: isa.Generic, copy: store{generic: copyGeneric}, toF16: store{generic: toF16Generic}, toF16Pos: store{generic: toF16Generic}, toQ8: q8Store(isa.Generic)}}

// q8Store is the q8_0 store of tier t: package quant's q8_0 rows quantizer
// of t (the generic one where quant has no tier t), one call for all rows
// of K and one for V (a row is whole blocks; the quantizer overlaps the
// rows' chains, see quant.Impl.Q8_0Rows). K and V taken in turns, 8 or 32
// rows at a time, as the f32 and f16 stores pair them (Zen 5, sweeps
// alternated, 3 rounds): batch-copy position-major took 1.05–1.25 of the
// time in L3 and from DRAM, head-major and appends 0.98–1.03. Not kept.
//
// Each tier keeps its own quantizer. On Zen 5 (family 26 model 2,
// 2026-12-02, sweep kvcache --kernel batch-copy,kv-copy --kv q8_0 --hd
// 128 --heads 8 --ctx 4096 --tokens 512 --layout head,pos --isa
// avx2,avx512, with --cold and without, 3 rounds, share of the paired
// kv-copy) AVX2's read 74.6–78.8 % from DRAM head-major and
// 73.8–76.7 position-major, AVX-512's 69.6–76.5 and 70.4–73.1; in L3
// AVX-512's 67.4–72.6 and 55.2–59.5, AVX2's 57.7–60.4 and 53.5–56.6.
func q8Store(t isa.Tier) store {
	im, ok := quant.Lookup(t)
	if !ok {
		im, _ = quant.Lookup(isa.Generic)
	}
	q8 := im.Q8_0Rows()
	return store{generic: func(dst, dst2 []byte, dstStride int, src, src2 []float32, srcStride, nrows, n int) {
		for _, x := range [2]struct {
			dst []byte
			src []float32
		}{{dst, src}, {dst2, src2}} {
			if err := q8(x.dst, dstStride, x.src, srcStride/4, nrows, n); err != nil {
				panic(err) // D is a multiple of the block and the buffers fit: Validate checked it
			}
		}
	}}
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
// token's append is ~60 ns (Zen 4; ~100 on Zen 3), and passing Impl,
// Params and Buffers by value (~40 words) cost it 10 more (Zen 4,
// interleaved A/B).
//
// Head-major, head kh's new rows are contiguous in the cache and in the
// scratch: one row of n·D values per head, Capacity rows apart, one call
// for all heads of K and V. Position-major, the heads of one position are
// contiguous: one call per head (its rows Hkv, or PosHeads, apart) and
// block of tokens (posBlockBytes) or, when a store writes fewer tokens
// than there are heads (append), one per token (its Hkv rows).
func (im *Impl) Run(p *Params, b *Buffers) {
	k, v := b.KEnc, b.VEnc
	if p.KV == attention.F32 {
		k, v = buf.BytesOf(b.K), buf.BytesOf(b.V)
	}
	// p's fields, not its value methods: inlined on a pointer, each of
	// those copied all of p (with the adapter closure the stores had, ~10
	// of an f16 append's ~115 ns on Zen 3, whose asm takes ~97). An
	// append's path stays in this function: position-major through
	// posMajor's loops, a token's store took 11 ns more than head-major's.
	n := count(p.Op, p.Tokens)
	d, rb, s := p.D, p.KV.RowBytes(p.D), im.storeOf(p.KV)
	switch {
	case p.Layout == attention.HeadMajor:
		at := p.Pos * rb // Row(0, Pos): head 0's row, the others capacity rows on
		s.rows(k[at:], v[at:], capacity(p.Cap, p.Pos, n)*rb, b.SrcK, b.SrcV, 4*n*d, p.Hkv, n*d)
	case n == 1:
		// Position-major, one token: its Hkv rows from Row(0, Pos) on.
		at := p.Pos * posHeads(p.PosHeads, p.Hkv) * rb
		s.rows(k[at:], v[at:], rb, b.SrcK, b.SrcV, 4*d, p.Hkv, d)
	default:
		im.posMajor(p, b, k, v)
	}
}

// posMajor is Run for a position-major cache (k and v its K and V bytes)
// and more than one token.
func (im *Impl) posMajor(p *Params, b *Buffers, k, v []byte) {
	// Fields, not methods, as in Run; row r of position pos is
	// pos·ph + r (Row).
	d, n, rb := p.D, count(p.Op, p.Tokens), p.KV.RowBytes(p.D)
	ph, s := posHeads(p.PosHeads, p.Hkv), im.storeOf(p.KV)
	if p.KV == attention.F16 {
		s = &im.toF16Pos
	}
	if n < p.Hkv {
		for j := range n {
			at := (p.Pos + j) * ph * rb
			s.rows(k[at:], v[at:], rb, b.SrcK[j*d:], b.SrcV[j*d:], 4*n*d, p.Hkv, d)
		}
		return
	}
	// One call per head and block of tokens: the f32 and f16 stores take
	// the tokens in blocks whose positions span at most posBlockBytes of
	// the cache, every head's rows of a block before the next block;
	// q8_0 takes all n at once (see posBlockBytes).
	blk := n
	if s.e > 0 {
		blk = max(1, posBlockBytes/(ph*rb))
	}
	for j := 0; j < n; j += blk {
		m := min(blk, n-j)
		for kh := range p.Hkv {
			at := ((p.Pos+j)*ph + kh) * rb
			s.rows(k[at:], v[at:], ph*rb, b.SrcK[kh*n*d+j*d:], b.SrcV[kh*n*d+j*d:], 4*d, m, d)
		}
	}
}

// posBlockBytes bounds the cache bytes (positions × heads × row) that a
// position-major batch-copy of f32 or f16 writes head by head before it
// moves on to the next positions. Written one head over all T tokens, an
// f32 hd-128 cache's rows are 4 KB apart (8 KV heads): a head's pass
// touches one line in eight over T·4 KB, and the next head's pass the
// lines beside them, a whole pass later. In blocks of 64 positions (256
// KB) a 512-token batch took 0.79–0.87 of the time in L3 and 0.91–0.96
// from DRAM (Zen 3, AVX2, 8 KV heads, one process, interleaved, B/A;
// blocks of 16 to 128 alike, 256 0.92); f16 (rows 2 KB apart) 0.93–0.99 in
// L3 and 1.00–1.02 from DRAM. q8_0 stays whole: blocks of 16 to 256 tokens
// cost it 1.01–1.26, and on Zen 5 (blocks of 16, 32, 64 and 128 tokens of
// that batch in L3, sweeps alternated, 3 rounds, time over the paired
// kv-copy) AVX-512 1.39, 1.28, 1.18 and 1.07, AVX2 1.19, 1.13, 1.07 and
// 1.05. (It reads four bytes a value for the 1.06 it writes, so its source
// streams, which blocks cut into pieces of a block per head, weigh more
// than its destination.) Nor does it go a token at a time (a call per
// token, its Hkv rows, as an append): 1.54 (AVX2) and 1.74 (AVX-512) times
// as long (Zen 5, 8 KV heads × 512 tokens × hd 128 in L3, sweeps
// alternated, 4 rounds); on a second Zen 5 host (family 26 model 2,
// 2026-12-02, BenchmarkQ8Floor's shape, AVX-512, 3 runs in turn) 2.0–2.2
// (27–30 % of the copy against 60–63; 283–305 ns a token against
// 154–199 in one process, 3 rounds). Not the calls' cost: a token's
// append, one such call with its rows in L1, took 186 ns there. Nor its
// rows' spacing on the same cache sets (T·D·4 bytes, 256 KB at 512
// tokens): 500 tokens took as long. Such a token reads 2·Hkv source rows
// from as many places, where a head's pass reads two streams. Nor K of
// every head before V of any (a head's K rows then its V rows, as now,
// keep its V source and writes between two heads' passes over the lines
// their rows share): in one process 0.955
// (AVX-512) and 0.965 (AVX2) of the time, but in sweeps alternated (5
// rounds, Zen 5) 0.99 and 1.00. The q8_0 store's own bound is in
// BenchmarkQ8Floor.
//
// Chosen once from cpuid: defaultPosBlockBytes, and zen4PosBlockBytes on
// Zen 4 (zen4PosBlocksOn in store_amd64.go, whose doc has the
// measurements).
var posBlockBytes = defaultPosBlockBytes

const (
	defaultPosBlockBytes = 256 << 10
	zen4PosBlockBytes    = 1 << 20
)

// storeOf is the row store of kv.
func (im *Impl) storeOf(kv attention.KVType) *store {
	switch kv {
	case attention.F32:
		return &im.copy
	case attention.F16:
		return &im.toF16
	}
	return &im.toQ8
}
