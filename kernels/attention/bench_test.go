package attention

import (
	"fmt"
	"testing"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
	"github.com/ckbench/ckbench/roofline"
)

// BenchmarkAttention runs every decode kernel in every tier this CPU runs,
// with the names ckbench writes to bench.txt, so benchstat can compare the
// two:
//
//	go test -run '^$' -bench 'Attention/decode-flash/isa=avx512' ./kernels/attention
//
// b.SetBytes is the compulsory traffic, so MB/s is the useful bandwidth.
func BenchmarkAttention(b *testing.B) {
	shapes := []Shape{
		{H: 1, Hkv: 1, D: 128, T: 4096},
		{H: 32, Hkv: 8, D: 128, T: 4096},
		{H: 1, Hkv: 1, D: 128, T: 32768},
	}
	for _, im := range Impls() {
		if st := isa.Detect(im.Tier); !st.Runs {
			continue
		}
		for _, k := range Kernels {
			for _, e := range []Exp{ExpFast, ExpExact} {
				for _, s := range shapes {
					p := Params{Kernel: k, Shape: s, Exp: e}
					tk := "auto"
					if k == DecodeNaive {
						tk = "none"
					}
					name := fmt.Sprintf("%s/isa=%s/exp=%s/hd=%d/tk=%s/ctx=%d/h=%d/kvh=%d/kv=f32", k, im.Tier, e, s.D, tk, s.T, s.H, s.Hkv)
					b.Run(name, func(b *testing.B) {
						bufs := Alloc(p)
						FillRandom(bufs, 1)
						b.SetBytes(int64(p.Work().Bytes))
						for b.Loop() {
							im.Run(p, bufs)
						}
					})
				}
			}
		}
	}
}

