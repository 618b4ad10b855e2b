package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// TestTable: a target's line takes the tier's best ok point, judges it by
// its share, gives an unstable point no verdict, and says which targets
// have no run.
func TestTable(t *testing.T) {
	dir := t.TempDir()
	run, err := results.Create(dir, results.Meta{RunID: "gqa-dram", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	add := func(kv, tk, isa, status string, pct float64) {
		r := results.NewRecord()
		r.Family, r.Kernel, r.ISA, r.KV, r.TK, r.H, r.KVH, r.Th, r.Status = "attention", "decode-flash-gqa", isa, kv, tk, 32, 8, 1, status
		r.PctOfBound, r.PctOfRead, r.BoundGFlops = results.Float(pct), results.Float(pct-10), 50
		if err := run.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	// The kernel's rate in L2 (gqa-l2): f32 below what its DRAM target needs.
	l2, err := results.Create(dir, results.Meta{RunID: "gqa-l2", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		kv     string
		gflops float64
		isa    string
	}{{"f32", 30, "avx2"}, {"f16", 90, "avx2"}, {"f32", 100, "avx512"}} {
		r := results.NewRecord()
		r.Family, r.Kernel, r.ISA, r.KV, r.TK, r.H, r.KVH, r.Th, r.Status, r.GFlops = "attention", "decode-flash-gqa", x.isa, x.kv, "auto", 4, 1, 1, results.StatusOK, results.Float(x.gflops)
		if err := l2.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l2.Close(true); err != nil {
		t.Fatal(err)
	}
	add("f32", "auto", "avx2", results.StatusOK, 71)
	add("f32", "32", "avx2", results.StatusUnstable, 95) // more, but not a result
	add("f16", "auto", "avx2", results.StatusOK, 83)
	add("f16", "auto", "avx512", results.StatusUnstable, 88)
	{
		// Short of its target though its arithmetic in L2 (100 GFLOP/s)
		// is fast enough: at 30 GFLOP/s and 75 % of its paired read,
		// (1 − 0.75)·100/30 = 0.83 of its time in L2 adds to the read's.
		r := results.NewRecord()
		r.Family, r.Kernel, r.ISA, r.KV, r.TK, r.H, r.KVH, r.Th, r.Status = "attention", "decode-flash-gqa", "avx512", "f32", "auto", 32, 8, 1, results.StatusOK
		r.PctOfBound, r.PctOfRead, r.BoundGFlops, r.GFlops = 60, 75, 50, 30
		// Its paired read at 21 GB/s × 2 FLOP/B is 84 % of its bound.
		r.ReadGBs, r.AI = 21, 2
		if err := run.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	add("f16", "auto", "generic", results.StatusSkipped, 0)
	if err := run.Close(true); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := printTable(&b, dir); err != nil {
		t.Fatal(err)
	}
	var lines []string // each with its runs of spaces made one
	for _, l := range strings.Split(b.String(), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	const dram = "decode-flash-gqa %s 32:8, ctx 32768 --cold (DRAM) ≥ 80 % of bound "
	for _, want := range []string{
		strings.Replace(dram, "%s", "f32", 1) + "avx2 auto 71 % 61 % of read ok not met; beyond this kernel here: it needs 40 GFLOP/s, and with its KV in L2 runs 30",
		strings.Replace(dram, "%s", "f16", 1) + "avx2 auto 83 % 73 % of read ok met",
		strings.Replace(dram, "%s", "f32", 1) + "avx512 auto 60 % 75 % of read ok not met; it needs 40 GFLOP/s and runs 100 with its KV in L2: the overlap with memory falls short (a call takes the paired read's time plus 0.83 of its arithmetic's time in L2); its paired kv-read itself read at 84 % of this bound: 80 % of it asks for 95 % of that read",
		strings.Replace(dram, "%s", "f16", 1) + "avx512 auto 88 % 78 % of read unstable no verdict (not a result)",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in\n%s", want, b.String())
		}
	}
	if slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "generic") }) {
		t.Errorf("a skipped tier has a line:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "decode-flash f16, 1 head, ctx 4096 ≥ 90 %") || !strings.Contains(b.String(), "not measured") {
		t.Errorf("a target without its run is not listed as not measured:\n%s", b.String())
	}
}

// TestReadReach: a memory-bound target's clause says what share of the
// bound the rounds' paired reads reached, what the target then asks of
// the kernel, and in how many rounds it was past any kernel's reach.
func TestReadReach(t *testing.T) {
	rec := func(status string, readGBs float64) *results.Record {
		r := results.NewRecord()
		r.Status, r.ReadGBs, r.AI, r.BoundGFlops = status, results.Float(readGBs), 2, 100
		return &r
	}
	for _, c := range []struct {
		reads []float64 // GB/s: at AI 2 and a bound of 100, the share of it
		want  string
	}{
		{[]float64{45, 40, 36}, "; its paired kv-read itself read at 80 % (72–90) of this bound: 80 % of it asks for 100 % of that read (past any kernel's reach in 1 of 3 rounds)"},
		{[]float64{44, 45}, "; its paired kv-read itself read at 89 % (88–90) of this bound: 80 % of it asks for 90 % of that read"},
		{[]float64{35, 38, 44}, "; its paired kv-read itself read at 76 % (70–88) of this bound: 80 % was past any kernel's reach in 2 of 3 rounds"},
		{[]float64{30}, "; its paired kv-read itself read at 60 % of this bound: 80 % was past any kernel's reach"},
	} {
		var rounds []*results.Record
		for _, g := range c.reads {
			rounds = append(rounds, rec(results.StatusOK, g))
		}
		rounds = append(rounds, rec(results.StatusUnstable, 10)) // not a result: left out
		if got := readReach(rounds, 80); got != c.want {
			t.Errorf("reads %v: got %q, want %q", c.reads, got, c.want)
		}
	}
	if got := readReach([]*results.Record{rec(results.StatusUnstable, 40)}, 80); got != "" {
		t.Errorf("no ok round: got %q, want none", got)
	}
}

// TestRounds: with rounds, a target's line is the median of the rounds'
// ok points, their range and how many met it; rounds that are not results
// are counted out, and a tier with none has no verdict.
func TestRounds(t *testing.T) {
	dir := t.TempDir()
	for i, round := range []map[string]float64{
		{"avx2": 71, "avx512": 90},
		{"avx2": 84, "avx512": -1}, // -1: unstable
		{"avx2": 82, "avx512": -1},
	} {
		run, err := results.Create(dir, results.Meta{RunID: roundID("gqa-dram", i+1), Started: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		for _, tier := range []string{"avx2", "avx512"} {
			r := results.NewRecord()
			r.Family, r.Kernel, r.ISA, r.KV, r.TK, r.H, r.KVH, r.Th, r.Status = "attention", "decode-flash-gqa", tier, "f32", "auto", 64, 8, 1, results.StatusOK
			pct := round[tier]
			if pct < 0 {
				r.Status, pct = results.StatusUnstable, 99
			}
			r.PctOfBound, r.PctOfRead = results.Float(pct), results.Float(pct)
			if err := run.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := run.Close(true); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	if err := printTable(&b, dir); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(b.String(), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	const dram = "decode-flash-gqa f32 64:8, ctx 32768 --cold (DRAM) ≥ 80 % of bound "
	for _, want := range []string{
		dram + "avx2 auto 82 % (71–84) 82 % of read ok met (2 of 3 rounds)",
		dram + "avx512 auto 90 % 90 % of read ok in 1 of 3 met (1 of 1 rounds)",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in\n%s", want, b.String())
		}
	}
	if got := judge([]*results.Record{{Status: results.StatusUnstable}, {Status: results.StatusUnstable}}, true, 80, noneAbove); got.verdict != "no verdict (no round is a result)" {
		t.Errorf("no ok round: verdict %q", got.verdict)
	}
	two := []*results.Record{{Status: results.StatusOK, PctOfBound: 78}, {Status: results.StatusOK, PctOfBound: 83}}
	if got := judge(two, true, 80, noneAbove); got.share != "80 % (78–83)" || got.verdict != "met (1 of 2 rounds)" {
		t.Errorf("two rounds: %+v", got)
	}
	// A round above its roof at its clock counts out like an unstable one.
	above := func(r *results.Record) string {
		if r.PctOfBound > 90 {
			return "above its roof"
		}
		return ""
	}
	three := []*results.Record{{Status: results.StatusOK, PctOfBound: 78}, {Status: results.StatusOK, PctOfBound: 83}, {Status: results.StatusOK, PctOfBound: 101}}
	if got := judge(three, true, 80, above); got.share != "80 % (78–83)" || got.status != "ok in 2 of 3" {
		t.Errorf("a round above its roof: %+v", got)
	}
	if got := judge(three[2:], true, 80, above); got.verdict != "no verdict: above its roof" {
		t.Errorf("one round above its roof: verdict %q", got.verdict)
	}
	if got := judge([]*results.Record{three[2], three[2]}, true, 80, above); got.verdict != "no verdict (no round is a result; 2 of them: above its roof)" {
		t.Errorf("every round above its roof: verdict %q", got.verdict)
	}
	if _, err := pickRuns("gqa-l3,nope"); err == nil {
		t.Error("-runs with an unknown run: no error")
	}
	if ids, err := pickRuns("gqa-dram"); err != nil || !slices.Equal(ids, []string{"gqa-dram"}) {
		t.Errorf("pickRuns(gqa-dram) = %v, %v", ids, err)
	}
}

func noneAbove(*results.Record) string { return "" }

// TestAtClock: a compute-bound point's share of its roof at its own
// clock is its rate over the roof's FLOPs per cycle (its FMA units' share
// times their lanes × 2) times that clock, and its share at the
// roofline's clock its rate over the roof as measured; without a clock
// on either side, no share at its own.
func TestAtClock(t *testing.T) {
	u := roofline.FMAUnits{Pipes: 2, Bits: 512, Lanes: 32}
	roof := &roofline.Roofline{Compute: []roofline.Compute{
		{Kind: "fp32-fma", Tier: isa.AVX512, Threads: 1, Value: 200, FMA: &u, PctOfPorts: 100}, // 64 FLOP a cycle, at 3.125 GHz
	}}
	r := results.NewRecord()
	r.Family, r.Kernel, r.KV, r.ISA, r.H, r.KVH, r.Th = "attention", "decode-flash-gqa", "f32", "avx512", 64, 8, 1
	r.AI, r.GFlops, r.ClockGHz = 8, 120, 2.5 // 64 × 2.5 = 160 GFLOP/s at its clock
	if share, ghz, ok := atClock(roof, &r); !ok || share != 75 || ghz != 2.5 {
		t.Errorf("atClock = %v %v %v, want 75 at 2.5 GHz", share, ghz, ok)
	}
	if share, ghz, ok := atRoofClock(roof, &r); !ok || share != 60 || ghz != 3.125 {
		t.Errorf("atRoofClock = %v %v %v, want 60 at 3.125 GHz", share, ghz, ok)
	}
	noClock := r
	noClock.ClockGHz = results.Missing()
	noShare := &roofline.Roofline{Compute: []roofline.Compute{{Kind: "fp32-fma", Tier: isa.AVX512, Threads: 1, Value: 200, LoadGHz: 3.125}}}
	for what, c := range map[string]struct {
		roof *roofline.Roofline
		r    *results.Record
	}{"no point clock": {roof, &noClock}, "no roofline FLOPs per cycle": {noShare, &r}, "no roofline": {nil, &r}} {
		if _, _, ok := atClock(c.roof, c.r); ok {
			t.Errorf("%s: a share", what)
		}
	}
}

// TestMaxShareOfRead: a decode point's reachable share of its read is the
// read's rate over what its tier's compute ceiling allows at its AI —
// q8-decode for a q8_0 cache, f16-fma for f16 — capped at 100 %; no
// roofline, no read or a store: none.
func TestMaxShareOfRead(t *testing.T) {
	roof := &roofline.Roofline{Compute: []roofline.Compute{
		{Kind: roofline.Q8DecodeKind, Tier: isa.AVX512, Threads: 1, Value: 100},
		{Kind: "f16-fma", Tier: isa.AVX512, Threads: 1, Value: 120},
	}}
	rec := func(kernel, kv string, ai, read float64) *results.Record {
		r := results.NewRecord()
		r.Family, r.Kernel, r.KV, r.ISA, r.H, r.KVH, r.Th, r.AI, r.ReadGBs = "attention", kernel, kv, "avx512", 1, 1, 1, results.Float(ai), results.Float(read)
		return &r
	}
	// q8_0 at 2 FLOP/B against a 100 GB/s read needs 200 GFLOP/s: 50 %.
	if got, what, ok := maxShareOfRead(roof, rec("decode-flash", "q8_0", 2, 100)); !ok || got != 50 || !strings.HasPrefix(what, roofline.Q8DecodeKind) {
		t.Errorf("q8_0: %v %q %v, want 50 of q8-decode", got, what, ok)
	}
	if got, _, ok := maxShareOfRead(roof, rec("decode-flash", "f16", 1, 60)); !ok || got != 100 {
		t.Errorf("f16 under its ceiling: %v %v, want 100", got, ok)
	}
	for _, r := range []*results.Record{rec("batch-copy", "q8_0", 2, 100), rec("decode-flash", "q8_0", 2, math.NaN())} {
		if _, _, ok := maxShareOfRead(roof, r); ok {
			t.Errorf("%s with read %v: a share", r.Kernel, r.ReadGBs)
		}
	}
	if _, _, ok := maxShareOfRead(nil, rec("decode-flash", "q8_0", 2, 100)); ok {
		t.Error("no roofline: a share")
	}
}

// TestFloors: the floor benchmarks' shares print one line a benchmark and
// tier, in floorCells' order; a folder without them prints nothing.
func TestFloors(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	if err := printFloors(&b, dir); err != nil || b.Len() != 0 {
		t.Fatalf("no floors.txt: %q, %v; want nothing", b.String(), err)
	}
	const out = `goos: linux
goarch: amd64
pkg: github.com/ckbench/ckbench/kernels/attention
BenchmarkF16Floor/isa=avx512/ctx=4096-2   	   20696	    116036 ns/op	        67.38 decode_%read	        92.07 floor_%read	        92.83 floor_GB/s	       100.8 read_GB/s	        90.42 tile_%read
PASS
pkg: github.com/ckbench/ckbench/kernels/kvcache
BenchmarkQ8Floor/isa=avx2-2         	    7279	    327179 ns/op	         1.486 copy_ns/block	        55.16 head_%copy	        50.07 pos_%copy	        54.25 warm_%copy	         2.738 warm_ns/block
BenchmarkF16AppendFloor/isa=avx2-2         	   42732	     55677 ns/op	        52.56 append_%copy	        57.33 convert_%copy	        44.75 convert_ns	        25.66 copy_ns
PASS
`
	if err := os.WriteFile(filepath.Join(dir, floorsFile), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := printFloors(&b, dir); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  F16Floor/isa=avx512/ctx=4096-2: floor 92 % of read, tile 90 %, decode-flash 67 %\n",
		"  Q8Floor/isa=avx2-2: warm 54 % of copy, batch-copy head-major 55 %, position-major 50 %\n",
		"  F16AppendFloor/isa=avx2-2: convert 57 % of copy, append 53 %\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no line %q in\n%s", want, b.String())
		}
	}
}
