// Package sweeps turns a grid of kernel parameters into measured points:
// it plans the grid, checks each point against its reference, times it
// with an honest sampler on a pinned thread, and hands every record to a
// sink (the results folder) as soon as it is done.
package sweeps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ckbench/ckbench/hwcounters"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sampler"
)

// Options apply to every family's sweep.
type Options struct {
	Sampler sampler.Config
	// Prior are the records of a resumed run (Plan.Skip dropped their
	// points): their 1-thread times give the n-thread points their scaling.
	Prior []results.Record
	// Cold rotates buffer copies so every call reads from DRAM; its
	// samples then last ColdSampleTime unless Sampler.SampleTime is set
	// (SamplerConfig).
	Cold bool
	// Threads are the thread counts to measure every point at (default
	// 1): a point of n threads splits each call across n workers pinned to
	// n CPUs (the measuring CPU among them), started together, timed as
	// the slowest (sampler.MeasureParallel).
	Threads []int
	CPU     int // CPU to pin the measuring thread to; -1 picks the last of sampler.SpreadCPUs no other ckbench holds
	// CPULocked says the caller already holds CPU's lock
	// (sampler.AcquireCPU); otherwise Run takes it, waiting while another
	// process measures on it.
	CPULocked bool
	// Wait is told when the run has to wait for a CPU another process
	// measures on (nil: wait silently).
	Wait func(error)
	Seed uint64 // data seed; the same seed gives the same data everywhere

	// ColdBytes is how many bytes a cold rotation must stream between two
	// uses of one copy (default: ColdBytesFor).
	ColdBytes int64
	// MemAvailable bounds a point's memory (default: /proc/meminfo).
	MemAvailable int64
	// L3 is the last-level cache's bytes (default: this machine's), for
	// the reason of an unstable point whose data straddle it (l3Edge).
	L3 int64

	// Counters are read around every sample, on the measuring thread;
	// each record gets their per-call counts (nil: none).
	Counters []hwcounters.Event
	// Annotate, if set, completes each record before it is written
	// (e.g. the roofline bound of its tier and memory level). workingSet
	// is the bytes of the shape's data the point reads: the same for the
	// in-run ceiling and every kernel of the shape, so that they are held
	// to the same memory level.
	Annotate func(rec *results.Record, workingSet int64)
	// MaxMADPct is the spread (MAD, % of the median) above which a point
	// is unstable (default 3).
	MaxMADPct float64
	// Retries is how many more times a point that came out unstable is
	// measured (0: once), in rounds after the plan's other points: on a
	// shared host a burst of other tenants' work spreads one attempt's
	// samples and often the next one's right after, but rarely one
	// minutes later. Such points (and the n-thread points of a 1-thread
	// one among them) are written at the end, in plan order. The record
	// is the first attempt that is not unstable, or else the one whose
	// samples spread least; its Attempts says how many were made. Each
	// attempt checks the point again.
	Retries int
	// Progress receives a progress bar (nil: none).
	Progress io.Writer
	// Log receives one line per finished point (nil: none): what a log
	// shows where no progress bar can be drawn.
	Log io.Writer

	workers []int // Run's CPUs for n-thread points, the measuring one first
	// judged, in tests, replaces a timed record's verdict (its status and
	// spread) after each attempt.
	judged func(p *Point, rec *results.Record)
	costly time.Duration // in tests, the attempt time above which no retry is made
}

// ColdBytesFor is the default Options.ColdBytes of a CPU with these
// caches (bytes; ≤ 0 unknown): what a --cold point streams through before
// it reads a copy again, 4 × (L2 + L3) and at least 256 MiB.
//
// Twice the caches was not enough. On a Zen 5 guest whose cpuid reports no
// L3 (its read curve falls past 32–43 MiB), a rotation of 64 MiB left
// kv-read of a lone hd-128 head at ctx 32768 (f16, q8_0) at 50–55 GB/s,
// where the DRAM read roof was 34–38: a shared L3's replacement keeps part
// of a stream a little larger than itself, so such a point, labelled
// DRAM, read partly from L3. Rotations of 256 MiB and 1 GiB both gave
// 34–38 GB/s.
//
// The L3 is cpuid's: a sweep is planned (its copies allocated) before the
// roofline that could read a hidden one off its curve is measured. The
// floor covers a hidden L3 of up to 64 MiB.
func ColdBytesFor(l2, l3 int64) int64 {
	return max(ColdCachesTimes*(max(l2, 0)+max(l3, 0)), ColdMinBytes)
}

// ColdBytesFor's rule: ColdCachesTimes × (L2 + L3), at least ColdMinBytes.
const (
	ColdCachesTimes = 4
	ColdMinBytes    = 256 << 20
)

// DefaultMaxMADPct is the spread above which a point is unstable: 3 % of
// the median is about what two kernel variants worth telling apart differ
// by, so a point noisier than that cannot rank them.
const DefaultMaxMADPct = 3

