package report

import (
	"math"
	"slices"
	"testing"

	"github.com/ckbench/ckbench/results"
)

// TestBarsCompareSameShapes: with a shape key, a group's bars are each
// series' best over the shapes every series of the group was measured at,
// a group whose series share none has no bars, and a series the group
// lacks leaves the others alone; without one, each bar is the best
// anywhere.
func TestBarsCompareSameShapes(t *testing.T) {
	rec := func(kernel, isa, kv string, ctx, h int, gbs float64) results.Record {
		r := results.NewRecord()
		r.Kernel, r.ISA, r.KV, r.HD, r.TK, r.Ctx, r.H, r.KVH, r.Exp, r.Th = kernel, isa, kv, 128, "auto", ctx, h, 8, "fast", 1
		r.Status, r.GBs = results.StatusOK, results.Float(gbs)
		return r
	}
	rs := []results.Record{
		// flash avx2: f32 and f16 share ctx 1024 with 8 heads only.
		rec("decode-flash", "avx2", "f32", 1024, 8, 60), rec("decode-flash", "avx2", "f32", 4096, 32, 20),
		rec("decode-flash", "avx2", "f16", 1024, 8, 40), rec("decode-flash", "avx2", "f16", 4096, 8, 90),
		// naive avx2: f32 at one shape, f16 at another.
		rec("decode-naive", "avx2", "f32", 4096, 32, 5), rec("decode-naive", "avx2", "f16", 4096, 8, 43),
		// flash generic: f32 alone.
		rec("decode-flash", "generic", "f32", 1024, 8, 4),
	}
	keep := func(r results.Record) bool { return true }
	group := func(r results.Record) string { return r.Kernel + " " + r.ISA }
	series := func(r results.Record) string { return r.KV }
	gbs := func(r results.Record) float64 { return float64(r.GBs) }
	check := func(shape func(results.Record) string, want map[string][2]float64) {
		t.Helper()
		c, ok := barChart(rs, "t", keep, group, series, shape, gbs, "GB/s")
		if !ok || len(c.Series) != 2 || c.Series[0].Label != "f32" || c.Series[1].Label != "f16" {
			t.Fatalf("chart %v %+v", ok, c)
		}
		for i, g := range c.Groups {
			w, ok := want[g]
			if !ok {
				t.Fatalf("unexpected group %q", g)
			}
			for s := range 2 {
				got := c.Series[s].Values[i]
				if !(got == w[s] || math.IsNaN(got) && math.IsNaN(w[s])) {
					t.Errorf("%s %s: %v, want %v", g, c.Series[s].Label, got, w[s])
				}
			}
		}
	}
	nan := math.NaN()
	check(decodeShape, map[string][2]float64{
		"decode-flash avx2":    {60, 40},
		"decode-naive avx2":    {nan, nan},
		"decode-flash generic": {4, nan},
	})
	check(nil, map[string][2]float64{
		"decode-flash avx2":    {60, 90},
		"decode-naive avx2":    {5, 43},
		"decode-flash generic": {4, nan},
	})
}

// TestQuantBarsLeaveQuantizersOut: the activation quantizer, filed under
// its format (q8_0) with no M, does not empty that format's GEMV bars.
func TestQuantBarsLeaveQuantizersOut(t *testing.T) {
	rec := func(kernel string, m int, gbs float64) results.Record {
		r := results.NewRecord()
		r.Family, r.Kernel, r.ISA, r.Fmt, r.M, r.K, r.Th = "quant", kernel, "avx2", "q8_0", m, 4096, 1
		r.Status, r.GBs = results.StatusOK, results.Float(gbs)
		return r
	}
	rs := []results.Record{rec("gemv-f32", 4096, 11), rec("gemv-q8", 4096, 24), rec("quantize-q8", 0, 35)}
	c, ok := barChart(rs, "t", weightsAt1, func(r results.Record) string { return r.Fmt },
		func(r results.Record) string { return r.Kernel + " " + r.ISA }, gemvShape,
		func(r results.Record) float64 { return float64(r.GBs) }, "GB/s")
	if !ok || len(c.Series) != 2 || c.Series[0].Values[0] != 11 || c.Series[1].Values[0] != 24 {
		t.Fatalf("chart %v %+v", ok, c)
	}
}

// TestCtxPanelsPerHeads: the rate against context has a panel per head dim
// and head pair, so a line never takes one head pair's point at one
// context and another's at the next.
func TestCtxPanelsPerHeads(t *testing.T) {
	rec := func(ctx, h int, gbs float64) results.Record {
		r := results.NewRecord()
		r.Family, r.Kernel, r.ISA, r.KV, r.HD, r.TK, r.Ctx, r.H, r.KVH, r.Exp, r.Th = "attention", "decode-flash", "avx2", "f32", 128, "auto", ctx, h, 8, "fast", 1
		r.Status, r.GBs = results.StatusOK, results.Float(gbs)
		return r
	}
	// 8:8 is ok at 1024 only, 32:8 at 1024 and 4096.
	charts := ctxCharts("attention", []results.Record{rec(1024, 8, 60), rec(1024, 32, 10), rec(4096, 32, 7)})
	if len(charts) != 1 || len(charts[0].Panels) != 2 {
		t.Fatalf("charts %+v", charts)
	}
	for i, want := range []struct {
		title string
		x, y  []float64
	}{{"head dim 128, 8:8 heads", []float64{1024}, []float64{60}}, {"head dim 128, 32:8 heads", []float64{1024, 4096}, []float64{10, 7}}} {
		pn := charts[0].Panels[i]
		if pn.Title != want.title || len(pn.Lines) != 1 || !slices.Equal(pn.Lines[0].X, want.x) || !slices.Equal(pn.Lines[0].Y, want.y) {
			t.Errorf("panel %d: %q %+v, want %q x %v y %v", i, pn.Title, pn.Lines, want.title, want.x, want.y)
		}
	}
	if got := panelTitle(128, 0, 8); got != "head dim 128, 8 KV heads" {
		t.Errorf("kvcache panel %q", got)
	}
}
