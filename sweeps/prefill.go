package sweeps

import (
	"fmt"
	"math"
	"slices"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/prefill"
	"github.com/ckbench/ckbench/results"
)

// The prefill half of the attention family: prefill-materialized and
// prefill-flash over Tq query rows (--tq) and Tk = ctx keys, planned when
// the kernel list names them. They read f32 K and V, head-major, without a
// window; --kv, --layout, --window, --tk and --splits are decode's.

// prefillKernels lists the prefill kernels' names.
func prefillKernels() []string {
	names := make([]string, len(prefill.Kernels))
	for i, k := range prefill.Kernels {
		names[i] = string(k)
	}
	return names
}

// isPrefill reports whether k names a prefill kernel.
func isPrefill(k string) bool { return slices.Contains(prefillKernels(), k) }

// validatePrefill reports the first impossible prefill value in g (the
// lists must not be empty only when a prefill kernel is asked for).
func (g AttentionGrid) validatePrefill() error {
	for _, c := range []struct {
		param string
		xs    []int
		hi    int
		what  string
	}{
		{"tq", g.Tqs, prefill.MaxT, "query rows"},
		{"br", g.Brs, prefill.MaxTile, "query tile rows"}, {"bc", g.Bcs, prefill.MaxTile, "key tile columns"},
		{"docs", g.Docs, prefill.MaxT, "documents"},
	} {
		for _, n := range c.xs {
			if n < 1 || n > c.hi {
				return paramErrorf(c.param, "%d: %s are 1…%d", n, c.what, c.hi)
			}
		}
	}
	if !slices.ContainsFunc(g.Kernels, isPrefill) {
		return nil // the values above are checked anyway: a bad one is a typo
	}
	if len(g.Tqs) == 0 || len(g.Masks) == 0 || len(g.Docs) == 0 || len(g.Brs) == 0 || len(g.Bcs) == 0 {
		return fmt.Errorf("empty grid: every parameter needs at least one value")
	}
	for _, t := range g.Ctxs {
		if t > prefill.MaxT {
			return paramErrorf("ctx", "%d: prefill takes at most %d keys", t, prefill.MaxT)
		}
	}
	return nil
}

// prefillShapes is every prefill problem of the grid, in plan order (Tk =
// ctx); a masked shape with more query rows than keys is left out, as is
// a doc count above Tk, and docs only multiply doc-masked shapes.
func (g AttentionGrid) prefillShapes() []prefill.Shape {
	var ss []prefill.Shape
	for _, d := range g.HeadDims {
		for _, hp := range g.Heads {
			for _, tk := range g.Ctxs {
				for _, tq := range g.Tqs {
					for _, m := range g.Masks {
						docs := []int{0}
						if m == prefill.Doc {
							docs = g.Docs
						}
						for _, n := range docs {
							s := prefill.Shape{H: hp.H, Hkv: hp.Hkv, D: d, Tq: tq, Tk: tk, Mask: m, Docs: n}
							if s.Validate() == nil {
								ss = append(ss, s)
							}
						}
					}
				}
			}
		}
	}
	return ss
}

// prefillPoints plans the prefill kernels of g.
func (g AttentionGrid) prefillPoints(opt Options) ([]Point, error) {
	var kernels []prefill.Kernel
	for _, k := range g.Kernels {
		if isPrefill(k) {
			kernels = append(kernels, prefill.Kernel(k))
		}
	}
	if len(kernels) == 0 {
		return nil, nil
	}
	if opt.Cold {
		return nil, paramErrorf("cold", "prefill is compute-bound and re-reads its K and V tiles: a cold first touch is not what it measures (leave prefill kernels out of a cold sweep)")
	}
	shapes := g.prefillShapes()
	if len(shapes) == 0 {
		return nil, paramErrorf("tq", "every prefill shape has more query rows than keys (ctx) under a mask (the queries are the last key positions)")
	}
	status := tierStatus(g.Tiers, prefill.Tiers(), noKernels("prefill kernels"))
	var pts []Point
	for _, s := range shapes {
		grp := newPrefillGroup(s, g)
		for _, k := range kernels {
			brs, bcs := g.Brs, g.Bcs
			if k == prefill.Materialized {
				brs, bcs = []int{0}, []int{0}
			}
			for _, br := range brs {
				for _, bc := range bcs {
					for _, e := range g.Exps {
						for _, t := range g.Tiers {
							p := prefill.Params{Kernel: k, Shape: s, Br: br, Bc: bc, Exp: e}
							pts = append(pts, prefillPoint(p, t, status[t], grp))
						}
					}
				}
			}
		}
	}
	return pts, nil
}

