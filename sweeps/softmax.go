package sweeps

import (
	"fmt"
	"io"
	"strings"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/softmax"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sampler"
)

// SoftmaxGrid is the parameter grid of `ckbench sweep softmax`.
type SoftmaxGrid struct {
	Variants []softmax.Variant
	Tiers    []isa.Tier
	Rows     []int  // rows of the score matrix (query positions)
	Lens     []int  // columns (key positions)
	Causal   []bool // zero each row's future, rows aligned to the last positions
	Exps     []attention.Exp
}

// SoftmaxPreset returns a named grid: quick (what make run does), default
// or full.
func SoftmaxPreset(name string) (SoftmaxGrid, sampler.Config, error) {
	g := SoftmaxGrid{Variants: softmax.Variants, Tiers: softmax.Tiers(), Causal: []bool{true}}
	var sc sampler.Config
	switch name {
	case "quick":
		g.Rows, g.Lens, g.Exps = []int{256}, []int{2048}, []attention.Exp{attention.ExpFast}
		sc.MinTime = 100e6
	case "default":
		g.Rows, g.Lens, g.Exps = []int{64, 2048}, []int{2048, 8192}, attention.Exps
	case "full":
		g.Rows, g.Lens, g.Exps = []int{16, 256, 2048}, []int{512, 2048, 8192, 32768}, attention.Exps
		g.Causal = []bool{true, false}
	default:
		return g, sc, fmt.Errorf("unknown preset %q (known: quick, default, full)", name)
	}
	return g, sc, nil
}

// Validate reports the first impossible value in the grid.
func (g SoftmaxGrid) Validate() error {
	if len(g.Variants) == 0 || len(g.Tiers) == 0 || len(g.Rows) == 0 || len(g.Lens) == 0 || len(g.Causal) == 0 || len(g.Exps) == 0 {
		return fmt.Errorf("empty grid: every parameter needs at least one value")
	}
	for _, l := range g.Lens {
		if l < 1 || l > softmax.MaxLen {
			return paramErrorf("len", "%d: a row is 1…%d columns", l, softmax.MaxLen)
		}
	}
	for _, r := range g.Rows {
		if r < 1 || r > softmax.MaxElems {
			return paramErrorf("rows", "%d: 1…%d rows", r, softmax.MaxElems)
		}
		for _, l := range g.Lens {
			if err := (softmax.Shape{Rows: r, Len: l}).Validate(); err != nil {
				return paramErrorf("rows", "%v", err)
			}
		}
	}
	return nil
}

// shapes is every matrix of the grid, in plan order; a causal matrix
// with more rows than columns is left out (its first rows would see no
// key), a non-causal one keeps every row.
func (g SoftmaxGrid) shapes() []softmax.Shape {
	var ss []softmax.Shape
	for _, l := range g.Lens {
		for _, r := range g.Rows {
			for _, c := range g.Causal {
				s := softmax.Shape{Rows: r, Len: l, Causal: c}
				if s.Validate() == nil {
					ss = append(ss, s)
				}
			}
		}
	}
	return ss
}

// softmaxData is one matrix: the input, its float64 softmax, and the
// buffers the kernels overwrite (copies for --cold).
type softmaxData struct {
	rotor
	x    []float32
	want []float64
	bufs [][]float32
}

// PlanSoftmax expands a grid into points, grouped by matrix.
func PlanSoftmax(g SoftmaxGrid, opt Options, info machine.Info) (*Plan, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := opt.prepare(info); err != nil {
		return nil, err
	}
	shapes := g.shapes()
	if len(shapes) == 0 {
		return nil, paramErrorf("rows", "every causal matrix has more rows than columns (len): no row of it would see a key")
	}
	plan := &Plan{Family: "softmax"}
	status := tierStatus(g.Tiers, softmax.Tiers(), noKernels("softmax kernels"))
	for _, s := range shapes {
		grp := newSoftmaxGroup(s, opt)
		for _, v := range g.Variants {
			for _, e := range g.Exps {
				for _, t := range g.Tiers {
					plan.Points = append(plan.Points, softmaxPoint(softmax.Params{Variant: v, Shape: s, Exp: e}, t, status[t], grp))
				}
			}
		}
	}
	describe := func(p Point) string {
		return fmt.Sprintf("%s rows=%d len=%d mask=%s", p.Rec.Kernel, p.Rec.Tq, p.Rec.Ctx, p.Rec.Mask)
	}
	if err := plan.finish(opt, describe); err != nil {
		return nil, err
	}
	return plan, nil
}

