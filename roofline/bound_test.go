package roofline

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/sampler"
)

func testRoofline() *Roofline {
	r := &Roofline{Version: 1}
	r.Machine.Cache.L1D, r.Machine.Cache.L2, r.Machine.Cache.L3 = 48<<10, 2<<20, 100<<20
	r.Compute = []Compute{{Kind: "fp32-fma", Tier: isa.AVX512, Threads: 1, Value: 200}, {Kind: "fp32-fma", Tier: isa.AVX2, Threads: 1, Value: 100}}
	for _, l := range []Level{{Name: "L1", GBs: 400}, {Name: "L2", GBs: 200}, {Name: "L3", GBs: 50}, {Name: "DRAM", GBs: 20}} {
		l.Threads = 1
		r.Levels = append(r.Levels, l)
	}
	return r
}

func TestBoundRidge(t *testing.T) {
	r := testRoofline()
	// DRAM at 20 GB/s meets the 200 GFLOP/s roof at AI = 10.
	for _, c := range []struct{ ai, want float64 }{{0.25, 5}, {1, 20}, {10, 200}, {100, 200}} {
		if b := r.Bound(isa.AVX512, 1, c.ai, 1<<30, false); b.GFlops != c.want || b.Level != "DRAM" {
			t.Errorf("AI %v: %+v, want %v GFLOP/s in DRAM", c.ai, b, c.want)
		}
	}
	if b := r.Bound(isa.AVX2, 1, 100, 1<<30, false); b.GFlops != 100 || b.Peak != 100 {
		t.Errorf("the tier's own roof: %+v", b)
	}
}

// TestBoundF16: an f16-KV kernel is held to its tier's f16-fma roof where
// the roofline has one, to the FP32 one where not (an older roofline.json,
// the generic tier).
func TestBoundF16(t *testing.T) {
	r := testRoofline()
	r.Compute = append(r.Compute, Compute{Kind: "f16-fma", Tier: isa.AVX512, Threads: 1, Value: 100})
	if b := r.BoundOf("f16-fma", isa.AVX512, 1, 100, 1<<30, false); b.GFlops != 100 || b.Peak != 100 {
		t.Errorf("avx512 f16: %+v, want its f16-fma roof of 100", b)
	}
	if b := r.BoundOf("f16-fma", isa.AVX2, 1, 1000, 1<<30, false); b.GFlops != 100 {
		t.Errorf("avx2 without an f16-fma ceiling: %+v, want the fp32-fma roof of 100", b)
	}
	if b := r.BoundOf("f16-fma", isa.AVX512, 1, 1, 1<<30, false); b.GFlops != 20 {
		t.Errorf("memory-bound f16: %+v, want 20 (AI 1 × DRAM)", b)
	}
}

// TestBoundQ8Attn: a q8_0 decode's peak is its measured q8-decode
// ceiling; in a roofline without one, the harmonic mean of its two halves'
// (int8-dot for Q·K, q8-fma for P·V); without both, the q8-fma bound
// (itself falling back to fp32-fma).
func TestBoundQ8Attn(t *testing.T) {
	r := testRoofline()
	if b, want := r.BoundOf(Q8Attn, isa.AVX512, 1, 1000, 1<<30, false), r.BoundOf("q8-fma", isa.AVX512, 1, 1000, 1<<30, false); b != want {
		t.Errorf("no q8-fma nor int8-dot ceiling: %+v, want the q8-fma (fp32) bound %+v", b, want)
	}
	r.Compute = append(r.Compute, Compute{Kind: "q8-fma", Tier: isa.AVX512, Threads: 1, Value: 60},
		Compute{Kind: "int8-dot", Tier: isa.AVX512, Threads: 1, Value: 240})
	if b := r.BoundOf(Q8Attn, isa.AVX512, 1, 1000, 1<<30, false); b.GFlops != 96 || b.Peak != 96 {
		t.Errorf("q8_0 decode: %+v, want 2/(1/60 + 1/240) = 96", b)
	}
	if b := r.BoundOf(Q8Attn, isa.AVX512, 1, 1, 1<<30, false); b.GFlops != 20 {
		t.Errorf("memory-bound q8_0 decode: %+v, want 20 (AI 1 × DRAM)", b)
	}
	// A measured q8-decode ceiling replaces the harmonic mean, for its own
	// tier and thread count only.
	r.Compute = append(r.Compute, Compute{Kind: Q8DecodeKind, Tier: isa.AVX512, Threads: 1, Value: 50})
	if b := r.BoundOf(Q8Attn, isa.AVX512, 1, 1000, 1<<30, false); b.GFlops != 50 || b.Peak != 50 {
		t.Errorf("q8_0 decode with a q8-decode ceiling: %+v, want its 50", b)
	}
	if b := r.BoundOf(Q8Attn, isa.AVX512, 1, 1, 1<<30, false); b.GFlops != 20 {
		t.Errorf("memory-bound q8_0 decode with a q8-decode ceiling: %+v, want 20 (AI 1 × DRAM)", b)
	}
	if b := r.BoundOf(Q8Attn, isa.AVX512, 2, 1000, 1<<30, false); b.Peak == 50 {
		t.Errorf("2 threads took the 1-thread q8-decode ceiling: %+v", b)
	}
}

