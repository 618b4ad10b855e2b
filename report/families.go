package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ckbench/ckbench/internal/stats"
	"github.com/ckbench/ckbench/plots"
	"github.com/ckbench/ckbench/results"
)

// figure is one chart of the report: its file name (without extension),
// a caption saying what it shows, and how to draw it.
type figure struct {
	Name, Title, Caption string
	save                 func(paths ...string) error
}

// ok is a point with a result: measured, checked, stable and within its
// bound (the others are listed, never drawn as results).
func ok(r results.Record) bool { return r.Status == results.StatusOK }

// computeBound reports whether a kernel's natural rate is FLOP/s (prefill
// is compute-bound; everything else here streams memory).
func computeBound(kernel string) bool { return strings.HasPrefix(kernel, "prefill-") }

// rate is the rate a record is drawn at, and its unit.
func rate(r results.Record) (float64, string) {
	if computeBound(r.Kernel) && r.GFlops.Valid() {
		return float64(r.GFlops), "GFLOP/s"
	}
	return float64(r.GBs), "GB/s"
}

// lineLabel names a kernel×tier line, with the KV type and thread count
// when the data has several.
func lineLabel(r results.Record, kvs, ths bool) string {
	s := r.Kernel + " " + r.ISA
	if kvs && r.KV != "" {
		s += " " + r.KV
	}
	if ths {
		s += fmt.Sprintf(" ×%d", r.Th)
	}
	return s
}

// familyFigures makes the per-family charts from the ok records (only).
func familyFigures(okRecs []results.Record) []figure {
	fams, byFam := byFamily(okRecs)
	slices.Sort(fams)
	var figs []figure
	for _, fam := range fams {
		rs := byFam[fam]
		figs = append(figs, rateVsCtx(fam, rs)...)
		switch fam {
		case "attention":
			figs = append(figs, tileHeatmap(rs)...)
			figs = append(figs, kvBars(rs)...)
			figs = append(figs, prefillBars(rs)...)
		case "quant":
			figs = append(figs, quantBars(rs)...)
		}
	}
	return figs
}

// rateVsCtx: per head dim and head pair, the rate of each kernel×tier
// against the context (the best point over the other parameters: tiles,
// windows, splits, layouts). Heads make panels, not a parameter a point is
// the best over: the best over 1:1 and 32:8 took one at a context and the
// other at the next wherever a shape's point was not ok (unstable), and
// drew a drop that no kernel has. Families without a context axis (quant)
// have none.
func rateVsCtx(fam string, rs []results.Record) []figure {
	var figs []figure
	for _, c := range ctxCharts(fam, rs) {
		unit := c.Panels[0].YLabel
		name := "gbs"
		if unit == "GFLOP/s" {
			name = "gflops"
		}
		figs = append(figs, figure{
			Name:    fmt.Sprintf("%s-%s", fam, name),
			Title:   c.Title,
			Caption: fmt.Sprintf("A panel per head dim and head pair (H:Hkv); each line a kernel×tier; each point the best %s over the points' other parameters (tile, window, splits, layout, mask) at that context (points.csv has them all). Only ok points: a context where a line's shapes were all unstable has no point.", unit),
			save:    c.Save,
		})
	}
	return figs
}

// ctxCharts is rateVsCtx's charts: one per unit, a panel per head dim and
// head pair.
func ctxCharts(fam string, rs []results.Record) []plots.Panels {
	kvs, ths := distinct(rs, func(r results.Record) string { return r.KV }) > 1, distinct(rs, func(r results.Record) string { return strconv.Itoa(r.Th) }) > 1
	type key struct {
		hd, h, kvh int
		unit       string
		label      string
	}
	best := map[key]map[int]float64{}
	for _, r := range rs {
		if r.Ctx <= 0 || r.HD <= 0 {
			continue
		}
		v, unit := rate(r)
		if !(v > 0) {
			continue
		}
		k := key{r.HD, r.H, r.KVH, unit, lineLabel(r, kvs, ths)}
		if best[k] == nil {
			best[k] = map[int]float64{}
		}
		best[k][r.Ctx] = math.Max(best[k][r.Ctx], v)
	}
	type panel struct {
		hd, h, kvh int
		unit       string
	}
	panels := map[panel][]key{}
	for k := range best {
		p := panel{k.hd, k.h, k.kvh, k.unit}
		panels[p] = append(panels[p], k)
	}
	var ps []panel
	for p := range panels {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].unit != ps[j].unit {
			return ps[i].unit < ps[j].unit
		}
		if ps[i].hd != ps[j].hd {
			return ps[i].hd < ps[j].hd
		}
		if ps[i].h != ps[j].h {
			return ps[i].h < ps[j].h
		}
		return ps[i].kvh < ps[j].kvh
	})
	// One chart per unit, a panel per head dim and head pair.
	var charts []plots.Panels
	for len(ps) > 0 {
		unit := ps[0].unit
		c := plots.Panels{Title: fmt.Sprintf("%s: %s against context, a panel per head dim and heads", fam, unit)}
		for len(ps) > 0 && ps[0].unit == unit {
			p := ps[0]
			ps = ps[1:]
			ks := panels[p]
			sort.Slice(ks, func(i, j int) bool { return ks[i].label < ks[j].label })
			pn := plots.Lines{Title: panelTitle(p.hd, p.h, p.kvh), XLabel: "context (keys)", YLabel: unit, LogX: true}
			for _, k := range ks {
				ln := plots.Line{Label: k.label}
				for _, ctx := range slices.Sorted(maps.Keys(best[k])) {
					ln.X, ln.Y = append(ln.X, float64(ctx)), append(ln.Y, best[k][ctx])
				}
				pn.Lines = append(pn.Lines, ln)
			}
			c.Panels = append(c.Panels, pn)
		}
		charts = append(charts, c)
	}
	return charts
}

