// Package compare puts the results of several machines (or runs, or
// builds) side by side: per benchmark point, each input's median with its
// confidence interval and, against the first input, the ratio and the
// p-value of a Mann-Whitney U test (golang.org/x/perf/benchmath, what
// benchstat computes), and a geometric mean per kernel×tier.
//
// An input is a bench.txt (ckbench's, or any file in the Go benchmark
// format) or a folder: every bench.txt under it is read (a run folder, a
// folder of run folders, a sweep-all folder), the machine named by the
// machine.json beside each.
package compare

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/ckbench/ckbench/results"
)

// Metric is what is compared: one unit of bench.txt.
type Metric string

// The metrics: time per call (lower is better), and the rates and the
// share of the bound (higher is better).
const (
	Ns         Metric = "ns"
	GBs        Metric = "gbs"
	GFlops     Metric = "gflops"
	PctOfBound Metric = "pct_of_bound"
)

// Metrics lists the metrics.
var Metrics = []Metric{Ns, GBs, GFlops, PctOfBound}

// Unit is the bench.txt unit of m.
func (m Metric) Unit() string {
	switch m {
	case GBs:
		return "GB/s"
	case GFlops:
		return "GFLOP/s"
	case PctOfBound:
		return results.PctOfBoundUnit
	}
	return "ns/op"
}

// stored is the unit benchfmt reads m's values under, and the factor to
// m's unit: benchfmt tidies ns/op into sec/op.
func (m Metric) stored() (string, float64) {
	if m == Ns {
		return "sec/op", 1e9
	}
	return m.Unit(), 1
}

// values are in's values of point name in m's unit.
func (in *Input) values(name string, m Metric) []float64 {
	unit, scale := m.stored()
	vs := in.Points[name][unit]
	if scale == 1 || len(vs) == 0 {
		return vs
	}
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v * scale
	}
	return out
}

// HigherIsBetter reports whether a larger value of m is an improvement.
func (m Metric) HigherIsBetter() bool { return m != Ns }

