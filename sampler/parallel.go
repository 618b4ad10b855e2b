package sampler

import (
	"context"
	"errors"
	"fmt"
)

// MeasureParallel times call on len(cpus) workers at once, worker i on a
// thread pinned to cpus[i]. Every sample starts all workers together and
// lasts as long as the slowest of them (what a parallel kernel waits for);
// a sample is rejected when any worker spent more than Config.OffCPULimit
// of it off its CPU. It reports ns per
// call of the slowest worker. With one CPU it is Measure on a fresh pinned
// thread.
func MeasureParallel(cfg Config, cpus []int, call func(worker int)) (Stats, error) {
	st, _, err := MeasureParallelPaired(cfg, cpus, call, nil)
	return st, err
}

// MeasureParallelPaired is MeasureParallel of call with ref timed in
// alternation with it, on the same workers, as MeasurePaired does on one
// thread. A nil ref is MeasureParallel.
func MeasureParallelPaired(cfg Config, cpus []int, call, ref func(worker int)) (Stats, Stats, error) {
	cfg = cfg.withDefaults()
	if len(cpus) == 0 {
		return Stats{}, Stats{}, fmt.Errorf("no CPUs to measure on")
	}
	type order struct {
		calls int
		ref   bool // run ref, not call
		quit  bool
	}
	orders := make([]chan order, len(cpus))
	results := make(chan sampleRun, len(cpus))
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
				f := call
				if o.ref {
					f = ref
				}
				results <- timeCalls(th, func() {
					for range o.calls {
						f(w)
					}
				})
			}
		}()
	}
	defer func() {
		for _, o := range orders {
			o <- order{quit: true}
		}
	}()
	for range cpus {
		if err := <-pinErrs; err != nil && !errors.Is(err, ErrNoAffinity) {
			return Stats{}, Stats{}, err
		}
	}
	// rounds(ref) runs n calls (of ref or call) on every worker and
	// returns the slowest time and the largest time off the CPU.
	rounds := func(ref bool) roundFunc {
		return func(n int, _ bool) sampleRun {
			for _, o := range orders {
				o <- order{calls: n, ref: ref}
			}
			var worst sampleRun
			for range cpus {
				r := <-results
				worst.el = max(worst.el, r.el)
				worst.offCPU = max(worst.offCPU, r.offCPU)
				worst.preempted = worst.preempted || r.preempted
			}
			return worst
		}
	}
	var refRound roundFunc
	if ref != nil {
		refRound = rounds(true)
	}
	_, clockErr := currentThread().cpuTime()
	return sample(context.Background(), cfg, clockErr == nil, rounds(false), refRound)
}
