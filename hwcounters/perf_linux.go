//go:build linux

package hwcounters

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// group is one perf event group: fds[0] is the leader, read for all into
// buf (sized for the group once it is complete, so Read does not allocate).
type group struct {
	kind Kind
	fds  []int
	buf  []byte
}

const readFormat = unix.PERF_FORMAT_GROUP | unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING

// Privileged reports whether events count kernel mode too. Without root
// exclude_kernel is set on every event: perf_event_paranoid=2 (the common
// default) refuses any event that counts the kernel to other users.
func Privileged() bool { return os.Geteuid() == 0 }

// Paranoid returns /proc/sys/kernel/perf_event_paranoid, or -99.
func Paranoid() int {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return -99
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -99
	}
	return n
}

// Open opens evs on the calling thread, which must stay locked to its OS
// thread (runtime.LockOSThread) for as long as c is read: the counters
// follow that thread only. It returns the status of every event asked for;
// the ones that failed are left out of c. Close c when done.
func Open(evs []Event) (*Counters, []Status) {
	root := Privileged()
	paranoid := Paranoid()
	c := &Counters{}
	st := make([]Status, len(evs))
	open := func(e Event, leader int) (int, error) { return openEvent(e, leader, !root, paranoid) }
	// One group per kind, in kind order, so that a PMU that is missing
	// takes only its own groups with it.
	for kind := Hardware; kind <= Raw; kind++ {
		var cur *group
		for i, e := range evs {
			if e.Kind != kind {
				continue
			}
			st[i].Event = e
			if e.KernelOnly && !root {
				st[i].Err = errKernelOnly(e.Name)
				continue
			}
			leader := -1
			if cur != nil {
				leader = cur.fds[0]
			}
			fd, err := open(e, leader)
			if err != nil && leader != -1 {
				// The group may be full (more events than counters): the
				// event may still open as a group of its own.
				if fd2, err2 := open(e, -1); err2 == nil {
					fd, err, cur = fd2, nil, nil
				}
			}
			if err != nil {
				st[i].Err = err
				continue
			}
			if cur == nil {
				cur = &group{kind: kind}
				c.groups = append(c.groups, cur)
			}
			cur.fds = append(cur.fds, fd)
			c.events = append(c.events, e)
			c.where = append(c.where, slot{len(c.groups) - 1, len(cur.fds) - 1})
		}
	}
	// where was filled kind by kind: put c.events back in the asked order.
	c.reorder(evs)
	for _, g := range c.groups {
		g.buf = make([]byte, 8*(3+len(g.fds)))
	}
	return c, st
}

// openEvent opens e on the calling thread, in leader's group (-1: as a
// new leader).
func openEvent(e Event, leader int, excludeKernel bool, paranoid int) (int, error) {
	attr := unix.PerfEventAttr{
		Type:        e.Type,
		Config:      e.Config,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Read_format: readFormat,
		Bits:        unix.PerfBitExcludeHv,
	}
	if excludeKernel {
		attr.Bits |= unix.PerfBitExcludeKernel
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, leader, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		return -1, &OpenError{Event: e.Name, Errno: errno, Paranoid: paranoid, ExcludeKernel: excludeKernel}
	}
	return fd, nil
}

// reorder sorts events (and their slots) into the order of evs.
func (c *Counters) reorder(evs []Event) {
	pos := make(map[string]int, len(evs))
	for i, e := range evs {
		pos[e.Name] = i
	}
	type pair struct {
		e Event
		s slot
	}
	ps := make([]pair, len(c.events))
	for i := range c.events {
		ps[i] = pair{c.events[i], c.where[i]}
	}
	for i := 1; i < len(ps); i++ { // insertion sort: a dozen events
		for j := i; j > 0 && pos[ps[j].e.Name] < pos[ps[j-1].e.Name]; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	for i, p := range ps {
		c.events[i], c.where[i] = p.e, p.s
	}
}

// Read takes the current cumulative counts of every group into s (from
// c.NewSnapshot), one read(2) per group, without allocating.
func (c *Counters) Read(s Snapshot) error {
	for i, g := range c.groups {
		n, err := unix.Read(g.fds[0], g.buf)
		if err != nil {
			return err
		}
		if err := parseGroupRead(g.buf[:n], &s[i]); err != nil {
			return err
		}
	}
	return nil
}

// Close closes every event.
func (c *Counters) Close() error {
	for _, g := range c.groups {
		for _, fd := range g.fds {
			unix.Close(fd)
		}
	}
	c.groups, c.events, c.where = nil, nil, nil
	return nil
}

// Calibrate opens evs on the calling (locked) thread and counts them over
// iters iterations of loop, and page faults over the first touch of 1024
// fresh pages, beside what each should read where that is known.
func Calibrate(evs []Event, loop Loop, iters int) Calibration {
	c, st := Open(evs)
	defer c.Close()
	cal := Calibration{Loop: loop.Name, Iters: iters, Pages: 1024}
	a, b, during := c.NewSnapshot(), c.NewSnapshot(), c.NewSnapshot()
	loop.Run(iters / 10) // warm up: code, clock
	c.Read(a)
	t0 := time.Now()
	loop.Run(iters)
	cal.Wall = time.Since(t0)
	c.Read(b)
	during.AddDelta(a, b)

	touch := c.NewSnapshot()
	ps := os.Getpagesize()
	if mem, err := unix.Mmap(-1, 0, cal.Pages*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE); err == nil {
		unix.Madvise(mem, unix.MADV_NOHUGEPAGE)
		c.Read(a)
		for i := 0; i < len(mem); i += ps {
			mem[i] = 1
		}
		c.Read(b)
		touch.AddDelta(a, b)
		unix.Munmap(mem)
	}
	idx := map[string]int{}
	for i, e := range c.Events() {
		idx[e.Name] = i
	}
	for _, s := range st {
		row := CalibrationRow{Status: s, Count: math.NaN(), Ratio: math.NaN()}
		row.Expected, row.Work = cal.expectation(s.Event, loop)
		if i, ok := idx[s.Event.Name]; ok {
			snap := during
			if s.Event.Name == "page-faults" {
				snap = touch
			}
			row.Count, row.Ratio = c.Count(snap, i)
		}
		cal.Rows = append(cal.Rows, row)
	}
	return cal
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

// errKernelOnly is the reason a kernel-context software event is withheld
// when exclude_kernel is set: it would read 0 whatever happened.
func errKernelOnly(name string) error {
	return fmt.Errorf("%s: counted only in kernel context, which exclude_kernel (set for non-root) hides: it would always read 0; run as root to count it", name)
}
