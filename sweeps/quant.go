package sweeps

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/quant"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
	"github.com/ckbench/ckbench/sampler"
)

// WRead is the in-run ceiling of the quant family: a plain read loop
// (roofline.ReadXor) over exactly the weight bytes of the format and shape
// (with --cold, rotating through the same copies as the kernels), measured
// with the same sampler in every tier (on one thread with the tier's loads
// or a narrower tier's, whichever reads faster here). The fastest tier's loop is then
// timed in alternation with every point of the same format, shape and
// thread count, which gives their read_gbs and pct_of_read: a ceiling
// taken even seconds apart, on a host shared with other tenants, can
// differ from the moment the kernels ran.
const WRead quant.Kernel = "w-read"

// QuantKernels lists the kernel names the quant sweep accepts.
func QuantKernels() []quant.Kernel { return append(slices.Clone(quant.Kernels), WRead) }

// ParseQuantKernel reads one --kernel value of the quant sweep.
func ParseQuantKernel(s string) (quant.Kernel, error) {
	known := QuantKernels()
	names := make([]string, len(known))
	for i, k := range known {
		if string(k) == s {
			return k, nil
		}
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown quant kernel %q (known: %s)", s, strings.Join(names, ", "))
}

// Shape is one GEMV shape y[M] = W[M×K]·x[K].
type Shape struct{ M, K int }

func (s Shape) String() string { return fmt.Sprintf("%dx%d", s.M, s.K) }

// ParseShapes reads MxK,MxK,...
func ParseShapes(s string) ([]Shape, error) {
	var out []Shape
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		ms, ks, ok := strings.Cut(item, "x")
		m, err1 := strconv.Atoi(ms)
		k, err2 := strconv.Atoi(ks)
		if !ok || err1 != nil || err2 != nil || m <= 0 || k <= 0 {
			return nil, paramErrorf("shape", "%q: want MxK with positive integers, e.g. 4096x4096", item)
		}
		out = append(out, Shape{m, k})
	}
	return dedup(out), nil
}

// Act values of the quant grid: f32 (gemv-f32) or the 8-bit formats (gemv-q8).
const (
	ActF32 = "f32"
	ActQ8  = "q8" // each format's own 8-bit activation format
)

// QuantGrid is the parameter grid of `ckbench sweep quant`.
type QuantGrid struct {
	Kernels []quant.Kernel
	Tiers   []isa.Tier
	Formats []quant.Format
	Acts    []string // f32, q8, or q8_0/q8_1/q8_K (must match the format)
	Shapes  []Shape
	RBs     []int
	// FmtAll: --fmt all: formats whose activation format differs from an
	// explicit --act q8_X are left out instead of refused.
	FmtAll bool
}

// QuantPreset returns a named default grid of the quant family.
func QuantPreset(name string) (QuantGrid, sampler.Config, error) {
	g := QuantGrid{Kernels: QuantKernels(), Tiers: quant.Tiers(), Acts: []string{ActF32, ActQ8}}
	var sc sampler.Config
	switch name {
	case "quick":
		g.Kernels = []quant.Kernel{WRead, quant.GemvF32, quant.GemvQ8, quant.QuantizeQ8}
		g.Formats = []quant.Format{quant.Q4_0, quant.Q8_0, quant.Q4_K, quant.Q6_K}
		g.Shapes = []Shape{{4096, 4096}}
		g.RBs = []int{4}
		sc.MinTime = 100e6
	case "default":
		g.Formats, g.FmtAll = quant.WeightFormats(), true
		g.Shapes = []Shape{{4096, 4096}, {4096, 14336}, {14336, 4096}}
		g.RBs = []int{1, 4}
	case "full":
		g.Formats, g.FmtAll = quant.WeightFormats(), true
		g.Shapes = []Shape{{4096, 4096}, {4096, 14336}, {14336, 4096}, {16384, 8192}}
		g.RBs = []int{1, 2, 4, 8}
	default:
		return g, sc, fmt.Errorf("unknown preset %q (known: quick, default, full)", name)
	}
	return g, sc, nil
}

