//go:build !purego

package attention

import (
	"unsafe"

	"github.com/klauspost/cpuid/v2"

	"github.com/ckbench/ckbench/kernels/isa"
)

//go:generate go run -C _asm . -out ../decode_amd64.s

// The AVX2 and AVX-512 tiers, registered whether or not this CPU runs them
// (callers check isa.Detect first; an unsupported tier is reported, never run).
func init() {
	v, fam, a512 := cpuid.CPU.VendorID, cpuid.CPU.Family, cpuid.CPU.Supports(cpuid.AVX512F)
	loneTileCap = loneTileCapOn(v, fam, a512)
	avx2 := flashKernels{
		F32:  flashDecodeAVX2,
		F16:  flashDecodeF16AVX2,
		Q8_0: flashDecodeQ8AVX2,
	}
	impls = append(impls,
		Impl{Tier: isa.AVX2, mode: modeOn(isa.AVX2, v, fam, a512),
			flash: flashAsm(avx2, flashKernels{
				F32:  flashDecodeAVX2Pos,
				F16:  flashDecodeF16AVX2Pos,
				Q8_0: flashDecodeQ8AVX2Pos,
			}, nil),
			naive: naiveAsm(naiveKernels{
				F32:  naiveDecodeAVX2,
				F16:  naiveDecodeF16AVX2,
				Q8_0: naiveDecodeQ8AVX2,
			})},
		Impl{Tier: isa.AVX512, mode: modeOn(isa.AVX512, v, fam, a512), pipeF16: true,
			flash: flashAsm(flashKernels{
				F32:  flashDecodeAVX512,
				F16:  flashDecodeF16AVX512,
				Q8_0: flashDecodeQ8AVX512,
			}, flashKernels{
				F32:  flashDecodeAVX512Pos,
				F16:  flashDecodeF16AVX512Pos,
				Q8_0: flashDecodeQ8AVX512Pos,
			}, &avx2),
			naive: naiveAsm(naiveKernels{
				F32:  naiveDecodeAVX512,
				F16:  naiveDecodeF16AVX512,
				Q8_0: naiveDecodeQ8AVX512,
			})},
	)
}

