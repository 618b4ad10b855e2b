package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckbench/ckbench/results"
)

// TestScalingChart: one line per kernel×tier through (1, 1) and the median
// speedup at each thread count; none without a multi-thread record; the
// chart saves as PNG and SVG.
func TestScalingChart(t *testing.T) {
	rec := func(kernel string, th int, scaling float64) results.Record {
		r := results.NewRecord()
		r.Kernel, r.ISA, r.Th = kernel, "avx2", th
		if th > 1 {
			r.Scaling = results.Float(scaling)
		}
		return r
	}
	if _, ok := ScalingChart("x", nil, []results.Record{rec("a", 1, 0)}); ok {
		t.Fatal("a chart without a multi-thread record")
	}
	c, ok := ScalingChart("x", nil, []results.Record{rec("a", 1, 0), rec("a", 2, 1.5), rec("a", 2, 1.9), rec("a", 2, 1.7), rec("b", 2, 1.2)})
	if !ok || len(c.Lines) != 2 {
		t.Fatalf("lines %+v", c.Lines)
	}
	if a := c.Lines[0]; a.Label != "a avx2" || len(a.Threads) != 2 || a.Speedup[0] != 1 || a.Speedup[1] != 1.7 {
		t.Fatalf("line a %+v", a)
	}
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "scaling.png"), filepath.Join(dir, "scaling.svg")}
	if err := c.Save(paths...); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
}