// actOf resolves an --act value for format f: "" when the pair does not
// exist.
func actOf(act string, f quant.Format) string {
	switch act {
	case ActF32:
		return ActF32
	case ActQ8:
		return f.Q8Act().String()
	}
	if a, err := quant.ParseFormat(act); err == nil && a == f.Q8Act() {
		return a.String()
	}
	return ""
}

// Validate reports the first impossible value in the grid.
func (g QuantGrid) Validate() error {
	if len(g.Kernels) == 0 || len(g.Tiers) == 0 || len(g.Formats) == 0 || len(g.Acts) == 0 || len(g.Shapes) == 0 || len(g.RBs) == 0 {
		return fmt.Errorf("empty grid: every parameter needs at least one value")
	}
	for _, f := range g.Formats {
		if !f.Info().Weight {
			return paramErrorf("fmt", "%s is an activation format; weight formats: %s", f, formatNames(quant.WeightFormats()))
		}
		for _, s := range g.Shapes {
			if s.M > MaxDim || s.K > MaxDim {
				return paramErrorf("shape", "%s: M and K must be at most %d", s, MaxDim)
			}
			if s.K%f.Info().Block != 0 {
				return paramErrorf("shape", "%s: K=%d is not a multiple of %s's block size %d", s, s.K, f, f.Info().Block)
			}
		}
	}
	for _, a := range g.Acts {
		if a == ActF32 || a == ActQ8 {
			continue
		}
		af, err := quant.ParseFormat(a)
		if err != nil || (af != quant.Q8_0 && af != quant.Q8_1 && af != quant.Q8_K) {
			return paramErrorf("act", "%q: use f32, q8 (each format's own), q8_0, q8_1 or q8_K", a)
		}
		matched := false
		for _, f := range g.Formats {
			if actOf(a, f) != "" {
				matched = true
			} else if !g.FmtAll {
				return paramErrorf("act", "%s with fmt %s: no such pair; %s's integer dot product takes %s activations", a, f, f, f.Q8Act())
			}
		}
		if !matched {
			return paramErrorf("act", "%s: none of the formats takes %s activations", a, a)
		}
	}
	for _, rb := range g.RBs {
		if rb < 1 || rb > quant.MaxRB {
			return paramErrorf("rb", "%d: rows per pass must be 1…%d", rb, quant.MaxRB)
		}
	}
	return nil
}

func formatNames(fs []quant.Format) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.String()
	}
	return strings.Join(s, ",")
}

// quantData is the data of one (format, shape): weights (copies for
// --cold), x, and the generic tier's outputs and their scales, computed
// once per kernel on first use.
type quantData struct {
	rotor
	bufs []quant.Buffers
	ref  map[quant.Kernel][]float32
	mag  map[quant.Kernel][]float64
}

// reference returns the generic tier's output of kernel k.
func (d *quantData) reference(p quant.Params) []float32 {
	if out, ok := d.ref[p.Kernel]; ok {
		return out
	}
	gen, _ := quant.Lookup(isa.Generic)
	out := runQuant(gen, p, d.bufs[0])
	d.ref[p.Kernel] = out
	d.mag[p.Kernel] = quant.Magnitudes(p, d.bufs[0])
	return out
}

// runQuant runs p on b with fresh outputs and returns what it wrote.
func runQuant(im quant.Impl, p quant.Params, b quant.Buffers) []float32 {
	nan := float32(math.NaN())
	for i := range b.Y {
		b.Y[i] = nan
	}
	for i := range b.D {
		b.D[i] = nan
	}
	clear(b.XQ)
	im.Run(p, b)
	switch p.Kernel {
	case quant.QuantizeQ8:
		act := p.Fmt.Q8Act()
		out := make([]float32, p.K)
		quant.Dequantize(act, out, b.XQ[:act.RowBytes(p.K)])
		return out
	case quant.Dequant:
		return append([]float32(nil), b.D...)
	}
	return append([]float32(nil), b.Y[:p.M]...)
}

