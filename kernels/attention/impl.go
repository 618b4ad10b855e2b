package attention

import (
	"math"

	"github.com/ckbench/ckbench/kernels/isa"
)

// flashFunc runs flash decode for g query heads that share one KV head:
// q and o hold g rows of d floats, k and v hold n rows of d values. mode
// picks among the paths of the kernels that have more than one
// (Impl.mode); the result is the same either way.
type flashFunc func(o, q []float32, g int, k, v kvSrc, n, d, tk int, scale float32, e Exp, ws []float32, mode flashMode)

// flashMode is a set of the flash kernels' optional paths, each taken on
// the CPUs where it was measured faster (chosen once, when a tier is
// registered: the per-arch files). The asm kernels take it as an int
// (their mode argument), bit for bit.
type flashMode int

const (
	// modeLonePipe: a lone head (g = 1) pipelined, in the kernels that
	// have that path (head-major AVX-512 f16, AVX2 f32: the generator's
	// lonePipelined, lonePipelinedOn).
	modeLonePipe flashMode = 1 << iota
	// modeWide: an f16 group's heads as many at a time as share a widened
	// vector (AVX-512 eight, then quads; AVX2 four, then pairs) while that
	// many remain, and a head-major AVX-512 f32 group of 8 to 15 heads
	// eight at a time (the generator's wide, wideOn).
	modeWide
	// modePaced: the AVX-512 quads' prefetch paced to their reads, two
	// lines a step, not four: f16's always, f32's in groups of eight or
	// more (the generator's pacedLines, wideOn).
	modePaced
	// modeFastExp: CKE's polynomial exp (ExpFast) instead of the exact
	// one. Not a path a CPU chooses: each call sets it from its Exp
	// (withExp), so that one asm kernel serves both.
	modeFastExp
	// modeFar: the AVX-512 head-major quads' and f32 octs' near prefetch
	// (into L1, the tile the next phase reads) with a far one beside it
	// (into L2, two tiles beyond the near cursor): the generator's
	// farQuads and farOcts, wideOn.
	modeFar
	// modeSplit: the AVX-512 quads' prefetch steps a line after each of
	// their loads, not all after the last (the generator's stepPart,
	// wideOn; the octs' always are).
	modeSplit
	// modeNearT1: the AVX-512 head-major f32 groups' near stream into L2
	// (PREFETCHT1), not L1, in groups of four or more (the generator's
	// nearT1Of, nearT1On).
	modeNearT1
	// modeSmallTiles: an AVX-512 head-major f32 group of 2 to 7 heads whose
	// tile holds at most SmallTileBytes of K runs the AVX2 kernel, its
	// pairs' prefetch spread over the heads (smallTilesOn).
	modeSmallTiles
	// modeSoftmaxStep: AVX2's head-major f32 pairs begin the next tile's K
	// in each pair's softmax, 8 lines (the generator's softmaxStepOf,
	// softmaxStepOn).
	modeSoftmaxStep
	// modeQ8Lone: an AVX-512 head-major q8_0 lone head (g = 1) runs the
	// AVX2 kernel (q8LoneOn).
	modeQ8Lone
	// modeL1: AVX2's head-major f32 and f16 kernels prefetch into L1
	// (PREFETCHT0), not L2 (the generator's l1Of, l1On).
	modeL1
)

// String names the paths in m, for test failures and listings.
func (m flashMode) String() string {
	s := "phases"
	if m&modeLonePipe != 0 {
		s = "lone pipelined"
	}
	if m&modeWide != 0 {
		s += ", wide sets"
	} else {
		s += ", narrow sets"
	}
	if m&modePaced != 0 {
		s += ", paced quads"
	} else {
		s += ", quads at four lines"
	}
	if m&modeSplit != 0 {
		s += ", split steps"
	}
	if m&modeNearT1 != 0 {
		s += ", f32 near stream into L2"
	}
	if m&modeSoftmaxStep != 0 {
		s += ", f32 pairs' softmax stepping the next K"
	}
	if m&modeSmallTiles != 0 {
		s += ", f32 groups of small tiles in AVX2's pairs"
	}
	if m&modeQ8Lone != 0 {
		s += ", q8_0 lone heads in AVX2's kernel"
	}
	if m&modeL1 != 0 {
		s += ", AVX2 f32 and f16 prefetch into L1"
	}
	if m&modeFar != 0 {
		return s + " with a far stream"
	}
	return s
}

