// Package results defines the record of one sweep point and writes a run's
// folder: machine.json, points.csv and points.jsonl (one schema: the JSON
// keys are the CSV columns, in the same order) and bench.txt in the Go
// benchmark format that benchstat reads.
package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Status of a point.
const (
	StatusOK       = "ok"       // checked against the reference, then timed
	StatusFailed   = "failed"   // did not match the reference: never timed
	StatusSkipped  = "skipped"  // not run here (tier missing, too large, ...)
	StatusUnstable = "unstable" // timed, but its samples spread too much or too few survived: not a result
	// StatusAboveBound: timed, but faster than a ceiling measured on the
	// same machine allows (pct_of_bound or pct_of_read above 105): a
	// measurement problem, not a result. The reason says which ceiling.
	StatusAboveBound = "above_bound"
)

// SpreadAdvice ends the reason of a point unstable by its spread: what it
// means and what to do. A report says it once, not once a point.
const SpreadAdvice = ": the machine's speed changed while it was measured (other tenants, clock); rerun on a quieter machine or with a longer minimum time"

// Statuses lists every status, in the order summaries count them.
var Statuses = []string{StatusOK, StatusUnstable, StatusAboveBound, StatusFailed, StatusSkipped}

// AboveBoundPct is the share of a ceiling above which a point is flagged
// above_bound: 5 % over it is more than the run-to-run spread of a
// ceiling measured with the best of several passes.
const AboveBoundPct = 105

// Float is a measured quantity that may be absent (NaN): an empty CSV cell
// and a JSON null, never a misleading 0.
type Float float64

// Missing is the absent Float.
func Missing() Float { return Float(math.NaN()) }

// Valid reports whether f holds a value.
func (f Float) Valid() bool { return !math.IsNaN(float64(f)) }

// MarshalJSON writes null for a missing value.
func (f Float) MarshalJSON() ([]byte, error) {
	if !f.Valid() || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'g', -1, 64), nil
}

// UnmarshalJSON reads null as missing.
func (f *Float) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*f = Missing()
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*f = Float(v)
	return nil
}

