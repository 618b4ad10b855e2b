package sampler

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// StealTime returns the time the hypervisor ran something else while these
// CPUs wanted to run (the steal column of /proc/stat), summed over cpus.
// The kernel keeps it in ns but shows it in USER_HZ ticks (10 ms). A guest
// cannot see steal as a context switch, so the sampler's rejection misses
// it; callers compare StealTime before and after a measurement. It returns
// 0 and false where /proc/stat has no steal column.
func StealTime(cpus []int) (time.Duration, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	want := map[string]bool{}
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	var ticks int64
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 9 || !want[fields[0]] {
			continue
		}
		v, err := strconv.ParseInt(fields[8], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += v
		found = true
	}
	return time.Duration(ticks) * 10 * time.Millisecond, found // USER_HZ = 100 on Linux
}
