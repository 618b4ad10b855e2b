// Command decode-targets measures the performance targets of the decode
// side of attention (issue #12) on this machine, in every SIMD tier asked
// for, and prints them as one table: each target, the point that answers
// it, its share of its ceiling, and whether it is met.
//
//	go run ./tools/decode-targets                               # measure, then the table
//	go run ./tools/decode-targets -isa avx2,avx512 -retries 2
//	go run ./tools/decode-targets -table out/decode-targets/T   # the table of an earlier run
//	go run ./tools/decode-targets -ggml /tmp/ggml              # and GGML against the GQA kernel (tools/ggml-ruler.sh)
//	go run ./tools/decode-targets -rounds 3 -runs gqa-l3,gqa-dram  # the GQA runs three times: medians
//
// It builds ckbench from this tree (or runs -ckbench's), each command
// printed before it runs, into out/decode-targets/<time>: the
// quick roofline, then the sweeps the targets name. A
// tier the CPU lacks shows as skipped, as everywhere in ckbench. The
// figures are ratios to ceilings measured in the same run: % of kv-read
// (or kv-copy) over the same bytes, timed in alternation with the kernel,
// and % of the roofline bound. A point that is not ok is shown with its
// status and is never counted as met. Not part of make test: it takes
// 3–5 minutes a tier. GGML's side of the GQA target is tools/ggml-ruler.sh,
// which -ggml runs after the table.
//
// On a shared host one run is one sample of its neighbours' load as much
// as of the kernel (on a 2-vCPU Xeon guest the same GQA point read from
// DRAM at 55 % of its paired kv-read in one run and 81 % in another an
// hour later). With -rounds N every sweep runs N times (run ids gqa-dram,
// gqa-dram-r2, …), and a target's line gives the median of its rounds'
// shares, their range and how many rounds met it; the verdict is the
// median's.
//
// Built from this tree, it also runs the floor benchmarks (go test
// -bench, into floors.txt) and prints them under the table: how close to
// kv-read an f16 decode can come where every value must at least be
// widened (BenchmarkF16Floor), and to kv-copy a q8_0 batch-copy with its
// tier's quantizer (BenchmarkQ8Floor) and an f16 append with its tier's
// conversion (BenchmarkF16AppendFloor), in every tier this CPU runs. They
// say whether a target that is not met is the kernel's or beyond what the
// tier does here.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/ckbench/ckbench/internal/stats"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
	ckbsweeps "github.com/ckbench/ckbench/sweeps"
)

// sweep is one ckbench run the targets read: its folder (run id) and its
// arguments after "ckbench".
type sweep struct {
	id   string
	args []string
}

// sweeps are the runs, in the order they are measured. Each names
// --roofline, --isa, --retries and --out itself (see commands). The
// groups' runs try tile_k 8 and 32 beside auto (16 at hd 128), and a
// target takes the fastest with its tile named: which is fastest depends
// on the machine and the tier (Zen 5, from DRAM, two sweeps: AVX2 32:8 at
// 32 took 0.88–0.95 of 16's time, f32 and f16; AVX-512 was fastest at 16.
// Zen 4, f32 32:8 from DRAM, two sweeps: AVX2 at 8 0.83–0.86 of 16's
// time, AVX-512 at 32 0.91–0.94).
var sweeps = []sweep{
	{"lone-l3", strings.Fields("sweep attention --kernel decode-flash,kv-read --heads 1:1 --ctx 4096 --kv f16,q8_0 --hd 128 --exp fast --min-time 1s")},
	{"lone-dram", strings.Fields("sweep attention --kernel decode-flash,kv-read --heads 1:1 --ctx 32768 --cold --kv f16,q8_0 --hd 128 --exp fast --min-time 2s")},
	// gqa-l2: the groups of 4 and 8 over one KV head, 1024 keys (1 MB of
	// f32 KV, 0.5 of f16): in L2, long enough that a call's own setup is
	// small beside its tiles (at ctx 128 over 8 KV heads it was not).
	{"gqa-l2", strings.Fields("sweep attention --kernel decode-flash-gqa --heads 4:1,8:1 --ctx 1024 --kv f32,f16 --hd 128 --exp fast --tk auto,8,32 --min-time 1s")},
	{"gqa-l3", strings.Fields("sweep attention --kernel decode-flash-gqa,kv-read --heads 32:8,64:8 --ctx 1024 --kv f32,f16 --hd 128 --exp fast --tk auto,8,32 --min-time 1s")},
	{"gqa-dram", strings.Fields("sweep attention --kernel decode-flash-gqa,kv-read --heads 32:8,64:8 --ctx 32768 --cold --kv f32,f16 --hd 128 --exp fast --tk auto,8,32 --min-time 2s")},
	{"stores-l3", strings.Fields("sweep kvcache --kernel append,batch-copy,kv-copy --kv f32,f16,q8_0 --hd 128 --heads 8 --ctx 4096 --tokens 512 --layout head,pos")},
	{"stores-dram", strings.Fields("sweep kvcache --kernel batch-copy,kv-copy --kv f32,f16,q8_0 --hd 128 --heads 8 --ctx 4096 --tokens 512 --layout head,pos --cold")},
}