// prepare checks what every family's planner refuses alike and fills the
// defaults.
func (o *Options) prepare(info machine.Info) error {
	for _, n := range o.Threads {
		if n < 1 {
			return paramErrorf("threads", "%d: must be ≥ 1", n)
		}
	}
	o.defaults(info)
	return nil
}

// tierStatus is each tier's isa.Detect, marked as not running where this
// binary has no kernels of the family for it (have, its kernels package's
// Tiers(); why says so).
func tierStatus(tiers, have []isa.Tier, why func(isa.Tier) string) map[isa.Tier]isa.Status {
	status := map[isa.Tier]isa.Status{}
	for _, t := range tiers {
		st := isa.Detect(t)
		if st.Runs && !slices.Contains(have, t) {
			st.Runs, st.Reason = false, why(t)
		}
		status[t] = st
	}
	return status
}

// noKernels is the skip reason of a tier a float family (what: "attention
// kernels") has no kernels for in this binary.
func noKernels(what string) func(isa.Tier) string {
	return func(t isa.Tier) string {
		if t == isa.AVX512VNNI {
			return "no " + what + " in the avx512vnni tier (it adds only int8 instructions; see avx512)"
		}
		return "no " + string(t) + " " + what + " in this build"
	}
}

func (o *Options) defaults(info machine.Info) {
	if len(o.Threads) == 0 {
		o.Threads = []int{1}
	}
	if o.ColdBytes == 0 {
		o.ColdBytes = ColdBytesFor(int64(info.Cache.L2), int64(info.Cache.L3))
	}
	if o.MemAvailable == 0 {
		o.MemAvailable = info.OS.MemAvail
	}
}

// maxMAD is the spread above which a point is unstable.
func (o *Options) maxMAD() float64 {
	if o.MaxMADPct > 0 {
		return o.MaxMADPct
	}
	return DefaultMaxMADPct
}

// Point is one planned measurement.
type Point struct {
	Rec   results.Record // identity and work model; the runner fills the rest
	Tier  isa.Tier
	Skip  string // why this point will not run here ("" to run)
	Mem   int64  // bytes its data needs
	group *dataGroup
	// ws overrides group.ws for a point that reads other data than the
	// shape's (quantize-q8 reads only x).
	ws int64
	// ceiling marks a plain read loop over the group's data: the points
	// measured after it are timed in alternation with it (the best tier's,
	// at their thread count), which gives their read_gbs and pct_of_read.
	ceiling bool
	// prepare builds the timed call from the group's data and checks its
	// output against the reference: err means the point failed the gate.
	prepare func(g *dataGroup) (call func(), relErr float64, err error)
	// threads is the point's thread count (0 or 1: one thread).
	threads int
	// prepareN builds an n-thread call: one share per worker, each
	// writing its own part of the output with its own workspace, together
	// the whole call; gated like prepare on the output the shares write
	// together. nil: the kernel has no split across threads (yet).
	prepareN func(g *dataGroup, n int) (shares []func(), relErr float64, err error)
}

// Threads is the point's thread count.
func (p *Point) Threads() int { return max(p.threads, 1) }

// samplerConfig is opt's sampler configuration for p: where its calls
// rotate through a few cold copies (at most maxWholeCopies), each
// sample's calls a multiple of them, so that every sample (and its read
// loop's, which shares the rotation) reads each copy alike (see
// sampler.Config.CallsMultiple). More copies are each small beside a
// sample's bytes, which already spans many of them.
func (p *Point) samplerConfig(opt Options) sampler.Config {
	c := opt.Sampler
	if p.group != nil && p.group.copies > 1 && p.group.copies <= maxWholeCopies {
		c.CallsMultiple = p.group.copies
	}
	return c
}

// maxWholeCopies is the most cold copies a sample passes over whole: with
// ColdMinBytes of rotation, copies of 16 MiB and more.
const maxWholeCopies = 17

// expandThreads measures every point at each thread count of counts, one
// after the other (1 first: the n-thread points' scaling is over it).
func (p *Plan) expandThreads(counts []int) {
	if len(counts) == 1 && counts[0] == 1 {
		return
	}
	pts := make([]Point, 0, len(p.Points)*len(counts))
	for _, pt := range p.Points {
		for _, n := range counts {
			q := pt
			q.threads = n
			pts = append(pts, q)
		}
	}
	p.Points = pts
}

// dataGroup is the data shared by consecutive points (one shape).
type dataGroup struct {
	mem int64
	ws  int64 // bytes of the shape's main data (KV, weights): its memory level
	// copies is how many cold copies of that data the calls rotate
	// through (0 or 1: none): every sample takes a multiple of it
	// (sampler.Config.CallsMultiple).
	copies int
	alloc  func() any // builds the data on first use
	data   any
	// read is, per thread count, the read loop (ceiling point) with the
	// best bandwidth measured on this group.
	read map[int]*readCeiling
}

// readCeiling is a ceiling point that was timed, its bandwidth and the
// calls it was timed with (one per worker), which its group's points are
// then paired with: built and checked once.
type readCeiling struct {
	pt     *Point
	gbs    float64
	shares []func()
}

func (g *dataGroup) get() any {
	if g.data == nil {
		g.data = g.alloc()
	}
	return g.data
}

