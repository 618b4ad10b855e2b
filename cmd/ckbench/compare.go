package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ckbench/ckbench/compare"
	"github.com/ckbench/ckbench/results"
)

const compareUsage = `Usage: ckbench compare A B [C...] [flags]

Puts the results of machines, runs or builds side by side. Each input is a
results folder (every bench.txt under it is read: a run folder, a folder
of run folders, a 'sweep all' folder) or a bench.txt file; the first is
the baseline. Per point: each input's median and its 95 % confidence
interval, and for every later input its ratio to the first with the
p-value of a Mann-Whitney U test (golang.org/x/perf/benchmath, as
benchstat computes them; ~ marks a difference that is not significant);
per kernel×tier the geomean of the ratios. The machine of each input (CPU,
tiers that ran) heads its column. Above the points, each input's roofline
ceilings (its roofline.json: clock, compute ceilings, read bandwidth per
level) with their ratios to the first; two roofline folders alone
(ckbench roofline's) compare just those.

Writes DIR/compare.txt (this table), compare.csv and compare.png/.svg (the
geomean ratio per kernel×tier against the first input).

  ckbench compare out/zen4-run out/xeon-run
  ckbench compare out/zen4-roofline out/xeon-roofline
  ckbench compare a/bench.txt b/bench.txt --metric pct_of_bound --filter 'family=attention isa=avx512'

Fleet: given one folder tree (or --fleet), every results folder under it
is a node's (one per host in machine.json, all its folders merged); the
nodes are grouped by CPU model, each point gets per model the median over
its nodes and their spread, the models are compared as above, and every
node is scored against its model's median (the geomean over its points):
one further than --tolerance (10 %) is flagged — a bad DIMM, a BIOS
setting, a noisy neighbour. Writes fleet.txt, fleet.csv, compare.png.

  ckbench compare /shared/ckbench-results

Only points measured ok are in bench.txt (unstable ones are not results).
benchstat a/bench.txt b/bench.txt works on the same files, unmodified.

Flags:
`

func cmdCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compare", compareUsage, stdout)
	metric := fs.String("metric", "ns", "what to compare: ns (time per call), gbs, gflops or pct_of_bound")
	filter := fs.String("filter", "", "keep the points matching every term: key=v1,v2 or key!=v; keys: family, kernel, and the name's keys (isa, hd, ctx, kv, fmt, th, ...), e.g. 'family=attention isa=avx512,avx2'")
	out := fs.String("out", "", "folder for compare.txt, compare.csv and compare.png/.svg (default: out/compare-<time>)")
	fleet := fs.Bool("fleet", false, "the inputs are folder trees of many machines' results (implied by a single input): group the nodes by CPU model, compare the models, flag nodes far from their siblings")
	tolerance := fs.Float64("tolerance", 10, "--fleet: a node whose geomean is further than this many percent from its model's median is flagged")
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return helpOK(err)
	}
	m, err := compare.ParseMetric(*metric)
	if err != nil {
		return usagef("--metric: %v", err)
	}
	f, err := compare.ParseFilter(*filter)
	if err != nil {
		return usagef("--filter: %v", err)
	}
	// Checked whatever the mode, so that a bad value is never silently
	// ignored (it is used by fleets only).
	if !(*tolerance > 0 && *tolerance < 1000) {
		return usagef("--tolerance %v: a percentage above 0 and under 1000", *tolerance)
	}
	if *fleet || len(paths) == 1 {
		if len(paths) == 0 {
			return usagef("compare --fleet: give the folder that holds the fleet's results (see ckbench compare --help)")
		}
		return compareFleet(paths, m, f, *tolerance/100, *out, stdout)
	}
	if len(paths) < 2 {
		return usagef("compare: give at least two results folders or bench.txt files (see ckbench compare --help)")
	}
	var ins []*compare.Input
	for _, p := range paths {
		in, err := compare.Load(p)
		switch {
		case errors.Is(err, errNotExist):
			return usagef("compare: %s: no such file or folder", p)
		case err != nil:
			return usagef("compare: %v", err)
		}
		ins = append(ins, in)
	}
	labels := map[string]bool{}
	for _, in := range ins {
		if labels[in.Label] { // two inputs named alike: use their paths
			for _, in := range ins {
				in.Label = in.Path
			}
			break
		}
		labels[in.Label] = true
	}
	t, err := compare.Compare(ins, m, f)
	if err != nil {
		return usagef("compare: %v", err)
	}
	var text bytes.Buffer
	if err := t.WriteText(&text); err != nil {
		return err
	}
	summary := fmt.Sprintf("%d points compared", len(t.Rows))
	switch {
	case len(t.Rows) == 0:
		summary = fmt.Sprintf("%d roofline ceilings compared", len(t.Ceilings))
	case len(t.Ceilings) > 0:
		summary += fmt.Sprintf(", with %d roofline ceilings", len(t.Ceilings))
	}
	return writeComparison(*out, "compare", text.Bytes(), t.WriteCSV, t.Chart(), summary, stdout)
}

// writeComparison writes a comparison into out (default
// out/<name>-<time>): <name>.txt (text, also printed), <name>.csv and
// compare.png/.svg, and says where they are.
func writeComparison(out, name string, text []byte, writeCSV func(io.Writer) error, chart interface{ Save(...string) error }, summary string, stdout io.Writer) error {
	dir := out
	if dir == "" {
		dir = filepath.Join("out", name+"-"+results.NewRunID(time.Now()))
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return usagef("--out %s: is a file, not a folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return exitError{code: exitFailure, msg: fmt.Sprintf("compare: %v", err)}
	}
	err := results.WriteFilesAtomic(
		[]string{filepath.Join(dir, name+".txt"), filepath.Join(dir, name+".csv")},
		[]func(io.Writer) error{
			func(w io.Writer) error { _, err := w.Write(text); return err },
			writeCSV,
		})
	if err == nil {
		err = chart.Save(filepath.Join(dir, "compare.png"), filepath.Join(dir, "compare.svg"))
	}
	if err != nil {
		return exitError{code: exitFailure, msg: fmt.Sprintf("compare: %v", err)}
	}
	stdout.Write(text)
	fmt.Fprintf(stdout, "\n%s; files: %s (%s.txt, %s.csv, compare.png, compare.svg)\n", summary, dir, name, name)
	return nil
}

var errNotExist = fs.ErrNotExist

// compareFleet is compare --fleet: every results folder under the roots,
// one node per host, grouped by CPU model.
func compareFleet(roots []string, m compare.Metric, f compare.Filter, tolerance float64, out string, stdout io.Writer) error {
	nodes, err := compare.LoadFleet(roots, m, f)
	if err != nil {
		return usagef("compare: %v", err)
	}
	fl, err := compare.CompareFleet(nodes, m, tolerance)
	if err != nil {
		return usagef("compare: %v", err)
	}
	var text bytes.Buffer
	if err := fl.WriteText(&text); err != nil {
		return err
	}
	return writeComparison(out, "fleet", text.Bytes(), fl.WriteCSV, fl.Chart(),
		fmt.Sprintf("%d nodes, %d points", len(nodes), len(fl.Rows)), stdout)
}
