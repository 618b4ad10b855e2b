package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sweeps"
)

const sweepAllUsage = `Usage: ckbench sweep all [flags]

The whole suite: the roofline once, every family's sweep at the preset
(attention decode, prefill, the quantized GEMVs, the KV-cache stores,
softmax), each bounded by that roofline, then the report. Writes
out/<run-id>/roofline.json, one run folder per step (attention, prefill,
quant, kvcache, softmax) and report/index.html.

  ckbench sweep all                      the quick preset: a few minutes
  ckbench sweep all --preset default --threads 1,all
  ckbench sweep all --preset full --plan  what the full suite would measure, and how long
  ckbench sweep all --preset full --resume out/<run-id>   finish a suite that was killed
                                         (with the flags it ran with)

Flags:
`

// step is one of sweep all's steps: its run folder's name, its family and
// the flags that make the family's preset grid the step's.
type step struct {
	name, family string
	args         []string
}

// sweep runs the step's family sweep with the flags every step shares,
// its own, then more.
func (s step) sweep(common []string, stdout, stderr io.Writer, more ...string) error {
	fam, _ := sweeps.LookupFamily(s.family)
	return sweepFamily(fam, slices.Concat(common, s.args, more), stdout, stderr)
}

// allSteps are sweep all's steps (prefill is the attention family's
// prefill kernels, which its presets leave to this step).
func allSteps(preset string) []step {
	prefill := map[string][]string{
		"quick":   {"--tq", "256", "--ctx", "256"},
		"default": {"--tq", "512,2048", "--ctx", "2048"},
		"full":    {"--tq", "512,2048,4096", "--ctx", "4096", "--mask", "causal,none,doc"},
	}[preset]
	return []step{
		{"attention", "attention", nil},
		{"prefill", "attention", append([]string{"--kernel", "prefill-materialized,prefill-flash", "--heads", "8:8"}, prefill...)},
		{"quant", "quant", nil},
		{"kvcache", "kvcache", nil},
		{"softmax", "softmax", nil},
	}
}

func sweepAll(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep all", sweepAllUsage, stdout)
	preset := fs.String("preset", "quick", "quick (minutes), default, full (hours): every step's preset")
	out := fs.String("out", "out", "folder that receives the run folder")
	runID := fs.String("run-id", "", "name of the run folder (default: the start time)")
	threads := fs.String("threads", "1", "thread counts for every step, e.g. 1,all")
	isaList := fs.String("isa", "", "tiers for every step (default: every tier that runs here)")
	retries := fs.Int("retries", 1, "measure an unstable point again at the end of its step, up to this many more times (0: once)")
	roof := fs.String("roofline", "auto", "auto (measured once, first), none, or a roofline.json to reuse")
	noProgress := fs.Bool("no-progress", false, "no progress bar, no line per point")
	plan := fs.Bool("plan", false, "print every step's plan and exit without measuring")
	force := fs.Bool("force", false, "use a --roofline file measured on another machine")
	only := fs.String("steps", "all", "the steps to run, e.g. attention,softmax (all: attention, prefill, quant, kvcache, softmax)")
	resume := fs.String("resume", "", "a sweep all folder that was interrupted or killed: its complete steps are kept, the others resumed (the points they lack) or run, with its roofline.json, and the report written again; give the flags it ran with")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if err := checkRunID(*runID); err != nil {
		return err
	}
	if *resume != "" {
		if set := setFlags(fs); set["out"] || set["run-id"] {
			return usagef("--resume %s: it is the run folder; --out and --run-id do not apply", *resume)
		}
		if err := checkSuiteFolder(*resume); err != nil {
			return err
		}
	}
	switch *preset {
	case "quick", "default", "full":
	default:
		return usagef("--preset %q: quick, default or full", *preset)
	}
	common := []string{"--preset", *preset, "--threads", *threads, "--retries", strconv.Itoa(*retries)}
	if *isaList != "" {
		common = append(common, "--isa", *isaList)
	}
	if *noProgress {
		common = append(common, "--no-progress")
	}
	if *force {
		common = append(common, "--force")
	}
	steps := allSteps(*preset)
	if *only != "all" {
		var keep []step
		var names []string
		for _, s := range steps {
			names = append(names, s.name)
		}
		for _, w := range strings.Split(*only, ",") {
			found := false
			for _, s := range steps {
				if s.name == strings.TrimSpace(w) {
					keep, found = append(keep, s), true
				}
			}
			if !found {
				return usagef("--steps: unknown step %q (steps: %s)", w, strings.Join(names, ", "))
			}
		}
		steps = keep
	}
	// A roofline file is read and checked once, before any plan or
	// folder, as each step will read it: a bad one is refused with
	// nothing written.
	if err := checkRooflineFile(sweepFlags{roof: *roof, force: *force}, machine.Describe()); err != nil {
		return err
	}
	// Every step's plan: printed with --plan, else made silently so that
	// every step's flags are checked before anything is measured or written.
	// With --resume, each step that has a folder is checked against it
	// (its family, grid and machine) and plans only the points it lacks.
	// complete: per step that has a folder, whether it is complete (kept
	// as it is) or to resume.
	complete := map[string]bool{}
	for _, s := range steps {
		w := io.Discard
		if *plan {
			w = stdout
			fmt.Fprintf(stdout, "== %s\n", s.name)
		}
		more := []string{"--plan", "--roofline", "none"}
		if *resume != "" {
			sub := filepath.Join(*resume, s.name)
			meta, err := results.ReadMeta(sub)
			switch {
			case err == nil:
				more = append(more, "--resume", sub)
				complete[s.name] = meta.Complete
			case !errors.Is(err, os.ErrNotExist):
				return usagef("--resume %s: step %s: %v", *resume, s.name, err)
			}
		}
		if err := s.sweep(common, w, w, more...); err != nil {
			return err
		}
	}
	if *plan {
		return nil
	}
	dir := *resume
	if dir == "" {
		// The roofline and report's room; each step checks its own points'.
		if err := results.CheckOutput(*out, 0); err != nil {
			return outError(err)
		}
		var err error
		if dir, _, err = results.MakeRunDir(*out, *runID, time.Now()); err != nil {
			return outError(err)
		}
		fmt.Fprintf(stderr, "ckbench: sweep all (%s) -> %s\n", *preset, dir)
	} else {
		fmt.Fprintf(stderr, "ckbench: resuming sweep all (%s) in %s\n", *preset, dir)
	}
	roofPath := *roof
	if *roof == "auto" {
		roofPath = filepath.Join(dir, "roofline.json")
		if _, err := os.Stat(roofPath); *resume != "" && err == nil {
			fmt.Fprintf(stderr, "ckbench: reusing %s\n", roofPath)
		} else if err := measureAllRoofline(roofPath, *threads, stderr); err != nil {
			return err
		}
	}
	var failed []string
	for _, s := range steps {
		fmt.Fprintf(stderr, "\n== %s\n", s.name)
		more := []string{"--out", dir, "--run-id", s.name, "--roofline", roofPath}
		if *resume != "" {
			sub := filepath.Join(dir, s.name)
			switch done, ok := complete[s.name]; {
			case ok && done:
				fmt.Fprintf(stderr, "ckbench: %s is complete: kept\n", sub)
				continue
			case ok:
				more = []string{"--resume", sub, "--roofline", roofPath}
			default:
				// A folder made but killed before its machine.json (an
				// instant) is empty: it is made again.
				os.Remove(sub)
			}
		}
		err := s.sweep(common, stdout, stderr, more...)
		var ex exitError
		switch {
		case err == nil:
		case errors.As(err, &ex) && ex.code == exitInterrupted:
			fmt.Fprintf(stderr, "ckbench: %s\n", ex.msg)
			writeAllReport(dir, stdout, stderr)
			return exitError{code: exitInterrupted, msg: fmt.Sprintf("interrupted in step %s; %s holds what was measured (report included; ckbench sweep all --resume %s, with the same --preset, --threads, --isa and --steps, measures the rest)", s.name, dir, dir)}
		case errors.As(err, &ex) && ex.code == exitFailure:
			failed = append(failed, s.name+": "+ex.msg)
			fmt.Fprintf(stderr, "ckbench: %s: %s (going on with the next step)\n", s.name, ex.msg)
		default:
			return err
		}
	}
	writeAllReport(dir, stdout, stderr)
	if len(failed) > 0 {
		return exitError{code: exitFailure, msg: strings.Join(failed, "; ")}
	}
	return nil
}