// PlanQuant expands a grid into points, grouped by format and shape.
func PlanQuant(g QuantGrid, opt Options, info machine.Info) (*Plan, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := opt.prepare(info); err != nil {
		return nil, err
	}
	plan := &Plan{Family: "quant"}
	status := tierStatus(g.Tiers, quant.Tiers(),
		func(t isa.Tier) string { return "no " + string(t) + " quant kernels in this build" })
	quantized := map[string]bool{} // quantize-q8 points already planned (per act format and K)
	for _, f := range g.Formats {
		for _, s := range g.Shapes {
			hasDequant := false
			for _, k := range g.Kernels {
				hasDequant = hasDequant || k == quant.Dequant
			}
			grp := newQuantGroup(f, s, hasDequant, opt)
			base := results.NewRecord()
			base.Family, base.Fmt, base.M, base.K = "quant", f.String(), s.M, s.K
			if slices.Contains(g.Kernels, WRead) {
				// Widest tier first: its read rate is the ceiling of the shape.
				for i := len(g.Tiers) - 1; i >= 0; i-- {
					t := g.Tiers[i]
					plan.Points = append(plan.Points, wReadPoint(base, f, s, t, status[t], grp))
				}
			}
			for _, k := range g.Kernels {
				p := quant.Params{Kernel: k, Fmt: f, M: s.M, K: s.K}
				switch k {
				case quant.GemvF32, quant.GemvQ8:
					for _, a := range g.Acts {
						act := actOf(a, f)
						if act == "" || (k == quant.GemvF32) != (act == ActF32) {
							continue
						}
						for _, rb := range g.RBs {
							p.RB = rb
							for _, t := range g.Tiers {
								plan.Points = append(plan.Points, quantPoint(base, p, act, t, status[t], grp))
							}
						}
					}
				case quant.QuantizeQ8:
					key := fmt.Sprintf("%s/%d", f.Q8Act(), s.K)
					if quantized[key] {
						continue
					}
					quantized[key] = true
					for _, t := range g.Tiers {
						plan.Points = append(plan.Points, quantPoint(base, p, ActF32, t, status[t], grp))
					}
				case quant.Dequant:
					for _, t := range g.Tiers {
						plan.Points = append(plan.Points, quantPoint(base, p, "", t, status[t], grp))
					}
				}
			}
		}
	}
	describe := func(p Point) string {
		return fmt.Sprintf("fmt=%s shape=%dx%d", p.Rec.Fmt, p.Rec.M, p.Rec.K)
	}
	if err := plan.finish(opt, describe); err != nil {
		return nil, err
	}
	return plan, nil
}

// newQuantGroup sizes and lazily builds the data of one format and shape.
func newQuantGroup(f quant.Format, s Shape, dequant bool, opt Options) *dataGroup {
	p := quant.Params{Kernel: quant.GemvF32, Fmt: f, M: s.M, K: s.K}
	wBytes := satMul(int64(s.M), int64(f.RowBytes(s.K)))
	copies := int64(1)
	if opt.Cold {
		copies = max(2, opt.ColdBytes/wBytes+1)
	}
	mem := satAdd(satMul(wBytes, copies), 12*int64(s.K), 8*int64(s.M))
	if dequant {
		mem = satAdd(mem, satMul(8, int64(s.M), int64(s.K))) // D, and the reference's copy
	}
	seed := opt.Seed
	return &dataGroup{mem: mem, ws: wBytes, copies: int(copies), alloc: func() any {
		d := &quantData{ref: map[quant.Kernel][]float32{}, mag: map[quant.Kernel][]float64{}}
		ap := p
		if dequant {
			ap.Kernel = quant.Dequant
		}
		first := quant.Alloc(ap)
		quant.FillRandom(p, first, seed)
		d.bufs = append(d.bufs, first)
		for range copies - 1 {
			c := first
			c.W = buf.Bytes(len(first.W)) // its pages mapped a piece at a time (see buf)
			copy(c.W, first.W)
			d.bufs = append(d.bufs, c)
		}
		return d
	}}
}

