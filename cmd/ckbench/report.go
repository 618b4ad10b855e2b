package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ckbench/ckbench/report"
	"github.com/ckbench/ckbench/results"
)

const reportUsage = `Usage: ckbench report DIR... [flags]

Turns results folders into a report to hand on: DIR/report/index.html
(self-contained, its images beside it), report.md, and every chart as PNG
and SVG. Each DIR is a results folder or a folder of them (a 'sweep all'
run, out/); all their points go into one report.

The report has: the machine (from machine.json), its ISA tiers (skipped
ones with the reason), the counters available, the commands that made
the data; the measured ceilings; the roofline with every point; per
family the rate against context per head dim and head pair, decode-flash's tile_k ×
head_dim heatmap of % of bound, the decode kernels by KV type, the GEMV
formats by tier, prefill materialized against flash, thread scaling; the
ten points closest to and furthest from their bound; every point that is
not a result (unstable, above_bound, failed) with its reason.

  ckbench report out/20261123-040000
  ckbench report out/zen4 --out /tmp/zen4-report

Flags:
`

func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", reportUsage, stdout)
	out := fs.String("out", "", "folder the report is written to (default: DIR/report, the first DIR's)")
	dirs, err := parseInterleaved(fs, args)
	if err != nil {
		return helpOK(err)
	}
	if len(dirs) == 0 {
		return usagef("report: give a results folder (see ckbench report --help)")
	}
	path, notes, err := writeReport(dirs, *out)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	fmt.Fprintf(stdout, "report: %s\n", path)
	return nil
}

// writeReport loads dirs and writes their report into out (default:
// the first dir's report/), returning index.html's path. Bad or missing
// results are usage errors; nothing is written then.
func writeReport(dirs []string, out string) (string, []string, error) {
	runs, notes, err := report.Load(dirs...)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil, usagef("report: %v", err)
	case errors.Is(err, report.ErrNoResults), errors.Is(err, results.ErrCorrupt):
		return "", nil, usagef("report: %v", err)
	case err != nil:
		return "", nil, usagef("report: %v", err)
	}
	if out == "" {
		out = filepath.Join(dirs[0], "report")
	}
	if st, err := os.Stat(out); err == nil && !st.IsDir() {
		return "", nil, usagef("--out %s: is a file, not a folder", out)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(out)), 0o755); err != nil {
		return "", nil, exitError{code: exitFailure, msg: fmt.Sprintf("report: %v", err)}
	}
	path, err := report.Write(out, runs, notes)
	if err != nil {
		return "", nil, exitError{code: exitFailure, msg: fmt.Sprintf("report: %v", err)}
	}
	return path, notes, nil
}