// loneTileCapOn is the cap, in bytes of K, on the auto tile of a head-major
// f16 or q8_0 cache read by one query head per KV head (loneTileCap,
// Impl.Tile) on a CPU of vendor v and family fam: zen4LoneTileBytes on
// Zen 4 (AMD family 0x19 with AVX-512), where a lone head's phases (a
// tile's scores over K, then its P·V over V) stream from DRAM at a
// quarter to a third less once a tile holds more than about 4 KB of K;
// 0 (AutoTileKFor's tiles) elsewhere. Measured on an AMD EPYC family 25
// model 17 (2026-11-29), one thread, hd 128 unless said, ckbench sweep
// attention --kernel decode-flash,kv-read --heads 1:1 --exp fast --tk
// LIST, two rounds, % of the paired kv-read (30–31 GB/s) from DRAM (ctx
// 32768 --cold):
//
//   - f16 AVX2 (phases): tk 8 100, 16 92–96, 24 75–76, 32 (the default)
//     73–74, 256 68–71; hd 64 (ctx 65536): tk 16 and 32 103–104 (one
//     round flagged above bound), 64 (the default) 76–77. AVX-512 f16
//     (the lone pipeline, AMD's: no phases) 99–102 at every tile.
//   - q8_0 (phases, both tiers): AVX2 tk 16 77–87, 24 78–92, 32 80–88,
//     48 53–61, 64 56, 128 (the default) 65–67; AVX-512 73–76, 75–78,
//     76–77, 62, 61–63, 71–77.
//
// So the cliff is a tile's bytes (6 KB lose as much as 8), not its keys.
// In L3 (ctx 4096; hd 64 ctx 8192) the capped tile costs, as time over
// the default's: f16 AVX2 1.10 (hd 64 1.08), AVX-512 1.01 (1.02–1.03);
// q8_0 1.05 in both tiers, all of them lines far below the read there
// (f16 52–58 %, q8_0 24–28 %: their arithmetic bounds them). A decode's
// cache mostly comes from DRAM (each layer's KV is read once a token):
// the cap. The phases' software prefetch is not the cause: without it
// (an experimental mode, in one process, 7 rounds) AVX2 f16 at tk 32
// took 0.83 of the time from DRAM, still 1.14 times tk 16's, and q8_0 at
// tk 128 1.10 (AVX2) and 1.24 (AVX-512), at tk 16 and 32 0.99–1.00.
//
// MHA (8:8, each KV head read once) as one head: from DRAM f16 AVX2 tk
// 16 0.82 of tk 32's time, q8_0 tk 32 0.78–0.79 (AVX2) and 0.91–0.93
// (AVX-512) of tk 128's; in L3 (ctx 4096) 1.11 and 1.04–1.05. Where
// decode-flash's query heads share a KV head (32:8), the passes after the
// first re-read it from cache, where larger tiles are faster: from DRAM
// f16 AVX2 tk 16 took 1.02–1.06 of tk 32's time (tk 128 0.92 of it), in
// L3 1.16; so the cap holds where H = Hkv only (and not capping q8_0
// there costs AVX2 at 32:8 about 7 %: tk 32 0.93 of 128's from DRAM).
// Four KB pages are not the cause either: the same calls on 2 MB pages
// (MADV_HUGEPAGE, one process, 7 rounds) took 0.96–1.00 of the time.
//
// Not capped: f32 (AVX2's lone head is pipelined, tk 8 and 16 alike;
// AVX-512's phases took 0.91–0.95 of tk 16's time at tk 8 from DRAM, not
// measured in cache), hd > 128, position-major caches (8:8, f16 AVX2: tk
// 16 1.16–1.22 of tk 32's time from DRAM; q8_0 tk 32 as 128), groups.
// Zen 3 (family 0x19 without AVX-512) was never measured so; Zen 5's
// q8_0 lone heads were faster at tk 128 than 32 from DRAM (AutoTileKFor),
// and the Xeon's nearly even (0.96–0.98).
func loneTileCapOn(v cpuid.Vendor, fam int, avx512 bool) int {
	if isa.Zen4(v, fam, avx512) {
		return zen4LoneTileBytes
	}
	return 0
}

