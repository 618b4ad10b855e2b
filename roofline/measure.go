package roofline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/sampler"
)

// Options say what to measure.
type Options struct {
	Threads  []int      // thread counts; default 1 and every allowed CPU
	Quick    bool       // read curve only, one size per octave, shorter sampling
	Tiers    []isa.Tier // compute tiers; default every tier that runs here
	MaxBytes int64      // largest working set, all threads together; default 8 × L3 (or 8 × L2), ≥ 64 MiB
	// Passes is how many times every measurement is taken, in turn, each
	// with its share of the sampling time; the best pass is kept (default
	// 4, 2 with Quick). A neighbour on a shared host that slows one pass
	// does not lower the ceiling, and the spread between passes shows it.
	Passes   int
	Progress io.Writer // one line per measurement (nil: quiet)
	// Wait is told when a CPU is held by another process measuring on it
	// (Measure waits for it; nil: silently).
	Wait func(error)
}

// Stat is the sampler's summary of one measurement, in ns per call.
type Stat struct {
	Median    float64 `json:"ns_median"`
	Min       float64 `json:"ns_min"`
	MADPct    float64 `json:"mad_pct"`
	CVPct     float64 `json:"cv_pct"`
	Kept      int     `json:"samples"`
	Rejected  int     `json:"rejected"`
	Tolerated int     `json:"tolerated"` // kept although switched out: off the CPU under the sampler's limit
	StealMS   float64 `json:"steal_ms"`  // hypervisor steal on these CPUs during the measurement
	Tries     int     `json:"tries"`     // measurements taken (redone after steal)
	// PassSpreadPct is (best − worst) / best of the passes' rates, in %:
	// how much the machine's other load moved this measurement.
	PassSpreadPct float64 `json:"pass_spread_pct"`
	Calls         int     `json:"calls_per_sample"`
}

// Compute is one compute ceiling: a peak kernel of a tier on n threads.
type Compute struct {
	Kind       string   `json:"kind"` // fp32-fma, f16-fma, q8-fma, q8-decode or int8-dot
	Tier       isa.Tier `json:"tier"`
	Threads    int      `json:"threads"`
	Unit       string   `json:"unit"`  // GFLOP/s or GOP/s
	Value      float64  `json:"value"` // all threads together
	OpsPerCall float64  `json:"ops_per_call"`
	Stat       Stat     `json:"stat"`
	// For fp32-fma, from fmaShare: the core clock while this tier's FMAs
	// run (best of passes), the core's FMA units for the tier, and the
	// share of them the FMA kernel uses at the clock it runs at: how close
	// it comes to the silicon. Above 100 % is a measurement problem (the
	// FMA table is wrong for this CPU): Note says so.
	LoadGHz    float64   `json:"load_ghz,omitempty"`
	FMA        *FMAUnits `json:"fma_units,omitempty"`
	PctOfPorts float64   `json:"pct_of_ports,omitempty"`
	Note       string    `json:"note,omitempty"`
}

// flagPorts notes a PctOfPorts above 100 % + PortsSlackPct.
func (c *Compute) flagPorts() {
	c.Note = ""
	if c.FMA != nil && c.PctOfPorts > 100+PortsSlackPct {
		c.Note = fmt.Sprintf("%.1f%% of %s: above what the units can do, so %s is wrong for this CPU (or the host moved its clock between two kernels run back to back)",
			c.PctOfPorts, c.FMA, c.FMA)
	}
}

// RateSlackPct is how far an fp32-fma rate may read below what its share
// of the FMA units at its clock implies before it is flagged (flagRate).
const RateSlackPct = 20

// flagRate notes an fp32-fma rate well below what fmaShare's share of
// the units at the clock under load implies (PctOfPorts × lanes × 2 FLOP
// × LoadGHz a thread): the rate's own passes ran while the host took the
// core's FMA units or its time (a busy sibling thread, a neighbour), so a
// bound on this roof reads high. On a 2-vCPU Xeon guest (family 6 model
// 207) AVX2's rate read 31.7 GFLOP/s in both quick passes, its share 77 %
// of the units at 2.47 GHz (61 GFLOP/s), against 70–74 GFLOP/s in the
// runs before and after: grouped decode points then read 120–170 % of it.
func (c *Compute) flagRate() {
	if implied, slowed := c.RateSlowed(); slowed {
		c.Note = joinNote(c.Note, c.slowedNote(implied))
	}
}

