package sampler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"testing"
	"time"
)

func TestStats(t *testing.T) {
	s := Stats{Samples: []float64{10, 12, 11, 13, 100}}
	s.summarize()
	if s.Median != 12 || s.Min != 10 || s.Max != 100 || s.MAD != 1 || s.Kept != 5 {
		t.Fatalf("stats %+v", s)
	}
	if math.Abs(s.MADPct()-100.0/12) > 1e-9 || s.CV <= 0 {
		t.Fatalf("spread %v %v", s.MADPct(), s.CV)
	}
	var empty Stats
	empty.summarize()
	if !math.IsNaN(empty.Median) {
		t.Fatal("no samples must give NaN, not 0")
	}
}

func TestMeasure(t *testing.T) {
	if err := PinThread(0); err != nil {
		t.Logf("not pinned: %v", err)
	}
	calls := 0
	cfg := Config{MinTime: 5 * time.Millisecond, MinSamples: 10, SampleTime: 20 * time.Microsecond}
	st, err := Measure(context.Background(), cfg, func() {
		calls++
		time.Sleep(0) // a few ns of work
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kept < 10 || st.CallsPerSample < 1 || !(st.Median > 0) || st.Min > st.Median {
		t.Fatalf("stats %+v", st)
	}
	// How long the samples last is calibrate's promise, tested on a
	// synthetic clock in TestCalibrate: here the host's clock decides (under
	// -race on a busy 2-vCPU CI host, calibration's fastest of three ran at
	// 45 ns a call and the samples after it at 16), so it is not judged.
	if _, err := Measure(cancelled(), cfg, func() {}, nil); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("cancelled Measure: %v", err)
	}
}

// TestCalibrate runs calibrate on a synthetic clock (a call costs perCall,
// and one try in three is slowed by an interrupt): it returns a multiple
// of CallsMultiple whose fastest try lasts at least SampleTime, not one
// inflated by the slow tries, and the time it reports is that try's.
func TestCalibrate(t *testing.T) {
	for _, tc := range []struct {
		perCall, sampleTime time.Duration
		multiple            int
	}{
		{7 * time.Nanosecond, 20 * time.Microsecond, 1},
		{16 * time.Nanosecond, 20 * time.Microsecond, 1},
		{3 * time.Microsecond, 20 * time.Microsecond, 4},
		{40 * time.Microsecond, 20 * time.Microsecond, 2}, // one multiple is enough
		{0, 20 * time.Microsecond, 1},                     // too fast to time at first
	} {
		// clean is n calls' time on the synthetic clock, undisturbed.
		clean := func(n int) time.Duration {
			if tc.perCall == 0 {
				return time.Duration(n/1000) * time.Nanosecond // 0 until n ≥ 1000
			}
			return time.Duration(n) * tc.perCall
		}
		tries := 0
		round := func(n int, metered bool) sampleRun {
			tries++
			el := clean(n)
			if tries%3 == 1 {
				el = 5*el + 50*time.Microsecond // interrupted
			}
			return sampleRun{el: el}
		}
		cfg := Config{SampleTime: tc.sampleTime, CallsMultiple: tc.multiple}
		n, el := calibrate(cfg, round)
		fastest := clean(n)
		if n%tc.multiple != 0 || el != fastest || el < tc.sampleTime {
			t.Errorf("%v a call, multiple %d: %d calls taking %v (fastest %v); want a multiple lasting ≥ %v",
				tc.perCall, tc.multiple, n, el, fastest, tc.sampleTime)
		}
		// Not inflated: fewer calls than 1.5× the fewest would do.
		if tc.perCall > 0 {
			need := max(int((tc.sampleTime+tc.perCall-1)/tc.perCall), tc.multiple)
			if float64(n) > 1.5*float64(need)+float64(tc.multiple) {
				t.Errorf("%v a call: %d calls where %d last %v", tc.perCall, n, need, tc.sampleTime)
			}
		}
	}
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestMeasureParallel(t *testing.T) {
	cpus, err := AllowedCPUs()
	if err != nil {
		t.Skip(err)
	}
	calls := make([]int, len(cpus))
	cfg := Config{MinTime: 5 * time.Millisecond, MinSamples: 5, SampleTime: 50 * time.Microsecond}
	st, err := MeasureParallel(cfg, cpus, func(w int) {
		calls[w]++
		time.Sleep(0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Kept < 5 && st.Rejected > 0 {
		// Every CPU busy (go test runs packages in parallel; qemu): the
		// workers were off their CPUs, and rejecting is the right answer.
		t.Skipf("machine too busy to keep samples on every CPU: %d kept, %d rejected", st.Kept, st.Rejected)
	}
	if st.Kept < 5 || !(st.Median > 0) {
		t.Fatalf("stats %+v", st)
	}
	for w, c := range calls {
		if c == 0 {
			t.Fatalf("worker %d never ran", w)
		}
	}
}

func TestStealTime(t *testing.T) {
	cpus, err := AllowedCPUs()
	if err != nil {
		t.Skip(err)
	}
	d0, ok := StealTime(cpus)
	if !ok {
		t.Skip("no steal column in /proc/stat here")
	}
	if d1, _ := StealTime(cpus); d0 < 0 || d1 < d0 {
		t.Fatalf("steal went from %v to %v", d0, d1)
	}
}

// TestPreemptedSamplesRejected provokes real preemption: a spinning thread
// pinned to the measuring CPU takes turns with the measured one, so many
// samples span a time slice of the hog. None of those may be kept however
// long they are, and no kept sample may be far longer than the work alone
// (a hog's slice is milliseconds against a 200 µs sample).
func TestPreemptedSamplesRejected(t *testing.T) {
	if testing.Short() {
		t.Skip("spins a hog thread for a second")
	}
	cpus, err := AllowedCPUs()
	if err != nil || len(cpus) == 0 {
		t.Skip("no CPU affinity here")
	}
	if _, err := currentThread().cpuTime(); err != nil {
		t.Skip(err)
	}
	cpu := cpus[len(cpus)-1]
	type result struct {
		st  Stats
		err error
	}
	// measure times the same work on cpu, from a pinned thread.
	measure := func(minTime time.Duration) result {
		done := make(chan result)
		go func() {
			if err := PinThread(cpu); err != nil {
				done <- result{err: err}
				return
			}
			cfg := Config{MinTime: minTime, MinSamples: 50, MaxTime: 2 * time.Second}
			st, err := Measure(context.Background(), cfg, func() {
				for i := 0; i < 2000; i++ {
					spinWork += float64(i) * 1.0000001
				}
			}, nil)
			done <- result{st, err}
		}()
		return <-done
	}
	// startHog pins a spinning thread to cpu; the returned func stops it
	// and waits until it has stopped, so that no two hogs ever spin at
	// once (the race detector caught one run's hog still writing a
	// counter it shared with the next run's). Each hog counts its own
	// spins and hands them back as it exits, which keeps the loop live.
	startHog := func() func() {
		stop := make(chan struct{})
		ready := make(chan error)
		exited := make(chan int)
		go func() {
			spins := 0
			defer func() { exited <- spins }()
			err := PinThread(cpu)
			ready <- err
			if err != nil {
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
					for i := 0; i < 1e5; i++ {
						spins++
					}
				}
			}
		}()
		if err := <-ready; err != nil {
			<-exited
			t.Skip(err)
		}
		return func() {
			close(stop)
			<-exited
		}
	}

	// A leak is systematic: it shows in every run. A busy host or an
	// emulator can widen one run's spread by chance, or keep one slow
	// sample (qemu once a 22× one with 45 µs off the CPU: the hypervisor
	// had stolen the whole VM, which the thread's CPU clock counts as
	// running), so the spread and the outlier bounds must fail three runs
	// in a row before the test does; the other checks hold for every run.
	//
	// Each run first measures the work alone, then with the hog, back to
	// back: the host's own noise is judged in the same moment as the
	// hogged run. (CI once measured the work alone at 1.8 % MAD while
	// idle, then, under qemu with the other packages' tests taking the
	// other core, kept 10–16 % in three hogged runs whose samples had no
	// time off the CPU at all: the host, not preemption.)
	var spreads []string
	for attempt := 1; ; attempt++ {
		base := measure(100 * time.Millisecond)
		if base.err != nil {
			t.Fatal(base.err)
		}
		stopHog := startHog()
		r := measure(300 * time.Millisecond)
		stopHog()
		if r.err != nil {
			t.Fatal(r.err)
		}
		st := r.st
		t.Logf("run %d: alone MAD %.2f %%; with the hog kept %d, rejected %d, tolerated %d, median %.0f ns, max %.0f ns, MAD %.2f %%, largest off-CPU kept %v",
			attempt, base.st.MADPct(), st.Kept, st.Rejected, st.Tolerated, st.Median, st.Max, st.MADPct(), st.OffCPU)
		if st.Rejected == 0 {
			t.Fatalf("a hog on the same CPU preempted no sample: the sampler cannot see preemption")
		}
		if st.Kept < 10 {
			t.Fatalf("only %d samples kept", st.Kept)
		}
		limit := Config{}.OffCPULimit(time.Duration(st.Max * float64(st.CallsPerSample)))
		if st.OffCPU > limit {
			t.Fatalf("a kept sample was %v off the CPU, above the limit %v", st.OffCPU, limit)
		}
		// A sample that kept a hog's time slice (≥ 3 ms against a 200 µs
		// sample) is ≥ 15× the median of the work alone; under an emulator
		// (qemu, make test-portable) translated code makes an honest
		// sample up to ~1.5×. A shorter leak (the switch pair without the
		// slice) is bounded by the off-CPU limit checked above. The spread
		// (MAD) is logged, not judged: with qemu and the other packages'
		// tests on the other core, CI kept 10–16 % in three hogged runs
		// whose samples had spent no time at all off the CPU (the work
		// also ran faster then, at 38 µs a call against ~57 µs alone: a
		// leak can only make a sample longer).
		slow := 0
		for _, v := range st.Samples {
			if v > 3*base.st.Median {
				slow++
			}
		}
		if slow == 0 {
			return
		}
		spreads = append(spreads, fmt.Sprintf("%d kept samples above 3× the median alone (%.0f ns), the longest %.1f×", slow, base.st.Median, st.Max/base.st.Median))
		// Under qemu-user (CKBENCH_EMULATED, make test-portable) this
		// bound is reported, not judged: the emulator lengthens samples
		// with work of its own that the thread's clock counts as running
		// (on an Intel Xeon, family 6 model 207, 5 of 6 tries failed it in
		// all three runs: 1–175 kept samples at 10–16× the work alone,
		// each at most 16 µs off the CPU, a hog's slice being ms, while
		// the checks above held). Natively (make test) it is judged.
		if attempt == 3 && os.Getenv("CKBENCH_EMULATED") != "" {
			t.Logf("under emulation (CKBENCH_EMULATED), not judged: %v", spreads)
			return
		}
		if attempt == 3 {
			t.Fatalf("in three runs with the hog, kept samples were far longer than the work alone (%v): preemption leaked into them", spreads)
		}
	}
}

var spinWork float64

// TestMeasurePaired: the call's and the reference's samples come in
// pairs, kept or dropped together, and every sample of the call (the
// meter's Begin marks it) comes right after a sample of the reference.
func TestMeasurePaired(t *testing.T) {
	last := ""
	call := func() { last = "call"; spin(4000) }
	ref := func() { last = "ref"; spin(2000) }
	m := &orderMeter{last: &last}
	cfg := Config{MinTime: 20 * time.Millisecond, MinSamples: 20, SampleTime: 20 * time.Microsecond}
	st, rs, err := MeasurePaired(context.Background(), cfg, call, ref, m)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kept < 20 || rs.Kept != st.Kept || len(rs.Samples) != len(st.Samples) || rs.Rejected != st.Rejected {
		t.Fatalf("kept %d call samples and %d reference samples", st.Kept, rs.Kept)
	}
	if m.samples != st.Kept+st.Rejected || m.unpaired > 0 {
		t.Fatalf("%d metered samples (%d kept + %d rejected), %d of them not right after a reference sample", m.samples, st.Kept, st.Rejected, m.unpaired)
	}
	ratios := make([]float64, len(st.Samples))
	for i := range st.Samples {
		ratios[i] = st.Samples[i] / rs.Samples[i]
	}
	r := Summarize(ratios)
	t.Logf("call MAD %.1f %%, reference MAD %.1f %%, time ratio %.2f (MAD %.1f %%)", st.MADPct(), rs.MADPct(), r.Median, r.MADPct())
	// Without a reference it is Measure.
	if st, rs, err := MeasurePaired(context.Background(), cfg, call, nil, nil); err != nil || st.Kept < 20 || rs.Kept != 0 {
		t.Fatalf("unpaired: %d kept, reference %d, %v", st.Kept, rs.Kept, err)
	}
}

type orderMeter struct {
	last              *string
	samples, unpaired int
}

func (m *orderMeter) Begin() {
	m.samples++
	if *m.last != "ref" {
		m.unpaired++
	}
}

func (m *orderMeter) End(bool, int) {}

func spin(n int) {
	x := 0
	for i := range n {
		x += i
	}
	sink = x
}

var sink int

// TestCallsMultiple: with CallsMultiple k, every sample of call and of its
// reference runs a multiple of k calls, so a rotation through k copies
// gives each sample every copy alike, and the two are not locked to
// different copies (k = 2, one call each, would give call one copy and
// the reference the other every sample).
func TestCallsMultiple(t *testing.T) {
	const k = 3
	next, seen := 0, [2][k]int{} // a shared rotation: call is seen[0], ref seen[1]
	call := func() { seen[0][next]++; next = (next + 1) % k; spin(3000) }
	ref := func() { seen[1][next]++; next = (next + 1) % k; spin(1000) }
	cfg := Config{MinTime: 10 * time.Millisecond, MinSamples: 10, SampleTime: 1 * time.Microsecond, CallsMultiple: k}
	st, rs, err := MeasurePaired(context.Background(), cfg, call, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.CallsPerSample%k != 0 || rs.CallsPerSample%k != 0 {
		t.Fatalf("calls per sample %d and %d: not multiples of %d", st.CallsPerSample, rs.CallsPerSample, k)
	}
	for w, s := range seen {
		for c := 1; c < k; c++ {
			if s[c] != s[0] {
				t.Fatalf("copies taken unevenly by %s: %v", []string{"call", "reference"}[w], s)
			}
		}
	}
}
