package sweeps

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/prefill"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
	"github.com/ckbench/ckbench/sampler"
)

// KVRead is the in-run ceiling of the attention family: a plain
// load-and-sum loop (roofline.ReadSum2; a 64-bit XOR, ReadXor2, for an
// encoded cache) over exactly the K and V bytes of the shape, K and V
// read side by side as the kernels read them, measured with the same
// sampler, in every tier. The fastest
// tier's loop is then timed in alternation with every point of the same
// shape and thread count: their read_gbs and pct_of_read.
const KVRead = "kv-read"

// AttentionKernels lists the kernel names the attention sweep accepts:
// decode's, kv-read, then prefill's.
func AttentionKernels() []string {
	names := []string{}
	for _, k := range attention.Kernels {
		names = append(names, string(k))
	}
	return append(append(names, KVRead), prefillKernels()...)
}

// decodeKernels is AttentionKernels without prefill's: what the presets
// sweep (prefill is named with --kernel; its Tk is --ctx, and a preset's
// long contexts would take minutes a point in the generic tier).
func decodeKernels() []string {
	return slices.DeleteFunc(AttentionKernels(), isPrefill)
}

// AttentionGrid is the parameter grid of `ckbench sweep attention`.
type AttentionGrid struct {
	Kernels  []string
	Tiers    []isa.Tier
	HeadDims []int
	TileKs   []int // 0 = auto
	Ctxs     []int
	Heads    []HeadPair
	Exps     []attention.Exp
	Windows  []int // sliding windows (keys attended to); 0 = none
	Splits   []int // decode-split's chunk counts
	KVs      []attention.KVType
	Layouts  []attention.Layout
	// Prefill's (prefill.go): query rows (Tk is ctx), masks, documents of
	// the doc mask, and prefill-flash's tiles.
	Tqs      []int
	Masks    []prefill.Mask
	Docs     []int
	Brs, Bcs []int
}

// Preset returns a named default grid: quick (about a minute on 2 cores,
// what `make run` does), default, or full.
func Preset(name string) (AttentionGrid, sampler.Config, error) {
	g := AttentionGrid{Kernels: decodeKernels(), Tiers: attention.Tiers(), TileKs: []int{0}, Windows: []int{0}, Splits: []int{4},
		KVs: attention.KVTypes, Layouts: []attention.Layout{attention.HeadMajor},
		Tqs: []int{512}, Masks: []prefill.Mask{prefill.Causal}, Docs: []int{4}, Brs: []int{prefill.DefaultBr}, Bcs: []int{prefill.DefaultBc}}
	var sc sampler.Config
	switch name {
	case "quick":
		// decode-split and the exact exp are left to the larger presets,
		// and f16 is the only encoded cache: make run stays under 3
		// minutes on 2 cores (the generic tier's f16 decode at 32k
		// tokens alone takes seconds a point).
		g.Kernels = slices.DeleteFunc(slices.Clone(g.Kernels), func(k string) bool { return k == string(attention.DecodeSplit) })
		g.HeadDims = []int{128}
		g.Ctxs = []int{1024, 4096, 32768}
		g.Heads = []HeadPair{{1, 1}, {32, 8}}
		g.Exps = []attention.Exp{attention.ExpFast}
		g.KVs = []attention.KVType{attention.F32, attention.F16}
		sc.MinTime = 100e6
		// A point whose call outlasts MinTime/MinSamples is timed until it
		// has MinSamples: the generic tier's decode at 32k tokens (a call
		// of 0.5–2 s) took half of make run at 10. Six is the fewest from
		// which benchmath (compare, benchstat) gives a 95 % interval.
		sc.MinSamples = 6
	case "default":
		g.HeadDims = []int{64, 128, 256}
		g.Ctxs = []int{512, 2048, 8192, 32768}
		g.Heads = []HeadPair{{1, 1}, {32, 8}, {8, 8}}
		g.Exps = []attention.Exp{attention.ExpFast, attention.ExpExact}
	case "full":
		g.HeadDims = []int{64, 96, 128, 256} // multiples of 32: q8_0 takes them all
		// Every axis at once multiplies out: --plan shows about 72,000
		// points, some 4 hours (it was 504,576, 28 h, before the tiles,
		// contexts and head pairs were thinned and decode-split swept
		// its chunks instead of tiles).
		g.TileKs = []int{0, 16, 64, 256}
		g.Ctxs = []int{512, 2048, 8192, 32768, 65536}
		g.Heads = []HeadPair{{1, 1}, {8, 8}, {32, 8}, {64, 8}}
		g.Exps = []attention.Exp{attention.ExpFast, attention.ExpExact}
		g.Windows = []int{0, 4096} // Mistral's sliding window
		g.Layouts = attention.Layouts
		g.Splits = []int{1, 4, 16}
	default:
		return g, sc, fmt.Errorf("unknown preset %q (known: quick, default, full)", name)
	}
	return g, sc, nil
}