// slowedNote says of a slowed rate (RateSlowed) how far below the rate
// its share of the units implies it read, and what follows.
func (c Compute) slowedNote(implied float64) string {
	return fmt.Sprintf("read %.1f GFLOP/s, %.0f%% of what its %.0f%% of %s at %.2f GHz implies (%.1f): the host slowed this rate's passes, so bounds on it read high; measure again",
		c.Value, 100*c.Value/implied, c.PctOfPorts, c.FMA, c.LoadGHz, implied)
}

// SlowedNote names c and says how it was slowed, where it was
// (RateSlowed): SlowedRoofs' line for it.
func (c Compute) SlowedNote() (string, bool) {
	implied, slowed := c.RateSlowed()
	if !slowed {
		return "", false
	}
	return fmt.Sprintf("roofline fp32-fma %s (%d thread(s)) %s", c.Tier, c.Threads, c.slowedNote(implied)), true
}

// RateSlowed reports whether c, an fp32-fma rate, reads more than
// RateSlackPct below what its share of the FMA units at its clock implies
// (flagRate), and that implied rate.
func (c Compute) RateSlowed() (implied float64, slowed bool) {
	perCycle, ok := c.flopsPerCycle()
	if !ok || c.LoadGHz <= 0 {
		return 0, false
	}
	implied = perCycle * c.LoadGHz
	return implied, c.Value < (1-RateSlackPct/100.0)*implied
}

// flopsPerCycle is c's FLOPs per core cycle, all threads together, where
// c is an fp32-fma rate with a share of its FMA units (fmaShare, timed
// back to back with a clock chain so that the clock cancels out of it):
// that share of the units' lanes × 2 FLOP, times the threads.
func (c Compute) flopsPerCycle() (float64, bool) {
	if c.Kind != "fp32-fma" || c.FMA == nil || c.FMA.Lanes <= 0 || c.PctOfPorts <= 0 || c.Threads < 1 {
		return 0, false
	}
	return c.PctOfPorts / 100 * float64(c.FMA.Lanes) * 2 * float64(c.Threads), true
}

// fmaShare measures, on every CPU of set at once, the share of its FMA
// units u that tier t's FMA kernel uses at the clock it runs at, and that
// clock in core cycles per TSC tick. Each call runs the FMA kernel and the
// clock kernel (fmaClock: core cycles counted by a dependent add chain,
// under the same vector load) back to back, both timed by the TSC: FMAs
// per TSC tick over core cycles per TSC tick is FMAs per core cycle,
// whatever the clock did a moment before or after. Both results are
// medians over the calls, of the slowest CPU on several threads: the share
// cannot read above 100 % by a clock that moved between two separate
// measurements, as a rate over a clock measured apart did (104 % on Zen 3;
// 103.7 % once here on Zen 4).
func fmaShare(cfg sampler.Config, set []int, t isa.Tier, u FMAUnits, iters int) (share, cyclesPerTick float64, err error) {
	shares, clocks := make([][]float64, len(set)), make([][]float64, len(set))
	lanes := FMAFlopsPerIter(t) / 2 * float64(iters) // FMA lane-operations per call
	call := func(w int) {
		c0 := rdtscAsm()
		FMA(t, iters)
		c1 := rdtscAsm()
		cycles := FMAClock(t, iters)
		c2 := rdtscAsm()
		if c1 <= c0 || c2 <= c1 || cycles == 0 {
			return
		}
		perTick := float64(cycles) / float64(c2-c1)
		shares[w] = append(shares[w], lanes/float64(c1-c0)/perTick/float64(u.Lanes))
		clocks[w] = append(clocks[w], perTick)
	}
	if _, _, err := measure(cfg, set, call); err != nil {
		return 0, 0, err
	}
	share, cyclesPerTick = math.Inf(1), math.Inf(1)
	for w := range set {
		if len(shares[w]) == 0 {
			return 0, 0, nil
		}
		share = min(share, median(shares[w]))
		cyclesPerTick = min(cyclesPerTick, median(clocks[w]))
	}
	return share, cyclesPerTick, nil
}

// median sorts v and returns its middle element.
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// PortsSlackPct is how far above 100 % of the FMA units a measurement may
// read before it is flagged: the FMA and clock kernels run one after the
// other, not at once, and their TSC readings are a few ticks apart.
const PortsSlackPct = 1

// Point is the bandwidth of one working-set size.
type Point struct {
	Bytes int64   `json:"bytes"` // working set per thread
	GBs   float64 `json:"gbs"`   // all threads together
	Stat  Stat    `json:"stat"`
	// Tier is the tier whose loop measured the point where it is not its
	// curve's: a read curve takes, point by point, the fastest of the
	// tiers' read loops (StreamTiers).
	Tier isa.Tier `json:"tier,omitempty"`
}