// TestBoundAtLeast: a higher bandwidth measured over the same bytes raises
// the memory bound (and only up to the compute roof); a lower or missing
// one changes nothing.
func TestBoundAtLeast(t *testing.T) {
	b := Bound{Level: "DRAM", GBs: 20, Peak: 100, GFlops: 40}
	if got := b.AtLeast(25, 2); got.GBs != 25 || got.GFlops != 50 {
		t.Errorf("raised to 25 GB/s at AI 2: %+v, want 50", got)
	}
	if got := b.AtLeast(80, 2); got.GFlops != 100 {
		t.Errorf("raised past the roof: %+v, want the roof 100", got)
	}
	for _, gbs := range []float64{10, math.NaN(), 0} {
		if got := b.AtLeast(gbs, 2); got != b {
			t.Errorf("AtLeast(%v): %+v, want %+v unchanged", gbs, got, b)
		}
	}
	// A level without a usable ceiling takes the read's rate as its own.
	if got := (Bound{Level: "DRAM", Peak: 100}).AtLeast(25, 2); got.GBs != 25 || got.GFlops != 50 {
		t.Errorf("no level bandwidth, read at 25 GB/s: %+v, want 25 GB/s and 50", got)
	}
	for _, gbs := range []float64{math.NaN(), 0, math.Inf(1)} {
		if got := (Bound{Level: "DRAM", Peak: 100}).AtLeast(gbs, 2); got.GBs != 0 || got.GFlops != 0 {
			t.Errorf("no level bandwidth, AtLeast(%v): %+v, want no bound", gbs, got)
		}
	}
}

// TestBoundAtClock: the compute ceiling scales with the clock a point ran
// at against the one the roofline's ran at, down or up, and the bound
// follows where it is that ceiling; a memory bound stays; without either
// clock, or a ceiling, the bound is as it was.
func TestBoundAtClock(t *testing.T) {
	b := Bound{Level: "DRAM", GBs: 30, Peak: 200, GFlops: 200} // AI 8: 240 GB/s×FLOP/B past the roof
	if got := b.AtClock(3, 4, 8); got.Peak != 150 || got.GFlops != 150 || got.ClockGHz != 3 {
		t.Errorf("at 3 GHz of 4: %+v, want peak and bound 150 at 3 GHz", got)
	}
	if got := b.AtClock(5, 4, 8); got.Peak != 250 || got.GFlops != 240 {
		t.Errorf("at 5 GHz of 4: %+v, want peak 250 and the memory bound 240", got)
	}
	mem := Bound{Level: "DRAM", GBs: 30, Peak: 200, GFlops: 60} // AI 2
	if got := mem.AtClock(3, 4, 2); got.GFlops != 60 || got.Peak != 150 {
		t.Errorf("memory-bound at 3 GHz of 4: %+v, want the bound 60, peak 150", got)
	}
	for _, c := range [][2]float64{{math.NaN(), 4}, {0, 4}, {3, 0}, {math.Inf(1), 4}, {3, math.NaN()}} {
		if got := b.AtClock(c[0], c[1], 8); got != b {
			t.Errorf("AtClock(%v, %v): %+v, want %+v unchanged", c[0], c[1], got, b)
		}
	}
	if got := (Bound{Level: "DRAM", GBs: 30}).AtClock(3, 4, 8); got.GFlops != 0 || got.Peak != 0 {
		t.Errorf("no compute ceiling: %+v, want none", got)
	}
}