// Validate reports the first impossible value in the grid.
func (g AttentionGrid) Validate() error {
	if len(g.Kernels) == 0 || len(g.Tiers) == 0 || len(g.HeadDims) == 0 || len(g.TileKs) == 0 ||
		len(g.Ctxs) == 0 || len(g.Heads) == 0 || len(g.Exps) == 0 || len(g.Windows) == 0 || len(g.Splits) == 0 || len(g.KVs) == 0 || len(g.Layouts) == 0 {
		return fmt.Errorf("empty grid: every parameter needs at least one value")
	}
	for _, k := range g.Kernels {
		if k == KVRead || isPrefill(k) {
			continue
		}
		if _, err := attention.ParseKernel(k); err != nil {
			return paramErrorf("kernel", "%v", err)
		}
	}
	if err := g.validatePrefill(); err != nil {
		return err
	}
	for _, tk := range g.TileKs {
		if err := attention.ValidateTileK(tk); err != nil {
			return paramErrorf("tk", "%v", err)
		}
	}
	for _, t := range g.Ctxs {
		if t > MaxCtx {
			return paramErrorf("ctx", "%d: more than %d tokens", t, MaxCtx)
		}
	}
	for _, n := range g.Splits {
		if n < 1 || n > attention.MaxSplits {
			return paramErrorf("splits", "%d: decode-split takes 1…%d chunks", n, attention.MaxSplits)
		}
	}
	for _, w := range g.Windows {
		if w < 0 || w > MaxCtx {
			return paramErrorf("window", "%d: a window is none or 1…%d keys", w, MaxCtx)
		}
	}
	for _, h := range g.Heads {
		if h.H > MaxHeads || h.Hkv > MaxHeads {
			return paramErrorf("heads", "%s: more than %d heads", h, MaxHeads)
		}
	}
	for _, d := range g.HeadDims {
		for _, kv := range g.KVs {
			if s := (attention.Shape{H: 1, Hkv: 1, D: d, T: 1, KV: kv}); s.Validate() != nil && (attention.Shape{H: 1, Hkv: 1, D: d, T: 1}).Validate() == nil {
				return paramErrorf("kv", "%s and hd %d: %v", kv, d, s.Validate())
			}
		}
		for _, h := range g.Heads {
			for _, t := range g.Ctxs {
				s := attention.Shape{H: h.H, Hkv: h.Hkv, D: d, T: t}
				if err := s.Validate(); err != nil {
					param := "hd"
					switch {
					case t <= 0:
						param = "ctx"
					case h.H%h.Hkv != 0:
						param = "heads"
					}
					return paramErrorf(param, "%v", err)
				}
			}
		}
	}
	return nil
}

// attentionData is the data of one shape: q, K and V (copies for --cold),
// and the float64 reference, computed once on first use.
type attentionData struct {
	rotor
	shape attention.Shape
	bufs  []attention.Buffers // one per cold copy; O and WS are shared and sized for the largest use
	ref   []float64

	kvTotal, kvMag float64 // see kvSum
}

// kvSum returns the float64 sum of the K and V floats the kernels of s
// read (each KV head's window) and the sum of their magnitudes: the
// kv-read gate, once per shape.
func (d *attentionData) kvSum(s attention.Shape) (sum, mag float64) {
	if d.kvMag == 0 {
		b := d.bufs[0]
		for _, x := range [][]float32{b.K, b.V} {
			for _, r := range s.ReadBlocks() {
				for _, v := range x[r[0]*s.D : r[1]*s.D] {
					d.kvTotal += float64(v)
					d.kvMag += math.Abs(float64(v))
				}
			}
		}
	}
	return d.kvTotal, d.kvMag
}

func (d *attentionData) reference() []float64 {
	if d.ref == nil {
		b := d.bufs[0]
		d.ref = attention.Reference(d.shape, b.Q, b.K, b.V)
	}
	return d.ref
}

// PlanAttention expands a grid into points, grouped by shape so that the
// data and the reference are built once per shape.
func PlanAttention(g AttentionGrid, opt Options, info machine.Info) (*Plan, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := opt.prepare(info); err != nil {
		return nil, err
	}
	plan := &Plan{Family: "attention"}
	status := tierStatus(g.Tiers, attention.Tiers(), noKernels("attention kernels"))
	if slices.ContainsFunc(g.Kernels, func(k string) bool { return !isPrefill(k) }) {
		for _, shape := range g.shapes() {
			plan.Points = append(plan.Points, shapePoints(shape, g, opt, status)...)
		}
	}
	pre, err := g.prefillPoints(opt)
	if err != nil {
		return nil, err
	}
	plan.Points = append(plan.Points, pre...)
	describe := func(p Point) string {
		return fmt.Sprintf("%s hd=%d ctx=%s heads=%d:%d kv=%s%s", p.Rec.Kernel, p.Rec.HD, ctxCell(&p.Rec), p.Rec.H, p.Rec.KVH, p.Rec.KV, layoutCell(&p.Rec))
	}
	if err := plan.finish(opt, describe); err != nil {
		return nil, err
	}
	return plan, nil
}

// shapes is every shape of the grid, in plan order.
func (g AttentionGrid) shapes() []attention.Shape {
	var ss []attention.Shape
	for _, d := range g.HeadDims {
		for _, hp := range g.Heads {
			for _, ctx := range g.Ctxs {
				for _, w := range g.Windows {
					for _, kv := range g.KVs {
						for _, layout := range g.Layouts {
							ss = append(ss, attention.Shape{H: hp.H, Hkv: hp.Hkv, D: d, T: ctx, Window: w, KV: kv, Layout: layout})
						}
					}
				}
			}
		}
	}
	return ss
}