// Curve is bandwidth against working-set size for one kernel.
type Curve struct {
	Kernel  string   `json:"kernel"` // read, copy, write, write-nt
	Tier    isa.Tier `json:"tier"`
	Threads int      `json:"threads"`
	Points  []Point  `json:"points"`
}

// Roofline is roofline.json.
type Roofline struct {
	Version int          `json:"version"`
	Method  string       `json:"method"`
	Created time.Time    `json:"created"`
	Quick   bool         `json:"quick"`
	Machine machine.Info `json:"machine"`
	Clock   struct {
		CoreGHz float64 `json:"core_ghz"` // from a chain of dependent adds
		BaseGHz float64 `json:"base_ghz"` // as cpuid reports it (not a measurement)
		TSCGHz  float64 `json:"tsc_ghz"`  // TSC ticks per ns, measured against the OS clock; 0 if unknown
		Method  string  `json:"method"`
	} `json:"clock"`
	Compute   []Compute    `json:"compute"`
	Skipped   []isa.Status `json:"skipped,omitempty"` // tiers asked for that do not run here
	Bandwidth []Curve      `json:"bandwidth"`
	Levels    []Level      `json:"levels"` // from the read curves
	// L3FromCurve is the L3 read off the 1-thread read curve
	// (L3FromCurve) where cpuid reports none (0: cpuid's is used, or the
	// curve shows no L3). Caches and the levels' windows use it.
	L3FromCurve int64 `json:"l3_from_curve,omitempty"`
	Passes      int   `json:"passes"`
	// MaxPassSpreadPct is the largest PassSpreadPct of any ceiling
	// measurement: above a few percent the machine was busy meanwhile.
	MaxPassSpreadPct float64 `json:"max_pass_spread_pct"`
}

// Method describes how the ceilings were measured, for roofline.json.
const Method = "Each ceiling is a measurement kernel (roofline/_asm) timed by the ckbench sampler on threads pinned one per CPU, started together; time is the slowest thread, samples with a preemption are dropped, and so are those a pause of the host made longer (the sampler's stall filter, where the host pauses; samples too long to tell a pause apart, as a DRAM working set's of several ms, keep them). fp32-fma: independent accumulator chains, 2 FLOP per lane per FMA. f16-fma: the same, each FMA's operand widened from f16 in memory first (VCVTPH2PS), the roof of a decode over an f16 KV cache; q8-fma: widened from int8 (VPMOVSXBD, VCVTDQ2PS), P·V's over a q8_0 cache without its blocks' scales. q8-decode: the whole arithmetic of a decode over a q8_0 cache, 8 keys of hd 128 a round in L1 (Q·K as int8 dots against a quantized query, P·V widening V, every block's f16 scale widened and applied; no softmax, no reductions), 4·D FLOPs a key as the decode counts them: the compute roof of a q8_0 decode. int8-dot: VPMADDUBSW+VPMADDWD (avx2, avx512) or VPDPBUSD (avx512vnni), 2 ops per int8 multiply-add. Bandwidth: read (load and sum, the set's two halves side by side; at each working set the faster of the widest tier's loop and, under avx512, avx2's: a point read by another tier than its curve's names it), copy (src+dst = working set) and write (normal and non-temporal stores) with the widest tier, per-thread buffers, log-spaced working sets; levels are the median of the read curve inside windows set by the cpuid cache sizes (where cpuid reports no L3, by the L3 read off the 1-thread read curve: where it falls halfway from its L3 plateau to DRAM, l3_from_curve). Every ceiling measurement (compute, read curve) is taken in several passes over the whole set, in turn, and the pass with the highest rate is kept (pass_spread_pct says how far they differed); the copy and write curves are measured once. A measurement during which the hypervisor stole time from its CPUs (/proc/stat) is redone, up to 3 tries; steal_ms records what remained."

// measure runs sampler.MeasureParallel and redoes it (up to 3 tries) when
// the hypervisor stole time from these CPUs meanwhile: steal is invisible to
// the sampler's preemption check, and on a busy host it moves a ceiling by
// 10 % and more. The last try is kept, with its steal recorded.
func measure(cfg sampler.Config, cpus []int, call func(int)) (sampler.Stats, Stat, error) {
	var st sampler.Stats
	var steal time.Duration
	tries := 0
	for tries < 3 {
		tries++
		s0, ok := sampler.StealTime(cpus)
		var err error
		st, err = sampler.MeasureParallel(cfg, cpus, call)
		if err != nil {
			return st, Stat{}, err
		}
		s1, _ := sampler.StealTime(cpus)
		steal = s1 - s0
		if !ok || steal == 0 {
			break
		}
	}
	out := stat(st)
	out.StealMS, out.Tries = float64(steal)/1e6, tries
	return st, out, nil
}