func newSoftmaxGroup(s softmax.Shape, opt Options) *dataGroup {
	n := int64(s.Rows) * int64(s.Len)
	copies := int64(1)
	if opt.Cold {
		copies = max(2, opt.ColdBytes/(4*n)+1)
	}
	mem := satAdd(satMul(4*n, copies+1), 8*n) // the copies, the input, the reference
	seed := opt.Seed
	return &dataGroup{mem: mem, ws: 4 * n, copies: int(copies), alloc: func() any {
		d := &softmaxData{x: buf.Floats(int(n))}
		// Scores as a scaled q·k gives them: a few units either side.
		buf.FillUniform(d.x, seed, -6, 6)
		d.want = softmax.Reference(s, d.x)
		for range copies {
			c := buf.Floats(int(n))
			copy(c, d.x)
			d.bufs = append(d.bufs, c)
		}
		return d
	}}
}

func maskName(causal bool) string {
	if causal {
		return "causal"
	}
	return "none"
}

func softmaxPoint(p softmax.Params, t isa.Tier, st isa.Status, grp *dataGroup) Point {
	rec := results.NewRecord()
	rec.Family, rec.Kernel, rec.ISA, rec.Exp = "softmax", string(p.Variant), string(t), p.Exp.String()
	rec.Tq, rec.Ctx, rec.Mask = p.Rows, p.Len, maskName(p.Causal)
	w := p.Work()
	rec.Flops, rec.Bytes, rec.Traffic = results.Float(w.Flops), results.Float(w.Bytes), results.Float(w.Traffic)
	rec.AI = results.Float(w.Flops / w.Bytes)
	pt := Point{Rec: rec, Tier: t, Mem: grp.mem, group: grp}
	if !st.Runs {
		pt.Skip = st.Reason
	}
	im, _ := softmax.Lookup(t)
	pt.prepare = func(g *dataGroup) (func(), float64, error) {
		d := g.get().(*softmaxData)
		// The gate, on the input itself; the timed calls then run on
		// what the previous call left (a softmax's output is as good an
		// input: the kernels' cost does not depend on the values).
		for _, b := range d.bufs {
			copy(b, d.x)
		}
		b := d.bufs[0]
		im.Run(p, b)
		relErr, err := referenceGate(b, d.want, p.Len, softmax.Tolerance(p.Exp, p.Len))
		if err != nil {
			return nil, relErr, err
		}
		return rotate(d.bufs, d.at(0), func(x []float32) { im.Run(p, x) }), relErr, nil
	}
	pt.prepareN = func(g *dataGroup, n int) ([]func(), float64, error) {
		d := g.get().(*softmaxData)
		ranges := splitRange(p.Rows, n, 1)
		rows := func(x []float32, r [2]int) {
			for i := r[0]; i < r[1]; i++ {
				im.Row(p.Variant, x[i*p.Len:(i+1)*p.Len], p.Kept(i), p.Exp)
			}
		}
		for _, b := range d.bufs {
			copy(b, d.x)
		}
		for _, r := range ranges {
			rows(d.bufs[0], r)
		}
		relErr, err := referenceGate(d.bufs[0], d.want, p.Len, softmax.Tolerance(p.Exp, p.Len))
		if err != nil {
			return nil, relErr, err
		}
		shares := make([]func(), n)
		for w, r := range ranges {
			shares[w] = rotate(d.bufs, d.at(w), func(x []float32) { rows(x, r) })
		}
		return shares, relErr, nil
	}
	return pt
}

// The softmax family's adapter.
func init() { Register(softmaxFamily{}) }

type softmaxFamily struct{}

func (softmaxFamily) Name() string { return "softmax" }

func (softmaxFamily) Doc() string {
	return "The row softmax of a materialized score matrix [rows][len], in place: 3-pass (CKE: max; exp and " +
		"sum; normalize; zero the future) and online (running max and sum, then exp and normalize), exact " +
		"or fast exp. Causal rows sit at the last rows positions of len and keep the columns up to their " +
		"own. GB/s and pct_of_bound count the compulsory bytes (the matrix read and written once, " +
		"against the roof of its level); traffic holds the passes' bytes (3-pass 20, online 12 per kept " +
		"column), of which only the first pass over a row comes from the matrix's level. Every point is " +
		"first checked against a float64 softmax."
}

