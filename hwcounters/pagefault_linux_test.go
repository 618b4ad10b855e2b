package hwcounters

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPageFaultsOnFirstTouch(t *testing.T) {
	needSoftware(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, st := openOne(t, "page-faults")
	if st.Err != nil {
		t.Fatal(st.Err)
	}
	const pages = 1024
	ps := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, pages*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	unix.Madvise(mem, unix.MADV_NOHUGEPAGE) // one fault per 4 KiB page
	n := count(t, c, func() {
		for i := 0; i < len(mem); i += ps {
			mem[i] = 1
		}
	})
	if n < pages {
		t.Fatalf("touching %d fresh pages counted %v page faults, want ≥ %d", pages, n, pages)
	}
	again := count(t, c, func() {
		for i := 0; i < len(mem); i += ps {
			mem[i] = 2
		}
	})
	if again >= pages/2 {
		t.Fatalf("touching the same pages again counted %v faults, want few", again)
	}
}
