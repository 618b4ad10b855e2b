package sweeps

import (
	"slices"
	"testing"
	"time"

	"github.com/ckbench/ckbench/results"
)

// orderMeter records the calls it sees, in order, into log.
type orderMeter struct{ log *[]string }

func (m orderMeter) Begin()        { *m.log = append(*m.log, "counters begin") }
func (m orderMeter) End(bool, int) { *m.log = append(*m.log, "counters end") }

// TestClockMeter: the probe runs before the counters begin (they never
// count it), a reading is kept only with its sample, and the point's clock
// is the kept readings' median.
func TestClockMeter(t *testing.T) {
	var log []string
	now := time.Unix(0, 0)
	el := []time.Duration{8 * clockRounds / 2, 8 * clockRounds / 4, 8 * clockRounds / 8, 8 * clockRounds / 1} // 2, 4, 8, 1 GHz
	i := 0
	m := &clockMeter{inner: orderMeter{&log},
		chain: func(n int) {
			if n != clockRounds {
				t.Errorf("probe of %d rounds, want %d", n, clockRounds)
			}
			log = append(log, "probe")
			now = now.Add(el[i])
			i++
		},
		now: func() time.Time { return now }}
	for _, kept := range []bool{true, true, true, false} {
		m.Begin()
		m.End(kept, 1)
	}
	if got, want := log[:3], []string{"probe", "counters begin", "counters end"}; !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	if got := clockOf(m); got != 4 {
		t.Errorf("clock %v GHz, want 4 (the median of 2, 4, 8; the dropped sample's 1 left out)", got)
	}
	if got := clockOf(orderMeter{&log}); got.Valid() {
		t.Errorf("a meter without a clock gave %v", got)
	}
	if got := clockOf(&clockMeter{}); got.Valid() {
		t.Errorf("no kept sample gave %v", got)
	}
	var none results.Float = clockOf(nil)
	if none.Valid() {
		t.Errorf("nil meter gave %v", none)
	}
}
