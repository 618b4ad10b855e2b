package sweeps

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/kvcache"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
	"github.com/ckbench/ckbench/sampler"
)

// KVCopy is the in-run ceiling of the kvcache family: a plain copy of as
// many bytes as the store writes and a read of the rest of what it reads,
// the read spread over the copy, in one call with the loads and stores of
// the tier (on one thread, or of a narrower tier where those are faster
// here: kvCopyPoint), so that the ceiling reads and writes what the store
// does, side by side as the store does (an f32→f16 append reads twice
// what it writes: a copy of half its bytes each way wrote more, and ran
// slower than the append itself). One stream (roofline.CopyRead) or two
// halves side by side, as a store writes K and V (CopyRead2), whichever
// is faster at the point (from DRAM two halves let an f16 batch-copy read
// 116–138 % of one stream); measured with the same sampler, then timed in
// alternation with the stores of the shape: their read_gbs (% read), a
// store's bytes against the same bytes moved at the same level and the
// same moment. Warm, it moves the store's own lines (storePieces), a KV
// head at a time, K's and V's in a stream each or side by side, whichever
// is faster; cold, and for an append's few bytes a head, data of its own.
const KVCopy = "kv-copy"

// KVCacheOps lists the kernel names the kvcache sweep accepts.
func KVCacheOps() []string {
	names := []string{}
	for _, o := range kvcache.Ops {
		names = append(names, string(o))
	}
	return append(names, KVCopy)
}

// KVCacheGrid is the parameter grid of `ckbench sweep kvcache`.
type KVCacheGrid struct {
	Ops      []string
	Tiers    []isa.Tier
	HeadDims []int
	Heads    []int // KV heads
	Tokens   []int // batch-copy's tokens
	Ctxs     []int // the position written: the tokens already in the cache
	KVs      []attention.KVType
	Layouts  []attention.Layout
}

// KVCachePreset returns a named grid: quick (what make run does), default
// or full.
func KVCachePreset(name string) (KVCacheGrid, sampler.Config, error) {
	g := KVCacheGrid{Ops: KVCacheOps(), Tiers: kvcache.Tiers(), KVs: attention.KVTypes}
	var sc sampler.Config
	switch name {
	case "quick":
		g.HeadDims, g.Heads, g.Tokens, g.Ctxs = []int{128}, []int{8}, []int{512}, []int{4096}
		g.Layouts = []attention.Layout{attention.HeadMajor}
		sc.MinTime = 100e6
	case "default":
		g.HeadDims, g.Heads, g.Tokens, g.Ctxs = []int{64, 128}, []int{8, 32}, []int{128, 2048}, []int{4096, 32768}
		g.Layouts = attention.Layouts
	case "full":
		g.HeadDims, g.Heads, g.Tokens, g.Ctxs = []int{64, 96, 128, 256}, []int{1, 8, 32}, []int{16, 128, 512, 2048, 8192}, []int{512, 4096, 32768}
		g.Layouts = attention.Layouts
	default:
		return g, sc, fmt.Errorf("unknown preset %q (known: quick, default, full)", name)
	}
	return g, sc, nil
}

// Validate reports the first impossible value in the grid.
func (g KVCacheGrid) Validate() error {
	if len(g.Ops) == 0 || len(g.Tiers) == 0 || len(g.HeadDims) == 0 || len(g.Heads) == 0 || len(g.Tokens) == 0 ||
		len(g.Ctxs) == 0 || len(g.KVs) == 0 || len(g.Layouts) == 0 {
		return fmt.Errorf("empty grid: every parameter needs at least one value")
	}
	for _, n := range g.Tokens {
		if n < 1 || n > MaxCtx {
			return paramErrorf("tokens", "%d: a batch-copy writes 1…%d tokens", n, MaxCtx)
		}
	}
	for _, c := range g.Ctxs {
		if c < 0 || c > MaxCtx {
			return paramErrorf("ctx", "%d: the position written is 0…%d", c, MaxCtx)
		}
	}
	for _, h := range g.Heads {
		if h < 1 || h > MaxHeads {
			return paramErrorf("heads", "%d: KV heads are 1…%d", h, MaxHeads)
		}
	}
	for _, d := range g.HeadDims {
		for _, kv := range g.KVs {
			if err := (kvcache.Params{Op: kvcache.Append, Hkv: 1, D: d, KV: kv}).Validate(); err != nil {
				param := "hd"
				if (kvcache.Params{Op: kvcache.Append, Hkv: 1, D: d}).Validate() == nil {
					param = "kv"
				}
				return paramErrorf(param, "%s and hd %d: %v", kv, d, err)
			}
		}
	}
	return nil
}