// ParseMetric converts ns, gbs, gflops or pct_of_bound.
func ParseMetric(s string) (Metric, error) {
	for _, m := range Metrics {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown metric %q (known: ns, gbs, gflops, pct_of_bound)", s)
}

// Machine is the identity of the machine an input was measured on.
type Machine struct {
	CPU     string   // brand, with family and model where known
	Tiers   []string // the tiers that ran there
	Runs    []string // run ids
	Ckbench []string // the ckbench versions that measured (a build comparison's difference)
}

func (m Machine) String() string {
	s := m.CPU
	if s == "" {
		s = "unknown CPU"
	}
	if len(m.Tiers) > 0 {
		s += " [" + strings.Join(m.Tiers, ",") + "]"
	}
	if len(m.Ckbench) > 0 {
		s += " ckbench " + strings.Join(m.Ckbench, ", ")
	}
	return s
}

// Input is one side of a comparison: its label, its machine, and per
// benchmark point the values of every unit.
type Input struct {
	Label   string
	Path    string
	Machine Machine
	Points  map[string]map[string][]float64 // name → unit → values
	Order   []string                        // the names in the order first read
	// Ceilings are those of its roofline.json, if it has one (nil
	// Roofline: none).
	Ceilings []Ceiling
	Roofline *Roofline
}

// Errors a caller tells apart.
var (
	// ErrNoInput: a path holds no bench.txt and no roofline.json.
	ErrNoInput = errors.New("no results")
	// ErrNoCommon: the inputs share no point with a value of the metric.
	ErrNoCommon = errors.New("the inputs share no points")
)

// Load reads one input: a bench.txt or a folder of them, with the
// roofline.json nearest its root; or a folder with a roofline only (a
// ckbench roofline's), whose ceilings alone are compared.
func Load(path string) (*Input, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	in := &Input{Path: path, Points: map[string]map[string][]float64{}}
	var files, roofs []string
	if st.IsDir() {
		err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch {
			case d.IsDir():
			case d.Name() == "bench.txt":
				files = append(files, p)
			case d.Name() == "roofline.json":
				roofs = append(roofs, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(files) == 0 && len(roofs) == 0 {
			return nil, fmt.Errorf("%s: %w: no bench.txt and no roofline.json in this folder or below it (a ckbench results folder has both)", path, ErrNoInput)
		}
	} else {
		files = []string{path}
		if r := filepath.Join(filepath.Dir(path), "roofline.json"); fileExists(r) {
			roofs = []string{r}
		}
	}
	sort.Strings(files)
	for _, f := range files {
		if err := in.readBench(f); err != nil {
			return nil, err
		}
		if meta, err := results.ReadMeta(filepath.Dir(f)); err == nil {
			in.noteMachine(meta)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if err := in.loadRoofline(roofs); err != nil {
		return nil, err
	}
	in.Label = filepath.Base(filepath.Clean(path))
	if !st.IsDir() {
		in.Label = filepath.Base(filepath.Dir(filepath.Clean(path))) + "/" + filepath.Base(path)
	}
	return in, nil
}

func (in *Input) noteMachine(meta results.Meta) {
	m := meta.Machine
	cpu := machineCPU(m)
	if in.Machine.CPU == "" {
		in.Machine.CPU = cpu
	} else if in.Machine.CPU != cpu && !strings.Contains(in.Machine.CPU, " + ") {
		in.Machine.CPU += " + " + cpu // one input, two machines: say so
	}
	for _, t := range m.Tiers {
		if t.Runs && !slices.Contains(in.Machine.Tiers, string(t.Tier)) {
			in.Machine.Tiers = append(in.Machine.Tiers, string(t.Tier))
		}
	}
	if meta.RunID != "" {
		in.Machine.Runs = append(in.Machine.Runs, meta.RunID)
	}
	if meta.Ckbench != "" && !slices.Contains(in.Machine.Ckbench, meta.Ckbench) {
		in.Machine.Ckbench = append(in.Machine.Ckbench, meta.Ckbench)
	}
}

// readBench adds the results of one bench.txt; the "# cpu ..." line
// ckbench writes names the machine when no machine.json is beside it.
func (in *Input) readBench(path string) error {
	b, err := os.ReadFile(path) // read once: the results, then the header
	if err != nil {
		return err
	}
	r := benchfmt.NewReader(bytes.NewReader(b), path)
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			return fmt.Errorf("%s: %w: %v", path, results.ErrCorrupt, rec)
		case *benchfmt.Result:
			name := string(rec.Name)
			units := in.Points[name]
			if units == nil {
				units = map[string][]float64{}
				in.Points[name] = units
				in.Order = append(in.Order, name)
			}
			for _, v := range rec.Values {
				units[v.Unit] = append(units[v.Unit], v.Value)
			}
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "# ") {
			break // ckbench's header comes first
		}
		if cpu, ok := strings.CutPrefix(l, "# cpu "); ok && in.Machine.CPU == "" {
			in.Machine.CPU, _, _ = strings.Cut(cpu, ", ")
		}
		if i := strings.LastIndex(l, ", schema "); strings.HasPrefix(l, "# ckbench ") && i >= 0 {
			if v, err := strconv.Atoi(l[i+len(", schema "):]); err != nil || v != results.SchemaVersion {
				return fmt.Errorf("%s: %w: schema %q, this ckbench reads schema %d", path, results.ErrSchema, l[i+len(", schema "):], results.SchemaVersion)
			}
		}
	}
	return nil
}

// Filter keeps the points whose name matches every term: key=v1,v2 (the
// key one of the name's /key=value parts, or family or kernel, the
// name's first two parts), key!=v1,v2 for its negation.
type Filter []term

type term struct {
	key    string
	values []string
	not    bool
}

// ParseFilter reads space-separated terms such as
// "family=attention kernel=decode-flash,decode-flash-gqa isa!=generic".
func ParseFilter(s string) (Filter, error) {
	var f Filter
	for _, w := range strings.Fields(s) {
		t := term{}
		k, v, ok := strings.Cut(w, "!=")
		if ok {
			t.not = true
		} else if k, v, ok = strings.Cut(w, "="); !ok {
			return nil, fmt.Errorf("filter term %q: want key=value[,value...] or key!=value", w)
		}
		if k == "" || v == "" {
			return nil, fmt.Errorf("filter term %q: a key and at least one value", w)
		}
		t.key, t.values = strings.ToLower(k), strings.Split(v, ",")
		f = append(f, t)
	}
	return f, nil
}

// Keys splits a benchmark name into its keys: family, kernel, then each
// /key=value part.
func Keys(name string) map[string]string {
	parts := strings.Split(name, "/")
	keys := map[string]string{"family": strings.ToLower(parts[0])}
	if len(parts) > 1 {
		keys["kernel"] = parts[1]
	}
	for _, p := range parts[min(2, len(parts)):] {
		if k, v, ok := strings.Cut(p, "="); ok {
			keys[k] = v
		}
	}
	return keys
}

// Match reports whether the point name passes f.
func (f Filter) Match(name string) bool {
	keys := Keys(name)
	for _, t := range f {
		v, ok := keys[t.key]
		hit := ok && slices.ContainsFunc(t.values, func(x string) bool { return strings.EqualFold(x, v) })
		if hit == t.not {
			return false
		}
	}
	return true
}

// Cell is one input's summary of one point.
type Cell struct {
	N              int
	Center, Lo, Hi float64 // median and its confidence interval
	Ratio          float64 // center over the first input's (NaN for the first, or where absent)
	P              float64 // the U test's p-value against the first input (NaN: not compared)
	Significant    bool    // P below alpha (and enough samples to tell)
	Warnings       []string
}

// Row is one point across the inputs (nil cell: the input lacks it).
type Row struct {
	Name   string
	Family string
	Kernel string
	ISA    string
	Cells  []*Cell
}

// Table is a comparison.
type Table struct {
	Metric Metric
	Inputs []*Input
	Rows   []Row // in the first input's order, by kernel; every row has the first input and at least one other
	// Geomean per kernel×tier (family/kernel/isa) of each input's ratio
	// to the first, over the rows where both have the point.
	Geomean map[string][]float64
	Alpha   float64
	// Ceilings: the inputs' roofline ceilings side by side (those the
	// first input and another have).
	Ceilings []CeilingRow
}

// Confidence and Alpha are benchstat's defaults.
const (
	Confidence = 0.95
	Alpha      = 0.05
)

// Compare builds the table of metric m over the inputs (at least two),
// the first the baseline, keeping the points f matches.
func Compare(ins []*Input, m Metric, f Filter) (*Table, error) {
	if len(ins) < 2 {
		return nil, fmt.Errorf("at least two inputs to compare (got %d)", len(ins))
	}
	thr := benchmath.DefaultThresholds
	t := &Table{Metric: m, Inputs: ins, Geomean: map[string][]float64{}, Alpha: Alpha}
	// The first input's order (its sweep's), each family/kernel's points
	// together.
	var names []string
	for _, name := range ins[0].Order {
		if len(ins[0].values(name, m)) > 0 && f.Match(name) {
			names = append(names, name)
		}
	}
	kernelOf := func(name string) string { k := Keys(name); return k["family"] + "/" + k["kernel"] }
	firstAt := map[string]int{}
	for i, name := range names {
		if _, ok := firstAt[kernelOf(name)]; !ok {
			firstAt[kernelOf(name)] = i
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return firstAt[kernelOf(names[i])] < firstAt[kernelOf(names[j])] })
	logSum := map[string][]float64{}
	logN := map[string][]int{}
	for _, name := range names {
		keys := Keys(name)
		row := Row{Name: name, Family: keys["family"], Kernel: keys["kernel"], ISA: keys["isa"], Cells: make([]*Cell, len(ins))}
		base := benchmath.NewSample(ins[0].values(name, m), &thr)
		baseCenter := benchmath.AssumeNothing.Summary(base, Confidence).Center
		others := 0
		for i, in := range ins {
			vals := in.values(name, m)
			if len(vals) == 0 {
				continue
			}
			s := benchmath.NewSample(vals, &thr)
			sum := benchmath.AssumeNothing.Summary(s, Confidence)
			c := &Cell{N: len(vals), Center: sum.Center, Lo: sum.Lo, Hi: sum.Hi, Ratio: math.NaN(), P: math.NaN()}
			for _, w := range sum.Warnings {
				c.Warnings = append(c.Warnings, w.Error())
			}
			if i > 0 {
				others++
				cmp := benchmath.AssumeNothing.Compare(base, s)
				c.P = cmp.P
				c.Significant = cmp.P < cmp.Alpha
				for _, w := range cmp.Warnings {
					c.Warnings = append(c.Warnings, w.Error())
				}
				if baseCenter > 0 && c.Center > 0 {
					c.Ratio = c.Center / baseCenter
					g := row.Family + "/" + row.Kernel + "/" + row.ISA
					if logSum[g] == nil {
						logSum[g], logN[g] = make([]float64, len(ins)), make([]int, len(ins))
					}
					logSum[g][i] += math.Log(c.Ratio)
					logN[g][i]++
				}
			}
			row.Cells[i] = c
		}
		if others > 0 {
			t.Rows = append(t.Rows, row)
		}
	}
	t.Ceilings = ceilingRows(ins)
	if len(t.Rows) == 0 {
		// Rooflines only (ckbench roofline's folders): their ceilings are
		// the comparison.
		if !slices.ContainsFunc(ins, func(in *Input) bool { return len(in.Points) > 0 }) && len(t.Ceilings) > 0 {
			return t, nil
		}
		return nil, noCommon(ins, m, f)
	}
	for g, s := range logSum {
		gm := make([]float64, len(ins))
		gm[0] = 1
		for i := 1; i < len(ins); i++ {
			gm[i] = math.NaN()
			if logN[g][i] > 0 {
				gm[i] = math.Exp(s[i] / float64(logN[g][i]))
			}
		}
		t.Geomean[g] = gm
	}
	return t, nil
}

// noCommon explains why no row was made: each input's point count and an
// example name.
func noCommon(ins []*Input, m Metric, f Filter) error {
	var parts []string
	for _, in := range ins {
		n, ex := 0, ""
		for name := range in.Points {
			if len(in.values(name, m)) > 0 && f.Match(name) {
				n++
				if ex == "" || name < ex {
					ex = name
				}
			}
		}
		s := fmt.Sprintf("%s has %d", in.Label, n)
		switch {
		case ex != "":
			s += " (e.g. " + ex + ")"
		case len(in.Points) == 0 && in.Roofline != nil:
			s += " (a roofline only: compare it with another roofline)"
		}
		parts = append(parts, s)
	}
	return fmt.Errorf("%w with a %s value (after the filter): %s; compare runs of the same sweep and grid", ErrNoCommon, m.Unit(), strings.Join(parts, "; "))
}

// GroupKeys returns the kernel×tier groups of the table in order.
func (t *Table) GroupKeys() []string {
	var ks []string
	for k := range t.Geomean {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Better reports whether ratio r is an improvement on the baseline.
func (t *Table) Better(r float64) bool {
	if t.Metric.HigherIsBetter() {
		return r > 1
	}
	return r < 1
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}