// Record is one point of a sweep. The json tags name the columns of
// points.csv and the keys of points.jsonl, in this order; keys that
// identify a point use the names of DESIGN.md §4 everywhere.
type Record struct {
	Family string `json:"family"`
	Kernel string `json:"kernel"`
	ISA    string `json:"isa"`
	HD     int    `json:"hd" blank:"zero"`
	TK     string `json:"tk"`                  // "auto", a number, or "none" (kernels without tiles)
	TKEff  int    `json:"tk_eff" blank:"zero"` // the tile actually used (0 for none)
	Ctx    int    `json:"ctx" blank:"zero"`
	H      int    `json:"h" blank:"zero"`
	KVH    int    `json:"kvh" blank:"zero"`
	KV     string `json:"kv"`
	Layout string `json:"layout"`              // the KV cache's row order: pos (position-major); empty: head-major
	Window int    `json:"window" blank:"zero"` // sliding window (keys attended to); empty: none
	Splits int    `json:"splits" blank:"zero"` // decode-split's chunks of the keys; empty for the other kernels
	Tokens int    `json:"tokens" blank:"zero"` // kvcache: tokens a store writes (1 for append)
	Tq     int    `json:"tq" blank:"zero"`     // query rows (softmax: rows of the score matrix); ctx is then the key positions
	Mask   string `json:"mask"`                // causal, none (softmax); empty for decode
	Exp    string `json:"exp"`
	// The quant family's keys: weight format, activations (f32, q8_0,
	// q8_1, q8_K), shape y[M] = W[M×K]·x[K], rows per pass.
	Fmt    string `json:"fmt"`
	Act    string `json:"act"`
	M      int    `json:"m" blank:"zero"`
	K      int    `json:"k" blank:"zero"`
	RB     int    `json:"rb" blank:"zero"`
	Th     int    `json:"th"`
	Cold   bool   `json:"cold"`
	Status string `json:"status"`
	Reason string `json:"reason"`

	NsMedian       Float `json:"ns_median"` // per call
	NsMin          Float `json:"ns_min"`
	MadPct         Float `json:"mad_pct"`   // median absolute deviation, % of median
	CvPct          Float `json:"cv_pct"`    // stddev / mean of kept samples, %
	Samples        int   `json:"samples"`   // kept
	Rejected       int   `json:"rejected"`  // dropped: the thread was off the CPU during them
	Tolerated      int   `json:"tolerated"` // kept although switched out, off the CPU under the limit
	CallsPerSample int   `json:"calls_per_sample"`
	// Attempts is how many times the point was timed: 1, or more where an
	// attempt came out unstable and the runner measured it again
	// (sweeps.Options.Retries); the record is the kept attempt's. Empty
	// for untimed points and in files written before the column existed.
	Attempts int `json:"attempts" blank:"zero"`

	Flops Float `json:"flops"` // per call (work model)
	// DenseFlops is a masked kernel's dense equivalent (prefill: every
	// query row against every key), to compare kernels and masks on the
	// same useful work; empty where it equals flops.
	DenseFlops Float `json:"dense_flops"`
	Bytes      Float `json:"bytes"`   // compulsory bytes per call
	Traffic    Float `json:"traffic"` // bytes the kernel's structure streams
	AI         Float `json:"ai"`      // flops / bytes
	IntOps     Float `json:"int_ops"` // int8 multiply-adds × 2 per call (gemv-q8)
	GFlops     Float `json:"gflops"`  // at the median
	GOps       Float `json:"gops"`    // int_ops / median time
	GBs        Float `json:"gbs"`     // compulsory bytes / median time
	// ReadGBs is the GB/s of the read loop over the same bytes (kv-read,
	// w-read) at the same thread count, timed in alternation with this
	// point (its median over the samples paired with the point's);
	// PctOfRead is the point's GB/s over it, the median of the pairs'
	// ratios, and ReadMadPct their spread (MAD, % of PctOfRead). Pairing
	// keeps the ratio true on a host whose bandwidth moves from one second
	// to the next, where the two times alone are unstable.
	ReadGBs    Float `json:"read_gbs"`
	PctOfRead  Float `json:"pct_of_read"`
	ReadMadPct Float `json:"read_mad_pct"`
	// ClockGHz is the core clock the point ran at, counters or not: a chain
	// of dependent adds (one cycle each, roofline.ClockChain) timed right
	// before every sample, the median over the kept ones. A host's clock
	// moves between minutes (a Zen 5 guest: 2.74–3.60 GHz within an
	// hour), and with it every compute ceiling: a compute-bound
	// point's share of a roof measured at another clock is off by their
	// ratio (roofline.Roofline's clock core_ghz is the same probe). Empty
	// for n threads and where the chain is not built (amd64 only).
	ClockGHz Float `json:"clock_ghz"`
	// Scaling is the 1-thread time of the same point over this one's
	// (its speedup at th threads), Efficiency that over th; empty for 1
	// thread and where the 1-thread point has no time.
	Scaling    Float `json:"scaling"`
	Efficiency Float `json:"efficiency"`
	// The roofline bound (see roofline.Bound): the memory level the
	// working set lives in, min(compute peak of the tier, AI × that level's
	// bandwidth), and gflops as a percentage of it (for kernels without
	// FLOPs: gbs as a percentage of the level's bandwidth). The peak is at
	// ClockGHz where the point has one (sweeps.BoundBy).
	Level       string `json:"level"`
	BoundGFlops Float  `json:"bound_gflops"`
	PctOfBound  Float  `json:"pct_of_bound"`
	MaxRelErr   Float  `json:"max_rel_err"`
	CPU         int    `json:"cpu"` // the CPU the measuring thread was pinned to (-1: not pinned)

	// Performance counters per call, summed over the kept samples and
	// scaled for multiplexing (see hwcounters). Missing when the event is
	// unavailable here or not asked for: machine.json says which and why.
	Cycles          Float  `json:"cycles"`
	Instructions    Float  `json:"instructions"`
	RefCycles       Float  `json:"ref_cycles"`
	BranchMisses    Float  `json:"branch_misses"`
	L1DReadMisses   Float  `json:"l1d_read_misses"`
	LLCReads        Float  `json:"llc_reads"`
	LLCReadMisses   Float  `json:"llc_read_misses"`
	DTLBReadMisses  Float  `json:"dtlb_read_misses"`
	TaskClockNs     Float  `json:"task_clock_ns"`
	ContextSwitches Float  `json:"context_switches"`
	CPUMigrations   Float  `json:"cpu_migrations"`
	PageFaults      Float  `json:"page_faults"`
	RawCounts       string `json:"raw_counts"` // raw events: "r01c2=1234.5 r0151=12"
	// CountersRunningPct is the smallest running/enabled of the counter
	// groups: below 100 the counts are extrapolated (multiplexed PMU).
	CountersRunningPct Float `json:"counters_running_pct"`
	// Derived where their inputs exist.
	IPC           Float `json:"ipc"`             // instructions / cycles
	GHz           Float `json:"ghz"`             // cycles / task-clock: the effective clock
	BytesPerCycle Float `json:"bytes_per_cycle"` // compulsory bytes / cycles
	FlopsPerCycle Float `json:"flops_per_cycle"`
	LLCMissPct    Float `json:"llc_miss_pct"` // llc_read_misses / llc_reads

	// Schema is the version of this record's layout (SchemaVersion when
	// written by this ckbench): readers refuse another.
	Schema int `json:"schema"`

	// KeptNs holds the kept samples (ns per call, in order) for bench.txt.
	KeptNs []float64 `json:"-"`
}

