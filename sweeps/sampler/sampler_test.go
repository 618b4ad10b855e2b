package sampler

import (
	"context"
	"errors"
	"math"
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
	// Each kept sample lasted ≥ SampleTime: calls per sample × ns per call.
	if st.Median*float64(st.CallsPerSample) < 0.5*float64(cfg.SampleTime) {
		t.Fatalf("samples too short: %v ns × %d calls", st.Median, st.CallsPerSample)
	}
	if _, err := Measure(cancelled(), cfg, func() {}, nil); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("cancelled Measure: %v", err)
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
