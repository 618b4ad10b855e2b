// Package report turns what ckbench measured (a roofline.json, the records
// of a sweep) into the charts and files a reader is given. It is where the
// measuring packages (roofline, results) meet the drawing one (plots),
// which knows neither.
package report

import (
	"fmt"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/plots"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// RooflineChart builds the roofline chart of a measured machine: one roof
// per FP32 FMA ceiling (tier × threads; avx512vnni repeats avx512 and is
// left out), one diagonal per bandwidth level (× threads), and a mark per
// timed record (colored by kernel, shaped by tier).
func RooflineChart(r *roofline.Roofline, recs []results.Record) plots.Roofline {
	c := plots.Roofline{Title: fmt.Sprintf("Roofline: %s", r.Machine.CPU.Brand), Marks: plots.MarksFrom(recs)}
	for _, cp := range r.Compute {
		if cp.Kind != "fp32-fma" || cp.Tier == isa.AVX512VNNI || cp.Value <= 0 {
			continue
		}
		c.Roofs = append(c.Roofs, plots.Roof{Label: fmt.Sprintf("%s ×%d", cp.Tier, cp.Threads), GFlops: cp.Value})
	}
	for _, lv := range r.Levels {
		if lv.GBs > 0 {
			c.Slopes = append(c.Slopes, plots.Slope{Label: fmt.Sprintf("%s ×%d", lv.Name, lv.Threads), GBs: lv.GBs})
		}
	}
	return c
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
	for _, m := range []struct {
		name string
		size int
	}{{"L1d", r.Machine.Cache.L1D}, {"L2", r.Machine.Cache.L2}, {"L3", r.Machine.Cache.L3}} {
		if m.size > 0 {
			b.Markers = append(b.Markers, plots.Marker{Label: m.name, Bytes: float64(m.size)})
		}
	}
	return b
}