// shapePoints are one shape's points, sharing its data: its kv-read
// ceiling (widest tier first: its read rate is the ceiling of the shape),
// then every kernel, tier, exp, tile and split count.
func shapePoints(shape attention.Shape, g AttentionGrid, opt Options, status map[isa.Tier]isa.Status) []Point {
	grp := newAttentionGroup(shape, g, opt)
	base := results.NewRecord()
	base.Family, base.HD, base.Ctx, base.H, base.KVH, base.KV = "attention", shape.D, shape.T, shape.H, shape.Hkv, shape.KV.String()
	base.Window, base.Layout = shape.Window, layoutColumn(shape.Layout)
	var pts []Point
	if slices.Contains(g.Kernels, KVRead) {
		for i := len(g.Tiers) - 1; i >= 0; i-- {
			t := g.Tiers[i]
			pts = append(pts, kvReadPoint(base, shape, t, status[t], grp))
		}
	}
	for _, k := range g.Kernels {
		if k == KVRead || isPrefill(k) {
			continue
		}
		kernel := attention.Kernel(k)
		tks := g.TileKs
		if kernel == attention.DecodeNaive {
			tks = []int{-1} // no tiles
		}
		splits := []int{0}
		if kernel == attention.DecodeSplit {
			// Its axis is the chunk count: the tile sweep is
			// decode-flash's, and multiplied by the splits it made
			// --preset full a day long.
			splits, tks = g.Splits, []int{0}
		}
		for _, t := range g.Tiers {
			for _, e := range g.Exps {
				for _, tk := range tks {
					for _, sp := range splits {
						p := attention.Params{Kernel: kernel, Shape: shape, TileK: max(tk, 0), Exp: e, Splits: sp}
						pts = append(pts, decodePoint(base, p, tk < 0, t, status[t], grp))
					}
				}
			}
		}
	}
	return pts
}

// layoutColumn is the layout column of a record: empty for head-major (the
// default: names of head-major points stay as they were), else its name.
func layoutColumn(l attention.Layout) string {
	if l == attention.HeadMajor {
		return ""
	}
	return l.String()
}

// newAttentionGroup sizes and lazily builds the data of one shape: the
// cache (K and V, in its element type) once per --cold copy, and for an
// f16 or q8_0 cache the float32 K and V of its values once (the
// reference's).
func newAttentionGroup(shape attention.Shape, g AttentionGrid, opt Options) *dataGroup {
	kvFloats := satMul(int64(shape.Hkv), int64(shape.T), int64(shape.D))
	cacheBytes := satMul(2, int64(shape.Hkv), int64(shape.T), int64(shape.KV.RowBytes(shape.D))) // K and V
	copies := int64(1)
	if opt.Cold {
		copies = max(2, opt.ColdBytes/cacheBytes+1)
	}
	ws := int64(0)
	for _, tk := range append(g.TileKs, -1) {
		for _, k := range attention.Kernels {
			for _, sp := range append(g.Splits, 0) {
				p := attention.Params{Kernel: k, Shape: shape, TileK: max(tk, 0), Splits: sp}
				ws = max(ws, int64(p.WorkspaceLen()))
			}
		}
	}
	hd := int64(shape.H) * int64(shape.D)
	floats := int64(0) // the f32 K and V of an encoded cache
	if shape.KV != attention.F32 {
		floats = satMul(8, kvFloats)
	}
	mem := satAdd(satMul(cacheBytes, copies), floats, 8*hd, 4*ws, 8*(hd+int64(shape.T)))
	seed := opt.Seed
	return &dataGroup{mem: mem, ws: cacheBytes, copies: int(copies), alloc: func() any {
		d := &attentionData{shape: shape}
		p := attention.Params{Kernel: attention.DecodeNaive, Shape: shape}
		first := attention.Alloc(p)
		first.WS = make([]float32, ws)
		attention.FillRandom(first, seed)
		if err := attention.Encode(shape, first); err != nil {
			panic(err) // Alloc sized the buffers for shape
		}
		d.bufs = append(d.bufs, first)
		for range copies - 1 {
			c := first
			if shape.KV == attention.F32 {
				c.K, c.V = buf.Floats(len(first.K)), buf.Floats(len(first.V))
				copy(c.K, first.K)
				copy(c.V, first.V)
			} else {
				c.KEnc, c.VEnc = buf.Bytes(len(first.KEnc)), buf.Bytes(len(first.VEnc))
				copy(c.KEnc, first.KEnc)
				copy(c.VEnc, first.VEnc)
			}
			d.bufs = append(d.bufs, c)
		}
		return d
	}}
}

// rotate returns a call that runs f on the next buffer set each time
// (--cold: each call's data was last touched len(bufs)-1 calls ago). The
// index of the next set is *next, shared by every call one worker makes on
// the group's data (see rotor).
func rotate[B any](bufs []B, next *int, f func(B)) func() {
	if len(bufs) == 1 {
		b := bufs[0]
		return func() { f(b) }
	}
	return func() {
		f(bufs[*next])
		if *next++; *next >= len(bufs) {
			*next = 0
		}
	}
}

// rotor holds, per worker, the index of the next cold copy of a group's
// data. A point and the read loop timed in alternation with it (see
// sampler.MeasurePaired) share it, so consecutive calls take consecutive
// copies: with a counter each, the kernel would read the very copy the
// read loop had just brought into the caches, and a cache of a few MiB
// would come out warm (an f16 decode read 143 % of the read loop's rate).
type rotor struct{ next []*int }

// at returns worker w's counter (the one thread of a 1-thread point is 0).
func (r *rotor) at(w int) *int {
	for len(r.next) <= w {
		r.next = append(r.next, new(int))
	}
	return r.next[w]
}