// checkSuiteFolder checks that dir is a sweep all folder: a folder that
// is not itself a run folder, holding its roofline.json or a step's.
func checkSuiteFolder(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return usagef("--resume %s: %v", dir, err)
	}
	if !st.IsDir() {
		return usagef("--resume %s: not a folder (give the folder sweep all wrote: out/<run-id>)", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "machine.json")); err == nil {
		return usagef("--resume %s: a run folder of one sweep, not of sweep all (resume it with ckbench sweep <family> --resume %s)", dir, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "roofline.json")); err == nil {
		return nil
	}
	for _, s := range allSteps("quick") {
		if _, err := os.Stat(filepath.Join(dir, s.name, "machine.json")); err == nil {
			return nil
		}
	}
	return usagef("--resume %s: not a sweep all folder (it has no roofline.json and no step's run folder; a suite stopped before its roofline was written has nothing to resume: run it again)", dir)
}

// measureAllRoofline measures sweep all's roofline (quick: 1 thread and
// the largest of --threads) and writes it before any step runs.
func measureAllRoofline(path, threads string, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	info := machine.Describe()
	r, _, err := sweepRoofline(ctx, sweepFlags{roof: "auto", threads: threads}, info, waitNotice(stderr), stderr)
	if err != nil {
		return err
	}
	if err := writeRooflineJSON(path, r); err != nil {
		return exitError{code: exitFailure, msg: fmt.Sprintf("writing %s: %v", path, err)}
	}
	for _, n := range r.Cautions() {
		fmt.Fprintln(stderr, "note:", n)
	}
	return nil
}

// writeAllReport writes dir/report and says where index.html is.
func writeAllReport(dir string, stdout, stderr io.Writer) {
	path, notes, err := writeReport([]string{dir}, filepath.Join(dir, "report"))
	if err != nil {
		fmt.Fprintf(stderr, "ckbench: report: %v\n", err)
		return
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	abs, _ := filepath.Abs(path)
	fmt.Fprintf(stdout, "\nreport: %s\n", abs)
}
