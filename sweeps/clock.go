package sweeps

import (
	"time"

	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
	"github.com/ckbench/ckbench/sampler"
)

// clockRounds is the probe's length: 8 adds a round, 16 Ki cycles (about
// 5 µs at 3.4 GHz), so that the clock reads around it (tens of ns) bias
// it by under 1 % and a 200 µs sample waits 2–3 % longer for it.
const clockRounds = 1 << 11

// clockMeter is the sampler's Meter that reads the core clock beside a
// point's samples (results.Record.ClockGHz): before every sample it times
// roofline.ClockChain, then hands on to the counters (inner, or nil), so
// they never count the probe; End keeps the reading of a kept sample.
type clockMeter struct {
	inner sampler.Meter
	ghz   float64   // the reading before the current sample
	kept  []float64 // those of the kept samples
	// chain runs the probe (roofline.ClockChain's rounds; a test's fake)
	// and now is the clock it is timed with.
	chain func(rounds int)
	now   func() time.Time
}

// newClockMeter returns a clockMeter around inner, or inner itself where
// this build has no add chain.
func newClockMeter(inner sampler.Meter) sampler.Meter {
	if _, ok := roofline.ClockChain(1); !ok {
		return inner
	}
	return &clockMeter{inner: inner, chain: func(n int) { roofline.ClockChain(n) }, now: time.Now}
}

func (m *clockMeter) Begin() {
	t0 := m.now()
	m.chain(clockRounds)
	m.ghz = 0 // no reading where the clock did not advance
	if el := m.now().Sub(t0); el > 0 {
		m.ghz = 8 * clockRounds / float64(el.Nanoseconds())
	}
	if m.inner != nil {
		m.inner.Begin()
	}
}

func (m *clockMeter) End(kept bool, calls int) {
	if m.inner != nil {
		m.inner.End(kept, calls)
	}
	if kept && m.ghz > 0 {
		m.kept = append(m.kept, m.ghz)
	}
}

// clockOf is m's median reading over the kept samples: missing for a
// meter that is not a clockMeter or kept none.
func clockOf(m sampler.Meter) results.Float {
	if c, ok := m.(*clockMeter); ok && len(c.kept) > 0 {
		return results.Float(sampler.Summarize(c.kept).Median)
	}
	return results.Missing()
}
