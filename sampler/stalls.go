package sampler

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"
)

// HostStalls is what ProbeStalls saw of this host's stalls: pauses of the
// whole CPU that the guest's clocks do not account for. A hypervisor that
// deschedules a vCPU, or handles an exit, for tens of microseconds stops
// the measured thread without a context switch and, often, without
// CLOCK_THREAD_CPUTIME_ID stopping: such a sample is one the thread was
// not running in, yet time off the CPU does not show it.
//
// On a 2-vCPU Zen 5 guest (AMD EPYC family 26 model 2, 2026-12-02) a loop
// reading the clock saw 1,400 pauses a second, most 35–45 µs (8 % of the
// wall time), while the guest took 370 timer interrupts a second: the
// host's, not the guest's. Of 1,007 samples of 88 µs of arithmetic that a
// pause made at least 20 µs longer, 580 showed under 2 µs off the CPU (the
// rejection limit), the rest a third of the pause. Samples of a decode in
// L3 were bimodal, a clean mode and one a pause (45 µs) slower, and with
// 40–50 % of them in the slow mode their median moved between the two
// (an f32 GQA call 389 or 430 µs, 8.6 % MAD: unstable run after run).
type HostStalls struct {
	PerSecond float64       // pauses of at least MinStall a second
	Typical   time.Duration // their median length
	Share     float64       // the share of the wall time they took
}

// MinStall is the shortest gap between two clock reads ProbeStalls counts
// as a pause: a guest's own interrupt costs a few µs, an IPI between its
// vCPUs 10–15 (while the other vCPU compiled, the same guest saw 3,200
// gaps of 5 µs or more a second, their median 14 µs: counted so, the
// host's pauses would be taken for a third of their length).
const MinStall = 20 * time.Microsecond

// ProbeStalls reads the monotonic clock in a loop on the calling thread
// for d and reports the gaps of at least MinStall between reads.
func ProbeStalls(d time.Duration) HostStalls {
	var gaps []time.Duration
	var lost time.Duration
	start := time.Now()
	last := start
	for {
		now := time.Now()
		if g := now.Sub(last); g >= MinStall {
			gaps = append(gaps, g)
			lost += g
		}
		last = now
		if now.Sub(start) >= d {
			break
		}
	}
	el := last.Sub(start)
	if len(gaps) == 0 || el <= 0 {
		return HostStalls{}
	}
	slices.Sort(gaps)
	return HostStalls{
		PerSecond: float64(len(gaps)) / el.Seconds(),
		Typical:   gaps[len(gaps)/2],
		Share:     float64(lost) / float64(el),
	}
}

// Quantum is the pause the sampler drops stalled samples by (stalled):
// Typical where the pauses matter (at least 0.5 % of the time), else 0,
// none.
func (h HostStalls) Quantum() time.Duration {
	if h.Share < 0.005 {
		return 0
	}
	return h.Typical
}

// KeptIn reports whether samples of length d keep the host's pauses:
// where they matter (Quantum) and a sample of d catches so many on
// average (PerSample) that fewer than a fifth of the samples are clean
// (pauses arriving at random, e^−n < 1/5 for n > ln 5 ≈ 1.6). The
// cluster stalled then takes for clean has pauses in it (the samples of
// one pause, say, dropping only those of more), and where every sample
// catches several none stands out and none is dropped: the kept samples'
// time includes about Share the thread did not run (TestKeptIn). On the
// Zen 5 guest of HostStalls, 1,400 pauses a second: samples of 1.15 ms or
// more, every --cold one (5 ms).
func (h HostStalls) KeptIn(d time.Duration) bool {
	from := h.KeptFrom()
	return from > 0 && d > from
}

// PerSample is how many pauses a sample of length d catches on average.
func (h HostStalls) PerSample(d time.Duration) float64 { return h.PerSecond * d.Seconds() }

// KeptFrom is the shortest sample that keeps the host's pauses (KeptIn),
// 0 where none does.
func (h HostStalls) KeptFrom() time.Duration {
	if h.Quantum() <= 0 || h.PerSecond <= 0 {
		return 0
	}
	return time.Duration(math.Log(5) / h.PerSecond * float64(time.Second))
}

var (
	hostOnce sync.Once
	host     HostStalls
)

// Host is this host's stalls, probed once per process (for 100 ms, on the
// thread of the first call: Measure's pinned one, unless HostOn came
// first).
func Host() HostStalls {
	hostOnce.Do(func() { host = ProbeStalls(hostProbe) })
	return host
}

// HostOn is Host, probed on a thread pinned to cpu (where it can be) if
// it has not been yet: a caller not on the measuring CPU's thread asks
// for that CPU's pauses so.
func HostOn(cpu int) HostStalls {
	hostOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread() // exits locked: the runtime ends the thread
			PinThread(cpu)         // unpinned where it cannot be: any CPU's pauses
			host = ProbeStalls(hostProbe)
			close(done)
		}()
		<-done
	})
	return host
}

// hostProbe is how long Host probes.
const hostProbe = 100 * time.Millisecond

// String says what the probe saw, for a run's notes.
func (h HostStalls) String() string {
	if h.PerSecond == 0 {
		return fmt.Sprintf("no pauses of %v or more", MinStall)
	}
	return fmt.Sprintf("%.0f pauses a second of %v or more, typically %v (%.1f %% of the time)",
		h.PerSecond, MinStall, h.Typical.Round(time.Microsecond), 100*h.Share)
}

// stalled marks the samples (each a sample's wall time, in any unit) that
// a host pause of about q made longer: those more than q/2 above the
// clean level. The clean level is the median of the lowest cluster that
// holds at least a fifth of the samples within q/4 (the samples from its
// first up to q/2 above it): a pause only adds time, so the clean samples
// are the fast ones, and a cluster of a fifth rules out a few fast
// outliers. It marks none where no such cluster stands out (samples long
// enough to catch several pauses each smear into one spread, as a DRAM
// point's 5 ms samples do; or q is 0), or where the samples do not thin
// out before the cut (fewer in the quarter-pause below it than a tenth of
// the cluster): there the spread is the call's own, not the host's. The
// marks are in the samples' order; n is how many it marked.
func stalled(xs []float64, q float64) (marks []bool, n int) {
	marks = make([]bool, len(xs))
	if q <= 0 || len(xs) == 0 {
		return marks, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	// upTo is how many samples take v or less.
	upTo := func(v float64) int { return sort.Search(len(s), func(i int) bool { return s[i] > v }) }
	need := max(len(s)/5, 1)
	for i, x := range s {
		if upTo(x+q/4)-i < need {
			continue
		}
		clean := s[i:upTo(x+q/2)]
		c := clean[len(clean)/2]
		cut := c + q/2
		// The clean samples must end before the cut: few in its last
		// quarter-pause, else the spread is the call's own (or q too
		// small a pause for it) and none is marked.
		if 10*(upTo(cut)-upTo(c+q/4)) > len(clean) {
			return marks, 0
		}
		for m, v := range xs {
			if v > cut {
				marks[m] = true
				n++
			}
		}
		return marks, n
	}
	return marks, 0
}