// naiveFunc runs the materialized decode for one query head.
type naiveFunc func(o, q []float32, k, v kvSrc, n, d int, scale float32, e Exp, ws []float32)

// Impl is one ISA tier's implementation of the attention kernels.
type Impl struct {
	Tier  isa.Tier
	flash flashFunc
	naive naiveFunc
	// mode: the flash kernels' optional paths this CPU takes (flashMode),
	// chosen once when the tier is registered.
	mode flashMode
	// pipeF16: the tier's head-major f16 flash kernel has the lone
	// pipeline (AVX-512's; the generator's lonePipelined), which it takes
	// where mode has modeLonePipe.
	pipeF16 bool
}

// Tile returns the tile_k tier im runs p at: p.TileK, or auto's on this
// CPU for this tier: AutoTileKFor, but lonePipeTileK where the tier
// pipelines p's lone f16 head (a head-major cache at D ≤ 128, one query
// head a pass), and capped where the CPU caps lone tiles (loneTileCap).
// Every tier runs in the workspace WorkspaceLen sizes for the largest.
func (im Impl) Tile(p Params) int {
	if p.TileK != 0 {
		return p.TileK
	}
	pipe := im.pipeF16 && im.mode&modeLonePipe != 0 &&
		p.KV == F16 && p.Layout == HeadMajor && p.D <= 128 && p.passGroup() == 1
	return p.autoTile(pipe)
}

// impls holds every tier compiled into this binary, generic first. The
// per-arch files append to it in init.
var impls = []Impl{{Tier: isa.Generic, flash: flashGeneric, naive: naiveGeneric}}

// Impls returns the tiers compiled into this binary, whether or not the CPU
// can run them: check isa.Detect before calling Run on one.
func Impls() []Impl { return impls }

// LonePipelined reports whether a lone head (decode-flash, a group of one)
// takes the flash kernels' pipelined path on this CPU, in the tiers that
// have one (head-major AVX-512 f16 and AVX2 f32): chosen once, from the
// CPU's vendor, where it was measured faster. Otherwise a tile's scores,
// softmax and P·V run one after the other, prefetching ahead. Either way
// the results are the same (the gate checks both).
func LonePipelined() bool { return anyMode(modeLonePipe) }

// WideGroups reports whether, in tier t on this CPU, a GQA group over an
// f16 cache takes its query heads as many at a time as share a widened
// vector (AVX-512 eight, AVX2 four), with its prefetch paced to its reads:
// chosen once, from the CPU's vendor and family, where it was measured
// faster. Otherwise AVX-512 four at a time and AVX2 two. Either way the
// results are the same (the gate checks every path).
func WideGroups(t isa.Tier) bool {
	return tierMode(t, modeWide)
}

// SmallTileGroups reports whether, in tier t on this CPU, a head-major
// f32 GQA group of 2 to 7 query heads whose tile holds at most
// SmallTileBytes of K runs the narrower AVX2 tier's kernel (its pairs,
// their prefetch spread over the heads), where that was measured faster:
// AVX-512 on Zen 4 (smallTilesOn). Either way the results are the same.
func SmallTileGroups(t isa.Tier) bool {
	return tierMode(t, modeSmallTiles)
}

// SoftmaxStepPairs reports whether, in tier t on this CPU, AVX2's
// head-major f32 pairs (the AVX2 tier's groups, and the AVX-512 tier's
// where SmallTileGroups) begin the next tile's K in each pair's softmax,
// where that was measured faster: Zen 4 (softmaxStepOn).
func SoftmaxStepPairs(t isa.Tier) bool {
	return tierMode(t, modeSoftmaxStep)
}

