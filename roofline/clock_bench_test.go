package roofline

import (
	"testing"
	"time"

	"github.com/ckbench/ckbench/internal/stats"
	"github.com/ckbench/ckbench/kernels/isa"
)

// BenchmarkClockUnderStream shows whether the core clock, and with it every
// compute ceiling, falls while the core streams from DRAM, which is why a
// sweep takes a point's compute ceiling at the clock it ran at
// (Bound.AtClock). Each round streams for a quarter of a second from DRAM
// (32 MB reads of K and V side by side, ReadXor2, from 16 copies
// rotated), timing after every fourth read the clock chain (ClockChain,
// 16 Ki cycles) and the widest tier's FMA kernel (FMA); then as long
// reading 2 MB from cache (16 reads between probes, about as long), with
// the same probes. It reports the medians of each phase's second half:
// ghz_dram and ghz_cache, and the FMA rates fma_dram and fma_cache
// (GFLOP/s). Where the clock is what moved, the FMA rates move with it.
//
// On a 2-vCPU AMD EPYC family 26 model 2 guest (Zen 5, 2026-12-02, one
// process, nine runs of 10 rounds): ghz_dram 3.34–3.59 against ghz_cache
// 3.62–3.67, fma_dram 200–225 against fma_cache 228–230 (AVX-512).
//
//	go test -run '^$' -bench ClockUnderStream -benchtime 10x ./roofline
func BenchmarkClockUnderStream(b *testing.B) {
	if _, ok := ClockChain(1); !ok {
		b.Skip("no clock chain in this build (amd64 only)")
	}
	tier := isa.Generic
	for _, t := range []isa.Tier{isa.AVX2, isa.AVX512} {
		if isa.Detect(t).Runs && kernelsFor(t) != nil {
			tier = t
		}
	}
	if tier == isa.Generic {
		b.Skip("no FMA kernel for this CPU's tiers")
	}
	const copies, size = 16, 32 << 20
	bufs := make([][]byte, copies)
	for i := range bufs {
		bufs[i] = make([]byte, size)
		for j := 0; j < size; j += 4096 {
			bufs[i][j] = byte(i + j) // touch every page: untouched memory is the shared zero page
		}
	}
	small := make([]byte, 2<<20)
	for j := range small {
		small[j] = byte(j)
	}
	const chain, fmaIters = 2048, 2000
	flops := FMAFlopsPerIter(tier) * fmaIters
	var sink uint64
	var fsink float32
	probe := func() (ghz, gflops float64) {
		t0 := time.Now()
		ClockChain(chain)
		t1 := time.Now()
		fsink += FMA(tier, fmaIters)
		t2 := time.Now()
		return 8 * chain / float64(t1.Sub(t0).Nanoseconds()), flops / float64(t2.Sub(t1).Nanoseconds())
	}
	// A phase streams for phase, probing after every 4 calls (about 4 ms
	// of DRAM), and keeps the probes of its second half: a host's clock
	// follows the load over tens of milliseconds, not at once.
	const phase = 250 * time.Millisecond
	var gd, gc, fd, fc []float64
	k := 0
	run := func(read func(), g, f *[]float64) {
		var pg, pf []float64
		for t0 := time.Now(); time.Since(t0) < phase; {
			for range 4 {
				read()
			}
			x, y := probe()
			pg, pf = append(pg, x), append(pf, y)
		}
		*g, *f = append(*g, pg[len(pg)/2:]...), append(*f, pf[len(pf)/2:]...)
	}
	for b.Loop() {
		run(func() {
			x := bufs[k%copies]
			sink ^= ReadXor2(tier, x[:size/2], x[size/2:])
			k++
		}, &gd, &fd)
		run(func() {
			for range 16 {
				sink ^= ReadXor2(tier, small[:len(small)/2], small[len(small)/2:])
			}
		}, &gc, &fc)
	}
	b.ReportMetric(stats.Median(gd), "ghz_dram")
	b.ReportMetric(stats.Median(gc), "ghz_cache")
	b.ReportMetric(stats.Median(fd), "fma_dram")
	b.ReportMetric(stats.Median(fc), "fma_cache")
	_, _ = sink, fsink
}