// target is one line of the performance list: the points of a run
// that answer it, which share they are judged by, and the least share
// that meets it.
type target struct {
	what  string
	run   string
	match func(r *results.Record) bool
	bound bool // % of the roofline bound; else % of the paired read (copy) loop
	min   float64
	// inL2 matches, for a grouped target, the gqa-l2 points of its KV
	// type and group size (see l2Rate); nil for the others.
	inL2 func(r *results.Record) bool
}

func attention(kernel, kv string, h int) func(r *results.Record) bool {
	return func(r *results.Record) bool { return r.Kernel == kernel && r.KV == kv && r.H == h }
}

func store(kernel, kv, layout string, tokens int) func(r *results.Record) bool {
	return func(r *results.Record) bool {
		return r.Kernel == kernel && r.KV == kv && r.Layout == layout && r.Tokens == tokens
	}
}

// targets are #12's performance items, one line per shape they name.
var targets = func() []target {
	var ts []target
	for _, c := range []struct {
		kv  string
		min float64
	}{{"f16", 90}, {"q8_0", 75}} {
		ts = append(ts,
			target{"decode-flash " + c.kv + ", 1 head, ctx 4096", "lone-l3", attention("decode-flash", c.kv, 1), false, c.min, nil},
			target{"decode-flash " + c.kv + ", 1 head, ctx 32768 --cold", "lone-dram", attention("decode-flash", c.kv, 1), false, c.min, nil})
	}
	for _, lv := range []struct {
		run, what string
		min       float64
	}{{"gqa-l3", "ctx 1024 (L3)", 60}, {"gqa-dram", "ctx 32768 --cold (DRAM)", 80}} {
		for _, kv := range []string{"f32", "f16"} {
			for _, h := range []int{32, 64} {
				ts = append(ts, target{fmt.Sprintf("decode-flash-gqa %s %d:8, %s", kv, h, lv.what), lv.run, attention("decode-flash-gqa", kv, h), true, lv.min,
					attention("decode-flash-gqa", kv, h/8)})
			}
		}
	}
	for _, layout := range []string{"", "pos"} {
		ts = append(ts, target{"append f32→f16, " + layoutName(layout) + " (L3)", "stores-l3", store("append", "f16", layout, 1), false, 70, nil})
	}
	for _, lv := range []struct{ run, what string }{{"stores-l3", "L3"}, {"stores-dram", "DRAM"}} {
		for _, kv := range []string{"f32", "f16", "q8_0"} {
			for _, layout := range []string{"", "pos"} {
				ts = append(ts, target{fmt.Sprintf("batch-copy %s, %s (%s)", kv, layoutName(layout), lv.what), lv.run, store("batch-copy", kv, layout, 512), false, 70, nil})
			}
		}
	}
	return ts
}()

func layoutName(l string) string {
	if l == "pos" {
		return "position-major"
	}
	return "head-major"
}

func main() {
	out := flag.String("out", filepath.Join("out", "decode-targets", time.Now().Format("20060102-150405")), "the folder the runs go to (one sub-folder a run; a new one each time by default)")
	isas := flag.String("isa", "avx2,avx512", "the tiers to measure (a tier the CPU lacks shows as skipped)")
	retries := flag.Int("retries", 1, "times an unstable point is measured again (ckbench --retries)")
	bin := flag.String("ckbench", "", "the ckbench binary to run (default: one built from this tree, ./cmd/ckbench, into a temporary folder)")
	table := flag.String("table", "", "print the table of the runs in this folder, measuring nothing")
	ggml := flag.String("ggml", "", "also run tools/ggml-ruler.sh with this GGML_DIR (GGML's FLASH_ATTN_EXT against decode-flash-gqa; needs git, cmake, a C++ compiler)")
	rounds := flag.Int("rounds", 1, "times every sweep runs; a target is judged by the median of its rounds")
	only := flag.String("runs", "", "the runs to measure, e.g. gqa-l3,gqa-dram (default all: "+strings.Join(runIDs(), ", ")+")")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "decode-targets measures issue #12's performance targets here and prints them as one table.\n\nUsage: go run ./tools/decode-targets [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fatal(2, "unexpected argument %q (flags only; see -help)", flag.Arg(0))
	}
	if *rounds < 1 || *rounds > 20 {
		fatal(2, "-rounds %d: give 1 to 20", *rounds)
	}
	ids, err := pickRuns(*only)
	if err != nil {
		fatal(2, "%v", err)
	}
	if code, err := run(*out, *table, *bin, *isas, *retries, *rounds, ids, *ggml); err != nil {
		fatal(code, "%v", err)
	}
}