// prefillData is one shape's buffers and reference.
type prefillData struct {
	b         prefill.Buffers
	want, lse []float64
}

func newPrefillGroup(s prefill.Shape, g AttentionGrid) *dataGroup {
	q, kv := satMul(int64(s.H), int64(s.Tq), int64(s.D)), satMul(int64(s.Hkv), int64(s.Tk), int64(s.D))
	ws := int64(prefill.Params{Kernel: prefill.Materialized, Shape: s}.WorkspaceLen())
	for _, br := range g.Brs {
		for _, bc := range g.Bcs {
			ws = max(ws, int64(prefill.Params{Kernel: prefill.Flash, Shape: s, Br: br, Bc: bc}.WorkspaceLen()))
		}
	}
	mem := satAdd(satMul(4, satAdd(2*q, 2*kv, ws)), satMul(8, q), satMul(12, int64(s.H), int64(s.Tq)))
	return &dataGroup{mem: mem, ws: satMul(4, satAdd(2*q, 2*kv)), alloc: func() any {
		p := prefill.Params{Kernel: prefill.Materialized, Shape: s}
		b := prefill.Alloc(p)
		b.WS = make([]float32, ws)
		b.LSE = nil // the common case: no LSE wanted (prefill's tests check it)
		prefill.FillRandom(b, 11)
		d := &prefillData{b: b}
		d.want, d.lse = prefill.Reference(s, b.Q, b.K, b.V)
		return d
	}}
}

func prefillPoint(p prefill.Params, t isa.Tier, st isa.Status, grp *dataGroup) Point {
	rec := results.NewRecord()
	rec.Family, rec.Kernel, rec.ISA, rec.Exp, rec.KV = "attention", string(p.Kernel), string(t), p.Exp.String(), attention.F32.String()
	rec.HD, rec.H, rec.KVH, rec.Tq, rec.Ctx, rec.Mask = p.D, p.H, p.Hkv, p.Tq, p.Tk, p.Mask.String()
	if p.Mask == prefill.Doc {
		rec.Mask = fmt.Sprintf("doc%d", p.Docs)
	}
	if p.Kernel == prefill.Flash {
		br, bc := p.Tiles()
		rec.TK, rec.TKEff = fmt.Sprintf("%dx%d", br, bc), bc
	} else {
		rec.TK = "none"
	}
	w := p.Work()
	rec.Flops, rec.Bytes, rec.Traffic = results.Float(w.Flops), results.Float(w.Bytes), results.Float(w.Traffic)
	rec.DenseFlops = results.Float(w.DenseFlops)
	rec.AI = results.Float(w.Flops / w.Bytes)
	pt := Point{Rec: rec, Tier: t, Mem: grp.mem, group: grp}
	if !st.Runs {
		pt.Skip = st.Reason
	}
	im, _ := prefill.Lookup(t)
	pt.prepare = func(g *dataGroup) (func(), float64, error) {
		d := g.get().(*prefillData)
		b := d.b
		if err := p.Check(b); err != nil {
			return nil, math.NaN(), err
		}
		poison(b.O) // the kernel must write every output
		im.Run(p, b)
		relErr, err := referenceGate(b.O, d.want, p.D, attention.GateTolerance(p.Exp, p.Tk))
		if err != nil {
			return nil, relErr, err
		}
		return func() { im.Run(p, b) }, relErr, nil
	}
	pt.prepareN = func(g *dataGroup, n int) ([]func(), float64, error) {
		return prefillShares(g.get().(*prefillData), im, p, n)
	}
	return pt
}

