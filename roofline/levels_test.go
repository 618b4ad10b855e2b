package roofline

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// synthetic builds a bandwidth curve with plateaus at the given GB/s for
// working sets up to each cache size (a level with size 0 is absent),
// smooth steps between them, and multiplicative noise.
func synthetic(c Caches, l1, l2, l3, dram, noise float64) []Point {
	r := rand.New(rand.NewPCG(1, 2))
	var pts []Point
	for _, s := range Sizes(4<<10, 2<<30, 2) {
		bw := dram
		switch {
		case c.L1D > 0 && s <= c.L1D:
			bw = l1
		case c.L2 > 0 && s <= c.L2:
			bw = l2
		case c.L3 > 0 && s <= c.L3:
			bw = l3
		}
		bw *= 1 + noise*(2*r.Float64()-1)
		pts = append(pts, Point{Bytes: s, GBs: bw})
	}
	return pts
}

var spr = Caches{L1D: 48 << 10, L2: 2 << 20, L3: 105 << 20}

func find(t *testing.T, ls []Level, name string) Level {
	t.Helper()
	for _, l := range ls {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no level %s in %+v", name, ls)
	return Level{}
}

func TestPlateausClean(t *testing.T) {
	ls := Plateaus(synthetic(spr, 400, 210, 85, 36, 0), spr)
	want := map[string]float64{"L1": 400, "L2": 210, "L3": 85, "DRAM": 36}
	if len(ls) != 4 {
		t.Fatalf("%d levels: %+v", len(ls), ls)
	}
	for name, gbs := range want {
		l := find(t, ls, name)
		if l.GBs != gbs || l.Note != "" {
			t.Errorf("%s: %+v, want %v GB/s and no note", name, l, gbs)
		}
		if name != "DRAM" && !l.KneeOK {
			t.Errorf("%s: knee %d not accepted against cpuid", name, l.Knee)
		}
	}
}

func TestPlateausNoisy(t *testing.T) {
	ls := Plateaus(synthetic(spr, 400, 210, 85, 36, 0.08), spr)
	for name, gbs := range map[string]float64{"L1": 400, "L2": 210, "L3": 85, "DRAM": 36} {
		if l := find(t, ls, name); math.Abs(l.GBs-gbs) > 0.1*gbs {
			t.Errorf("%s: %.1f GB/s, want %v ± 10%%", name, l.GBs, gbs)
		}
	}
}

func TestPlateausNoL3(t *testing.T) {
	c := Caches{L1D: 32 << 10, L2: 1 << 20} // cpuid reports no L3
	ls := Plateaus(synthetic(c, 300, 150, 0, 30, 0), c)
	for _, l := range ls {
		if l.Name == "L3" {
			t.Fatalf("an L3 level without an L3: %+v", ls)
		}
	}
	if d := find(t, ls, "DRAM"); d.GBs != 30 || d.Lo != 2<<20 { // from twice the last cache, L2
		t.Fatalf("DRAM %+v", d)
	}
}

func TestPlateausLevelMissing(t *testing.T) {
	// cpuid reports an L3, but it gives no more bandwidth than DRAM (as on
	// some VMs): the level is kept, with a note, and no knee claimed.
	ls := Plateaus(synthetic(spr, 400, 210, 36, 36, 0), spr)
	l3 := find(t, ls, "L3")
	if !strings.Contains(l3.Note, "not distinct") || l3.KneeOK {
		t.Fatalf("L3 %+v", l3)
	}
}

func TestSizes(t *testing.T) {
	s := Sizes(4<<10, 64<<10, 1)
	if len(s) != 5 || s[0] != 4<<10 || s[4] != 64<<10 {
		t.Fatalf("Sizes = %v", s)
	}
	for _, x := range Sizes(4<<10, 1<<30, 2) {
		// The read and copy curves split a set in halves: each a whole
		// number of granules, or Go sums the rest float by float.
		if h := x / 2; h%(4*StreamGranule) != 0 {
			t.Fatalf("size %d: its halves (%d bytes) are not a multiple of the stream granule", x, h)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := Roofline{Version: 1, Method: Method, Compute: []Compute{{Kind: "fp32-fma", Tier: "avx512", Threads: 1, Unit: "GFLOP/s", Value: 175}},
		Bandwidth: []Curve{{Kernel: "read", Tier: "avx512", Threads: 1, Points: synthetic(spr, 400, 210, 85, 36, 0)}}}
	r.Levels = Plateaus(r.Bandwidth[0].Points, spr)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Roofline
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Compute[0] != r.Compute[0] || len(back.Levels) != len(r.Levels) || back.Levels[1] != r.Levels[1] {
		t.Fatalf("round trip lost data:\n%+v\n%+v", r, back)
	}
}

// TestScalingNotes: an L1 that does not scale with threads is named; one
// that does, or a roofline without a 1-thread L1, says nothing.
func TestScalingNotes(t *testing.T) {
	r := &Roofline{Levels: []Level{{Name: "L1", Threads: 1, GBs: 300}, {Name: "L1", Threads: 2, GBs: 430}, {Name: "L2", Threads: 2, GBs: 100}}}
	if n := r.ScalingNotes(); len(n) != 1 || !strings.Contains(n[0], "1.43×") {
		t.Errorf("sibling-like scaling: %q", n)
	}
	r.Levels[1].GBs = 590
	if n := r.ScalingNotes(); len(n) != 0 {
		t.Errorf("near 2×: %q", n)
	}
	r.Levels = r.Levels[1:]
	if n := r.ScalingNotes(); len(n) != 0 {
		t.Errorf("no 1-thread L1: %q", n)
	}
}

// TestL3FromCurve: where cpuid reports no L3, its size is read off the
// read curve, and the levels' windows then put L3 and DRAM apart.
func TestL3FromCurve(t *testing.T) {
	hidden := Caches{L1D: 48 << 10, L2: 1 << 20} // cpuid's view of an Oxide Zen 5 guest
	truth := hidden
	truth.L3 = 32 << 20
	// A quick roofline's read curve on that guest (one size an octave
	// from 4 KiB, GB/s; its first pass).
	zen5 := []Point{}
	for i, gbs := range []float64{418, 433, 433, 413, 180, 172, 165, 219, 143, 97, 89, 105, 91, 67, 47, 42, 43, 39} {
		zen5 = append(zen5, Point{Bytes: 4 << 10 << i, GBs: gbs})
	}
	for _, tc := range []struct {
		name  string
		curve []Point
		c     Caches
		want  int64
	}{
		{"zen5 guest", zen5, hidden, 32 << 20},
		{"synthetic, 2 sizes an octave, noise 5 %", synthetic(truth, 370, 130, 80, 25, 0.05), hidden, 32 << 20},
		{"synthetic 105 MiB L3", synthetic(spr, 300, 100, 40, 12, 0.03), Caches{L1D: spr.L1D, L2: spr.L2}, 105 << 20},
		{"no L3: DRAM right after L2", synthetic(hidden, 370, 130, 0, 25, 0.05), hidden, 0},
		{"no L2 to start from", zen5, Caches{L1D: 48 << 10}, 0},
		{"too short", zen5[:11], hidden, 0},
		{"one slow point inside the L3 is not its end", slowAt(zen5, 4<<20, 40), hidden, 32 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := L3FromCurve(tc.curve, tc.c)
			// Halfway down the fall: within half an octave of the truth.
			if tc.want == 0 && got != 0 || tc.want > 0 && (got < tc.want*7/10 || got > tc.want*14/10) {
				t.Fatalf("L3FromCurve = %d MiB, want %d MiB", got>>20, tc.want>>20)
			}
		})
	}

	c := hidden
	c.L3 = L3FromCurve(zen5, hidden)
	ls := Plateaus(zen5, c)
	l3, dram := find(t, ls, "L3"), find(t, ls, "DRAM")
	if l3.GBs < 89 || l3.GBs > 105 || dram.GBs > 47 {
		t.Errorf("levels with the curve's L3: L3 %.0f GB/s, DRAM %.0f GB/s; want about 97 and 43", l3.GBs, dram.GBs)
	}
	r := &Roofline{L3FromCurve: c.L3}
	r.Machine.Cache.L1D, r.Machine.Cache.L2 = int(hidden.L1D), int(hidden.L2)
	if got := r.Caches(); got != c {
		t.Errorf("Caches() = %+v, want the curve's L3: %+v", got, c)
	}
	if got := LevelOf(8<<20, r.Caches()); got != "L3" {
		t.Errorf("an 8 MiB working set lives in %s, want L3", got)
	}
}

// slowAt is curve with the point at bytes read at gbs.
func slowAt(curve []Point, bytes int64, gbs float64) []Point {
	c := slices.Clone(curve)
	for i := range c {
		if c[i].Bytes == bytes {
			c[i].GBs = gbs
		}
	}
	return c
}
