package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ckbench/ckbench/hwcounters"
	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sampler"
	"github.com/ckbench/ckbench/sweeps"
)

const sweepUsage = `Usage: ckbench sweep attention [flags]

Checks every point of the grid against a float64 reference, then times it
on one pinned CPU, and writes out/<run-id>/ (machine.json, points.csv,
points.jsonl, bench.txt). A point that fails its check is recorded as
failed and never timed; a tier this CPU lacks is recorded as skipped.

Lists take commas; integer lists also take ranges: 512..65536 (doubling),
512..65536x4 (times 4), 16..256+16 (step 16). Flags override the preset.

Examples:
  ckbench sweep attention --preset quick
  ckbench sweep attention --kernel decode-flash,kv-read --hd 128 --ctx 4096,32768 --heads 1:1 --exp fast
  ckbench sweep attention --heads 32:8 --ctx 32768 --cold

Exit status: 0 done, 1 a kernel failed its check or the run failed,
2 bad input, 130 interrupted (the folder is valid, complete=false).

Flags:
`

// sweepFlags are the raw flag values of `ckbench sweep attention`.
type sweepFlags struct {
	kernel, isaList, hd, tk, ctx, heads, exp, preset, out, runID, roof, counters string
	threads, cpu                                                                 int
	minTime                                                                      time.Duration
	cold, noProgress, force                                                      bool
	seed                                                                         uint64
}

func cmdSweep(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "" {
		return usagef("sweep: name a family: ckbench sweep attention|quant (see ckbench sweep --help)")
	}
	switch args[0] {
	case "-h", "--help", "-help":
		fmt.Fprint(stdout, "Usage: ckbench sweep <family> [flags]\n\nFamilies: attention, quant\nRun 'ckbench sweep attention --help' or 'ckbench sweep quant --help' for the flags.\n")
		return nil
	case "attention":
		return sweepAttention(args[1:], stdout, stderr)
	case "quant":
		return sweepQuant(args[1:], stdout, stderr)
	}
	return usagef("sweep: unknown family %q (known: attention, quant)", args[0])
}

// addCommonFlags declares the flags every family's sweep has.
func addCommonFlags(fs *flag.FlagSet, f *sweepFlags, coldWhat string) {
	fs.StringVar(&f.isaList, "isa", "", "tiers: generic,avx2,avx512,avx512vnni or all (default: every tier that runs here)")
	fs.IntVar(&f.threads, "threads", 1, "threads per point (only 1 in this version)")
	fs.StringVar(&f.preset, "preset", "quick", "grid and timing defaults: quick (~1 min), default, full (hours)")
	fs.DurationVar(&f.minTime, "min-time", 0, "minimum sampling time per point (default 200ms; 100ms in quick)")
	fs.StringVar(&f.out, "out", "out", "folder that receives the run folder")
	fs.StringVar(&f.runID, "run-id", "", "name of the run folder (default: the start time, 20061102-150405)")
	fs.BoolVar(&f.cold, "cold", false, "rotate through copies of "+coldWhat+" so every call reads it from DRAM")
	fs.IntVar(&f.cpu, "cpu", -1, "CPU to pin the measuring thread to (default: the last allowed CPU)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the deterministic input data")
	fs.BoolVar(&f.noProgress, "no-progress", false, "no progress bar (it is drawn only on a terminal anyway)")
	fs.StringVar(&f.roof, "roofline", "auto", "bound for pct_of_bound: auto (measure a quick 1-thread roofline first, ~20 s), none, or a roofline.json to reuse")
	fs.StringVar(&f.counters, "counters", "default", "performance counters per point: default (all named events that open here), none, or a list such as cycles,instructions,r01c2 (see ckbench counters)")
	fs.BoolVar(&f.force, "force", false, "use a --roofline file measured on another machine")
}

