// Package sampler times a call honestly: on a thread locked and pinned to
// one CPU, after a warm-up, in samples long enough for the clock, dropping
// every sample during which the thread was preempted, or stopped by the
// host where its clock does not show it (HostStalls). The sweep runner
// and the roofline measurements both use it.
package sampler

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/ckbench/ckbench/internal/stats"
)

// Config sets how a call is timed (see Measure).
type Config struct {
	MinTime    time.Duration // keep sampling at least this long (default 200 ms)
	MinSamples int           // and until this many samples are kept (default 10)
	MaxTime    time.Duration // give up on MinSamples after this long (default 10×MinTime, ≥ 2 s, ≥ 3×MinSamples samples)
	SampleTime time.Duration // each sample runs enough calls to last this long (default 200 µs)
	Warmup     time.Duration // untimed calls first (default MinTime/10, ≥ 1 call)
	// CallsMultiple, where above 1, makes every sample's calls a multiple
	// of it: a cold point rotating through that many copies of its data
	// then reads each copy alike in every sample. Copies of the same bytes
	// stream from DRAM at rates that differ by their pages (two copies of
	// 2 × 128 MiB read in 8.0 and 8.8 ms, call after call, on a Zen 4
	// guest): samples of one call each were bimodal, their spread (4–6 %
	// MAD) flagged the point unstable every time, and a point timed in
	// alternation with its read loop took one copy every sample while the
	// loop took the other.
	CallsMultiple int
	// MaxOffCPU is the largest share of a sample's wall time the thread
	// may have spent not running (default 1 %, see OffCPULimit); a sample
	// above it measured the scheduler or the hypervisor, not the kernel,
	// and is dropped however long it is.
	MaxOffCPU float64
	// Stall is the host pause by which samples are judged once taken
	// (stalled): one more than Stall/2 slower than the clean ones was
	// stopped by the host and is dropped. 0 takes Host().Quantum(), probed
	// once per process; below 0, none is dropped so.
	Stall time.Duration
}

// stallQuantum is the pause samples are judged by (Config.Stall).
func (c Config) stallQuantum() time.Duration {
	switch {
	case c.Stall < 0:
		return 0
	case c.Stall == 0:
		return Host().Quantum()
	}
	return c.Stall
}

// ErrNoAffinity is PinThread's answer where this build cannot set a
// thread's CPU (every OS but Linux): the thread is locked to its goroutine
// but may migrate between CPUs, so timings are less steady. Measurements
// go on; callers say so.
var ErrNoAffinity = errors.New("CPU affinity is only implemented on Linux: the measuring thread may migrate between CPUs")

// OffCPUFloor is the off-CPU time a sample may show without having been
// descheduled: the jitter between the wall clock and the thread's CPU
// clock, whose reads are system calls of about 1 µs in a VM (measured
// here: an undisturbed 20 µs sample shows −0.8 to −1 µs, its reads' own
// CPU time). A real preemption costs a context-switch pair (several µs)
// and usually a time slice (ms).
const OffCPUFloor = 2 * time.Microsecond

// OffCPULimit is the off-CPU time above which a sample of length el is
// rejected: MaxOffCPU of it, and never less than OffCPUFloor. With the
// default 200 µs samples that is 2 µs, 1 %: a kept sample is at most 1 %
// longer than the calls inside it took on the CPU.
func (c Config) OffCPULimit(el time.Duration) time.Duration {
	c = c.withDefaults()
	return max(time.Duration(c.MaxOffCPU*float64(el)), OffCPUFloor)
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
		c.SampleTime = 200 * time.Microsecond
	}
	if c.Warmup <= 0 {
		c.Warmup = c.MinTime / 10
	}
	if c.MaxOffCPU <= 0 {
		c.MaxOffCPU = 0.01
	}
	c.CallsMultiple = max(c.CallsMultiple, 1)
	return c
}

// Stats summarizes the kept samples of one point, in ns per call.
type Stats struct {
	Median, Min, Max float64
	MAD              float64 // median absolute deviation from the median
	CV               float64 // stddev / mean
	Kept, Rejected   int     // Rejected: samples dropped for time off the CPU
	// Stalled counts the rejected samples dropped as stalled by the host
	// (Config.Stall): a pause the thread's clock did not see.
	Stalled int
	// Tolerated counts kept samples with an involuntary context switch
	// whose time off the CPU stayed under Config.OffCPULimit (a switch
	// during the clock reads around the timed calls, or a kernel thread
	// that ran for a microsecond).
	Tolerated      int
	CallsPerSample int
	Samples        []float64 // kept samples in time order
	// OffCPU is the largest time off the CPU among the kept samples.
	OffCPU time.Duration
}

// MADPct and CVPct express the spread in percent of the median and mean.
func (s Stats) MADPct() float64 { return 100 * s.MAD / s.Median }
func (s Stats) CVPct() float64  { return 100 * s.CV }

// Effective is the configuration with every default applied: what
// Measure actually uses.
func (c Config) Effective() Config { return c.withDefaults() }

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
// thread: its CPU time (CLOCK_THREAD_CPUTIME_ID) and its count of
// involuntary context switches (see thread_linux.go).
type threadState interface {
	cpuTime() (time.Duration, error)
	involuntarySwitches() (int64, error)
}