func decodePoint(base results.Record, p attention.Params, noTile bool, t isa.Tier, st isa.Status, grp *dataGroup) Point {
	rec := base
	rec.Kernel, rec.ISA, rec.Exp, rec.Splits = string(p.Kernel), string(t), p.Exp.String(), p.Splits
	im, _ := attention.Lookup(t)
	switch {
	case noTile:
		rec.TK, rec.TKEff = "none", 0
	case p.TileK == 0:
		rec.TK, rec.TKEff = "auto", im.Tile(p)
	default:
		rec.TK, rec.TKEff = strconv.Itoa(p.TileK), p.TileK
	}
	w := p.Work()
	rec.Flops, rec.Bytes, rec.Traffic = results.Float(w.Flops), results.Float(w.Bytes), results.Float(w.Traffic)
	rec.AI = results.Float(w.AI())
	pt := Point{Rec: rec, Tier: t, Mem: grp.mem, group: grp}
	if !st.Runs {
		pt.Skip = st.Reason
	}
	pt.prepare = func(g *dataGroup) (func(), float64, error) {
		d := g.get().(*attentionData)
		b := d.bufs[0]
		if err := p.Check(b); err != nil {
			return nil, math.NaN(), err
		}
		poison(b.O) // the kernel must write every output
		im.Run(p, b)
		relErr, err := referenceGate(b.O, d.reference(), p.D, attention.GateTolerance(p.Exp, p.T))
		if err != nil {
			return nil, relErr, err
		}
		return rotate(d.bufs, d.at(0), func(b attention.Buffers) { im.Run(p, b) }), relErr, nil
	}
	pt.prepareN = func(g *dataGroup, n int) ([]func(), float64, error) {
		return decodeShares(g.get().(*attentionData), im, p, n)
	}
	return pt
}

// decodeShares splits a decode call by KV heads: worker w runs the kernel
// on its block of KV heads and the query heads that read them (q, o, K
// and V of those heads, a workspace of its own), so each KV head is still
// read once per group. The gate runs the shares one after the other and
// checks the whole output. A position-major cache is cut the same way:
// a worker's first head's rows on, its block of heads every Hkv rows
// (attention.Shape.PosHeads). decode-split, and decode with fewer KV heads
// than workers, split the keys instead (splitKVShares).
func decodeShares(d *attentionData, im attention.Impl, p attention.Params, n int) ([]func(), float64, error) {
	if p.Kernel == attention.DecodeSplit || p.Hkv < n {
		return splitKVShares(d, im, p, n)
	}
	g, d0 := p.Group(), p.D
	rb := p.KV.RowBytes(p.D)
	ranges := splitRange(p.Hkv, n, 1)
	type share struct {
		p  attention.Params
		ws []float32
	}
	parts := make([]share, n)
	for w, r := range ranges {
		q := p
		q.Hkv, q.H = r[1]-r[0], (r[1]-r[0])*g
		if p.Layout == attention.PosMajor {
			q.PosHeads = p.Hkv
		}
		parts[w] = share{q, make([]float32, q.WorkspaceLen())}
	}
	cut := func(b attention.Buffers, w int) attention.Buffers {
		k0, k1 := ranges[w][0], ranges[w][1]
		s := attention.Buffers{Q: b.Q[k0*g*d0 : k1*g*d0], O: b.O[k0*g*d0 : k1*g*d0], WS: parts[w].ws}
		lo, hi := p.Row(k0, 0), p.Row(k0, 0)+parts[w].p.CacheRows() // the block's rows
		if p.KV == attention.F32 {
			s.K, s.V = b.K[lo*d0:hi*d0], b.V[lo*d0:hi*d0]
		} else {
			s.KEnc, s.VEnc = b.KEnc[lo*rb:hi*rb], b.VEnc[lo*rb:hi*rb]
		}
		return s
	}
	b := d.bufs[0]
	poison(b.O)
	for w := range parts {
		s := cut(b, w)
		if err := parts[w].p.Check(s); err != nil {
			return nil, math.NaN(), err
		}
		im.Run(parts[w].p, s)
	}
	relErr, err := referenceGate(b.O, d.reference(), p.D, attention.GateTolerance(p.Exp, p.T))
	if err != nil {
		return nil, relErr, err
	}
	shares := make([]func(), n)
	for w := range parts {
		cuts := make([]attention.Buffers, len(d.bufs))
		for i, b := range d.bufs {
			cuts[i] = cut(b, w)
		}
		shares[w] = rotate(cuts, d.at(w), func(s attention.Buffers) { im.Run(parts[w].p, s) })
	}
	return shares, relErr, nil
}

// splitKVShares splits a decode call by keys (long-context decode): worker w
// runs the kernel over its range of the keys of every head (a window of the
// cache; decode-split shares its chunks out), writing a partial output and
// its LSE; after a barrier worker 0 merges the partials by LSE into o
// (attention.MergeLSE). Partials are double-buffered by call parity: a
// worker may start the next call while worker 0 merges this one, and
// cannot start the one after before worker 0 reaches the next barrier. The
// merge is not bit-identical to one thread's output (other sums of other
// chunks): the gate holds it to the same tolerance.
func splitKVShares(d *attentionData, im attention.Impl, p attention.Params, n int) ([]func(), float64, error) {
	keys, first := p.Keys(), p.First()
	if keys < n {
		return nil, 0, errNoSplit(fmt.Sprintf("%d keys for %d threads", keys, n))
	}
	hd, stride := p.H*p.D, attention.LSEStride(p.H)
	var parts, lses [2][]float32
	for par := range 2 {
		parts[par], lses[par] = make([]float32, n*hd), make([]float32, n*stride)
	}
	type work struct {
		p  attention.Params
		ws []float32
	}
	ranges := splitRange(keys, n, 1)
	works := make([]work, n)
	for w, r := range ranges {
		q := p
		q.T, q.Window, q.Cap = first+r[1], r[1]-r[0], p.Capacity()
		if p.Kernel == attention.DecodeSplit {
			q.Splits = max(1, p.SplitCount()/n)
		}
		works[w] = work{q, make([]float32, q.WorkspaceLen())}
	}
	// run computes worker w's partial of call parity par on the data of b.
	run := func(w, par int, b attention.Buffers) {
		b.O, b.LSE, b.WS = parts[par][w*hd:(w+1)*hd], lses[par][w*stride:w*stride+p.H], works[w].ws
		im.Run(works[w].p, b)
	}
	merge := func(par int, o []float32) { attention.MergeLSE(o, nil, parts[par], lses[par], n, p.H, p.D) }
	b := d.bufs[0]
	poison(b.O)
	for w := range works {
		if err := works[w].p.Check(attention.Buffers{Q: b.Q, K: b.K, V: b.V, KEnc: b.KEnc, VEnc: b.VEnc,
			O: parts[0][w*hd : (w+1)*hd], LSE: lses[0][w*stride : w*stride+p.H], WS: works[w].ws}); err != nil {
			return nil, math.NaN(), err
		}
		run(w, 0, b)
	}
	merge(0, b.O[:hd])
	relErr, err := referenceGate(b.O, d.reference(), p.D, attention.GateTolerance(p.Exp, p.T))
	if err != nil {
		return nil, relErr, err
	}
	bar := newSpinBarrier(n)
	shares := make([]func(), n)
	for w := range works {
		call := 0
		shares[w] = rotate(d.bufs, d.at(w), func(b attention.Buffers) {
			par := call & 1
			call++
			run(w, par, b)
			bar.wait()
			if w == 0 {
				merge(par, b.O[:hd])
			}
		})
	}
	return shares, relErr, nil
}

