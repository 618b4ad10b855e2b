package hwcounters

import (
	"math"
	"time"
)

// Loop is a calibrated piece of work: Run(n) does n iterations of a loop
// whose instructions and cycles per iteration are known (0: unknown).
type Loop struct {
	Name          string
	Run           func(n int)
	InstrPerIter  float64
	CyclesPerIter float64
}

// Reading of one event in a calibration.
type CalibrationRow struct {
	Status
	Count    float64 // during the loop (page-faults: during the page touch)
	Expected float64 // what the loop should give (NaN: no expectation)
	Ratio    float64 // running/enabled of its group
	Work     string  // what was counted
}

// Calibration is the result of Calibrate.
type Calibration struct {
	Loop  string
	Iters int
	Wall  time.Duration
	Pages int
	Rows  []CalibrationRow
}

// expectation is what event e should read for the calibration work.
func (cal *Calibration) expectation(e Event, loop Loop) (float64, string) {
	n := float64(cal.Iters)
	switch e.Name {
	case "instructions":
		if loop.InstrPerIter > 0 {
			return loop.InstrPerIter * n, "loop"
		}
	case "cycles":
		if loop.CyclesPerIter > 0 {
			return loop.CyclesPerIter * n, "loop"
		}
	case "task-clock":
		return float64(cal.Wall.Nanoseconds()), "loop (ns; expected = wall time)"
	case "page-faults":
		return float64(cal.Pages), "first touch of fresh pages"
	case "context-switches", "cpu-migrations":
		return 0, "loop (0 on a quiet, pinned thread)"
	}
	return math.NaN(), "loop"
}
