package roofline

import (
	"fmt"
	"math"

	"github.com/ckbench/ckbench/internal/stats"
	"github.com/ckbench/ckbench/machine"
)

// Caches are the cache sizes the plateau windows come from (bytes; ≤ 0
// when cpuid did not report the level). L2 and L3 are per core and per
// package as cpuid describes them.
type Caches struct{ L1D, L2, L3 int64 }

// Level is the bandwidth ceiling of one memory level: the median GB/s of
// the points inside its window, with the checks that make it trustworthy.
type Level struct {
	Name    string  `json:"name"` // L1, L2, L3, DRAM
	Threads int     `json:"threads"`
	Kernel  string  `json:"kernel"`
	GBs     float64 `json:"gbs"`
	Lo      int64   `json:"window_lo"` // working-set window the plateau is read from
	Hi      int64   `json:"window_hi"`
	Points  int     `json:"points"`
	CVPct   float64 `json:"cv_pct"` // spread of the points in the window
	// Knee is the first working set past the window where bandwidth falls
	// below halfway to the next level's plateau; KneeOK says it lies
	// between half and four times the cpuid size (the fall is gradual: a
	// working set of 1.5× the cache still hits in it a good part of the time).
	Knee   int64  `json:"knee,omitempty"`
	KneeOK bool   `json:"knee_ok"`
	Note   string `json:"note,omitempty"`
	// Unusable: the window stayed not flat (CV > FlatCVPct) after being
	// measured again, so its median is no ceiling; points in this level
	// get no roofline bound (their in-run read ceiling still holds).
	Unusable bool `json:"unusable,omitempty"`
}

// FlatCVPct is the spread of a window's points above which its plateau is
// not flat: the curve moved inside it (a level boundary inside the
// window, or the host's load), so its median is not a ceiling.
const FlatCVPct = 15

// Flat reports whether the level's window was flat enough to be a ceiling.
func (l Level) Flat() bool { return l.CVPct <= FlatCVPct }

// Plateaus reads the level ceilings off one bandwidth curve (points sorted
// by size). A level without points in its window is left out; a level
// whose plateau is not at least 10 % above the next one (an L3 that adds
// no bandwidth, as on some VMs) is kept with a note saying so.
func Plateaus(curve []Point, c Caches) []Level {
	type window struct {
		name     string
		lo, hi   int64
		cacheLen int64 // the cpuid size the knee after this level is checked against
	}
	var ws []window
	if c.L1D > 0 {
		// Below L1D/4 a call is too short for its overhead to vanish.
		ws = append(ws, window{"L1", c.L1D / 4, c.L1D / 2, c.L1D})
	}
	if c.L2 > 0 {
		ws = append(ws, window{"L2", 2 * max(c.L1D, 0), c.L2 / 2, c.L2})
	}
	last := max(c.L2, c.L1D)
	past := int64(2) // DRAM's window starts at past × last
	if c.L3 > 0 {
		// L3 is shared and, on a VM, often only partly this guest's: stop
		// the window at a quarter of it, clear of the fall.
		ws = append(ws, window{"L3", 2 * c.L2, c.L3 / 4, c.L3})
		last = c.L3
		// An L3 still serves part of a stream twice its size: on Zen 4
		// (EPYC family 25 model 17, 32 MiB, one thread) the ymm read
		// loop read 36–37 GB/s at 64 MiB against 29–30 at 128 and 256
		// MiB (the zmm loop 26 at 64), and the window's CV rose to
		// 11–15 %, so that DRAM was sometimes not used as a bound at
		// all. Four times it is clear (each thread's set: with two
		// threads at 64 MiB each it read 64–74 GB/s, at 128 MiB 56; a
		// curve of all threads to 8 × L3 then has one point there).
		// Not farther: at 512 MiB (16 × L3) the same loop read 21–22
		// GB/s against 27–28 at 256, a CV of 11–13 % again.
		past = 4
	}
	// A stream of past × the last cache misses it all the way through
	// (and the window, up to 8 × L3, Options.MaxBytes, holds enough
	// points for a steady median).
	ws = append(ws, window{"DRAM", past * last, math.MaxInt64, 0})

	var levels []Level
	for _, w := range ws {
		var v []float64
		for _, p := range curve {
			if p.Bytes >= w.lo && p.Bytes <= w.hi && p.GBs > 0 {
				v = append(v, p.GBs)
			}
		}
		if len(v) == 0 {
			continue
		}
		lv := Level{Name: w.name, Lo: w.lo, Hi: min(w.hi, curve[len(curve)-1].Bytes), Points: len(v), GBs: stats.Median(v), CVPct: cvPct(v)}
		if !lv.Flat() {
			lv.Note = fmt.Sprintf("window not flat (CV %.0f%%)", lv.CVPct)
		}
		levels = append(levels, lv)
	}
	// Knees and distinctness, level by level.
	for i := 0; i+1 < len(levels); i++ {
		a, b := &levels[i], levels[i+1]
		if a.GBs < 1.1*b.GBs {
			a.Note = joinNote(a.Note, fmt.Sprintf("not distinct from %s (%.0f vs %.0f GB/s): this level adds no bandwidth here", b.Name, a.GBs, b.GBs))
			continue
		}
		mid := (a.GBs + b.GBs) / 2
		for _, p := range curve {
			if p.Bytes > a.Hi && p.GBs < mid {
				a.Knee = p.Bytes
				break
			}
		}
		size := cacheSize(a.Name, c)
		a.KneeOK = a.Knee > 0 && size > 0 && a.Knee >= size/2 && a.Knee <= 4*size
		if a.Knee > 0 && !a.KneeOK {
			a.Note = joinNote(a.Note, fmt.Sprintf("knee at %s, cpuid says %s", machine.Bytes(a.Knee), machine.Bytes(size)))
		}
	}
	return levels
}