//lint:ignore U1000 written, never read: it keeps the loop's result observable, so the compiler cannot drop the loop
var readSink float32 // keeps the read loop's result observable

func kvReadPoint(base results.Record, shape attention.Shape, t isa.Tier, st isa.Status, grp *dataGroup) Point {
	rec := base
	rec.Kernel, rec.ISA, rec.Exp, rec.TK = KVRead, string(t), "none", "none"
	kvBytes := float64(2 * shape.Hkv * shape.Keys() * shape.KV.RowBytes(shape.D))
	rec.Flops, rec.Bytes, rec.Traffic, rec.AI = 0, results.Float(kvBytes), results.Float(kvBytes), 0
	pt := Point{Rec: rec, Tier: t, Mem: grp.mem, group: grp}
	if !st.Runs {
		pt.Skip = st.Reason
	}
	// The rows the kernels read: each KV head's window (all T rows
	// without one), each once (ReadBlocks: one block position-major), a
	// block of K and the same of V read side by side, as the kernels do:
	// two streams read faster than one, from DRAM by a quarter to a
	// third (Zen 3, one thread: 14–16 GB/s against 11–13 for K then V;
	// in L3 14 % faster, in L1 and L2 alike), and f16 decode-flash had
	// read 106–112 % of K then V.
	// The blocks are computed once: the timed loops only walk them. One
	// thread reads with tier t's loads or a narrower tier's, the faster
	// here (roofline.StreamTiers, fastest): on Zen 4 (EPYC family 25 model
	// 17) the ymm loop read 268 MB from DRAM in 9.1–9.5 ms where the zmm
	// one took 10.4–11.0, and a ceiling held to the slower loop is none.
	// Threads each read with tier t's.
	blocks := shape.ReadBlocks()
	read := func(t isa.Tier, k, v []float32, blocks [][2]int) (s float32) {
		for _, r := range blocks {
			s += roofline.ReadSum2(t, k[r[0]*shape.D:r[1]*shape.D], v[r[0]*shape.D:r[1]*shape.D])
		}
		return s
	}
	if shape.KV != attention.F32 {
		// An encoded cache is read as bytes: an XOR of 64-bit words
		// (the quant family's read loop), checked against the generic one.
		rb := shape.KV.RowBytes(shape.D)
		xor := func(t isa.Tier, b attention.Buffers, blocks [][2]int) (x uint64) {
			for _, r := range blocks {
				x ^= roofline.ReadXor2(t, b.KEnc[r[0]*rb:r[1]*rb], b.VEnc[r[0]*rb:r[1]*rb])
			}
			return x
		}
		pt.prepare = func(g *dataGroup) (func(), float64, error) {
			d := g.get().(*attentionData)
			want := xor(isa.Generic, d.bufs[0], blocks)
			call, err := fastestTier(t, len(d.bufs), func(rt isa.Tier) ([]func(), error) {
				if got := xor(rt, d.bufs[0], blocks); got != want {
					return nil, fmt.Errorf("%s read loop XOR %#x, want %#x", rt, got, want)
				}
				return []func(){rotate(d.bufs, d.at(0), func(b attention.Buffers) { xorSink ^= xor(rt, b, blocks) })}, nil
			})
			if err != nil {
				return nil, math.NaN(), err
			}
			return call, 0, nil
		}
		pt.prepareN = func(g *dataGroup, n int) ([]func(), float64, error) {
			d := g.get().(*attentionData)
			shares := make([]func(), n)
			for w, mine := range splitBlocks(blocks, n) {
				var sink uint64 // the worker's own: no two threads write one word
				shares[w] = rotate(d.bufs, d.at(w), func(b attention.Buffers) { sink ^= xor(t, b, mine) })
			}
			return shares, 0, nil
		}
		pt.ceiling = true
		return pt
	}
	pt.prepare = func(g *dataGroup) (func(), float64, error) {
		d := g.get().(*attentionData)
		b := d.bufs[0]
		want, mag := d.kvSum(shape)
		var relErr float64
		call, err := fastestTier(t, len(d.bufs), func(rt isa.Tier) ([]func(), error) {
			got := float64(read(rt, b.K, b.V, blocks))
			relErr = max(relErr, math.Abs(got-want)/mag)
			if !(relErr <= 1e-3) {
				return nil, fmt.Errorf("%s read loop sum off by %.3g of Σ|x|", rt, relErr)
			}
			return []func(){rotate(d.bufs, d.at(0), func(b attention.Buffers) { readSink += read(rt, b.K, b.V, blocks) })}, nil
		})
		return call, relErr, err
	}
	pt.prepareN = func(g *dataGroup, n int) ([]func(), float64, error) {
		d := g.get().(*attentionData)
		shares := make([]func(), n)
		for w, mine := range splitBlocks(blocks, n) {
			var sink float32 // the worker's own: no two threads write one word
			shares[w] = rotate(d.bufs, d.at(w), func(b attention.Buffers) { sink += read(t, b.K, b.V, mine) })
		}
		return shares, 0, nil
	}
	pt.ceiling = true
	return pt
}

