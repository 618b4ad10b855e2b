package sweeps

import (
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// BoundBy returns an Options.Annotate that puts every record on the
// roofline r: its level (the working set is the shape's data, the same for
// its read ceiling and its kernels; the point's compulsory bytes where
// none is given; DRAM when cold), bound_gflops and pct_of_bound.
func BoundBy(r *roofline.Roofline, cold bool) func(*results.Record, int64) {
	return func(rec *results.Record, ws int64) {
		if !rec.Bytes.Valid() || !rec.AI.Valid() {
			return
		}
		if ws <= 0 {
			ws = int64(rec.Bytes)
		}
		b := r.BoundOf(computeRoof(rec), isa.Tier(rec.ISA), max(rec.Th, 1), float64(rec.AI), ws, cold)
		rec.Level = b.Level
		if b.GBs <= 0 {
			return
		}
		switch {
		case rec.Flops.Valid() && rec.Flops == 0:
			// A pure data mover (kv-read, w-read): no compute bound, its
			// bound is the level's bandwidth (pct_of_bound of that).
			if rec.GBs.Valid() {
				rec.PctOfBound = 100 * rec.GBs / results.Float(b.GBs)
			}
		case b.GFlops > 0:
			rec.BoundGFlops = results.Float(b.GFlops)
			if rec.GFlops.Valid() {
				rec.PctOfBound = 100 * rec.GFlops / results.Float(b.GFlops)
			}
		}
	}
}

// computeRoof is the compute ceiling a record is held to: the int8 dot
// peak for the integer GEMV (its AI counts int8 ops), FP32 FMA otherwise.
func computeRoof(rec *results.Record) string {
	if rec.IntOps.Valid() && rec.IntOps > 0 {
		return "int8-dot"
	}
	return "fp32-fma"
}
