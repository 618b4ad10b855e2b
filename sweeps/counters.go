package sweeps

import (
	"fmt"
	"math"
	"runtime"
	"strings"

	"github.com/ckbench/ckbench/hwcounters"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
	"github.com/ckbench/ckbench/sampler"
)

// counterMeter reads the counter groups around every sample (it is the
// sampler's Meter) and sums what the kept samples counted. Its reads
// happen outside the timed region of a sample.
type counterMeter struct {
	c                  *hwcounters.Counters
	before, after, acc hwcounters.Snapshot
	calls              int
	failed             error
}

// openCounters opens evs on the calling thread (the runner's pinned one);
// nil when none opened. The events that did not open stay missing in the
// records: machine.json holds the reasons (machine.DescribeCounters).
func openCounters(evs []hwcounters.Event) *counterMeter {
	if len(evs) == 0 {
		return nil
	}
	c, _ := hwcounters.Open(evs)
	if len(c.Events()) == 0 {
		c.Close()
		return nil
	}
	return &counterMeter{c: c, before: c.NewSnapshot(), after: c.NewSnapshot(), acc: c.NewSnapshot()}
}

func (m *counterMeter) Begin() {
	if err := m.c.Read(m.before); err != nil {
		m.failed = err
	}
}

func (m *counterMeter) End(kept bool, calls int) {
	if !kept || m.failed != nil {
		return
	}
	if err := m.c.Read(m.after); err != nil {
		m.failed = err
		return
	}
	m.acc.AddDelta(m.before, m.after)
	m.calls += calls
}

// reset starts a new point.
func (m *counterMeter) reset() {
	m.acc.Reset()
	m.calls, m.failed = 0, nil
}

// fill writes the per-call counts of the kept samples into rec, and the
// metrics derived from them.
func (m *counterMeter) fill(rec *results.Record) {
	if m.calls == 0 || m.failed != nil {
		return
	}
	var raw []string
	for i, e := range m.c.Events() {
		v, _ := m.c.Count(m.acc, i)
		if math.IsNaN(v) {
			continue // its group never ran: no count, not 0
		}
		v /= float64(m.calls)
		if !rec.SetCounter(e.Name, v) {
			raw = append(raw, fmt.Sprintf("%s=%.6g", e.Name, v))
		}
	}
	rec.RawCounts = strings.Join(raw, " ")
	if r := m.c.MinRunningRatio(m.acc); !math.IsNaN(r) {
		rec.CountersRunningPct = results.Float(100 * r)
	}
	derive(rec)
}

// derive fills the metrics whose inputs are present; the others stay
// missing (Float arithmetic carries NaN through).
func derive(r *results.Record) {
	r.IPC = r.Instructions / r.Cycles
	r.GHz = r.Cycles / r.TaskClockNs
	r.BytesPerCycle = r.Bytes / r.Cycles
	r.FlopsPerCycle = r.Flops / r.Cycles
	r.LLCMissPct = 100 * r.LLCReadMisses / r.LLCReads
}

// CalibrateCounters opens evs on a thread pinned to the last CPU this
// process may use and reads them around rounds of a loop of known cost:
// roofline's chain of dependent adds (8 cycles, 10 instructions a round on
// x86-64), or a plain Go loop where that is not built (expected counts
// unknown), and the first touch of fresh pages (see hwcounters.Calibrate).
func CalibrateCounters(evs []hwcounters.Event, rounds int) hwcounters.Calibration {
	loop := hwcounters.Loop{Name: "add chain", InstrPerIter: 10, CyclesPerIter: 8,
		Run: func(n int) { roofline.ClockChain(n) }}
	if _, ok := roofline.ClockChain(1); !ok {
		loop = hwcounters.Loop{Name: "Go loop", Run: goLoop}
	}
	var cal hwcounters.Calibration
	done := make(chan struct{})
	go func() {
		// Exits locked: the runtime ends the pinned thread.
		defer close(done)
		runtime.LockOSThread() // counters follow this thread
		if cpus, err := sampler.AllowedCPUs(); err == nil && len(cpus) > 0 {
			sampler.PinThread(cpus[len(cpus)-1])
		}
		cal = hwcounters.Calibrate(evs, loop, rounds)
	}()
	<-done
	return cal
}

//lint:ignore U1000 written, never read: it keeps the loop's result observable, so the compiler cannot drop the loop
var goLoopSink int

// goLoop is the fallback work where the asm chain is not built.
func goLoop(n int) {
	x := 0
	for i := 0; i < n; i++ {
		x = x*3 + i
	}
	goLoopSink += x
}
