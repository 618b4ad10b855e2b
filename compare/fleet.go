package compare

import (
	"encoding/csv"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchmath"

	"github.com/ckbench/ckbench/internal/stats"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/plots"
	"github.com/ckbench/ckbench/results"
)

// Node is one machine of a fleet: its identity (from machine.json) and,
// per point, its value of the metric (the median of its samples; every
// results folder of the node merged).
type Node struct {
	Host, CPU, Microcode, Kernel, Ckbench string
	Dirs                                  []string
	Values                                map[string]float64 // point name → value
	// Ceilings: per roofline ceiling, the median over the roofline.json
	// files of its folders; none where it has none. RooflineSpread is the
	// largest spread between a ceiling's passes in any of them (%).
	Ceilings       []Ceiling
	RooflineSpread float64
}

// Group is the nodes of one CPU model.
type Group struct {
	CPU   string
	Nodes []*Node
}

// FleetRow is one point across the groups: per group the median of its
// nodes' values, their spread ((max − min) / median, %) and how many.
type FleetRow struct {
	Name, Family, Kernel, ISA string
	Median, Spread            []float64 // per group; NaN where the group lacks the point
	N                         []int
	Ratio, P                  []float64 // against the first group (U test over node values)
}

// NodeScore is a node against its group: the geomean over the points of
// its value over the group's median (1: typical), and whether that is
// further than the tolerance from 1 (with three or more nodes in the
// group; with two, each is compared with the other and both are named).
type NodeScore struct {
	Node    *Node
	Group   int
	Geomean float64
	Points  int
	Flagged bool
	Why     string
	// Ceiling is the node's roofline ceiling furthest from its model's
	// median, and Off that ratio (NaN: no roofline, or no sibling's to
	// compare with). Flagged also when one that a fault moves (Faulty) is
	// beyond the tolerance and the node's roofline was measured quietly
	// enough to tell; Note says when it was not.
	Ceiling string
	Off     float64
	Note    string
}

// Faulty reports whether a ceiling is one a node's fault moves and its
// roofline measures steadily: the core clock and the FMA roofs (a BIOS
// power setting, a cooling fault), the DRAM read (a missing or slow DIMM).
// The cache levels' reads spread more between runs on one machine than a
// fault would tell (L1 by 20 % on a shared host).
func Faulty(name string) bool {
	return name == "core clock" || strings.HasPrefix(name, "fp32-fma ") || strings.HasPrefix(name, "read DRAM ")
}

// FleetCeiling is one roofline ceiling across the groups: per group the
// median over its nodes, their spread (%) and how many.
type FleetCeiling struct {
	Name, Unit     string
	Median, Spread []float64 // per group; NaN where no node has it
	N              []int
}

// Fleet is a fleet comparison.
type Fleet struct {
	Metric    Metric
	Tolerance float64 // a node's geomean further than this from 1 is flagged (0.10 = 10 %)
	Groups    []*Group
	Rows      []FleetRow
	Scores    []NodeScore
	// Geomean per group of its medians over the first group's, over the
	// points both have (1 for the first; NaN: none in common).
	Geomean []float64
	// Ceilings: the nodes' roofline ceilings per group; ceilingAt
	// indexes them by name.
	Ceilings  []FleetCeiling
	ceilingAt map[string]int
}

