package results

import (
	"io"
	"reflect"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// nameKeys lists, per family, the record keys that make up a benchmark
// name after Benchmark<Family>/<kernel>, in order: each family registers
// its own (sweeps.Register calls RegisterBenchKeys).
var nameKeys = map[string][]string{}

// RegisterBenchKeys sets the record columns that name family's points in
// bench.txt. A key that is not a column of the records panics: it is a
// mistake in the family's adapter, found when the program starts.
func RegisterBenchKeys(family string, keys []string) {
	for _, k := range keys {
		if _, ok := columnByName[k]; !ok {
			panic("results: bench key " + k + " of family " + family + " is not a record column")
		}
	}
	nameKeys[family] = keys
}

// PctOfBoundUnit is the unit of bench.txt's share of the roofline bound
// (pct_of_bound, in %), higher is better.
const PctOfBoundUnit = "pct-of-bound"

// BenchLinesPerPoint bounds the result lines one point contributes to
// bench.txt: the kept samples are split, in time order, into this many
// consecutive groups, one line (mean ns per call of the group) each, so
// benchstat sees the run-to-run spread without thousands of lines.
const BenchLinesPerPoint = 10

// BenchName is the benchmark name of a record, without the "Benchmark"
// prefix: Attention/decode-flash/isa=avx512/exp=fast/hd=128/...
func BenchName(r *Record) string {
	var b strings.Builder
	b.WriteString(strings.ToUpper(r.Family[:1]) + r.Family[1:])
	b.WriteString("/" + keyName(r.Kernel))
	v := reflect.ValueOf(r).Elem()
	for _, k := range nameKeys[r.Family] {
		c := columnByName[k]
		val := cell(v.Field(c.index), c)
		if val == "" {
			continue // a key that does not apply (a window of none, a head-major layout) leaves the name as it was
		}
		b.WriteString("/" + k + "=" + keyName(val))
	}
	if r.Cold {
		b.WriteString("/mode=cold")
	}
	if r.Th > 1 {
		b.WriteString("/th=" + cell(v.FieldByName("Th"), column{}))
	}
	return b.String()
}

// WriteBench writes the timed records in the Go benchmark format, with
// unit metadata that tells benchstat that higher GB/s and GFLOP/s are
// better. The machine is named in comment lines (header), not as file
// configuration: benchstat puts results whose file configuration differs
// into separate tables, so "cpu: ..." would stop `benchstat a b` from
// comparing two machines, the main use of this file. config holds the
// configuration keys that are the same everywhere (pkg).
func WriteBench(w io.Writer, header []string, config map[string]string, recs []Record) error {
	return writeBench(w, header, config, nil, recs)
}

// writeBench is WriteBench with prior results (a resumed run's lines
// from before) written first, under the same configuration.
func writeBench(w io.Writer, header []string, config map[string]string, prior []*benchfmt.Result, recs []Record) error {
	for _, h := range header {
		if _, err := io.WriteString(w, "# "+h+"\n"); err != nil {
			return err
		}
	}
	bw := benchfmt.NewWriter(w)
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var cfg []benchfmt.Config
	for _, k := range keys {
		cfg = append(cfg, benchfmt.Config{Key: k, Value: []byte(config[k]), File: true})
	}
	for _, unit := range []string{"GB/s", "GFLOP/s", PctOfBoundUnit} {
		m := &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: unit, Key: "better"}, OrigUnit: unit, Value: "higher"}
		if err := bw.Write(m); err != nil {
			return err
		}
	}
	for _, res := range prior {
		res.Config = cfg
		if err := bw.Write(res); err != nil {
			return err
		}
	}
	for i := range recs {
		r := &recs[i]
		if r.Status != StatusOK || len(r.KeptNs) == 0 {
			continue
		}
		name := benchfmt.Name(BenchName(r))
		per := r.CallsPerSample
		if per < 1 {
			per = 1
		}
		for _, g := range splitGroups(r.KeptNs, BenchLinesPerPoint) {
			var sum float64
			for _, ns := range g {
				sum += ns
			}
			ns := sum / float64(len(g))
			vals := []benchfmt.Value{{Value: ns, Unit: "ns/op"}}
			if r.Bytes.Valid() && r.Bytes > 0 {
				vals = append(vals, benchfmt.Value{Value: float64(r.Bytes) / ns, Unit: "GB/s"})
			}
			if r.Flops.Valid() && r.Flops > 0 {
				vals = append(vals, benchfmt.Value{Value: float64(r.Flops) / ns, Unit: "GFLOP/s"})
			}
			if r.PctOfBound.Valid() && r.NsMedian.Valid() {
				// The bound is a rate: the group's share of it scales
				// with its speed against the median's.
				vals = append(vals, benchfmt.Value{Value: float64(r.PctOfBound) * float64(r.NsMedian) / ns, Unit: PctOfBoundUnit})
			}
			res := &benchfmt.Result{Config: cfg, Name: name, Iters: per * len(g), Values: vals}
			if err := bw.Write(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// splitGroups splits xs, in order, into at most n groups of near-equal size.
func splitGroups(xs []float64, n int) [][]float64 {
	if len(xs) < n {
		n = len(xs)
	}
	out := make([][]float64, 0, n)
	for i := range n {
		out = append(out, xs[i*len(xs)/n:(i+1)*len(xs)/n])
	}
	return out
}
