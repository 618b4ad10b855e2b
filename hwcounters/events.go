// Package hwcounters reads the CPU's performance counters (and the
// kernel's software counters) for the current thread through
// perf_event_open(2), honestly: an event the machine does not expose is
// reported as unavailable with the reason, never as a count of 0.
//
// It calls golang.org/x/sys/unix.PerfEventOpen directly. The obvious
// wrapper, github.com/hodgesds/perf-utils v0.7.0, was measured on this
// machine kind (a VM without a virtual PMU) and rejected: it returns
// non-nil profilers holding nil values when no PMU exists (HasProfilers is
// always true), carries the errno only as text (no errors.Is), never sets
// exclude_kernel (so every event fails for non-root under
// perf_event_paranoid=2), and does not scale multiplexed counts.
//
// Events are opened in groups by kind (hardware, cache, software, raw): a
// group is scheduled on the PMU all at once or not at all, and is read with
// one read(2) as PERF_FORMAT_GROUP|TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING.
// When the kernel multiplexes groups (more events than counters) a count is
// scaled by enabled/running, and the running/enabled ratio is reported
// with it.
//
// Raw events are given as rUUEE, perf's syntax: EE is the event select and
// UU the unit mask (config = umask<<8 | event; a counter mask would go in
// bits 24–31). Some common ones, from the vendors' manuals:
//
//	Intel, architectural (every Core since Nehalem; SDM vol. 3B §20.2)
//	  r003c  UnHalted Core Cycles          (CPU_CLK_UNHALTED.THREAD_P)
//	  r00c0  Instructions Retired          (INST_RETIRED.ANY_P)
//	  r4f2e  LLC Reference                 (LONGEST_LAT_CACHE.REFERENCE)
//	  r412e  LLC Misses                    (LONGEST_LAT_CACHE.MISS)
//	  r00c5  Branch Misses Retired         (BR_MISP_RETIRED.ALL_BRANCHES)
//	Intel, Skylake and later client/server cores (model-specific)
//	  r0151  L1D.REPLACEMENT               lines brought into L1D
//	  r08d1  MEM_LOAD_RETIRED.L1_MISS
//	  r10d1  MEM_LOAD_RETIRED.L2_MISS
//	  r20d1  MEM_LOAD_RETIRED.L3_MISS
//	AMD Zen 2–4 (PPR, "Core Performance Monitor Counters")
//	  r0076  Cycles not in Halt            (PMCx076)
//	  r00c0  Retired Instructions          (PMCx0C0)
//	  r00c1  Retired Ops                   (PMCx0C1)
//	  r00c3  Retired Branch Mispredicts    (PMCx0C3)
//	  r0040  Data Cache Accesses           (PMCx040)
//	  rff45  L1 DTLB Misses, all sizes     (PMCx045, LsL1DTlbMiss)
//
// Model-specific numbers change between generations: check the manual of
// the part before trusting a raw count.
package hwcounters

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is a family of events; each kind is opened as its own group.
type Kind uint8

const (
	Hardware Kind = iota // generic hardware events (the PMU)
	Cache                // generic cache events (the PMU)
	Software             // kernel software events: always there where perf is
	Raw                  // model-specific rUUEE events (the PMU)
)

func (k Kind) String() string {
	return [...]string{"hardware", "cache", "software", "raw"}[k]
}

// Event is one counter to open.
type Event struct {
	Name   string // as the user writes it: "cycles", "llc-read-misses", "r01c2"
	Kind   Kind
	Type   uint32 // perf_event_attr.type
	Config uint64 // perf_event_attr.config
	// KernelOnly marks software events the kernel counts in kernel context
	// (context switches, migrations): with exclude_kernel they always read
	// 0, so they are unavailable rather than zero then.
	KernelOnly bool
	Doc        string
}

// The perf ABI numbers (include/uapi/linux/perf_event.h), spelled out here
// so that the event table builds on every platform.
const (
	typeHardware = 0
	typeSoftware = 1
	typeHWCache  = 3
	typeRaw      = 4
)

func cacheConfig(cache, op, result uint64) uint64 { return cache | op<<8 | result<<16 }

// Named events, in the order they are shown and recorded.
var named = []Event{
	{Name: "cycles", Kind: Hardware, Type: typeHardware, Config: 0, Doc: "core clock cycles (PERF_COUNT_HW_CPU_CYCLES)"},
	{Name: "instructions", Kind: Hardware, Type: typeHardware, Config: 1, Doc: "retired instructions"},
	{Name: "ref-cycles", Kind: Hardware, Type: typeHardware, Config: 9, Doc: "reference (TSC-rate) cycles, unscaled by turbo"},
	{Name: "branch-misses", Kind: Hardware, Type: typeHardware, Config: 5, Doc: "mispredicted branches"},
	{Name: "l1d-read-misses", Kind: Cache, Type: typeHWCache, Config: cacheConfig(0, 0, 1), Doc: "L1 data cache read misses"},
	{Name: "llc-reads", Kind: Cache, Type: typeHWCache, Config: cacheConfig(2, 0, 0), Doc: "last-level cache read accesses"},
	{Name: "llc-read-misses", Kind: Cache, Type: typeHWCache, Config: cacheConfig(2, 0, 1), Doc: "last-level cache read misses"},
	{Name: "dtlb-read-misses", Kind: Cache, Type: typeHWCache, Config: cacheConfig(3, 0, 1), Doc: "data TLB read misses"},
	{Name: "task-clock", Kind: Software, Type: typeSoftware, Config: 1, Doc: "ns the thread was on a CPU"},
	{Name: "context-switches", Kind: Software, Type: typeSoftware, Config: 3, KernelOnly: true, Doc: "context switches of the thread"},
	{Name: "cpu-migrations", Kind: Software, Type: typeSoftware, Config: 4, KernelOnly: true, Doc: "moves of the thread to another CPU"},
	{Name: "page-faults", Kind: Software, Type: typeSoftware, Config: 2, Doc: "page faults (first touch of memory, etc.)"},
}

// Named returns every named event, in display order.
func Named() []Event { return append([]Event(nil), named...) }

// Default is the event set of `--counters default`: every named event.
func Default() []Event { return Named() }

// Lookup resolves a named event or a raw rUUEE event.
func Lookup(name string) (Event, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, e := range named {
		if e.Name == name {
			return e, nil
		}
	}
	if len(name) > 1 && name[0] == 'r' {
		cfg, err := strconv.ParseUint(name[1:], 16, 64)
		if err == nil {
			return Event{Name: name, Kind: Raw, Type: typeRaw, Config: cfg,
				Doc: fmt.Sprintf("raw event select 0x%02x, umask 0x%02x", cfg&0xff, (cfg>>8)&0xff)}, nil
		}
	}
	return Event{}, fmt.Errorf("unknown counter %q (named: %s; or a raw event as rUUEE in hex, e.g. r01c2)", name, strings.Join(names(named), ","))
}

// ParseList reads a --counters value: default, none, or a comma list of
// event names. It returns nil for none.
func ParseList(s string) ([]Event, error) {
	switch strings.TrimSpace(s) {
	case "", "none":
		return nil, nil
	case "default", "all":
		return Default(), nil
	}
	var evs []Event
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		e, err := Lookup(f)
		if err != nil {
			return nil, err
		}
		if !seen[e.Name] {
			seen[e.Name] = true
			evs = append(evs, e)
		}
	}
	return evs, nil
}

func names(evs []Event) []string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = e.Name
	}
	return s
}
