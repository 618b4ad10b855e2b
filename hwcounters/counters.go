package hwcounters

import "math"

// Status is whether one event opened here, and if not, why.
type Status struct {
	Event Event
	Err   error // nil: available
}

// Available reports whether the event opened.
func (s Status) Available() bool { return s.Err == nil }

// Counters is a set of open events on one thread, in groups by kind.
type Counters struct {
	events []Event // the opened events, in the order asked for
	where  []slot  // event i lives in groups[where[i].g] at value where[i].v
	groups []*group
}

type slot struct{ g, v int }

// Snapshot holds one Reading per group, as returned by Read.
type Snapshot []Reading

// Events returns the events that opened, in the order they were asked for.
func (c *Counters) Events() []Event { return c.events }

// NewSnapshot returns a snapshot sized for c (allocate once, reuse: Read
// does not allocate).
func (c *Counters) NewSnapshot() Snapshot {
	s := make(Snapshot, len(c.groups))
	for i, g := range c.groups {
		s[i].Values = make([]uint64, len(g.fds))
	}
	return s
}

// AddDelta accumulates after−before into acc.
func (acc Snapshot) AddDelta(before, after Snapshot) {
	for i := range acc {
		acc[i].AddDelta(before[i], after[i])
	}
}

// Reset zeroes acc.
func (acc Snapshot) Reset() {
	for i := range acc {
		acc[i].Enabled, acc[i].Running = 0, 0
		clear(acc[i].Values)
	}
}

// Count returns event i's count in s, scaled for multiplexing, and its
// group's running/enabled ratio. NaN when the group never ran.
func (c *Counters) Count(s Snapshot, i int) (count, ratio float64) {
	w := c.where[i]
	r := s[w.g]
	return r.Scaled(w.v), r.RunningRatio()
}

// MinRunningRatio is the smallest running/enabled ratio of any group in s:
// 1 means no count in s is an extrapolation.
func (c *Counters) MinRunningRatio(s Snapshot) float64 {
	m := math.NaN()
	for _, r := range s {
		if x := r.RunningRatio(); !math.IsNaN(x) && !(x >= m) {
			m = x
		}
	}
	return m
}
