package roofline

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
)

// Bound is the roofline bound of one point.
type Bound struct {
	Level  string  // memory level its working set lives in (DRAM when cold)
	GBs    float64 // that level's bandwidth ceiling (0: none usable, no bound)
	Peak   float64 // compute ceiling of its tier (GFLOP/s), 0 if unknown
	Kind   string  // the compute ceiling Peak is (a Compute kind, or Q8Attn's harmonic mean)
	GFlops float64 // min(Peak, AI × GBs)
	// ClockGHz is the core clock Peak is taken at (AtClock): 0 for the
	// roofline's own, the clock its compute ceilings ran at.
	ClockGHz float64
}

// LevelOf names the level a working set of ws bytes per thread lives in,
// by the cache sizes c.
func LevelOf(ws int64, c Caches) string {
	switch {
	case c.L1D > 0 && ws <= c.L1D:
		return "L1"
	case c.L2 > 0 && ws <= c.L2:
		return "L2"
	case c.L3 > 0 && ws <= c.L3:
		return "L3"
	}
	return "DRAM"
}

// Caches returns the cache sizes the roofline was measured with: cpuid's,
// and the L3 read off the curve where cpuid reports none.
func (r *Roofline) Caches() Caches {
	c := Caches{L1D: int64(r.Machine.Cache.L1D), L2: int64(r.Machine.Cache.L2), L3: int64(r.Machine.Cache.L3)}
	if c.L3 <= 0 && r.L3FromCurve > 0 {
		c.L3 = r.L3FromCurve
	}
	return c
}

// Capacities returns the cache sizes a working set on threads threads is
// held to: the cpuid size, or the level's measured knee where the curve
// fell off before it. A VM is often given only part of a shared L3 (here
// cpuid says 260 MiB and the read rate halves by 128 MiB): a working set
// past the knee streams from the next level, and is bound by it.
func (r *Roofline) Capacities(threads int) Caches {
	c := r.Caches()
	for _, lv := range r.Levels {
		if lv.Threads != threads || lv.Knee <= 0 {
			continue
		}
		switch lv.Name {
		case "L1":
			c.L1D = shrink(c.L1D, lv.Knee)
		case "L2":
			c.L2 = shrink(c.L2, lv.Knee)
		case "L3":
			c.L3 = shrink(c.L3, lv.Knee)
		}
	}
	return c
}

// shrink returns the smaller of a cpuid size and a measured knee.
func shrink(size, knee int64) int64 {
	if size <= 0 || knee >= size {
		return size
	}
	return knee
}

// Bound returns the bound of a point of tier t on threads threads with
// arithmetic intensity ai (FLOP/byte) and a working set of ws bytes per
// thread: min(FP32 FMA peak of t, ai × bandwidth of the level). The level
// is the first whose capacity (Capacities) holds ws; cold puts the working
// set in DRAM. A level the roofline lacks falls back to the
// next level out.
func (r *Roofline) Bound(t isa.Tier, threads int, ai float64, ws int64, cold bool) Bound {
	return r.BoundOf("fp32-fma", t, threads, ai, ws, cold)
}

// BoundOf is Bound against the compute ceiling of kind (fp32-fma; f16-fma
// or q8-fma for kernels whose FMAs widen an f16 or q8_0 KV cache, falling
// back to fp32-fma where the roofline has none of t; int8-dot for the
// integer GEMVs, with ai in int8 ops per byte; Q8Attn for a decode over a
// q8_0 cache, its q8-decode ceiling).
func (r *Roofline) BoundOf(kind string, t isa.Tier, threads int, ai float64, ws int64, cold bool) Bound {
	if kind == Q8Attn {
		return r.q8AttnBound(t, threads, ai, ws, cold)
	}
	b := Bound{Level: LevelOf(ws, r.Capacities(threads))}
	if cold {
		b.Level = "DRAM"
	}
	order := []string{"L1", "L2", "L3", "DRAM"}
	for i, name := range order {
		if name != b.Level {
			continue
		}
		for _, next := range order[i:] {
			lv, ok := r.level(next, threads)
			if !ok {
				continue // not measured: the next level out bounds it
			}
			b.Level = next
			if !lv.Unusable {
				b.GBs = lv.GBs
			}
			break
		}
		break
	}
	b.Peak, b.Kind = r.peak(kind, t, threads), kind
	if b.Peak <= 0 && (kind == "f16-fma" || kind == "q8-fma") {
		return r.BoundOf("fp32-fma", t, threads, ai, ws, cold)
	}
	if b.GBs <= 0 {
		// No usable ceiling for its level: no bound, unless a read of
		// the same bytes gives the level one (AtLeast).
		return b
	}
	return b.atAI(ai)
}