// kvcacheData is one store shape's data: the source rows and the cache
// (one set; cold points rotate positions instead, see rotations).
type kvcacheData struct {
	b kvcache.Buffers
	// The ceiling's data, rot blocks each: per block, src holds the
	// floats copied (as many bytes as the store writes) then those only
	// read (the rest of what it reads); dst receives the copy. Nil where
	// the ceiling moves the store's own rows (pieces).
	src, dst []float32
	copyN    int // floats copied per block
	// pieces: a warm store's own source rows and the cache rows it
	// writes, per KV head (see storePieces); nil where the ceiling has
	// data of its own.
	pieces []piece
}

// piece is a span of the ceiling that moves a warm store's own lines:
// len(dst) floats of src are copied to dst and the rest of src is read
// (roofline.CopyRead, or CopyReadPair with the head's other piece). K's
// pieces and V's of a head are one piece each, K's first: piece i is
// head i/2's.
type piece struct{ dst, src []float32 }

// minPiece is the least a piece copies (bytes) for the ceiling to move the
// store's own lines: below it (an append writes one row a head, 256 B at
// hd 128 f16) a call a piece would cost more than its copy, and the two
// working sets are small enough to share any cache level.
const minPiece = 4 << 10

// piecesFit reports whether p's pieces (a head's rows) copy at least
// minPiece: whether a warm ceiling moves the store's own lines.
func piecesFit(p kvcache.Params) bool { return p.Count()*p.KV.RowBytes(p.D) >= minPiece }

// storePieces cuts a warm store's lines into the ceiling's pieces, K's
// and V's for each KV head in turn: a head's source rows, and the cache
// rows it writes, which are a head's T rows head-major, and position-major
// (where a position's heads are interleaved) the head's Hkv-th of the
// rows' whole span, cut at 64-byte lines. A piece's ends are rounded in to
// whole floats (a q8_0 row at hd 96 is 102 bytes), and an f32 head's
// Hkv-th, cut at a line, may be longer than its source by less than a
// line: the ceiling then moves up to 64 bytes a piece less than the
// store. Nil if a piece would copy less than minPiece.
func storePieces(p kvcache.Params, b kvcache.Buffers) []piece {
	if !piecesFit(p) {
		return nil
	}
	rb, cnt := p.KV.RowBytes(p.D), p.Count()
	var ps []piece
	for kh := range p.Hkv {
		for _, x := range []struct {
			src   []float32
			cache []byte
		}{{b.SrcK, cacheAsBytes(b.K, b.KEnc)}, {b.SrcV, cacheAsBytes(b.V, b.VEnc)}} {
			lo, hi := p.Row(kh, p.Pos)*rb, (p.Row(kh, p.Pos+cnt-1)+1)*rb
			if p.Layout == attention.PosMajor {
				first, span := p.Row(0, p.Pos)*rb, cnt*p.Hkv*rb
				lo, hi = first+span*kh/p.Hkv&^63, first+span*(kh+1)/p.Hkv&^63
				if kh == p.Hkv-1 {
					hi = first + span
				}
			}
			lo, hi = (lo+3)&^3, hi&^3
			src := x.src[kh*cnt*p.D : (kh+1)*cnt*p.D]
			dst := buf.FloatsOf(x.cache[lo:hi])
			ps = append(ps, piece{dst: dst[:min(len(dst), len(src))], src: src})
		}
	}
	return ps
}

// cacheAsBytes is a cache as bytes, f32 or encoded.
func cacheAsBytes(f []float32, enc []byte) []byte {
	if f != nil {
		return buf.BytesOf(f)
	}
	return enc
}

// unwritten marks a float of a piece's dst before its copy: a NaN no
// source holds.
const unwritten = 0x7fc0dead