// TestPeakClockGHz: the clock the roofline's ceilings ran at is the FP32
// FMA rate over its FLOPs per cycle (the share of the units times their
// lanes × 2); without that share, none.
func TestPeakClockGHz(t *testing.T) {
	u := FMAUnits{Pipes: 2, Bits: 512, Lanes: 32}
	r := &Roofline{Compute: []Compute{
		{Kind: "fp32-fma", Tier: isa.AVX512, Threads: 1, Value: 160, FMA: &u, PctOfPorts: 100}, // 64 FLOP a cycle
		{Kind: "fp32-fma", Tier: isa.AVX2, Threads: 1, Value: 100},
	}}
	if got := r.PeakClockGHz(isa.AVX512, 1); got != 2.5 {
		t.Errorf("avx512: %v GHz, want 2.5", got)
	}
	if got := r.PeakClockGHz(isa.AVX2, 1); got != 0 {
		t.Errorf("avx2 without a share of its units: %v GHz, want 0", got)
	}
	if got := r.PeakClockGHz(isa.AVX512, 2); got != 0 {
		t.Errorf("no 2-thread ceiling: %v GHz, want 0", got)
	}
}

func TestBoundLevels(t *testing.T) {
	r := testRoofline()
	for _, c := range []struct {
		ws    int64
		cold  bool
		level string
	}{
		{48 << 10, false, "L1"}, {48<<10 + 1, false, "L2"}, {2 << 20, false, "L2"},
		{2<<20 + 1, false, "L3"}, {100 << 20, false, "L3"}, {100<<20 + 1, false, "DRAM"},
		{4 << 10, true, "DRAM"},
	} {
		if b := r.Bound(isa.AVX512, 1, 1, c.ws, c.cold); b.Level != c.level {
			t.Errorf("working set %d cold=%v: level %s, want %s", c.ws, c.cold, b.Level, c.level)
		}
	}
	// A level the roofline lacks falls back to the next one out.
	r.Levels = append(r.Levels[:2], r.Levels[3])
	if b := r.Bound(isa.AVX512, 1, 1, 50<<20, false); b.Level != "DRAM" || b.GBs != 20 {
		t.Errorf("missing L3: %+v", b)
	}
}

// TestBoundKnee: a level whose curve fell off before its cpuid size (a VM
// given part of a shared L3) holds working sets only up to the knee; a
// knee past the cpuid size changes nothing, and knees of other thread
// counts are not used.
func TestBoundKnee(t *testing.T) {
	r := testRoofline()
	r.Levels[2].Knee = 64 << 20 // cpuid says 100 MiB
	r.Levels = append(r.Levels, Level{Name: "L3", Threads: 2, GBs: 90, Knee: 8 << 20})
	for _, c := range []struct {
		ws    int64
		level string
	}{{64 << 20, "L3"}, {64<<20 + 1, "DRAM"}, {90 << 20, "DRAM"}} {
		if b := r.Bound(isa.AVX512, 1, 1, c.ws, false); b.Level != c.level {
			t.Errorf("working set %d past a 64 MiB knee: level %s, want %s", c.ws, b.Level, c.level)
		}
	}
	r.Levels[1].Knee = 4 << 20 // past L2's cpuid 2 MiB: cpuid stands
	if got := r.Capacities(1); got.L2 != 2<<20 || got.L3 != 64<<20 || got.L1D != 48<<10 {
		t.Errorf("capacities %+v", got)
	}
}

