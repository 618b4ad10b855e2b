package sampler

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

type linuxThread struct{}

func currentThread() threadState { return linuxThread{} }

// cpuTime reads CLOCK_THREAD_CPUTIME_ID: the time the calling thread has
// run, up to now (the scheduler's sum_exec_runtime, which leaves out steal
// time where the guest accounts it).
func (linuxThread) cpuTime() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}

// involuntarySwitches reads ru_nivcsw of the calling thread.
func (linuxThread) involuntarySwitches() (int64, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, err
	}
	return int64(ru.Nivcsw), nil
}

// AllowedCPUs lists the CPUs this process may run on.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for i := range 1024 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// PinThread locks the calling goroutine to its OS thread and that thread
// to cpu. There is no unpin: the measuring goroutine exits still locked, so
// the runtime ends the pinned thread instead of reusing it.
func PinThread(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("cannot pin to CPU %d: %w (the CPUs this process may use: taskset -p $$)", cpu, err)
	}
	return nil
}