// panelTitle names a rate-against-context panel: its head dim and heads
// (H:Hkv; the KV heads alone where a family has no query heads).
func panelTitle(hd, h, kvh int) string {
	switch {
	case h > 0:
		return fmt.Sprintf("head dim %d, %d:%d heads", hd, h, kvh)
	case kvh > 0:
		return fmt.Sprintf("head dim %d, %d KV heads", hd, kvh)
	}
	return fmt.Sprintf("head dim %d", hd)
}

func distinct(rs []results.Record, key func(results.Record) string) int {
	seen := map[string]bool{}
	for _, r := range rs {
		seen[key(r)] = true
	}
	return len(seen)
}

// tileHeatmap: decode-flash's pct_of_bound per tile_k × head dim (median
// over contexts and the rest), one map per tier.
func tileHeatmap(rs []results.Record) []figure {
	type key struct {
		tier   string
		tk, hd int
	}
	vals := map[key][]float64{}
	for _, r := range rs {
		if r.Kernel == "decode-flash" && r.Th == 1 && r.TKEff > 0 && r.PctOfBound.Valid() {
			k := key{r.ISA, r.TKEff, r.HD}
			vals[k] = append(vals[k], float64(r.PctOfBound))
		}
	}
	tiers := map[string]bool{}
	tks, hds := map[int]bool{}, map[int]bool{}
	for k := range vals {
		tiers[k.tier], tks[k.tk], hds[k.hd] = true, true, true
	}
	if len(tks) < 2 && len(hds) < 2 {
		return nil
	}
	var figs []figure
	for _, tier := range slices.Sorted(maps.Keys(tiers)) {
		c := plots.Heatmap{Title: "decode-flash " + tier + ": % of bound by tile_k and head dim", XLabel: "tile_k (keys per tile)", YLabel: "head dim", Format: "%.0f%%"}
		tkl, hdl := slices.Sorted(maps.Keys(tks)), slices.Sorted(maps.Keys(hds))
		for _, tk := range tkl {
			c.X = append(c.X, strconv.Itoa(tk))
		}
		for _, hd := range hdl {
			c.Y = append(c.Y, strconv.Itoa(hd))
			row := make([]float64, len(tkl))
			for i, tk := range tkl {
				row[i] = math.NaN()
				if v := vals[key{tier, tk, hd}]; len(v) > 0 {
					row[i] = stats.Median(v)
				}
			}
			c.Z = append(c.Z, row)
		}
		figs = append(figs, figure{Name: "attention-tiles-" + tier, Title: c.Title,
			Caption: "Median pct_of_bound over contexts, head pairs and KV types of decode-flash at 1 thread, per tile_k (the tile actually used) and head dim.", save: c.Save})
	}
	return figs
}

// kvBars: the decode kernels' GB/s per kernel×tier, a bar per KV type,
// each type's best over the shapes that every type of its kernel×tier was
// measured ok at (decodeShape).
func kvBars(rs []results.Record) []figure {
	return bars(rs, "attention-kv", "decode kernels by KV type (GB/s of each type's own bytes)",
		"Best GB/s per kernel×tier and KV type at 1 thread, over the shapes (context, heads, head dim, tile, window, layout, ...) that every KV type of that kernel×tier has an ok point at, so that the bars of a kernel×tier compare the same work; a kernel×tier whose types share no such shape has no bars. The bytes are each type's (f16 halves them, q8_0 is 34/32 bytes per 32 values).",
		func(r results.Record) bool { return strings.HasPrefix(r.Kernel, "decode-") && r.Th == 1 && r.KV != "" },
		func(r results.Record) string { return r.Kernel + " " + r.ISA },
		func(r results.Record) string { return r.KV },
		decodeShape,
		func(r results.Record) float64 { return float64(r.GBs) }, "GB/s")
}

// decodeShape is a decode point's key without its kernel, tier and KV type.
func decodeShape(r results.Record) string {
	return fmt.Sprint(r.HD, r.TK, r.Ctx, r.H, r.KVH, r.Layout, r.Window, r.Splits, r.Exp, r.Th, r.Cold)
}

// weightsAt1 keeps the quant records that read weights (the GEMVs and
// w-read: M rows of a format) at one thread.
func weightsAt1(r results.Record) bool { return r.Th == 1 && r.Fmt != "" && r.M > 0 }