// checkPieces runs call once over pieces whose dst it has marked, and
// reports a piece whose dst is not then a subsequence of its src, in
// order: the floats either shape of the ceiling copies.
func checkPieces(ps []piece, call func()) error {
	for _, pc := range ps {
		for j := range pc.dst {
			pc.dst[j] = math.Float32frombits(unwritten)
		}
	}
	call()
	for i, pc := range ps {
		at := 0
		for j, v := range pc.dst {
			for at < len(pc.src) && math.Float32bits(pc.src[at]) != math.Float32bits(v) {
				at++
			}
			if at == len(pc.src) {
				return fmt.Errorf("copy loop: piece %d (head %d) float %d of %d is no float of its source after the ones before it", i, i/2, j, len(pc.dst))
			}
			at++
		}
	}
	return nil
}

// copyPieces is the ceiling's call over pieces, a stream a piece.
func copyPieces(t isa.Tier, ps []piece) func() {
	return func() {
		for _, pc := range ps {
			roofline.CopyRead(t, pc.dst, pc.src)
		}
	}
}

// copyPairs is the ceiling's call over pieces, a head's K and V side by
// side (roofline.CopyReadPair), as a store writes them.
func copyPairs(t isa.Tier, ps []piece) func() {
	return func() {
		for i := 0; i+1 < len(ps); i += 2 {
			roofline.CopyReadPair(t, ps[i].dst, ps[i].src, ps[i+1].dst, ps[i+1].src)
		}
	}
}

// rotations is how many positions a cold point cycles through so that a
// store's rows were last written ColdBytes ago (1: warm).
func rotations(w kvcache.Work, opt Options) int {
	if !opt.Cold {
		return 1
	}
	return int(max(2, opt.ColdBytes/max(int64(w.Bytes()), 1)+1))
}

// PlanKVCache expands a grid into points, grouped by store shape.
func PlanKVCache(g KVCacheGrid, opt Options, info machine.Info) (*Plan, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := opt.prepare(info); err != nil {
		return nil, err
	}
	plan := &Plan{Family: "kvcache"}
	status := tierStatus(g.Tiers, kvcache.Tiers(), noKernels("kvcache stores"))
	for _, p := range g.stores() {
		plan.Points = append(plan.Points, kvcachePoints(p, g, opt, status)...)
	}
	describe := func(p Point) string {
		return fmt.Sprintf("%s hd=%d heads=%d ctx=%d tokens=%d kv=%s%s", p.Rec.Kernel, p.Rec.HD, p.Rec.KVH, p.Rec.Ctx, p.Rec.Tokens, p.Rec.KV, layoutCell(&p.Rec))
	}
	if err := plan.finish(opt, describe); err != nil {
		return nil, err
	}
	return plan, nil
}

// stores is every store shape of the grid, in plan order: a store is
// planned when it is asked for, or when only its ceiling is (kernel=kv-copy);
// append writes one token whatever --tokens says.
func (g KVCacheGrid) stores() []kvcache.Params {
	var ps []kvcache.Params
	for _, d := range g.HeadDims {
		for _, hkv := range g.Heads {
			for _, ctx := range g.Ctxs {
				for _, kv := range g.KVs {
					for _, layout := range g.Layouts {
						for _, op := range kvcache.Ops {
							if !slices.Contains(g.Ops, string(op)) && !onlyCeiling(g.Ops) {
								continue
							}
							tokens := g.Tokens
							if op == kvcache.Append {
								tokens = []int{1}
							}
							for _, n := range tokens {
								ps = append(ps, kvcache.Params{Op: op, Hkv: hkv, D: d, KV: kv, Layout: layout, Pos: ctx, Tokens: n})
							}
						}
					}
				}
			}
		}
	}
	return ps
}

// onlyCeiling reports whether ops asks for kv-copy and no store.
func onlyCeiling(ops []string) bool {
	return !slices.ContainsFunc(ops, func(o string) bool { return o != KVCopy })
}

