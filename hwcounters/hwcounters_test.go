package hwcounters

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// openOne opens a single event on the locked calling thread.
func openOne(t *testing.T, name string) (*Counters, Status) {
	t.Helper()
	e, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	c, st := Open([]Event{e})
	t.Cleanup(func() { c.Close() })
	return c, st[0]
}

// needSoftware skips where perf_event_open itself is missing (non-Linux,
// qemu-user): there even software events cannot be counted.
func needSoftware(t *testing.T) {
	t.Helper()
	st := Probe([]Event{mustLookup(t, "task-clock")})
	if errors.Is(st[0].Err, ErrUnsupported) {
		t.Skipf("no software events here: %v", st[0].Err)
	}
	if st[0].Err != nil {
		t.Fatalf("task-clock: %v", st[0].Err)
	}
}

func mustLookup(t *testing.T, name string) Event {
	t.Helper()
	e, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// spin does n units of work the compiler cannot remove.
func spin(n int) uint64 {
	x := uint64(1)
	for i := 0; i < n*1_000_000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

var sink uint64

// count returns what event 0 of c counted during f.
func count(t *testing.T, c *Counters, f func()) float64 {
	t.Helper()
	a, b, acc := c.NewSnapshot(), c.NewSnapshot(), c.NewSnapshot()
	if err := c.Read(a); err != nil {
		t.Fatal(err)
	}
	f()
	if err := c.Read(b); err != nil {
		t.Fatal(err)
	}
	acc.AddDelta(a, b)
	v, ratio := c.Count(acc, 0)
	if ratio != 1 {
		t.Logf("running/enabled = %v", ratio)
	}
	return v
}

func TestTaskClockGrowsWithWork(t *testing.T) {
	needSoftware(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, st := openOne(t, "task-clock")
	if st.Err != nil {
		t.Fatal(st.Err)
	}
	small := count(t, c, func() { sink += spin(5) })
	big := count(t, c, func() { sink += spin(40) })
	if !(small > 0) || !(big > 2*small) {
		t.Fatalf("task-clock: %v ns for 5 units of work, %v ns for 40: it does not grow with work", small, big)
	}
}

// TestHardwareUnsupported checks the no-PMU path where there is no PMU
// (this machine kind): cycles is reported unavailable with ErrUnsupported
// and ENOENT, never opened as a counter reading 0.
func TestHardwareUnsupported(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, st := openOne(t, "cycles")
	if st.Err == nil {
		t.Skip("this machine exposes a PMU: cycles opened, the unsupported path cannot be tested here")
	}
	if !errors.Is(st.Err, ErrUnsupported) {
		t.Skipf("cycles failed otherwise than unsupported: %v", st.Err)
	}
	if len(c.Events()) != 0 {
		t.Fatal("an event that failed to open is among the open events")
	}
	var oe *OpenError
	if !errors.As(st.Err, &oe) || !(errors.Is(st.Err, syscall.ENOENT) || errors.Is(st.Err, syscall.EOPNOTSUPP) || errors.Is(st.Err, syscall.ENOSYS)) {
		t.Fatalf("error %v does not carry its errno", st.Err)
	}
	if !strings.Contains(st.Err.Error(), "cycles") {
		t.Fatalf("error %q does not name the event", st.Err)
	}
}

func TestErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		errno syscall.Errno
		class error
	}{
		{syscall.ENOENT, ErrUnsupported}, {syscall.EOPNOTSUPP, ErrUnsupported}, {syscall.ENOSYS, ErrUnsupported},
		{syscall.EACCES, ErrPermission}, {syscall.EPERM, ErrPermission}, {syscall.EINVAL, ErrInvalid},
	} {
		err := error(&OpenError{Event: "x", Errno: tc.errno, Paranoid: 2})
		if !errors.Is(err, tc.class) || !errors.Is(err, tc.errno) {
			t.Errorf("%v: errors.Is(%v) false", tc.errno, tc.class)
		}
		for _, other := range []error{ErrUnsupported, ErrPermission, ErrInvalid} {
			if other != tc.class && errors.Is(err, other) {
				t.Errorf("%v matches %v too", tc.errno, other)
			}
		}
	}
	perm := (&OpenError{Event: "cycles", Errno: syscall.EACCES, Paranoid: 2}).Error()
	if !strings.Contains(perm, "perf_event_paranoid=2") || !strings.Contains(perm, "sysctl") {
		t.Errorf("permission error does not name the paranoid level and the fix: %s", perm)
	}
}

// groupBuf builds a PERF_FORMAT_GROUP|TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING
// read buffer.
func groupBuf(enabled, running uint64, vals ...uint64) []byte {
	b := make([]byte, 8*(3+len(vals)))
	binary.NativeEndian.PutUint64(b, uint64(len(vals)))
	binary.NativeEndian.PutUint64(b[8:], enabled)
	binary.NativeEndian.PutUint64(b[16:], running)
	for i, v := range vals {
		binary.NativeEndian.PutUint64(b[24+8*i:], v)
	}
	return b
}

func TestScalingMultiplexed(t *testing.T) {
	before := Reading{Values: make([]uint64, 2)}
	after := Reading{Values: make([]uint64, 2)}
	if err := parseGroupRead(groupBuf(1000, 1000, 10, 20), &before); err != nil {
		t.Fatal(err)
	}
	// The group ran 250 of the next 1000 ns: counts are a quarter of the truth.
	if err := parseGroupRead(groupBuf(2000, 1250, 110, 520), &after); err != nil {
		t.Fatal(err)
	}
	var acc Reading
	acc.AddDelta(before, after)
	if got := acc.RunningRatio(); got != 0.25 {
		t.Fatalf("running ratio %v, want 0.25", got)
	}
	if got := acc.Scaled(0); got != 400 {
		t.Fatalf("scaled count %v, want 100×1000/250 = 400", got)
	}
	if got := acc.Scaled(1); got != 2000 {
		t.Fatalf("scaled count %v, want 500×1000/250 = 2000", got)
	}
	never := Reading{Enabled: 1000, Running: 0, Values: []uint64{0}}
	if !math.IsNaN(never.Scaled(0)) {
		t.Fatal("a group that never ran must have no count (NaN), not 0")
	}
	full := Reading{Enabled: 500, Running: 500, Values: []uint64{7}}
	if full.Scaled(0) != 7 || full.RunningRatio() != 1 {
		t.Fatal("an unmultiplexed count must not be scaled")
	}
	if err := parseGroupRead(groupBuf(1, 1, 5), &before); err == nil {
		t.Fatal("a read with the wrong number of values must fail")
	}
	if err := parseGroupRead([]byte{1, 2}, &before); err == nil {
		t.Fatal("a short read must fail")
	}
}

func TestParseList(t *testing.T) {
	if evs, err := ParseList("none"); err != nil || evs != nil {
		t.Fatalf("none: %v %v", evs, err)
	}
	if evs, err := ParseList("default"); err != nil || len(evs) != len(Named()) {
		t.Fatalf("default: %d events, %v", len(evs), err)
	}
	evs, err := ParseList("cycles,r01c2,cycles,task-clock")
	if err != nil || len(evs) != 3 || evs[1].Kind != Raw || evs[1].Config != 0x01c2 || evs[1].Type != typeRaw {
		t.Fatalf("list: %+v %v", evs, err)
	}
	for _, bad := range []string{"cyclez", "rxyz", "r", "cycles,,"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) accepted", bad)
		}
	}
}

// BenchmarkRead is the cost of one snapshot of every default event that
// opens here (the sweep takes two per sample, outside the timed region).
func BenchmarkRead(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, _ := Open(Default())
	defer c.Close()
	if len(c.Events()) == 0 {
		b.Skip("no event opens here")
	}
	s := c.NewSnapshot()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Read(s); err != nil {
			b.Fatal(err)
		}
	}
}