func sweepAttention(args []string, stdout, stderr io.Writer) error {
	var f sweepFlags
	fs := newFlagSet("sweep attention", sweepUsage, stdout)
	fs.StringVar(&f.kernel, "kernel", "all", "kernels: "+strings.Join(sweeps.AttentionKernels(), ",")+" or all")
	fs.StringVar(&f.hd, "hd", "", "head dims, e.g. 64,128 (multiples of 16 up to 256)")
	fs.StringVar(&f.tk, "tk", "", "tile_k: auto or 1…256, e.g. auto,16,64")
	fs.StringVar(&f.ctx, "ctx", "", "context lengths (KV tokens), e.g. 4096 or 512..65536x2")
	fs.StringVar(&f.heads, "heads", "", "H:Hkv pairs, e.g. 16:8,32:8,8:8")
	fs.StringVar(&f.exp, "exp", "", "exp variants: fast,exact or all")
	addCommonFlags(fs, &f, "the KV cache")
	set, help, err := parseSweepFlags(fs, args, &f)
	if help || err != nil {
		return err
	}
	grid, opt, notes, err := buildAttention(f, set)
	if err != nil {
		return err
	}
	info := machine.Describe()
	plan, err := sweeps.PlanAttention(grid, opt, info)
	if err != nil {
		return usagef("sweep attention: %v", err)
	}
	return runSweep(f, plan, opt, sweepConfig(grid, opt), notes, info, stdout, stderr)
}

// parseSweepFlags parses a family's flags and checks the shared ones that
// need no grid; it returns which flags were set, or help = true when the
// usage was asked for (and printed).
func parseSweepFlags(fs *flag.FlagSet, args []string, f *sweepFlags) (set map[string]bool, help bool, err error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err == errHelp, helpOK(err)
	}
	set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return set, false, checkRunID(f.runID)
}

func checkRunID(id string) error {
	if strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return usagef("--run-id %q: a folder name, without slashes", id)
	}
	return nil
}

// runSweep is what every family shares once its plan is made: the
// roofline, the run folder, the progress bar, Ctrl-C, the summary.
func runSweep(f sweepFlags, plan *sweeps.Plan, opt sweeps.Options, config map[string]any, notes []string, info machine.Info, stdout, stderr io.Writer) error {
	// machine.json says, once, which of the asked-for counters open here
	// and why not; their columns stay empty where they do not.
	info.Counters = machine.DescribeCounters(opt.Counters)
	// First Ctrl-C: finish the current point, close the folder, exit 130.
	// Second: leave at once (the folder is valid after every point).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; !ok {
			return
		}
		fmt.Fprintln(stderr, "\nckbench: interrupted; finishing the current point (Ctrl-C again to quit now)")
		cancel()
		if _, ok := <-sig; ok {
			os.Exit(exitInterrupted)
		}
	}()

	// The output folder first: nothing is measured for a folder that
	// cannot take the results.
	if err := results.CheckWritable(f.out); err != nil {
		return outError(err)
	}
	wait := waitNotice(stderr)
	roof, roofNotes, err := sweepRoofline(ctx, f, info, wait, stderr)
	if err != nil {
		return err
	}
	notes = append(notes, roofNotes...)
	if roof != nil {
		opt.Annotate = sweeps.BoundBy(roof, opt.Cold)
	}
	// The CPU, locked against other ckbench runs for the whole sweep, so
	// that machine.json records the CPU actually measured on.
	lock, err := sampler.AcquireCPU(ctx, f.cpu, wait)
	if err != nil {
		if ctx.Err() != nil {
			return exitError{code: exitInterrupted, msg: "interrupted while waiting for a CPU; nothing written"}
		}
		return err
	}
	defer lock.Unlock()
	opt.CPU, opt.CPULocked, opt.Wait = lock.CPU(), true, wait
	config["cpu"] = opt.CPU

	started := time.Now()
	run, err := results.Create(f.out, results.Meta{
		RunID: f.runID, Ckbench: versionString(), Go: info.OS.GoVersion, Command: append([]string{"ckbench"}, os.Args[1:]...),
		Started: started, Planned: len(plan.Points), Config: config, Notes: notes, Machine: info,
	})
	if err != nil {
		return outError(err)
	}

	for _, n := range notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	if !f.noProgress && isTerminal(stderr) {
		opt.Progress = stderr
	}
	fmt.Fprintf(stderr, "ckbench: %d points -> %s\n", len(plan.Points), run.Dir)
	complete, runErr := sweeps.Run(ctx, plan, opt, run.Add)
	if err := run.Close(complete && runErr == nil); err != nil && runErr == nil {
		runErr = err
	}
	if roof != nil {
		if err := writeSweepRoofline(run, roof); err != nil && runErr == nil {
			runErr = err
		}
	}
	if plan.Family == "quant" {
		printSummary(stdout, run.Records(), quantSummary)
	} else {
		printSummary(stdout, run.Records(), attentionSummary)
	}
	fmt.Fprintf(stdout, "\nresults: %s\n", run.Dir)
	var pe *sweeps.PanicError
	switch {
	case errors.As(runErr, &pe):
		return runErr
	case runErr != nil:
		return exitError{code: exitFailure, msg: fmt.Sprintf("the run stopped after %d of %d points: %v; %s holds the points written before (its files agree with each other, marked complete=false)",
			run.Meta.Points, len(plan.Points), runErr, run.Dir)}
	case !complete:
		return exitError{code: exitInterrupted, msg: fmt.Sprintf("interrupted after %d of %d points; %s is valid and marked complete=false", len(run.Records()), len(plan.Points), run.Dir)}
	}
	if n := countStatus(run.Records(), results.StatusFailed); n > 0 {
		return exitError{code: exitFailure, msg: fmt.Sprintf("%d points failed their correctness check (status=failed in points.csv)", n)}
	}
	return nil
}