// lonePipelinedOn reports whether a lone head (decode-flash, and a group
// of one) takes the flash kernels' pipelined path on a CPU of this vendor:
// the scores of the next tile beside this tile's P·V, K and V read in turn
// (AVX-512: a vector, for q8_0 a block, of each; AVX2: four keys of each)
// and no software prefetch, where the phases (scores, softmax, P·V one
// after the other) prefetch a tile ahead. Only the head-major AVX-512 f16
// and q8_0 (hd 128) and AVX2 f32 kernels have that path (the generator's
// lonePipelined, whose doc has the measurements). Which is faster is the CPU's:
//
//   - AMD (Zen 5, where it was built): the pipeline, from DRAM 0.81–0.90
//     of the phases' time, in L3 0.81–0.84, in L2 0.89–0.95. Zen 4 (EPYC
//     family 25 model 17, one thread, hd 128, in one process with the
//     bit flipped between timed batches, 9 rounds, the phases' time over
//     the pipeline's): from DRAM (ctx 32768, copies rotated past 1.2 GB)
//     AVX-512 f16 1.60, AVX2 f32 1.59; ctx 4096 1.05 and 1.11; ctx 1024
//     1.04 and 0.98. A second Zen 5 host (family 26 model 2, 2026-12-01,
//     2.9–3.6 GHz; BenchmarkPaths, 15 and 40 rounds, the phases' time over
//     the pipeline's) disagrees from DRAM: AVX2 f32 0.75–0.81 (the
//     pipeline there 16–18 GB/s, 51 % of the paired kv-read in a sweep),
//     AVX-512 f16 0.92–0.97; in L3 0.92–1.06 and 1.26–1.31. The choice
//     stays the first host's: the two differ by more than either's noise,
//     and BenchmarkPaths is there to check it on the next one. Sweeps on
//     that second host (2026-12-02, alternated, share of the paired
//     kv-read, 7 rounds in two sets): AVX-512 f16 from DRAM the phases
//     85–89 %, the pipeline 75–85; in L3 (ctx 4096) the pipeline 71–88,
//     the phases 55–67. The phases' gain from DRAM there (0–13 % of the
//     time) is smaller than the pipeline's in cache (21–37 %), and the
//     first host measured it the other way: still the pipeline. Its whole
//     chunks interleaved since (a vector of K, then one of V: the
//     generator's lonePipelined), the same host, the same day (sweeps
//     alternated, 3 rounds): from DRAM the pipeline 93–96 %, the phases
//     86–93; in L3 80–84 and 58–63. BenchmarkPaths (40 rounds) then had
//     the phases at 0.98 of its time from DRAM, 1.33 in L3. AVX-512 q8_0
//     took the pipeline then too (hd 128, the generator's q8Fused): from
//     DRAM 86–90 % against the phases' 74–78, in L3 34–39 against 36–38
//     (sweeps), BenchmarkPaths 1.13 and 0.90 (later, 1.08 and 1.29 for
//     f16).
//   - Intel (Xeon family 6 model 207, 2.4 GHz, one thread, hd 128,
//     sweeps alternated, 3–4 rounds, the phases' time over the
//     pipeline's): from DRAM (ctx 32768 --cold) AVX-512 f16 0.68–0.82
//     (90 % of the paired kv-read against 70–76 %), AVX2 f32 0.82–0.91
//     (100 % against 85–86 %; ctx 4096 --cold 0.85–0.89); warm, AVX2 f32
//     at ctx 2048 0.95 (median of 3, points unstable), but AVX-512 f16 in
//     L2 (ctx 1024 and 4096) medians 1.12–1.18 (at ctx 4096 63–66 % of
//     the read against 76–86 %; hd 64 about even). A decode's cache
//     mostly comes from DRAM: the phases. (Measured before the pipeline's
//     chunks were interleaved, which lifted it from DRAM on Zen 5: an
//     Intel session should A/B it again.)
//
// Other vendors take the phases, the kernels' older and more measured
// path. The tests run both paths on every CPU (gate's lonePaths).
func lonePipelinedOn(v cpuid.Vendor) bool { return v == cpuid.AMD }