// Plan is a whole sweep, in run order.
type Plan struct {
	Family string
	Points []Point
}

// Skip drops the points recorded already (a resumed run's, matched by
// their benchmark name: every key, cold and the thread count) and returns
// how many it dropped. A ceiling point (a read loop) whose shape still has
// a point to measure is kept: those points are timed in alternation with
// it.
func (p *Plan) Skip(recorded []results.Record) int {
	done := map[string]bool{}
	for i := range recorded {
		if recorded[i].Family != "" {
			done[results.BenchName(&recorded[i])] = true
		}
	}
	isDone := func(pt *Point) bool { return pt.Rec.Family != "" && done[results.BenchName(&pt.Rec)] }
	pending := map[*dataGroup]bool{}
	for i := range p.Points {
		if pt := &p.Points[i]; !isDone(pt) && !pt.ceiling {
			pending[pt.group] = true
		}
	}
	kept := p.Points[:0]
	n := 0
	for i := range p.Points {
		pt := p.Points[i]
		if isDone(&pt) && !(pt.ceiling && pending[pt.group]) {
			n++
			continue
		}
		kept = append(kept, pt)
	}
	p.Points = kept
	return n
}

// Timed is how many of the plan's points will be timed here (not
// skipped).
func (p *Plan) Timed() int {
	n := 0
	for i := range p.Points {
		if p.Points[i].Skip == "" {
			n++
		}
	}
	return n
}