func TestLoadChecksMachine(t *testing.T) {
	here := machine.Describe()
	dir := t.TempDir()
	r := testRoofline()
	r.Machine = here
	path := dir + "/r.json"
	if err := writeJSON(path, r); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, here); err != nil {
		t.Fatalf("same machine: %v", err)
	}
	other := here
	other.CPU.Model++
	if _, err := Load(path, other); err == nil || !strings.Contains(err.Error(), "another machine") {
		t.Fatalf("other machine: %v", err)
	}
	if _, err := Load(dir+"/missing.json", here); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestSkippedTierNeverRuns(t *testing.T) {
	defer func(d func(isa.Tier) isa.Status) { detect = d }(detect)
	detect = func(t isa.Tier) isa.Status {
		if t == isa.Generic {
			return isa.Status{Tier: t, Runs: true}
		}
		return isa.Status{Tier: t, Reason: "CPU lacks everything (test)"}
	}
	info := machine.Describe()
	r, err := Measure(context.Background(), info, Options{Threads: []int{1}, Quick: true, MaxBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Skipped) != len(isa.All)-1 {
		t.Fatalf("skipped %+v", r.Skipped)
	}
	for _, c := range r.Compute {
		if c.Tier != isa.Generic {
			t.Fatalf("a skipped tier ran: %+v", c)
		}
	}
	for _, c := range r.Bandwidth {
		if c.Tier != isa.Generic || len(c.Points) == 0 || math.IsNaN(c.Points[0].GBs) {
			t.Fatalf("bandwidth %+v", c)
		}
	}
}

// TestUnusableLevelBoundsNothing: a level whose window stayed not flat
// gives its points a level but no bound of its own, and does not fall
// through to the next level's ceiling either; a paired read of the same
// bytes then bounds them alone, under the compute roof.
func TestUnusableLevelBoundsNothing(t *testing.T) {
	r := testRoofline()
	r.Levels[2].Unusable, r.Levels[2].CVPct = true, 58
	b := r.Bound(isa.AVX512, 1, 1, 50<<20, false)
	if b.Level != "L3" || b.GBs != 0 || b.GFlops != 0 {
		t.Fatalf("point in an unusable L3: %+v, want level L3 and no bound", b)
	}
	if got := b.AtLeast(30, 1); got.GBs != 30 || got.GFlops != min(30, b.Peak) || b.Peak <= 0 {
		t.Fatalf("unusable L3 with a paired read at 30 GB/s: %+v (peak %v), want 30 GB/s", got, b.Peak)
	}
	if notes := r.UnusableLevels(); len(notes) != 1 || !strings.Contains(notes[0], "L3") {
		t.Fatalf("notes %q", notes)
	}
	if b := r.Bound(isa.AVX512, 1, 1, 1<<30, false); b.GBs != 20 {
		t.Fatalf("DRAM still bounds: %+v", b)
	}
}

// TestPlateausFlat: a window whose points move by more than FlatCVPct is
// not flat (and Measure then measures it again or drops it).
func TestPlateausFlat(t *testing.T) {
	c := Caches{L1D: 32 << 10, L2: 1 << 20, L3: 16 << 20}
	var flat, bumpy []Point
	for _, size := range Sizes(4<<10, 256<<20, 2) {
		g := 400.0
		switch {
		case size > 16<<20:
			g = 20
		case size > 1<<20:
			g = 60
		case size > 32<<10:
			g = 150
		}
		flat = append(flat, Point{Bytes: size, GBs: g})
		if size > 2<<20 && size <= 4<<20 {
			g /= 3 // the host took L3 away for a moment
		}
		bumpy = append(bumpy, Point{Bytes: size, GBs: g})
	}
	for _, lv := range Plateaus(flat, c) {
		if !lv.Flat() {
			t.Errorf("flat curve: %s not flat (CV %.0f)", lv.Name, lv.CVPct)
		}
	}
	for _, lv := range Plateaus(bumpy, c) {
		if lv.Name == "L3" && lv.Flat() {
			t.Errorf("bumpy L3 window is flat (CV %.0f)", lv.CVPct)
		}
	}
}

// TestValidate: a roofline.json with a zero, negative or NaN ceiling is
// refused by Load, with the level named.
func TestValidate(t *testing.T) {
	here := machine.Describe()
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		edit func(r *Roofline)
		want string
	}{
		{"zero level", func(r *Roofline) { r.Levels[1].GBs = 0 }, "L2"},
		{"negative level", func(r *Roofline) { r.Levels[3].GBs = -5 }, "DRAM"},
		{"zero compute", func(r *Roofline) { r.Compute[0].Value = 0 }, "fp32-fma/avx512"},
		{"negative compute", func(r *Roofline) { r.Compute[1].Value = -1 }, "fp32-fma/avx2"},
	} {
		r := testRoofline()
		r.Machine = here
		c.edit(r)
		path := dir + "/r.json"
		if err := writeJSON(path, r); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path, here); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

func TestFMAUnitsFor(t *testing.T) {
	for _, c := range []struct {
		vendor        string
		family, model int
		tier          isa.Tier
		lanes         int
	}{
		{"AuthenticAMD", 0x19, 0x01, isa.AVX2, 16},    // Zen 3
		{"AuthenticAMD", 0x19, 0x11, isa.AVX512, 16},  // Zen 4: double-pumped
		{"AuthenticAMD", 0x19, 0x11, isa.AVX2, 16},    // Zen 4, 256-bit
		{"AuthenticAMD", 0x1a, 0x02, isa.AVX512, 32},  // Zen 5 server
		{"AuthenticAMD", 0x17, 0x01, isa.AVX2, 8},     // Zen 1
		{"GenuineIntel", 6, 0xcf, isa.AVX512, 32},     // Emerald Rapids
		{"GenuineIntel", 6, 0xcf, isa.AVX2, 16},       //
		{"GenuineIntel", 6, 0x8c, isa.AVX512VNNI, 16}, // Tiger Lake
		{"SomethingElse", 1, 1, isa.AVX512, 32},       // assumed
	} {
		u, ok := FMAUnitsFor(c.vendor, c.family, c.model, c.tier)
		if !ok || u.Lanes != c.lanes || u.Source == "" {
			t.Errorf("%s %#x/%#x %s: %+v, want %d lanes", c.vendor, c.family, c.model, c.tier, u, c.lanes)
		}
	}
	if _, ok := FMAUnitsFor("AuthenticAMD", 0x19, 1, isa.Generic); ok {
		t.Error("generic has no FMA units")
	}
}

// TestBestOfLoadClock: the clock under load is a best of passes, as the
// rate is; the share of the units is the best pass's own (fmaShare).
func TestBestOfLoadClock(t *testing.T) {
	u := FMAUnits{Pipes: 2, Bits: 256, Lanes: 16}
	pass := func(gflops, ghz, pct float64) *Roofline {
		return &Roofline{Compute: []Compute{{Kind: "fp32-fma", Tier: isa.AVX2, Threads: 1, Value: gflops, LoadGHz: ghz, FMA: &u, PctOfPorts: pct}}}
	}
	r := bestOf([]*Roofline{pass(116, 3.69, 99.1), pass(117.2, 3.534, 99.6)})
	if c := r.Compute[0]; c.Value != 117.2 || c.LoadGHz != 3.69 || c.PctOfPorts != 99.6 {
		t.Fatalf("%+v", c)
	}
	c := Compute{FMA: &u, PctOfPorts: 100 + PortsSlackPct + 0.5}
	c.flagPorts()
	if !strings.Contains(c.Note, "above what the units can do") {
		t.Fatalf("no note: %+v", c)
	}
	// A rate far below its share of the units at its clock: the rate's
	// passes were slowed (the Xeon's AVX2 of 2026-11-29: 31.7 GFLOP/s at
	// 77 % of 16 lanes at 2.47 GHz, 61 GFLOP/s).
	sr := bestOf([]*Roofline{pass(31.7, 2.47, 77.2), pass(31.2, 2.46, 77.0)})
	if slow := sr.Compute[0]; !strings.Contains(slow.Note, "the host slowed this rate's passes") {
		t.Fatalf("a slowed rate is not flagged: %+v", slow)
	}
	if notes := sr.SlowedRoofs(); len(notes) != 1 || !strings.Contains(notes[0], "fp32-fma avx2 (1 thread(s)) read 31.7 GFLOP/s") {
		t.Fatalf("SlowedRoofs: %q", notes)
	}
	if ok := bestOf([]*Roofline{pass(61, 2.47, 77.2)}).Compute[0]; ok.Note != "" {
		t.Fatalf("a rate its share implies is flagged: %+v", ok)
	}
}

// TestFMAShare: the pairing of the FMA and clock kernels gives a positive,
// finite share on every tier that runs here (its value is a timing, not
// asserted).
func TestFMAShare(t *testing.T) {
	isatest.Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) {
		u, ok := FMAUnitsFor("", 0, 0, tier)
		if !ok || kernelsFor(tier) == nil {
			return
		}
		cfg := sampler.Config{MinTime: 5 * time.Millisecond, SampleTime: 200 * time.Microsecond, MinSamples: 3}
		cpus, err := sampler.AllowedCPUs()
		if err != nil {
			t.Skip(err)
		}
		share, _, err := fmaShare(cfg, cpus[len(cpus)-1:], tier, u, 256)
		if err != nil {
			t.Fatal(err)
		}
		if !(share > 0 && !math.IsInf(share, 0)) {
			t.Errorf("%s: share %v", tier, share)
		}
	})
}

// writeJSON writes r to path (the CLI writes atomically).
func writeJSON(path string, r *Roofline) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
