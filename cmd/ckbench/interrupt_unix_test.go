//go:build unix

package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ckbench/ckbench/results"
)

// TestInterrupt sends SIGINT in the middle of a sweep: it stops after the
// sample in progress, the folder stays valid and says complete=false, exit
// is 130.
func TestInterrupt(t *testing.T) {
	out := t.TempDir()
	// --retries 0: points are written as they are measured (see
	// TestKillResumeReport).
	args := tiny(out, "--isa", "generic", "--ctx", "40,41,42,43,44,45,46,47", "--min-time", "20ms", "--run-id", "int", "--retries", "0")
	done := make(chan int, 1)
	go func() {
		code, _, _ := ckbench(t, args...)
		done <- code
	}()
	dir := filepath.Join(out, "int")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if recs, err := results.ReadPoints(dir); err == nil && len(recs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no point written within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := <-done
	meta, err := results.ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := results.ReadPoints(dir)
	if code != exitInterrupted || meta.Complete || err != nil || len(recs) == 0 || len(recs) >= meta.Planned || meta.Points != len(recs) {
		t.Fatalf("exit %d, complete=%v, %d of %d points, %v", code, meta.Complete, len(recs), meta.Planned, err)
	}
}

// TestTerminate: SIGTERM (what Slurm's scancel and time limit, and
// Kubernetes, send) stops a roofline as Ctrl-C does: exit 130, nothing
// written, not a process killed mid-write.
func TestTerminate(t *testing.T) {
	// The test process keeps SIGTERM from its default action (death)
	// even before ckbench's handler is installed, and after the command
	// returns (a signal sent just before is not lost on it): the signal
	// is sent until the command returns.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM)
	out := t.TempDir()
	done := make(chan int, 1)
	go func() {
		code, _, _ := ckbench(t, "roofline", "--quick", "--out", out, "--run-id", "term")
		done <- code
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case code := <-done:
			if code != exitInterrupted {
				t.Fatalf("roofline under SIGTERM: exit %d, want %d", code, exitInterrupted)
			}
			if _, err := os.Stat(filepath.Join(out, "term")); !os.IsNotExist(err) {
				t.Fatalf("an interrupted roofline left its folder: %v", err)
			}
			return
		case <-tick.C:
			if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
}