// run measures into out (unless table names a run to print) and prints
// the table, then GGML's ruler if ggml names its folder; on failure, the
// exit code (2: the input, 1: a run) and the error.
func run(out, table, bin, isas string, retries, rounds int, ids []string, ggml string) (int, error) {
	dir := out
	if table != "" {
		dir = table
	} else {
		built := bin == ""
		if built {
			tmp, err := os.MkdirTemp("", "decode-targets")
			if err != nil {
				return 1, err
			}
			defer os.RemoveAll(tmp)
			bin = filepath.Join(tmp, "ckbench")
			c := exec.Command("go", "build", "-o", bin, "./cmd/ckbench")
			c.Stdout, c.Stderr = os.Stderr, os.Stderr
			fmt.Fprintf(os.Stderr, "decode-targets: %s\n", strings.Join(c.Args, " "))
			if err := c.Run(); err != nil {
				return 2, fmt.Errorf("go build ./cmd/ckbench: %v (run from the repository's root, or name a binary with -ckbench)", err)
			}
		} else if _, err := os.Stat(bin); err != nil {
			return 2, fmt.Errorf("-ckbench %s: %v", bin, err)
		}
		if err := measure(bin, dir, isas, retries, rounds, ids); err != nil {
			return 1, err
		}
		if built {
			// The table is this tool's answer: a floor benchmark that
			// fails costs its lines under it, not the table.
			if err := measureFloors(dir); err != nil {
				fmt.Fprintf(os.Stderr, "decode-targets: %v; the table follows without the floors\n", err)
			}
		} else {
			fmt.Fprintf(os.Stderr, "decode-targets: the floor benchmarks need this tree's sources: not run with -ckbench\n")
		}
	}
	if err := printTable(os.Stdout, dir); err != nil {
		return 2, err
	}
	if err := printFloors(os.Stdout, dir); err != nil {
		return 2, err
	}
	if ggml != "" && table == "" {
		// The GQA target's other side, after the table: its rounds
		// alternate GGML and ckbench in the same minutes.
		fmt.Println()
		c := exec.Command("sh", filepath.Join("tools", "ggml-ruler.sh"), ggml)
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		fmt.Fprintf(os.Stderr, "decode-targets: %s\n", strings.Join(c.Args, " "))
		if err := c.Run(); err != nil {
			return 1, fmt.Errorf("%s: %v", strings.Join(c.Args, " "), err)
		}
	}
	return 0, nil
}