// wideOn reports whether tier t takes the groups' wide shape (modeWide,
// modePaced, modeFar and modeSplit) on a CPU of vendor v and family fam:
// an f16 group's heads as many at a time as share a widened vector
// (AVX-512 eight, AVX2 four; an AVX-512 f32 group of 8 to 15 heads eight
// at a time too, head-major; the generator's wide, whose doc has the
// measurements), their prefetch the near L1 stream in both tiers
// (wideLines), and the AVX-512 quads' prefetch paced to their reads
// (pacedLines: f16, and f32 in groups of eight or more), a line after
// each load (modeSplit: stepPart), with a far L2 stream beside their near
// one, as the f32 octs' (modeFar: farQuads, farOcts). Built on an Intel
// Xeon (family 6 model 207), where VCVTPH2PS is two µops on the FMA ports
// and the widening is what bounds the narrower sets: both tiers take it
// on Intel.
//
// On AMD, by core:
//
//   - Zen 4 (family 0x19 with AVX-512, its 512-bit operations on 256-bit
//     units), AVX-512 takes it. Measured on an AMD EPYC family 25 model
//     17 (2026-11-29), one thread, hd 128 unless said, in one process
//     with the four bits flipped between timed batches, 9 rounds, median
//     time wide over narrow: from DRAM (ctx 32768, copies rotated past
//     1.2 GB) f16 32:8 0.85, 64:8 0.86, f32 32:8 0.91, 64:8 0.62 (11.2
//     GB/s of K and V to 18.0), and in that order tile_k 32 0.63, 0.72,
//     0.93 and 0.53; hd 256 (ctx 16384) 0.74, 0.81, 0.76, 0.56; hd 64 f32
//     0.87 and 0.75, f16 32:8 1.02 and 1.19 (two sets; 64:8 0.99 and
//     1.11, rounds 0.71–1.37); 128:8 f32 0.91, f16 0.93; ctx 4096 (16–32
//     MB) f16 1.01–1.03, f32 0.94 and 0.71. In L3 (ctx 1024) it costs
//     1.01 (f16) and 1.01–1.04 (f32). Each bit's part, from DRAM: alone
//     against none, the octs (modeWide) 0.88 f16 and 0.86 f32 at
//     64:8, 1.00 at 32:8 (no octs there); far 0.90–0.96, paced 0.85–0.99,
//     split 0.97–0.99; taking one away from all four, far 1.46 (f32 64:8),
//     1.06 (f32 32:8), 0.96 (f16 32:8: the one bit that costs there),
//     the octs 1.42 (f32 64:8; f16 1.00, its paced quads as fast), paced
//     1.03 (f16 32:8), split 1.00–1.02. The f16 quads without their far
//     stream (f16 32:8): hd 64 0.92, hd 128 0.96–0.98, hd 256 1.00, tile_k
//     32 1.07, 40:8 (a quad and a lone head) 1.03, in L3 0.99: no one
//     shape, so f16 keeps the far stream, as on the Xeon.
//   - Zen 4's AVX2 keeps the narrow shape: wide from DRAM f16 32:8
//     1.12–1.14, 64:8 1.01–1.02, f32 1.00; in L3 0.99–1.01.
//   - Zen 5 (family 0x1A) keeps the narrow shape in both tiers, as its
//     measurements chose (there the paced quads were 2–7 % slower from
//     DRAM, AVX2's groups 0.91–1.15 with the near stream, and the quads'
//     near stream best alone); its split steps were never measured there
//     (its octs: below). A second Zen 5 host (family 26 model 2, 2026-12-01,
//     2.9–3.6 GHz, 37.7 GB/s from DRAM; one process, bits flipped between
//     timed batches, 7–9 rounds, AVX-512, hd 128) measured the paced quads
//     alone from DRAM (ctx 32768, copies rotated) 0.965–0.99 of the time
//     (f16 16:8, 32:8, 64:8; f32 64:8 1.00, 128:8 0.93), and BenchmarkPaths
//     (40 rounds, ctx 16384) 0.95 (f16 32:8) and 0.93 (f32 64:8); in L3
//     (ctx 1024) 0.99–1.02: the first host measured them 2–7 % slower, so
//     the choice stays. The wide sets alone there (modeWide on AVX-512,
//     2026-12-02, hd 128, L3 ctx 1024, sweeps alternated, 2 rounds): the
//     f32 octs of 64:8 took 1.24–1.28 of the quads' time (40–43 % of the
//     bound against 51–53), f16 32:8 0.97–0.99 and 64:8 1.00–1.05.
//     With the paced quads, tile_k 32 against auto's 16 for f16: 32:8
//     0.91–0.97 from DRAM and 0.90 in L3, but 64:8 1.04 from DRAM (0.92
//     in L3) and 16:8 0.98–0.99; AVX2 (the tile is both tiers') 32:8 1.05,
//     16:8 1.15 from DRAM: auto stays. All four bits flipped together (the wide
//     shape), in L3: 1.15–1.22. Zen 3 has no AVX-512, and its AVX2 the
//     narrow shape.
//
// The tests run every path on every CPU.
func wideOn(t isa.Tier, v cpuid.Vendor, fam int) bool {
	return v != cpuid.AMD || zen4AVX512(t, v, fam)
}

// zen4AVX512 reports whether t is the AVX-512 tier of a Zen 4 core (the
// tier runs only where the CPU has AVX-512).
func zen4AVX512(t isa.Tier, v cpuid.Vendor, fam int) bool {
	return t == isa.AVX512 && isa.Zen4(v, fam, true)
}

