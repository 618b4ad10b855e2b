package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ckbench/ckbench/hwcounters"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/report"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sampler"
	"github.com/ckbench/ckbench/sweeps"
)

// sweepUsage is the --help of `ckbench sweep <family>`, from the family.
func sweepUsage(f sweeps.Family) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: ckbench sweep %s [flags]\n\n%s\n\n", f.Name(), wrap(f.Doc(), 72))
	b.WriteString(`Each point is checked before it is timed, on one pinned CPU, and
out/<run-id>/ gets machine.json, points.csv, points.jsonl and bench.txt. A
point that fails its check is recorded as failed and never timed; a tier
this CPU lacks is recorded as skipped.

Lists take commas; integer lists also take ranges: 512..65536 (doubling),
512..65536x4 (times 4), 16..256+16 (step 16). Flags override the preset.

Examples:
`)
	for _, ex := range f.Examples() {
		args := []string{"ckbench", "sweep", f.Name()}
		for _, kv := range ex {
			k, v, ok := strings.Cut(kv, "=")
			args = append(args, "--"+k)
			if ok {
				args = append(args, v)
			}
		}
		fmt.Fprintf(&b, "  %s\n", strings.Join(args, " "))
	}
	b.WriteString(`
Exit status: 0 done, 1 a kernel failed its check or the run failed,
2 bad input, 130 interrupted (the folder is valid, complete=false).

Flags:
`)
	return b.String()
}

// wrap breaks s into lines of at most width columns.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		l := utf8.RuneCountInString(w)
		switch {
		case n == 0:
		case n+1+l > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += l
	}
	return b.String()
}

// sweepFlags are the raw values of the flags every family's sweep has;
// params holds the family's own (one flag per sweeps.Param).
type sweepFlags struct {
	isaList, preset, out, runID, roof, counters string
	threads                                     string
	cpu, retries                                int
	minTime, sampleTime                         time.Duration
	resume                                      string
	cold, noProgress, force, plan               bool
	seed                                        uint64
	params                                      map[string]*string
}

func cmdSweep(args []string, stdout, stderr io.Writer) error {
	names := strings.Join(sweeps.FamilyNames(), "|")
	if len(args) == 0 || args[0] == "" {
		return usagef("sweep: name a family: ckbench sweep %s (see ckbench sweep --help)", names)
	}
	switch args[0] {
	case "all":
		return sweepAll(args[1:], stdout, stderr)
	case "-h", "--help", "-help":
		fmt.Fprintf(stdout, "Usage: ckbench sweep <family>|all [flags]\n\nFamilies: %s\n", strings.Join(sweeps.FamilyNames(), ", "))
		fmt.Fprintln(stdout, "'ckbench sweep all' runs the roofline once, every family, then the report (see ckbench sweep all --help).")
		for _, f := range sweeps.Families() {
			fmt.Fprintf(stdout, "Run 'ckbench sweep %s --help' for its flags.\n", f.Name())
		}
		return nil
	}
	fam, ok := sweeps.LookupFamily(args[0])
	if !ok {
		return usagef("sweep: %v", sweeps.ErrUnknownFamily{Name: args[0]})
	}
	return sweepFamily(fam, args[1:], stdout, stderr)
}