// sampleRun is what one round of calls on one thread measured.
type sampleRun struct {
	el        time.Duration // wall time
	offCPU    time.Duration // wall time minus the thread's CPU time (0 when unknown)
	preempted bool          // an involuntary context switch happened
}

// timeCalls runs calls on the current thread and measures the time it was
// not running: wall time minus the thread's CPU time. Where the OS gives
// no thread CPU clock, offCPU stays 0 and only the switch count judges.
func timeCalls(th threadState, calls func()) sampleRun {
	// The timed interval holds the calls alone: the thread-clock reads
	// (system calls) sit outside it, so its CPU-time interval is the
	// larger by their cost and an undisturbed sample shows about −1 µs.
	sw0, errS0 := th.involuntarySwitches()
	c0, errC0 := th.cpuTime()
	t0 := time.Now()
	calls()
	el := time.Since(t0)
	c1, errC1 := th.cpuTime()
	sw1, errS1 := th.involuntarySwitches()
	r := sampleRun{el: el, preempted: errS0 == nil && errS1 == nil && sw1 != sw0}
	if errC0 == nil && errC1 == nil {
		r.offCPU = max(el-(c1-c0), 0)
	}
	return r
}

// judge says whether a round is kept: its time off the CPU is within the
// limit. A preemption without a clock to weigh it rejects the sample.
func (c Config) judge(r sampleRun, haveClock bool) (keep, tolerated bool) {
	if !haveClock {
		return !r.preempted, false
	}
	if r.offCPU > c.OffCPULimit(r.el) {
		return false, false
	}
	return true, r.preempted
}

// ErrInterrupted is returned by Measure when its context is cancelled.
var ErrInterrupted = errors.New("interrupted")

// Measure times call on the current goroutine, which the caller has locked
// to its OS thread and pinned to one CPU. It warms up, finds how many calls
// make a sample of at least SampleTime, then takes samples until MinTime
// has passed and MinSamples are kept (or MaxTime). A sample during which
// the thread spent more than Config.OffCPULimit not running (wall time
// minus CLOCK_THREAD_CPUTIME_ID: preempted by another task, an interrupt,
// or, with paravirtual steal accounting, the hypervisor) measured the
// scheduler, not the kernel: it is dropped and counted as rejected,
// however long it is. So is, once the samples are taken, one that a
// pause of the host made longer (Config.Stall, stalled): a hypervisor
// stops the whole vCPU, often with the thread's clock running on. The
// Meter has seen such samples as kept.
func Measure(ctx context.Context, cfg Config, call func(), meter Meter) (Stats, error) {
	st, _, err := MeasurePaired(ctx, cfg, call, nil, meter)
	return st, err
}

// MeasurePaired is Measure of call with a reference call (ref, a read loop
// over the same bytes) timed in alternation with it: every sample of call
// follows a sample of ref, and the two are kept or dropped together, so
// that the i-th samples of the two Stats were taken back to back. A host
// whose speed changes from one second to the next (a VM's memory
// bandwidth, shared with other tenants) then changes both alike, and
// their ratio, sample by sample, holds where either time alone does not.
// The meter sees call's samples only. A nil ref is Measure.
func MeasurePaired(ctx context.Context, cfg Config, call, ref func(), meter Meter) (Stats, Stats, error) {
	cfg = cfg.withDefaults()
	th := currentThread()
	_, clockErr := th.cpuTime()
	rounds := func(f func(), meter Meter) roundFunc {
		return func(n int, metered bool) sampleRun {
			if metered && meter != nil {
				meter.Begin()
			}
			r := timeCalls(th, func() {
				for range n {
					f()
				}
			})
			if metered && meter != nil {
				keep, _ := cfg.judge(r, clockErr == nil)
				meter.End(keep, n)
			}
			return r
		}
	}
	var refRound roundFunc
	if ref != nil {
		refRound = rounds(ref, nil)
	}
	return sample(ctx, cfg, clockErr == nil, rounds(call, meter), refRound)
}

// roundFunc runs n calls (on every worker), returning the time of the
// slowest, the largest time off the CPU and whether any was preempted;
// metered rounds are the samples.
type roundFunc func(n int, metered bool) sampleRun