// Largest returns the point with the largest memory need.
func (p *Plan) Largest() (Point, bool) {
	if len(p.Points) == 0 {
		return Point{}, false
	}
	return slices.MaxFunc(p.Points, func(a, b Point) int { return cmpInt64(a.Mem, b.Mem) }), true
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// spinBarrier holds n workers (each on its own CPU) until all arrive:
// the barrier inside one call of a split that must merge (split-KV
// decode). It spins: a worker waiting for its siblings' last microseconds
// must not sleep through them.
type spinBarrier struct {
	n     int32
	count atomic.Int32
	gen   atomic.Int32
}

func newSpinBarrier(n int) *spinBarrier { return &spinBarrier{n: int32(n)} }

func (b *spinBarrier) wait() {
	g := b.gen.Load()
	if b.count.Add(1) == b.n {
		b.count.Store(0)
		b.gen.Add(1)
		return
	}
	for b.gen.Load() == g {
	}
}

// errNoSplit is a prepareN's answer for a point whose kernel has no split
// across that many threads: the point is skipped with the reason.
type errNoSplit string

func (e errNoSplit) Error() string { return string(e) }

// splitRange cuts [0, n) into parts contiguous ranges as even as can be,
// every boundary a multiple of align (a kernel's block of rows); with
// fewer blocks than parts the last ranges are empty.
func splitRange(n, parts, align int) [][2]int {
	blocks := (n + align - 1) / align
	rs := make([][2]int, parts)
	for w := range parts {
		rs[w] = [2]int{min(n, w*blocks/parts*align), min(n, (w+1)*blocks/parts*align)}
	}
	return rs
}

// splitBlocks cuts row ranges [lo, hi) into parts lists of ranges holding
// about the same number of rows, in order.
func splitBlocks(blocks [][2]int, parts int) [][][2]int {
	total := 0
	for _, b := range blocks {
		total += b[1] - b[0]
	}
	out := make([][][2]int, parts)
	at := 0 // rows of blocks already handed out
	for w, r := range splitRange(total, parts, 1) {
		for _, b := range blocks {
			lo, hi := max(b[0], b[0]+r[0]-at), min(b[1], b[0]+r[1]-at)
			if lo < hi {
				out[w] = append(out[w], [2]int{lo, hi})
			}
			at += b[1] - b[0]
		}
		at = 0
	}
	return out
}

// finish completes a family's plan: every point at each of opt's thread
// counts, each record's thread count and cold flag as the run will write
// them (so that Skip knows a resumed run's points by their names), and the
// memory check.
func (p *Plan) finish(opt Options, describe func(Point) string) error {
	p.expandThreads(opt.Threads)
	for i := range p.Points {
		p.Points[i].Rec.Th, p.Points[i].Rec.Cold = p.Points[i].Threads(), opt.Cold
	}
	return p.checkMemory(opt.MemAvailable, describe)
}

// checkMemory refuses a plan whose largest point would not fit in memory.
func (p *Plan) checkMemory(avail int64, describe func(Point) string) error {
	big, ok := p.Largest()
	if !ok || avail <= 0 {
		return nil
	}
	if limit := avail * 8 / 10; big.Mem > limit {
		return fmt.Errorf("point %s needs %s of memory but only %s is available (80%% of MemAvailable %s); make the grid's largest shape smaller, or measure without cold copies",
			describe(big), machine.Bytes(big.Mem), machine.Bytes(limit), machine.Bytes(avail))
	}
	return nil
}

// ThreadsError is a thread count above the CPUs this process may use.
type ThreadsError struct {
	Threads int
	CPUs    []int
}

func (e *ThreadsError) Error() string {
	return fmt.Sprintf("%d threads but this process may use only %d CPUs (%v): a cgroup, taskset or the machine allows no more", e.Threads, len(e.CPUs), e.CPUs)
}

// workerCPUs are the CPUs of an n-thread point, the measuring CPU first,
// then the last others of sampler.SpreadCPUs: distinct physical cores
// before SMT siblings, the CPUs the roofline's n-thread ceilings use.
func workerCPUs(measuring, n int) ([]int, error) {
	if n <= 1 {
		return []int{measuring}, nil
	}
	cpus, err := sampler.SpreadCPUs()
	if err != nil {
		return nil, err
	}
	if n > len(cpus) {
		return nil, &ThreadsError{Threads: n, CPUs: cpus}
	}
	ws := []int{measuring}
	for i := len(cpus) - 1; i >= 0 && len(ws) < n; i-- {
		if cpus[i] != measuring {
			ws = append(ws, cpus[i])
		}
	}
	return ws, nil
}

// ColdSampleTime is a cold sweep's sample length where none is asked for:
// each sample runs enough calls to last it (sampler.Config.SampleTime,
// otherwise 200 µs). A host's DRAM bandwidth moves from one millisecond to
// the next: on a Zen 5 guest, decode-flash over an f16 and a q8_0 cache at
// ctx 32768 --cold (0.3–0.7 ms a call) and their kv-reads spread 5–8 %
// (MAD) in samples of one call, every point unstable however long it was
// sampled; in 5 ms samples 1.6–2.6 %, every point stable, and in 20 ms
// samples 0.6–2.9 %.
const ColdSampleTime = 5 * time.Millisecond

// SamplerConfig is the sampler's configuration for o: Sampler, with a cold
// sweep's samples ColdSampleTime long where it sets none.
func (o Options) SamplerConfig() sampler.Config {
	c := o.Sampler
	if o.Cold && c.SampleTime <= 0 {
		c.SampleTime = ColdSampleTime
	}
	return c
}

// Run measures every point of plan in order and passes each record to sink
// as soon as it is complete. It stops between points when ctx is
// cancelled and then returns complete = false. The measuring goroutine is
// locked to one OS thread pinned to one CPU for the whole run.
func Run(ctx context.Context, plan *Plan, opt Options, sink func(results.Record) error) (complete bool, err error) {
	opt.Sampler = opt.SamplerConfig()
	if opt.L3 == 0 {
		opt.L3 = int64(max(machine.Describe().Cache.L3, 0))
	}
	cpu := opt.CPU
	if !opt.CPULocked {
		lock, err := sampler.AcquireCPU(ctx, cpu, opt.Wait)
		if errors.Is(err, sampler.ErrInterrupted) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		defer lock.Unlock()
		cpu = lock.CPU()
	}
	most := 1 // the plan's largest thread count
	for i := range plan.Points {
		most = max(most, plan.Points[i].Threads())
	}
	workers, err := workerCPUs(cpu, most)
	if err != nil {
		return false, err
	}
	if len(workers) > 1 {
		// The other CPUs n-thread points run on are this run's alone
		// meanwhile, as the measuring one is.
		unlock, err := sampler.LockCPUs(ctx, workers[1:], opt.Wait)
		if errors.Is(err, sampler.ErrInterrupted) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		defer unlock()
	}
	opt.workers = workers
	type outcome struct {
		complete bool
		err      error
	}
	done := make(chan outcome, 1)
	go func() {
		// This goroutine exits still locked: the runtime then ends the
		// pinned thread rather than reuse it elsewhere.
		defer func() {
			// A bug in a kernel or the runner must not kill the process
			// from this goroutine (Go exits 2 on a panic, the bad-input
			// status): it becomes the run's error, with its stack.
			if p := recover(); p != nil {
				done <- outcome{false, &PanicError{Value: p, Stack: debug.Stack()}}
			}
		}()
		pinErr := sampler.PinThread(cpu)
		pinned := cpu
		if pinErr != nil {
			pinned = -1
		}
		c, err := runPinned(ctx, plan, opt, pinned, sink)
		done <- outcome{c, err}
	}()
	o := <-done
	return o.complete, o.err
}

func runPinned(ctx context.Context, plan *Plan, opt Options, cpu int, sink func(results.Record) error) (bool, error) {
	bar := newProgress(opt.Progress, len(plan.Points), plan.Family)
	defer bar.finish()                  // on an early return; a no-op after the first
	meter := openCounters(opt.Counters) // on this, the measuring, thread
	if meter != nil {
		defer meter.c.Close()
	}
	var last *dataGroup
	use := func(g *dataGroup) {
		if g != last && last != nil {
			// Let the previous shape's buffers go: its data, and its read
			// loops' calls, which hold the same buffers (kept, they made a
			// sweep's memory the sum of its shapes', not the largest; a
			// read loop keeps its bandwidth, and a point measured again at
			// the end builds its calls anew). FreeOSMemory collects them
			// and hands their pages back to the OS, which a larger shape
			// next could not reuse (q4_0 GEMV at 4096², 8192², 16384²: 194
			// MB resident after runtime.GC, 162 MB so, as for the largest
			// alone).
			last.data = nil
			for _, rc := range last.read {
				rc.shares = nil
			}
			debug.FreeOSMemory()
		}
		last = g
	}
	// ready switches to a point's shape and builds its data, before an
	// attempt's clock starts (filling a DRAM shape's buffers is not an
	// attempt's cost).
	ready := func(p *Point) {
		use(p.group)
		if p.Skip == "" {
			p.group.get()
		}
	}
	one := oneThread{}
	for _, r := range opt.Prior {
		one.scale(&r)
	}
	// measure times a point once (its shape ready), paired with its
	// shape's read loop, and keeps a read loop's calls and bandwidth for
	// the points after it.
	// interrupted: measure stopped at ctx's cancellation in the middle of
	// a point's samples; that attempt is not recorded.
	measure := func(p *Point) (rec results.Record, interrupted bool) {
		n := p.Threads()
		var ref *readCeiling
		if !p.ceiling {
			ref = p.group.read[n]
			if ref != nil && ref.shares == nil && !ref.rebuild(p.group, n) {
				ref = nil
			}
		}
		rec, shares, err := measurePoint(ctx, p, ref, opt, cpu, meter)
		if err != nil {
			return rec, true
		}
		if timedStatus(rec.Status) {
			rec.Attempts = 1
			if opt.judged != nil {
				opt.judged(p, &rec)
			}
		}
		if p.ceiling && timedStatus(rec.Status) {
			// Even an unstable read loop serves: the points it is paired
			// with measure it again, sample by sample.
			if p.group.read == nil {
				p.group.read = map[int]*readCeiling{}
			}
			if c := p.group.read[n]; c == nil || float64(rec.GBs) > c.gbs {
				p.group.read[n] = &readCeiling{p, float64(rec.GBs), shares}
			}
			// A read loop's own share is of the best one so far.
			rec.ReadGBs = results.Float(p.group.read[n].gbs)
			rec.PctOfRead = 100 * rec.GBs / rec.ReadGBs
		}
		return rec, false
	}
	// finish completes a point's record and writes it.
	finish := func(i int, rec results.Record) error {
		p := &plan.Points[i]
		one.scale(&rec)
		ws := p.group.ws
		if p.ws > 0 {
			ws = p.ws
		}
		l3Edge(&rec, ws, opt)
		if opt.Annotate != nil {
			opt.Annotate(&rec, ws)
		}
		flagAboveBound(&rec)
		if err := sink(rec); err != nil {
			return err
		}
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "%d/%d %s th=%d: %s\n", i+1, len(plan.Points), bar.named(&rec), rec.Th, pointLine(&rec))
		}
		return nil
	}
	// Points held back: those to measure again (unstable, with retries
	// left) and the n-thread points of a held 1-thread point (their
	// scaling is against its final time). They are written at the end, in
	// plan order.
	var held []heldPoint
	heldOne := map[string]bool{} // bench names of held 1-thread points
	flush := func() error {
		for _, h := range held {
			if err := finish(h.i, h.rec); err != nil {
				return err
			}
		}
		return nil
	}
	// An attempt that takes longer than this (calls that outlast the
	// sampling time many times over: the generic tier at the largest
	// shapes, 10 samples of a second or more) is not made again.
	costly := max(retryCostFactor*opt.Sampler.Effective().MinTime, time.Second)
	if opt.costly > 0 {
		costly = opt.costly
	}
	for i := range plan.Points {
		if ctx.Err() != nil {
			return false, flush()
		}
		p := &plan.Points[i]
		bar.start(i, p.Rec)
		ready(p)
		began := time.Now()
		rec, interrupted := measure(p)
		if interrupted {
			bar.finish()
			return false, flush()
		}
		again := rec.Status == results.StatusUnstable && opt.Retries > 0
		if took := time.Since(began); again && took > costly {
			again = false
			rec.Reason += fmt.Sprintf(" (not measured again: an attempt took %s, over %s)", took.Round(10*time.Millisecond), costly)
		}
		named := rec.Family != "" // not a family's point: no bench name (tests)
		if again || (named && rec.Th > 1 && heldOne[oneThreadName(rec)]) {
			if again && named && rec.Th <= 1 {
				heldOne[results.BenchName(&rec)] = true
			}
			held = append(held, heldPoint{i, rec, again})
			if again && opt.Log != nil {
				fmt.Fprintf(opt.Log, "%d/%d %s th=%d: %s; measured again at the end\n", i+1, len(plan.Points), bar.named(&rec), rec.Th, pointLine(&rec))
			}
		} else if err := finish(i, rec); err != nil {
			return false, err
		}
		bar.done(i+1, rec.Status == results.StatusSkipped)
	}
	bar.finish()
	// The unstable points again, a round per retry: minutes after their
	// first attempt rather than at once. On a shared Zen 3 guest, of the
	// points unstable in one run of the quick attention sweep (outside
	// the L3 band of l3Edge), 19 of 21, 6 of 8 and 17 of 21 were stable
	// in the next runs, where an attempt right after recovered 13 of 61.
	for a := 0; a < opt.Retries; a++ {
		round := 0
		for _, h := range held {
			if h.again {
				round++
			}
		}
		if round == 0 {
			break
		}
		bar := newProgress(opt.Progress, round, plan.Family)
		bar.what = "unstable points measured again"
		k := 0
		for j := range held {
			h := &held[j]
			if !h.again {
				continue
			}
			if ctx.Err() != nil {
				bar.finish()
				return false, flush()
			}
			bar.start(k, h.rec)
			p := &plan.Points[h.i]
			ready(p)
			rec, interrupted := measure(p)
			if interrupted {
				bar.finish()
				return false, flush()
			}
			n := h.rec.Attempts + 1
			if rec.Status != results.StatusUnstable || lessSpread(&rec, &h.rec) {
				h.rec = rec
			}
			h.rec.Attempts = n
			h.again = h.rec.Status == results.StatusUnstable
			k++
			bar.done(k, false)
		}
		bar.finish()
	}
	return true, flush()
}

