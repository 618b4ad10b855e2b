//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ckbench/ckbench/results"
)

// TestInterrupt sends SIGINT in the middle of a sweep: the current point
// finishes, the folder stays valid and says complete=false, exit is 130.
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