// sample is the method shared by Measure and MeasureParallel: it times
// round, and with a non-nil ref that too, a sample of ref before every
// sample of round (see MeasurePaired).
func sample(ctx context.Context, cfg Config, haveClock bool, round, ref roundFunc) (st, refSt Stats, err error) {
	// Warm up: caches, TLB, branch predictors, clock ramp.
	start := time.Now()
	warm := func() {
		round(cfg.CallsMultiple, false)
		if ref != nil {
			ref(cfg.CallsMultiple, false)
		}
	}
	warm()
	for time.Since(start) < cfg.Warmup {
		warm()
	}
	n, el := calibrate(cfg, round)
	nRef, elRef := 0, time.Duration(0)
	if ref != nil {
		nRef, elRef = calibrate(cfg, ref)
	}

	// A slow kernel must still get its MinSamples: allow three times what
	// they take, whatever MaxTime says.
	maxTime := max(cfg.MaxTime, 3*time.Duration(cfg.MinSamples)*(el+elRef))
	st = Stats{CallsPerSample: n}
	refSt = Stats{CallsPerSample: nRef}
	// The kept samples, judged again once taken: those a host pause made
	// longer (stalled) are dropped too, and sampling goes on until
	// MinSamples remain.
	var ks []keptSample
	q := cfg.stallQuantum()
	next := cfg.MinSamples // kept samples at which enough is next asked
	enough := func() bool {
		if len(ks) < next {
			return false
		}
		clean := len(ks) - count(stalledPairs(ks, q, n, nRef))
		if clean >= cfg.MinSamples {
			return true
		}
		// At least as many more samples as are missing: judging all of
		// them again (a sort) after every one would cost more than a
		// short sample takes.
		next = len(ks) + cfg.MinSamples - clean
		return false
	}
	begin := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return st, refSt, ErrInterrupted
		}
		refKeep, rr := true, sampleRun{}
		if ref != nil {
			rr = ref(nRef, false)
			refKeep, _ = cfg.judge(rr, haveClock)
		}
		r := round(n, true)
		keep, tolerated := cfg.judge(r, haveClock)
		if !keep || !refKeep {
			st.Rejected++
		} else {
			k := keptSample{x: float64(r.el.Nanoseconds()) / float64(n), off: r.offCPU, tolerated: tolerated}
			if ref != nil {
				k.refX, k.refOff = float64(rr.el.Nanoseconds())/float64(nRef), rr.offCPU
			}
			ks = append(ks, k)
		}
		total := time.Since(begin)
		if total >= maxTime || (total >= cfg.MinTime && enough()) {
			break
		}
	}
	drop := stalledPairs(ks, q, n, nRef)
	for i, k := range ks {
		if drop[i] {
			st.Rejected++
			st.Stalled++
			continue
		}
		if k.tolerated {
			st.Tolerated++
		}
		st.OffCPU = max(st.OffCPU, k.off)
		st.Samples = append(st.Samples, k.x)
		if ref != nil {
			refSt.OffCPU = max(refSt.OffCPU, k.refOff)
			refSt.Samples = append(refSt.Samples, k.refX)
		}
	}
	st.summarize()
	refSt.Rejected, refSt.Stalled = st.Rejected, st.Stalled
	refSt.summarize()
	return st, refSt, nil
}

// keptSample is a sample judge kept: of the call and, where it has one,
// of its reference (MeasurePaired), taken back to back.
type keptSample struct {
	x, refX     float64 // ns per call
	off, refOff time.Duration
	tolerated   bool
}

// stalledPairs marks the samples ks (of n calls, their references of
// nRef; none where nRef is 0) that a host pause of q made longer
// (stalled): a pair goes where either does, as the pairs of
// MeasurePaired are kept or dropped together.
func stalledPairs(ks []keptSample, q time.Duration, n, nRef int) []bool {
	xs, refs := make([]float64, len(ks)), make([]float64, len(ks))
	for i, k := range ks {
		xs[i], refs[i] = k.x, k.refX
	}
	// A pause adds q to a sample, q/n to its ns per call.
	drop, _ := stalled(xs, float64(q.Nanoseconds())/float64(n))
	if nRef > 0 {
		refDrop, _ := stalled(refs, float64(q.Nanoseconds())/float64(nRef))
		for i := range drop {
			drop[i] = drop[i] || refDrop[i]
		}
	}
	return drop
}

func count(bs []bool) (n int) {
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// calibrate finds the calls per sample of round: the fewest multiple of
// CallsMultiple lasting at least SampleTime, judged on the fastest of
// three tries so that one slow try (an interrupt, a page fault) does not
// leave samples short. It returns them and the time they take.
func calibrate(cfg Config, round roundFunc) (int, time.Duration) {
	m := cfg.CallsMultiple
	n := m
	for {
		el := time.Duration(math.MaxInt64)
		for range 3 {
			el = min(el, round(n, false).el)
		}
		if el >= cfg.SampleTime {
			return n, el
		}
		if el <= 0 {
			n *= 10
			continue
		}
		n = max(n+m, int(float64(n)*1.2*float64(cfg.SampleTime)/float64(el)))
		n = (n + m - 1) / m * m
	}
}

// Summarize is the Stats of xs (any quantity, not only ns per call): the
// median, the spread and the extremes of the kept samples xs.
func Summarize(xs []float64) Stats {
	s := Stats{Samples: xs}
	s.summarize()
	return s
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
	s.Median = stats.Median(sorted)
	dev := make([]float64, len(sorted))
	var sum float64
	for i, x := range sorted {
		dev[i] = math.Abs(x - s.Median)
		sum += x
	}
	slices.Sort(dev)
	s.MAD = stats.Median(dev)
	mean := sum / float64(len(sorted))
	var ss float64
	for _, x := range sorted {
		ss += (x - mean) * (x - mean)
	}
	if len(sorted) > 1 {
		s.CV = math.Sqrt(ss/float64(len(sorted)-1)) / mean
	}
}