// waitNotice tells the user that a CPU is held by another ckbench run and
// that this one waits for it.
func waitNotice(stderr io.Writer) func(error) {
	return func(err error) { fmt.Fprintf(stderr, "ckbench: %v; waiting for it (Ctrl-C to give up)\n", err) }
}

// outError maps an error about the output folder to the flags that name it.
func outError(err error) error {
	switch {
	case errors.Is(err, results.ErrNotFolder):
		return usagef("--out: %v: give a folder to hold run folders", err)
	case errors.Is(err, results.ErrRunExists):
		return usagef("--run-id: %v: pick another name, or leave --run-id out for a new one", err)
	}
	return exitError{code: exitFailure, msg: fmt.Sprintf("%v (see --out)", err)}
}

// buildOptions reads the flags every family shares into options, on top of
// the preset's sampler settings, and resolves --isa against the tiers the
// family has (default: those that run here, the rest noted as skipped).
func buildOptions(f sweepFlags, set map[string]bool, sc sampler.Config, familyTiers []isa.Tier) (sweeps.Options, []isa.Tier, []string, error) {
	var notes []string
	opt := sweeps.Options{Sampler: sc, Cold: f.cold, Threads: f.threads, CPU: f.cpu, Seed: f.seed}
	var err error
	if opt.Counters, err = hwcounters.ParseList(f.counters); err != nil {
		return opt, nil, nil, usagef("--counters: %v", err)
	}
	if f.threads < 1 {
		return opt, nil, nil, usagef("--threads %d: must be ≥ 1", f.threads)
	}
	if f.threads > 1 {
		return opt, nil, nil, usagef("--threads %d: only 1 thread per point is supported in this version", f.threads)
	}
	if set["min-time"] {
		if f.minTime <= 0 {
			return opt, nil, nil, usagef("--min-time %s: must be positive", f.minTime)
		}
		opt.Sampler.MinTime = f.minTime
	}
	if set["cpu"] {
		cpus, err := sampler.AllowedCPUs()
		if err == nil && !slices.Contains(cpus, f.cpu) {
			return opt, nil, nil, usagef("--cpu %d: not a CPU this process may use (allowed: %v)", f.cpu, cpus)
		}
	}
	// The family's tiers, in every build: a tier this CPU or this build
	// lacks stays in the grid and is recorded skipped, with the reason.
	tiers := familyTiers
	if set["isa"] {
		ts, err := sweeps.ParseList("isa", f.isaList, familyTiers, func(s string) (isa.Tier, error) {
			t, err := isa.Parse(s)
			if err == nil && !slices.Contains(familyTiers, t) {
				err = fmt.Errorf("tier %s has no kernels in this family (its tiers: %v)", t, familyTiers)
			}
			return t, err
		})
		if err != nil {
			return opt, nil, nil, flagError(err)
		}
		tiers = ts
	}
	for _, t := range tiers {
		if st := isa.Detect(t); !st.Runs {
			notes = append(notes, fmt.Sprintf("tier %s skipped: %s", t, st.Reason))
		}
	}
	return opt, tiers, notes, nil
}

