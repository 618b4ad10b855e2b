//go:build linux

package sampler

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCPULock: a second lock of a held CPU (another process, or another
// open of the lock file, which flock treats alike) reports who holds it;
// AcquireCPU then picks another free CPU, or waits and gets the CPU once
// it is released.
func TestCPULock(t *testing.T) {
	old := LockDir
	LockDir = t.TempDir()
	t.Cleanup(func() { LockDir = old })
	cpus, _ := AllowedCPUs()
	if len(cpus) > 1 {
		held, err := TryLockCPU(cpus[len(cpus)-1])
		if err != nil {
			t.Fatal(err)
		}
		other, err := AcquireCPU(context.Background(), -1, nil)
		if err != nil || other.CPU() == cpus[len(cpus)-1] {
			t.Fatalf("AcquireCPU with the last CPU held: %v, %v", other, err)
		}
		other.Unlock()
		held.Unlock()
	}
	a, err := TryLockCPU(0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = TryLockCPU(0)
	var busy *ErrCPUBusy
	if !errors.As(err, &busy) || busy.CPU != 0 || busy.Holder == "" {
		t.Fatalf("second lock of a held CPU: %v", err)
	}
	waited := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		a.Unlock()
	}()
	b, err := LockCPU(context.Background(), 0, func(err error) { waited <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Unlock()
	select {
	case err := <-waited:
		if !errors.As(err, &busy) {
			t.Fatalf("told %v", err)
		}
	default:
		t.Fatal("LockCPU got a held CPU without waiting")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := LockCPU(ctx, 0, nil); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("waiting past the context: %v", err)
	}
}
