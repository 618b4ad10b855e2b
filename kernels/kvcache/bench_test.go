package kvcache

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
	"github.com/ckbench/ckbench/roofline"
)

// BenchmarkStores: go test's view of the stores (ckbench sweep kvcache is
// the real tool: it checks, pins and holds each to its in-run ceiling).
func BenchmarkStores(b *testing.B) {
	for _, im := range Impls() {
		if !isa.Detect(im.Tier).Runs {
			continue
		}
		for _, op := range Ops {
			for _, kv := range attention.KVTypes {
				for _, l := range attention.Layouts {
					p := Params{Op: op, Hkv: 8, D: 128, KV: kv, Pos: 4096, Tokens: 512, Layout: l}
					bufs := Alloc(p)
					FillRandom(bufs, 1)
					w := p.Work()
					b.Run(fmt.Sprintf("%s/%s/%s/%s", op, im.Tier, kv, l), func(b *testing.B) {
						b.SetBytes(int64(w.Bytes()))
						for b.Loop() {
							im.Run(&p, &bufs)
						}
					})
				}
			}
		}
	}
}

// BenchmarkQ8Floor shows how close to its copy ceiling a q8_0 batch-copy
// can come on this CPU with each tier's quantizer: the store's arithmetic
// alone, against a copy of the bytes it moves. Round after round it times,
// per tier:
//
//   - copy: roofline.CopyRead, the bytes a batch-copy of 8 KV heads × 512
//     tokens × hd 128 writes copied and the rest of what it reads read (the
//     shape of sweep kvcache's kv-copy; 4 MB read, 1 MB written: L3 on most
//     CPUs), with the widest tier's loads and stores;
//   - store: that batch-copy, head-major and position-major;
//   - warm: the same store on 16 tokens of 2 KV heads, over and over
//     (32 KB of source, 9 KB written: L1 and L2), the quantizer with
//     next to nothing to wait for, per block.
//
// Each is reported at its fastest round (the host's noise only slows a
// call): head_%copy and pos_%copy are what sweep kvcache's % read shows
// for the two layouts, warm_%copy about the most any store with this
// tier's quantizer can reach (its blocks at the warm rate, in the copy's
// time), whatever its memory order.
//
// On Zen 5 (one thread, 2026-11-27, three runs): AVX2 warm 2.74–2.80 ns
// a block, copy 1.47–1.49: warm_%copy 53–54, head_%copy 55 (the store in
// L3 runs at its warm rate: memory is hidden, the quantizer bounds it).
// So 70 % of the copy ceiling is beyond the AVX2 quantizer here: it
// issues about 34 vector ops a block (pass 1 about 13: the abs maxima,
// their tree, the divisions shared by eight blocks; pass 2 21: scale,
// round half away from zero as GGML's roundf does, truncate, pack), 3.6
// a cycle at 3.4 GHz; 70 % would take 4.7 a cycle, or a quarter fewer.
// AVX-512 (two zmm a block, VPMOVDB packing): warm 2.01–2.04 ns,
// warm_%copy 73–74, head_%copy 68–69, pos_%copy 62–63.
//
//	go test -run '^$' -bench Q8Floor ./kernels/kvcache
func BenchmarkQ8Floor(b *testing.B) {
	eachSIMDTier(b, func(b *testing.B, im Impl, wide isa.Tier) {
		head := Params{Op: BatchCopy, Hkv: 8, D: 128, KV: attention.Q8_0, Pos: 4096, Tokens: 512}
		pos := head
		pos.Layout = attention.PosMajor
		small := Params{Op: BatchCopy, Hkv: 2, D: 128, KV: attention.Q8_0, Tokens: 16, Cap: 16}
		bh, bp, bs := Alloc(head), Alloc(pos), Alloc(small)
		for _, x := range []Buffers{bh, bp, bs} {
			FillRandom(x, 1)
		}
		w := head.Work()
		src, dst := copyData(w)
		blocks := w.Read / 4 / 32
		smallBlocks := small.Work().Read / 4 / 32
		var sink float32
		calls := []func(){
			func() { sink += roofline.CopyRead(wide, dst, src) },
			func() { im.Run(&head, &bh) },
			func() { im.Run(&pos, &bp) },
			func() {
				for range 64 {
					im.Run(&small, &bs)
				}
			},
		}
		best := isatest.Fastest(b, 1, calls...)
		warm := best[3] / 64 / smallBlocks // ns a block
		b.ReportMetric(best[0]/blocks, "copy_ns/block")
		b.ReportMetric(warm, "warm_ns/block")
		b.ReportMetric(100*best[0]/best[1], "head_%copy")
		b.ReportMetric(100*best[0]/best[2], "pos_%copy")
		b.ReportMetric(100*best[0]/(warm*blocks), "warm_%copy")
		_ = sink
	})
}

