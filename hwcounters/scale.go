package hwcounters

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Reading is one group's cumulative state at one read(2): the raw counts
// of its events (in open order) and the group's enabled and running times.
type Reading struct {
	Enabled, Running uint64 // ns
	Values           []uint64
}

// parseGroupRead decodes a PERF_FORMAT_GROUP|TOTAL_TIME_ENABLED|
// TOTAL_TIME_RUNNING buffer: nr, time_enabled, time_running, value[nr],
// each a native-endian u64.
func parseGroupRead(b []byte, into *Reading) error {
	if len(b) < 24 {
		return fmt.Errorf("short group read: %d bytes", len(b))
	}
	nr := int(binary.NativeEndian.Uint64(b))
	if len(b) < 24+8*nr || nr != len(into.Values) {
		return fmt.Errorf("group read holds %d values in %d bytes, want %d", nr, len(b), len(into.Values))
	}
	into.Enabled = binary.NativeEndian.Uint64(b[8:])
	into.Running = binary.NativeEndian.Uint64(b[16:])
	for i := range into.Values {
		into.Values[i] = binary.NativeEndian.Uint64(b[24+8*i:])
	}
	return nil
}

// Delta accumulates after−before into acc (same group).
func (acc *Reading) AddDelta(before, after Reading) {
	acc.Enabled += after.Enabled - before.Enabled
	acc.Running += after.Running - before.Running
	if acc.Values == nil {
		acc.Values = make([]uint64, len(after.Values))
	}
	for i := range after.Values {
		acc.Values[i] += after.Values[i] - before.Values[i]
	}
}

// Scaled returns value i extrapolated to the whole enabled time, the way
// perf stat does: value × enabled / running. A group that never ran (the
// PMU was busy with other groups the whole time) has no count: NaN.
func (r Reading) Scaled(i int) float64 {
	if r.Running == 0 {
		return math.NaN()
	}
	v := float64(r.Values[i])
	if r.Running == r.Enabled {
		return v
	}
	return v * float64(r.Enabled) / float64(r.Running)
}

// RunningRatio is running/enabled: 1 when the group was on the PMU all
// the time, less when it was multiplexed (and its counts are estimates).
func (r Reading) RunningRatio() float64 {
	if r.Enabled == 0 {
		return math.NaN()
	}
	return float64(r.Running) / float64(r.Enabled)
}
