package sweeps

// A toy family, the whole of what a new family adds besides its kernels
// package: this one file (its "kernels" are the two loops at the end).
// TestToyFamily runs it through the registry as a front end does.

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sampler"
)

func init() { Register(toyFamily{}) }

type toyFamily struct{}

func (toyFamily) Name() string         { return "toy" }
func (toyFamily) Doc() string          { return "y = 2·x over n floats, and toy-read, a plain read of x." }
func (toyFamily) Examples() [][]string { return [][]string{{"n=1024,4096"}} }
func (toyFamily) ColdWhat() string     { return "x" }
func (toyFamily) Tiers() []isa.Tier    { return []isa.Tier{isa.Generic} }
func (toyFamily) Params() []Param      { return []Param{{"kernel", "scale,toy-read"}, {"n", "lengths"}} }
func (toyFamily) Presets() []string    { return []string{"quick"} }
func (toyFamily) BenchKeys() []string  { return []string{"isa", "k"} }
func (toyFamily) List(w io.Writer)     { fmt.Fprintln(w, "family toy: y = 2·x") }
func (toyFamily) Summary() Summary {
	return Summary{Keys: "kernel\tisa\tn", USFormat: "%.3f",
		Cells: func(r *results.Record) string { return fmt.Sprintf("%s\t%s\t%d", r.Kernel, r.ISA, r.K) },
		Named: func(r *results.Record) string { return fmt.Sprintf("%s/%s n=%d", r.Kernel, r.ISA, r.K) }}
}

func (toyFamily) Grid(preset string) (Grid, sampler.Config, error) {
	if preset != "quick" {
		return nil, sampler.Config{}, fmt.Errorf("unknown preset %q (known: quick)", preset)
	}
	return &toyGrid{kernels: []string{"toy-read", "scale"}, tiers: []isa.Tier{isa.Generic}, ns: []int{256}},
		sampler.Config{MinTime: 2e6}, nil
}

type toyGrid struct {
	kernels []string
	tiers   []isa.Tier
	ns      []int
}

func (g *toyGrid) Set(param, value string) (err error) {
	switch param {
	case "kernel":
		g.kernels, err = ParseList("kernel", value, []string{"toy-read", "scale"}, func(s string) (string, error) { return s, nil })
	case "n":
		g.ns, err = ParseInts("n", value)
	default:
		err = paramErrorf(param, "not a parameter of the toy family")
	}
	return err
}

func (g *toyGrid) SetTiers(ts []isa.Tier) { g.tiers = ts }
func (g *toyGrid) Config() map[string]any { return map[string]any{"n": g.ns} }

func (g *toyGrid) Plan(opt Options, info machine.Info) (*Plan, error) {
	if err := opt.prepare(info); err != nil {
		return nil, err
	}
	plan := &Plan{Family: "toy"}
	for _, n := range g.ns {
		if n > 1<<20 {
			return nil, paramErrorf("n", "%d: at most %d", n, 1<<20)
		}
		grp := &dataGroup{mem: 8 * int64(n), ws: 4 * int64(n), alloc: func() any {
			x := make([]float32, 2*n)
			for i := range n {
				x[i] = float32(i % 7)
			}
			return x
		}}
		for _, k := range g.kernels {
			for _, t := range g.tiers {
				rec := results.NewRecord()
				rec.Family, rec.Kernel, rec.ISA, rec.K = "toy", k, string(t), n
				rec.Bytes, rec.Traffic = results.Float(4*n), results.Float(4*n)
				pt := Point{Rec: rec, Tier: t, Mem: grp.mem, group: grp, ceiling: k == "toy-read"}
				pt.prepare = func(d *dataGroup) (func(), float64, error) {
					x := d.get().([]float32)
					if k == "toy-read" {
						return func() { toySink += toyRead(x[:n]) }, 0, nil
					}
					toyScale(x[n:], x[:n])
					for i := range n {
						if x[n+i] != 2*x[i] {
							return nil, math.Inf(1), fmt.Errorf("y[%d] = %v, want %v", i, x[n+i], 2*x[i])
						}
					}
					return func() { toyScale(x[n:], x[:n]) }, 0, nil
				}
				plan.Points = append(plan.Points, pt)
			}
		}
	}
	return plan, nil
}

//lint:ignore U1000 written, never read: it keeps the loop's result observable, so the compiler cannot drop the loop
var toySink float32

func toyRead(x []float32) (s float32) {
	for _, v := range x {
		s += v
	}
	return s
}

func toyScale(y, x []float32) {
	for i, v := range x {
		y[i] = 2 * v
	}
}

// TestToyFamily: a family registered by its adapter alone is found, set,
// planned, run, named in bench.txt and listed by the same calls a front
// end makes for attention and quant.
func TestToyFamily(t *testing.T) {
	fam, ok := LookupFamily("toy")
	if !ok || !strings.Contains(strings.Join(FamilyNames(), ","), "toy") {
		t.Fatal("the toy family is not registered")
	}
	grid, sc, err := fam.Grid("quick")
	if err != nil {
		t.Fatal(err)
	}
	if err := grid.Set("n", "64,128"); err != nil {
		t.Fatal(err)
	}
	if err := grid.Set("m", "1"); err == nil {
		t.Fatal("an unknown parameter was taken")
	} else if pe, ok := err.(*ParamError); !ok || pe.Param != "m" {
		t.Fatalf("unknown parameter: %T %v", err, err)
	}
	plan, err := grid.Plan(Options{Sampler: sc, Counters: nil, CPU: -1}, machine.Describe())
	if err != nil {
		t.Fatal(err)
	}
	var recs []results.Record
	if _, err := Run(context.Background(), plan, Options{Sampler: sc, CPU: -1}, func(r results.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	readOK := map[int]bool{} // the ceiling is applied when it measured ok (timing may be unstable here)
	for _, r := range recs {
		readOK[r.K] = readOK[r.K] || (r.Kernel == "toy-read" && r.Status == results.StatusOK)
	}
	for _, r := range recs {
		if r.Status == results.StatusFailed || r.Status == results.StatusSkipped {
			t.Errorf("%s: %s %s", results.BenchName(&r), r.Status, r.Reason)
		}
		if name := results.BenchName(&r); !strings.HasPrefix(name, "Toy/"+r.Kernel+"/isa=generic/k=") {
			t.Errorf("bench name %q", name)
		}
		if r.Kernel == "scale" && readOK[r.K] && !preempted(r) && !r.PctOfRead.Valid() {
			t.Errorf("scale n=%d has no %% read: the toy-read ceiling was not applied", r.K)
		}
	}
	var b strings.Builder
	fam.List(&b)
	if !strings.Contains(b.String(), "family toy") {
		t.Fatalf("list: %q", b.String())
	}
}
