package hwcounters

import "time"

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