// Q8LoneNarrow reports whether, in tier t on this CPU, a head-major
// q8_0 lone head (decode-flash, and groups of one) runs the narrower AVX2
// tier's kernel, where that was measured faster: AVX-512 on Zen 4
// (q8LoneOn). Either way the results are the same.
func Q8LoneNarrow(t isa.Tier) bool {
	return tierMode(t, modeQ8Lone)
}

// L1Prefetch reports whether, in tier t on this CPU, the head-major f32
// and f16 kernels' prefetch goes into L1 (PREFETCHT0) rather than L2,
// where that was measured faster: AVX2 on Zen 5 (l1On). Either way the
// results are the same.
func L1Prefetch(t isa.Tier) bool {
	return tierMode(t, modeL1)
}

// tierMode reports whether tier t, in this binary, takes every path in m
// on this CPU.
func tierMode(t isa.Tier, m flashMode) bool {
	im, ok := Lookup(t)
	return ok && im.mode&m == m
}

func anyMode(m flashMode) bool {
	for _, im := range impls {
		if im.mode&m != 0 {
			return true
		}
	}
	return false
}

// Tiers lists the tiers this binary has attention kernels for.
func Tiers() []isa.Tier { return isa.TiersOf(impls) }

// Lookup returns the implementation of tier t, if this binary has one.
func Lookup(t isa.Tier) (Impl, bool) { return isa.Find(impls, t) }

// TierOf makes Impl an isa.Implemented.
func (im Impl) TierOf() isa.Tier { return im.Tier }

// Run executes p on b. The caller must have checked p.Check(b) == nil and
// that the CPU runs im.Tier; Run itself does not allocate.
//
// A sliding window needs nothing of the kernels: they are given the last
// Keys rows of each KV head (KVRows) as the whole context.
func (im Impl) Run(p Params, b Buffers) {
	d, n, tk := p.D, p.Keys(), im.Tile(p)
	scale := Scale(d)
	// A q8_0 cache's Q·K is an int8 dot against the query quantized to
	// q8_0 (as GGML does), once per call, into the workspace's last H·D
	// floats; the kernels get the rest.
	ws, q := b.WS, b.Q
	if p.KV == Q8_0 {
		qs := len(b.WS) - p.H*d // Check saw room for WorkspaceLen
		ws, q = b.WS[:qs], b.WS[qs:]
		QuantizeQuery(q, b.Q, p.H, d)
	}
	kOf := func(kh int) kvSrc { return p.kvOf(b.K, b.KEnc, kh) }
	vOf := func(kh int) kvSrc { return p.kvOf(b.V, b.VEnc, kh) }
	switch p.Kernel {
	case DecodeFlash:
		for h := 0; h < p.H; h++ {
			kh := h * p.Hkv / p.H
			im.flash(b.O[h*d:(h+1)*d], q[h*d:(h+1)*d], 1, kOf(kh), vOf(kh), n, d, tk, scale, p.Exp, ws, im.mode)
			if b.LSE != nil {
				stateLSE(b.LSE[h:h+1], ws, 1)
			}
		}
	case DecodeFlashGQA:
		g := p.Group()
		for kh := 0; kh < p.Hkv; kh++ {
			h0 := kh * g
			im.flash(b.O[h0*d:(h0+g)*d], q[h0*d:(h0+g)*d], g, kOf(kh), vOf(kh), n, d, tk, scale, p.Exp, ws, im.mode)
			if b.LSE != nil {
				stateLSE(b.LSE[h0:h0+g], ws, g)
			}
		}
	case DecodeSplit:
		g, splits := p.Group(), p.SplitCount()
		fl := flashStateLen(g) + tileBufs(g)*tileBufLen(tk) // the flash kernel's workspace
		parts, lses := ws[fl:fl+splits*g*d], ws[fl+splits*g*d:]
		for kh := 0; kh < p.Hkv; kh++ {
			h0 := kh * g
			k, v := kOf(kh), vOf(kh)
			for c := range splits {
				lo, hi := c*n/splits, (c+1)*n/splits // even chunks; empty ones when n < splits
				oc, lc := parts[c*g*d:(c+1)*g*d], lses[c*roundUp(g, 16):c*roundUp(g, 16)+g]
				if hi == lo {
					for j := range lc {
						lc[j] = float32(math.Inf(-1))
					}
					continue
				}
				im.flash(oc, q[h0*d:(h0+g)*d], g, k.sub(lo, hi), v.sub(lo, hi), hi-lo, d, tk, scale, p.Exp, ws, im.mode)
				stateLSE(lc, ws, g)
			}
			mergeLSE(b.O[h0*d:(h0+g)*d], lse(b.LSE, h0, g), parts, lses, splits, g, d)
		}
	case DecodeNaive:
		for h := 0; h < p.H; h++ {
			kh := h * p.Hkv / p.H
			im.naive(b.O[h*d:(h+1)*d], q[h*d:(h+1)*d], kOf(kh), vOf(kh), n, d, scale, p.Exp, ws)
			if b.LSE != nil { // the max and the sum follow the scores
				nw := roundUp(n, 16)
				stateLSE(b.LSE[h:h+1], ws[nw:nw+2], 1)
			}
		}
	}
}

