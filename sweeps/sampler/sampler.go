// Package sampler times a call honestly: on a thread locked and pinned to
// one CPU, after a warm-up, in samples long enough for the clock, dropping
// every sample during which the thread was preempted. The sweep runner and
// the roofline measurements both use it.
package sampler

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"
)

// Config sets how a call is timed (see Measure).
type Config struct {
	MinTime    time.Duration // keep sampling at least this long (default 200 ms)
	MinSamples int           // and until this many samples are kept (default 10)
	MaxTime    time.Duration // give up on MinSamples after this long (default 10×MinTime, ≥ 2 s, ≥ 3×MinSamples samples)
	SampleTime time.Duration // each sample runs enough calls to last this long (default 20 µs)
	Warmup     time.Duration // untimed calls first (default MinTime/10, ≥ 1 call)
	// Tolerate keeps a preempted sample that lasted at least this long
	// (default 20 ms): a preemption costs microseconds, < 0.1 % of it,
	// while such samples are rarely free of one, least of all with every
	// CPU busy. Tolerated samples are counted apart.
	Tolerate time.Duration
}

func (c Config) withDefaults() Config {
	if c.MinTime <= 0 {
		c.MinTime = 200 * time.Millisecond
	}
	if c.MinSamples <= 0 {
		c.MinSamples = 10
	}
	if c.MaxTime <= 0 {
		c.MaxTime = max(10*c.MinTime, 2*time.Second)
	}
	if c.SampleTime <= 0 {
		c.SampleTime = 20 * time.Microsecond
	}
	if c.Warmup <= 0 {
		c.Warmup = c.MinTime / 10
	}
	if c.Tolerate <= 0 {
		c.Tolerate = 20 * time.Millisecond
	}
	return c
}

// Stats summarizes the kept samples of one point, in ns per call.
type Stats struct {
	Median, Min, Max float64
	MAD              float64 // median absolute deviation from the median
	CV               float64 // stddev / mean
	Kept, Rejected   int
	Tolerated        int // kept although preempted (see Config.Tolerate)
	CallsPerSample   int
	Samples          []float64 // kept samples in time order
}

// MADPct and CVPct express the spread in percent of the median and mean.
func (s Stats) MADPct() float64 { return 100 * s.MAD / s.Median }
func (s Stats) CVPct() float64  { return 100 * s.CV }

// Enough reports whether the sampler kept the configured minimum.
func (s Stats) Enough(c Config) bool { return s.Kept >= c.withDefaults().MinSamples }

// Meter is read around every sample: the seam for hardware counters. Begin
// is called right before the timed calls, End right after; End reports
// whether the sample is usable as far as the meter is concerned.
type Meter interface {
	Begin()
	End(kept bool, calls int)
}

// threadState is what the sampler needs from the OS for the calling
// thread: a count of involuntary context switches (see sampler_linux.go).
type threadState interface {
	involuntarySwitches() (int64, error)
}

// ErrInterrupted is returned by Measure when its context is cancelled.
var ErrInterrupted = errors.New("interrupted")

// Measure times call on the current goroutine, which the caller has locked
// to its OS thread and pinned to one CPU. It warms up, finds how many calls
// make a sample of at least SampleTime, then takes samples until MinTime
// has passed and MinSamples are kept (or MaxTime). A sample during which
// the thread was preempted (an involuntary context switch, read with
// getrusage(RUSAGE_THREAD)) measured the scheduler, not the kernel: it is
// dropped and counted as rejected.
func Measure(ctx context.Context, cfg Config, call func(), meter Meter) (Stats, error) {
	cfg = cfg.withDefaults()
	th := currentThread()
	round := func(n int, metered bool) (time.Duration, bool) {
		sw0, err0 := th.involuntarySwitches()
		if metered && meter != nil {
			meter.Begin()
		}
		t0 := time.Now()
		for range n {
			call()
		}
		el := time.Since(t0)
		sw1, err1 := th.involuntarySwitches()
		preempted := err0 == nil && err1 == nil && sw1 != sw0 // no counter: keep everything
		if metered && meter != nil {
			meter.End(!preempted || el >= cfg.Tolerate, n)
		}
		return el, preempted
	}
	return sample(ctx, cfg, round)
}

// sample is the method shared by Measure and MeasureParallel. round(n,
// metered) runs n calls (on every worker), returning the time of the
// slowest and whether any was preempted; metered rounds are the samples.
func sample(ctx context.Context, cfg Config, round func(n int, metered bool) (time.Duration, bool)) (Stats, error) {
	// Warm up: caches, TLB, branch predictors, clock ramp.
	start := time.Now()
	round(1, false)
	for time.Since(start) < cfg.Warmup {
		round(1, false)
	}

	// Calibrate calls per sample on the fastest of three tries, so that one
	// slow try (an interrupt, a page fault) does not leave samples short.
	n := 1
	var el time.Duration
	for {
		el = time.Duration(math.MaxInt64)
		for range 3 {
			d, _ := round(n, false)
			el = min(el, d)
		}
		if el >= cfg.SampleTime {
			break
		}
		if el <= 0 {
			n *= 10
			continue
		}
		n = max(n+1, int(float64(n)*1.2*float64(cfg.SampleTime)/float64(el)))
	}

	// A slow kernel must still get its MinSamples: allow three times what
	// they take, whatever MaxTime says.
	maxTime := max(cfg.MaxTime, 3*time.Duration(cfg.MinSamples)*el)
	st := Stats{CallsPerSample: n}
	begin := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return st, ErrInterrupted
		}
		d, preempted := round(n, true)
		if preempted && d >= cfg.Tolerate {
			preempted = false
			st.Tolerated++
		}
		if preempted {
			st.Rejected++
		} else {
			st.Samples = append(st.Samples, float64(d.Nanoseconds())/float64(n))
		}
		total := time.Since(begin)
		if (total >= cfg.MinTime && len(st.Samples) >= cfg.MinSamples) || total >= maxTime {
			break
		}
	}
	st.summarize()
	return st, nil
}

func (s *Stats) summarize() {
	s.Kept = len(s.Samples)
	if s.Kept == 0 {
		s.Median, s.Min, s.Max, s.MAD, s.CV = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return
	}
	sorted := slices.Clone(s.Samples)
	slices.Sort(sorted)
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.Median = median(sorted)
	dev := make([]float64, len(sorted))
	var sum float64
	for i, x := range sorted {
		dev[i] = math.Abs(x - s.Median)
		sum += x
	}
	slices.Sort(dev)
	s.MAD = median(dev)
	mean := sum / float64(len(sorted))
	var ss float64
	for _, x := range sorted {
		ss += (x - mean) * (x - mean)
	}
	if len(sorted) > 1 {
		s.CV = math.Sqrt(ss/float64(len(sorted)-1)) / mean
	}
}

// median of sorted xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
