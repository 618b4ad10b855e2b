//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
)

// TestMain lets a test run this test binary as ckbench itself, in a child
// process (CKBENCH_AS_MAIN=1: the arguments after -- are ckbench's).
func TestMain(m *testing.M) {
	if os.Getenv("CKBENCH_AS_MAIN") == "1" {
		args := os.Args[1:]
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		os.Exit(run(args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestKillResumeReport kills a real ckbench process with SIGKILL in the
// middle of a sweep: the folder it leaves has its roofline.json (written
// before the first point) and points that agree with each other; report
// accepts it, and --resume measures only the points it lacks, the folder
// ending complete with every point once.
//
// Not under qemu-user (CKBENCH_EMULATED, set by make test-portable): its
// fork of a many-threaded guest can hang before the child's exec, the
// parent then waiting in exec.Cmd.Start until the test binary's timeout
// (twice in about ten qemu-aarch64 runs, Go 1.26). What this test checks
// does not depend on the architecture; make test runs it natively.
func TestKillResumeReport(t *testing.T) {
	if os.Getenv("CKBENCH_EMULATED") != "" {
		t.Skip("under qemu-user emulation (CKBENCH_EMULATED): a forked child can hang before exec; run natively by make test")
	}
	out := t.TempDir()
	dir := filepath.Join(out, "killed")
	roof := filepath.Join(out, "roof.json")
	writeRoofline(t, roof, machine.Describe())
	ctxs := "40,41,42,43,44,45,46,47,48,49,50,51"
	// --force: under `go test -exec qemu-...` this child runs natively, on
	// the real CPU, and the roofline (written by the emulated parent)
	// names the emulated one.
	// --retries 0: every point is written as it is measured (an unstable
	// one is otherwise held back to the end of the run, and on a noisy
	// host the child could finish before its third point is written).
	args := append(tiny(out, "--isa", "generic", "--ctx", ctxs, "--min-time", "30ms", "--run-id", "killed", "--retries", "0"), "--roofline", roof, "--force")
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "CKBENCH_AS_MAIN=1")
	var childErr strings.Builder
	cmd.Stderr = &childErr
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.ENOEXEC) {
			t.Skipf("this test binary cannot run as a child here (%v): an emulated architecture", err)
		}
		t.Fatal(err)
	}
	exited := make(chan struct{})
	// cmd.Wait, not Process.Wait: it also waits for the copy of the
	// child's stderr into childErr, which the failure messages below read
	// (after Process.Wait alone, the race detector caught that copy still
	// writing while a message read it).
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if recs, err := results.ReadPoints(dir); err == nil && len(recs) >= 3 {
			break
		}
		select {
		case <-exited:
			t.Fatalf("the child ended before its third point:\n%s", childErr.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("no 3 points written within 60s; the child said:\n%s", childErr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	meta, err := results.ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := results.ReadPoints(dir)
	if err != nil || meta.Complete || len(recs) >= meta.Planned {
		t.Fatalf("after SIGKILL: complete=%v, %d of %d points, %v", meta.Complete, len(recs), meta.Planned, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "roofline.json")); err != nil {
		t.Errorf("no roofline.json after SIGKILL: %v", err)
	}
	if code, _, stderr := ckbench(t, "report", dir); code != 0 {
		t.Fatalf("report of the killed run: exit %d: %s", code, stderr)
	}
	// The resumed run is a child too: on the machine that measured the
	// folder (under QEMU the parent is another one, and --resume refuses).
	resume := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"},
		append(tiny(out, "--isa", "generic", "--ctx", ctxs, "--min-time", "2ms"), "--resume", dir, "--roofline", roof, "--force")...)...)
	resume.Env = cmd.Env
	if b, err := resume.CombinedOutput(); err != nil || !strings.Contains(string(b), "resuming") {
		t.Fatalf("--resume: %v: %s", err, b)
	}
	meta, _ = results.ReadMeta(dir)
	after, err := results.ReadPoints(dir)
	if err != nil || !meta.Complete || len(after) != meta.Planned {
		t.Fatalf("after --resume: complete=%v, %d of %d points, %v", meta.Complete, len(after), meta.Planned, err)
	}
	seen := map[string]bool{}
	for i := range after {
		n := results.BenchName(&after[i])
		if seen[n] {
			t.Errorf("%s twice", n)
		}
		seen[n] = true
	}
	// The points measured before the kill kept their records.
	for i := range recs {
		if recs[i].Kernel != "kv-read" && !seen[results.BenchName(&recs[i])] {
			t.Errorf("%s lost", results.BenchName(&recs[i]))
		}
	}
	if code, _, stderr := ckbench(t, "report", dir); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
}
