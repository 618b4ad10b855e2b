package sweeps

import (
	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// BoundBy returns an Options.Annotate that puts every record on the
// roofline r: its level (the working set is the shape's data, the same for
// its read ceiling and its kernels; the point's compulsory bytes where
// none is given; DRAM when cold), bound_gflops and pct_of_bound.
//
// The level's bandwidth is the roofline's, or the paired read loop's rate
// during the point (read_gbs: the same bytes, level and moment) where that
// is higher. The roofline's is one moment at the start of the run, and a
// shared host's DRAM bandwidth drifts by a fifth from minute to minute
// (Zen 4 VM: 22 GB/s in the roofline, 26–28 in the read loops a minute
// later): a bound below what a plain read of the same bytes reached is no
// bound, and flagged points above_bound that were not. Where the
// roofline's level is unusable (its window was not flat), the paired
// read's rate is the level's bandwidth alone; without one, no bound.
//
// The compute ceiling is the roofline's at the core clock the point ran
// at (clock_ghz, timed beside its samples; roofline.Bound.AtClock): the
// roofline's FLOPs per cycle times that clock. The same host runs its
// FMAs at one clock in the roofline's minute and at another in a sweep's
// (a Zen 5 guest's sweeps from DRAM ran at 2.7–3.3 GHz, its roofline's
// FMAs at 3.37), and a ceiling at a clock the point did not have is one
// it could not reach, or one it could pass. Without a clock (n threads,
// a build without the probe) or a roofline without FLOPs per cycle
// (PeakClockGHz), the roofline's ceiling as it is.
func BoundBy(r *roofline.Roofline, cold bool) func(*results.Record, int64) {
	return func(rec *results.Record, ws int64) {
		if !rec.Bytes.Valid() || !rec.AI.Valid() {
			return
		}
		if ws <= 0 {
			ws = int64(rec.Bytes)
		}
		b := r.BoundOf(ComputeRoof(rec), isa.Tier(rec.ISA), max(rec.Th, 1), float64(rec.AI), ws, cold)
		rec.Level = b.Level
		b = b.AtLeast(float64(rec.ReadGBs), float64(rec.AI))
		b = AtPointClock(r, rec, b)
		if b.GBs <= 0 {
			return // a level without a usable ceiling and no paired read
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

// AtPointClock is b, a bound of rec on r, with its compute ceiling at the
// clock rec ran at (roofline.Bound.AtClock against r.PeakClockGHz), as
// BoundBy takes it; b where rec or r has no clock.
func AtPointClock(r *roofline.Roofline, rec *results.Record, b roofline.Bound) roofline.Bound {
	return b.AtClock(float64(rec.ClockGHz), r.PeakClockGHz(isa.Tier(rec.ISA), max(rec.Th, 1)), float64(rec.AI))
}

// ComputeRoof is the compute ceiling (a roofline kind) a record is held
// to: the int8 dot
// peak for the integer GEMV (its AI counts int8 ops); the widened FMA peak
// (f16-fma; for q8_0, roofline.Q8Attn: Q·K int8 dots, P·V widening FMAs)
// for a decode over an f16 or q8_0 KV cache that widens
// every K and V value for the one FMA it feeds (decode-flash and
// decode-naive, one query head at a time, and any decode with a KV head
// per query head: on Zen 4 a 512-bit VCVTPH2PS takes FMA issue slots and
// the f16 roof is half the FP32 one, the q8_0 widening more); FP32 FMA
// otherwise. A grouped kernel (decode-flash-gqa, decode-split with H >
// Hkv) may widen a value once for several heads' FMAs (AVX-512 does, for
// two), so it stays under the FP32 roof, the only bound it cannot pass.
func ComputeRoof(rec *results.Record) string {
	if rec.IntOps.Valid() && rec.IntOps > 0 {
		return "int8-dot"
	}
	widensPerFMA := rec.Family == "attention" &&
		(rec.Kernel == string(attention.DecodeFlash) || rec.Kernel == string(attention.DecodeNaive) || rec.H == rec.KVH)
	switch {
	case widensPerFMA && rec.KV == attention.F16.String():
		return "f16-fma"
	case widensPerFMA && rec.KV == attention.Q8_0.String():
		return roofline.Q8Attn
	}
	return "fp32-fma"
}
