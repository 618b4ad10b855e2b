package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/ckbench/ckbench/hwcounters"
	"github.com/ckbench/ckbench/sweeps"
)

const countersUsage = `Usage: ckbench counters [flags]

Opens each performance counter on a pinned thread, runs a calibrated loop
(a chain of dependent integer adds: 8 cycles and 10 instructions per round
on x86-64) and the first touch of 1024 fresh pages, and prints what each
counter read beside what it should read. An event that cannot be opened is
listed as unavailable with the reason, never as 0.

Flags:
`

func cmdCounters(args []string, stdout io.Writer) error {
	fs := newFlagSet("counters", countersUsage, stdout)
	list := fs.String("events", "default", "events: default, or a list of names and raw rUUEE codes (e.g. cycles,instructions,r01c2)")
	rounds := fs.Int("rounds", 20_000_000, "rounds of the calibrated loop")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	evs, err := hwcounters.ParseList(*list)
	if err != nil {
		return usagef("--events: %v", err)
	}
	if len(evs) == 0 {
		return usagef("--events none: nothing to read")
	}
	if *rounds < 1000 {
		return usagef("--rounds %d: use at least 1000", *rounds)
	}
	cal := sweeps.CalibrateCounters(evs, *rounds)

	fmt.Fprintf(stdout, "loop: %s, %d rounds, %s wall; page-faults: first touch of %d pages\n\n", cal.Loop, cal.Iters, cal.Wall, cal.Pages)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "event\tread\texpected\tread/expected\trunning\t")
	var unavailable []hwcounters.CalibrationRow
	for _, r := range cal.Rows {
		if !r.Available() {
			unavailable = append(unavailable, r)
			continue
		}
		exp, ratio := "-", "-"
		if !math.IsNaN(r.Expected) {
			exp = fmt.Sprintf("%.4g", r.Expected)
			if r.Expected > 0 {
				ratio = fmt.Sprintf("%.3f", r.Count/r.Expected)
			}
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%s\t%s\t%.0f%%\t\n", r.Event.Name, r.Count, exp, ratio, 100*r.Ratio)
	}
	tw.Flush()
	if len(unavailable) > 0 {
		fmt.Fprintln(stdout, "\nunavailable (no value is recorded for these, never 0):")
		for _, r := range unavailable {
			fmt.Fprintf(stdout, "  %-17s %s\n", r.Event.Name, strings.TrimPrefix(r.Err.Error(), r.Event.Name+": "))
		}
	}
	if hwcounters.Privileged() {
		fmt.Fprintln(stdout, "\ncounting user and kernel mode (root)")
	} else {
		fmt.Fprintln(stdout, "\ncounting user mode only (exclude_kernel: not root)")
	}
	return nil
}