// AtLeast is b with its level's bandwidth raised to gbs where gbs is
// higher (a rate measured over the same bytes at another moment), and its
// bound recomputed at arithmetic intensity ai; NaN or lower: b. A level
// without a usable ceiling (GBs 0) takes gbs as its bandwidth.
func (b Bound) AtLeast(gbs, ai float64) Bound {
	if !(gbs > b.GBs) || math.IsInf(gbs, 0) {
		return b
	}
	b.GBs = gbs
	return b.atAI(ai)
}

// AtClock is b with its compute ceiling taken at core clock ghz, the
// clock a point ran at, where the roofline's ceilings ran at peakGHz
// (PeakClockGHz): Peak × ghz / peakGHz, and its bound recomputed at
// arithmetic intensity ai. A compute ceiling is FLOPs per cycle times the
// clock, and a host's clock moves. On a 2-vCPU Zen 5 guest (AMD EPYC
// family 26 model 2, 2026-12-02) streaming from DRAM took it from
// 3.62–3.67 GHz to 3.34–3.59 and the AVX-512 FMA rate right after from
// 228–230 GFLOP/s to 200–225 (BenchmarkClockUnderStream, 9 runs); its
// decode sweeps from DRAM ran at 2.7–3.3 GHz where the roofline's FMAs
// had run at 3.37 and its sweeps in L3 at 3.3–3.4: held to the
// roofline's ceiling, a compute-bound point from DRAM was held to up to
// a fifth more than its clock allowed. A clock above peakGHz raises the
// ceiling as much (an hour later the same guest's sweeps in L3 ran at
// 3.57–3.59 GHz, its roofline's FMAs at 3.38). Without either clock (0,
// NaN), or without a compute ceiling: b.
func (b Bound) AtClock(ghz, peakGHz, ai float64) Bound {
	if !(ghz > 0) || !(peakGHz > 0) || math.IsInf(ghz, 0) || b.Peak <= 0 {
		return b
	}
	b.Peak *= ghz / peakGHz
	b.ClockGHz = ghz
	if b.GBs <= 0 {
		return b
	}
	return b.atAI(ai)
}

// atAI sets b's bound at arithmetic intensity ai: min(Peak, ai × GBs).
func (b Bound) atAI(ai float64) Bound {
	b.GFlops = ai * b.GBs
	if b.Peak > 0 && b.Peak < b.GFlops {
		b.GFlops = b.Peak
	}
	return b
}

// Q8Attn is the compute ceiling of a decode over a q8_0 KV cache: the
// measured q8-decode ceiling (Q8DecodeKind: its Q·K int8 dots and its P·V
// widening, every block's scale included) where the roofline has it. An
// older roofline without it gets the harmonic mean of its halves' peaks:
// F/2 at int8-dot for Q·K plus F/2 at q8-fma for P·V, which leaves the
// blocks' scales out and overstates the roof (Zen 5, AVX-512: 181 against
// a measured q8-decode of 101 GFLOP/s). Not a measured kind itself.
const Q8Attn = "q8-dot+fma"

// Q8DecodeKind is the measured compute ceiling of a q8_0 decode (Q8Decode).
const Q8DecodeKind = "q8-decode"

func (r *Roofline) q8AttnBound(t isa.Tier, threads int, ai float64, ws int64, cold bool) Bound {
	if r.peak(Q8DecodeKind, t, threads) > 0 {
		return r.BoundOf(Q8DecodeKind, t, threads, ai, ws, cold)
	}
	b := r.BoundOf("q8-fma", t, threads, ai, ws, cold)
	dot := r.BoundOf("int8-dot", t, threads, ai, ws, cold)
	if b.Peak <= 0 || dot.Peak <= 0 {
		return b
	}
	b.Peak, b.Kind = 2/(1/b.Peak+1/dot.Peak), Q8Attn
	if b.GBs <= 0 {
		return b // no level ceiling yet (see BoundOf)
	}
	return b.atAI(ai)
}

// Ceiling is r's compute ceiling of kind for tier t on threads (the last
// measured, where a file holds several), false if it has none.
func (r *Roofline) Ceiling(kind string, t isa.Tier, threads int) (Compute, bool) {
	var found Compute
	ok := false
	for _, c := range r.Compute {
		if c.Kind == kind && c.Tier == t && c.Threads == threads {
			found, ok = c, true
		}
	}
	return found, ok
}

// PeakClockGHz is the core clock tier t's compute ceilings on threads
// ran at: its FP32 FMA rate over that kernel's FLOPs per cycle, which
// fmaShare measured with a clock chain timed back to back with it (its
// share of the FMA units, PctOfPorts), so that the clock cancels out of
// it. 0 where the roofline has no such share (a CPU without an FMAUnits
// line, a roofline without the tier).
func (r *Roofline) PeakClockGHz(t isa.Tier, threads int) float64 {
	c, ok := r.Ceiling("fp32-fma", t, threads)
	perCycle, known := c.flopsPerCycle()
	if !ok || !known || c.Value <= 0 {
		return 0
	}
	return c.Value / perCycle
}