func (softmaxFamily) Examples() [][]string {
	return [][]string{
		{"preset=quick"},
		{"kernel=online", "exp=fast", "rows=2048", "len=2048"},
		{"kernel=all", "rows=256", "len=4096,32768", "causal=on,off", "cold"},
	}
}

func (softmaxFamily) ColdWhat() string  { return "the score matrix" }
func (softmaxFamily) Tiers() []isa.Tier { return FloatTiers }
func (softmaxFamily) Presets() []string { return []string{"quick", "default", "full"} }
func (softmaxFamily) BenchKeys() []string {
	return []string{"isa", "exp", "mask", "tq", "ctx"}
}

func (softmaxFamily) Params() []Param {
	names := make([]string, len(softmax.Variants))
	for i, v := range softmax.Variants {
		names[i] = string(v)
	}
	return []Param{
		{"kernel", "softmax variants: " + strings.Join(names, ",") + " or all"},
		{"exp", "exps: exact, fast or all"},
		{"rows", "rows of the score matrix (query positions), e.g. 256,2048"},
		{"len", "columns (key positions), e.g. 2048,32768"},
		{"causal", "on (zero each row's future; rows ≤ len), off, or on,off"},
	}
}

func (softmaxFamily) Grid(preset string) (Grid, sampler.Config, error) {
	g, sc, err := SoftmaxPreset(preset)
	return &g, sc, err
}

func (softmaxFamily) Summary() Summary {
	return Summary{
		Keys: "kernel\tisa\texp\tmask\trows\tlen",
		Cells: func(r *results.Record) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d", r.Kernel, r.ISA, r.Exp, r.Mask, r.Tq, r.Ctx)
		},
		USFormat: "%.1f",
		Named: func(r *results.Record) string {
			return fmt.Sprintf("%s/%s exp=%s mask=%s rows=%d len=%d", r.Kernel, r.ISA, r.Exp, r.Mask, r.Tq, r.Ctx)
		},
	}
}

func (softmaxFamily) List(w io.Writer) {
	fmt.Fprintln(w, "family softmax: the row softmax of a materialized [rows][len] score matrix, in place")
	listTiers(w, softmax.Tiers(), "no softmax kernels (int8-only tier, or not in this build)")
	fmt.Fprintln(w, "\nvariants (per call; n kept columns, z zeroed future columns):")
	for _, v := range softmax.Variants {
		flops, bytes, traffic := softmax.WorkFormula(v)
		fmt.Fprintf(w, "  %s\n      FLOPs   %s\n      bytes   %s\n      traffic %s (the passes; after the first, a row is re-read from the cache it fits in)\n", v, flops, bytes, traffic)
	}
	fmt.Fprintln(w, "\ncorrectness gate: max relative error per row against a float64 softmax, 1e-5 exact, 5e-4 fast")
	fmt.Fprintln(w, "cold: each call the next of enough copies of the matrix that it was last touched a cache's worth ago")
}

// Set reads one parameter of the softmax grid.
func (g *SoftmaxGrid) Set(param, value string) error {
	var err error
	switch param {
	case "kernel":
		g.Variants, err = ParseList("kernel", value, softmax.Variants, softmax.ParseVariant)
	case "exp":
		g.Exps, err = ParseList("exp", value, attention.Exps, attention.ParseExp)
	case "rows":
		g.Rows, err = ParseInts("rows", value)
	case "len":
		g.Lens, err = ParseInts("len", value)
	case "causal":
		g.Causal, err = ParseList("causal", value, []bool{true, false}, func(s string) (bool, error) {
			switch s {
			case "on":
				return true, nil
			case "off":
				return false, nil
			}
			return false, fmt.Errorf("%q: on or off", s)
		})
	default:
		err = paramErrorf(param, "not a parameter of the softmax family")
	}
	return err
}

// SetTiers sets the tiers to sweep.
func (g *SoftmaxGrid) SetTiers(ts []isa.Tier) { g.Tiers = ts }

// Plan is PlanSoftmax.
func (g *SoftmaxGrid) Plan(opt Options, info machine.Info) (*Plan, error) {
	return PlanSoftmax(*g, opt, info)
}

// Config is the grid as machine.json records it.
func (g *SoftmaxGrid) Config() map[string]any {
	masks := make([]string, len(g.Causal))
	for i, c := range g.Causal {
		masks[i] = maskName(c)
	}
	return map[string]any{"kernels": g.Variants, "isa": g.Tiers, "rows": g.Rows, "len": g.Lens, "mask": masks, "exp": g.Exps}
}