// retryCostFactor bounds the attempts measured again: one that took over
// this many times the sampler's minimum time (and over a second) is not.
// On Zen 3 the quick attention sweep's generic points at ctx 32768 with
// 32:8 heads took 10–20 s each, and measuring three of them again doubled
// its retries' time.
const retryCostFactor = 20

// heldPoint is a point whose record the runner writes at the end of a run:
// its index in the plan, its best record so far, and whether it is still
// to be measured again.
type heldPoint struct {
	i     int
	rec   results.Record
	again bool
}

// oneThreadName is the bench name of rec's 1-thread point.
func oneThreadName(rec results.Record) string {
	rec.Th = 1
	return results.BenchName(&rec)
}

// rebuild prepares a read loop's calls again, on its shape's data (a
// point measured again at the end of a run, after the run let them go);
// false if they cannot be.
func (rc *readCeiling) rebuild(g *dataGroup, n int) bool {
	if n > 1 {
		if rc.pt.prepareN == nil {
			return false
		}
		shares, _, err := rc.pt.prepareN(g, n)
		if err != nil {
			return false
		}
		rc.shares = shares
		return true
	}
	call, _, err := rc.pt.prepare(g)
	if err != nil {
		return false
	}
	rc.shares = []func(){call}
	return true
}

// oneThread remembers the 1-thread time of each point (by its bench name)
// so that its n-thread points get their scaling (speedup) and efficiency
// (speedup / n).
type oneThread map[string]float64