// peak is r's compute ceiling of kind for tier t on threads, 0 if it has
// none.
func (r *Roofline) peak(kind string, t isa.Tier, threads int) float64 {
	c, _ := r.Ceiling(kind, t, threads)
	return c.Value
}

func (r *Roofline) level(name string, threads int) (Level, bool) {
	for _, lv := range r.Levels {
		if lv.Name == name && lv.Threads == threads && lv.GBs > 0 {
			return lv, true
		}
	}
	return Level{}, false
}

// UnusableLevels says which levels bound nothing by themselves because
// their window was not flat, one line each, for a run's notes. A point in
// such a level that has a paired read of its own bytes (kv-read, w-read)
// is bound by that read's rate alone (see AtLeast).
func (r *Roofline) UnusableLevels() []string {
	var notes []string
	for _, lv := range r.Levels {
		if lv.Unusable {
			notes = append(notes, fmt.Sprintf("roofline %s (%d thread(s)) is not used as a bound: its window was not flat (CV %.0f %%) even when measured again; points in %s are bound by their paired read loop alone, where they have one", lv.Name, lv.Threads, lv.CVPct, lv.Name))
		}
	}
	return notes
}

// SlowedRoofs names the fp32-fma ceilings measured well below what their
// share of the FMA units at their clock implies (Compute.RateSlowed): a
// point bound by one reads a share of it that is too high.
func (r *Roofline) SlowedRoofs() []string {
	var notes []string
	for _, c := range r.Compute {
		if n, slowed := c.SlowedNote(); slowed {
			notes = append(notes, n)
		}
	}
	return notes
}

// Cautions is what a run bounded by r must say of it: the levels it does
// not use as bounds (UnusableLevels) and the roofs the host slowed
// (SlowedRoofs).
func (r *Roofline) Cautions() []string {
	return append(r.UnusableLevels(), r.SlowedRoofs()...)
}

// Validate refuses a roofline whose ceilings cannot bound anything: a
// level or compute ceiling that is zero, negative or not a number.
func (r *Roofline) Validate() error {
	if r.Version != 1 || len(r.Levels) == 0 || len(r.Compute) == 0 {
		return fmt.Errorf("not a roofline.json (version %d, %d levels, %d compute ceilings)", r.Version, len(r.Levels), len(r.Compute))
	}
	for _, lv := range r.Levels {
		if !(lv.GBs > 0) || math.IsInf(lv.GBs, 0) || lv.Threads < 1 {
			return fmt.Errorf("level %s (%d threads) has a ceiling of %v GB/s: a ceiling must be a positive number (measure it again with ckbench roofline)", lv.Name, lv.Threads, lv.GBs)
		}
	}
	for _, c := range r.Compute {
		if !(c.Value > 0) || math.IsInf(c.Value, 0) || c.Threads < 1 {
			return fmt.Errorf("compute ceiling %s/%s (%d threads) is %v %s: a ceiling must be a positive number (measure it again with ckbench roofline)", c.Kind, c.Tier, c.Threads, c.Value, c.Unit)
		}
	}
	return nil
}

// ErrOtherMachine marks a roofline measured on a different machine.
var ErrOtherMachine = errors.New("roofline was measured on another machine")

// Load reads a roofline.json and checks it was measured on a machine like
// this one (same CPU brand, family, model, CPU count and cache sizes).
func Load(path string, here machine.Info) (*Roofline, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read roofline: %w", err)
	}
	var r Roofline
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s is not a roofline.json: %v", path, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if diff := machineDiff(r.Machine, here); diff != "" {
		return &r, fmt.Errorf("%w: %s", ErrOtherMachine, diff)
	}
	return &r, nil
}

// machineDiff says how two machines differ in what a roofline depends on.
func machineDiff(a, b machine.Info) string {
	var d []string
	if a.CPU.Brand != b.CPU.Brand || a.CPU.Family != b.CPU.Family || a.CPU.Model != b.CPU.Model {
		d = append(d, fmt.Sprintf("CPU %q (family %d model %d) vs %q (family %d model %d)",
			a.CPU.Brand, a.CPU.Family, a.CPU.Model, b.CPU.Brand, b.CPU.Family, b.CPU.Model))
	}
	if a.Cache != b.Cache {
		d = append(d, fmt.Sprintf("caches %+v vs %+v", a.Cache, b.Cache))
	}
	if a.OS.CPUs != b.OS.CPUs {
		d = append(d, fmt.Sprintf("%d vs %d CPUs", a.OS.CPUs, b.OS.CPUs))
	}
	return strings.Join(d, "; ")
}
