package sampler

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestStalled: samples a pause made longer are marked, and only they;
// where no clean cluster stands out, none are.
func TestStalled(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const q = 40.0 // µs
	// clean samples 388–396 µs; 45 % of them hit by one or two pauses of
	// 35–60 µs; a few fast outliers 20 µs under the clean mode.
	var xs []float64
	var pauses []bool
	for i := range 2000 {
		x := 388 + 8*r.Float64()
		hit := i%20 < 9
		if hit {
			x += 35 + 25*r.Float64()
			if i%7 == 0 {
				x += 40
			}
		}
		if i%100 == 0 {
			x, hit = 370, false
		}
		xs, pauses = append(xs, x), append(pauses, hit)
	}
	marks, n := stalled(xs, q)
	for i := range xs {
		if marks[i] != pauses[i] {
			t.Fatalf("sample %d (%.1f µs, paused %v): marked %v", i, xs[i], pauses[i], marks[i])
		}
	}
	if n != 900-10+1 && n != count(pauses) {
		t.Fatalf("%d marked, %d paused", n, count(pauses))
	}

	// A pause in most samples (a fifth clean, just): still the clean ones.
	xs = xs[:0]
	for i := range 1000 {
		x := 100 + 2*r.Float64()
		if i%5 != 0 {
			x += 45
		}
		xs = append(xs, x)
	}
	if _, n := stalled(xs, q); n != 800 {
		t.Errorf("a fifth clean: %d marked, want 800", n)
	}

	// Long samples that each caught several pauses smear into one spread
	// (a DRAM point's): no cluster of a fifth within q/4, none marked.
	xs = xs[:0]
	for range 200 {
		xs = append(xs, 8000+600*r.Float64())
	}
	if _, n := stalled(xs, q); n != 0 {
		t.Errorf("smeared samples: %d marked", n)
	}
	if _, n := stalled([]float64{1, 100, 1000}, 0); n != 0 {
		t.Errorf("no quantum: %d marked", n)
	}
	if marks, n := stalled(nil, q); n != 0 || len(marks) != 0 {
		t.Errorf("no samples: %v", marks)
	}
}