// detect is isa.Detect; tests replace it to check that a tier the CPU
// lacks is reported and never run.
var detect = isa.Detect

// ThreadsError is a thread count this process cannot run.
type ThreadsError struct {
	Threads int
	CPUs    []int // the CPUs this process may use
}

func (e *ThreadsError) Error() string {
	return fmt.Sprintf("%d threads: this process may use %d CPUs (%v)", e.Threads, len(e.CPUs), e.CPUs)
}

// CheckThreads refuses a thread count below 1 or above the CPUs this
// process may use (cpus, from sampler.SpreadCPUs).
func CheckThreads(threads, cpus []int) error {
	for _, n := range threads {
		if n < 1 || n > len(cpus) {
			return &ThreadsError{Threads: n, CPUs: cpus}
		}
	}
	return nil
}

// Measure runs the roofline measurements on this machine.
func Measure(ctx context.Context, info machine.Info, opt Options) (*Roofline, error) {
	cpus, err := sampler.SpreadCPUs()
	if err != nil {
		return nil, err
	}
	if len(opt.Threads) == 0 {
		opt.Threads = []int{1}
		if len(cpus) > 1 {
			opt.Threads = append(opt.Threads, len(cpus))
		}
	}
	if err := CheckThreads(opt.Threads, cpus); err != nil {
		return nil, err
	}
	// Every CPU a measurement will run on is this run's alone meanwhile.
	unlock, err := sampler.LockCPUs(ctx, cpus[len(cpus)-slices.Max(opt.Threads):], opt.Wait)
	if err != nil {
		if errors.Is(err, sampler.ErrInterrupted) {
			return nil, ctx.Err()
		}
		return nil, err
	}
	defer unlock()
	if len(opt.Tiers) == 0 {
		opt.Tiers = isa.All
	}
	var tiers []isa.Tier // the ones that run: a tier the CPU lacks is never executed
	var skipped []isa.Status
	for _, t := range opt.Tiers {
		if st := detect(t); st.Runs {
			tiers = append(tiers, t)
		} else {
			skipped = append(skipped, st)
		}
	}
	opt.Tiers = tiers
	caches := Caches{L1D: int64(info.Cache.L1D), L2: int64(info.Cache.L2), L3: int64(info.Cache.L3)}
	if opt.MaxBytes == 0 {
		opt.MaxBytes = max(8*max(caches.L3, caches.L2), 64<<20)
		if caches.L3 <= 0 && caches.L2 > 0 {
			// cpuid reports no L3 (an Oxide bhyve guest on Zen 5 hides
			// its 32 MiB): the curve must run well past any L3 for
			// L3FromCurve to find where it ends and DRAM begins.
			opt.MaxBytes = max(opt.MaxBytes, unreportedL3Span)
			if info.OS.MemAvail > 0 {
				opt.MaxBytes = max(min(opt.MaxBytes, info.OS.MemAvail/4), 64<<20)
			}
		}
	}
	cfg := sampler.Config{MinTime: 100 * time.Millisecond, SampleTime: time.Millisecond}
	steps := 2 // sizes per octave
	if opt.Quick {
		cfg.MinTime, cfg.MinSamples, steps = 20*time.Millisecond, 5, 1
	}
	if opt.Passes <= 0 {
		opt.Passes = 4
		if opt.Quick {
			opt.Passes = 2
		}
	}
	// Each pass samples its share of the time, and at least 5 samples.
	cfg.MinTime = max(cfg.MinTime/time.Duration(opt.Passes), 10*time.Millisecond)
	cfg.MinSamples = 5
	logf := func(format string, a ...any) {
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, format+"\n", a...)
		}
	}
	for _, st := range skipped {
		logf("%-10s skipped: %s", st.Tier, st.Reason)
	}
	once := cfg
	once.MinTime = max(cfg.MinTime*time.Duration(opt.Passes), 10*time.Millisecond)
	m := &measurer{ctx: ctx, cpus: cpus, opt: opt, cfg: cfg, once: once, steps: steps, logf: logf,
		vendor: info.CPU.Vendor, family: info.CPU.Family, model: info.CPU.Model, tscGHz: TSCGHz()}
	passes := make([]*Roofline, opt.Passes)
	for i := range passes {
		logf("pass %d of %d", i+1, opt.Passes)
		passes[i] = &Roofline{}
		if err := m.pass(passes[i], i == len(passes)-1); err != nil {
			return nil, err
		}
	}
	r := bestOf(passes)
	r.Version, r.Method, r.Created, r.Quick, r.Machine, r.Skipped = 1, Method, time.Now().UTC(), opt.Quick, info, skipped
	r.Passes = opt.Passes
	r.Clock.BaseGHz = float64(info.CPU.BaseHz) / 1e9
	r.Clock.TSCGHz = m.tscGHz
	if caches.L3 <= 0 {
		for _, c := range r.Bandwidth {
			if c.Kernel == "read" && c.Threads == 1 {
				r.L3FromCurve = L3FromCurve(c.Points, caches)
			}
		}
		if r.L3FromCurve > 0 {
			caches = r.Caches()
			logf("L3   not reported by cpuid: the 1-thread read curve falls halfway from its L3 plateau to DRAM at %s, taken as the L3's size", machine.Bytes(r.L3FromCurve))
		}
	}
	for i := range r.Bandwidth {
		curve := &r.Bandwidth[i]
		if curve.Kernel != "read" {
			continue
		}
		levels, err := m.flatLevels(curve, caches)
		if err != nil {
			return nil, err
		}
		r.Levels = append(r.Levels, levels...)
	}
	logf("core clock ≈ %.2f GHz; TSC %.2f GHz (a fixed-rate counter, not core cycles)", r.Clock.CoreGHz, r.Clock.TSCGHz)
	for _, c := range r.Compute {
		logf("%-10s %-9s %d thread(s): %8.1f %s (best of %d passes, spread %.1f%%)", c.Tier, c.Kind, c.Threads, c.Value, c.Unit, r.Passes, c.Stat.PassSpreadPct)
	}
	for _, lv := range r.Levels {
		if lv.Unusable {
			logf("%-4s %d thread(s): %7.1f GB/s, NOT USED as a bound: %s", lv.Name, lv.Threads, lv.GBs, lv.Note)
			continue
		}
		logf("%-4s %d thread(s): %7.1f GB/s", lv.Name, lv.Threads, lv.GBs)
	}
	return r, nil
}

// flatLevels reads the levels off a read curve. A level whose window is
// not flat is measured again, point by point with the longer one-pass
// sampling, keeping each point's best; if it is still not flat it is
// marked Unusable and bounds nothing.
func (m *measurer) flatLevels(curve *Curve, caches Caches) ([]Level, error) {
	levels := Plateaus(curve.Points, caches)
	redo := false
	for _, lv := range levels {
		if lv.Flat() {
			continue
		}
		redo = true
		m.logf("%-4s %d thread(s): window not flat (CV %.0f%%): measuring it again", lv.Name, curve.Threads, lv.CVPct)
		set := m.cpus[len(m.cpus)-curve.Threads:]
		perThread := m.opt.MaxBytes / int64(curve.Threads)
		for j, p := range curve.Points {
			if p.Bytes < lv.Lo || p.Bytes > lv.Hi {
				continue
			}
			if err := m.ctx.Err(); err != nil {
				return nil, err
			}
			q, err := m.bestStream(m.once, set, curve.Tier, curve.Kernel, p.Bytes, perThread)
			if err != nil {
				return nil, err
			}
			if q.GBs > p.GBs {
				q.Stat.PassSpreadPct = p.Stat.PassSpreadPct
				curve.Points[j] = q
			}
		}
	}
	if redo {
		levels = Plateaus(curve.Points, caches)
	}
	for i := range levels {
		lv := &levels[i]
		lv.Threads, lv.Kernel = curve.Threads, curve.Kernel
		if !lv.Flat() {
			lv.Unusable = true
			lv.Note = joinNote(lv.Note, "still not flat when measured again: not used as a bound")
		}
	}
	return levels, nil
}

// measurer holds what every pass of Measure shares.
type measurer struct {
	ctx context.Context
	// The CPU, for its FMA units (FMAUnitsFor), and its TSC rate.
	vendor        string
	family, model int
	tscGHz        float64
	cpus          []int
	opt           Options
	cfg           sampler.Config // per pass
	arena         arena
	once          sampler.Config // for what is measured in one pass only
	steps         int
	logf          func(string, ...any)
}

