package main

import (
	"fmt"
	"io"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/sweeps"
)

const listUsage = `Usage: ckbench list [attention|quant]

Lists the kernels of a family (all families when none is named), the tiers
each is built for and whether they run here, the parameters a sweep takes,
and the work model of each kernel: FLOPs, compulsory bytes and the traffic
its loop structure implies, per call.

`

func cmdList(args []string, stdout io.Writer) error {
	fs := newFlagSet("list", listUsage, stdout)
	family := "" // every family
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		family, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	switch family {
	case "":
		listAttention(stdout)
		fmt.Fprintln(stdout)
		listQuant(stdout)
	case "attention":
		listAttention(stdout)
	case "quant":
		listQuant(stdout)
	default:
		return usagef("list: unknown family %q (known: attention, quant)", family)
	}
	return nil
}

// listAttention describes the attention family.
func listAttention(stdout io.Writer) {
	fmt.Fprintln(stdout, "family attention: decode over a head-major f32 KV cache k[kv_head][T][D], q[H][D]")
	fmt.Fprintln(stdout, "\ntiers:")
	for _, t := range isa.All {
		st := isa.Detect(t)
		_, built := attention.Lookup(t)
		switch {
		case !built:
			fmt.Fprintf(stdout, "  %-10s no attention kernels (int8-only tier, or not in this build)\n", t)
		case st.Runs:
			fmt.Fprintf(stdout, "  %-10s runs here\n", t)
		default:
			fmt.Fprintf(stdout, "  %-10s skipped here: %s\n", t, st.Reason)
		}
	}
	fmt.Fprintln(stdout, "\nkernels (per call; e = 4 bytes per f32 KV element):")
	for _, k := range attention.Kernels {
		flops, bytes, traffic := attention.WorkFormula(k)
		fmt.Fprintf(stdout, "  %s\n      FLOPs   %s\n      bytes   %s\n      traffic %s\n", k, flops, bytes, traffic)
	}
	fmt.Fprintf(stdout, "  %s\n      the ceiling: a plain load-and-sum loop over the same K and V bytes\n      bytes   2·Hkv·T·D·e; its GB/s is read_gbs of every point of the shape\n", sweeps.KVRead)
	fmt.Fprintf(stdout, "\nparameters: hd a multiple of %d up to %d; tk auto (CKE: 32 for D≤64, 16 for D≤128, else 8) or %d…%d;\n",
		attention.HeadDimMultiple, attention.MaxHeadDim, attention.MinTileK, attention.MaxTileK)
	fmt.Fprintln(stdout, "            heads H:Hkv with H a multiple of Hkv; exp exact (≤ 2 ulp) or fast (CKE polynomial, ~1e-4)")
	fmt.Fprintf(stdout, "correctness gate: max relative error vs a float64 reference ≤ %.0e (exact), ≤ %.0e (fast);\n",
		attention.Tolerance(attention.ExpExact), attention.Tolerance(attention.ExpFast))
	fmt.Fprintln(stdout, "                  beyond ~16k keys at least √T·2⁻²⁴, the expected error of float32 accumulation")
}
