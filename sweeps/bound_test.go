package sweeps

import (
	"math"
	"testing"

	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// TestComputeRoof: a decode widening each f16 or q8_0 value for one FMA is
// held to the widened FMA roof of its cache type, the integer GEMV to the
// int8 one, the rest (a grouped decode too) to FP32 FMA.
func TestComputeRoof(t *testing.T) {
	for _, c := range []struct {
		rec  results.Record
		want string
	}{
		{results.Record{Family: "attention", KV: "f16", H: 8, KVH: 8}, "f16-fma"},
		{results.Record{Family: "attention", Kernel: "decode-flash-gqa", KV: "f16", H: 32, KVH: 8}, "fp32-fma"},
		{results.Record{Family: "attention", Kernel: "decode-split", KV: "f16", H: 32, KVH: 8}, "fp32-fma"},
		{results.Record{Family: "attention", Kernel: "decode-flash", KV: "f16", H: 32, KVH: 8}, "f16-fma"},
		{results.Record{Family: "attention", Kernel: "decode-naive", KV: "f16", H: 32, KVH: 8}, "f16-fma"},
		{results.Record{Family: "attention", KV: "f32"}, "fp32-fma"},
		{results.Record{Family: "attention", Kernel: "decode-flash", KV: "q8_0", H: 32, KVH: 8}, roofline.Q8Attn},
		{results.Record{Family: "attention", Kernel: "decode-flash-gqa", KV: "q8_0", H: 32, KVH: 8}, "fp32-fma"},
		{results.Record{Family: "kvcache", KV: "f16"}, "fp32-fma"},
		{results.Record{Family: "quant", IntOps: 10}, "int8-dot"},
	} {
		if got := ComputeRoof(&c.rec); got != c.want {
			t.Errorf("%s kv=%s int_ops=%v: %s, want %s", c.rec.Family, c.rec.KV, c.rec.IntOps, got, c.want)
		}
	}
}

// TestBoundByUnusableLevel: where the roofline's DRAM window was not flat,
// a cold point is bound by its paired read alone (AI × read_gbs, under the
// compute roof); a point without a paired read gets a level and no bound.
func TestBoundByUnusableLevel(t *testing.T) {
	r := &roofline.Roofline{Version: 1}
	r.Compute = []roofline.Compute{{Kind: "fp32-fma", Tier: "avx512", Threads: 1, Value: 200}}
	r.Levels = []roofline.Level{{Name: "L3", Threads: 1, GBs: 80}, {Name: "DRAM", Threads: 1, GBs: 40, Unusable: true, CVPct: 20}}
	annotate := BoundBy(r, true)

	rec := results.Record{Family: "attention", Kernel: "decode-flash-gqa", ISA: "avx512", KV: "f32", H: 32, KVH: 8, Th: 1,
		Bytes: 1 << 28, AI: 2, Flops: 1 << 29, GFlops: 45, ReadGBs: 30}
	annotate(&rec, 0)
	if rec.Level != "DRAM" || rec.BoundGFlops != 60 || rec.PctOfBound != 75 {
		t.Errorf("paired read at 30 GB/s, AI 2, 45 GFLOP/s: level %s, bound %v, %v %%; want DRAM, 60, 75 %%", rec.Level, rec.BoundGFlops, rec.PctOfBound)
	}

	alone := results.NewRecord() // every float missing (NaN), read_gbs too
	alone.Family, alone.Kernel, alone.ISA, alone.KV, alone.H, alone.KVH, alone.Th = "attention", "decode-flash-gqa", "avx512", "f32", 32, 8, 1
	alone.Bytes, alone.AI, alone.Flops, alone.GFlops = 1<<28, 2, 1<<29, 45
	annotate(&alone, 0)
	if alone.Level != "DRAM" || alone.BoundGFlops.Valid() || alone.PctOfBound.Valid() {
		t.Errorf("no paired read: level %s, bound %v, %v %%; want DRAM and no bound", alone.Level, alone.BoundGFlops, alone.PctOfBound)
	}
}

// TestBoundByClock: a 1-thread point's compute ceiling is the roofline's
// at the clock the point ran at (clock_ghz), so that a compute-bound
// point's share does not move with the host's clock; a memory-bound
// point keeps its bandwidth bound; a point without a clock, the
// roofline's ceiling.
func TestBoundByClock(t *testing.T) {
	u := roofline.FMAUnits{Pipes: 2, Bits: 512, Lanes: 32}
	r := &roofline.Roofline{Version: 1}
	r.Compute = []roofline.Compute{{Kind: "fp32-fma", Tier: "avx512", Threads: 1, Value: 200, FMA: &u, PctOfPorts: 100}} // 64 FLOP a cycle at 3.125 GHz
	r.Levels = []roofline.Level{{Name: "DRAM", Threads: 1, GBs: 30}}
	annotate := BoundBy(r, true)
	rec := func(ai, gflops, ghz float64) results.Record {
		x := results.NewRecord()
		x.Family, x.Kernel, x.ISA, x.KV, x.H, x.KVH, x.Th = "attention", "decode-flash-gqa", "avx512", "f16", 64, 8, 1
		x.Bytes, x.AI, x.Flops, x.GFlops, x.ClockGHz = 1<<28, results.Float(ai), 1<<31, results.Float(gflops), results.Float(ghz)
		return x
	}
	slow := rec(8, 120, 2.5) // 64 × 2.5 = 160 GFLOP/s at its clock
	annotate(&slow, 0)
	if slow.BoundGFlops != 160 || slow.PctOfBound != 75 {
		t.Errorf("compute-bound at 2.5 GHz: bound %v, %v %%; want 160, 75 %%", slow.BoundGFlops, slow.PctOfBound)
	}
	fast := rec(8, 120, 3.75) // 240 at its clock, AI × 30 GB/s = 240
	annotate(&fast, 0)
	if fast.BoundGFlops != 240 || fast.PctOfBound != 50 {
		t.Errorf("compute-bound at 3.75 GHz: bound %v, %v %%; want 240, 50 %%", fast.BoundGFlops, fast.PctOfBound)
	}
	mem := rec(2, 45, 2.5) // 60 GFLOP/s from DRAM, under 160
	annotate(&mem, 0)
	if mem.BoundGFlops != 60 || mem.PctOfBound != 75 {
		t.Errorf("memory-bound at 2.5 GHz: bound %v, %v %%; want 60, 75 %%", mem.BoundGFlops, mem.PctOfBound)
	}
	none := rec(8, 120, math.NaN())
	annotate(&none, 0)
	if none.BoundGFlops != 200 || none.PctOfBound != 60 {
		t.Errorf("no clock: bound %v, %v %%; want the roofline's 200, 60 %%", none.BoundGFlops, none.PctOfBound)
	}
}
