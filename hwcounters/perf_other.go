//go:build !linux

package hwcounters

import (
	"math"
	"os"
	"syscall"
)

type group struct{ fds []int }

// Privileged reports whether the process runs as root.
func Privileged() bool { return os.Geteuid() == 0 }

// Paranoid is Linux-only: -99 here.
func Paranoid() int { return -99 }

// Open reports every event unsupported: perf_event_open is Linux-only.
func Open(evs []Event) (*Counters, []Status) {
	st := make([]Status, len(evs))
	for i, e := range evs {
		st[i] = Status{Event: e, Err: &OpenError{Event: e.Name, Errno: syscall.ENOSYS, Paranoid: -99}}
	}
	return &Counters{}, st
}

// Read has nothing to read.
func (c *Counters) Read(s Snapshot) error { return nil }

// Close has nothing to close.
func (c *Counters) Close() error { return nil }

// Calibrate reports every event unavailable.
func Calibrate(evs []Event, loop Loop, iters int) Calibration {
	cal := Calibration{Loop: loop.Name, Iters: iters}
	for _, s := range Probe(evs) {
		cal.Rows = append(cal.Rows, CalibrationRow{Status: s, Count: math.NaN(), Expected: math.NaN(), Ratio: math.NaN()})
	}
	return cal
}