// kvcachePoints are one store shape's points: its kv-copy ceiling (widest
// tier first) when asked for, then the store in every tier.
func kvcachePoints(p kvcache.Params, g KVCacheGrid, opt Options, status map[isa.Tier]isa.Status) []Point {
	w := p.Work()
	rot := rotations(w, opt)
	p.Cap = p.Pos + rot*p.Count()
	cacheBytes := satMul(2, int64(p.Hkv), int64(p.Capacity()), int64(p.KV.RowBytes(p.D)))
	srcBytes := satMul(8, int64(p.Hkv), int64(p.Count()), int64(p.D))
	mem := satAdd(cacheBytes, satMul(srcBytes, int64(rot)))
	ownLines := rot == 1 && piecesFit(p) // the ceiling moves the store's lines (storePieces)
	if !ownLines {
		mem = satAdd(mem, satMul(int64(w.Bytes()), int64(rot))) // the ceiling's data
	}
	grp := &dataGroup{mem: mem, ws: int64(w.Bytes()), alloc: func() any {
		d := &kvcacheData{b: kvcache.Alloc(p)}
		if rot > 1 { // one source per rotation: the cold store's rows come from memory too
			d.b.SrcK, d.b.SrcV = buf.Floats(rot*len(d.b.SrcK)), buf.Floats(rot*len(d.b.SrcV))
		}
		kvcache.FillRandom(d.b, opt.Seed)
		// Warm, the ceiling moves the store's own lines: with data of
		// its own, each switch between the two in their alternation
		// (a sample is one or two calls) evicted the other's, so that
		// at 512 tokens both ran at a third of their speed in L3 and
		// the store read 82–178 % of the ceiling.
		if ownLines {
			d.pieces = storePieces(p, d.b)
			return d
		}
		// The ceiling's data: rot blocks too, cold, so that it comes
		// from the same level as the store it is paired with.
		rd, wr := int(w.Read)/4, int(w.Written)/4
		d.src, d.dst, d.copyN = buf.Floats(rot*rd), buf.Floats(rot*wr), wr
		return d
	}}
	base := results.NewRecord()
	base.Family, base.HD, base.KVH, base.Ctx, base.KV, base.Tokens = "kvcache", p.D, p.Hkv, p.Pos, p.KV.String(), p.Count()
	base.Layout = layoutColumn(p.Layout)
	base.Bytes, base.Traffic, base.Flops = results.Float(w.Bytes()), results.Float(w.Bytes()), 0
	var pts []Point
	if slices.Contains(g.Ops, KVCopy) {
		for i := len(g.Tiers) - 1; i >= 0; i-- {
			pts = append(pts, kvCopyPoint(base, rot, g.Tiers[i], status[g.Tiers[i]], grp))
		}
	}
	if slices.Contains(g.Ops, string(p.Op)) {
		for _, t := range g.Tiers {
			pts = append(pts, storePoint(base, p, rot, t, status[t], grp))
		}
	}
	return pts
}

// kvCopyPoint is the ceiling of a store shape: each call copies, in the
// next of rot blocks (rot = 1 warm: the same block every call), as many
// bytes as the store writes and reads the rest of what it reads; threads
// split both. One thread runs whichever of the two shapes of that copy
// (roofline.CopyRead, one stream; CopyRead2, two halves side by side), in
// tier t's loads and stores or a narrower tier's (roofline.StreamTiers), is
// faster here (see fastest): on Zen 4 (EPYC family 25 model 17) AVX2's
// ymm copy ran 27–29 GB/s from DRAM where AVX-512's zmm one ran 24–26.
// Threads each run tier t's CopyRead on their share.
func kvCopyPoint(base results.Record, rot int, t isa.Tier, st isa.Status, grp *dataGroup) Point {
	rec := base
	rec.Kernel, rec.ISA = KVCopy, string(t)
	pt := Point{Rec: rec, Tier: t, Mem: grp.mem, group: grp, ceiling: true}
	if !st.Runs {
		pt.Skip = st.Reason
	}
	pt.prepare = func(g *dataGroup) (func(), float64, error) {
		d := g.get().(*kvcacheData)
		var call func()
		var err error
		if d.pieces != nil { // a stream a piece, or a head's two side by side: the faster
			call, err = fastestTier(t, 1, func(ct isa.Tier) ([]func(), error) {
				var calls []func()
				for _, shape := range []func(isa.Tier, []piece) func(){copyPieces, copyPairs} {
					call := shape(ct, d.pieces)
					if err := checkPieces(d.pieces, call); err != nil {
						return nil, err
					}
					calls = append(calls, call)
				}
				return calls, nil
			})
		} else {
			buf.FillUniform(d.src, 7, 0.5, 1) // no zero: a zero in dst is a float never written
			call, err = fastestTier(t, rot, func(ct isa.Tier) ([]func(), error) {
				var calls []func()
				for _, cr := range []func(isa.Tier, []float32, []float32) float32{roofline.CopyRead, roofline.CopyRead2} {
					clear(d.dst)
					call := copyShare(ct, d, rot, [2]int{0, d.copyN}, [2]int{d.copyN, len(d.src) / rot}, cr)
					call() // block 0
					if i := slices.Index(d.dst[:d.copyN], 0); i >= 0 {
						return nil, fmt.Errorf("%s copy loop left float %d of %d unwritten", ct, i, d.copyN)
					}
					calls = append(calls, call)
				}
				return calls, nil
			})
		}
		if err != nil {
			return nil, math.NaN(), err
		}
		return call, 0, nil
	}
	// n threads each copy and read their share of both (4 KiB aligned).
	pt.prepareN = func(g *dataGroup, n int) ([]func(), float64, error) {
		d := g.get().(*kvcacheData)
		if d.pieces != nil { // worker w: its block of heads, as the store splits (storeShares)
			if len(d.pieces)/2 < n {
				return nil, 0, errNoSplit(fmt.Sprintf("%d KV heads for %d threads", len(d.pieces)/2, n))
			}
			shares := make([]func(), n)
			for w, r := range splitRange(len(d.pieces)/2, n, 1) {
				shares[w] = copyPieces(t, d.pieces[2*r[0]:2*r[1]])
			}
			return shares, 0, nil
		}
		rd := len(d.src) / rot
		cs, rs := splitRange(d.copyN, n, 1024), splitRange(rd-d.copyN, n, 1024)
		shares := make([]func(), n)
		for w := range shares {
			shares[w] = copyShare(t, d, rot, cs[w], [2]int{d.copyN + rs[w][0], d.copyN + rs[w][1]}, roofline.CopyRead)
		}
		return shares, 0, nil
	}
	return pt
}

