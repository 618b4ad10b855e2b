// Package machine describes the computer a run is measured on: CPU,
// caches, ISA features and tiers, memory and software. Every results folder
// carries this description, so that a number is never separated from the
// machine that produced it.
package machine

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/klauspost/cpuid/v2"

	"github.com/ckbench/ckbench/hwcounters"
	"github.com/ckbench/ckbench/kernels/isa"
)

// Feature is one ISA feature and whether the CPU reports it.
type Feature struct {
	Name    string `json:"name"`
	Present bool   `json:"present"`
}

// Info is the description of this machine.
type Info struct {
	CPU struct {
		Brand          string `json:"brand"`
		Vendor         string `json:"vendor"`
		Family         int    `json:"family"`
		Model          int    `json:"model"`
		Stepping       int    `json:"stepping"`
		PhysicalCores  int    `json:"physical_cores"`
		LogicalCores   int    `json:"logical_cores"`
		ThreadsPerCore int    `json:"threads_per_core"`
		CacheLine      int    `json:"cache_line"`
		BaseHz         int64  `json:"base_hz,omitempty"` // as cpuid reports it; 0 if unknown
		Hypervisor     string `json:"hypervisor,omitempty"`
		// Microcode is the revision /proc/cpuinfo reports (Linux; empty
		// where the OS does not say, or the hypervisor hides it).
		Microcode string `json:"microcode,omitempty"`
	} `json:"cpu"`
	// Host is the node's name (CKBENCH_HOST, else os.Hostname): which
	// machine of a fleet.
	Host string `json:"host,omitempty"`
	// Cache sizes in bytes as cpuid reports them (-1 when not reported).
	// L2 and L3 may be per core or shared, as the CPU describes them.
	Cache struct {
		L1D int `json:"l1d"`
		L1I int `json:"l1i"`
		L2  int `json:"l2"`
		L3  int `json:"l3"`
	} `json:"cache"`
	Features []Feature    `json:"features"`
	Tiers    []isa.Status `json:"tiers"`
	OS       struct {
		GOOS         string `json:"goos"`
		GOARCH       string `json:"goarch"`
		Kernel       string `json:"kernel,omitempty"`
		CPUs         int    `json:"cpus"` // runtime.NumCPU: CPUs this process may use
		MemTotal     int64  `json:"mem_total"`
		MemAvail     int64  `json:"mem_available"`
		GoVersion    string `json:"go_version"`
		PerfParanoid string `json:"perf_event_paranoid,omitempty"`
	} `json:"os"`
	// Counters is which performance counters open here, for this user.
	Counters Counters `json:"counters"`
}

// Counters describes perf_event_open on this machine.
type Counters struct {
	// ExcludeKernel: events count user mode only (not root; see hwcounters).
	ExcludeKernel bool      `json:"exclude_kernel"`
	Events        []Counter `json:"events"`
}

// Counter is one event's availability, with the reason when it is not.
type Counter struct {
	Event     string `json:"event"`
	Kind      string `json:"kind"`
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
}

// CPUName names the CPU as reports and comparisons do: its brand, family
// and model, "AMD EPYC (family 25 model 1)".
func (m Info) CPUName() string {
	return fmt.Sprintf("%s (family %d model %d)", m.CPU.Brand, m.CPU.Family, m.CPU.Model)
}

// DescribeCounters probes evs (opening and closing each) on this thread.
func DescribeCounters(evs []hwcounters.Event) Counters {
	cs := Counters{ExcludeKernel: !hwcounters.Privileged()}
	for _, s := range hwcounters.Probe(evs) {
		c := Counter{Event: s.Event.Name, Kind: s.Event.Kind.String(), Available: s.Available()}
		if s.Err != nil {
			c.Reason = s.Err.Error()
		}
		cs.Events = append(cs.Events, c)
	}
	return cs
}

// featuresFor lists the features that matter to ckbench on an architecture.
func featuresFor(arch string) []cpuid.FeatureID {
	if arch == "arm64" {
		return []cpuid.FeatureID{cpuid.ASIMD, cpuid.ASIMDDP, cpuid.FPHP, cpuid.ASIMDHP, cpuid.SVE}
	}
	return []cpuid.FeatureID{cpuid.SSE42, cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C,
		cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512VNNI, cpuid.AVX512BF16,
		cpuid.AVX512FP16, cpuid.AVXVNNI, cpuid.AMXTILE, cpuid.AMXINT8, cpuid.AMXBF16}
}

// Describe reads this machine's description. It never fails: what cannot
// be read is left zero.
func Describe() Info {
	var in Info
	c := &cpuid.CPU
	in.CPU.Brand = strings.TrimSpace(c.BrandName)
	in.CPU.Vendor = c.VendorString
	if in.CPU.Vendor == "" {
		in.CPU.Vendor = c.VendorID.String()
	}
	in.CPU.Family, in.CPU.Model, in.CPU.Stepping = c.Family, c.Model, c.Stepping
	in.CPU.PhysicalCores, in.CPU.LogicalCores, in.CPU.ThreadsPerCore = c.PhysicalCores, c.LogicalCores, c.ThreadsPerCore
	in.CPU.CacheLine = c.CacheLine
	in.CPU.BaseHz = c.Hz
	if c.Supports(cpuid.HYPERVISOR) {
		in.CPU.Hypervisor = c.HypervisorVendorString
		if in.CPU.Hypervisor == "" {
			in.CPU.Hypervisor = "yes"
		}
	}
	in.Cache.L1D, in.Cache.L1I, in.Cache.L2, in.Cache.L3 = c.Cache.L1D, c.Cache.L1I, c.Cache.L2, c.Cache.L3
	for _, f := range featuresFor(runtime.GOARCH) {
		in.Features = append(in.Features, Feature{Name: f.String(), Present: c.Supports(f)})
	}
	for _, t := range isa.All {
		in.Tiers = append(in.Tiers, isa.Detect(t))
	}
	in.CPU.Microcode = microcode()
	// A container's hostname is its pod's: CKBENCH_HOST names the node
	// (deploy/k8s sets it from spec.nodeName).
	if in.Host = os.Getenv("CKBENCH_HOST"); in.Host == "" {
		in.Host, _ = os.Hostname()
	}
	in.OS.GOOS, in.OS.GOARCH, in.OS.GoVersion = runtime.GOOS, runtime.GOARCH, runtime.Version()
	in.OS.CPUs = runtime.NumCPU()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		in.OS.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); err == nil {
		in.OS.PerfParanoid = strings.TrimSpace(string(b))
	}
	in.OS.MemTotal, in.OS.MemAvail = meminfo()
	in.Counters = DescribeCounters(hwcounters.Default())
	return in
}

// microcode is the first "microcode" line of /proc/cpuinfo, or "".
func microcode() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "microcode" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func meminfo() (total, avail int64) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemTotal:":
			total = v * 1024
		case "MemAvailable:":
			avail = v * 1024
		}
	}
	return total, avail
}

// Bytes formats a byte count for people: 48 KiB, 2 MiB, 1.5 GiB.
func Bytes(n int64) string {
	switch {
	case n < 0:
		return "n/a"
	case n >= 1<<30:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<30))) + " GiB"
	case n >= 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MiB"
	case n >= 1<<10:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<10))) + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }
