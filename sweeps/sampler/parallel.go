package sampler

import (
	"context"
	"fmt"
	"time"
)

// MeasureParallel times call on len(cpus) workers at once, worker i on a
// thread pinned to cpus[i]. Every sample starts all workers together and
// lasts as long as the slowest of them (what a parallel kernel waits for);
// a sample is rejected when any worker was preempted. It reports ns per
// call of the slowest worker. With one CPU it is Measure on a fresh pinned
// thread.
func MeasureParallel(cfg Config, cpus []int, call func(worker int)) (Stats, error) {
	cfg = cfg.withDefaults()
	if len(cpus) == 0 {
		return Stats{}, fmt.Errorf("no CPUs to measure on")
	}
	type result struct {
		el        time.Duration
		preempted bool
	}
	type order struct {
		calls int
		quit  bool
	}
	orders := make([]chan order, len(cpus))
	results := make(chan result, len(cpus))
	pinErrs := make(chan error, len(cpus))
	for w, cpu := range cpus {
		orders[w] = make(chan order)
		go func() {
			// Exits locked: the runtime then ends the pinned thread.
			pinErrs <- PinThread(cpu)
			th := currentThread()
			for o := range orders[w] {
				if o.quit {
					return
				}
				sw0, err0 := th.involuntarySwitches()
				t0 := time.Now()
				for range o.calls {
					call(w)
				}
				el := time.Since(t0)
				sw1, err1 := th.involuntarySwitches()
				results <- result{el, err0 == nil && err1 == nil && sw1 != sw0}
			}
		}()
	}
	defer func() {
		for _, o := range orders {
			o <- order{quit: true}
		}
	}()
	for range cpus {
		if err := <-pinErrs; err != nil {
			return Stats{}, err
		}
	}
	// round runs n calls on every worker and returns the slowest time.
	round := func(n int, _ bool) (time.Duration, bool) {
		for _, o := range orders {
			o <- order{calls: n}
		}
		var worst time.Duration
		preempted := false
		for range cpus {
			r := <-results
			worst = max(worst, r.el)
			preempted = preempted || r.preempted
		}
		return worst, preempted
	}
	st, err := sample(context.Background(), cfg, round)
	if err != nil {
		return st, err
	}
	st.summarize()
	return st, nil
}