// BenchmarkF16AppendFloor shows how close to its copy ceiling a token's
// f32→f16 append can come on this CPU with each tier's conversion. Round
// after round it times, per tier, on the append of sweep kvcache's shape
// (8 KV heads × hd 128: 8 KB of K and V read, 4 KB written, in L1):
//
//   - copy: the append's ceiling, as sweep kvcache's kv-copy runs it for
//     an append (data of its own): the 4 KB it writes copied and the rest
//     of what it reads read, roofline.CopyRead or CopyRead2 (the faster),
//     with the widest tier's loads and stores;
//   - convert: the tier's f16 store alone (its asm, or the generic
//     contract) over the token's K and V rows, nothing else of Run: the
//     least any append with this conversion does;
//   - append: Run, what the sweep times.
//
// At each's fastest round: convert_%copy is the most an append of this
// tier can reach, append_%copy what sweep kvcache's % read shows.
//
// On Zen 5 (one thread, 2026-11-28, 4.5 GHz, two runs): AVX2 converts a
// token in 44–45 ns (256 ymm VCVTPS2PH, one about every 0.8 cycles with
// their loads and stores) against a copy of 25–26 ns: convert_%copy 57,
// append_%copy 52–53. So 70 % of the copy ceiling is beyond AVX2's
// conversion here, whatever the store around it. AVX-512 (16 values an
// instruction): convert 24 ns, 105 %; append 93–94 %.
//
//	go test -run '^$' -bench F16AppendFloor ./kernels/kvcache
func BenchmarkF16AppendFloor(b *testing.B) {
	eachSIMDTier(b, func(b *testing.B, im Impl, wide isa.Tier) {
		p := Params{Op: Append, Hkv: 8, D: 128, KV: attention.F16, Pos: 4096}
		bufs := Alloc(p)
		FillRandom(bufs, 1)
		w := p.Work()
		src, dst := copyData(w)
		n := p.Hkv * p.D // a token's values of K (and of V), head-major back to back
		row := 2 * n     // bytes of f16 they take
		// The rows converted into, at 16 places in a 4 KB page (where
		// a store sits against its loads' addresses modulo 4 KB can
		// slow it: 4K aliasing): convert is the fastest of them.
		kv := buf.Bytes(2*row + 8<<10)
		var sink float32
		calls := []func(){
			func() { sink += roofline.CopyRead(wide, dst, src) },
			func() { sink += roofline.CopyRead2(wide, dst, src) },
			func() { im.Run(&p, &bufs) },
		}
		for off := 0; off < 4<<10; off += 256 {
			k, v := kv[off:off+row], kv[off+row+4<<10:][:row]
			calls = append(calls, func() { im.toF16.rows(k, v, row, bufs.SrcK, bufs.SrcV, 4*n, 1, n) })
		}
		best := isatest.Fastest(b, 64, calls...) // 64 calls a timing: a call is tens of ns
		cp, conv := min(best[0], best[1]), slices.Min(best[3:])
		b.ReportMetric(cp, "copy_ns")
		b.ReportMetric(conv, "convert_ns")
		b.ReportMetric(100*cp/conv, "convert_%copy")
		b.ReportMetric(100*cp/best[2], "append_%copy")
		_ = sink
	})
}

// eachSIMDTier runs f as a sub-benchmark per SIMD tier this CPU runs,
// with wide the widest of them (for a copy ceiling).
func eachSIMDTier(b *testing.B, f func(b *testing.B, im Impl, wide isa.Tier)) {
	wide := isa.Generic
	for _, im := range Impls() {
		if isa.Detect(im.Tier).Runs {
			wide = im.Tier
		}
	}
	for _, im := range Impls() {
		if !isa.Detect(im.Tier).Runs || im.Tier == isa.Generic {
			continue
		}
		b.Run("isa="+string(im.Tier), func(b *testing.B) { f(b, im, wide) })
	}
}

// copyData returns a copy ceiling's data for work w: as many floats as w
// reads, and as many as it writes to copy them into. Both are written
// before they are timed: a page never written reads as the kernel's one
// shared zero page, from L1, and made a copy look twice as fast as it is.
func copyData(w Work) (src, dst []float32) {
	src, dst = make([]float32, int(w.Read)/4), make([]float32, int(w.Written)/4)
	for i := range src {
		src[i] = float32(i & 1023)
	}
	copy(dst, src)
	return src, dst
}
