package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/quant"
	"github.com/ckbench/ckbench/kernels/quant/golden"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sweeps"
)

const sweepQuantUsage = `Usage: ckbench sweep quant [flags]

Times the quantized GEMV kernels y[M] = W[M×K]·x[K] in the GGML block
formats, in every tier: gemv-f32 (x in float32, weights dequantized in
registers), gemv-q8 (x quantized to 8 bits inside the call, then integer
dot products), quantize-q8 (that quantization alone) and dequant (W to
float32 rows). Each point is first checked against the generic tier.
w-read, a plain read of the same weight bytes in the same mode, is the
in-run ceiling: "% read" is a point's GB/s against it, "% bound" against
the roofline.

Examples:
  ckbench sweep quant --preset quick
  ckbench sweep quant --fmt q4_0,q4_K --act f32,q8 --shape 4096x4096 --rb 1,4
  ckbench sweep quant --fmt q8_0 --shape 16384x8192 --cold

Exit status: 0 done, 1 a kernel failed its check or the run failed,
2 bad input, 130 interrupted (the folder is valid, complete=false).

Flags:
`

func sweepQuant(args []string, stdout, stderr io.Writer) error {
	var f sweepFlags
	var fmts, acts, shapes, rbs string
	fs := newFlagSet("sweep quant", sweepQuantUsage, stdout)
	fs.StringVar(&f.kernel, "kernel", "all", "kernels: gemv-f32,gemv-q8,quantize-q8,dequant,w-read (a plain read of the weight bytes: the in-run ceiling behind % read) or all")
	fs.StringVar(&fmts, "fmt", "", "weight formats: q4_0,q4_1,q5_0,q5_1,q8_0,q4_K,q5_K,q6_K or all")
	fs.StringVar(&acts, "act", "", "activations: f32 (gemv-f32), q8 (gemv-q8 with each format's own: q8_0, q8_1 or q8_K), or q8_0/q8_1/q8_K")
	fs.StringVar(&shapes, "shape", "", "MxK shapes, e.g. 4096x4096,4096x14336,14336x4096")
	fs.StringVar(&rbs, "rb", "", "rows per pass (sharing each x load), 1…8, e.g. 1,4")
	addCommonFlags(fs, &f, "the weights")
	set, help, err := parseSweepFlags(fs, args, &f)
	if help || err != nil {
		return err
	}
	grid, sc, err := sweeps.QuantPreset(f.preset)
	if err != nil {
		return usagef("--preset: %v", err)
	}
	opt, tiers, notes, err := buildOptions(f, set, sc, isa.All)
	if err != nil {
		return err
	}
	grid.Tiers = tiers
	if set["kernel"] {
		if grid.Kernels, err = sweeps.ParseList("kernel", f.kernel, sweeps.QuantKernels(), sweeps.ParseQuantKernel); err != nil {
			return flagError(err)
		}
	}
	if set["fmt"] {
		grid.FmtAll = strings.TrimSpace(fmts) == "all"
		if grid.Formats, err = sweeps.ParseList("fmt", fmts, quant.WeightFormats(), quant.ParseFormat); err != nil {
			return flagError(err)
		}
	}
	if set["act"] {
		if grid.Acts, err = sweeps.ParseList("act", acts, []string{sweeps.ActF32, sweeps.ActQ8}, func(s string) (string, error) { return s, nil }); err != nil {
			return flagError(err)
		}
	}
	if set["shape"] {
		if grid.Shapes, err = sweeps.ParseShapes(shapes); err != nil {
			return flagError(err)
		}
	}
	if set["rb"] {
		if grid.RBs, err = sweeps.ParseInts("rb", rbs); err != nil {
			return flagError(err)
		}
	}
	if err := grid.Validate(); err != nil {
		return flagError(err)
	}
	info := machine.Describe()
	plan, err := sweeps.PlanQuant(grid, opt, info)
	if err != nil {
		return usagef("sweep quant: %v", err)
	}
	config := map[string]any{
		"family": "quant", "kernels": grid.Kernels, "isa": grid.Tiers, "fmt": formatList(grid.Formats), "act": grid.Acts,
		"shape": grid.Shapes, "rb": grid.RBs, "threads": opt.Threads, "cold": opt.Cold, "seed": opt.Seed,
		"min_time": opt.Sampler.Effective().MinTime.String(), "cpu": opt.CPU, "counters": counterNames(opt.Counters),
	}
	return runSweep(f, plan, opt, config, notes, info, stdout, stderr)
}

func formatList(fs []quant.Format) []string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.String()
	}
	return s
}

