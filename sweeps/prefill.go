package sweeps

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/prefill"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sampler"
)

// PrefillGrid is the parameter grid of `ckbench sweep prefill`.
type PrefillGrid struct {
	Kernels  []prefill.Kernel
	Tiers    []isa.Tier
	HeadDims []int
	Heads    []HeadPair
	Tqs      []int // query rows
	Tks      []int // key positions
	Masks    []prefill.Mask
	Docs     []int // documents of the doc mask
	Brs, Bcs []int // prefill-flash's tiles
	Exps     []attention.Exp
}

// PrefillPreset returns a named grid: quick, default or full.
func PrefillPreset(name string) (PrefillGrid, sampler.Config, error) {
	g := PrefillGrid{Kernels: prefill.Kernels, Tiers: prefill.Tiers(), Masks: []prefill.Mask{prefill.Causal},
		Docs: []int{4}, Brs: []int{prefill.DefaultBr}, Bcs: []int{prefill.DefaultBc}, Exps: []attention.Exp{attention.ExpFast}}
	var sc sampler.Config
	switch name {
	case "quick":
		g.HeadDims, g.Heads, g.Tqs, g.Tks = []int{128}, []HeadPair{{8, 8}}, []int{256}, []int{256}
		sc.MinTime = 100e6
	case "default":
		g.HeadDims, g.Heads, g.Tqs, g.Tks = []int{128}, []HeadPair{{8, 8}, {32, 8}}, []int{512, 2048}, []int{2048}
		g.Masks = prefill.Masks
	case "full":
		g.HeadDims, g.Heads, g.Tqs, g.Tks = []int{64, 128, 256}, []HeadPair{{8, 8}, {32, 8}}, []int{1, 512, 2048}, []int{2048, 8192}
		g.Masks, g.Brs, g.Bcs = prefill.Masks, []int{32, 64, 128}, []int{32, 64, 128, 256}
		g.Exps = attention.Exps
	default:
		return g, sc, fmt.Errorf("unknown preset %q (known: quick, default, full)", name)
	}
	return g, sc, nil
}

// Validate reports the first impossible value in the grid.
func (g PrefillGrid) Validate() error {
	if len(g.Kernels) == 0 || len(g.Tiers) == 0 || len(g.HeadDims) == 0 || len(g.Heads) == 0 || len(g.Tqs) == 0 ||
		len(g.Tks) == 0 || len(g.Masks) == 0 || len(g.Docs) == 0 || len(g.Brs) == 0 || len(g.Bcs) == 0 || len(g.Exps) == 0 {
		return fmt.Errorf("empty grid: every parameter needs at least one value")
	}
	for _, c := range []struct {
		param string
		xs    []int
		hi    int
		what  string
	}{
		{"tq", g.Tqs, prefill.MaxT, "query rows"}, {"tk", g.Tks, prefill.MaxT, "key positions"},
		{"br", g.Brs, prefill.MaxTile, "query tile rows"}, {"bc", g.Bcs, prefill.MaxTile, "key tile columns"},
		{"docs", g.Docs, prefill.MaxT, "documents"},
	} {
		for _, n := range c.xs {
			if n < 1 || n > c.hi {
				return paramErrorf(c.param, "%d: %s are 1…%d", n, c.what, c.hi)
			}
		}
	}
	for _, hp := range g.Heads {
		if hp.H > MaxHeads || hp.Hkv > MaxHeads {
			return paramErrorf("heads", "%s: at most %d heads", hp, MaxHeads)
		}
		for _, d := range g.HeadDims {
			if err := (prefill.Shape{H: hp.H, Hkv: hp.Hkv, D: d, Tq: 1, Tk: 1}).Validate(); err != nil {
				param := "hd"
				if hp.H%hp.Hkv != 0 || hp.H <= 0 || hp.Hkv <= 0 {
					param = "heads"
				}
				return paramErrorf(param, "%v", err)
			}
		}
	}
	return nil
}