// nearT1On reports whether tier t's head-major f32 quads, octs and pairs
// (in groups of four or more: flashAsm) send their near prefetch stream to
// L2 (PREFETCHT1) rather than L1 on a CPU of vendor v and family fam
// (modeNearT1; the generator's nearT1Of): on Zen 4's AVX-512 alone.
// Measured there (EPYC family 25 model 17, 2026-11-29, one thread, hd 128
// unless said, in one process with the bit flipped between timed
// batches, 9 rounds, median time with it over without, the wide shape
// on): from DRAM (ctx 32768, copies rotated past 1.2 GB) 32:8 0.90 and
// 0.92 (two sets; tile_k 32 0.72), 64:8 0.95 (tile_k 32 0.97), hd 64
// 0.90, hd 256 (ctx 16384) 0.81, 128:8 0.84; ctx 4096 (32 MB) 0.85 and
// 0.99; in L3 (ctx 1024) 1.03 and 1.00. The 32:8 call from DRAM then
// reads at 19–21 GB/s, as AVX2's pairs (which prefetch into L2), from
// 15–16. Not kept: the f16 quads (1.01–1.04 with it), the f32 pairs of a
// group of two (16:8: 1.06), and T1 in the quads alone, not their P·V's
// pairs (hd 128, 32:8 and 64:8: 1.03 and 1.08). Intel and Zen 5
// measured T0 the faster (the generator's prefetcher doc); so did a second
// Zen 5 host (family 26 model 2, 2026-12-01, the bit flipped between
// timed batches, 7–9 rounds): T1 from DRAM f32 32:8 1.06, 64:8 1.15,
// f16 32:8 1.00; in L3 1.05–1.13.
func nearT1On(t isa.Tier, v cpuid.Vendor, fam int) bool { return zen4AVX512(t, v, fam) }

// smallTilesOn reports whether tier t runs a head-major f32 group of 2 to
// 7 heads whose tile holds at most SmallTileBytes of K in the AVX2
// kernel (modeSmallTiles: its pairs, each step of their T1 prefetch every
// ng-th chunk, spread over the heads) on a CPU of vendor v and family
// fam: on Zen 4's AVX-512 alone, whose quads and pairs (their near
// stream a tile behind the cursor) stream such tiles from DRAM slower.
// Measured on an AMD EPYC family 25 model 17 (2026-11-29, a quiet host),
// one thread, ckbench sweep attention --kernel decode-flash-gqa,kv-read
// --kv f32 --exp fast --isa avx2,avx512 --tk LIST, ms a call, AVX2's
// kernel against AVX-512's at the same tile:
//
//   - from DRAM (--cold; hd 128 ctx 32768, hd 64 ctx 65536, hd 256 ctx
//     16384): 32:8 hd 128 tk 8 11.1 against 15.1 (AVX-512's best tile,
//     32: 12.7), hd 64 tk 16 11.1 against 11.8, hd 256 tk 4 10.6 against
//     15.5 (its best, 16: 14.0); 16:8 tk 8 12.7 against 14.5; 48:8 tk 8
//     13.9 against 17.9. AVX2's f32 pairs stream fastest with tiles of
//     4 KB of K (32:8 hd 128 76–81 % of the roofline bound at tk 8, 65 %
//     at 32; with softmaxStepOn's step, later, 86–87 % at tk 8),
//     AVX-512's quads with 8 to 16 KB.
//   - in L3 (hd 128, ctx 1024), µs a call: 32:8 tk 8 229.5 against 247.0,
//     48:8 346 against 361, 16:8 144 against 139 (the one loss, 4 %).
//
// Larger tiles keep AVX-512's kernel (hd 64 tk 32 from DRAM 10.7 against
// AVX2's 13.9; hd 128 tk 32 12.7 against 12.9), and so do groups of 8 or
// more (64:8 tk 8 16.7 against 16.3 from DRAM, in L3 448 µs both; their
// octs win at larger tiles), f16 and q8_0 caches and position-major ones.
// Intel never measured so; on Zen 5 (family 26 model 2, 2026-12-01, the
// bit flipped between timed batches) AVX2's kernel took 1.34 of AVX-512's
// time for f32 32:8 at tile_k 8 in L3.
func smallTilesOn(t isa.Tier, v cpuid.Vendor, fam int) bool { return zen4AVX512(t, v, fam) }