// pass takes every measurement once into r (clock, compute, bandwidth).
// The ceilings (compute, and the read curve the levels come from) are
// taken in every pass; the copy and write curves, which bound nothing,
// only in the last, with the whole sampling time: the full run stays
// within its time.
func (m *measurer) pass(r *Roofline, last bool) error {
	cpus, opt, cfg, logf := m.cpus, m.opt, m.cfg, m.logf
	// The core clock: 8 dependent adds per round, one cycle each.
	if _, ok := ClockChain(1); ok {
		const rounds = 1 << 16
		st, _, err := measure(cfg, cpus[len(cpus)-1:], func(int) { ClockChain(rounds) })
		if err != nil {
			return err
		}
		r.Clock.CoreGHz = rate(8*rounds, st)
		r.Clock.Method = "8 dependent integer adds per round (1 cycle each), median sample, best pass"
	}
	for _, n := range opt.Threads {
		set := cpus[len(cpus)-n:]
		for _, t := range opt.Tiers {
			if err := m.ctx.Err(); err != nil {
				return err
			}
			const iters = 1 << 12
			st, sst, err := measure(cfg, set, func(int) { FMA(t, iters) })
			if err != nil {
				return err
			}
			ops := FMAFlopsPerIter(t) * iters
			c := Compute{Kind: "fp32-fma", Tier: t, Threads: n, Unit: "GFLOP/s", OpsPerCall: ops, Stat: sst,
				Value: rate(float64(n)*ops, st)}
			if u, ok := FMAUnitsFor(m.vendor, m.family, m.model, t); ok && kernelsFor(t) != nil {
				share, cyclesPerTick, err := fmaShare(cfg, set, t, u, iters)
				if err != nil {
					return err
				}
				c.FMA, c.PctOfPorts, c.LoadGHz = &u, 100*share, cyclesPerTick*m.tscGHz
				c.flagPorts()
			}
			r.Compute = append(r.Compute, c)
			for _, w := range []struct {
				kind string
				f    func(isa.Tier, int) (float32, bool)
			}{{"f16-fma", F16FMA}, {"q8-fma", Q8FMA}} {
				if _, ok := w.f(t, 0); !ok {
					continue
				}
				st, sst, err := measure(cfg, set, func(int) { w.f(t, iters) })
				if err != nil {
					return err
				}
				r.Compute = append(r.Compute, Compute{Kind: w.kind, Tier: t, Threads: n, Unit: "GFLOP/s", OpsPerCall: ops, Stat: sst,
					Value: rate(float64(n)*ops, st)})
			}
			if _, ok := Q8Decode(t, 0); ok {
				const rounds = 1 << 9 // ~2 µs a call, as the others
				st, sst, err := measure(cfg, set, func(int) { Q8Decode(t, rounds) })
				if err != nil {
					return err
				}
				qops := float64(Q8DecodeFlopsPerIter * rounds)
				r.Compute = append(r.Compute, Compute{Kind: Q8DecodeKind, Tier: t, Threads: n, Unit: "GFLOP/s", OpsPerCall: qops, Stat: sst,
					Value: rate(float64(n)*qops, st)})
			}
			if Int8OpsPerIter(t) == 0 {
				continue
			}
			st, sst, err = measure(cfg, set, func(int) { Int8(t, iters) })
			if err != nil {
				return err
			}
			ops = Int8OpsPerIter(t) * iters
			c = Compute{Kind: "int8-dot", Tier: t, Threads: n, Unit: "GOP/s", OpsPerCall: ops, Stat: sst,
				Value: rate(float64(n)*ops, st)}
			r.Compute = append(r.Compute, c)
		}
		wide := streamTier(opt.Tiers)
		kernels := []string{"read", "copy", "write", "write-nt"}
		if opt.Quick || !last {
			kernels = kernels[:1] // the levels are read off the read curve
		}
		for _, k := range kernels {
			curve := Curve{Kernel: k, Tier: wide, Threads: n}
			kcfg := cfg
			if k != "read" {
				kcfg = m.once
			}
			// The working sets of all threads together reach MaxBytes.
			perThread := opt.MaxBytes / int64(n)
			for _, size := range Sizes(4<<10, perThread, m.steps) {
				if err := m.ctx.Err(); err != nil {
					return err
				}
				p, err := m.bestStream(kcfg, set, wide, k, size, perThread)
				if err != nil {
					return err
				}
				curve.Points = append(curve.Points, p)
				logf("%-8s %d thread(s) %9s: %7.1f GB/s", k, n, machine.Bytes(size), p.GBs)
			}
			r.Bandwidth = append(r.Bandwidth, curve)
		}
	}
	return nil
}

