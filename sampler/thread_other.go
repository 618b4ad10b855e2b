//go:build !linux

package sampler

import (
	"errors"
	"runtime"
	"time"
)

type otherThread struct{}

func currentThread() threadState { return otherThread{} }

func (otherThread) cpuTime() (time.Duration, error) {
	return 0, errors.New("per-thread CPU time not available on " + runtime.GOOS)
}

func (otherThread) involuntarySwitches() (int64, error) {
	return 0, errors.New("per-thread context switches not available on " + runtime.GOOS)
}

// AllowedCPUs lists the CPUs this process may run on.
func AllowedCPUs() ([]int, error) {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus, nil
}

// PinThread locks the goroutine to its thread; CPU affinity is Linux-only,
// so it returns ErrNoAffinity (the thread stays locked: measure anyway).
func PinThread(int) error {
	runtime.LockOSThread()
	return ErrNoAffinity
}