// q8LoneOn reports whether tier t runs a head-major q8_0 lone head
// (decode-flash, and groups of one) in the AVX2 kernel (modeQ8Lone) on a
// CPU of vendor v and family fam: on Zen 4's AVX-512 alone, whose 512-bit
// int8 dot products run on 256-bit units (the roofline's q8-decode loop
// there: AVX-512 55 GFLOP/s, AVX2 61). Measured on an AMD EPYC family 25
// model 17 (2026-11-29), one thread, ckbench sweep attention --kernel
// decode-flash --heads 1:1 --kv q8_0 --isa avx2,avx512 (tiles auto, the
// lone cap's), AVX-512's time over AVX2's: from DRAM (ctx 32768 --cold,
// two rounds, fast and exact exp) hd 64 1.02–1.04, hd 128 1.01–1.02, hd
// 256 1.01–1.02; 8:8 (MHA) 1.04; in L3 (ctx 4096) 1.06 (hd 256) to 1.10
// (hd 64), ctx 1024 1.08. Groups keep AVX-512's kernel (32:8 from DRAM
// 0.95 of AVX2's time, though 1.06 in L3), and so do position-major
// caches (not measured).
func q8LoneOn(t isa.Tier, v cpuid.Vendor, fam int) bool { return zen4AVX512(t, v, fam) }

// softmaxStepOn reports whether AVX2's head-major f32 pairs begin the
// next tile's K in each pair's softmax (modeSoftmaxStep; the generator's
// softmaxStepOf, whose doc has the measurements) on a CPU of vendor v and
// family fam, with AVX-512 or without: on Zen 4, in both tiers (the
// AVX-512 tier runs those pairs for its f32 groups in small tiles:
// smallTilesOn). Zen 5 measured it 0.97–1.13 from DRAM; Intel never did.
// A second Zen 5 host (family 26 model 2, 2026-12-01; BenchmarkPaths, 15
// and 40 rounds, f32 32:8 tile_k 8) took 0.905–0.925 of the time with it
// from DRAM and 1.00–1.02 in L3: not enough against the first to choose
// it for the family.
func softmaxStepOn(v cpuid.Vendor, fam int, avx512 bool) bool { return isa.Zen4(v, fam, avx512) }

// l1On reports whether tier t's head-major f32 and f16 kernels prefetch
// into L1 (modeL1; the generator's l1Of, whose doc has the measurements)
// on a CPU of vendor v and family fam: AVX2's on Zen 5 (family 0x1A),
// where it was measured (the AVX-512 tier runs AVX2's kernels only on
// Zen 4: smallTilesOn, q8LoneOn). Zen 3 fills L1 at every hint; on Zen 4
// and the Xeon T1 had won for the groups.
func l1On(t isa.Tier, v cpuid.Vendor, fam int) bool {
	return t == isa.AVX2 && v == cpuid.AMD && fam == 0x1A
}

// modeOn is the flash kernels' paths tier t takes on a CPU of vendor v
// and family fam, with AVX-512 or without.
func modeOn(t isa.Tier, v cpuid.Vendor, fam int, avx512 bool) flashMode {
	var m flashMode
	if lonePipelinedOn(v) {
		m |= modeLonePipe
	}
	if wideOn(t, v, fam) {
		m |= modeWide | modePaced | modeFar | modeSplit
	}
	if nearT1On(t, v, fam) {
		m |= modeNearT1
	}
	if smallTilesOn(t, v, fam) {
		m |= modeSmallTiles
	}
	if softmaxStepOn(v, fam, avx512) {
		m |= modeSoftmaxStep
	}
	if q8LoneOn(t, v, fam) {
		m |= modeQ8Lone
	}
	if l1On(t, v, fam) {
		m |= modeL1
	}
	return m
}

// The asm kernels take the cache as bytes, whatever its element type.
type (
	flashAsmFunc func(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)
	naiveAsmFunc func(o, q *float32, k, v *byte, n, d int, scale float32, ws *float32, stride int, state *float32, mode int)
	// flashKernels and naiveKernels are a tier's kernels per KV type
	// (either exp: the mode argument's modeFastExp bit).
	flashKernels [Q8_0 + 1]flashAsmFunc
	naiveKernels [Q8_0 + 1]naiveAsmFunc
)

