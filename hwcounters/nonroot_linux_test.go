package hwcounters

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestNonRoot runs the child tests below as an unprivileged user: the
// path most users take, under perf_event_paranoid=2.
func TestNonRoot(t *testing.T) {
	if os.Getenv("HWCOUNTERS_CHILD") != "" {
		t.Skip("in the child")
	}
	needSoftware(t)
	if os.Geteuid() != 0 {
		// Already unprivileged: run the checks right here.
		checkUnprivileged(t)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot find the test binary: %v", err)
	}
	// The go tool's build folder is private to root: copy the binary
	// where the unprivileged user can run it.
	dir, err := os.MkdirTemp("", "hwcounters-nonroot")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "hwcounters.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestUnprivilegedChild$", "-test.v")
	cmd.Env = append(os.Environ(), "HWCOUNTERS_CHILD=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("unprivileged child (uid 65534): %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestUnprivilegedChild") {
		t.Fatalf("the child did not run its checks:\n%s", out)
	}
	t.Logf("child as uid 65534:\n%s", out)
}

func TestUnprivilegedChild(t *testing.T) {
	if os.Getenv("HWCOUNTERS_CHILD") == "" {
		t.Skip("run by TestNonRoot as another user")
	}
	checkUnprivileged(t)
}

// checkUnprivileged: exclude_kernel is set by itself, so the software
// events open; kernel-only events are unavailable rather than 0; and
// asking for kernel counting is refused with ErrPermission under
// paranoid ≥ 2.
func checkUnprivileged(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if Privileged() {
		t.Fatal("running as root")
	}
	c, st := Open(Default())
	defer c.Close()
	for _, s := range st {
		switch {
		case s.Event.Name == "task-clock" || s.Event.Name == "page-faults":
			if s.Err != nil {
				t.Errorf("%s did not open without root: %v", s.Event.Name, s.Err)
			}
		case s.Event.KernelOnly:
			if s.Err == nil || !strings.Contains(s.Err.Error(), "exclude_kernel") {
				t.Errorf("%s: want unavailable because of exclude_kernel, got %v", s.Event.Name, s.Err)
			}
		}
		t.Logf("%-18s %v", s.Event.Name, s.Err)
	}
	if v := count(t, c, func() { sink += spin(5) }); !(v > 0) {
		t.Errorf("task-clock read %v without root", v)
	}
	if p := Paranoid(); p >= 2 {
		_, err := openEvent(mustLookup(t, "task-clock"), -1, false, p)
		if !errors.Is(err, ErrPermission) {
			t.Errorf("kernel counting under paranoid=%d: want ErrPermission, got %v", p, err)
		} else {
			t.Logf("kernel counting refused as expected: %v", err)
		}
	}
}