// quantSummary: quantize-q8 points have no M (x alone) and no rb.
var quantSummary = summaryColumns{
	keys: "kernel\tisa\tfmt\tact\tMxK\trb",
	cells: func(r *results.Record) string {
		shape, rb := fmt.Sprintf("%dx%d", r.M, r.K), fmt.Sprint(r.RB)
		if r.M == 0 {
			shape, rb = fmt.Sprintf("K=%d", r.K), "-"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", r.Kernel, r.ISA, r.Fmt, r.Act, shape, rb)
	},
	usFormat: "%.1f",
	rate:     "GOP/s",
	rateCell: func(r *results.Record) string { return num(r.GOps, "%.1f") },
	named: func(r *results.Record) string {
		return fmt.Sprintf("%s/%s fmt=%s act=%s %dx%d rb=%d", r.Kernel, r.ISA, r.Fmt, r.Act, r.M, r.K, r.RB)
	},
}

// listQuant is `ckbench list quant`.
func listQuant(w io.Writer) {
	fmt.Fprintln(w, "family quant: y[M] = W[M×K]·x[K], W in a GGML block format (byte-exact), rows of K/QK blocks")
	fmt.Fprintln(w, "\nformats:")
	for _, f := range quant.Formats() {
		fi := f.Info()
		role := "weights, 8-bit activations " + f.Q8Act().String()
		if !fi.Weight {
			role = "activations"
		}
		fmt.Fprintf(w, "  %-5s %3d per block, %3d bytes (%.3g bits/weight), %s\n        %s\n", fi.Name, fi.Block, fi.Bytes, 8*float64(fi.Bytes)/float64(fi.Block), role, fi.Layout)
	}
	fmt.Fprintln(w, "\nkernels (per call):")
	for _, k := range quant.Kernels {
		flops, bytes := quant.WorkFormula(k)
		fmt.Fprintf(w, "  %-11s FLOPs %s; bytes %s\n", k, flops, bytes)
	}
	fmt.Fprintf(w, "  %-11s the ceiling: a plain read (64-bit XOR, widest loads) of the same weight bytes\n"+
		"              bytes M·(K/QK)·block_bytes; its GB/s is read_gbs (%% read) of every point of the format and shape\n", sweeps.WRead)
	fmt.Fprintln(w, "\ntiers (which kernel × format each implements):")
	for _, t := range isa.All {
		st := isa.Detect(t)
		im, built := quant.Lookup(t)
		where := "runs here"
		if !st.Runs {
			where = "skipped here: " + st.Reason
		}
		if !built {
			fmt.Fprintf(w, "  %-10s no quant kernels in this build (%s)\n", t, where)
			continue
		}
		fmt.Fprintf(w, "  %-10s %s\n", t, where)
		for _, k := range quant.Kernels {
			var have, missing []string
			for _, f := range quant.WeightFormats() {
				name := f.String()
				if k == quant.QuantizeQ8 {
					name = f.Q8Act().String()
				}
				if ok, _ := im.HasFormat(k, f); ok {
					if !strings.Contains(strings.Join(have, ","), name) {
						have = append(have, name)
					}
				} else if !strings.Contains(strings.Join(missing, ","), name) {
					missing = append(missing, name)
				}
			}
			line := fmt.Sprintf("    %-11s %s", k, strings.Join(have, ","))
			if len(missing) > 0 {
				line += "   (missing: " + strings.Join(missing, ",") + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintf(w, "\ncorrectness gate: every tier against the generic tier before timing: GEMVs within %.0e of Σ|w·x| per row\n", quant.Tolerance)
	fmt.Fprintln(w, "(integer sums are exact; only the order of float additions differs); dequant and quantize-q8 give the generic's values.")
	fmt.Fprintf(w, "rb: 1…%d rows per pass (avx2: up to 4). gemv-q8 quantizes x with its tier's quantize-q8.\n", quant.MaxRB)
}

const verifyUsage = `Usage: ckbench verify quant [--golden DIR]

Checks ckbench's GGML formats against a folder of golden vectors in the
format of testdata/golden (a copy of ../shared/golden) (index.json, input_f32.bin, act_f32.bin and the
per-format files): the reference quantizers must give identical bytes, the
dequantizers bit-identical floats, and the dot products agree with the
float64 dot of the dequantized values (1e-5 relative; 1e-3 where the terms
cancel). Prints pass/fail per format and row; exit 1 on any mismatch.

Flags:
`

func cmdVerify(args []string, stdout io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		args = []string{"quant", "--help"} // the only family with golden vectors
	}
	if len(args) == 0 || args[0] != "quant" {
		return usagef("verify: name what to verify: ckbench verify quant --golden DIR")
	}
	fs := newFlagSet("verify quant", verifyUsage, stdout)
	dir := fs.String("golden", "testdata/golden", "folder of GGML golden vectors (the repository's copy; ../shared/golden is the original)")
	quiet := fs.Bool("quiet", false, "print one summary line per format (and each failure), not every check")
	if err := parseFlags(fs, args[1:]); err != nil {
		return helpOK(err)
	}
	res, err := golden.Verify(*dir)
	if err != nil {
		return usagef("verify quant: %v", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	if !*quiet {
		fmt.Fprintln(tw, "format\trow\tact\tcheck\tresult\tdetail\t")
	}
	fails := 0
	type tally struct{ checks, failed int }
	perFormat := map[string]*tally{}
	var order []string
	for _, r := range res {
		if perFormat[r.Format] == nil {
			perFormat[r.Format] = &tally{}
			order = append(order, r.Format)
		}
		perFormat[r.Format].checks++
		verdict, act, row := "pass", "-", "-"
		if !r.OK {
			verdict = "FAIL"
			fails++
			perFormat[r.Format].failed++
		}
		if r.Act >= 0 {
			act = fmt.Sprint(r.Act)
		}
		if r.Row >= 0 {
			row = fmt.Sprint(r.Row)
		}
		if !*quiet || !r.OK {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Format, row, act, r.Check, verdict, r.Detail)
		}
	}
	tw.Flush()
	for _, f := range order {
		t := perFormat[f]
		fmt.Fprintf(stdout, "%s: %d checks, %d failed\n", f, t.checks, t.failed)
	}
	fmt.Fprintf(stdout, "%d checks, %d failed (golden data: %s)\n", len(res), fails, *dir)
	if fails > 0 {
		return exitError{code: exitFailure, msg: fmt.Sprintf("%d of %d checks against %s failed", fails, len(res), *dir)}
	}
	return nil
}