// The attention family's adapter: how the runner, the results and a front
// end see it.
func init() { Register(attentionFamily{}) }

type attentionFamily struct{}

func (attentionFamily) Name() string { return "attention" }

func (attentionFamily) Doc() string {
	return "Decode attention over a KV cache of f32, f16 or q8_0, head- or position-major: flash decode with an online softmax (decode-flash; " +
		"decode-flash-gqa applies each KV tile to every query head of its group), the materialized 3-pass " +
		"decode (decode-naive), and kv-read, a plain read of the same K and V bytes (side by side): the in-run ceiling " +
		"behind % read. Prefill, when --kernel names it, over --tq query rows at the last of ctx positions: " +
		"prefill-materialized (CKE: a head's [tq][ctx] scores, the causal 3-pass softmax, then P·V) and " +
		"prefill-flash (FlashAttention-2: --br × --bc tiles, an online softmax per row, tiles no row sees " +
		"skipped, only tiles across the mask's boundary masked, a K/V tile shared by the query heads of its " +
		"group), masks causal, none or doc (--docs documents, causal within each); its FLOPs count only the " +
		"keys each row sees (dense_flops: all of them). Every point is first checked against a float64 reference."
}

func (attentionFamily) Examples() [][]string {
	return [][]string{
		{"preset=quick"},
		{"kernel=decode-flash,kv-read", "hd=128", "ctx=4096,32768", "heads=1:1", "exp=fast"},
		{"heads=32:8", "ctx=32768", "cold"},
		{"kernel=decode-flash,kv-read", "kv=f16,q8_0", "hd=128", "heads=1:1", "ctx=4096"},
		{"kernel=decode-flash-gqa,kv-read", "layout=head,pos", "heads=32:8", "ctx=32768", "cold"},
		{"kernel=prefill-flash,prefill-materialized", "isa=avx2,avx512", "hd=128", "heads=8:8", "tq=2048", "ctx=2048"},
		{"kernel=prefill-flash", "mask=causal,doc", "docs=1,4,64", "tq=1024", "ctx=1024", "br=32,64", "bc=64,128"},
	}
}

func (attentionFamily) ColdWhat() string  { return "the KV cache" }
func (attentionFamily) Tiers() []isa.Tier { return FloatTiers }
func (attentionFamily) Presets() []string { return []string{"quick", "default", "full"} }

// BenchKeys: window, splits, tq and mask only appear in a name when the
// point has them (decode's names are unchanged by prefill's keys).
func (attentionFamily) BenchKeys() []string {
	return []string{"isa", "exp", "hd", "tk", "tq", "ctx", "h", "kvh", "kv", "layout", "window", "splits", "mask"}
}

func (attentionFamily) Params() []Param {
	return []Param{
		{"kernel", "kernels: " + strings.Join(AttentionKernels(), ",") + " or all"},
		{"hd", "head dims, e.g. 64,128 (multiples of 16 up to 256)"},
		{"tk", "tile_k: auto or 1…256, e.g. auto,16,64"},
		{"ctx", "context lengths (KV tokens), e.g. 4096 or 512..65536x2"},
		{"heads", "H:Hkv pairs, e.g. 16:8,32:8,8:8"},
		{"exp", "exp variants: fast,exact or all"},
		{"window", "sliding windows: none or a number of keys, e.g. none,4096 (the last W keys are attended to and read)"},
		{"splits", "decode-split's chunks of the keys, merged by log-sum-exp: 1…64, e.g. 2,8"},
		{"kv", "KV cache element types: f32, f16 (widened in registers), q8_0 (GGML blocks along D, hd a multiple of 32; Q·K an int8 dot) or all"},
		{"layout", "KV cache row orders: head ([kv_head][ctx][hd], a head's keys contiguous), pos ([ctx][kv_head][hd]) or all"},
		{"tq", "prefill's query rows (the last of ctx positions), e.g. 512,2048"},
		{"mask", "prefill's masks: causal, none, doc or all"},
		{"docs", "documents of prefill's doc mask (ctx/docs positions each), e.g. 1,4,64"},
		{"br", "prefill-flash's query tile rows, e.g. 32,64"},
		{"bc", "prefill-flash's key tile columns, e.g. 64,128"},
	}
}

func (attentionFamily) Grid(preset string) (Grid, sampler.Config, error) {
	g, sc, err := Preset(preset)
	return &g, sc, err
}