func quantPoint(base results.Record, p quant.Params, act string, t isa.Tier, st isa.Status, grp *dataGroup) Point {
	rec := base
	rec.Kernel, rec.ISA, rec.Act, rec.RB = string(p.Kernel), string(t), act, p.RB
	switch p.Kernel {
	case quant.QuantizeQ8:
		rec.Fmt, rec.M, rec.Act = p.Fmt.Q8Act().String(), 0, ActF32
	case quant.Dequant:
		rec.Act = "none"
	}
	w := p.Work()
	rec.Flops, rec.Bytes, rec.Traffic = results.Float(w.Flops), results.Float(w.Bytes), results.Float(w.Bytes)
	rec.AI = results.Float(w.AI())
	if w.IntOps > 0 {
		rec.IntOps = results.Float(w.IntOps)
	}
	pt := Point{Rec: rec, Tier: t, Mem: grp.mem, group: grp}
	if p.Kernel == quant.QuantizeQ8 {
		pt.ws = int64(w.Bytes) // reads x alone, not the weights
	}
	im, _ := quant.Lookup(t)
	switch {
	case !st.Runs:
		pt.Skip = st.Reason
	default:
		if ok, why := im.Has(p); !ok {
			pt.Skip = why
		}
	}
	pt.prepare = func(g *dataGroup) (func(), float64, error) {
		d := g.get().(*quantData)
		b := d.bufs[0]
		if err := p.Check(b); err != nil {
			return nil, math.NaN(), err
		}
		want := d.reference(p)
		got := runQuant(im, p, b)
		relErr := quant.MaxRelErr(got, want, d.mag[p.Kernel])
		if !(relErr <= quant.Tolerance) {
			return nil, relErr, fmt.Errorf("max rel err %.3g exceeds %.0e against the generic tier", relErr, quant.Tolerance)
		}
		return rotate(d.bufs, d.at(0), func(b quant.Buffers) { im.Run(p, b) }), relErr, nil
	}
	pt.prepareN = func(g *dataGroup, n int) ([]func(), float64, error) {
		if p.Kernel == quant.QuantizeQ8 {
			return quantizeShares(g.get().(*quantData), im, p, n)
		}
		return quantShares(g.get().(*quantData), im, p, n)
	}
	return pt
}

// quantizeShares splits quantize-q8 by blocks of x: worker w quantizes its
// blocks into their bytes of the activation row (blocks are independent:
// each has its own scale and sums). The gate dequantizes the whole row.
func quantizeShares(d *quantData, im quant.Impl, p quant.Params, n int) ([]func(), float64, error) {
	act := p.Fmt.Q8Act()
	blk := act.Info().Block
	qk := act.RowBytes(blk) // bytes of one block
	ranges := splitRange(p.K, n, blk)
	share := func(b quant.Buffers, r [2]int) (quant.Params, quant.Buffers) {
		q := p
		q.K = r[1] - r[0]
		return q, quant.Buffers{X: b.X[r[0]:r[1]], XQ: b.XQ[r[0]/blk*qk : r[1]/blk*qk]}
	}
	b := d.bufs[0]
	clear(b.XQ)
	for _, r := range ranges {
		if r[0] < r[1] {
			q, s := share(b, r)
			im.Run(q, s)
		}
	}
	got := make([]float32, p.K)
	quant.Dequantize(act, got, b.XQ[:act.RowBytes(p.K)])
	relErr := quant.MaxRelErr(got, d.reference(p), d.mag[p.Kernel])
	if !(relErr <= quant.Tolerance) {
		return nil, relErr, fmt.Errorf("max rel err %.3g exceeds %.0e against the generic tier", relErr, quant.Tolerance)
	}
	shares := make([]func(), n)
	for w, r := range ranges {
		shares[w] = func() {}
		if r[0] < r[1] {
			shares[w] = rotate(d.bufs, d.at(w), func(b quant.Buffers) {
				q, s := share(b, r)
				im.Run(q, s)
			})
		}
	}
	return shares, relErr, nil
}