// TestMeasureDropsStalled: a call that every third time spins 300 µs more
// (a pause the thread's clock counts as running, as a host's does) is
// timed at its clean speed, those samples counted in Stalled and Rejected;
// with Stall below 0 they are kept.
//
// The clean calls are timed on the host too: where its own noise spreads
// them over more than a quarter-pause (stalled then rightly marks none: a
// CI run on 2 busy vCPUs once kept 52 and marked 0), the measurement is
// taken again, up to three times. The synthetic pause is long beside the
// host's own (typically 41 µs on the Zen 5 guest, which pauses 11 % of
// the time), so that a clean call one of those lengthens stays within
// the quarter-pause of the clean ones: with a pause of 60 µs (a quarter,
// 15 µs) all three tries on that host once marked none.
func TestMeasureDropsStalled(t *testing.T) {
	if err := PinThread(0); err != nil {
		t.Logf("not pinned: %v", err)
	}
	spin := func(d time.Duration) {
		for st := time.Now(); time.Since(st) < d; {
		}
	}
	calls := 0
	call := func() {
		calls++
		spin(100 * time.Microsecond)
		if calls%3 == 0 {
			spin(300 * time.Microsecond)
		}
	}
	cfg := Config{MinTime: 30 * time.Millisecond, MinSamples: 20, SampleTime: 50 * time.Microsecond, Stall: 300 * time.Microsecond}
	var st Stats
	for try := range 3 {
		var err error
		calls = 0
		st, err = Measure(context.Background(), cfg, call, nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stalled > 0 || st.CallsPerSample != 1 {
			break
		}
		t.Logf("try %d: stalled 0, rejected %d, kept %d: the clean calls spread (a busy host), again", try+1, st.Rejected, st.Kept)
	}
	if st.CallsPerSample != 1 {
		t.Skipf("%d calls a sample: the host is too slow for this test's 100 µs calls", st.CallsPerSample)
	}
	if st.Stalled == 0 || st.Rejected < st.Stalled || st.Kept < cfg.MinSamples {
		t.Fatalf("stalled %d, rejected %d, kept %d", st.Stalled, st.Rejected, st.Kept)
	}
	// No paused call is kept: they take 400 µs of wall time, and the cut
	// is half the pause (150 µs) above the clean calls' 100. (A clean call
	// that a real host pause lengthened by less than that is kept.)
	if st.Max > 300e3 {
		t.Errorf("kept a sample of %.0f ns: a paused call", st.Max)
	}
	cfg.Stall = -1
	calls = 0
	st, err := Measure(context.Background(), cfg, call, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stalled != 0 {
		t.Errorf("Stall < 0: %d dropped as stalled", st.Stalled)
	}
}

// TestProbeStalls: the probe's figures are consistent, and a quantum is
// given only for pauses that matter.
func TestProbeStalls(t *testing.T) {
	h := ProbeStalls(20 * time.Millisecond)
	if h.PerSecond < 0 || h.Share < 0 || h.Share > 1 || (h.PerSecond == 0) != (h.Typical == 0) {
		t.Fatalf("probe %+v", h)
	}
	if h.PerSecond > 0 && h.Typical < MinStall {
		t.Fatalf("probe %+v: a pause under MinStall", h)
	}
	t.Logf("this host: %.0f pauses a second, typical %v, %.1f %% of the time", h.PerSecond, h.Typical, 100*h.Share)
	for _, c := range []struct {
		h    HostStalls
		want time.Duration
	}{
		{HostStalls{1400, 40 * time.Microsecond, 0.08}, 40 * time.Microsecond},
		{HostStalls{1, 25 * time.Microsecond, 0.00002}, 0},
		{HostStalls{}, 0},
	} {
		if got := c.h.Quantum(); got != c.want {
			t.Errorf("%+v: quantum %v, want %v", c.h, got, c.want)
		}
	}
}

// TestStalledOwnSpread: a call whose own times spread over more than the
// quarter-pause below the cut (or a quantum underestimated beside that
// spread) has nothing marked.
func TestStalledOwnSpread(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var xs []float64
	for range 2000 {
		xs = append(xs, 380+30*r.Float64()) // 380–410 µs, flat
	}
	for _, q := range []float64{14, 40} {
		if _, n := stalled(xs, q); n != 0 {
			t.Errorf("q %v: %d of a call's own spread marked", q, n)
		}
	}
}

// TestKeptIn: samples pauses arrive in at random (1,400 a second of 40
// µs, 5.6 % of the time, as on the Zen 5 guest of HostStalls). Where
// KeptIn is false stalled drops exactly the paused ones; where it is true
// (5 ms, a --cold sample) it drops none, and the samples' median lies
// above the clean time by about the pauses' share.
func TestKeptIn(t *testing.T) {
	h := HostStalls{PerSecond: 1400, Typical: 40 * time.Microsecond, Share: 0.056}
	if got, want := h.KeptFrom(), 1150*time.Microsecond; got < want-10*time.Microsecond || got > want+10*time.Microsecond {
		t.Errorf("KeptFrom %v, want about %v", got, want)
	}
	if (HostStalls{PerSecond: 1400, Typical: 40 * time.Microsecond, Share: 0.001}).KeptIn(time.Second) {
		t.Error("pauses that do not matter (0.1 %) kept in")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		d    time.Duration
		kept bool
	}{{200 * time.Microsecond, false}, {500 * time.Microsecond, false}, {5 * time.Millisecond, true}, {20 * time.Millisecond, true}} {
		if got := h.KeptIn(c.d); got != c.kept {
			t.Errorf("KeptIn(%v) = %v, want %v", c.d, got, c.kept)
		}
		clean := float64(c.d.Microseconds())
		var xs []float64
		var paused []bool
		for range 400 {
			x := clean * (1 + 0.002*r.Float64()) // a call's own jitter
			n := 0
			// Pauses at random: exponential gaps, PerSecond of them.
			for at := r.ExpFloat64() / h.PerSecond * 1e6; at < x; at += r.ExpFloat64() / h.PerSecond * 1e6 {
				n++
			}
			xs = append(xs, x+40*float64(n))
			paused = append(paused, n > 0)
		}
		marks, n := stalled(xs, 40)
		if c.kept {
			if n != 0 {
				t.Errorf("%v: %d samples dropped where KeptIn says none can be", c.d, n)
			}
			s := slices.Clone(xs)
			slices.Sort(s)
			if over := s[len(s)/2]/clean - 1; over < 0.04 || over > 0.075 {
				t.Errorf("%v: median %.1f %% over the clean time, want about the pauses' 5.6 %%", c.d, 100*over)
			}
			continue
		}
		for i := range xs {
			if marks[i] != paused[i] {
				t.Fatalf("%v: sample %d (%.1f µs, paused %v) marked %v", c.d, i, xs[i], paused[i], marks[i])
			}
		}
	}
}