// Retried counts the records measured more than once (an attempt came out
// unstable: Attempts > 1), and how many of them are not unstable in the
// end.
func Retried(recs []Record) (again, stable int) {
	for _, r := range recs {
		if r.Attempts > 1 {
			again++
			if r.Status != StatusUnstable {
				stable++
			}
		}
	}
	return again, stable
}

// SchemaVersion is the version of the results files' layout (records,
// machine.json, bench.txt's header): it changes when a column changes
// meaning or goes away, and every reader refuses files of another version
// (ErrSchema) rather than misread them.
const SchemaVersion = 1

// ErrSchema marks a results file of another schema version.
var ErrSchema = errors.New("results of another schema version")

// checkSchema is the error for a file of schema v (0: written before
// versions existed), or nil.
func checkSchema(name string, v int) error {
	switch v {
	case SchemaVersion:
		return nil
	case 0:
		return fmt.Errorf("%s: %w: no schema version (written by a ckbench before 0.1.0's schema %d): measure it again with this ckbench", name, ErrSchema, SchemaVersion)
	}
	return fmt.Errorf("%s: %w: schema %d, this ckbench reads schema %d: use the ckbench that wrote it, or measure again", name, ErrSchema, v, SchemaVersion)
}

// NewRecord returns a record whose measured fields are all missing.
func NewRecord() Record {
	r := Record{CPU: -1, Schema: SchemaVersion}
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Type() == floatType {
			f.SetFloat(math.NaN())
		}
	}
	return r
}

var floatType = reflect.TypeFor[Float]()

// ReadCell is the point's share of its paired read loop as a table shows
// it: "97±4" (the ± in points of the share), "97" without a spread, "-"
// without a read loop.
// IsReadCeiling reports whether r is the read loop the other points of its
// shape were timed in alternation with (kv-read, w-read, kv-copy, the best
// tier's): its read_gbs is its own rate, its pct_of_read 100 by
// construction, and it has no pairing spread.
func (r *Record) IsReadCeiling() bool {
	return r.GBs.Valid() && r.ReadGBs.Valid() && r.ReadGBs == r.GBs && !r.ReadMadPct.Valid()
}

func (r *Record) ReadCell() string {
	if !r.PctOfRead.Valid() {
		return "-"
	}
	s := fmt.Sprintf("%.0f", float64(r.PctOfRead))
	if r.ReadMadPct.Valid() {
		s += fmt.Sprintf("±%.0f", float64(r.ReadMadPct)*float64(r.PctOfRead)/100)
	}
	return s
}

// SetCounter stores the per-call count of a named hardware-counter event
// ("cycles", "llc-read-misses", "task-clock", ...) in its column. It
// reports false for an event without a column of its own (raw events).
func (r *Record) SetCounter(event string, v float64) bool {
	name := strings.ReplaceAll(event, "-", "_")
	if event == "task-clock" {
		name = "task_clock_ns"
	}
	i, ok := counterColumns[name]
	if !ok {
		return false
	}
	reflect.ValueOf(r).Elem().Field(i).SetFloat(v)
	return true
}

// counterColumns are the Float columns from cycles to page_faults.
var counterColumns = func() map[string]int {
	m := map[string]int{}
	in := false
	for _, c := range columns {
		in = in || c.name == "cycles"
		if in {
			m[c.name] = c.index
		}
		if c.name == "page_faults" {
			break
		}
	}
	return m
}()

// column is one field of Record as it appears in the files. A blankZero
// column (tag blank:"zero") is a positive size of one family only (hd,
// ctx, m, k, rb, ...): its 0 means "does not apply", written as an empty
// CSV cell and a JSON null, never as a misleading 0.
type column struct {
	name      string
	index     int
	blankZero bool
}

var columns = func() []column {
	t := reflect.TypeOf(Record{})
	var cs []column
	for i := range t.NumField() {
		name := t.Field(i).Tag.Get("json")
		if name == "" || name == "-" {
			continue
		}
		cs = append(cs, column{name, i, t.Field(i).Tag.Get("blank") == "zero"})
	}
	return cs
}()

// columnByName maps a column name to its column.
var columnByName = func() map[string]column {
	m := make(map[string]column, len(columns))
	for _, c := range columns {
		m[c.name] = c
	}
	return m
}()

// Columns returns the column names of points.csv, in order.
func Columns() []string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.name
	}
	return names
}

// cell formats one field for CSV.
func cell(v reflect.Value, c column) string {
	if c.blankZero && v.Int() == 0 {
		return ""
	}
	switch x := v.Interface().(type) {
	case Float:
		if !x.Valid() || math.IsInf(float64(x), 0) {
			return ""
		}
		return strconv.FormatFloat(float64(x), 'g', 7, 64)
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("results: no CSV format for %s", v.Type()))
}

// setCell parses one CSV field into v.
func setCell(v reflect.Value, s string) error {
	switch v.Interface().(type) {
	case Float:
		if s == "" {
			v.Set(reflect.ValueOf(Missing()))
			return nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v.Set(reflect.ValueOf(Float(f)))
	case string:
		v.SetString(s)
	case int:
		if s == "" {
			v.SetInt(0) // a blank-zero column that does not apply
			return nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%q is not an integer", s)
		}
		v.SetInt(int64(n))
	case bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true/false", s)
		}
		v.SetBool(b)
	}
	return nil
}

// marshalLine writes r as one JSON object with keys in column order, a
// blank-zero column's 0 as null.
func marshalLine(r *Record) ([]byte, error) {
	v := reflect.ValueOf(r).Elem()
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range columns {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(c.name)
		b.Write(key)
		b.WriteByte(':')
		f := v.Field(c.index)
		if c.blankZero && f.Int() == 0 {
			b.WriteString("null")
			continue
		}
		val, err := json.Marshal(f.Interface())
		if err != nil {
			return nil, err
		}
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