// bestOf merges passes of the same measurements: for each, the pass with
// the highest rate, its spread across passes recorded.
func bestOf(passes []*Roofline) *Roofline {
	r := passes[0]
	// A pass whose every sample was preempted has rate 0: no measurement,
	// so not part of the spread.
	spread := func(vals []float64) (best int, pct float64) {
		lo := math.Inf(1)
		for i, v := range vals {
			if v > vals[best] {
				best = i
			}
			if v > 0 {
				lo = min(lo, v)
			}
		}
		if vals[best] > 0 {
			pct = 100 * (vals[best] - lo) / vals[best]
		}
		return best, pct
	}
	clocks := make([]float64, len(passes))
	for p, x := range passes {
		clocks[p] = x.Clock.CoreGHz
	}
	b, _ := spread(clocks)
	r.Clock = passes[b].Clock
	vals := make([]float64, len(passes))
	for i := range r.Compute {
		for p, x := range passes {
			vals[p] = x.Compute[i].Value
		}
		// The clock under load is a best of passes, as the rate is.
		var load float64
		for _, x := range passes {
			load = max(load, x.Compute[i].LoadGHz)
		}
		b, pct := spread(vals)
		r.Compute[i] = passes[b].Compute[i] // r is passes[0]: read the passes first
		r.Compute[i].Stat.PassSpreadPct = pct
		r.MaxPassSpreadPct = max(r.MaxPassSpreadPct, pct)
		r.Compute[i].LoadGHz = load
		r.Compute[i].flagRate()
	}
	// The last pass has every curve; the others only the read curves.
	r.Bandwidth = passes[len(passes)-1].Bandwidth
	for c, curve := range r.Bandwidth {
		var same []*Curve
		for _, x := range passes {
			for j := range x.Bandwidth {
				if x.Bandwidth[j].Kernel == curve.Kernel && x.Bandwidth[j].Threads == curve.Threads {
					same = append(same, &x.Bandwidth[j])
				}
			}
		}
		vals := make([]float64, len(same))
		for i := range curve.Points {
			for p, x := range same {
				vals[p] = x.Points[i].GBs
			}
			b, pct := spread(vals)
			r.Bandwidth[c].Points[i] = same[b].Points[i]
			r.Bandwidth[c].Points[i].Stat.PassSpreadPct = pct
			if len(same) > 1 {
				r.MaxPassSpreadPct = max(r.MaxPassSpreadPct, pct)
			}
		}
	}
	return r
}

// bestStream is measureStream of tier t, but for a read curve the fastest
// of the read loops of StreamTiers(t): the levels are what the machine
// reads at, not what one width of load reads at. On Zen 4 (EPYC family
// 25 model 17, one thread, 2026-11-29) the ymm read loop read DRAM at
// 27–29 GB/s where the zmm one read 24–26 (sweep attention's kv-read over
// the same 268 MB, in alternation, six rounds: 9.1–9.5 ms against
// 10.4–11.0), so a zmm curve alone held every DRAM-bound point to a
// level a tenth short. The point records the tier that read it where
// that is not t.
func (m *measurer) bestStream(cfg sampler.Config, cpus []int, t isa.Tier, kernel string, size, perThread int64) (Point, error) {
	tiers := []isa.Tier{t}
	if kernel == "read" {
		tiers = StreamTiers(t)
	}
	var best Point
	for i, rt := range tiers {
		p, err := measureStream(cfg, cpus, rt, kernel, size, perThread, &m.arena)
		if err != nil {
			return Point{}, err
		}
		if rt != t {
			p.Tier = rt
		}
		if i == 0 || p.GBs > best.GBs {
			best = p
		}
	}
	return best, nil
}

// StreamTiers is t and the narrower SIMD tier with loads and stores of its
// own that this CPU runs (avx512 and avx512vnni, whose loads are
// avx512's: t, avx2): the loops a read curve of t tries at each working
// set (bestStream), and that a ceiling of tier t's points (sweep's
// kv-read, kv-copy, w-read) takes the faster of.
func StreamTiers(t isa.Tier) []isa.Tier {
	if (t == isa.AVX512 || t == isa.AVX512VNNI) && isa.Detect(isa.AVX2).Runs {
		return []isa.Tier{t, isa.AVX2}
	}
	return []isa.Tier{t}
}

// streamTier is the widest of the tiers with its own loads and stores
// (avx512vnni adds only int8 instructions to avx512).
func streamTier(ts []isa.Tier) isa.Tier {
	w := isa.Generic
	for _, t := range ts {
		if t != isa.AVX512VNNI {
			w = t
		}
	}
	return w
}

