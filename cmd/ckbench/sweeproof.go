package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/report"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// sweepRoofline returns the roofline a sweep bounds its points by: measured
// now (auto), read from a file (refused when it comes from another machine,
// unless --force), or none.
func sweepRoofline(ctx context.Context, f sweepFlags, info machine.Info, wait func(error), stderr io.Writer) (*roofline.Roofline, []string, error) {
	switch f.roof {
	case "none":
		return nil, nil, nil
	case "auto":
		threads := []int{1}
		if ts, err := parseThreads(f.threads); err == nil && slices.Max(ts) > 1 {
			threads = append(threads, slices.Max(ts)) // the n-thread points' ceilings
		}
		fmt.Fprintf(stderr, "ckbench: measuring the roofline first (quick, %s thread(s), ~20 s each; --roofline FILE reuses one, --roofline none skips)\n", joinInts(threads))
		r, err := roofline.Measure(ctx, info, roofline.Options{Threads: threads, Quick: true, Wait: wait})
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, exitError{code: exitInterrupted, msg: "interrupted while measuring the roofline; nothing written"}
			}
			return nil, nil, fmt.Errorf("measuring the roofline: %w", err)
		}
		return r, append([]string{fmt.Sprintf("roofline measured in this run (quick, %s thread(s)): roofline.json", joinInts(threads))}, r.Cautions()...), nil
	}
	r, err := roofline.Load(f.roof, info)
	switch {
	case errors.Is(err, roofline.ErrOtherMachine) && f.force:
		msg := fmt.Sprintf("--roofline %s: %v; used anyway (--force): bounds may not apply", f.roof, err)
		fmt.Fprintln(stderr, "warning:", msg)
		return r, append([]string{msg}, r.Cautions()...), nil
	case errors.Is(err, roofline.ErrOtherMachine):
		return nil, nil, usagef("--roofline %s: %v (measure one here with ckbench roofline, or pass --force)", f.roof, err)
	case err != nil:
		return nil, nil, usagef("--roofline %s: %v", f.roof, err)
	}
	return r, append([]string{"roofline from " + f.roof}, r.Cautions()...), nil
}

// checkRooflineFile reads and checks f's --roofline when it names a file,
// as sweepRoofline will (so that --plan and sweep all refuse a bad one
// before they print a plan or make a folder); auto and none pass.
func checkRooflineFile(f sweepFlags, info machine.Info) error {
	if f.roof == "auto" || f.roof == "none" {
		return nil
	}
	_, _, err := sweepRoofline(context.Background(), f, info, nil, io.Discard)
	return err
}

// writeSweepRoofline keeps the roofline in the run folder and draws every
// timed point on it: colored by kernel, marked by tier.
func writeSweepRoofline(run *results.Run, r *roofline.Roofline) error {
	if err := writeRooflineJSON(filepath.Join(run.Dir, "roofline.json"), r); err != nil {
		return err
	}
	c := report.RooflineChart(r, run.Records())
	c.Title = "Sweep on the roofline: " + r.Machine.CPU.Brand
	return c.Save(filepath.Join(run.Dir, "roofline.png"), filepath.Join(run.Dir, "roofline.svg"))
}

// writeRooflineJSON writes r to path (indented JSON, atomically).
func writeRooflineJSON(path string, r *roofline.Roofline) error {
	return results.WriteFileAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	})
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