// unreportedL3Span is how far the read curve runs (all threads together)
// when cpuid reports no L3: twice the largest L3 a core reads from today
// (96 MiB of a Zen 4 X3D die; Intel shares more across a whole package,
// whose part a core streams at L3 speed the curve still shows), and enough
// octaves past it for a flat DRAM window.
const unreportedL3Span = 512 << 20

// L3FromCurve reads the L3's size off a 1-thread read curve (points sorted
// by size) when cpuid reports none: some hypervisors hide it. Past twice
// the L2 the curve holds the L3's plateau, then falls to DRAM's. The L3 is
// where the curve crosses halfway between the plateau (the median of the
// first three points past 2 × L2) and DRAM (the median of the last two):
// at the first two points in a row below halfway, interpolated (in log
// size) from the point before them, rounded down to a MiB. On the Zen 5
// guest (32 MiB, shared with other guests, so the curve falls gradually
// from 16 MiB to 90) it read 31–48 MiB over seven runs, quick and full. 0 when
// there is no L2 to start from, too few points, or no fall of at least
// 25 %: no L3 distinct from DRAM.
func L3FromCurve(curve []Point, c Caches) int64 {
	if c.L2 <= 0 {
		return 0
	}
	var past []Point
	for _, p := range curve {
		if p.Bytes >= 2*c.L2 && p.GBs > 0 {
			past = append(past, p)
		}
	}
	if len(past) < 6 {
		return 0
	}
	var near, far []float64
	for _, p := range past[:3] {
		near = append(near, p.GBs)
	}
	for _, p := range past[len(past)-2:] {
		far = append(far, p.GBs)
	}
	plateau, dram := stats.Median(near), stats.Median(far)
	if plateau < 1.25*dram {
		return 0
	}
	mid := (plateau + dram) / 2
	for i := 1; i+1 < len(past); i++ {
		if past[i].GBs >= mid || past[i+1].GBs >= mid {
			continue
		}
		a, b := past[i-1], past[i]
		f := 0.0 // a at or below halfway (noise): the fall starts at a
		if a.GBs > mid {
			f = (a.GBs - mid) / (a.GBs - b.GBs)
		}
		size := float64(a.Bytes) * math.Pow(float64(b.Bytes)/float64(a.Bytes), f)
		return max(int64(size)>>20<<20, a.Bytes)
	}
	return 0
}

func cacheSize(name string, c Caches) int64 {
	switch name {
	case "L1":
		return c.L1D
	case "L2":
		return c.L2
	case "L3":
		return c.L3
	}
	return 0
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func cvPct(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	var sum, ss float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(len(v))
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return 100 * math.Sqrt(ss/float64(len(v)-1)) / mean
}

// ScalingNotes says where a level on N threads scales well below N times
// its 1-thread rate. L1 is private to a core: if two threads on two CPUs
// read it at much less than twice the rate of one, the CPUs share a
// physical core (SMT siblings, or vCPUs the hypervisor placed on sibling
// threads), and the N-thread ceilings depend on that placement, which can
// change from one run to the next.
func (r *Roofline) ScalingNotes() []string {
	var notes []string
	one := map[string]float64{}
	for _, lv := range r.Levels {
		if lv.Threads == 1 {
			one[lv.Name] = lv.GBs
		}
	}
	for _, lv := range r.Levels {
		if lv.Name != "L1" || lv.Threads <= 1 || one["L1"] <= 0 {
			continue
		}
		if x := lv.GBs / one["L1"]; x < 0.75*float64(lv.Threads) {
			notes = append(notes, fmt.Sprintf("L1 on %d threads reads %.2f× the rate of 1 thread (expected about %d×): the CPUs seem to share physical cores (SMT siblings, or vCPUs on sibling threads of the host), so %d-thread ceilings depend on that placement and can differ between runs",
				lv.Threads, x, lv.Threads, lv.Threads))
		}
	}
	return notes
}