// addCommonFlags declares the flags every family's sweep has.
func addCommonFlags(fs *flag.FlagSet, f *sweepFlags, coldWhat string) {
	fs.StringVar(&f.isaList, "isa", "", "tiers: generic,avx2,avx512,avx512vnni or all (default: every tier that runs here)")
	fs.StringVar(&f.threads, "threads", "1", "thread counts, e.g. 1,2,all (all: every CPU this process may use); each point is measured at each, its call split across that many pinned CPUs")
	fs.StringVar(&f.preset, "preset", "quick", "grid and timing defaults: quick (~1 min), default, full (hours)")
	fs.DurationVar(&f.minTime, "min-time", 0, "minimum sampling time per point (default 200ms; 100ms in quick)")
	fs.DurationVar(&f.sampleTime, "sample-time", 0, "each sample's length: enough calls to last it (default 200µs; with --cold 5ms, where a host's memory bandwidth moves from one millisecond to the next)")
	fs.IntVar(&f.retries, "retries", 1, "measure a point whose samples spread too much (unstable) again after the others, up to this many more times (0: once); its record's attempts column says how many timings were made")
	fs.StringVar(&f.out, "out", "out", "folder that receives the run folder")
	fs.StringVar(&f.runID, "run-id", "", "name of the run folder (default: the start time, 20061102-150405)")
	coldUsage := fmt.Sprintf("rotate through copies of %s so every call reads it from DRAM (a copy is read again after %d × (L2 + L3), at least %d MiB)", coldWhat, sweeps.ColdCachesTimes, sweeps.ColdMinBytes>>20)
	if coldWhat == "" {
		coldUsage = "not offered by this family (refused): its kernels re-read their data, so a cold first touch is not what they measure"
	}
	fs.BoolVar(&f.cold, "cold", false, coldUsage)
	fs.IntVar(&f.cpu, "cpu", -1, "CPU to pin the measuring thread to (default: the last allowed CPU)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the deterministic input data")
	fs.BoolVar(&f.noProgress, "no-progress", false, "no progress bar on a terminal, and no line per finished point elsewhere")
	fs.StringVar(&f.roof, "roofline", "auto", "bound for pct_of_bound: auto (measure a quick roofline first, ~20 s per thread count: 1 and the largest --threads), none, or a roofline.json to reuse")
	fs.StringVar(&f.counters, "counters", "default", "performance counters per point: default (all named events that open here), none, or a list such as cycles,instructions,r01c2 (see ckbench counters)")
	fs.BoolVar(&f.force, "force", false, "use a --roofline file measured on another machine")
	fs.BoolVar(&f.plan, "plan", false, "print the points per kernel and tier, the memory of the largest and an estimated time, then exit without measuring anything")
	fs.StringVar(&f.resume, "resume", "", "a run folder of this sweep (one that was interrupted or killed): measure only the points it lacks, with the same flags, and add them to it (its roofline.json is reused)")
}

// sweepFamily is `ckbench sweep <family>`: the family's parameters as
// flags beside the common ones, the preset's grid with every flag the user
// set on top, then the plan and the run.
func sweepFamily(fam sweeps.Family, args []string, stdout, stderr io.Writer) error {
	f := sweepFlags{params: map[string]*string{}}
	fs := newFlagSet("sweep "+fam.Name(), sweepUsage(fam), stdout)
	for _, p := range fam.Params() {
		def := ""
		if p.Name == "kernel" {
			def = "all"
		}
		f.params[p.Name] = fs.String(p.Name, def, p.Usage)
	}
	addCommonFlags(fs, &f, fam.ColdWhat())
	set, help, err := parseSweepFlags(fs, args, &f)
	if help || err != nil {
		return err
	}
	grid, sc, err := fam.Grid(f.preset)
	if err != nil {
		return usagef("--preset: %v", err)
	}
	opt, tiers, notes, err := buildOptions(f, set, sc, fam.Tiers())
	if err != nil {
		return err
	}
	grid.SetTiers(tiers)
	for _, p := range fam.Params() {
		if !set[p.Name] {
			continue
		}
		if err := grid.Set(p.Name, *f.params[p.Name]); err != nil {
			return flagError(err)
		}
	}
	info := machine.Describe()
	plan, err := grid.Plan(opt, info)
	if err != nil {
		if _, ok := errors.AsType[*sweeps.ParamError](err); ok {
			return flagError(err)
		}
		return usagef("sweep %s: %v", fam.Name(), err)
	}
	config := grid.Config()
	config["family"] = fam.Name()
	for k, v := range map[string]any{"threads": opt.Threads, "cold": opt.Cold, "seed": opt.Seed,
		"min_time": opt.Sampler.Effective().MinTime.String(), "sample_time": opt.SamplerConfig().Effective().SampleTime.String(), "retries": opt.Retries, "cpu": opt.CPU, "counters": counterNames(opt.Counters)} {
		config[k] = v
	}
	if f.plan {
		if err := checkRooflineFile(f, info); err != nil {
			return err
		}
		if f.resume != "" {
			// What a resume would measure: the points the folder lacks.
			meta, err := checkResume(f.resume, plan, info, config)
			if err != nil {
				return err
			}
			recs, err := results.ReadPoints(f.resume)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return usagef("--resume %s: %v", f.resume, err)
			}
			state := "incomplete"
			if meta.Complete {
				state = "complete"
			}
			recorded := plan.Skip(recs)
			fmt.Fprintf(stdout, "resuming %s (%s): %d points recorded, %d to measure\n", f.resume, state, recorded, len(plan.Points))
			f.reuseRoofline()
		}
		printPlan(stdout, fam.Name(), plan, opt, f.roof == "auto" && plan.Timed() > 0)
		return nil
	}
	return runSweep(f, plan, opt, config, notes, info, fam.Summary(), stdout, stderr)
}