// gemvShape is a quant point's shape: M×K (cold or not).
func gemvShape(r results.Record) string { return fmt.Sprint(r.M, r.K, r.Cold) }

// prefillBars: materialized against flash prefill, GFLOP/s of the work
// each does, per shape (flash at its best tiles), the heads and exp
// matched across the kernels as kvBars matches its shapes.
func prefillBars(rs []results.Record) []figure {
	return bars(rs, "attention-prefill", "prefill: materialized against flash (GFLOP/s)",
		"Best GFLOP/s (the FLOPs each kernel does: masked work is not counted) per prefill shape (query rows × keys, mask) and kernel×tier at 1 thread, flash at its best Br×Bc, over the heads and exp variants that every kernel×tier of the shape has an ok point at.",
		func(r results.Record) bool { return computeBound(r.Kernel) && r.Th == 1 },
		func(r results.Record) string { return fmt.Sprintf("%dx%d %s hd%d", r.Tq, r.Ctx, r.Mask, r.HD) },
		func(r results.Record) string { return r.Kernel + " " + r.ISA },
		func(r results.Record) string { return fmt.Sprint(r.H, r.KVH, r.Exp, r.Cold) },
		func(r results.Record) float64 { return float64(r.GFlops) }, "GFLOP/s")
}

// quantBars: GEMV GB/s per weight format, a bar per kernel×tier (the
// GEMVs and w-read: the records with weights, M rows), each the best over
// the shapes (M×K) that every kernel×tier of the format was measured ok
// at.
func quantBars(rs []results.Record) []figure {
	return bars(rs, "quant-formats", "quantized GEMV by format and tier (GB/s of weights)",
		"Best GB/s per weight format and kernel×tier at 1 thread, over the shapes (M×K) that every kernel×tier of that format has an ok point at (its best rows per pass and activations there); a format whose kernels share no such shape has no bars. The activation quantizers (quantize-q8) read no weights and are not drawn here.",
		weightsAt1,
		func(r results.Record) string { return r.Fmt },
		func(r results.Record) string { return r.Kernel + " " + r.ISA },
		gemvShape,
		func(r results.Record) float64 { return float64(r.GBs) }, "GB/s")
}

// bars makes a grouped bar chart (barChart) as a figure.
func bars(rs []results.Record, name, title, caption string, keep func(results.Record) bool,
	group, series, shape func(results.Record) string, val func(results.Record) float64, unit string) []figure {
	c, ok := barChart(rs, title, keep, group, series, shape, val, unit)
	if !ok {
		return nil
	}
	return []figure{{Name: name, Title: title, Caption: caption, save: c.Save}}
}

// barChart is a grouped bar chart of the best value per group and series
// of the kept records. With shape (nil: none), a group's series are
// compared at the same work: each series' best is taken only over the
// shapes at which every series of its group has a record (a bar of one
// series at a long context beside another's at a short one would compare
// different work), and a group whose series share no shape has no bars
// (NaN: drawn empty). It reports false when there is nothing to compare.
func barChart(rs []results.Record, title string, keep func(results.Record) bool,
	group, series, shape func(results.Record) string, val func(results.Record) float64, unit string) (plots.Bars, bool) {
	type point struct {
		g, s, shape string
		v           float64
	}
	var groups, ss []string
	var kept []point
	shapes := map[[2]string]map[string]bool{} // group, series → its shapes
	for _, r := range rs {
		v := val(r)
		if !keep(r) || !(v > 0) {
			continue
		}
		p := point{g: group(r), s: series(r), v: v}
		if !slices.Contains(groups, p.g) {
			groups = append(groups, p.g)
		}
		if !slices.Contains(ss, p.s) {
			ss = append(ss, p.s)
		}
		if shape != nil {
			p.shape = shape(r)
			k := [2]string{p.g, p.s}
			if shapes[k] == nil {
				shapes[k] = map[string]bool{}
			}
			shapes[k][p.shape] = true
		}
		kept = append(kept, p)
	}
	if len(groups) == 0 || len(ss) < 2 && len(groups) < 2 {
		return plots.Bars{}, false
	}
	// common reports whether every series of group g has a record of
	// shape sh.
	common := func(g, sh string) bool {
		for _, s := range ss {
			if set, ok := shapes[[2]string{g, s}]; ok && !set[sh] {
				return false
			}
		}
		return true
	}
	best := map[[2]string]float64{}
	for _, p := range kept {
		if shape != nil && !common(p.g, p.shape) {
			continue
		}
		k := [2]string{p.g, p.s}
		best[k] = math.Max(best[k], p.v)
	}
	c := plots.Bars{Title: title, YLabel: unit, Groups: groups}
	for _, s := range ss {
		b := plots.BarSeries{Label: s}
		for _, g := range groups {
			v, ok := best[[2]string{g, s}]
			if !ok {
				v = math.NaN()
			}
			b.Values = append(b.Values, v)
		}
		c.Series = append(c.Series, b)
	}
	return c, true
}