// buildAttention turns flags into a grid and options: the preset first,
// then every flag the user set.
func buildAttention(f sweepFlags, set map[string]bool) (sweeps.AttentionGrid, sweeps.Options, []string, error) {
	grid, sc, err := sweeps.Preset(f.preset)
	if err != nil {
		return grid, sweeps.Options{}, nil, usagef("--preset: %v", err)
	}
	opt, tiers, notes, err := buildOptions(f, set, sc, sweeps.AttentionTiers)
	if err != nil {
		return grid, opt, nil, err
	}
	grid.Tiers = tiers
	if set["kernel"] || f.kernel != "all" {
		ks, err := sweeps.ParseList("kernel", f.kernel, sweeps.AttentionKernels(), func(s string) (string, error) {
			for _, k := range sweeps.AttentionKernels() {
				if k == s {
					return s, nil
				}
			}
			return "", fmt.Errorf("unknown attention kernel %q (known: %s)", s, strings.Join(sweeps.AttentionKernels(), ", "))
		})
		if err != nil {
			return grid, opt, nil, flagError(err)
		}
		grid.Kernels = ks
	}
	var perr error
	parseInts := func(name, val string, dst *[]int) {
		if perr != nil || !set[name] {
			return
		}
		*dst, perr = sweeps.ParseInts(name, val)
	}
	parseInts("hd", f.hd, &grid.HeadDims)
	parseInts("ctx", f.ctx, &grid.Ctxs)
	if perr != nil {
		return grid, opt, nil, flagError(perr)
	}
	if set["tk"] {
		tks, err := sweeps.ParseTileKs(f.tk)
		if err != nil {
			return grid, opt, nil, flagError(err)
		}
		grid.TileKs = tks
	}
	if set["heads"] {
		hs, err := sweeps.ParseHeads(f.heads)
		if err != nil {
			return grid, opt, nil, flagError(err)
		}
		grid.Heads = hs
	}
	if set["exp"] {
		es, err := sweeps.ParseList("exp", f.exp, []attention.Exp{attention.ExpFast, attention.ExpExact}, attention.ParseExp)
		if err != nil {
			return grid, opt, nil, flagError(err)
		}
		grid.Exps = es
	}
	if err := grid.Validate(); err != nil {
		return grid, opt, nil, flagError(err)
	}
	return grid, opt, notes, nil
}

// sweepConfig is the grid and options as recorded in machine.json.
func sweepConfig(g sweeps.AttentionGrid, o sweeps.Options) map[string]any {
	heads := make([]string, len(g.Heads))
	for i, h := range g.Heads {
		heads[i] = h.String()
	}
	exps := make([]string, len(g.Exps))
	for i, e := range g.Exps {
		exps[i] = e.String()
	}
	return map[string]any{
		"family": "attention", "kernels": g.Kernels, "isa": g.Tiers, "hd": g.HeadDims, "tk": tileNames(g.TileKs),
		"ctx": g.Ctxs, "heads": heads, "exp": exps, "threads": o.Threads, "cold": o.Cold, "seed": o.Seed,
		"min_time": o.Sampler.Effective().MinTime.String(), "cpu": o.CPU, "counters": counterNames(o.Counters),
	}
}

// tileNames writes the tile_k list as --tk takes it: auto for 0.
func tileNames(tks []int) []string {
	names := make([]string, len(tks))
	for i, tk := range tks {
		names[i] = strconv.Itoa(tk)
		if tk == 0 {
			names[i] = "auto"
		}
	}
	return names
}