// parseSweepFlags parses a family's flags and checks the shared ones that
// need no grid; it returns which flags were set, or help = true when the
// usage was asked for (and printed).
func parseSweepFlags(fs *flag.FlagSet, args []string, f *sweepFlags) (set map[string]bool, help bool, err error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err == errHelp, helpOK(err)
	}
	return setFlags(fs), false, checkRunID(f.runID)
}

func checkRunID(id string) error {
	if strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return usagef("--run-id %q: a folder name, without slashes", id)
	}
	if strings.ContainsFunc(id, unicode.IsControl) || !utf8.ValidString(id) {
		return usagef("--run-id %q: a folder name, without control characters", id)
	}
	if len(id) > maxRunID {
		return usagef("--run-id: %d bytes; at most %d", len(id), maxRunID)
	}
	return nil
}

// maxRunID bounds --run-id's length, well under a file name's 255 bytes:
// sweep all appends no more to it, and a folder of such names stays
// listable.
const maxRunID = 128

// runSweep is what every family shares once its plan is made: the
// roofline, the run folder, the progress bar, Ctrl-C, the summary.
func runSweep(f sweepFlags, plan *sweeps.Plan, opt sweeps.Options, config map[string]any, notes []string, info machine.Info, summary sweeps.Summary, stdout, stderr io.Writer) error {
	// machine.json says, once, which of the asked-for counters open here
	// and why not; their columns stay empty where they do not.
	info.Counters = machine.DescribeCounters(opt.Counters)
	// From here the Ctrl-C goroutine below writes to stderr while the
	// sweep does: one lock for both, since a caller's writer (a test's
	// bytes.Buffer) need not take concurrent writes as os.Stderr does.
	term := isTerminal(stderr)
	stderr = &lockedWriter{w: stderr}
	// First Ctrl-C: stop after the sample in progress (a 1-thread point's
	// attempt is then dropped; a multi-thread point is finished), close the
	// folder, exit 130.
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
		fmt.Fprintln(stderr, "\nckbench: interrupted; stopping after the sample in progress (Ctrl-C again to quit now)")
		cancel()
		if _, ok := <-sig; ok {
			os.Exit(exitInterrupted)
		}
	}()

	// The output folder first: nothing is measured for a folder that
	// cannot take the results.
	var resumed *results.Run
	if f.resume != "" {
		// The whole grid's points: each flush rewrites the folder's files.
		if err := results.CheckSpace(f.resume, len(plan.Points)); err != nil {
			return usagef("--resume %v: free some space there", err)
		}
		r, err := openResume(f, plan, info, config)
		if err != nil {
			return err
		}
		resumed = r
		f.reuseRoofline()
		skipped := plan.Skip(r.Records())
		opt.Prior = r.Records()
		left := map[string]bool{}
		for _, pt := range plan.Points {
			left[results.BenchName(&pt.Rec)] = true
		}
		r.Forget(left) // a read ceiling measured again replaces its record
		fmt.Fprintf(stderr, "ckbench: resuming %s: %d points recorded, %d to measure\n", r.Dir, skipped, len(plan.Points))
	} else if err := results.CheckOutput(f.out, len(plan.Points)); err != nil {
		return outError(err)
	}
	if f.roof == "auto" && plan.Timed() == 0 {
		// Nothing will be timed (every tier asked for is absent here, or a
		// resumed run has every point): a roofline would bound nothing.
		f.roof = "none"
		notes = append(notes, "no roofline measured: no point of this sweep is timed here")
	}
	wait := waitNotice(stderr)
	roof, roofNotes, err := sweepRoofline(ctx, f, info, wait, stderr)
	if err != nil {
		return err
	}
	notes = append(notes, roofNotes...)
	if roof != nil {
		opt.Annotate = sweeps.BoundBy(roof, opt.Cold)
		opt.L3 = roof.Caches().L3 // cpuid's, or the curve's where cpuid reports none
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
	if n := pauseNote(sampler.HostOn(opt.CPU), opt.SamplerConfig().Effective().SampleTime); n != "" {
		notes = append(notes, n)
	}

	started := time.Now()
	var run *results.Run
	if resumed != nil {
		run = resumed
		run.Meta.Planned = len(run.Records()) + len(plan.Points)
		run.Meta.Notes = append(run.Meta.Notes, fmt.Sprintf("resumed %s: %s", started.Format(time.RFC3339), strings.Join(append([]string{"ckbench"}, os.Args[1:]...), " ")))
	} else {
		run, err = results.Create(f.out, results.Meta{
			RunID: f.runID, Ckbench: versionString(), Go: info.OS.GoVersion, Command: append([]string{"ckbench"}, os.Args[1:]...),
			Started: started, Planned: len(plan.Points), Config: config, Notes: notes, Machine: info,
		})
		if err != nil {
			return outError(err)
		}
	}
	// The roofline is kept as soon as the folder exists (a killed run
	// leaves it); its chart is drawn again with the points at the end.
	if roof != nil {
		if err := writeSweepRoofline(run, roof); err != nil {
			return exitError{code: exitFailure, msg: fmt.Sprintf("writing the roofline: %v", err)}
		}
	}

	for _, n := range notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	switch {
	case f.noProgress:
	case term:
		opt.Progress = stderr
	default:
		opt.Log = stderr // a log: a line per point as it finishes
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
	if c, ok := report.ScalingChart("Thread scaling: "+plan.Family+" on "+info.CPU.Brand, roof, run.Records()); ok {
		if err := c.Save(filepath.Join(run.Dir, "scaling.png"), filepath.Join(run.Dir, "scaling.svg")); err != nil && runErr == nil {
			runErr = err
		}
	}
	printSummary(stdout, run.Records(), summary)
	fmt.Fprintf(stdout, "\nresults: %s\n", run.Dir)
	var pe *sweeps.PanicError
	switch {
	case errors.As(runErr, &pe):
		return runErr
	case runErr != nil:
		return exitError{code: exitFailure, msg: fmt.Sprintf("the run stopped after %d of %d points: %v; %s holds the %d written before (its files agree with each other, marked complete=false)",
			len(run.Records()), run.Meta.Planned, runErr, run.Dir, run.Meta.Points)}
	case !complete:
		return exitError{code: exitInterrupted, msg: fmt.Sprintf("interrupted after %d of %d points; %s is valid and marked complete=false (the same command with --resume %s measures the rest)", len(run.Records()), len(plan.Points), run.Dir, run.Dir)}
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
	case errors.Is(err, results.ErrNoSpace):
		return usagef("--out %v: free some space there, or give another folder", err)
	}
	return exitError{code: exitFailure, msg: fmt.Sprintf("%v (see --out)", err)}
}

// maxRetries bounds --retries: a point still unstable after ten attempts
// is measured on a machine too busy for it.
const maxRetries = 10

// maxMinTime bounds --min-time: a point sampled for an hour is a typo, and
// a grid of them would run for days.
const maxMinTime = time.Hour

// minSampleTime and maxSampleTime bound --sample-time: below 10 µs the
// clock reads around a sample weigh on it, and a sample of over a second
// leaves too few of them in a point's sampling time.
const (
	minSampleTime = 10 * time.Microsecond
	maxSampleTime = time.Second
)

// buildOptions reads the flags every family shares into options, on top of
// the preset's sampler settings, and resolves --isa against the tiers the
// family has (default: those that run here, the rest noted as skipped).
func buildOptions(f sweepFlags, set map[string]bool, sc sampler.Config, familyTiers []isa.Tier) (sweeps.Options, []isa.Tier, []string, error) {
	var notes []string
	opt := sweeps.Options{Sampler: sc, Cold: f.cold, CPU: f.cpu, Seed: f.seed}
	var err error
	if opt.Counters, err = hwcounters.ParseList(f.counters); err != nil {
		return opt, nil, nil, usagef("--counters: %v", err)
	}
	if opt.Threads, err = parseThreads(f.threads); err != nil {
		return opt, nil, nil, err
	}
	if set["min-time"] {
		if f.minTime <= 0 {
			return opt, nil, nil, usagef("--min-time %s: must be positive", f.minTime)
		}
		if f.minTime > maxMinTime {
			return opt, nil, nil, usagef("--min-time %s: at most %s (it is each point's sampling time; 0.1–2 s is usual)", f.minTime, maxMinTime)
		}
		opt.Sampler.MinTime = f.minTime
	}
	if set["sample-time"] {
		if f.sampleTime < minSampleTime || f.sampleTime > maxSampleTime {
			return opt, nil, nil, usagef("--sample-time %s: give %s…%s (200µs is the default, 5ms with --cold)", f.sampleTime, minSampleTime, maxSampleTime)
		}
		opt.Sampler.SampleTime = f.sampleTime
	}
	if f.retries < 0 || f.retries > maxRetries {
		return opt, nil, nil, usagef("--retries %d: give 0…%d (more attempts cannot make a noisy machine quiet: see the point's mad_pct)", f.retries, maxRetries)
	}
	opt.Retries = f.retries
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
	if again, stable := results.Retried(recs); again > 0 {
		fmt.Fprintf(w, "%d points measured again after an unstable attempt (--retries): %d of them then stable (their records' attempts column)\n", again, stable)
	}
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

// printSummary prints one line per point: what it is, how fast, how close
// to its ceilings, then any failure or skip reason and the counts.
func printSummary(w io.Writer, recs []results.Record, c sweeps.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	rateHead := ""
	if c.Rate != "" {
		rateHead = c.Rate + "\t"
	}
	// Threads, speedup and efficiency only when some point has n > 1.
	threaded := slices.ContainsFunc(recs, func(r results.Record) bool { return r.Th > 1 })
	thHead := ""
	if threaded {
		thHead = "th\t×1\teff\t"
	}
	// GHz: the core clock beside the point's samples (clock_ghz), which
	// moves a compute-bound point's rate with it.
	fmt.Fprintf(tw, "%s\t%sstatus\tµs/call\tGB/s\tGFLOP/s\t%s%% read\tlevel\t%% bound\tmad %%\tGHz\t\n", c.Keys, thHead, rateHead)
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
		if c.Rate != "" {
			rate = c.RateCell(r) + "\t"
		}
		th := ""
		if threaded {
			th = fmt.Sprintf("%d\t%s\t%s\t", max(r.Th, 1), num(r.Scaling, "%.2f"), num(r.Efficiency, "%.2f"))
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%s%s\t%s\t%s\t%s\t%s\t\n", c.Cells(r), th, r.Status, num(us, c.USFormat), num(r.GBs, "%.1f"),
			num(r.GFlops, "%.1f"), rate, r.ReadCell(), level, num(r.PctOfBound, "%.0f"), num(r.MadPct, "%.1f"), num(r.ClockGHz, "%.2f"))
	}
	tw.Flush()
	for i := range recs {
		if r := &recs[i]; r.Reason != "" {
			fmt.Fprintf(w, "%s %s: %s\n", r.Status, c.Named(r), r.Reason)
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

// lockedWriter serializes the writes of goroutines that share w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// isTerminal reports whether w is a terminal (the progress bar needs one).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && terminal(f)
}

// parseThreads reads --threads: a list of counts, all for every CPU this
// process may use; a count of 0 or above those CPUs is refused, naming them.
func parseThreads(list string) ([]int, error) {
	cpus, err := sampler.AllowedCPUs()
	if err != nil {
		cpus = []int{0} // no affinity here: one CPU's worth
	}
	var ts []int
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "all" {
			ts = append(ts, len(cpus))
			continue
		}
		n, err := strconv.Atoi(item)
		switch {
		case err != nil:
			return nil, usagef("--threads: %q is neither a number nor all", item)
		case n < 1:
			return nil, usagef("--threads %d: must be ≥ 1", n)
		case n > len(cpus):
			return nil, usagef("--threads %d: this process may use only %d CPUs (%v; a cgroup or taskset may allow fewer than the machine has)", n, len(cpus), cpus)
		}
		ts = append(ts, n)
	}
	slices.Sort(ts)
	return slices.Compact(ts), nil
}

// printPlan writes what a sweep would do: its points per kernel and tier
// (and how many are skipped here), the memory of its largest point, and an
// estimated time: each point to measure takes at least its minimum
// sampling time (longer when one call outlasts it), plus the roofline.
func printPlan(w io.Writer, family string, plan *sweeps.Plan, opt sweeps.Options, roof bool) {
	type key struct{ kernel, tier string }
	var keys []key
	runs, skips := map[key]int{}, map[key]int{}
	for _, p := range plan.Points {
		k := key{p.Rec.Kernel, string(p.Tier)}
		if runs[k]+skips[k] == 0 {
			keys = append(keys, k)
		}
		if p.Skip != "" {
			skips[k]++
			continue
		}
		runs[k]++
	}
	measured := plan.Timed()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "kernel\tisa\tpoints\tskipped here\t\n")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t\n", k.kernel, k.tier, runs[k], skips[k])
	}
	tw.Flush()
	est := time.Duration(measured) * opt.Sampler.Effective().MinTime
	if roof {
		est += 20 * time.Second * time.Duration(len(opt.Threads))
	}
	fmt.Fprintf(w, "\n%s: %d points (%d to measure here, at %s thread(s))\n", family, len(plan.Points), measured, joinInts(opt.Threads))
	if big, ok := plan.Largest(); ok {
		fmt.Fprintf(w, "largest point: %s of memory\n", machine.Bytes(big.Mem))
	}
	unit := time.Second
	if est < 10*time.Second {
		unit = 100 * time.Millisecond // a small plan's 0.4 s is not "0s"
	}
	fmt.Fprintf(w, "estimated time: at least %s (%s sampling per point", est.Round(unit), opt.Sampler.Effective().MinTime)
	if roof {
		fmt.Fprint(w, ", plus the roofline")
	}
	if opt.Retries > 0 {
		fmt.Fprintf(w, "; an unstable point is measured up to %d times", opt.Retries+1)
	}
	fmt.Fprintln(w, "; a point whose call outlasts it takes longer)")
}