func (o oneThread) scale(rec *results.Record) {
	if !rec.NsMedian.Valid() || !timedStatus(rec.Status) || rec.Family == "" {
		return // untimed, or not a family's point (no bench name)
	}
	if rec.Th <= 1 {
		o[results.BenchName(rec)] = float64(rec.NsMedian)
		return
	}
	if ns, ok := o[oneThreadName(*rec)]; ok {
		rec.Scaling = results.Float(ns / float64(rec.NsMedian))
		rec.Efficiency = rec.Scaling / results.Float(rec.Th)
	}
}

func timedStatus(s string) bool {
	return s == results.StatusOK || s == results.StatusUnstable || s == results.StatusAboveBound
}

// lessSpread reports whether a's samples spread less than b's; an attempt
// with no spread (no sample kept) spreads most.
func lessSpread(a, b *results.Record) bool {
	if !a.MadPct.Valid() {
		return false
	}
	return !b.MadPct.Valid() || a.MadPct < b.MadPct
}

// l3Edge adds to the reason of a point made unstable by its spread what
// the likely cause is when its data (ws bytes, read warm) are between half
// and twice the L3: how much of them stays cached then depends on whatever
// else uses the L3, other tenants of a shared host included. On a shared
// Zen 3 guest (32 MiB L3), three runs of the quick attention sweep: its
// 32 points of 16.8 and 33.6 MB were unstable in 50 of their 96 runs, 12
// of them in all three; its 64 points of 0.5–8 MB and 134–268 MB in 40 of
// 192, none in all three.
func l3Edge(rec *results.Record, ws int64, opt Options) {
	if rec.Status != results.StatusUnstable || opt.Cold || opt.L3 <= 0 || ws < opt.L3/2 || ws > 2*opt.L3 ||
		!rec.MadPct.Valid() || float64(rec.MadPct) <= opt.maxMAD() {
		return
	}
	rec.Reason += fmt.Sprintf("; its data (%s) are about the size of the L3 (%s), so how much of them stays cached moves with whatever else uses the L3: a shape well inside or well beyond it measures steadier",
		machine.Bytes(ws), machine.Bytes(opt.L3))
}

// PanicError is a panic inside a run: a bug, never bad input.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error (a bug in ckbench, please report it with this message): %v\n%s", e.Value, e.Stack)
}