// fastest returns the one of calls that takes the least time a call: on
// a shared host, from DRAM, either of the ceiling's two shapes can be the
// faster (Zen 3: two halves side by side 15–30 % faster at an f16 or q8_0
// store's proportions in most runs, one stream as fast or faster for a
// plain copy), so the ceiling is the better of them there and then. Each
// runs whole rotations for at least 2 ms, in turn, five times; its least
// time a call counts. Not the sampler's alternation (MeasurePaired): the
// shapes walk the same blocks, so the second of each pair found the
// first's block in cache, and cold it kept the slower shape (an f16
// batch-copy then read 110–131 % of its ceiling, against 83–96 %).
func fastest(rot int, calls ...func()) func() {
	best := make([]time.Duration, len(calls))
	for range 5 {
		for i, c := range calls {
			n, st := 0, time.Now()
			for n == 0 || time.Since(st) < 2*time.Millisecond {
				for range rot {
					c()
				}
				n += rot
			}
			if d := time.Since(st) / time.Duration(n); best[i] == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	return calls[slices.Index(best, slices.Min(best))]
}

// fastestTier is fastest over the calls build makes for tier t and for the
// narrower tier with loads and stores of its own (roofline.StreamTiers):
// a one-thread ceiling's loop, in whichever tier's loads reads faster
// here. build checks the calls it makes; its first error is returned.
func fastestTier(t isa.Tier, rot int, build func(rt isa.Tier) ([]func(), error)) (func(), error) {
	var calls []func()
	for _, rt := range roofline.StreamTiers(t) {
		cs, err := build(rt)
		if err != nil {
			return nil, err
		}
		calls = append(calls, cs...)
	}
	return fastest(rot, calls...), nil
}

// copyShare copies floats c of one block of src to dst and reads its
// floats r, the next of rot blocks each call: one call of cr (CopyRead or
// CopyRead2) where r follows c (one thread), as a store is one call.
func copyShare(t isa.Tier, d *kvcacheData, rot int, c, r [2]int, cr func(isa.Tier, []float32, []float32) float32) func() {
	rd, i := len(d.src)/rot, 0
	return func() {
		so, do := i*rd, i*d.copyN
		if c[1] == r[0] {
			cr(t, d.dst[do+c[0]:do+c[1]], d.src[so+c[0]:so+r[1]])
		} else {
			roofline.Copy(t, d.dst[do+c[0]:do+c[1]], d.src[so+c[0]:so+c[1]], 1)
			roofline.ReadSum(t, d.src[so+r[0]:so+r[1]])
		}
		if i++; i == rot {
			i = 0
		}
	}
}

func storePoint(base results.Record, p kvcache.Params, rot int, t isa.Tier, st isa.Status, grp *dataGroup) Point {
	rec := base
	rec.Kernel, rec.ISA = string(p.Op), string(t)
	pt := Point{Rec: rec, Tier: t, Mem: grp.mem, group: grp}
	if !st.Runs {
		pt.Skip = st.Reason
	}
	im, _ := kvcache.Lookup(t)
	gen, _ := kvcache.Lookup(isa.Generic)
	pt.prepare = func(g *dataGroup) (func(), float64, error) {
		d := g.get().(*kvcacheData)
		// The gate: the rows this tier writes are, byte for byte, the
		// generic tier's (f16 rounded to nearest even, q8_0 GGML's
		// quantizer), written into a cache of just those positions.
		b := d.b
		if err := p.Check(b); err != nil {
			return nil, math.NaN(), err
		}
		small := p
		small.Pos, small.Cap = 0, p.Count()
		want := kvcache.Alloc(small)
		want.SrcK, want.SrcV = b.SrcK, b.SrcV
		gen.Run(&small, &want)
		im.Run(&p, &b)
		if err := sameRows(p, b, small, want); err != nil {
			return nil, 1, fmt.Errorf("%v, against the generic tier", err)
		}
		// Each call the next of rot positions (and its own source rows):
		// cold, a row was last written ColdBytes of stores ago.
		if rot == 1 { // warm: the same rows every call, nothing to rotate
			return func() { im.Run(&p, &b) }, 0, nil
		}
		src := p.Hkv * p.Count() * p.D
		i := 0
		return func() {
			q := p
			q.Pos = p.Pos + i*p.Count()
			bb := b
			bb.SrcK, bb.SrcV = b.SrcK[i*src:(i+1)*src], b.SrcV[i*src:(i+1)*src]
			im.Run(&q, &bb)
			i++
			if i == rot {
				i = 0
			}
		}, 0, nil
	}
	pt.prepareN = func(g *dataGroup, n int) ([]func(), float64, error) {
		return storeShares(g.get().(*kvcacheData), im, p, rot, n)
	}
	return pt
}

// storeShares splits a store by KV heads: worker w writes its block of
// heads' rows (source rows and cache rows of those heads), cold points
// rotating positions in step. The gate writes every share once and
// checks the rows byte for byte against the generic tier. Position-major
// (a token's heads interleaved), a worker's cache starts at its first
// head's row and its heads are a block of every position's
// (kvcache.Params.PosHeads). Fewer heads than workers have no split.
func storeShares(d *kvcacheData, im kvcache.Impl, p kvcache.Params, rot, n int) ([]func(), float64, error) {
	if p.Hkv < n {
		return nil, 0, errNoSplit(fmt.Sprintf("%d KV heads for %d threads", p.Hkv, n))
	}
	b, cnt, rb := d.b, p.Count(), p.KV.RowBytes(p.D)
	src := p.Hkv * cnt * p.D
	ranges := splitRange(p.Hkv, n, 1)
	// cut is worker w's store of rotation i: its heads' sources and rows.
	cut := func(w, i int) (kvcache.Params, kvcache.Buffers) {
		k0, k1 := ranges[w][0], ranges[w][1]
		q := p
		q.Hkv, q.Pos = k1-k0, p.Pos+i*cnt
		if p.Layout == attention.PosMajor {
			q.PosHeads = p.Hkv
		}
		s := kvcache.Buffers{SrcK: b.SrcK[i*src+k0*cnt*p.D : i*src+k1*cnt*p.D], SrcV: b.SrcV[i*src+k0*cnt*p.D : i*src+k1*cnt*p.D]}
		lo := p.Row(k0, 0)
		hi := lo + q.Row(q.Hkv-1, q.Capacity()-1) + 1 // the block's rows
		if p.KV == attention.F32 {
			s.K, s.V = b.K[lo*p.D:hi*p.D], b.V[lo*p.D:hi*p.D]
		} else {
			s.KEnc, s.VEnc = b.KEnc[lo*rb:hi*rb], b.VEnc[lo*rb:hi*rb]
		}
		return q, s
	}
	gen, _ := kvcache.Lookup(isa.Generic)
	small := p
	small.Pos, small.Cap = 0, cnt
	want := kvcache.Alloc(small)
	want.SrcK, want.SrcV = b.SrcK[:src], b.SrcV[:src]
	gen.Run(&small, &want)
	for w := range ranges {
		q, s := cut(w, 0)
		if err := q.Check(s); err != nil {
			return nil, math.NaN(), err
		}
		im.Run(&q, &s)
	}
	if err := sameRows(p, b, small, want); err != nil {
		return nil, 1, fmt.Errorf("%v, against the generic tier", err)
	}
	shares := make([]func(), n)
	for w := range ranges {
		i := 0
		shares[w] = func() {
			q, s := cut(w, i)
			im.Run(&q, &s)
			if i++; i == rot {
				i = 0
			}
		}
	}
	return shares, 0, nil
}

// sameRows reports the first byte where the rows p wrote into a differ
// from those small (the same store at position 0) wrote into b.
func sameRows(p kvcache.Params, a kvcache.Buffers, small kvcache.Params, b kvcache.Buffers) error {
	rb, d := p.KV.RowBytes(p.D), p.D
	for kh := range p.Hkv {
		for j := range p.Count() {
			ra, rbw := p.Row(kh, p.Pos+j), small.Row(kh, j)
			for _, c := range []struct {
				name string
				x, y []float32
				ex   []byte
				ey   []byte
			}{{"k", a.K, b.K, a.KEnc, b.KEnc}, {"v", a.V, b.V, a.VEnc, b.VEnc}} {
				if p.KV == attention.F32 {
					x, y := c.x[ra*d:(ra+1)*d], c.y[rbw*d:(rbw+1)*d]
					for i := range x {
						if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
							return fmt.Errorf("%s head %d position %d value %d: %v, want %v", c.name, kh, p.Pos+j, i, x[i], y[i])
						}
					}
					continue
				}
				x, y := c.ex[ra*rb:(ra+1)*rb], c.ey[rbw*rb:(rbw+1)*rb]
				for i := range x {
					if x[i] != y[i] {
						return fmt.Errorf("%s head %d position %d byte %d: %#02x, want %#02x", c.name, kh, p.Pos+j, i, x[i], y[i])
					}
				}
			}
		}
	}
	return nil
}

// The kvcache family's adapter.
func init() { Register(kvcacheFamily{}) }

type kvcacheFamily struct{}

func (kvcacheFamily) Name() string { return "kvcache" }

func (kvcacheFamily) Doc() string {
	return "The KV-cache stores a decoded token pays for: append (one token's K and V rows, every KV head, " +
		"at position ctx) and batch-copy (a prefill's tokens from a compact head-major scratch into the " +
		"cache), writing f32, f16 (VCVTPS2PH, round to nearest even) or q8_0 (GGML's quantizer, byte for " +
		"byte), head-major or position-major. All stores are plain (temporal): the row is read by the next " +
		"decode step. kv-copy, a plain copy of the bytes it writes and a read of the rest of what it reads (in one stream or two side by side, " +
		"whichever is faster), is the in-run ceiling behind % read. Every " +
		"point is first checked byte for byte against the generic tier."
}

func (kvcacheFamily) Examples() [][]string {
	return [][]string{
		{"preset=quick"},
		{"kernel=append,kv-copy", "kv=f16", "hd=128", "heads=8", "ctx=4096"},
		{"kernel=batch-copy,kv-copy", "tokens=512,4096", "layout=head,pos", "cold"},
	}
}

func (kvcacheFamily) ColdWhat() string  { return "the positions written and their source rows" }
func (kvcacheFamily) Tiers() []isa.Tier { return FloatTiers }
func (kvcacheFamily) Presets() []string { return []string{"quick", "default", "full"} }
func (kvcacheFamily) BenchKeys() []string {
	return []string{"isa", "kv", "layout", "hd", "kvh", "ctx", "tokens"}
}

func (kvcacheFamily) Params() []Param {
	return []Param{
		{"kernel", "stores: " + strings.Join(KVCacheOps(), ",") + " or all"},
		{"kv", "cache element types: f32, f16, q8_0 (hd a multiple of 32) or all"},
		{"hd", "head dims, e.g. 64,128 (multiples of 16 up to 256)"},
		{"heads", "KV heads, e.g. 8,32"},
		{"tokens", "tokens a batch-copy writes, e.g. 128,2048 (append writes 1)"},
		{"ctx", "the position written (tokens already in the cache), e.g. 4096"},
		{"layout", "cache row orders: head ([kv_head][ctx][hd]), pos ([ctx][kv_head][hd]) or all"},
	}
}

func (kvcacheFamily) Grid(preset string) (Grid, sampler.Config, error) {
	g, sc, err := KVCachePreset(preset)
	return &g, sc, err
}

func (kvcacheFamily) Summary() Summary {
	return Summary{
		Keys: "kernel\tisa\tkv\thd\tkvh\tctx\ttokens",
		Cells: func(r *results.Record) string {
			return fmt.Sprintf("%s\t%s\t%s%s\t%d\t%d\t%d\t%d", r.Kernel, r.ISA, r.KV, layoutCell(r), r.HD, r.KVH, r.Ctx, r.Tokens)
		},
		USFormat: "%.3f",
		Named: func(r *results.Record) string {
			return fmt.Sprintf("%s/%s kv=%s%s hd=%d kvh=%d ctx=%d tokens=%d", r.Kernel, r.ISA, r.KV, layoutCell(r), r.HD, r.KVH, r.Ctx, r.Tokens)
		},
	}
}

func (kvcacheFamily) List(w io.Writer) {
	fmt.Fprintln(w, "family kvcache: the stores into the KV cache (attention's cache: head- or position-major, f32, f16 or q8_0)")
	listTiers(w, kvcache.Tiers(), "no kvcache stores (int8-only tier, or not in this build)")
	read, written := kvcache.WorkFormula()
	fmt.Fprintln(w, "\nstores (per call; plain stores, none non-temporal):")
	for _, o := range kvcache.Ops {
		fmt.Fprintf(w, "  %s\n      read    %s\n      written %s\n", o, read, written)
	}
	fmt.Fprintf(w, "  %s\n      the ceiling: a plain copy of the bytes the store writes and a read of the rest of what it reads, spread over the copy,\n      the tier's loads and stores or a narrower tier's, in one stream or two halves side by side (as K and V),\n      whichever is faster at the point (one thread);\n      warm, over the store's own source rows and the cache rows it writes, a KV head at a time;\n      timed in alternation with every store of the shape: their read_gbs, %% read\n", KVCopy)
	fmt.Fprintln(w, "\ncorrectness gate: the rows a store writes equal, byte for byte, the generic tier's (f16: round to")
	fmt.Fprintln(w, "                  nearest even; q8_0: GGML's reference quantizer); the kernel tests also check that")
	fmt.Fprintln(w, "                  nothing else in the cache changes")
	fmt.Fprintln(w, "cold: each call writes the next of enough positions (with its own source rows) that a row was last")
	fmt.Fprintln(w, "      touched a cache's worth of stores ago")
}

// Set reads one parameter of the kvcache grid.
func (g *KVCacheGrid) Set(param, value string) error {
	var err error
	switch param {
	case "kernel":
		g.Ops, err = ParseList("kernel", value, KVCacheOps(), func(s string) (string, error) {
			if slices.Contains(KVCacheOps(), s) {
				return s, nil
			}
			return "", fmt.Errorf("unknown kvcache store %q (known: %s)", s, strings.Join(KVCacheOps(), ", "))
		})
	case "kv":
		g.KVs, err = ParseList("kv", value, attention.KVTypes, attention.ParseKVType)
	case "hd":
		g.HeadDims, err = ParseInts("hd", value)
	case "heads":
		g.Heads, err = ParseInts("heads", value)
	case "tokens":
		g.Tokens, err = ParseInts("tokens", value)
	case "ctx":
		g.Ctxs, err = ParseInts("ctx", value)
	case "layout":
		g.Layouts, err = ParseList("layout", value, attention.Layouts, attention.ParseLayout)
	default:
		err = paramErrorf(param, "not a parameter of the kvcache family")
	}
	return err
}

// SetTiers sets the tiers to sweep.
func (g *KVCacheGrid) SetTiers(ts []isa.Tier) { g.Tiers = ts }

// Plan is PlanKVCache.
func (g *KVCacheGrid) Plan(opt Options, info machine.Info) (*Plan, error) {
	return PlanKVCache(*g, opt, info)
}

// Config is the grid as machine.json records it.
func (g *KVCacheGrid) Config() map[string]any {
	return map[string]any{"kernels": g.Ops, "isa": g.Tiers, "hd": g.HeadDims, "heads": g.Heads, "tokens": g.Tokens,
		"ctx": g.Ctxs, "kv": g.KVs, "layout": g.Layouts}
}
