package sampler

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// SpreadCPUs lists the CPUs this process may use (AllowedCPUs) in the
// order n-thread measurements take them from: the last n. The last CPUs
// are one per physical core (the lowest-numbered CPU of each core, in
// ascending order), and SMT siblings come before them, so that n threads
// run on n distinct cores while there are enough and on siblings only
// after. The measuring CPU, the last, is a core's first CPU. Where the
// topology cannot be read (not Linux, no sysfs) every CPU is its own core
// and the order is AllowedCPUs'.
func SpreadCPUs() ([]int, error) {
	cpus, err := AllowedCPUs()
	if err != nil {
		return nil, err
	}
	return spread(cpus, coreOf), nil
}

// coreOf names the physical core of cpu ("package/core"), or "" when the
// topology cannot be read.
func coreOf(cpu int) string {
	read := func(f string) string {
		b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/%s", cpu, f))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	pkg, core := read("physical_package_id"), read("core_id")
	if pkg == "" || core == "" {
		return ""
	}
	return pkg + "/" + core
}

// spread orders cpus (ascending) as SpreadCPUs does, with core naming each
// CPU's core ("" for unknown: a core of its own).
func spread(cpus []int, core func(int) string) []int {
	seen := map[string]bool{}
	var firsts, siblings []int
	for _, c := range cpus {
		k := core(c)
		if k != "" && seen[k] {
			siblings = append(siblings, c)
			continue
		}
		seen[k] = k != ""
		firsts = append(firsts, c)
	}
	return slices.Concat(siblings, firsts)
}