// pickRuns is the sweeps' ids a -runs list names (all for an empty one).
func pickRuns(list string) ([]string, error) {
	if list == "" {
		return runIDs(), nil
	}
	var ids []string
	for _, id := range strings.Split(list, ",") {
		if !slices.Contains(runIDs(), id) {
			return nil, fmt.Errorf("-runs: no run %q (the runs: %s)", id, strings.Join(runIDs(), ", "))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// roundID is the run id of a sweep's round r (from 1): its id, then
// id-r2, id-r3, ….
func roundID(id string, r int) string {
	if r == 1 {
		return id
	}
	return fmt.Sprintf("%s-r%d", id, r)
}

// measure runs the roofline, then rounds times the sweeps ids names, into
// dir. ckbench pins its measuring thread itself (the last CPU it may use,
// --cpu).
func measure(bin, dir, isas string, retries, rounds int, ids []string) error {
	roof := filepath.Join(dir, "roofline", "roofline.json")
	cmds := [][]string{{"roofline", "--quick", "--out", dir, "--run-id", "roofline"}}
	for r := 1; r <= rounds; r++ {
		for _, s := range sweeps {
			if slices.Contains(ids, s.id) {
				cmds = append(cmds, slices.Concat(s.args, []string{"--isa", isas, "--retries", strconv.Itoa(retries), "--roofline", roof, "--out", dir, "--run-id", roundID(s.id, r)}))
			}
		}
	}
	for _, args := range cmds {
		c := exec.Command(bin, args...)
		fmt.Fprintf(os.Stderr, "decode-targets: %s\n", strings.Join(c.Args, " "))
		c.Stdout, c.Stderr = io.Discard, os.Stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("%s: %v", strings.Join(c.Args, " "), err)
		}
	}
	return nil
}

// floorsFile holds the floor benchmarks' output in a run's folder.
const floorsFile = "floors.txt"

// floorBench runs the floor benchmarks in the packages that hold them
// (go test's process, not pinned: each share is of the fastest rounds,
// which the host's noise does not reach).
var floorBench = []string{"test", "-run", "^$", "-bench", "^(BenchmarkF16Floor|BenchmarkQ8Floor|BenchmarkF16AppendFloor)$", "-benchtime", "2s", "-count", "1", "./kernels/attention", "./kernels/kvcache"}

// measureFloors runs floorBench into dir's floorsFile, which it leaves
// only when the benchmarks ran to the end.
func measureFloors(dir string) error {
	f, err := os.Create(filepath.Join(dir, floorsFile))
	if err != nil {
		return err
	}
	c := exec.Command("go", floorBench...)
	c.Stdout, c.Stderr = f, os.Stderr
	fmt.Fprintf(os.Stderr, "decode-targets: %s > %s\n", strings.Join(c.Args, " "), f.Name())
	err = c.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%s: %v", strings.Join(c.Args, " "), err)
	}
	return nil
}

// printFloors writes, from dir's floorsFile (nothing where there is
// none), one line a floor benchmark and tier: each share it reports.
func printFloors(w io.Writer, dir string) error {
	f, err := os.Open(filepath.Join(dir, floorsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var lines []string
	rd := benchfmt.NewReader(f, floorsFile)
	for rd.Scan() {
		r, ok := rd.Result().(*benchfmt.Result)
		if !ok {
			continue // a syntax error or a comment: not a result
		}
		vals := map[string]float64{}
		for _, v := range r.Values {
			vals[v.Unit] = v.Value
		}
		var cells []string
		for _, c := range floorCells {
			if v, ok := vals[c.unit]; ok {
				cells = append(cells, fmt.Sprintf(c.format, v))
			}
		}
		if len(cells) > 0 {
			lines = append(lines, fmt.Sprintf("  %s: %s", strings.TrimPrefix(string(r.Name.Full()), "Benchmark"), strings.Join(cells, ", ")))
		}
	}
	if err := rd.Err(); err != nil {
		return fmt.Errorf("%s: %v", f.Name(), err)
	}
	if len(lines) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nfloors (go %s; each call's fastest round, the calls in alternation):\n", strings.Join(floorBench, " "))
	fmt.Fprintln(w, strings.Join(lines, "\n"))
	fmt.Fprintln(w, "  floor: every f16 value widened and multiplied once (the least an f16 decode does); tile: that in decode-flash's tile order; warm: the q8_0 store with its data in L1 and L2;")
	fmt.Fprintln(w, "  convert: a token's f32→f16 conversion alone, in L1 (the least an f16 append does)")
	return nil
}

// floorCells are the floor benchmarks' shares, in the order printed.
var floorCells = []struct{ unit, format string }{
	{"floor_%read", "floor %.0f %% of read"},
	{"tile_%read", "tile %.0f %%"},
	{"decode_%read", "decode-flash %.0f %%"},
	{"warm_%copy", "warm %.0f %% of copy"},
	{"head_%copy", "batch-copy head-major %.0f %%"},
	{"pos_%copy", "position-major %.0f %%"},
	{"convert_%copy", "convert %.0f %% of copy"},
	{"append_%copy", "append %.0f %%"},
}

// printTable writes one line a target and tier: the point's share of its
// ceiling, its status and the verdict; where a run has rounds (-rounds),
// their median share, range and count.
func printTable(w io.Writer, dir string) error {
	runs := map[string][][]results.Record{} // a sweep's rounds
	for _, s := range sweeps {
		for r := 1; ; r++ {
			recs, err := results.ReadPoints(filepath.Join(dir, roundID(s.id, r)))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err != nil {
				return err
			}
			runs[s.id] = append(runs[s.id], recs)
		}
	}
	if len(runs) == 0 {
		return fmt.Errorf("%s holds none of the runs (%s): measure first", dir, strings.Join(runIDs(), ", "))
	}
	roof, err := loadRoofline(dir)
	if err != nil {
		return err
	}
	printCeilings(w, roof)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	defer tw.Flush()
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }
	// "paired": a bound-judged point's share of a ceiling taken beside it.
	// Where its bound is its level's bandwidth (memoryBound), of its
	// paired kv-read (the bound's bandwidth is the roofline's, measured
	// minutes before at the host's speed then: where the two shares move
	// apart between runs it is the host, not the kernel, that moved);
	// where it is the tier's compute roof, of that roof at the clock the
	// point ran at (atClock: the sweep's own bound, sweeps.BoundBy; a
	// folder from before it was bound by the roofline's clock), and beside
	// it the share at the clock the roofline's ceilings ran at.
	row("target", "tier", "tk", "share", "paired", "status", "verdict")
	for _, t := range targets {
		// Each round's best point a tier.
		var tiers []string
		byTier := map[string][]*results.Record{}
		for _, recs := range runs[t.run] {
			best := map[string]*results.Record{}
			for i := range recs {
				r := &recs[i]
				if !t.match(r) || r.Th != 1 || r.Status == results.StatusSkipped {
					continue
				}
				if _, ok := byTier[r.ISA]; !ok {
					tiers = append(tiers, r.ISA)
					byTier[r.ISA] = nil
				}
				if better(r, best[r.ISA], t.bound) {
					best[r.ISA] = r
				}
			}
			for tier, r := range best {
				byTier[tier] = append(byTier[tier], r)
			}
		}
		if len(tiers) == 0 {
			row(t.what+fmt.Sprintf(" ≥ %g %%", t.min), "-", "-", "-", "-", "-", "not measured (no such run here, or every tier skipped)")
			continue
		}
		for _, tier := range tiers {
			j := judge(byTier[tier], t.bound, t.min, func(r *results.Record) string { return roofSuspect(roof, t, r) })
			r := j.rep
			of := "read"
			if t.bound {
				of = "bound"
			}
			tk := r.TK // the tile of the best point, where a run sweeps them
			if tk == "" {
				tk = "-"
			}
			v := j.verdict
			if max, ceiling, ok := maxShareOfRead(roof, r); ok && !t.bound && max < t.min {
				// A target above what the tier's compute ceiling allows
				// at this read rate: not possible here, whatever the kernel.
				v += fmt.Sprintf("; not possible here: %s allows %.0f %%", ceiling, max)
			}
			if l2, ok := l2Rate(runs["gqa-l2"], t, tier); ok && j.notMet && r.BoundGFlops.Valid() {
				// Whether the kernel's own arithmetic could meet it: its
				// rate with the cache in L2, where it waits on no memory.
				need := t.min / 100 * float64(r.BoundGFlops)
				if l2 < need {
					v += fmt.Sprintf("; beyond this kernel here: it needs %.0f GFLOP/s, and with its KV in L2 runs %.0f", need, l2)
				} else {
					v += fmt.Sprintf("; it needs %.0f GFLOP/s and runs %.0f with its KV in L2: the overlap with memory falls short", need, l2)
					if e, ok := exposed(r, l2); ok {
						v += fmt.Sprintf(" (a call takes the paired read's time plus %.2f of its arithmetic's time in L2)", e)
					}
				}
			}
			memBound := memoryBound(roof, r)
			if t.bound && j.notMet && memBound {
				v += readReach(byTier[tier], t.min)
			}
			paired := "-"
			if t.bound {
				if memBound {
					if r.PctOfRead.Valid() {
						paired = fmt.Sprintf("%.0f %% of read", float64(r.PctOfRead))
					}
				} else if share, ghz, ok := atClock(roof, r); ok {
					paired = fmt.Sprintf("%.0f %% at %.2f GHz", share, ghz)
					if rs, rg, ok := atRoofClock(roof, r); ok && rg > 0 {
						paired += fmt.Sprintf(" (%.0f %% at the roofline's %.2f)", rs, rg)
					}
				}
			}
			row(t.what+fmt.Sprintf(" ≥ %g %% of %s", t.min, of), tier, tk, j.share, paired, j.status, v)
		}
	}
	return nil
}

// roofSuspect is why r's share of its bound is no result, or "": a point
// bound by its tier's compute roof is judged by that roof, and where the
// roofline measured it slow (its rate well below what its share of the
// FMA units at its clock implies) or the point ran above it at its own
// clock, the share is the roof's measurement, not the kernel's.
func roofSuspect(roof *roofline.Roofline, t target, r *results.Record) string {
	if !t.bound || memoryBound(roof, r) {
		return ""
	}
	if b := computeCeiling(roof, r); b.Kind == "fp32-fma" {
		if c, ok := roof.Ceiling(b.Kind, isa.Tier(r.ISA), r.Th); ok {
			if _, slowed := c.RateSlowed(); slowed {
				return "its bound, the tier's FMA roof, was measured slow (the warning above): measure again"
			}
		}
	}
	if share, _, ok := atClock(roof, r); ok && share > results.AboveBoundPct {
		return "above its tier's FMA roof at its own clock: the roofline's pass ran slow, measure again"
	}
	return ""
}

// l2Rate is the fastest ok rate (GFLOP/s) of t's KV type, group size and
// tier in the gqa-l2 rounds (one KV head, 0.5–1 MB of KV, in L2): the
// kernel's arithmetic with nothing to wait for.
func l2Rate(rounds [][]results.Record, t target, tier string) (float64, bool) {
	if t.inL2 == nil {
		return 0, false
	}
	best := 0.0
	for _, recs := range rounds {
		for i := range recs {
			r := &recs[i]
			if t.inL2(r) && r.ISA == tier && r.Th == 1 && r.Status == results.StatusOK && r.GFlops.Valid() {
				best = max(best, float64(r.GFlops))
			}
		}
	}
	return best, best > 0
}

// exposed is how much of r's arithmetic adds to its stream's time: a
// call takes T = R + e·C, with R the time of its paired kv-read over the
// same bytes and C the time its FLOPs take at l2 (GFLOP/s, its rate with
// the KV in L2). Per FLOP T = 1/G, R = p/G (p its share of the paired
// read) and C = 1/l2, so e = (1 − p)·l2/G. 0: the arithmetic wholly
// hidden under the read; 1: none of it (the two one after the other).
// False where r lacks a rate or a share of its read, or reads faster than
// it (e < 0).
func exposed(r *results.Record, l2 float64) (float64, bool) {
	if !r.GFlops.Valid() || r.GFlops <= 0 || !r.PctOfRead.Valid() || l2 <= 0 {
		return 0, false
	}
	e := (1 - float64(r.PctOfRead)/100) * l2 / float64(r.GFlops)
	return e, e >= 0
}

// readShareOfBound is, in %, the share of r's bound that r's paired
// kv-read reaches: the rate (GFLOP/s) r would run at if it read its bytes
// as fast as the plain read of them beside it, over its bound. Where the
// bound is the level's bandwidth, no kernel over those bytes gets past it:
// the bound's bandwidth is the roofline's, the best of its passes minutes
// before, and a shared host's DRAM often gives the sweeps less (a Zen 5
// guest, AMD EPYC family 26 model 2, 2026-12-02: 38 GB/s in the roofline,
// 29–33 in the paired reads of the grouped points from DRAM minutes later;
// a scratch loop an hour on, medians of 30 rounds, 28–30 GB/s whichever
// way it read: one 256 or 512 MB region as the roofline does, K and V a
// head at a time or whole, one copy or three rotated). False where r lacks
// a paired read, an AI or a bound.
func readShareOfBound(r *results.Record) (float64, bool) {
	if !r.ReadGBs.Valid() || !r.AI.Valid() || !r.BoundGFlops.Valid() || r.ReadGBs <= 0 || r.AI <= 0 || r.BoundGFlops <= 0 {
		return 0, false
	}
	return 100 * float64(r.ReadGBs) * float64(r.AI) / float64(r.BoundGFlops), true
}

// readReach is the verdict's clause for a memory-bound target not met:
// what share of the bound the rounds' paired kv-reads reached (their
// median and range), what share of that read the target then asks of the
// kernel, and in how many rounds it was past any kernel's reach (the read
// itself below it). "" where no ok round has a paired read.
func readReach(rounds []*results.Record, min float64) string {
	var shares []float64
	for _, r := range rounds {
		if s, ok := readShareOfBound(r); ok && r.Status == results.StatusOK {
			shares = append(shares, s)
		}
	}
	if len(shares) == 0 {
		return ""
	}
	slices.Sort(shares)
	n := len(shares)
	med := stats.Median(shares)
	out := 0
	for _, s := range shares {
		if s < min {
			out++
		}
	}
	v := fmt.Sprintf("; its paired kv-read itself read at %.0f %%", med)
	if n > 1 {
		v += fmt.Sprintf(" (%.0f–%.0f)", shares[0], shares[n-1])
	}
	v += " of this bound"
	in := ""
	if n > 1 {
		in = fmt.Sprintf(" in %d of %d rounds", out, n)
	}
	if med < min {
		return v + fmt.Sprintf(": %g %% was past any kernel's reach%s", min, in)
	}
	v += fmt.Sprintf(": %g %% of it asks for %.0f %% of that read", min, 100*min/med)
	if out > 0 {
		v += fmt.Sprintf(" (past any kernel's reach%s)", in)
	}
	return v
}

// judgement is a target's line for one tier: its share cell, status,
// verdict, whether that verdict is "not met", and the point the other
// cells come from.
type judgement struct {
	share, status, verdict string
	notMet                 bool
	rep                    *results.Record
}

// judge judges a tier's best point of each round (one round: that point
// as it is). Of several, the ok points with a share are the result: the
// share cell is their median with its range, the verdict the median's,
// with how many rounds met the target; the point shown is the ok point
// nearest the median. With no ok point there is no verdict. A point
// noResult gives a reason for is no result either, whatever its status.
func judge(rounds []*results.Record, bound bool, min float64, noResult func(*results.Record) string) judgement {
	shareOf := func(r *results.Record) results.Float {
		if bound {
			return r.PctOfBound
		}
		return r.PctOfRead
	}
	if len(rounds) == 1 {
		r, s := rounds[0], shareOf(rounds[0])
		j := judgement{share: "-", status: r.Status, verdict: verdict(r, s, min), rep: r}
		if s.Valid() {
			j.share = fmt.Sprintf("%.0f %%", float64(s))
		}
		why := noResult(r)
		if r.Status == results.StatusOK && why != "" {
			j.verdict = "no verdict: " + why
		}
		j.notMet = r.Status == results.StatusOK && why == "" && s.Valid() && float64(s) < min
		return j
	}
	var ok []*results.Record
	outs, why := 0, "" // ok rounds noResult counts out, and its last reason
	for _, r := range rounds {
		if w := noResult(r); r.Status == results.StatusOK && w != "" {
			outs, why = outs+1, w
			continue
		}
		if r.Status == results.StatusOK && shareOf(r).Valid() {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		j := judgement{share: "-", status: fmt.Sprintf("ok in 0 of %d", len(rounds)), verdict: "no verdict (no round is a result)", rep: rounds[0]}
		if outs > 0 {
			j.verdict = fmt.Sprintf("no verdict (no round is a result; %d of them: %s)", outs, why)
		}
		return j
	}
	slices.SortFunc(ok, func(a, b *results.Record) int { return cmp.Compare(shareOf(a), shareOf(b)) })
	n := len(ok)
	shares := make([]float64, n)
	for i, r := range ok {
		shares[i] = float64(shareOf(r))
	}
	med := stats.Median(shares)
	met := 0
	for _, s := range shares {
		if s >= min {
			met++
		}
	}
	j := judgement{share: fmt.Sprintf("%.0f %%", med), status: results.StatusOK, rep: ok[(n-1)/2]}
	if n > 1 {
		j.share += fmt.Sprintf(" (%.0f–%.0f)", shares[0], shares[n-1])
	}
	if n < len(rounds) {
		j.status = fmt.Sprintf("ok in %d of %d", n, len(rounds))
	}
	if med >= min {
		j.verdict = fmt.Sprintf("met (%d of %d rounds)", met, n)
	} else {
		j.verdict, j.notMet = fmt.Sprintf("not met (met in %d of %d rounds)", met, n), true
	}
	return j
}

// memoryBound: r's roofline bound is its level's bandwidth, not its
// tier's compute ceiling (true where the folder has no roofline to tell).
func memoryBound(roof *roofline.Roofline, r *results.Record) bool {
	if roof == nil || !r.BoundGFlops.Valid() || !r.AI.Valid() {
		return true
	}
	// The ceiling at r's clock or at the roofline's, whichever is lower:
	// a folder from before sweeps.BoundBy took a point's clock holds the
	// roofline's.
	peak := min(computeCeiling(roof, r).Peak, roofCeiling(roof, r).Peak)
	return peak <= 0 || float64(r.BoundGFlops) < 0.999*peak
}

// computeCeiling is r's compute ceiling (Peak, Kind) as the sweep bound
// it by (sweeps.ComputeRoof), at the clock r ran at where it has one
// (roofline.Bound.AtClock, as sweeps.BoundBy takes it).
func computeCeiling(roof *roofline.Roofline, r *results.Record) roofline.Bound {
	return ckbsweeps.AtPointClock(roof, r, roofCeiling(roof, r))
}

// roofCeiling is r's compute ceiling at the clock the roofline's ran at.
func roofCeiling(roof *roofline.Roofline, r *results.Record) roofline.Bound {
	return roof.BoundOf(ckbsweeps.ComputeRoof(r), isa.Tier(r.ISA), r.Th, float64(r.AI), 0, false)
}

// atClock is r's share of its compute ceiling at the clock r ran at
// (results.Record.ClockGHz), and that clock: the roofline's FLOPs per
// cycle times r's clock, what the sweep now bounds a compute-bound point
// by (a folder from before took the roofline's ceiling as it was). False
// where r or the roofline has no clock, or r no rate.
func atClock(roof *roofline.Roofline, r *results.Record) (share, ghz float64, ok bool) {
	if roof == nil {
		return 0, 0, false
	}
	b := computeCeiling(roof, r)
	share, ok = shareOf(r, b)
	return share, b.ClockGHz, ok && b.ClockGHz > 0
}

// atRoofClock is r's share of its compute ceiling as the roofline
// measured it, and the clock that ran at (roofline.PeakClockGHz, 0 where
// unknown): the share a point's clock does not enter.
func atRoofClock(roof *roofline.Roofline, r *results.Record) (share, ghz float64, ok bool) {
	if roof == nil {
		return 0, 0, false
	}
	share, ok = shareOf(r, roofCeiling(roof, r))
	return share, roof.PeakClockGHz(isa.Tier(r.ISA), max(r.Th, 1)), ok
}

// shareOf is r's rate as a share of b's compute ceiling, in %; false
// without a rate or a ceiling.
func shareOf(r *results.Record, b roofline.Bound) (float64, bool) {
	if !r.GFlops.Valid() || b.Peak <= 0 {
		return 0, false
	}
	return 100 * float64(r.GFlops) / b.Peak, true
}

// better: r answers a target better than the point held so far, best: an
// ok point before any other, then the higher share (of the tiles a run
// sweeps, the target is met by its best).
func better(r, best *results.Record, bound bool) bool {
	if best == nil {
		return true
	}
	if (r.Status == results.StatusOK) != (best.Status == results.StatusOK) {
		return r.Status == results.StatusOK
	}
	a, b := r.PctOfRead, best.PctOfRead
	if bound {
		a, b = r.PctOfBound, best.PctOfBound
	}
	return a.Valid() && (!b.Valid() || a > b)
}

func verdict(r *results.Record, share results.Float, min float64) string {
	switch {
	case r.Status != results.StatusOK:
		return "no verdict (not a result)"
	case !share.Valid():
		return "no verdict: no share"
	case float64(share) >= min:
		return "met"
	}
	return "not met"
}

// printCeilings names the machine and the ceilings the shares are of: its
// roofline's core clock, FMA roofs, and L3 and DRAM read bandwidth, and how
// far its passes spread (a busy host). A folder without a roofline (not
// measured by this tool) prints nothing.
func printCeilings(w io.Writer, r *roofline.Roofline) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "machine: %s, host %s\n", r.Machine.CPUName(), r.Machine.Host)
	var cs []string
	if r.Clock.CoreGHz > 0 {
		cs = append(cs, fmt.Sprintf("core clock %.2f GHz", r.Clock.CoreGHz))
	}
	for _, x := range r.Compute {
		if x.Threads == 1 && x.Tier != isa.Generic && (x.Kind == "fp32-fma" || x.Kind == "q8-fma" || x.Kind == roofline.Q8DecodeKind) {
			cs = append(cs, fmt.Sprintf("%s %s %.1f %s", x.Kind, x.Tier, x.Value, x.Unit))
		}
	}
	for _, l := range r.Levels {
		if l.Threads == 1 && (l.Name == "L3" || l.Name == "DRAM") {
			cs = append(cs, fmt.Sprintf("read %s %.1f GB/s", l.Name, l.GBs))
		}
	}
	fmt.Fprintf(w, "roofline (1 thread): %s; its passes spread up to %.0f %%\n", strings.Join(cs, ", "), r.MaxPassSpreadPct)
	for _, x := range r.Compute {
		if n, slowed := x.SlowedNote(); slowed && x.Threads == 1 { // the table's points run on one
			fmt.Fprintf(w, "warning: %s; targets bound by it get no verdict\n", n)
		}
	}
	fmt.Fprintln(w)
}

// loadRoofline reads dir's roofline, or nil where the folder has none (not
// measured by this tool).
func loadRoofline(dir string) (*roofline.Roofline, error) {
	r, err := roofline.Load(filepath.Join(dir, "roofline", "roofline.json"), machine.Info{})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil && !errors.Is(err, roofline.ErrOtherMachine) {
		return nil, err
	}
	return r, nil
}

// maxShareOfRead is the most of its paired read a decode point can reach
// on this machine, in %: the read's rate over the rate its compute
// ceiling (the one its bound uses, sweeps.ComputeRoof: f16-fma for a lone
// f16 head, q8-decode for a lone q8_0 head) allows at the point's FLOPs
// per byte, capped at 100; false where there is no such ceiling or no
// read.
func maxShareOfRead(roof *roofline.Roofline, r *results.Record) (float64, string, bool) {
	if roof == nil || !strings.HasPrefix(r.Kernel, "decode-") || !r.AI.Valid() || !r.ReadGBs.Valid() || r.AI <= 0 || r.ReadGBs <= 0 {
		return 0, "", false
	}
	b := computeCeiling(roof, r)
	if b.Peak <= 0 {
		return 0, "", false
	}
	return min(100, 100*b.Peak/(float64(r.AI)*float64(r.ReadGBs))), fmt.Sprintf("%s %.0f GFLOP/s", b.Kind, b.Peak), true
}

func runIDs() []string {
	var ids []string
	for _, s := range sweeps {
		ids = append(ids, s.id)
	}
	return ids
}

func fatal(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "decode-targets: "+format+"\n", a...)
	os.Exit(code)
}
