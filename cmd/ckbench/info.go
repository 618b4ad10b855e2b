package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ckbench/ckbench/machine"
)

const infoUsage = `Usage: ckbench info [--json]

Prints this machine's CPU, cache sizes, the ISA features that matter to
ckbench and, for each kernel tier, whether it runs here or which feature is
missing.

`

func cmdInfo(args []string, stdout io.Writer) error {
	fs := newFlagSet("info", infoUsage, stdout)
	asJSON := fs.Bool("json", false, "print the description as JSON")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	in := machine.Describe()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	c := in.CPU
	fmt.Fprintf(stdout, "CPU        %s\n", c.Brand)
	fmt.Fprintf(stdout, "vendor     %s, family %d, model %d, stepping %d", c.Vendor, c.Family, c.Model, c.Stepping)
	if c.Microcode != "" {
		fmt.Fprintf(stdout, ", microcode %s", c.Microcode)
	}
	fmt.Fprintln(stdout)
	if in.Host != "" {
		fmt.Fprintf(stdout, "host       %s\n", in.Host)
	}
	fmt.Fprintf(stdout, "cores      %d physical, %d logical (%d per core); %d usable by this process\n",
		c.PhysicalCores, c.LogicalCores, c.ThreadsPerCore, in.OS.CPUs)
	if c.Hypervisor != "" {
		fmt.Fprintf(stdout, "hypervisor %s (virtual machine: counters and clocks may be virtualized)\n", c.Hypervisor)
	}
	l3 := cacheSize(in.Cache.L3)
	if in.Cache.L3 <= 0 {
		l3 += " (ckbench roofline reads it off its read curve)"
	}
	fmt.Fprintf(stdout, "caches     L1d %s, L1i %s, L2 %s, L3 %s\n", cacheSize(in.Cache.L1D), cacheSize(in.Cache.L1I),
		cacheSize(in.Cache.L2), l3)
	fmt.Fprintf(stdout, "memory     %s total, %s available\n", machine.Bytes(in.OS.MemTotal), machine.Bytes(in.OS.MemAvail))
	fmt.Fprintf(stdout, "software   %s/%s, kernel %s, %s\n", in.OS.GOOS, in.OS.GOARCH, in.OS.Kernel, in.OS.GoVersion)
	var have, lack []string
	for _, f := range in.Features {
		if f.Present {
			have = append(have, f.Name)
		} else {
			lack = append(lack, f.Name)
		}
	}
	fmt.Fprintf(stdout, "features   %s\n", strings.Join(have, " "))
	if len(lack) > 0 {
		fmt.Fprintf(stdout, "absent     %s\n", strings.Join(lack, " "))
	}
	fmt.Fprintln(stdout, "tiers")
	for _, t := range in.Tiers {
		if t.Runs {
			fmt.Fprintf(stdout, "  %-10s runs here\n", t.Tier)
		} else {
			fmt.Fprintf(stdout, "  %-10s skipped: %s\n", t.Tier, t.Reason)
		}
	}
	printCounters(stdout, in.Counters)
	return nil
}

// printCounters lists each event as available or not, with the reason.
func printCounters(w io.Writer, cs machine.Counters) {
	mode := "user and kernel mode (root)"
	if cs.ExcludeKernel {
		mode = "user mode only (not root: exclude_kernel)"
	}
	fmt.Fprintf(w, "counters   %s; 'ckbench counters' reads them on a calibrated loop\n", mode)
	for _, c := range cs.Events {
		if c.Available {
			fmt.Fprintf(w, "  %-17s available\n", c.Event)
		} else {
			fmt.Fprintf(w, "  %-17s unavailable: %s\n", c.Event, strings.TrimPrefix(c.Reason, c.Event+": "))
		}
	}
}

func cacheSize(n int) string {
	if n <= 0 {
		return "not reported"
	}
	return machine.Bytes(int64(n))
}

// helpOK turns the "help shown" signal into success.
func helpOK(err error) error {
	if err == errHelp {
		return nil
	}
	return err
}
