package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// The fixtures are two ckbench run folders of the same attention grid on
// two machines: zen4 (every tier) and zen3 (no AVX-512: its avx512
// points are skipped, so absent from its bench.txt), zen3 1.4× slower.
func load(t *testing.T, names ...string) []*Input {
	t.Helper()
	var ins []*Input
	for _, n := range names {
		in, err := Load(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	return ins
}

func TestCompare(t *testing.T) {
	ins := load(t, "zen4", "zen3")
	if got := ins[1].Machine.String(); !strings.Contains(got, "7R13") || !strings.Contains(got, "[generic,avx2]") || !strings.Contains(got, "ckbench 0.1.0-dev") {
		t.Errorf("zen3's identity %q: want its CPU and its tiers", got)
	}
	tab, err := Compare(ins, Ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 8 { // 2 kernels × generic, avx2 × 2 contexts; avx512 only on zen4
		t.Fatalf("%d rows, want 8", len(tab.Rows))
	}
	for _, r := range tab.Rows {
		c := r.Cells[1]
		if c == nil || math.Abs(c.Ratio-1.4) > 0.05 || !c.Significant || !(c.P < 0.05) {
			t.Errorf("%s: %+v, want a significant ratio near 1.4", r.Name, c)
		}
	}
	if g := tab.Geomean["attention/decode-flash/avx2"]; len(g) != 2 || math.Abs(g[1]-1.4) > 0.05 {
		t.Errorf("geomean of decode-flash/avx2: %v", g)
	}
	var txt, csv bytes.Buffer
	if err := tab.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A  zen4  AMD EPYC 9R14", "B  zen3  AMD EPYC 7R13", "attention/decode-flash-gqa", "geomean avx2", "1.4"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if n := strings.Count(csv.String(), "\n"); n != 1+16 {
		t.Errorf("compare.csv: %d lines, want a header and 16", n)
	}
	dir := t.TempDir()
	if err := tab.Chart().Save(filepath.Join(dir, "compare.png"), filepath.Join(dir, "compare.svg")); err != nil {
		t.Fatal(err)
	}
	// A higher-is-better metric: the ratio of rates is the inverse.
	tab, err = Compare(ins, GBs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := tab.Rows[0].Cells[1].Ratio; math.Abs(r-1/1.4) > 0.03 || tab.Better(r) {
		t.Errorf("GB/s ratio %v, want about 1/1.4 and worse", r)
	}
	if _, err := Compare(ins, PctOfBound, nil); err != nil {
		t.Error(err)
	}
}

func TestFilter(t *testing.T) {
	ins := load(t, "zen4", "zen3")
	for _, c := range []struct {
		f    string
		rows int
	}{
		{"isa=avx2", 4},
		{"kernel=decode-flash isa!=avx2", 2},
		{"family=attention ctx=512,4096 hd=128", 8},
		{"ISA=generic,avx2 kernel!=decode-flash-gqa", 4},
	} {
		f, err := ParseFilter(c.f)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := Compare(ins, Ns, f)
		if err != nil {
			t.Fatalf("%s: %v", c.f, err)
		}
		if len(tab.Rows) != c.rows {
			t.Errorf("filter %q: %d rows, want %d", c.f, len(tab.Rows), c.rows)
		}
	}
	for _, bad := range []string{"isa", "=x", "isa="} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("filter %q accepted", bad)
		}
	}
}

// TestNoCommon: inputs without a common point are an error that names
// what each has.
func TestNoCommon(t *testing.T) {
	ins := load(t, "zen4", "zen3")
	f, _ := ParseFilter("isa=avx512")
	_, err := Compare(ins, Ns, f)
	if !errors.Is(err, ErrNoCommon) || !strings.Contains(err.Error(), "zen3 has 0") || !strings.Contains(err.Error(), "zen4 has 4") {
		t.Errorf("error %v", err)
	}
	if _, err := Compare(ins[:1], Ns, nil); err == nil {
		t.Error("one input compared")
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNoInput) {
		t.Errorf("an empty folder: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bench.txt")
	os.WriteFile(bad, []byte("BenchmarkX 1 abc ns/op\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "bench.txt") {
		t.Errorf("a corrupt bench.txt: %v", err)
	}
}

// TestBenchstat reads the two fixtures' bench.txt the way benchstat does
// (golang.org/x/perf's benchfmt.Files, benchproc projections: table by
// .config, rows by .fullname, columns by .file; benchmath's U test), and
// checks that the machines land in one table, every point in both
// columns, with GB/s known to be higher-is-better: `benchstat
// zen4/bench.txt zen3/bench.txt` compares them point by point.
func TestBenchstat(t *testing.T) {
	paths := []string{filepath.Join("testdata", "zen4", "bench.txt"), filepath.Join("testdata", "zen3", "bench.txt")}
	filter, err := benchproc.NewFilter("*")
	if err != nil {
		t.Fatal(err)
	}
	var parser benchproc.ProjectionParser
	tableBy, unitField, err := parser.ParseWithUnit(".config", filter)
	if err != nil {
		t.Fatal(err)
	}
	rowBy, err := parser.Parse(".fullname", filter)
	if err != nil {
		t.Fatal(err)
	}
	colBy, err := parser.Parse(".file", filter)
	if err != nil {
		t.Fatal(err)
	}
	type cell struct{ table, row, col, unit string }
	vals := map[cell][]float64{}
	cols := map[string]bool{}
	files := benchfmt.Files{Paths: paths, AllowLabels: true}
	for files.Scan() {
		switch r := files.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("benchstat would warn: %v", r)
		case *benchfmt.Result:
			rk, ck := rowBy.Project(r).StringValues(), colBy.Project(r).StringValues()
			for i, tu := range tableBy.ProjectValues(r) {
				c := cell{tableBy.Project(r).StringValues(), rk, ck, tu.Get(unitField)}
				vals[c] = append(vals[c], r.Values[i].Value)
			}
			cols[ck] = true
		}
	}
	if err := files.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cols) != 2 {
		t.Fatalf("columns %v, want the two files", cols)
	}
	configs := map[string]bool{}
	for c := range vals {
		configs[c.table] = true
	}
	if len(configs) != 1 {
		t.Errorf("results split into %d tables by their configuration (%v): benchstat would not compare the machines", len(configs), configs)
	}
	if u := files.Units(); u[benchfmt.UnitMetadataKey{Unit: "GB/s", Key: "better"}] == nil {
		t.Error("no better=higher metadata for GB/s")
	}
	// Every avx2 point is in both columns and compares.
	thr := benchmath.DefaultThresholds
	compared := 0
	for c, a := range vals {
		if c.col != paths[0] || c.unit != "sec/op" || !strings.Contains(c.row, "isa=avx2") {
			continue
		}
		other := c
		other.col = paths[1]
		b := vals[other]
		if len(b) == 0 {
			t.Errorf("%s: only in %s", c.row, c.col)
			continue
		}
		cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(a, &thr), benchmath.NewSample(b, &thr))
		if !(cmp.P < 0.05) {
			t.Errorf("%s: p = %v between 1× and 1.4×", c.row, cmp.P)
		}
		compared++
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
}

// writeRoofline writes a roofline.json of three ceilings (clock, avx2
// FMA, DRAM read) scaled by k into dir.
func writeRoofline(t testing.TB, dir string, k float64, cpu string) {
	writeRooflineDRAM(t, dir, k, k, cpu)
}

// writeRooflineDRAM is writeRoofline with the DRAM read scaled by dram.
func writeRooflineDRAM(t testing.TB, dir string, k, dram float64, cpu string) {
	t.Helper()
	r := roofline.Roofline{Version: 1, Quick: true, MaxPassSpreadPct: 3}
	r.Machine.CPU.Brand = cpu
	r.Clock.CoreGHz = 3 * k
	r.Compute = []roofline.Compute{{Kind: "fp32-fma", Tier: isa.AVX2, Threads: 1, Unit: "GFLOP/s", Value: 100 * k}}
	r.Levels = []roofline.Level{{Name: "DRAM", Threads: 1, GBs: 20 * dram}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "roofline.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCompareCeilings: each input's roofline ceilings are put side by
// side with their ratios, in the text and the CSV; two rooflines alone
// are a comparison of their ceilings; a roofline against a sweep is not,
// and says why; a corrupt roofline.json is refused as corrupt.
func TestCompareCeilings(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeRoofline(t, a, 1, "CPU one")
	writeRoofline(t, filepath.Join(b, "step"), 9, "CPU two") // a step's copy, deeper: not read
	writeRoofline(t, b, 1.5, "CPU two")
	ins := []*Input{}
	for _, p := range []string{a, b} {
		in, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	tab, err := Compare(ins, Ns, nil)
	if err != nil {
		t.Fatalf("two rooflines: %v", err)
	}
	if len(tab.Rows) != 0 || len(tab.Ceilings) != 3 {
		t.Fatalf("%d rows, %d ceilings: want 0 and 3 (clock, FMA, DRAM)", len(tab.Rows), len(tab.Ceilings))
	}
	for _, r := range tab.Ceilings {
		if math.Abs(r.Values[1]/r.Values[0]-1.5) > 1e-9 {
			t.Errorf("%s: %v, want B = 1.5 A", r.Name, r.Values)
		}
	}
	var txt, csv bytes.Buffer
	if err := tab.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CPU two", "ceilings", "read DRAM th=1", "fp32-fma isa=avx2 th=1", "1.500×", "passes spread up to 3 %"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if strings.Contains(txt.String(), "metric:") {
		t.Errorf("rooflines alone, but a points block:\n%s", txt.String())
	}
	if n := strings.Count(csv.String(), "\n"); n != 1+6 || strings.Count(csv.String(), ",ceiling,") != 2*6 {
		t.Errorf("compare.csv: %d lines, want a header and 6 ceilings:\n%s", n, csv.String())
	}
	if err := tab.Chart().Save(filepath.Join(dir, "c.png")); err != nil {
		t.Fatal(err)
	}
	// A sweep's folder with its roofline against the fixtures: points
	// compared, ceilings where both have them (zen3 has none: no row).
	zen := load(t, "zen4", "zen3")
	zen[0].Ceilings, zen[0].Roofline = ins[0].Ceilings, ins[0].Roofline
	if tab, err = Compare(zen, Ns, nil); err != nil || len(tab.Rows) != 8 || len(tab.Ceilings) != 0 {
		t.Fatalf("one side with a roofline: %v (%d ceilings)", err, len(tab.Ceilings))
	}
	zen[1].Ceilings, zen[1].Roofline = ins[1].Ceilings, ins[1].Roofline
	if tab, err = Compare(zen, Ns, nil); err != nil || len(tab.Rows) != 8 || len(tab.Ceilings) != 3 {
		t.Fatalf("both sides with a roofline: %v (%d ceilings)", err, len(tab.Ceilings))
	}
	if _, err := Compare([]*Input{zen[0], ins[1]}, Ns, nil); !errors.Is(err, ErrNoCommon) || !strings.Contains(err.Error(), "a roofline only") {
		t.Fatalf("a sweep against a roofline: %v", err)
	}
	if err := os.WriteFile(filepath.Join(a, "roofline.json"), []byte(`{"version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(a); !errors.Is(err, results.ErrCorrupt) {
		t.Fatalf("a corrupt roofline.json: %v", err)
	}
}
