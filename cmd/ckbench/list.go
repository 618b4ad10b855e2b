package main

import (
	"fmt"
	"io"

	"github.com/ckbench/ckbench/sweeps"
)

const listUsage = `Usage: ckbench list [family]

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
	if family == "" {
		for i, f := range sweeps.Families() {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			f.List(stdout)
		}
		return nil
	}
	f, ok := sweeps.LookupFamily(family)
	if !ok {
		return usagef("list: %v", sweeps.ErrUnknownFamily{Name: family})
	}
	f.List(stdout)
	return nil
}