// configDiffers reports the first key (in order) whose value differs
// between a resumed run's config (as machine.json holds it) and this
// sweep's: a resumed folder takes only the points its own grid lacks, so
// that its config describes every point in it. How a point is measured
// (the CPU the lock chose, the minimum time, the sample length, the
// retries, the counters) may differ; which points, and on what data (the
// seed), may not.
func configDiffers(stored, now map[string]any) (key, was, is string, differs bool) {
	b, err := json.Marshal(now)
	if err != nil {
		return "", "", "", false
	}
	var norm map[string]any // now, as JSON reads it back
	if json.Unmarshal(b, &norm) != nil {
		return "", "", "", false
	}
	for _, k := range slices.Sorted(maps.Keys(norm)) {
		switch k {
		case "cpu", "min_time", "sample_time", "retries", "counters":
			continue
		}
		if old, ok := stored[k]; ok && !reflect.DeepEqual(old, norm[k]) {
			w, _ := json.Marshal(old)
			n, _ := json.Marshal(norm[k])
			return k, string(w), string(n), true
		}
	}
	return "", "", "", false
}

// reuseRoofline makes a resumed run's roofline.json the bound of the
// points it measures now, unless --roofline names another (or none).
func (f *sweepFlags) reuseRoofline() {
	path := filepath.Join(f.resume, "roofline.json")
	if _, err := os.Stat(path); err == nil && f.roof == "auto" {
		f.roof = path
	}
}