// quantShares splits a GEMV or dequant call by rows of W: worker w computes
// y (or D) for its block of rows, a multiple of the rows per pass, with its
// own quantized x (gemv-q8 quantizes x in every worker: K values against
// its share of M·K weights). The gate runs the shares one after the other
// and checks the whole output against the generic tier.
func quantShares(d *quantData, im quant.Impl, p quant.Params, n int) ([]func(), float64, error) {
	rowBytes := p.Fmt.RowBytes(p.K)
	ranges := splitRange(p.M, n, p.Rows())
	share := func(b quant.Buffers, r [2]int, xq []byte) (quant.Params, quant.Buffers) {
		q := p
		q.M = r[1] - r[0]
		s := quant.Buffers{W: b.W[r[0]*rowBytes : r[1]*rowBytes], X: b.X, XQ: xq, Y: b.Y[r[0]:r[1]]}
		if b.D != nil {
			s.D = b.D[r[0]*p.K : r[1]*p.K]
		}
		return q, s
	}
	xqs := make([][]byte, n)
	for w := range xqs {
		xqs[w] = make([]byte, len(d.bufs[0].XQ))
	}
	b := d.bufs[0]
	nan := float32(math.NaN())
	for i := range b.Y {
		b.Y[i] = nan
	}
	for i := range b.D {
		b.D[i] = nan
	}
	for w, r := range ranges {
		if r[0] < r[1] {
			q, s := share(b, r, xqs[w])
			im.Run(q, s)
		}
	}
	got := b.Y[:p.M]
	if p.Kernel == quant.Dequant {
		got = b.D
	}
	relErr := quant.MaxRelErr(append([]float32(nil), got...), d.reference(p), d.mag[p.Kernel])
	if !(relErr <= quant.Tolerance) {
		return nil, relErr, fmt.Errorf("max rel err %.3g exceeds %.0e against the generic tier", relErr, quant.Tolerance)
	}
	shares := make([]func(), n)
	for w, r := range ranges {
		if r[0] == r[1] {
			shares[w] = func() {}
			continue
		}
		shares[w] = rotate(d.bufs, d.at(w), func(b quant.Buffers) {
			q, s := share(b, r, xqs[w])
			im.Run(q, s)
		})
	}
	return shares, relErr, nil
}

//lint:ignore U1000 written, never read: it keeps the loop's result observable, so the compiler cannot drop the loop
var xorSink uint64 // keeps the weight read loop's result observable

func wReadPoint(base results.Record, f quant.Format, s Shape, t isa.Tier, st isa.Status, grp *dataGroup) Point {
	rec := base
	rec.Kernel, rec.ISA, rec.Act = string(WRead), string(t), "none"
	n := s.M * f.RowBytes(s.K)
	rec.Flops, rec.Bytes, rec.Traffic, rec.AI = 0, results.Float(n), results.Float(n), 0
	pt := Point{Rec: rec, Tier: t, Mem: grp.mem, group: grp}
	if !st.Runs {
		pt.Skip = st.Reason
	}
	// One thread reads with tier t's loads or a narrower tier's, the
	// faster here (roofline.StreamTiers, fastest: as kv-read, whose doc
	// has Zen 4's zmm loop slower from DRAM than its ymm one).
	pt.prepare = func(g *dataGroup) (func(), float64, error) {
		d := g.get().(*quantData)
		w := d.bufs[0].W[:n]
		want := roofline.ReadXor(isa.Generic, w)
		call, err := fastestTier(t, len(d.bufs), func(rt isa.Tier) ([]func(), error) {
			if got := roofline.ReadXor(rt, w); got != want {
				return nil, fmt.Errorf("%s read loop XOR %#x, Go's %#x: the loop skipped or misread bytes", rt, got, want)
			}
			return []func(){rotate(d.bufs, d.at(0), func(b quant.Buffers) { xorSink ^= roofline.ReadXor(rt, b.W[:n]) })}, nil
		})
		if err != nil {
			return nil, 1, err
		}
		return call, 0, nil
	}
	// n threads each read their block of the bytes (4 KiB aligned).
	pt.prepareN = func(g *dataGroup, threads int) ([]func(), float64, error) {
		d := g.get().(*quantData)
		shares := make([]func(), threads)
		for w, r := range splitRange(n, threads, 4096) {
			var sink uint64 // the worker's own: no two threads write one word
			shares[w] = rotate(d.bufs, d.at(w), func(b quant.Buffers) { sink ^= roofline.ReadXor(t, b.W[r[0]:r[1]]) })
		}
		return shares, 0, nil
	}
	pt.ceiling = true
	return pt
}

