// Package report turns what ckbench measured (a roofline.json, the records
// of a sweep) into the charts and files a reader is given. It is where the
// measuring packages (roofline, results) meet the drawing one (plots),
// which knows neither.
package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ckbench/ckbench/internal/stats"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/plots"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// RooflineChart builds the roofline chart of a measured machine: one roof
// per FP32 FMA ceiling (tier × threads; avx512vnni repeats avx512 and is
// left out), the int8 dot roof of the widest int8 tier, one diagonal per
// bandwidth level (× threads), and a mark per timed record (colored by
// kernel, shaped by tier, its level beside it). With records, only the
// ceilings of the thread counts they ran at are drawn.
func RooflineChart(r *roofline.Roofline, recs []results.Record) plots.Roofline {
	c := plots.Roofline{Title: fmt.Sprintf("Roofline: %s", r.Machine.CPU.Brand), Marks: plots.MarksFrom(recs)}
	ths := map[int]bool{}
	for _, rec := range recs {
		if rec.Th > 0 && (rec.Status == results.StatusOK || rec.Status == results.StatusUnstable || rec.Status == results.StatusAboveBound) {
			ths[rec.Th] = true
		}
	}
	keep := func(th int) bool { return len(ths) == 0 || ths[th] }
	int8 := map[int]roofline.Compute{} // the fastest int8 tier per thread count
	for _, cp := range r.Compute {
		if cp.Value <= 0 || !keep(cp.Threads) {
			continue
		}
		switch {
		case cp.Kind == "fp32-fma" && cp.Tier != isa.AVX512VNNI:
			c.Roofs = append(c.Roofs, plots.Roof{Label: fmt.Sprintf("%s ×%d", cp.Tier, cp.Threads), GFlops: cp.Value})
		case cp.Kind == "int8-dot" && cp.Value > int8[cp.Threads].Value:
			int8[cp.Threads] = cp
		case (cp.Kind == "f16-fma" || cp.Kind == "q8-fma") && cp.Tier != isa.AVX512VNNI && cp.Value < 0.9*fp32Roof(r, cp):
			// Drawn only where widening costs FMA slots (Zen 4's 512-bit
			// VCVTPH2PS): elsewhere it would sit on the FP32 roof.
			c.Roofs = append(c.Roofs, plots.Roof{Label: fmt.Sprintf("%s KV %s ×%d", strings.TrimSuffix(cp.Kind, "-fma"), cp.Tier, cp.Threads), GFlops: cp.Value})
		case cp.Kind == roofline.Q8DecodeKind && cp.Tier != isa.AVX512VNNI:
			// The roof of a decode over a q8_0 cache (its % of bound).
			c.Roofs = append(c.Roofs, plots.Roof{Label: fmt.Sprintf("q8_0 decode %s ×%d", cp.Tier, cp.Threads), GFlops: cp.Value})
		}
	}
	for _, th := range slices.Sorted(maps.Keys(int8)) {
		cp := int8[th]
		c.Roofs = append(c.Roofs, plots.Roof{Label: fmt.Sprintf("int8 %s ×%d", cp.Tier, th), GFlops: cp.Value, Int8: true})
	}
	for _, lv := range r.Levels {
		if lv.GBs > 0 && keep(lv.Threads) {
			c.Slopes = append(c.Slopes, plots.Slope{Label: fmt.Sprintf("%s ×%d", lv.Name, lv.Threads), GBs: lv.GBs})
		}
	}
	return c
}

// fp32Roof is the FP32 FMA ceiling of cp's tier and thread count (0 when
// the roofline has none).
func fp32Roof(r *roofline.Roofline, cp roofline.Compute) float64 {
	for _, c := range r.Compute {
		if c.Kind == "fp32-fma" && c.Tier == cp.Tier && c.Threads == cp.Threads {
			return c.Value
		}
	}
	return 0
}

// BandwidthChart builds the bandwidth chart of a measured machine, with
// the cpuid cache sizes marked.
func BandwidthChart(r *roofline.Roofline) plots.Bandwidth {
	b := plots.Bandwidth{Title: fmt.Sprintf("Bandwidth: %s", r.Machine.CPU.Brand)}
	for _, cv := range r.Bandwidth {
		c := plots.Curve{Label: fmt.Sprintf("%s %s ×%d", cv.Kernel, cv.Tier, cv.Threads)}
		for _, p := range cv.Points {
			c.Bytes = append(c.Bytes, float64(p.Bytes))
			c.GBs = append(c.GBs, p.GBs)
		}
		b.Curves = append(b.Curves, c)
	}
	c := r.Caches()
	for _, m := range []struct {
		name string
		size int64
	}{{"L1d", c.L1D}, {"L2", c.L2}, {"L3", c.L3}} {
		if m.size > 0 {
			b.Markers = append(b.Markers, plots.Marker{Label: m.name, Bytes: float64(m.size)})
		}
	}
	return b
}

// ScalingChart builds the thread-scaling chart of a sweep: per kernel×tier,
// the median speedup (scaling) of its points at each thread count (1 at 1
// thread), and, from the roofline when there is one, the speedup of each
// bandwidth level's roof: what a kernel bound by that level can reach. ok
// is false when no record was measured at more than one thread.
func ScalingChart(title string, r *roofline.Roofline, recs []results.Record) (c plots.Scaling, ok bool) {
	c.Title = title
	type key struct{ kernel, tier string }
	by := map[key]map[int][]float64{}
	var keys []key
	for _, rec := range recs {
		if rec.Th <= 1 || !rec.Scaling.Valid() {
			continue
		}
		k := key{rec.Kernel, rec.ISA}
		if by[k] == nil {
			by[k] = map[int][]float64{}
			keys = append(keys, k)
		}
		by[k][rec.Th] = append(by[k][rec.Th], float64(rec.Scaling))
	}
	if len(keys) == 0 {
		return c, false
	}
	for _, k := range keys {
		ln := plots.ScalingLine{Label: k.kernel + " " + k.tier, Threads: []float64{1}, Speedup: []float64{1}}
		ths := slices.Sorted(maps.Keys(by[k]))
		for _, th := range ths {
			ln.Threads = append(ln.Threads, float64(th))
			ln.Speedup = append(ln.Speedup, stats.Median(by[k][th]))
		}
		c.Lines = append(c.Lines, ln)
	}
	if r != nil {
		one := map[string]float64{}
		for _, lv := range r.Levels {
			if lv.Threads == 1 && lv.GBs > 0 {
				one[lv.Name] = lv.GBs
			}
		}
		for _, name := range []string{"L3", "DRAM"} {
			ln := plots.ScalingLine{Label: name + " roof", Threads: []float64{1}, Speedup: []float64{1}}
			for _, lv := range r.Levels {
				if lv.Name == name && lv.Threads > 1 && lv.GBs > 0 && one[name] > 0 {
					ln.Threads = append(ln.Threads, float64(lv.Threads))
					ln.Speedup = append(ln.Speedup, lv.GBs/one[name])
				}
			}
			if len(ln.Threads) > 1 {
				c.Ideal = append(c.Ideal, ln)
			}
		}
	}
	return c, true
}