// stateLSE reads the log-sum-exp of g heads from the state a flash kernel
// leaves at the start of its workspace (every tier: m[0..g), then s[0..g),
// the running max and the sum of exp(x − m)): LSE = m + ln s.
func stateLSE(dst, ws []float32, g int) {
	for j := range g {
		m, s := ws[j], ws[g+j]
		dst[j] = m + float32(math.Log(float64(s))) // s = 0 (no weight): −Inf
	}
}

// lse is the group's slice of the caller's LSE buffer, or nil.
func lse(all []float32, h0, g int) []float32 {
	if all == nil {
		return nil
	}
	return all[h0 : h0+g]
}

// MergeLSE merges the partial outputs of splits chunks of the keys,
// computed apart (each a call over a window of the keys, with LSE): parts
// holds [splits][heads][d] normalized outputs, lses [splits][LSEStride(heads)]
// their log-sum-exps; o (heads·d) receives the merged output and lse, when
// not nil, the merged LSE. This is decode-split's merge, for a caller that
// runs the chunks itself (one per thread).
func MergeLSE(o, lse, parts, lses []float32, splits, heads, d int) {
	mergeLSE(o, lse, parts, lses, splits, heads, d)
}

// LSEStride is the floats between two chunks' LSEs in MergeLSE's lses.
func LSEStride(heads int) int { return roundUp(heads, 16) }

// mergeLSE combines the partial outputs of chunks (each normalized, with
// its LSE) into o: o = Σ_c exp(lse_c − M)·o_c / Σ_c exp(lse_c − M), M the
// largest lse_c. Chunks with lse −Inf take no part; NaN in any partial
// reaches o. The merged LSE goes to out when it is not nil.
func mergeLSE(o, out, parts, lses []float32, splits, g, d int) {
	stride := roundUp(g, 16)
	for j := range g {
		m := math.Inf(-1)
		nan := false
		for c := range splits {
			l := float64(lses[c*stride+j])
			nan = nan || l != l
			m = max(m, l)
		}
		oj := o[j*d : (j+1)*d]
		clear(oj)
		var sum float64
		if !math.IsInf(m, -1) {
			for c := range splits {
				l := float64(lses[c*stride+j])
				if math.IsInf(l, -1) {
					continue
				}
				w := math.Exp(l - m)
				sum += w
				axpy(oj, float32(w), parts[(c*g+j)*d:(c*g+j+1)*d])
			}
		}
		switch {
		case nan:
			for i := range oj {
				oj[i] = float32(math.NaN())
			}
		case sum > 0:
			scaleInPlace(oj, float32(1/sum))
		}
		if out != nil {
			out[j] = float32(m + math.Log(sum))
			if nan {
				out[j] = float32(math.NaN())
			}
		}
	}
}
