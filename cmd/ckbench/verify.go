package main

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"text/tabwriter"

	"github.com/ckbench/ckbench/kernels/quant/golden"
)

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
	if len(args) == 0 {
		return usagef("verify: name what to verify: ckbench verify quant --golden DIR")
	}
	if args[0] != "quant" {
		return usagef("verify: cannot verify %q: quant is the family with golden vectors (ckbench verify quant --golden DIR)", args[0])
	}
	fs := newFlagSet("verify quant", verifyUsage, stdout)
	dir := fs.String("golden", "testdata/golden", "folder of GGML golden vectors (the repository's copy; ../shared/golden is the original)")
	quiet := fs.Bool("quiet", false, "print one summary line per format (and each failure), not every check")
	if err := parseFlags(fs, args[1:]); err != nil {
		return helpOK(err)
	}
	res, err := golden.Verify(*dir)
	if err != nil {
		if !setFlags(fs)["golden"] && errors.Is(err, iofs.ErrNotExist) {
			return usagef("verify quant: no golden vectors at %s, the default, which is relative to the repository's root: run from there, or give --golden DIR", *dir)
		}
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