// shapes is every problem of the grid, in plan order; a masked shape with
// more query rows than keys is left out, as is a doc count above Tk, and
// docs only multiply doc-masked shapes.
func (g PrefillGrid) shapes() []prefill.Shape {
	var ss []prefill.Shape
	for _, d := range g.HeadDims {
		for _, hp := range g.Heads {
			for _, tk := range g.Tks {
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

// prefillData is one shape's buffers and reference.
type prefillData struct {
	b         prefill.Buffers
	want, lse []float64
}

// PlanPrefill expands a grid into points, grouped by shape.
func PlanPrefill(g PrefillGrid, opt Options, info machine.Info) (*Plan, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := opt.prepare(info); err != nil {
		return nil, err
	}
	if opt.Cold {
		return nil, paramErrorf("cold", "prefill is compute-bound and re-reads its K and V tiles: a cold first touch is not what it measures")
	}
	shapes := g.shapes()
	if len(shapes) == 0 {
		return nil, paramErrorf("tq", "every shape has more query rows than keys under a mask (the queries are the last key positions)")
	}
	plan := &Plan{Family: "prefill"}
	status := tierStatus(g.Tiers, prefill.Tiers(), noKernels("prefill kernels"))
	for _, s := range shapes {
		grp := newPrefillGroup(s, g)
		for _, k := range g.Kernels {
			brs, bcs := g.Brs, g.Bcs
			if k == prefill.Materialized {
				brs, bcs = []int{0}, []int{0}
			}
			for _, br := range brs {
				for _, bc := range bcs {
					for _, e := range g.Exps {
						for _, t := range g.Tiers {
							p := prefill.Params{Kernel: k, Shape: s, Br: br, Bc: bc, Exp: e}
							plan.Points = append(plan.Points, prefillPoint(p, t, status[t], grp))
						}
					}
				}
			}
		}
	}
	describe := func(p Point) string {
		return fmt.Sprintf("%s hd=%d h=%d kvh=%d tq=%d tk=%d", p.Rec.Kernel, p.Rec.HD, p.Rec.H, p.Rec.KVH, p.Rec.Tq, p.Rec.Ctx)
	}
	if err := plan.checkMemory(opt.MemAvailable, describe); err != nil {
		return nil, err
	}
	return plan, nil
}

func newPrefillGroup(s prefill.Shape, g PrefillGrid) *dataGroup {
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
	rec.Family, rec.Kernel, rec.ISA, rec.Exp = "prefill", string(p.Kernel), string(t), p.Exp.String()
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
		for i := range b.O {
			b.O[i] = float32(math.NaN()) // the kernel must write every output
		}
		im.Run(p, b)
		relErr := attention.MaxRelErr(b.O, d.want, p.D)
		if tol := attention.GateTolerance(p.Exp, p.Tk); !(relErr <= tol) {
			return nil, relErr, fmt.Errorf("max rel err %.3g exceeds %.2g against the float64 reference", relErr, tol)
		}
		return func() { im.Run(p, b) }, relErr, nil
	}
	return pt
}

// The prefill family's adapter.
func init() { Register(prefillFamily{}) }

type prefillFamily struct{}

func (prefillFamily) Name() string { return "prefill" }

func (prefillFamily) Doc() string {
	return "Prefill attention, Tq query rows at once over Tk keys (the queries are the last Tq positions): " +
		"prefill-materialized (CKE: the [Tq][Tk] scores of a head written, the causal 3-pass softmax, then " +
		"P·V) and prefill-flash (FlashAttention-2: Br×Bc tiles, an online softmax per row, tiles no row sees " +
		"skipped, only tiles across the mask's boundary masked, a K/V tile shared by the query heads of its " +
		"group). Masks causal, none or doc (documents of Tk/docs positions, causal within each). FLOPs count " +
		"the unmasked work (4·D per head, row and key seen). Every point is first checked against a float64 " +
		"reference. The avx2 and avx512 tiers run register-blocked micro-kernels (qk 6×16 and 8×32, pv 6×16 " +
		"and 6×64 floats of accumulators) on K packed into tiles."
}

func (prefillFamily) Examples() [][]string {
	return [][]string{
		{"preset=quick"},
		{"kernel=prefill-flash", "hd=128", "heads=8:8", "tq=512", "tk=2048", "br=16,32,64", "bc=32"},
		{"mask=causal,doc", "docs=1,4,64", "tq=1024", "tk=1024"},
	}
}

func (prefillFamily) ColdWhat() string  { return "" } // PlanPrefill refuses Cold
func (prefillFamily) Tiers() []isa.Tier { return FloatTiers }
func (prefillFamily) Presets() []string { return []string{"quick", "default", "full"} }
func (prefillFamily) BenchKeys() []string {
	return []string{"isa", "exp", "mask", "hd", "h", "kvh", "tq", "ctx", "tk"}
}

func (prefillFamily) Params() []Param {
	names := make([]string, len(prefill.Kernels))
	for i, k := range prefill.Kernels {
		names[i] = string(k)
	}
	return []Param{
		{"kernel", "prefill kernels: " + strings.Join(names, ",") + " or all"},
		{"exp", "exps: exact, fast or all"},
		{"hd", "head dims, e.g. 64,128 (multiples of 16 up to 256)"},
		{"heads", "H:Hkv pairs, e.g. 8:8,32:8"},
		{"tq", "query rows, e.g. 512,2048"},
		{"tk", "key positions, e.g. 2048 (≥ tq under a mask)"},
		{"mask", "causal, none, doc or all"},
		{"docs", "documents of the doc mask, e.g. 1,4,64"},
		{"br", "prefill-flash's query tile rows, e.g. 16,32,64"},
		{"bc", "prefill-flash's key tile columns, e.g. 16,32,64"},
	}
}

func (prefillFamily) Grid(preset string) (Grid, sampler.Config, error) {
	g, sc, err := PrefillPreset(preset)
	return &g, sc, err
}

func (prefillFamily) Summary() Summary {
	return Summary{
		Keys: "kernel\tisa\texp\tmask\thd\th:kvh\ttq\ttk\ttile",
		Cells: func(r *results.Record) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d:%d\t%d\t%d\t%s", r.Kernel, r.ISA, r.Exp, r.Mask, r.HD, r.H, r.KVH, r.Tq, r.Ctx, r.TK)
		},
		USFormat: "%.0f",
		Named: func(r *results.Record) string {
			return fmt.Sprintf("%s/%s exp=%s mask=%s hd=%d heads=%d:%d tq=%d tk=%d tile=%s", r.Kernel, r.ISA, r.Exp, r.Mask, r.HD, r.H, r.KVH, r.Tq, r.Ctx, r.TK)
		},
	}
}

func (prefillFamily) List(w io.Writer) {
	fmt.Fprintln(w, "family prefill: attention over Tq query rows at once (the compute-bound half)")
	listTiers(w, prefill.Tiers(), "no prefill kernels yet")
	fmt.Fprintln(w, "\nkernels (per call; n = Σ over query rows of the keys each sees):")
	fmt.Fprintln(w, "  prefill-materialized, prefill-flash")
	fmt.Fprintln(w, "      FLOPs   4·H·D·n (dense equivalent 4·H·Tq·Tk·D); exps H·n")
	fmt.Fprintln(w, "      bytes   8·H·Tq·D + 8·Hkv·Tk·D (q, o; K and V once)")
	fmt.Fprintln(w, "      traffic materialized: + the score matrix written, its softmax passes, P read by P·V")
	fmt.Fprintln(w, "              flash: K and V tiles re-read once per query tile of each KV head's group")
	fmt.Fprintln(w, "\ncorrectness gate: max relative error per output row against a float64 reference, 1e-5 exact, 5e-4 fast")
}

// Set reads one parameter of the prefill grid.
func (g *PrefillGrid) Set(param, value string) error {
	var err error
	switch param {
	case "kernel":
		g.Kernels, err = ParseList("kernel", value, prefill.Kernels, prefill.ParseKernel)
	case "exp":
		g.Exps, err = ParseList("exp", value, attention.Exps, attention.ParseExp)
	case "hd":
		g.HeadDims, err = ParseInts("hd", value)
	case "heads":
		g.Heads, err = ParseHeads(value)
	case "tq":
		g.Tqs, err = ParseInts("tq", value)
	case "tk":
		g.Tks, err = ParseInts("tk", value)
	case "mask":
		g.Masks, err = ParseList("mask", value, prefill.Masks, prefill.ParseMask)
	case "docs":
		g.Docs, err = ParseInts("docs", value)
	case "br":
		g.Brs, err = ParseInts("br", value)
	case "bc":
		g.Bcs, err = ParseInts("bc", value)
	default:
		err = paramErrorf(param, "not a parameter of the prefill family")
	}
	return err
}

// SetTiers sets the tiers to sweep.
func (g *PrefillGrid) SetTiers(ts []isa.Tier) { g.Tiers = ts }

// Plan is PlanPrefill.
func (g *PrefillGrid) Plan(opt Options, info machine.Info) (*Plan, error) {
	return PlanPrefill(*g, opt, info)
}

// Config is the grid as machine.json records it.
func (g *PrefillGrid) Config() map[string]any {
	return map[string]any{"kernels": g.Kernels, "isa": g.Tiers, "hd": g.HeadDims, "heads": g.Heads, "tq": g.Tqs, "tk": g.Tks,
		"mask": g.Masks, "docs": g.Docs, "br": g.Brs, "bc": g.Bcs, "exp": g.Exps}
}