// The quant family's adapter: how the runner, the results and a front end
// see it.
func init() { Register(quantFamily{}) }

type quantFamily struct{}

func (quantFamily) Name() string { return "quant" }

func (quantFamily) Doc() string {
	return "The quantized GEMV kernels y[M] = W[M×K]·x[K] in the GGML block formats, in every tier: gemv-f32 " +
		"(x in float32, weights dequantized in registers), gemv-q8 (x quantized to 8 bits inside the call, then " +
		"integer dot products), quantize-q8 (that quantization alone) and dequant (W to float32 rows). Each point " +
		"is first checked against the generic tier. w-read, a plain read of the same weight bytes in the same mode, " +
		"is the in-run ceiling: % read is a point's GB/s against it, % bound against the roofline."
}

func (quantFamily) Examples() [][]string {
	return [][]string{
		{"preset=quick"},
		{"fmt=q4_0,q4_K", "act=f32,q8", "shape=4096x4096", "rb=1,4"},
		{"fmt=q8_0", "shape=16384x8192", "cold"},
	}
}

func (quantFamily) ColdWhat() string    { return "the weights" }
func (quantFamily) Tiers() []isa.Tier   { return isa.All }
func (quantFamily) Presets() []string   { return []string{"quick", "default", "full"} }
func (quantFamily) BenchKeys() []string { return []string{"isa", "fmt", "act", "m", "k", "rb"} }

func (quantFamily) Params() []Param {
	return []Param{
		{"kernel", "kernels: gemv-f32,gemv-q8,quantize-q8,dequant,w-read (a plain read of the weight bytes: the in-run ceiling behind % read) or all"},
		{"fmt", "weight formats: q4_0,q4_1,q5_0,q5_1,q8_0,q4_K,q5_K,q6_K or all"},
		{"act", "activations: f32 (gemv-f32), q8 (gemv-q8 with each format's own: q8_0, q8_1 or q8_K), or q8_0/q8_1/q8_K"},
		{"shape", "MxK shapes, e.g. 4096x4096,4096x14336,14336x4096"},
		{"rb", "rows per pass (sharing each x load), 1…8, e.g. 1,4"},
	}
}

func (quantFamily) Grid(preset string) (Grid, sampler.Config, error) {
	g, sc, err := QuantPreset(preset)
	return &g, sc, err
}