// measurePoint gates and times one point; with a ref (its group's read
// loop) it times the point in alternation with ref (see
// sampler.MeasurePaired), for its read_gbs and pct_of_read. It returns the
// record and the calls it timed, one per worker (none when it was not
// timed). When ctx is cancelled while a 1-thread point is sampled
// (Ctrl-C) it stops after the sample in progress and returns
// sampler.ErrInterrupted: the attempt has no record.
func measurePoint(ctx context.Context, p *Point, ref *readCeiling, opt Options, cpu int, meter *counterMeter) (results.Record, []func(), error) {
	rec := p.Rec
	rec.CPU = cpu
	rec.Th = p.Threads()
	rec.Cold = opt.Cold
	if p.Skip != "" {
		rec.Status, rec.Reason = results.StatusSkipped, p.Skip
		return rec, nil, nil
	}
	var st, refSt sampler.Stats
	var timed []func()
	if n := p.Threads(); n > 1 {
		if p.prepareN == nil {
			rec.Status, rec.Reason = results.StatusSkipped, fmt.Sprintf("%s has no split across threads yet", rec.Kernel)
			return rec, nil, nil
		}
		shares, relErr, err := p.prepareN(p.group, n)
		rec.MaxRelErr = results.Float(relErr)
		if why, ok := errors.AsType[errNoSplit](err); ok {
			rec.Status, rec.Reason = results.StatusSkipped, string(why)
			return rec, nil, nil
		}
		if err != nil {
			rec.Status, rec.Reason = results.StatusFailed, fmt.Sprintf("%d threads: %v", n, err)
			return rec, nil, nil
		}
		timed = shares
		var refCall func(w int)
		if ref != nil {
			refCall = func(w int) { ref.shares[w]() }
		}
		runtime.GC()
		// Performance counters are read on the measuring thread only:
		// an n-thread point has none.
		st, refSt, _ = sampler.MeasureParallelPaired(p.samplerConfig(opt), opt.workers[:n], func(w int) { shares[w]() }, refCall)
	} else {
		call, relErr, err := p.prepare(p.group)
		rec.MaxRelErr = results.Float(relErr)
		if err != nil {
			rec.Status, rec.Reason = results.StatusFailed, err.Error()
			return rec, nil, nil
		}
		timed = []func(){call}
		var refCall func()
		if ref != nil {
			refCall = ref.shares[0]
		}
		runtime.GC() // no collection work left over from setup inside the samples
		var m sampler.Meter
		if meter != nil {
			meter.reset()
			m = meter
		}
		m = newClockMeter(m) // the core clock beside the samples
		st, refSt, err = sampler.MeasurePaired(ctx, p.samplerConfig(opt), call, refCall, m)
		if errors.Is(err, sampler.ErrInterrupted) {
			return rec, nil, err
		}
		rec.ClockGHz = clockOf(m)
		if meter != nil {
			meter.fill(&rec)
		}
	}
	rec.Samples, rec.Rejected, rec.Tolerated, rec.CallsPerSample = st.Kept, st.Rejected, st.Tolerated, st.CallsPerSample
	rec.KeptNs = st.Samples
	if st.Kept == 0 {
		rec.Status, rec.Reason = results.StatusUnstable, fmt.Sprintf("every sample was preempted (%d rejected); the machine is busy", st.Rejected)
		return rec, timed, nil
	}
	rec.Status = results.StatusOK
	maxMAD := opt.maxMAD()
	rec.NsMedian, rec.NsMin = results.Float(st.Median), results.Float(st.Min)
	rec.MadPct, rec.CvPct = results.Float(st.MADPct()), results.Float(st.CVPct())
	switch {
	case !st.Enough(opt.Sampler):
		rec.Status = results.StatusUnstable
		rec.Reason = fmt.Sprintf("only %d samples kept, %d needed (%d rejected: the thread was off its CPU); the machine is busy", st.Kept, opt.Sampler.Effective().MinSamples, st.Rejected)
	case rec.PageFaults.Valid() && rec.PageFaults >= 1:
		// The timed calls mapped memory (a first touch): what they
		// measured is the OS's page-fault path, not the kernel.
		rec.Status = results.StatusUnstable
		rec.Reason = fmt.Sprintf("%.0f page faults a call: the timed calls touched memory for the first time (a bug in ckbench's setup of this point, please report it)", float64(rec.PageFaults))
	case st.MADPct() > maxMAD:
		rec.Status = results.StatusUnstable
		rec.Reason = fmt.Sprintf("samples spread %.1f %% (MAD) > %g %%", st.MADPct(), maxMAD) + results.SpreadAdvice
	}
	if rec.Flops.Valid() {
		rec.GFlops = results.Float(float64(rec.Flops) / st.Median)
	}
	if rec.Bytes.Valid() {
		rec.GBs = results.Float(float64(rec.Bytes) / st.Median)
	}
	if rec.IntOps.Valid() {
		rec.GOps = results.Float(float64(rec.IntOps) / st.Median)
	}
	if ref != nil && refSt.Kept > 0 && rec.Bytes.Valid() && ref.pt.Rec.Bytes.Valid() {
		refBytes := float64(ref.pt.Rec.Bytes)
		rec.ReadGBs = results.Float(refBytes / refSt.Median)
		rec.PctOfRead, rec.ReadMadPct = pairedPct(st.Samples, refSt.Samples, float64(rec.Bytes), refBytes)
	}
	return rec, timed, nil
}

