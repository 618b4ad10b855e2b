package sampler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LockDir holds one lock file per CPU, ckbench-cpu<N>.lock, shared by
// every user of the machine (a fixed path, not $TMPDIR, so that two users'
// runs see each other).
var LockDir = "/tmp"

// CPULock is an advisory lock (flock) on one CPU, held while a measuring
// thread is pinned to it. The kernel drops it when the process exits,
// however it exits.
type CPULock struct {
	cpu int
	f   *os.File
}

// CPU is the locked CPU.
func (l *CPULock) CPU() int { return l.cpu }

// Unlock releases the CPU.
func (l *CPULock) Unlock() {
	if l != nil && l.f != nil {
		unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
		l.f.Close()
		l.f = nil
	}
}

// TryLockCPU takes the lock of cpu without waiting; *ErrCPUBusy when
// another process holds it.
func TryLockCPU(cpu int) (*CPULock, error) {
	path := filepath.Join(LockDir, fmt.Sprintf("ckbench-cpu%d.lock", cpu))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("cannot open the CPU lock %s: %w", path, err)
	}
	os.Chmod(path, 0o666) // the umask must not keep other users out
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			h := strings.TrimSpace(string(holder))
			if h == "" {
				h = "unknown"
			}
			return nil, &ErrCPUBusy{CPU: cpu, Holder: h}
		}
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "pid %d (%s)\n", os.Getpid(), strings.Join(os.Args, " "))
	return &CPULock{cpu: cpu, f: f}, nil
}