// BenchmarkF16Floor shows how close to a plain read of an f16 KV cache a
// decode over it can come on this CPU, where the cache sits in a cache
// level. Round after round it times, on the same K and V bytes (hd 128,
// one KV head; ctx 1024 is 512 KB, ctx 4096 2 MB: L2 and L3 on most
// CPUs):
//
//   - read: roofline.ReadXor2 (K and V side by side), what kv-read runs;
//   - floor: roofline.ReadF16, every value widened from memory and added by
//     an FMA, the least any f16 decode does per byte;
//   - tile: the floor's work in decode-flash's order, a tile of K (auto
//     tile_k rows) then the same rows of V, tile after tile: what the
//     kernel's phases cost in memory alone;
//   - decode: decode-flash (fast exp, auto tile_k).
//
// Each is reported at its fastest round (the host's noise only slows a
// call), as GB/s and as a share of read: floor_%read is the most
// decode_%read can reach with this tier's widening, whatever the kernel.
// From DRAM it is no bound (software prefetch, which the floor loop lacks,
// lifts a decode there), so only cache-resident sizes are run.
//
// On Zen 5 (one thread, ctx 4096, L3, three runs) AVX-512 read 96 % as
// floor, 93–94 % as tile and 66 % as decode; AVX2 89 %, 80–81 % and 54 %
// (auto tile_k then 16). At auto tile_k 32 since (two runs): AVX-512 97 %,
// 94–96 % and 66–67 %; AVX2 91 %, 85 % and 57 %.
// So the tile order costs a few points (AVX2 about 6–9), and what separates
// the decode from tile is its own work beside the widening FMAs. A
// cpu-clock profile (README, Development; the same at 1 and 10 kHz) put
// 28–29 % of its samples in the scores' loads and FMAs, 21 % in their
// reductions, scaling and maxima (waiting on those FMAs), 16 % in the
// softmax and 28–30 % in P·V. A scratch loop doing the floor's work in
// tiles of 16 keys, each V phase's FMAs waiting on a reduction of the K
// phase before it (as P·V waits on the softmax), still read at 1.02 of
// read: that dependency alone is not it.
//
// Again on Zen 5 (2026-11-27, two runs): AVX-512 floor 91–92 %, tile 90 %,
// decode 67–68 %; AVX2 89 %, 80–82 % and 56–60 %. Scratch loops (Go
// assembly outside the repo, ctx 4096, fastest of 40 rounds against a
// plain read of the same bytes, AVX-512) then added the decode's
// structure to the floor a piece at a time: K and V side by side, each
// vector widened and added into one of 8 accumulators, 82–89 %; a K tile
// then its V (32 keys), 82–84 %; each key's dot product a chain of 8 FMAs
// into its own accumulator, 8 keys a batch reduced by the scores' tree,
// P·V's weights broadcast from the scores (no softmax, no prefetch),
// 76–81 %. With the kernel's prefetches (this tile's V during the scores,
// the next K during P·V) that loop read at 70–75 % (the tree 2–3 points
// of it), with them 4 to 16 tiles ahead 55–65 %: in L3 a software
// prefetch costs where from DRAM it pays. So a flash decode's shape
// alone, before its softmax, leaves it near 80 % of read here.
//
//	go test -run '^$' -bench F16Floor ./kernels/attention
func BenchmarkF16Floor(b *testing.B) {
	for _, im := range Impls() {
		if !isa.Detect(im.Tier).Runs || im.Tier == isa.Generic {
			continue
		}
		for _, ctx := range []int{1024, 4096} {
			p := Params{Kernel: DecodeFlash, Shape: Shape{H: 1, Hkv: 1, D: 128, T: ctx, KV: F16}, Exp: ExpFast}
			b.Run(fmt.Sprintf("isa=%s/ctx=%d", im.Tier, ctx), func(b *testing.B) {
				bufs := Alloc(p)
				FillRandom(bufs, 1)
				Encode(p.Shape, bufs)
				bytes := float64(len(bufs.KEnc) + len(bufs.VEnc))
				var sink float32
				var sinkX uint64
				tb := im.Tile(p) * p.KV.RowBytes(p.D) // a tile's bytes of K (and of V)
				calls := []func(){
					func() { sinkX ^= roofline.ReadXor2(im.Tier, bufs.KEnc, bufs.VEnc) },
					func() { sink += roofline.ReadF16(im.Tier, bufs.KEnc) + roofline.ReadF16(im.Tier, bufs.VEnc) },
					func() {
						for o := 0; o < len(bufs.KEnc); o += tb {
							e := min(o+tb, len(bufs.KEnc))
							sink += roofline.ReadF16(im.Tier, bufs.KEnc[o:e]) + roofline.ReadF16(im.Tier, bufs.VEnc[o:e])
						}
					},
					func() { im.Run(p, bufs) },
				}
				best := isatest.Fastest(b, 1, calls...)
				b.ReportMetric(bytes/best[0], "read_GB/s")
				b.ReportMetric(bytes/best[1], "floor_GB/s")
				b.ReportMetric(100*best[0]/best[1], "floor_%read")
				b.ReportMetric(100*best[0]/best[2], "tile_%read")
				b.ReportMetric(100*best[0]/best[3], "decode_%read")
				_, _ = sink, sinkX
			})
		}
	}
}

