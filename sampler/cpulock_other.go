//go:build !linux

package sampler

// CPULock is a no-op outside Linux, where threads are not pinned either.
type CPULock struct{ cpu int }

// CPU is the CPU asked for.
func (l *CPULock) CPU() int { return l.cpu }

// Unlock does nothing.
func (l *CPULock) Unlock() {}

// TryLockCPU always succeeds outside Linux.
func TryLockCPU(cpu int) (*CPULock, error) { return &CPULock{cpu: cpu}, nil }