func (attentionFamily) Summary() Summary {
	return Summary{
		Keys: "kernel\tisa\tkv\texp\thd\ttk\tctx\th:kvh",
		Cells: func(r *results.Record) string {
			return fmt.Sprintf("%s\t%s\t%s%s\t%s\t%d\t%s\t%s\t%d:%d", kernelCell(r), r.ISA, r.KV, layoutCell(r), r.Exp, r.HD, r.TK, ctxCell(r), r.H, r.KVH)
		},
		USFormat: "%.2f",
		Named: func(r *results.Record) string {
			return fmt.Sprintf("%s/%s kv=%s%s exp=%s hd=%d tk=%s ctx=%s h:kvh=%d:%d", kernelCell(r), r.ISA, r.KV, layoutCell(r), r.Exp, r.HD, r.TK, ctxCell(r), r.H, r.KVH)
		},
	}
}

// kernelCell is the kernel of a point, with decode-split's chunk count:
// decode-split×4.
func kernelCell(r *results.Record) string {
	if r.Splits > 0 {
		return fmt.Sprintf("%s×%d", r.Kernel, r.Splits)
	}
	return r.Kernel
}

// layoutCell marks a position-major cache beside its KV type: f16/pos.
func layoutCell(r *results.Record) string {
	if r.Layout != "" {
		return "/" + r.Layout
	}
	return ""
}

// ctxCell is the context of a point, with its window when it has one:
// 32768 or 32768/w4096; a prefill point's query rows and mask:
// 512×2048/causal.
func ctxCell(r *results.Record) string {
	if r.Tq > 0 {
		return fmt.Sprintf("%d×%d/%s", r.Tq, r.Ctx, r.Mask)
	}
	if r.Window > 0 {
		return fmt.Sprintf("%d/w%d", r.Ctx, r.Window)
	}
	return strconv.Itoa(r.Ctx)
}

// groupShape says how tier t takes a GQA group's query heads on this CPU
// ("" for a tier with one way only).
func groupShape(t isa.Tier) string {
	s := groupSets(t)
	if attention.SmallTileGroups(t) {
		s += fmt.Sprintf("; f32 head-major groups of 2 to 7 with at most %d bytes of K a tile: AVX2's kernel (avx2's pairs, faster from DRAM here)", attention.SmallTileBytes)
	}
	if t == isa.AVX2 && attention.SoftmaxStepPairs(t) {
		s += " (f32 head-major: each pair's softmax begins the next tile's K, faster from DRAM here)"
	}
	if attention.L1Prefetch(t) {
		s += " (head-major f32 and f16: prefetch into L1, faster here)"
	}
	return s
}

// groupSets is groupShape's head sets.
func groupSets(t isa.Tier) string {
	wide := attention.WideGroups(t)
	switch {
	case t == isa.AVX512 && wide:
		return "wide sets: eight query heads at a time (f16; f32 head-major in groups of 8 to 15), each K and V vector widened once for all, then four; prefetch paced to the reads, a far L2 stream beside"
	case t == isa.AVX512:
		return "four query heads at a time, then pairs"
	case t == isa.AVX2 && wide:
		return "wide sets: f16 four query heads at a time, each K and V vector widened once for all, then pairs; f32 pairs"
	case t == isa.AVX2:
		return "pairs"
	}
	return ""
}

func (attentionFamily) List(w io.Writer) {
	fmt.Fprintln(w, "family attention: decode over a KV cache k[kv_head][T][D] (head-major) or k[T][kv_head][D] (pos), of f32, f16 or q8_0; q[H][D]")
	listTiers(w, attention.Tiers(), "no attention kernels (int8-only tier, or not in this build)")
	fmt.Fprintln(w, "\nkernels (per call; e = bytes per KV value: 4 f32, 2 f16, 34/32 q8_0):")
	for _, k := range attention.Kernels {
		flops, bytes, traffic := attention.WorkFormula(k)
		fmt.Fprintf(w, "  %s\n      FLOPs   %s\n      bytes   %s\n      traffic %s\n", k, flops, bytes, traffic)
	}
	lone := "phases: a tile's scores, softmax and P·V in turn, prefetching a tile ahead (the pipelined path, where a tier has one, runs on AMD CPUs only: faster on Zen 5, slower from DRAM on an Intel Xeon)"
	if attention.LonePipelined() {
		lone = "pipelined: the next tile's scores beside this tile's P·V, four keys at a time (head-major AVX-512 f16 and AVX2 f32; the others take the phases)"
	}
	if attention.Q8LoneNarrow(isa.AVX512) {
		lone += "; over a head-major q8_0 cache the avx512 tier runs avx2's kernel (faster here)"
	}
	if attention.L1Prefetch(isa.AVX2) {
		lone += "; avx2's head-major f16 phases prefetch into L1 (faster here)"
	}
	fmt.Fprintf(w, "  a lone head (decode-flash, groups of one) on this CPU: %s\n", lone)
	fmt.Fprintln(w, "  a GQA group (decode-flash-gqa, decode-split) on this CPU (the wide sets where they were measured faster):")
	for _, t := range attention.Tiers() {
		if g := groupShape(t); g != "" {
			fmt.Fprintf(w, "      %s: %s\n", t, g)
		}
	}
	fmt.Fprintf(w, "  %s\n      the ceiling: a plain load-and-sum loop (a 64-bit XOR for f16 and q8_0) over the same K and V bytes, K and V side by side,\n      the tier's loads or a narrower tier's, whichever is faster here (one thread)\n      bytes   2·Hkv·T·D·e; timed in alternation with every point of the shape: their read_gbs, %% read\n", KVRead)
	fmt.Fprintln(w, "  prefill-materialized, prefill-flash (Tq = --tq query rows at the last of T = ctx positions; f32 K and V;")
	fmt.Fprintln(w, "  named with --kernel, never by a preset; n = Σ over query rows of the keys each sees)")
	fmt.Fprintln(w, "      FLOPs   4·H·D·n (dense_flops 4·H·Tq·T·D); exps H·n")
	fmt.Fprintln(w, "      bytes   8·H·Tq·D + 8·Hkv·T·D (q, o; K and V once)")
	fmt.Fprintln(w, "      traffic materialized: + the score matrix written, its softmax passes, P read by P·V")
	fmt.Fprintln(w, "              flash: K and V tiles re-read once per query tile of each KV head's group")
	listTiers(w, prefill.Tiers(), "no prefill kernels (int8-only tier, or not in this build)")
	fmt.Fprintf(w, "\nparameters: hd a multiple of %d up to %d; tk auto (CKE: 32 for D≤64, 16 for D≤128, else 8;\n            f16 a head a pass: 64 for D≤64, 32 for D≤128; q8_0 for 64<D≤128: 128 a head a pass,\n            32 a group) or %d…%d;\n",
		attention.HeadDimMultiple, attention.MaxHeadDim, attention.MinTileK, attention.MaxTileK)
	fmt.Fprintln(w, "            heads H:Hkv with H a multiple of Hkv; exp exact (≤ 2 ulp) or fast (CKE polynomial, ~1e-4);")
	fmt.Fprintln(w, "            window: the last W of the T keys are attended to and read (T becomes min(W, T) above);")
	fmt.Fprintln(w, "            kv: f16 is widened in registers (VCVTPH2PS); q8_0 is GGML's blocks of 32 along D, byte-exact")
	fmt.Fprintln(w, "            with its quantizer: Q·K an int8 dot against the query quantized to q8_0 (as GGML), V")
	fmt.Fprintln(w, "            dequantized in registers; the reference takes that quantized query")
	fmt.Fprintf(w, "correctness gate: max relative error vs a float64 reference ≤ %.0e (exact), ≤ %.0e (fast);\n",
		attention.Tolerance(attention.ExpExact), attention.Tolerance(attention.ExpFast))
	fmt.Fprintln(w, "                  beyond ~16k keys at least √T·2⁻²⁴, the expected error of float32 accumulation")
}