// prefillShares splits a prefill call by KV heads: worker w runs its block
// of KV heads and their query heads (q and o of those heads, K and V
// shared for reading, a workspace of its own). With fewer KV heads than
// workers it splits the query rows instead (prefillRowShares).
func prefillShares(d *prefillData, im prefill.Impl, p prefill.Params, n int) ([]func(), float64, error) {
	if p.Hkv < n {
		return prefillRowShares(d, im, p, n)
	}
	g, q, kv := p.Group(), p.Tq*p.D, p.Tk*p.D // floats per query head, per KV head
	b := d.b
	type share struct {
		p prefill.Params
		b prefill.Buffers
	}
	parts := make([]share, n)
	for w, r := range splitRange(p.Hkv, n, 1) {
		s := p
		s.Hkv, s.H = r[1]-r[0], (r[1]-r[0])*g
		parts[w] = share{s, prefill.Buffers{Q: b.Q[r[0]*g*q : r[1]*g*q], O: b.O[r[0]*g*q : r[1]*g*q],
			K: b.K[r[0]*kv : r[1]*kv], V: b.V[r[0]*kv : r[1]*kv], WS: make([]float32, s.WorkspaceLen())}}
	}
	poison(b.O)
	for _, s := range parts {
		if err := s.p.Check(s.b); err != nil {
			return nil, math.NaN(), err
		}
		im.Run(s.p, s.b)
	}
	relErr, err := referenceGate(b.O, d.want, p.D, attention.GateTolerance(p.Exp, p.Tk))
	if err != nil {
		return nil, relErr, err
	}
	shares := make([]func(), n)
	for w, s := range parts {
		shares[w] = func() { im.Run(s.p, s.b) }
	}
	return shares, relErr, nil
}

// prefillRowShares splits a prefill call by query rows, for fewer KV heads
// than workers: worker w runs, for every query head, its block of rows
// (whole Br tiles) as a prefill of its own: its rows of q and o, and, under
// the causal mask, the keys up to its last row's position (so each row
// keeps its position). The blocks hold about the same number of keys seen,
// not of rows: a causal row's work grows with its position. Under a doc
// mask likewise, the documents still those of all Tk keys (DocTk).
func prefillRowShares(d *prefillData, im prefill.Impl, p prefill.Params, n int) ([]func(), float64, error) {
	br, _ := p.Tiles()
	bounds := balancedRows(p.Shape, n, br)
	g, dd := p.Group(), p.D
	b := d.b
	type call struct {
		p prefill.Params
		b prefill.Buffers
	}
	works := make([][]call, n)
	for w := range n {
		t0, t1 := bounds[w], bounds[w+1]
		if t0 == t1 {
			continue
		}
		s := p
		s.H, s.Hkv, s.Tq = 1, 1, t1-t0
		if p.Mask != prefill.None {
			s.Tk = p.Pos(t1-1) + 1 // rows keep their positions
			s.DocTk = p.Tk         // and their documents
		}
		ws := make([]float32, s.WorkspaceLen())
		for h := range p.H {
			kh := h / g
			q := b.Q[(h*p.Tq+t0)*dd : (h*p.Tq+t1)*dd]
			o := b.O[(h*p.Tq+t0)*dd : (h*p.Tq+t1)*dd]
			k := b.K[kh*p.Tk*dd : (kh*p.Tk+s.Tk)*dd]
			v := b.V[kh*p.Tk*dd : (kh*p.Tk+s.Tk)*dd]
			works[w] = append(works[w], call{s, prefill.Buffers{Q: q, O: o, K: k, V: v, WS: ws}})
		}
	}
	poison(b.O)
	for _, cs := range works {
		for _, c := range cs {
			if err := c.p.Check(c.b); err != nil {
				return nil, math.NaN(), err
			}
			im.Run(c.p, c.b)
		}
	}
	relErr, err := referenceGate(b.O, d.want, p.D, attention.GateTolerance(p.Exp, p.Tk))
	if err != nil {
		return nil, relErr, err
	}
	shares := make([]func(), n)
	for w, cs := range works {
		shares[w] = func() {
			for _, c := range cs {
				im.Run(c.p, c.b)
			}
		}
	}
	return shares, relErr, nil
}

// balancedRows cuts the query rows of s into n blocks of whole tiles of br
// rows holding about the same number of keys seen: bounds[w] … bounds[w+1]
// is block w.
func balancedRows(s prefill.Shape, n, br int) []int {
	total := s.Seen()
	bounds := make([]int, n+1)
	seen, w := 0, 1
	for t0 := 0; t0 < s.Tq && w < n; t0 += br {
		for t := t0; t < min(t0+br, s.Tq); t++ {
			lo, hi := s.Keys(t)
			seen += hi - lo
		}
		for w < n && seen*n >= w*total {
			bounds[w] = min(t0+br, s.Tq)
			w++
		}
	}
	for ; w <= n; w++ {
		bounds[w] = s.Tq
	}
	return bounds
}
