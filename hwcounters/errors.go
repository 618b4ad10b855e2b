package hwcounters

import (
	"errors"
	"fmt"
	"syscall"
)

// The classes of failure of opening an event. An *OpenError matches one
// of them with errors.Is, and its errno too.
var (
	// ErrUnsupported: the machine has no such event (no PMU in this VM or
	// container, an event this CPU lacks, no perf_event_open at all).
	ErrUnsupported = errors.New("not supported here")
	// ErrPermission: the kernel refused (perf_event_paranoid, seccomp).
	ErrPermission = errors.New("permission denied")
	// ErrInvalid: the kernel rejected the attributes (a raw event code
	// this CPU does not know, a group that cannot be scheduled).
	ErrInvalid = errors.New("invalid event")
)

// OpenError says why one event could not be opened.
type OpenError struct {
	Event         string
	Errno         syscall.Errno
	Paranoid      int  // /proc/sys/kernel/perf_event_paranoid, -99 if unreadable
	ExcludeKernel bool // the event was asked for user mode only (not root)
}

func (e *OpenError) class() error {
	switch e.Errno {
	case syscall.ENOENT, syscall.EOPNOTSUPP, syscall.ENODEV, syscall.ENOSYS:
		return ErrUnsupported
	case syscall.EACCES, syscall.EPERM:
		return ErrPermission
	case syscall.EINVAL:
		return ErrInvalid
	}
	return nil
}

// Unwrap lets errors.Is match both the class and the errno.
func (e *OpenError) Unwrap() []error {
	if c := e.class(); c != nil {
		return []error{c, e.Errno}
	}
	return []error{e.Errno}
}

func (e *OpenError) Error() string {
	var why string
	switch e.class() {
	case ErrUnsupported:
		why = "not supported here (no PMU exposed, as in most VMs and containers, or not on this CPU)"
		if e.Errno == syscall.ENOSYS {
			why = "perf_event_open is not available (no kernel support, or an emulator)"
		}
	case ErrPermission:
		why = fmt.Sprintf("permission denied by perf_event_paranoid=%d; run as root, or lower it: sudo sysctl kernel.perf_event_paranoid=1 (or grant CAP_PERFMON)", e.Paranoid)
		if e.Paranoid == -99 {
			why = "permission denied (perf_event_paranoid unreadable; a seccomp filter, as in containers, may block perf_event_open)"
		}
	case ErrInvalid:
		why = "rejected by the kernel as invalid (an event code this CPU does not have, or more events than its counters)"
	default:
		why = "cannot be opened"
	}
	return fmt.Sprintf("%s: %s [%s]", e.Event, why, errnoName(e.Errno))
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EOPNOTSUPP:
		return "EOPNOTSUPP"
	case syscall.ENODEV:
		return "ENODEV"
	case syscall.ENOSYS:
		return "ENOSYS"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EINVAL:
		return "EINVAL"
	}
	return e.Error()
}
