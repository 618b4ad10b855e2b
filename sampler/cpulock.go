package sampler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrCPUBusy is returned by TryLockCPU when another process (another
// ckbench) holds the CPU's lock.
type ErrCPUBusy struct {
	CPU    int
	Holder string // what the holder wrote into the lock: "pid 1234 (ckbench sweep ...)"
}

func (e *ErrCPUBusy) Error() string {
	return fmt.Sprintf("CPU %d is being measured on by another process (%s)", e.CPU, e.Holder)
}

// LockCPU takes the lock of cpu, waiting while another process holds it
// (notify is told once, with the ErrCPUBusy, when it has to wait). Two
// measurements pinned to one CPU would each take half of it and both
// report times twice too long; the lock makes the second wait instead.
// It returns ErrInterrupted when ctx ends first.
func LockCPU(ctx context.Context, cpu int, notify func(error)) (*CPULock, error) {
	told := false
	for {
		l, err := TryLockCPU(cpu)
		var busy *ErrCPUBusy
		if !errors.As(err, &busy) {
			return l, err
		}
		if !told && notify != nil {
			notify(busy)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ErrInterrupted
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// LockCPUs locks every CPU of cpus, in ascending order (so that processes
// locking sets never wait on each other in a cycle), waiting as LockCPU.
func LockCPUs(ctx context.Context, cpus []int, notify func(error)) (unlock func(), err error) {
	var held []*CPULock
	unlock = func() {
		for _, l := range held {
			l.Unlock()
		}
	}
	for _, c := range slices.Sorted(slices.Values(cpus)) {
		l, err := LockCPU(ctx, c, notify)
		if err != nil {
			unlock()
			return func() {}, err
		}
		held = append(held, l)
	}
	return unlock, nil
}

// AcquireCPU picks the CPU to measure on and locks it. want ≥ 0 is that
// CPU (waiting for it if busy); want < 0 is the last CPU of SpreadCPUs
// (a physical core's first CPU, high-numbered: CPU 0 tends to take the
// housekeeping interrupts) that no other process holds, or, when every one
// is held, that last CPU once it is free.
func AcquireCPU(ctx context.Context, want int, notify func(error)) (*CPULock, error) {
	if want >= 0 {
		return LockCPU(ctx, want, notify)
	}
	cpus, err := SpreadCPUs()
	if err != nil || len(cpus) == 0 {
		return nil, fmt.Errorf("cannot read CPU affinity: %v", err)
	}
	for i := len(cpus) - 1; i >= 0; i-- {
		l, err := TryLockCPU(cpus[i])
		var busy *ErrCPUBusy
		if errors.As(err, &busy) {
			continue
		}
		return l, err
	}
	return LockCPU(ctx, cpus[len(cpus)-1], notify)
}