// checkResume reads --resume's folder, writing nothing, and checks that
// it holds a run of this family and grid on this machine.
func checkResume(dir string, plan *sweeps.Plan, info machine.Info, config map[string]any) (results.Meta, error) {
	meta, err := results.ReadMeta(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return meta, usagef("--resume %s: no machine.json there: not a ckbench run folder", dir)
		}
		return meta, usagef("--resume %s: %v", dir, err)
	}
	if cfg, ok := meta.Config.(map[string]any); ok {
		if fam, _ := cfg["family"].(string); fam != "" && fam != plan.Family {
			return meta, usagef("--resume %s: a %s sweep, not %s (resume it with ckbench sweep %s --resume ...)", dir, fam, plan.Family, fam)
		}
		if k, was, now, ok := configDiffers(cfg, config); ok {
			return meta, usagef("--resume %s: its %s was %s, here %s: resume it with the flags it ran with (its machine.json's config), or measure into a new folder", dir, k, was, now)
		}
	}
	m := meta.Machine.CPU
	if m.Brand != info.CPU.Brand || m.Family != info.CPU.Family || m.Model != info.CPU.Model {
		return meta, usagef("--resume %s: measured on %s (family %d model %d), this is %s (family %d model %d): resume it there", dir, m.Brand, m.Family, m.Model, info.CPU.Brand, info.CPU.Family, info.CPU.Model)
	}
	return meta, nil
}

