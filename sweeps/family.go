package sweeps

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sampler"
)

// A Family is one kernel family as the runner, the results and a front end
// (the CLI's sweep, list and --help) see it: its kernels package plus this
// one adapter, registered once (Register). Nothing else names a family:
// adding one touches its kernels package and its adapter file.
type Family interface {
	// Name is the family's name in commands, records and bench.txt.
	Name() string
	// Doc is a paragraph on what a sweep of the family measures.
	Doc() string
	// Examples are parameter settings worth showing, each a list of
	// name=value (or a bare name for a switch such as cold).
	Examples() [][]string
	// ColdWhat names what cold copies rotate through ("the KV cache"); ""
	// for a family whose planner refuses Options.Cold.
	ColdWhat() string
	// Tiers are the tiers the family has kernels for in some build.
	Tiers() []isa.Tier
	// Params are the grid parameters a front end offers, kernel first.
	Params() []Param
	// Presets lists the named grids; the first is the default.
	Presets() []string
	// Grid returns a preset's grid and sampler settings.
	Grid(preset string) (Grid, sampler.Config, error)
	// BenchKeys are the record columns that name a point in bench.txt,
	// after Benchmark<Family>/<kernel>.
	BenchKeys() []string
	// Summary is how the console shows the family's points.
	Summary() Summary
	// List writes what `list` shows of the family: kernels, tiers, work
	// models, parameters.
	List(w io.Writer)
}

// FloatTiers are the tiers a float family (attention, kvcache, softmax,
// prefill) offers: every tier but avx512vnni, which adds only int8
// instructions. A build without a tier's kernels (purego) records it
// skipped.
var FloatTiers = []isa.Tier{isa.Generic, isa.AVX2, isa.AVX512}

// listTiers writes the "tiers:" part of a family's List: per tier of
// isa.All, whether it runs here, is skipped (and why), or has no kernels
// in have, the kernels package's Tiers() (missing says so).
func listTiers(w io.Writer, have []isa.Tier, missing string) {
	fmt.Fprintln(w, "\ntiers:")
	for _, t := range isa.All {
		st := isa.Detect(t)
		switch {
		case !slices.Contains(have, t):
			fmt.Fprintf(w, "  %-10s %s\n", t, missing)
		case st.Runs:
			fmt.Fprintf(w, "  %-10s runs here\n", t)
		default:
			fmt.Fprintf(w, "  %-10s skipped here: %s\n", t, st.Reason)
		}
	}
}

// Param is one grid parameter: its name (also the CLI's flag) and help.
type Param struct{ Name, Usage string }

// Grid is one family's parameter grid, filled from a preset and then by
// parameter (Set), and expanded into a plan.
type Grid interface {
	// Set reads one parameter's value (a list); a bad value is a
	// *ParamError.
	Set(param, value string) error
	// SetTiers sets the tiers to sweep.
	SetTiers([]isa.Tier)
	// Plan validates the grid (a *ParamError names the parameter) and
	// expands it into points.
	Plan(opt Options, info machine.Info) (*Plan, error)
	// Config is the grid as machine.json records it.
	Config() map[string]any
}

// Summary is the console summary of a family's points beside the timing
// and ceilings the runner shows for every family.
type Summary struct {
	Keys     string                         // header of the identity columns, tab-separated
	Cells    func(r *results.Record) string // those columns of one point
	USFormat string                         // µs/call
	Rate     string                         // header of a rate of the family's own ("": none)
	RateCell func(r *results.Record) string
	Named    func(r *results.Record) string // the point, in a reason line
}

var families []Family

// Register adds a family (in the init of its adapter file); its bench.txt
// keys go to package results. A second family of the same name panics.
func Register(f Family) {
	if _, ok := LookupFamily(f.Name()); ok {
		panic("sweeps: family " + f.Name() + " registered twice")
	}
	families = append(families, f)
	results.RegisterBenchKeys(f.Name(), f.BenchKeys())
}

// Families lists the registered families, in registration order.
func Families() []Family { return slices.Clone(families) }

// FamilyNames lists their names.
func FamilyNames() []string {
	names := make([]string, len(families))
	for i, f := range families {
		names[i] = f.Name()
	}
	return names
}

// LookupFamily returns the family of that name.
func LookupFamily(name string) (Family, bool) {
	for _, f := range families {
		if f.Name() == name {
			return f, true
		}
	}
	return nil, false
}

// ErrUnknownFamily is LookupFamilyErr's error for a name no family has.
type ErrUnknownFamily struct{ Name string }

func (e ErrUnknownFamily) Error() string {
	return fmt.Sprintf("unknown family %q (known: %s)", e.Name, strings.Join(FamilyNames(), ", "))
}
