package sweeps

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/ckbench/ckbench/hwcounters"
	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/roofline"
	"github.com/ckbench/ckbench/sampler"
)

var overheadSink float32

// BenchmarkCounterOverhead measures what reading the counters around every
// sample costs the point they measure: the same ~20 µs call (a read loop
// over 1 MiB, L2-resident) timed by the sampler with --counters none and
// default, in turn (three passes over 1 MiB per call: about 20 µs with
// AVX-512 here). It reports the sampler's median ns per call:
//
//	go test -run '^$' -bench CounterOverhead -count 10 ./sweeps | benchstat -col /counters -
func BenchmarkCounterOverhead(b *testing.B) {
	x := buf.Floats(1 << 18)
	buf.FillUniform(x, 1, -1, 1)
	t := isa.Generic
	for _, c := range []isa.Tier{isa.AVX2, isa.AVX512} {
		if isa.Detect(c).Runs {
			t = c
		}
	}
	call := func() { overheadSink += roofline.ReadSumRepeat(t, x, 3) }
	for _, mode := range []string{"none", "default"} {
		b.Run("counters="+mode, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpus, err := sampler.AllowedCPUs()
			if err == nil && len(cpus) > 0 {
				sampler.PinThread(cpus[len(cpus)-1])
			}
			var meter sampler.Meter
			if mode == "default" {
				m := openCounters(hwcounters.Default())
				if m == nil {
					b.Skip("no counter opens here")
				}
				defer m.c.Close()
				meter = m
			}
			var med float64
			for b.Loop() {
				st, err := sampler.Measure(context.Background(), sampler.Config{MinTime: 200 * time.Millisecond}, call, meter)
				if err != nil {
					b.Fatal(err)
				}
				med = st.Median
			}
			b.ReportMetric(med, "ns/call")
		})
	}
}