// Summary: quantize-q8 points have no M (x alone) and no rb.
func (quantFamily) Summary() Summary {
	return Summary{
		Keys: "kernel\tisa\tfmt\tact\tMxK\trb",
		Cells: func(r *results.Record) string {
			shape, rb := fmt.Sprintf("%dx%d", r.M, r.K), fmt.Sprint(r.RB)
			if r.M == 0 {
				shape, rb = fmt.Sprintf("K=%d", r.K), "-"
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", r.Kernel, r.ISA, r.Fmt, r.Act, shape, rb)
		},
		USFormat: "%.1f",
		Rate:     "GOP/s",
		RateCell: func(r *results.Record) string {
			if !r.GOps.Valid() {
				return "-"
			}
			return fmt.Sprintf("%.1f", float64(r.GOps))
		},
		Named: func(r *results.Record) string {
			return fmt.Sprintf("%s/%s fmt=%s act=%s %dx%d rb=%d", r.Kernel, r.ISA, r.Fmt, r.Act, r.M, r.K, r.RB)
		},
	}
}

func (quantFamily) List(w io.Writer) {
	fmt.Fprintln(w, "family quant: y[M] = W[M×K]·x[K], W in a GGML block format (byte-exact), rows of K/QK blocks")
	fmt.Fprintln(w, "\nformats:")
	for _, f := range quant.Formats() {
		fi := f.Info()
		role := "weights, 8-bit activations " + f.Q8Act().String()
		if !fi.Weight {
			role = "activations"
		}
		fmt.Fprintf(w, "  %-5s %3d per block, %3d bytes (%.3g bits/weight), %s\n        %s\n", fi.Name, fi.Block, fi.Bytes, 8*float64(fi.Bytes)/float64(fi.Block), role, fi.Layout)
	}
	fmt.Fprintln(w, "\nkernels (per call):")
	for _, k := range quant.Kernels {
		flops, bytes := quant.WorkFormula(k)
		fmt.Fprintf(w, "  %-11s FLOPs %s; bytes %s\n", k, flops, bytes)
	}
	fmt.Fprintf(w, "  %-11s the ceiling: a plain read (64-bit XOR) of the same weight bytes, the tier's loads or a narrower tier's,\n"+
		"              whichever is faster here (one thread)\n"+
		"              bytes M·(K/QK)·block_bytes; timed in alternation with every point of the format and shape: read_gbs, %% read\n", WRead)
	fmt.Fprintln(w, "\ntiers (which kernel × format each implements):")
	for _, t := range isa.All {
		st := isa.Detect(t)
		im, built := quant.Lookup(t)
		where := "runs here"
		if !st.Runs {
			where = "skipped here: " + st.Reason
		}
		if !built {
			fmt.Fprintf(w, "  %-10s no quant kernels in this build (%s)\n", t, where)
			continue
		}
		fmt.Fprintf(w, "  %-10s %s\n", t, where)
		for _, k := range quant.Kernels {
			var have, missing []string
			for _, f := range quant.WeightFormats() {
				name := f.String()
				if k == quant.QuantizeQ8 {
					name = f.Q8Act().String()
				}
				if ok, _ := im.HasFormat(k, f); ok {
					if !strings.Contains(strings.Join(have, ","), name) {
						have = append(have, name)
					}
				} else if !strings.Contains(strings.Join(missing, ","), name) {
					missing = append(missing, name)
				}
			}
			line := fmt.Sprintf("    %-11s %s", k, strings.Join(have, ","))
			if len(missing) > 0 {
				line += "   (missing: " + strings.Join(missing, ",") + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintf(w, "\ncorrectness gate: every tier against the generic tier before timing: GEMVs within %.0e of Σ|w·x| per row\n", quant.Tolerance)
	fmt.Fprintln(w, "(integer sums are exact; only the order of float additions differs); dequant and quantize-q8 give the generic's values.")
	fmt.Fprintf(w, "rb: 1…%d rows per pass (avx2: up to 4). gemv-q8 quantizes x with its tier's quantize-q8.\n", quant.MaxRB)
}

// Set reads one parameter of the quant grid.
func (g *QuantGrid) Set(param, value string) error {
	var err error
	switch param {
	case "kernel":
		g.Kernels, err = ParseList("kernel", value, QuantKernels(), ParseQuantKernel)
	case "fmt":
		g.FmtAll = strings.TrimSpace(value) == "all"
		g.Formats, err = ParseList("fmt", value, quant.WeightFormats(), quant.ParseFormat)
	case "act":
		g.Acts, err = ParseList("act", value, []string{ActF32, ActQ8}, func(s string) (string, error) { return s, nil })
	case "shape":
		g.Shapes, err = ParseShapes(value)
	case "rb":
		g.RBs, err = ParseInts("rb", value)
	default:
		err = paramErrorf(param, "not a parameter of the quant family")
	}
	return err
}

// SetTiers sets the tiers to sweep.
func (g *QuantGrid) SetTiers(ts []isa.Tier) { g.Tiers = ts }

// Plan is PlanQuant.
func (g *QuantGrid) Plan(opt Options, info machine.Info) (*Plan, error) {
	return PlanQuant(*g, opt, info)
}

// Config is the grid as machine.json records it.
func (g *QuantGrid) Config() map[string]any {
	fmts := make([]string, len(g.Formats))
	for i, f := range g.Formats {
		fmts[i] = f.String()
	}
	return map[string]any{"kernels": g.Kernels, "isa": g.Tiers, "fmt": fmts, "act": g.Acts, "shape": g.Shapes, "rb": g.RBs}
}