// BenchmarkTileOrder shows what a flash decode's order costs a read of
// its cache from DRAM before any arithmetic: K and V read side by side
// (roofline.ReadXor2, what kv-read and the roofline's read do) against
// the same bytes in one of two orders, for tiles of 1 to 128 KB, plain
// loads, no software prefetch:
//
//   - tile: a tile of K then the same tile of V (what a group's phases
//     read: the scores over K, then P·V over V);
//   - halves: the same, over the cache's two halves at once: a tile of
//     each half of K side by side, a line of each in turn, then the same
//     of V (what a group would read if each tile took its keys from both
//     halves of the context; softmax does not mind the keys' order).
//
// Each call reads another copy of a 2 × 16 MB cache (copies rotated past
// 256 MB, so that it comes from DRAM); side by side and the order are
// timed in turn (isatest.Paired) and order_%side is the side-by-side
// time over the order's.
//
// On the Zen 5 guest of sampler.HostStalls (AMD EPYC family 26 model 2,
// 2026-12-02; 40 rounds, twice) side by side read 32–39 GB/s and the
// tiled order 64–71 % of that at 2 and 4 KB tiles, 71–82 % at 8 and 16
// KB, 74–90 % at 1 KB (both tiers' loops). An AVX-512 group of f32 32:8
// at tile_k 16 (8 KB of K) reads its K and V in that order, and its near
// prefetch (the generator's prefetcher) keeps it at about as much: 75–76
// % of the paired kv-read there, the target from DRAM 80. The lone head's
// pipeline reads a vector of K and one of V in turn (lonePipelined). Larger
// tiles cost the order less only far past L1 (the same guest, 30 rounds,
// AVX-512's loop): 8 KB 82 %, 16 KB 77, 32 KB 76, 64 KB 83, 128 KB 89.
// The halves (the same guest, later that day, 40 rounds, twice; both
// tiers' loops): at 8 and 16 KB 76–96 % of side by side where the tiled
// order read 73–87 % in the same runs, at 32 to 128 KB 91–99 % against
// 80–96 %; at 1 to 4 KB mostly ahead too, more scattered (64–97 %
// against 59–93 %): two streams read on demand in each phase, not one
// (most likely more lines on their way from the core's prefetchers). A
// group built to read so (the generator's prefetcher doc) gained nothing
// at its best tile.
//
//	go test -run '^$' -bench TileOrder -benchtime 20x ./kernels/attention
func BenchmarkTileOrder(b *testing.B) {
	const (
		region = 16 << 20  // K's bytes (and V's) a copy
		total  = 256 << 20 // the copies, K and V
	)
	copies := total / (2 * region)
	ks, vs := make([][]byte, copies), make([][]byte, copies)
	for i := range ks {
		ks[i], vs[i] = make([]byte, region), make([]byte, region)
		for j := 0; j < region; j += 4096 { // every page backed
			ks[i][j], vs[i][j] = 1, 2
		}
	}
	var sink uint64
	for _, im := range Impls() {
		if !isa.Detect(im.Tier).Runs || im.Tier == isa.Generic {
			continue
		}
		t := im.Tier
		for _, tile := range []int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10} {
			// tiled reads K then V a tile at a time; halves does so over
			// both halves of the cache at once, a line of each in turn.
			tiled := func(k, v []byte) {
				for o := 0; o < region; o += tile {
					sink ^= roofline.ReadXor(t, k[o:o+tile])
					sink ^= roofline.ReadXor(t, v[o:o+tile])
				}
			}
			halves := func(k, v []byte) {
				const h = region / 2
				for o := 0; o < h; o += tile {
					sink ^= roofline.ReadXor2(t, k[o:o+tile], k[h+o:h+o+tile])
					sink ^= roofline.ReadXor2(t, v[o:o+tile], v[h+o:h+o+tile])
				}
			}
			for _, order := range []struct {
				name string
				read func(k, v []byte)
			}{{"tile", tiled}, {"halves", halves}} {
				b.Run(fmt.Sprintf("isa=%s/tile=%dKB/order=%s", t, tile>>10, order.name), func(b *testing.B) {
					next := 0
					side := func() {
						sink ^= roofline.ReadXor2(t, ks[next], vs[next])
						next = (next + 1) % copies
					}
					ordered := func() {
						order.read(ks[next], vs[next])
						next = (next + 1) % copies
					}
					ratio, sideNs, _ := isatest.Paired(b, 1, side, ordered)
					b.ReportMetric(100/ratio, "order_%side")
					b.ReportMetric(2*region/sideNs, "side_GB/s")
				})
			}
		}
	}
}