// kvPtr is the first byte of n rows of s, checked to be there: the
// bounds check the asm cannot do.
func kvPtr(s kvSrc, n int) *byte {
	if s.typ == F32 {
		return (*byte)(unsafe.Pointer(&s.f32[:s.span(n)][0]))
	}
	return &s.enc[:s.span(n)][0]
}

// withExp is mode with modeFastExp set where e is the fast exp.
func withExp(mode flashMode, e Exp) flashMode {
	if e == ExpFast {
		return mode | modeFastExp
	}
	return mode &^ modeFastExp
}

// flashAsm adapts a tier's asm flash kernels to flashFunc: head's for a
// head's rows back to back (a head-major cache, or a position-major one
// of one KV head), pos's where they are further apart (a position-major
// cache: the same kernels but for how they prefetch, row by row). The
// slice expressions are the bounds checks the asm cannot do.
//
// narrow, where not nil, is a narrower tier's head-major kernels, which
// the calls narrowFor names run (smallTilesOn, q8LoneOn). Their
// workspace is the same, and they read only the mode bits they have.
func flashAsm(head, pos flashKernels, narrow *flashKernels) flashFunc {
	return func(o, q []float32, g int, k, v kvSrc, n, d, tk int, scale float32, e Exp, ws []float32, mode flashMode) {
		fs := &head
		if k.rs > 1 {
			fs = &pos
		} else if narrow != nil && narrowFor(mode, k.typ, g, d, tk) {
			fs = narrow
		}
		f := fs[k.typ]
		if g < 4 {
			mode &^= modeNearT1 // the pairs of a group of two or three keep T0 (nearT1On)
		}
		tb := tileBufLen(tk)
		tiles := ws[flashStateLen(g) : flashStateLen(g)+tileBufs(g)*tb]
		o, q = o[:g*d], q[:g*d]
		f(&o[0], &q[0], g, kvPtr(k, n), kvPtr(v, n), n, d, tk, scale, &ws[0], &tiles[0], 4*tb, k.strideBytes(), int(withExp(mode, e)))
	}
}

func naiveAsm(fs naiveKernels) naiveFunc {
	return func(o, q []float32, k, v kvSrc, n, d int, scale float32, e Exp, ws []float32) {
		f := fs[k.typ]
		nw := roundUp(n, 16)
		o, q, ws = o[:d], q[:d], ws[:nw+2]
		f(&o[0], &q[0], kvPtr(k, n), kvPtr(v, n), n, d, scale, &ws[0], k.strideBytes(), &ws[nw], int(withExp(0, e)))
	}
}

