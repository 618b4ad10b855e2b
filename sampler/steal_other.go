//go:build !linux

package sampler

import "time"

// StealTime is not available on this OS.
func StealTime([]int) (time.Duration, bool) { return 0, false }