// pairedPct is the point's GB/s as a percentage of its read loop's, sample
// by sample (ns and refNs per call, taken back to back, moving bytes and
// refBytes): the median of those ratios and their spread (MAD, % of it).
func pairedPct(ns, refNs []float64, bytes, refBytes float64) (pct, madPct results.Float) {
	r := make([]float64, len(ns))
	for i := range ns {
		r[i] = 100 * (bytes / ns[i]) / (refBytes / refNs[i])
	}
	s := sampler.Summarize(r)
	return results.Float(s.Median), results.Float(s.MADPct())
}

// flagAboveBound marks an ok point faster than a ceiling of this machine
// allows: it is a measurement problem, not a result. An unstable point
// stays unstable, and its reason says it is above the ceiling too, so
// that its pct_of_bound or pct_of_read over 100 is not read as a figure.
func flagAboveBound(rec *results.Record) {
	if rec.Status != results.StatusOK && rec.Status != results.StatusUnstable {
		return
	}
	var why string
	switch {
	case rec.PctOfBound.Valid() && rec.PctOfBound > results.AboveBoundPct:
		why = fmt.Sprintf("%.0f %% of its roofline bound (%s): the roofline was measured in a slower moment of the host, or the working set sits in a faster level than %s", float64(rec.PctOfBound), rec.Level, rec.Level)
	case rec.PctOfRead.Valid() && rec.PctOfRead > results.AboveBoundPct:
		why = fmt.Sprintf("%.0f %% of the read loop over the same bytes (%.1f GB/s), timed in alternation with it: the kernel reads these bytes faster than the plain loop does (or the data sit in a faster level for one of them)", float64(rec.PctOfRead), float64(rec.ReadGBs))
	default:
		return
	}
	if rec.Status == results.StatusUnstable {
		rec.Reason += "; and at " + why
		return
	}
	rec.Status, rec.Reason = results.StatusAboveBound, why
}

// pointLine is a finished point in a few figures: its status, time,
// rates and share of its bound, or why it has none.
func pointLine(r *results.Record) string {
	if !r.NsMedian.Valid() {
		return r.Status + " (" + r.Reason + ")"
	}
	status := r.Status
	if r.Attempts > 1 {
		status += fmt.Sprintf(" (%d attempts)", r.Attempts)
	}
	s := fmt.Sprintf("%s %.2f µs/call", status, float64(r.NsMedian)/1e3)
	if r.GBs.Valid() {
		s += fmt.Sprintf(", %.1f GB/s", float64(r.GBs))
	}
	if r.GFlops.Valid() && r.GFlops > 0 {
		s += fmt.Sprintf(", %.1f GFLOP/s", float64(r.GFlops))
	}
	if r.PctOfBound.Valid() {
		s += fmt.Sprintf(", %.0f %% of bound (%s)", float64(r.PctOfBound), r.Level)
	}
	return s
}

// progress draws "[=====>    ] 12/48  ETA 1m20s  what" on a terminal.
type progress struct {
	w        io.Writer
	total    int
	began    time.Time
	measured int // points that took real time (not skipped)
	spent    time.Duration
	pointAt  time.Time
	label    string
	named    func(*results.Record) string // the family's name of a point
	what     string                       // what the last line counts ("points")
	finished bool
}

func newProgress(w io.Writer, total int, family string) *progress {
	p := &progress{w: w, total: total, began: time.Now(), what: "points"}
	p.named = func(r *results.Record) string { return r.Kernel + " " + r.ISA }
	if f, ok := LookupFamily(family); ok {
		p.named = f.Summary().Named
	}
	return p
}

func (p *progress) start(i int, r results.Record) {
	if p.w == nil {
		return
	}
	p.pointAt = time.Now()
	p.label = p.named(&r)
	p.draw(i)
}

func (p *progress) done(n int, skipped bool) {
	if p.w == nil {
		return
	}
	if !skipped {
		p.measured++
		p.spent += time.Since(p.pointAt)
	}
	p.draw(n)
}

func (p *progress) draw(n int) {
	const width = 30
	fill := width * n / max(p.total, 1)
	bar := make([]byte, width)
	for i := range bar {
		switch {
		case i < fill:
			bar[i] = '='
		case i == fill:
			bar[i] = '>'
		default:
			bar[i] = ' '
		}
	}
	eta := "ETA --"
	if p.measured > 0 {
		per := p.spent / time.Duration(p.measured)
		eta = "ETA " + (per * time.Duration(p.total-n)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r\033[K[%s] %d/%d  %s  %s", bar, n, p.total, eta, p.label)
}

func (p *progress) finish() {
	if p.w == nil || p.finished {
		return
	}
	p.finished = true
	fmt.Fprintf(p.w, "\r\033[K%d %s in %s\n", p.total, p.what, time.Since(p.began).Round(time.Second))
}