// flashDecodeAVX2 computes, for ng query heads sharing one KV head, what
// flashGeneric does: per tile of tk of the n keys, x[j] = scale·q·k[j] for
// each head, the running max and sum rescaled when the max grows,
// o += exp(x[j]−m)·v[j]; then o /= s. state holds m, s and the tile maxima
// (3·ng floats); tiles holds max(ng, 2) buffers of tileStride bytes.
// mode is a flashMode: with modeFastExp exp is CKE's polynomial (FastExp),
// otherwise the exact one; with modeLonePipe a lone head (ng = 1) takes
// the pipelined path, in the kernels that have one (the generator's
// lonePipelined), otherwise the phases; with modeWide a group takes its
// heads as many at a time as share a widened vector, in the kernels that
// have that path (the generator's wide); with modePaced the AVX-512 quads prefetch two lines a step (its
// pacedLines); with modeSoftmaxStep the head-major f32 pairs begin the
// next tile's K in their softmax (softmaxStepOf).
//
//go:noescape
func flashDecodeAVX2(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// naiveDecodeAVX2 computes what naiveGeneric does for one head: ws[j] =
// scale·q·k[j] for the n keys, then ws[j] = exp(ws[j]−max), s = Σ ws[j],
// and o = Σ (ws[j]/s)·v[j]. ws holds n floats rounded up to 16; state[0]
// and state[1] receive max and s (the caller's LSE is max + ln s). mode's
// modeFastExp bit asks for FastExp, the rest of mode is not read.
//
//go:noescape
func naiveDecodeAVX2(o, q *float32, k, v *byte, n, d int, scale float32, ws *float32, stride int, state *float32, mode int)

// flashDecodeAVX512 is flashDecodeAVX2 in 512-bit vectors.
//
//go:noescape
func flashDecodeAVX512(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// naiveDecodeAVX512 is naiveDecodeAVX2 in 512-bit vectors.
//
//go:noescape
func naiveDecodeAVX512(o, q *float32, k, v *byte, n, d int, scale float32, ws *float32, stride int, state *float32, mode int)

// The f16 and q8_0 kernels: each is the kernel of its name without F16 or
// Q8, over an f16 cache (K and V values widened by VCVTPH2PS as they are
// loaded) or a q8_0 cache (blocks of 32 int8 and an f16 scale; q holds
// each head's query quantized to q8_0, at 4·d bytes per head; Q·K is an
// int8 dot per block, V dequantized in registers). k and v are n rows of
// d values.

// flashDecodeF16AVX2 is flashDecodeAVX2 over an f16 cache.
//
//go:noescape
func flashDecodeF16AVX2(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// flashDecodeF16AVX512 is flashDecodeAVX512 over an f16 cache.
//
//go:noescape
func flashDecodeF16AVX512(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// flashDecodeQ8AVX2 is flashDecodeAVX2 over a q8_0 cache.
//
//go:noescape
func flashDecodeQ8AVX2(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// flashDecodeQ8AVX512 is flashDecodeAVX512 over a q8_0 cache.
//
//go:noescape
func flashDecodeQ8AVX512(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// naiveDecodeF16AVX2 is naiveDecodeAVX2 over an f16 cache.
//
//go:noescape
func naiveDecodeF16AVX2(o, q *float32, k, v *byte, n, d int, scale float32, ws *float32, stride int, state *float32, mode int)

// naiveDecodeF16AVX512 is naiveDecodeAVX512 over an f16 cache.
//
//go:noescape
func naiveDecodeF16AVX512(o, q *float32, k, v *byte, n, d int, scale float32, ws *float32, stride int, state *float32, mode int)

// naiveDecodeQ8AVX2 is naiveDecodeAVX2 over a q8_0 cache.
//
//go:noescape
func naiveDecodeQ8AVX2(o, q *float32, k, v *byte, n, d int, scale float32, ws *float32, stride int, state *float32, mode int)

// naiveDecodeQ8AVX512 is naiveDecodeAVX512 over a q8_0 cache.
//
//go:noescape
func naiveDecodeQ8AVX512(o, q *float32, k, v *byte, n, d int, scale float32, ws *float32, stride int, state *float32, mode int)

// The position-major flash kernels: each is the kernel of its name without
// Pos, for K and V rows stride > row bytes apart (a position-major cache),
// whose software prefetch steps through a tile's rows one by one where
// the head-major kernel's steps through a contiguous range.

// flashDecodeAVX2Pos is flashDecodeAVX2 for a position-major cache.
//
//go:noescape
func flashDecodeAVX2Pos(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// flashDecodeF16AVX2Pos is flashDecodeF16AVX2 for a position-major cache.
//
//go:noescape
func flashDecodeF16AVX2Pos(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// flashDecodeQ8AVX2Pos is flashDecodeQ8AVX2 for a position-major cache.
//
//go:noescape
func flashDecodeQ8AVX2Pos(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// flashDecodeAVX512Pos is flashDecodeAVX512 for a position-major cache.
//
//go:noescape
func flashDecodeAVX512Pos(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// flashDecodeF16AVX512Pos is flashDecodeF16AVX512 for a position-major cache.
//
//go:noescape
func flashDecodeF16AVX512Pos(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)

// flashDecodeQ8AVX512Pos is flashDecodeQ8AVX512 for a position-major cache.
//
//go:noescape
func flashDecodeQ8AVX512Pos(o, q *float32, ng int, k, v *byte, n, d, tk int, scale float32, state, tiles *float32, tileStride, stride, mode int)