// openResume opens --resume's folder after checkResume.
func openResume(f sweepFlags, plan *sweeps.Plan, info machine.Info, config map[string]any) (*results.Run, error) {
	if _, err := checkResume(f.resume, plan, info, config); err != nil {
		return nil, err
	}
	r, err := results.Resume(f.resume)
	if err != nil {
		return nil, usagef("--resume %s: %v", f.resume, err)
	}
	return r, nil
}

// pauseNote is a sweep's note on the host's pauses h (sampler.HostStalls)
// where they matter, its samples at least sample long: which samples the
// sampler drops as stalled, and which keep the pauses (sampler.KeptIn),
// with what that does to their shares.
func pauseNote(h sampler.HostStalls, sample time.Duration) string {
	if h.Quantum() <= 0 {
		return ""
	}
	n := fmt.Sprintf("host pauses: %v, unseen by the thread's CPU clock; a sample longer than the clean ones by half of %v or more is dropped as stalled (counted in rejected)",
		h, h.Quantum().Round(time.Microsecond))
	from := h.KeptFrom().Round(10 * time.Microsecond)
	every := ""
	if h.KeptIn(sample) {
		every = fmt.Sprintf(" (here every one: %v or more)", sample)
	}
	return n + fmt.Sprintf("; samples of %v or more%s catch too many to tell apart (%.1f each at %v) and keep them: "+
		"such a point's time includes about %.1f %% the thread did not run, as its paired read loop's and the roofline's DRAM read do, "+
		"so its %% read holds, but the roofline's compute ceilings are timed in short samples without them: a compute-bound %% of bound is that much low",
		from, every, h.PerSample(max(sample, from)), max(sample, from), 100*h.Share)
}