// LoadFleet finds every results folder (a bench.txt beside a machine.json)
// under the roots and returns one node per host (folders without a host
// name: one node per CPU model, see HostOf), each with its median per point of metric m
// (a point measured in several of a node's folders: the median of all
// their samples).
func LoadFleet(roots []string, m Metric, f Filter) ([]*Node, error) {
	byHost := map[string]*Node{}
	ins := map[string]*Input{}
	var order []string
	for _, root := range roots {
		if err := loadFleetRoot(root, byHost, ins, &order); err != nil {
			return nil, err
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%s: %w: no results folder (bench.txt with machine.json) in it or below it", strings.Join(roots, ", "), ErrNoInput)
	}
	sort.Strings(order)
	nodes := make([]*Node, len(order))
	for i, h := range order {
		n := byHost[h]
		in := ins[h]
		for _, name := range in.Order {
			if vs := in.values(name, m); len(vs) > 0 && f.Match(name) {
				n.Values[name] = stats.Median(vs)
			}
		}
		nodes[i] = n
	}
	for _, n := range nodes {
		if err := n.LoadCeilings(); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

func loadFleetRoot(root string, byHost map[string]*Node, ins map[string]*Input, order *[]string) error {
	if _, err := os.Stat(root); err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "bench.txt" {
			return nil
		}
		dir := filepath.Dir(p)
		meta, err := results.ReadMeta(dir)
		if err != nil {
			if os.IsNotExist(err) {
				return nil // a bench.txt of some other tool
			}
			return err
		}
		n := NewNode(meta)
		if byHost[n.Host] == nil {
			byHost[n.Host] = n
			ins[n.Host] = &Input{Path: n.Host, Points: map[string]map[string][]float64{}}
			*order = append(*order, n.Host)
		}
		byHost[n.Host].Dirs = append(byHost[n.Host].Dirs, dir)
		return ins[n.Host].readBench(p)
	})
}

// LoadCeilings gives the node, per ceiling, the median over the
// roofline.json files of its folders (a sweep keeps a copy of its
// roofline: every folder of a suite has the same one).
func (n *Node) LoadCeilings() error {
	var order []Ceiling
	vals := map[string][]float64{}
	for _, dir := range n.Dirs {
		path := filepath.Join(dir, "roofline.json")
		if !fileExists(path) {
			continue
		}
		r, err := readRoofline(path)
		if err != nil {
			return err
		}
		n.RooflineSpread = max(n.RooflineSpread, r.MaxPassSpreadPct)
		for _, c := range ceilingsOf(r) {
			if vals[c.Name] == nil {
				order = append(order, c)
			}
			vals[c.Name] = append(vals[c.Name], c.Value)
		}
	}
	for _, c := range order {
		c.Value, c.Note = stats.Median(vals[c.Name]), ""
		n.Ceilings = append(n.Ceilings, c)
	}
	return nil
}

// NewNode is the node a results folder's machine.json names, without
// values: its host or, for folders written before machine.json named the
// host, one node per CPU model ("no host").
func NewNode(meta results.Meta) *Node {
	m := meta.Machine
	host := m.Host
	if host == "" {
		host = "(no host: " + m.CPUName() + ")"
	}
	return &Node{Host: host, CPU: m.CPUName(), Microcode: m.CPU.Microcode, Kernel: m.OS.Kernel, Ckbench: meta.Ckbench, Values: map[string]float64{}}
}

// machineCPU names an input's CPU: its brand, with family and model
// where they are known.
func machineCPU(m machine.Info) string {
	if m.CPU.Family == 0 && m.CPU.Model == 0 {
		return m.CPU.Brand
	}
	return m.CPUName()
}

// Cells are a node's identity and score as table cells: microcode,
// kernel, ckbench version, points, geomean against its model.
func (sc NodeScore) Cells() []string {
	n := sc.Node
	off := "-"
	if !math.IsNaN(sc.Off) {
		off = fmt.Sprintf("%s %.3f×", sc.Ceiling, sc.Off)
	}
	return []string{orDash(n.Microcode), orDash(n.Kernel), orDash(n.Ckbench), strconv.Itoa(sc.Points), fmt.Sprintf("%.3f×", sc.Geomean), off}
}

// CellNames head the columns of Cells.
var CellNames = []string{"microcode", "kernel", "ckbench", "points", "vs model", "furthest ceiling vs model"}

// CompareFleet groups the nodes by CPU model (the group with most nodes
// first), makes a row per point with every group's median over its
// nodes, and scores each node against its group.
func CompareFleet(nodes []*Node, m Metric, tolerance float64) (*Fleet, error) {
	fl := &Fleet{Metric: m, Tolerance: tolerance}
	byCPU := map[string]*Group{}
	for _, n := range nodes {
		g := byCPU[n.CPU]
		if g == nil {
			g = &Group{CPU: n.CPU}
			byCPU[n.CPU] = g
			fl.Groups = append(fl.Groups, g)
		}
		g.Nodes = append(g.Nodes, n)
	}
	sort.SliceStable(fl.Groups, func(i, j int) bool { return len(fl.Groups[i].Nodes) > len(fl.Groups[j].Nodes) })
	// Points: those of any node, in name order.
	seen := map[string]bool{}
	var names []string
	for _, n := range nodes {
		for name := range n.Values {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w with a %s value", ErrNoCommon, m.Unit())
	}
	sort.Strings(names)
	thr := benchmath.DefaultThresholds
	groupMedian := make([]map[string]float64, len(fl.Groups))
	for gi := range fl.Groups {
		groupMedian[gi] = map[string]float64{}
	}
	for _, name := range names {
		k := Keys(name)
		row := FleetRow{Name: name, Family: k["family"], Kernel: k["kernel"], ISA: k["isa"]}
		var samples []*benchmath.Sample
		for gi, g := range fl.Groups {
			var vs []float64
			for _, n := range g.Nodes {
				if v, ok := n.Values[name]; ok {
					vs = append(vs, v)
				}
			}
			md, spread := math.NaN(), math.NaN()
			var s *benchmath.Sample
			if len(vs) > 0 {
				md = stats.Median(vs)
				spread = 100 * (slices.Max(vs) - slices.Min(vs)) / md
				groupMedian[gi][name] = md
				s = benchmath.NewSample(vs, &thr)
			}
			samples = append(samples, s)
			row.Median, row.Spread, row.N = append(row.Median, md), append(row.Spread, spread), append(row.N, len(vs))
			ratio, p := math.NaN(), math.NaN()
			if gi > 0 && s != nil && samples[0] != nil && row.Median[0] > 0 {
				ratio = md / row.Median[0]
				p = benchmath.AssumeNothing.Compare(samples[0], s).P
			}
			row.Ratio, row.P = append(row.Ratio, ratio), append(row.P, p)
		}
		fl.Rows = append(fl.Rows, row)
	}
	for gi := range fl.Groups {
		var logSum float64
		cnt := 0
		for _, r := range fl.Rows {
			if r.Ratio[gi] > 0 {
				logSum += math.Log(r.Ratio[gi])
				cnt++
			}
		}
		g := math.NaN()
		switch {
		case gi == 0:
			g = 1
		case cnt > 0:
			g = math.Exp(logSum / float64(cnt))
		}
		fl.Geomean = append(fl.Geomean, g)
	}
	fl.Ceilings, fl.ceilingAt = fleetCeilings(fl.Groups)
	for gi, g := range fl.Groups {
		for _, n := range g.Nodes {
			var logSum float64
			cnt := 0
			for name, v := range n.Values {
				if md := groupMedian[gi][name]; md > 0 && v > 0 {
					logSum += math.Log(v / md)
					cnt++
				}
			}
			sc := NodeScore{Node: n, Group: gi, Geomean: math.NaN(), Points: cnt, Off: math.NaN()}
			if cnt > 0 {
				sc.Geomean = math.Exp(logSum / float64(cnt))
			}
			sc.Flagged, sc.Why = offMedian(sc.Geomean, len(g.Nodes), tolerance, "its points are")
			// Its ceiling furthest from the model's median (among the
			// nodes of the model that have a roofline), and the furthest
			// of those a fault moves.
			faultOff, fault := math.NaN(), ""
			for _, c := range n.Ceilings {
				k := fl.ceilingAt[c.Name]
				md := fl.Ceilings[k].Median[gi]
				if fl.Ceilings[k].N[gi] < 2 || !(md > 0) || !(c.Value > 0) {
					continue
				}
				r := c.Value / md
				if math.IsNaN(sc.Off) || math.Abs(math.Log(r)) > math.Abs(math.Log(sc.Off)) {
					sc.Off, sc.Ceiling = r, c.Name
				}
				if Faulty(c.Name) && (math.IsNaN(faultOff) || math.Abs(math.Log(r)) > math.Abs(math.Log(faultOff))) {
					faultOff, fault = r, c.Name
				}
			}
			if !math.IsNaN(faultOff) {
				flagged, why := offMedian(faultOff, fl.Ceilings[fl.ceilingAt[fault]].N[gi], tolerance, "its "+fault+" is")
				switch {
				case flagged && n.RooflineSpread > 100*tolerance:
					sc.Note = fmt.Sprintf("%s %.3f× its model's, but its roofline's passes spread %.0f %% (a busy host): measure it again to tell", fault, faultOff, n.RooflineSpread)
				case flagged:
					sc.Flagged = true
					sc.Why = strings.TrimPrefix(sc.Why+"; "+why, "; ")
				}
			}
			fl.Scores = append(fl.Scores, sc)
		}
	}
	return fl, nil
}

// offMedian says whether a node's ratio r to the median of its model's
// n nodes is further than the tolerance, and how (what: "its points
// are", "its read DRAM th=1 is").
func offMedian(r float64, n int, tolerance float64, what string) (bool, string) {
	dev := math.Abs(r - 1)
	switch {
	case n >= 3 && dev > tolerance:
		return true, fmt.Sprintf("%s %+.0f %% from the median of its %d siblings", what, 100*(r-1), n-1)
	case n == 2 && dev > tolerance/2:
		// Two nodes sit symmetric about their median: each is dev from
		// it, 2·dev from the other; which is off cannot be told.
		return true, fmt.Sprintf("%s about %.0f %% from the other node's of this model: one of them is off, which cannot be told from two", what, 200*dev)
	}
	return false, ""
}

// fleetCeilings puts the nodes' roofline ceilings per group: each
// ceiling's median over the group's nodes that have it, their spread and
// count, in the order first met; and their index by name.
func fleetCeilings(groups []*Group) (out []FleetCeiling, at map[string]int) {
	at = map[string]int{}
	vals := [][][]float64{} // per ceiling, per group
	for gi, g := range groups {
		for _, n := range g.Nodes {
			for _, c := range n.Ceilings {
				k, ok := at[c.Name]
				if !ok {
					k = len(out)
					at[c.Name] = k
					out = append(out, FleetCeiling{Name: c.Name, Unit: c.Unit})
					vals = append(vals, make([][]float64, len(groups)))
				}
				vals[k][gi] = append(vals[k][gi], c.Value)
			}
		}
	}
	for k := range out {
		fc := &out[k]
		for _, vs := range vals[k] {
			md, spread := math.NaN(), math.NaN()
			if len(vs) > 0 {
				md = stats.Median(vs)
				spread = 100 * (slices.Max(vs) - slices.Min(vs)) / md
			}
			fc.Median, fc.Spread, fc.N = append(fc.Median, md), append(fc.Spread, spread), append(fc.N, len(vs))
		}
	}
	return out, at
}

// WriteText writes the fleet comparison: the groups and their nodes, the
// per-point medians, spreads and ratios, and every node's score.
func (fl *Fleet) WriteText(w io.Writer) error {
	nodes := 0
	for _, g := range fl.Groups {
		nodes += len(g.Nodes)
	}
	fmt.Fprintf(w, "fleet: %d nodes, %d CPU models\n", nodes, len(fl.Groups))
	for gi, g := range fl.Groups {
		var hosts []string
		for i, n := range g.Nodes {
			if i == 8 {
				hosts = append(hosts, fmt.Sprintf("… %d more (fleet.csv has all)", len(g.Nodes)-8))
				break
			}
			hosts = append(hosts, n.Host)
		}
		fmt.Fprintf(w, "  %s  %s: %d node(s): %s\n", letter(gi), g.CPU, len(g.Nodes), strings.Join(hosts, ", "))
	}
	fmt.Fprintf(w, "metric: %s (%s); per group the median over its nodes (each node's median of its samples), ±spread (max − min over the median) across its nodes, (nodes); vs A: ratio, p of the U test over node values\n", fl.Metric.Unit(), fl.Metric.direction())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	group := ""
	for _, r := range fl.Rows {
		if g := r.Family + "/" + r.Kernel; g != group {
			group = g
			groupHeader(tw, g, len(fl.Groups))
		}
		fmt.Fprintf(tw, "%s\t", pointName(r.Name))
		for gi := range fl.Groups {
			if math.IsNaN(r.Median[gi]) {
				fmt.Fprint(tw, "-\t")
			} else {
				fmt.Fprintf(tw, "%s ±%.0f%% (%d)\t", num(r.Median[gi]), r.Spread[gi], r.N[gi])
			}
			if gi > 0 {
				if math.IsNaN(r.Ratio[gi]) {
					fmt.Fprint(tw, "-\t")
				} else {
					fmt.Fprintf(tw, "%.3f× (p=%.3f)\t", r.Ratio[gi], r.P[gi])
				}
			}
		}
		fmt.Fprintln(tw)
	}
	if len(fl.Groups) > 1 {
		fmt.Fprint(tw, "\ngeomean vs A\t1\t")
		for gi := 1; gi < len(fl.Groups); gi++ {
			fmt.Fprintf(tw, "\t%.3f×\t", fl.Geomean[gi])
		}
		fmt.Fprintln(tw)
	}
	if len(fl.Ceilings) > 0 {
		fmt.Fprint(tw, "\nroofline ceilings per model: the median over its nodes' roofline.json, ±spread, (nodes); vs A: ratio\n")
		groupHeader(tw, "ceiling", len(fl.Groups))
		for _, c := range fl.Ceilings {
			fmt.Fprintf(tw, "%s\t", c.Name)
			for gi := range fl.Groups {
				if math.IsNaN(c.Median[gi]) {
					fmt.Fprint(tw, "-\t")
				} else {
					fmt.Fprintf(tw, "%s %s ±%.0f%% (%d)\t", num(c.Median[gi]), c.Unit, c.Spread[gi], c.N[gi])
				}
				if gi > 0 {
					fmt.Fprintf(tw, "%s\t", ratioText(c.Median[gi], c.Median[0]))
				}
			}
			fmt.Fprintln(tw)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nnodes against their model's median (geomean over their points, and the roofline ceiling furthest from the model's; flagged beyond %.0f %%):\n", 100*fl.Tolerance)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "node\tmodel\t%s\t\n", strings.Join(CellNames, "\t"))
	for _, sc := range fl.Scores {
		mark := ""
		switch {
		case sc.Flagged:
			mark = "FLAGGED: " + sc.Why + " (a bad DIMM, a BIOS setting, a noisy neighbour?)"
		case sc.Note != "":
			mark = "note: " + sc.Note
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sc.Node.Host, letter(sc.Group), strings.Join(sc.Cells(), "\t"), mark)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteCSV writes fleet.csv: one line per node and point, after its
// roofline ceilings (family "ceiling", metric "ceiling").
func (fl *Fleet) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"name", "family", "kernel", "isa", "node", "model", "microcode", "kernel_version", "metric", "unit", "value", "model_median", "vs_model"})
	for gi, g := range fl.Groups {
		for _, n := range g.Nodes {
			for _, c := range n.Ceilings {
				md := fl.Ceilings[fl.ceilingAt[c.Name]].Median[gi]
				cw.Write([]string{c.Name, "ceiling", "", "", n.Host, g.CPU, n.Microcode, n.Kernel, "ceiling", c.Unit,
					strconv.FormatFloat(c.Value, 'g', 6, 64), strconv.FormatFloat(md, 'g', 6, 64), strconv.FormatFloat(c.Value/md, 'g', 4, 64)})
			}
			for _, r := range fl.Rows {
				v, ok := n.Values[r.Name]
				if !ok {
					continue
				}
				md := r.Median[gi]
				cw.Write([]string{r.Name, r.Family, r.Kernel, r.ISA, n.Host, g.CPU, n.Microcode, n.Kernel, string(fl.Metric), fl.Metric.Unit(),
					strconv.FormatFloat(v, 'g', 6, 64), strconv.FormatFloat(md, 'g', 6, 64), strconv.FormatFloat(v/md, 'g', 4, 64)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// Chart is the fleet view of compare.png: each node's geomean against its
// model's median, a bar per node coloured by model, the dashed line at 1;
// beyond 60 nodes (bars too thin to read), per model its nodes' scores
// sorted, one line each: the tails are the nodes to look at.
func (fl *Fleet) Chart() interface{ Save(...string) error } {
	if len(fl.Scores) > 60 {
		c := plots.Lines{Title: fmt.Sprintf("Fleet: nodes' %s against their CPU model's median, sorted", fl.Metric.Unit()),
			XLabel: "node rank within its model", YLabel: "geomean over points, 1 = the model's median"}
		for gi, g := range fl.Groups {
			var vs []float64
			for _, sc := range fl.Scores {
				if sc.Group == gi && !math.IsNaN(sc.Geomean) {
					vs = append(vs, sc.Geomean)
				}
			}
			slices.Sort(vs)
			ln := plots.Line{Label: fmt.Sprintf("%s: %s (%d nodes)", letter(gi), g.CPU, len(vs))}
			for i, v := range vs {
				ln.X, ln.Y = append(ln.X, float64(i+1)), append(ln.Y, v)
			}
			c.Lines = append(c.Lines, ln)
		}
		return c
	}
	return fl.bars()
}

func (fl *Fleet) bars() plots.Bars {
	c := plots.Bars{Title: fmt.Sprintf("Fleet: each node's %s against its CPU model's median", fl.Metric.Unit()), YLabel: "geomean over points, 1 = the model's median", Ref: 1}
	for _, sc := range fl.Scores {
		c.Groups = append(c.Groups, sc.Node.Host)
	}
	for gi, g := range fl.Groups {
		s := plots.BarSeries{Label: letter(gi) + ": " + g.CPU}
		for _, sc := range fl.Scores {
			v := math.NaN()
			if sc.Group == gi {
				v = sc.Geomean
			}
			s.Values = append(s.Values, v)
		}
		c.Series = append(c.Series, s)
	}
	c.Stacked = true
	return c
}
