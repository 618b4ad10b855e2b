package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/report"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
	"github.com/ckbench/ckbench/sampler"
	"github.com/ckbench/ckbench/sweeps"
)

const rooflineUsage = `Usage: ckbench roofline [flags]

Measures this machine's ceilings: FP32 FMA peak per ISA tier (and with
its operands widened from f16 or int8, the roofs of f16 and q8_0 KV caches), int8 dot
peak (VPMADDUBSW+VPMADDWD; VPDPBUSD on avx512vnni), the core clock, and
read/copy/write bandwidth over working sets from 4 KiB to 8 × L3 (to
512 MiB where cpuid reports no L3: the L3 is then read off the curve), on
1 thread and on all CPUs. Writes out/<run-id>/roofline.json, roofline.png,
roofline.svg and bandwidth.png.

Flags:
`

func cmdRoofline(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("roofline", rooflineUsage, stdout)
	threads := fs.String("threads", "", "thread counts, e.g. 1,2 (default: 1 and every allowed CPU)")
	out := fs.String("out", "out", "folder that receives the run folder")
	runID := fs.String("run-id", "", "name of the run folder (default: the start time)")
	quick := fs.Bool("quick", false, "one working set per octave and short sampling (well under a minute)")
	isaList := fs.String("isa", "", "tiers whose peaks are measured; the widest of them also reads the bandwidth curves (the read curve at each size the faster of its loop and avx2's), so --isa generic,avx2 measures an AVX-512 CPU as an AVX2-only one would (default: every tier that runs here)")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	var opt roofline.Options
	opt.Quick = *quick
	if *isaList != "" && *isaList != "all" { // all: every tier that runs here, the default
		ts, err := sweeps.ParseList("isa", *isaList, isa.All, isa.Parse)
		if err != nil {
			return flagError(err)
		}
		for _, t := range ts {
			if st := isa.Detect(t); !st.Runs {
				return usagef("roofline: --isa %s: %s", t, st.Reason)
			}
		}
		opt.Tiers = ts
	}
	if *threads != "" {
		ts, err := sweeps.ParseInts("threads", *threads)
		if err != nil {
			return flagError(err)
		}
		opt.Threads = ts
	}
	if err := checkRunID(*runID); err != nil {
		return err
	}
	if cpus, err := sampler.AllowedCPUs(); err == nil {
		if err := roofline.CheckThreads(opt.Threads, cpus); err != nil {
			return usagef("roofline: --threads: %v", err)
		}
	}
	// The folder first: nothing is measured for results that cannot be kept.
	if err := results.CheckOutput(*out, 0); err != nil {
		return outError(err)
	}
	dir, _, err := results.MakeRunDir(*out, *runID, time.Now())
	if err != nil {
		return outError(err)
	}
	info := machine.Describe()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt.Progress = stderr
	opt.Wait = waitNotice(stderr)
	r, err := roofline.Measure(ctx, info, opt)
	if err != nil {
		os.Remove(dir) // still empty
		if ctx.Err() != nil {
			return exitError{code: exitInterrupted, msg: "interrupted while measuring the roofline; nothing written"}
		}
		return err
	}
	path := filepath.Join(dir, "roofline.json")
	if err := writeRooflineJSON(path, r); err != nil {
		return err
	}
	if err := report.RooflineChart(r, nil).Save(filepath.Join(dir, "roofline.png"), filepath.Join(dir, "roofline.svg")); err != nil {
		return err
	}
	if err := report.BandwidthChart(r).Save(filepath.Join(dir, "bandwidth.png")); err != nil {
		return err
	}
	for _, st := range r.Skipped {
		fmt.Fprintf(stdout, "  %-10s skipped: %s\n", st.Tier, st.Reason)
	}
	fmt.Fprintln(stdout, "ceilings:")
	for _, c := range r.Compute {
		extra := ""
		if c.LoadGHz > 0 && c.FMA != nil {
			extra = fmt.Sprintf("  (%.1f%% of %s at %.2f GHz under load)", c.PctOfPorts, c.FMA, c.LoadGHz)
		}
		fmt.Fprintf(stdout, "  %-10s %-9s %d thread(s) %9.1f %s%s\n", c.Tier, c.Kind, c.Threads, c.Value, c.Unit, extra)
		if c.Note != "" {
			fmt.Fprintf(stdout, "  warning: %s %s: %s\n", c.Tier, c.Kind, c.Note)
		}
	}
	for _, lv := range r.Levels {
		note := ""
		if lv.Note != "" {
			note = "  (" + lv.Note + ")"
		}
		fmt.Fprintf(stdout, "  %-4s read %d thread(s) %7.1f GB/s%s\n", lv.Name, lv.Threads, lv.GBs, note)
	}
	for _, n := range r.ScalingNotes() {
		fmt.Fprintf(stdout, "  note: %s\n", n)
	}
	if r.MaxPassSpreadPct > 5 {
		fmt.Fprintf(stdout, "  warning: a ceiling moved by up to %.0f%% between its %d passes: something else (another tenant of the host?) was using the CPU or memory; the best pass is kept, but re-run on a quiet machine to trust ±5%%\n", r.MaxPassSpreadPct, r.Passes)
	}
	fmt.Fprintf(stdout, "  core clock ≈ %.2f GHz (integer chain); TSC %.2f GHz\nresults: %s (roofline.png, roofline.svg, bandwidth.png beside it)\n", r.Clock.CoreGHz, r.Clock.TSCGHz, path)
	return nil
}