func counterNames(evs []hwcounters.Event) []string {
	names := make([]string, len(evs))
	for i, e := range evs {
		names[i] = e.Name
	}
	return names
}

// printCounts prints how many points ended in each status, and what to
// make of the points that are not results.
func printCounts(w io.Writer, recs []results.Record) {
	parts := make([]string, len(results.Statuses))
	for i, st := range results.Statuses {
		parts[i] = fmt.Sprintf("%d %s", countStatus(recs, st), st)
	}
	fmt.Fprintf(w, "%d points: %s\n", len(recs), strings.Join(parts, ", "))
	if n := countStatus(recs, results.StatusUnstable); n > 0 {
		fmt.Fprintf(w, "%d points unstable: their samples spread more than %g %% (MAD) or too few survived; their numbers are not results (rerun them on a quieter machine)\n", n, float64(sweeps.DefaultMaxMADPct))
	}
	if n := countStatus(recs, results.StatusAboveBound); n > 0 {
		fmt.Fprintf(w, "%d points above a ceiling measured here (> %d %%): a measurement problem, not a result (see their reasons)\n", n, results.AboveBoundPct)
	}
}

func countStatus(recs []results.Record, status string) int {
	n := 0
	for _, r := range recs {
		if r.Status == status {
			n++
		}
	}
	return n
}

// summaryColumns is what a family shows of its points beside the timing
// and the ceilings (% read: of the family's in-run read loop over the same
// bytes; % bound: of the roofline): the columns that say what a point is,
// optionally one rate of its own, and how the point is named in a reason
// line.
type summaryColumns struct {
	keys     string // header of the identity columns, tab-separated
	cells    func(r *results.Record) string
	usFormat string // µs/call
	rate     string // header of the family's own rate column ("": none)
	rateCell func(r *results.Record) string
	named    func(r *results.Record) string
}

var attentionSummary = summaryColumns{
	keys: "kernel\tisa\texp\thd\ttk\tctx\th:kvh",
	cells: func(r *results.Record) string {
		return fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%d\t%d:%d", r.Kernel, r.ISA, r.Exp, r.HD, r.TK, r.Ctx, r.H, r.KVH)
	},
	usFormat: "%.2f",
	named: func(r *results.Record) string {
		return fmt.Sprintf("%s/%s exp=%s hd=%d tk=%s ctx=%d h:kvh=%d:%d", r.Kernel, r.ISA, r.Exp, r.HD, r.TK, r.Ctx, r.H, r.KVH)
	},
}

// printSummary prints one line per point: what it is, how fast, how close
// to its ceilings, then any failure or skip reason and the counts.
func printSummary(w io.Writer, recs []results.Record, c summaryColumns) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	rateHead := ""
	if c.rate != "" {
		rateHead = c.rate + "\t"
	}
	fmt.Fprintf(tw, "%s\tstatus\tµs/call\tGB/s\tGFLOP/s\t%s%% read\tlevel\t%% bound\tmad %%\t\n", c.keys, rateHead)
	for i := range recs {
		r := &recs[i]
		us := results.Missing()
		if r.NsMedian.Valid() {
			us = r.NsMedian / 1000
		}
		level := r.Level
		if level == "" {
			level = "-"
		}
		rate := ""
		if c.rate != "" {
			rate = c.rateCell(r) + "\t"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s%s\t%s\t%s\t%s\t\n", c.cells(r), r.Status, num(us, c.usFormat), num(r.GBs, "%.1f"),
			num(r.GFlops, "%.1f"), rate, num(r.PctOfRead, "%.0f"), level, num(r.PctOfBound, "%.0f"), num(r.MadPct, "%.1f"))
	}
	tw.Flush()
	for i := range recs {
		if r := &recs[i]; r.Reason != "" {
			fmt.Fprintf(w, "%s %s: %s\n", r.Status, c.named(r), r.Reason)
		}
	}
	printCounts(w, recs)
}

func num(f results.Float, format string) string {
	if !f.Valid() {
		return "-"
	}
	return fmt.Sprintf(format, float64(f))
}

// isTerminal reports whether w is a terminal (the progress bar needs one).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && terminal(f)
}