// Sizes are the working sets from lo to hi, steps per octave, multiples of
// two stream granules: the read and copy curves split a set in halves, and
// a half that is not a whole number of granules leaves a rest that Go
// sums one float after the other, a dependent chain. At 5.5 KiB that rest
// (64 floats a half) took most of a call: the full curve read 58 GB/s there
// between 390 at 4 and 8 KiB, and 164 at 22.5 KiB (Zen 5), so the L1
// window was never flat and the L1 ceiling never used.
func Sizes(lo, hi int64, steps int) []int64 {
	const unit = 2 * 4 * StreamGranule // bytes
	var out []int64
	f := math.Pow(2, 1/float64(steps))
	for x := float64(lo); int64(x) <= hi; x *= f {
		s := int64(x) / unit * unit
		if len(out) == 0 || s != out[len(out)-1] {
			out = append(out, s)
		}
	}
	return out
}

// arena hands each worker one buffer as large as its largest working set,
// written (faulted in) once, and slices it for every measurement:
// allocating and faulting gigabytes afresh for every size, kernel and pass
// would take most of the run.
type arena struct{ bufs [][]float32 }

// slices returns workers buffers of floats each, reserving perWorker floats
// per worker on first use.
func (a *arena) slices(t isa.Tier, workers, floats, perWorker int) [][]float32 {
	for w := range workers {
		if w == len(a.bufs) {
			a.bufs = append(a.bufs, nil)
		}
		if len(a.bufs[w]) < floats {
			a.bufs[w] = nil // let the old one go first
			b := buf.Floats(max(floats, perWorker))
			Write(t, b, false, 1) // any non-zero data: untouched pages all map the zero page
			a.bufs[w] = b
		}
	}
	out := make([][]float32, workers)
	for w := range out {
		out[w] = a.bufs[w][:floats]
	}
	return out
}

// measureStream times one stream kernel on a working set of size bytes per
// thread, each thread on its own part of the arena (up to perThread bytes).
func measureStream(cfg sampler.Config, cpus []int, t isa.Tier, kernel string, size, perThread int64, a *arena) (Point, error) {
	floats := int(size / 4)
	bufs := a.slices(t, len(cpus), floats, int(perThread/4))
	src, dst := make([][]float32, len(cpus)), make([][]float32, len(cpus))
	for w, b := range bufs {
		switch kernel {
		case "copy":
			src[w], dst[w] = b[:floats/2], b[floats/2:]
		case "read":
			src[w] = b
		default:
			dst[w] = b
		}
	}
	// Small working sets pass over their buffer several times per call, so
	// that a call streams at least 1 MiB and its own cost vanishes.
	reps := int(max(1, (1<<20)/size))
	sink := make([]float32, len(cpus)) // per worker: no shared writes
	call := func(w int) {
		switch kernel {
		case "read":
			// Two halves side by side (ReadSum2Repeat): from DRAM two
			// streams read a quarter to a third faster than one, in L3
			// ~14 % (Zen 3, one thread), and the decode kernels read K and
			// V so; one stream understated the level they are held to.
			h := len(src[w]) / 2
			sink[w] += ReadSum2Repeat(t, src[w][:h], src[w][h:2*h], reps)
		case "copy":
			Copy(t, dst[w], src[w], reps)
		case "write":
			Write(t, dst[w], false, reps)
		case "write-nt":
			Write(t, dst[w], true, reps)
		}
	}
	st, sst, err := measure(cfg, cpus, call)
	if err != nil {
		return Point{}, err
	}
	return Point{Bytes: size, GBs: rate(float64(len(cpus)*reps)*float64(size), st), Stat: sst}, nil
}

func stat(s sampler.Stats) Stat {
	st := Stat{Median: s.Median, Min: s.Min, MADPct: s.MADPct(), CVPct: s.CVPct(), Kept: s.Kept, Rejected: s.Rejected,
		Tolerated: s.Tolerated, Calls: s.CallsPerSample}
	if s.Kept == 0 { // JSON has no NaN: an empty measurement is all zeros with its rejected count
		st.Median, st.Min, st.MADPct, st.CVPct = 0, 0, 0, 0
	}
	return st
}

// rate is ops/ns (GB/s, GFLOP/s) of a measurement, 0 when nothing was kept.
func rate(ops float64, s sampler.Stats) float64 {
	if s.Kept == 0 {
		return 0
	}
	return ops / s.Median
}
