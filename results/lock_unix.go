//go:build unix

package results

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dirLocks says whether lockDir locks here.
const dirLocks = true

// lockDir takes an exclusive advisory lock (flock) on the run folder dir,
// held until release: one process at a time writes a run folder. The
// kernel drops it when the process dies, so a killed sweep's folder can be
// resumed at once. A file system without flock is written unlocked.
func lockDir(dir string) (release func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrBusy
		}
		return func() {}, nil
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