// Set reads one parameter of the attention grid.
func (g *AttentionGrid) Set(param, value string) error {
	var err error
	switch param {
	case "kernel":
		g.Kernels, err = ParseList("kernel", value, AttentionKernels(), func(s string) (string, error) {
			if slices.Contains(AttentionKernels(), s) {
				return s, nil
			}
			return "", fmt.Errorf("unknown attention kernel %q (known: %s)", s, strings.Join(AttentionKernels(), ", "))
		})
	case "hd":
		g.HeadDims, err = ParseInts("hd", value)
	case "ctx":
		g.Ctxs, err = ParseInts("ctx", value)
	case "tk":
		g.TileKs, err = ParseTileKs(value)
	case "heads":
		g.Heads, err = ParseHeads(value)
	case "exp":
		g.Exps, err = ParseList("exp", value, []attention.Exp{attention.ExpFast, attention.ExpExact}, attention.ParseExp)
	case "splits":
		g.Splits, err = ParseInts("splits", value)
	case "kv":
		g.KVs, err = ParseList("kv", value, attention.KVTypes, attention.ParseKVType)
	case "layout":
		g.Layouts, err = ParseList("layout", value, attention.Layouts, attention.ParseLayout)
	case "tq":
		g.Tqs, err = ParseInts("tq", value)
	case "mask":
		g.Masks, err = ParseList("mask", value, prefill.Masks, prefill.ParseMask)
	case "docs":
		g.Docs, err = ParseInts("docs", value)
	case "br":
		g.Brs, err = ParseInts("br", value)
	case "bc":
		g.Bcs, err = ParseInts("bc", value)
	case "window":
		g.Windows, err = ParseList("window", value, nil, func(s string) (int, error) {
			if s == "none" {
				return 0, nil
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("%q is neither none nor a positive number of keys", s)
			}
			return n, nil
		})
	default:
		err = paramErrorf(param, "not a parameter of the attention family")
	}
	return err
}

// SetTiers sets the tiers to sweep.
func (g *AttentionGrid) SetTiers(ts []isa.Tier) { g.Tiers = ts }

// Plan is PlanAttention.
func (g *AttentionGrid) Plan(opt Options, info machine.Info) (*Plan, error) {
	return PlanAttention(*g, opt, info)
}

// Config is the grid as machine.json records it (tk: auto for 0).
func (g *AttentionGrid) Config() map[string]any {
	tks := make([]string, len(g.TileKs))
	for i, tk := range g.TileKs {
		tks[i] = strconv.Itoa(tk)
		if tk == 0 {
			tks[i] = "auto"
		}
	}
	return map[string]any{"kernels": g.Kernels, "isa": g.Tiers, "hd": g.HeadDims, "tk": tks,
		"ctx": g.Ctxs, "heads": g.Heads, "exp": g.Exps, "window": g.Windows, "splits": g.Splits, "kv": g.KVs, "layout": g.Layouts,
		"tq": g.Tqs, "mask": g.Masks, "docs": g.Docs, "br": g.Brs, "bc": g.Bcs}
}

// referenceGate holds o against the float64 reference want (rows of n
// values) to tol: the max relative error, and an error when it is above
// tol (or NaN).
func referenceGate(o []float32, want []float64, n int, tol float64) (float64, error) {
	relErr := attention.MaxRelErr(o, want, n)
	if !(relErr <= tol) {
		return relErr, fmt.Errorf("max rel err %.3g exceeds %.2g against the float64 reference", relErr, tol)
	}
	return relErr, nil
}

// poison fills an output with NaN before a gate: the kernel must write
// every element.
func poison(o []float32) {
	for i := range o {
		o[i] = float32(math.NaN())
	}
}
