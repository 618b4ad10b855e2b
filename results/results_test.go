package results

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/ckbench/ckbench/machine"
)

func sample() []Record {
	ok := NewRecord()
	ok.Family, ok.Kernel, ok.ISA, ok.HD, ok.TK, ok.TKEff = "attention", "decode-flash", "avx512", 128, "auto", 16
	ok.Ctx, ok.H, ok.KVH, ok.KV, ok.Exp, ok.Th, ok.Status = 4096, 16, 8, "f32", "fast", 1, StatusOK
	ok.NsMedian, ok.NsMin, ok.MadPct, ok.CvPct = 1000, 990, 0.5, 1.25
	ok.Samples, ok.Rejected, ok.CallsPerSample = 12, 3, 20
	ok.Flops, ok.Bytes, ok.Traffic, ok.AI, ok.GFlops, ok.GBs = 4e6, 8e6, 8e6, 0.5, 4, 8
	ok.MaxRelErr, ok.CPU = 1e-7, 1
	ok.KeptNs = []float64{1000, 1001, 999, 1000, 1002, 998, 1000, 1000, 1000, 1000, 1000, 1000}
	failed := ok
	failed.KeptNs = nil
	failed.Status, failed.Reason, failed.ISA = StatusFailed, "max rel err 3e-2 > 1e-5", "avx2"
	failed.NsMedian, failed.NsMin, failed.GBs, failed.GFlops = Missing(), Missing(), Missing(), Missing()
	return []Record{ok, failed}
}

// equal compares records treating NaN == NaN and ignoring KeptNs.
func equal(a, b Record) bool {
	a.KeptNs, b.KeptNs = nil, nil
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		x, y := va.Field(i).Interface(), vb.Field(i).Interface()
		if fx, ok := x.(Float); ok {
			fy := y.(Float)
			if fx.Valid() != fy.Valid() || (fx.Valid() && float32(fx) != float32(fy)) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	recs := sample()
	var csvBuf, jsonBuf bytes.Buffer
	if err := WriteCSV(&csvBuf, recs); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONL(&jsonBuf, recs); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(csvBuf.String(), "family,kernel,isa,hd,tk,") {
		t.Fatalf("csv header: %q", strings.SplitN(csvBuf.String(), "\n", 2)[0])
	}
	if !strings.Contains(jsonBuf.String(), `"ns_median":null`) {
		t.Fatalf("missing value must be null in JSON: %s", jsonBuf.String())
	}
	fromCSV, err := ReadCSV(&csvBuf, "points.csv")
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := ReadJSONL(&jsonBuf, "points.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if !equal(recs[i], fromCSV[i]) || !equal(recs[i], fromJSON[i]) {
			t.Fatalf("record %d did not survive:\n%+v\n%+v\n%+v", i, recs[i], fromCSV[i], fromJSON[i])
		}
	}
}

func TestFlushThrottle(t *testing.T) {
	run, err := Create(t.TempDir(), Meta{RunID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	run.FlushEvery = time.Hour
	for _, rec := range sample() {
		if err := run.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := ReadMeta(run.Dir); m.Points != 1 {
		t.Fatalf("the first point is written at once, the second waits: %d on disk", m.Points)
	}
	if err := run.Close(true); err != nil {
		t.Fatal(err)
	}
	if m, _ := ReadMeta(run.Dir); m.Points != 2 || !m.Complete {
		t.Fatalf("Close writes everything: %+v", m)
	}
}

func TestCorrupt(t *testing.T) {
	for name, in := range map[string]string{
		"bad number":  "family,ns_median\nattention,fast\n",
		"unknown col": "family,colour\nattention,red\n",
		"ragged":      "family,kernel\nattention\n",
		"empty":       "",
		"not an int":  "family,hd\nattention,1.5\n",
		"bad bool":    "family,cold\nattention,maybe\n",
	} {
		if _, err := ReadCSV(strings.NewReader(in), "x.csv"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("csv %s: err = %v", name, err)
		}
	}
	for name, in := range map[string]string{
		"truncated":   `{"family":"attention","hd":12`,
		"unknown key": `{"family":"attention","colour":1}`,
		"wrong type":  `{"hd":"big"}`,
	} {
		if _, err := ReadJSONL(strings.NewReader(in), "x.jsonl"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("jsonl %s: err = %v", name, err)
		}
	}
}

func init() {
	// What sweeps registers for the attention family.
	RegisterBenchKeys("attention", []string{"isa", "exp", "hd", "tk", "ctx", "h", "kvh", "kv"})
}

func TestBenchFileReadsBack(t *testing.T) {
	var b bytes.Buffer
	if err := WriteBench(&b, []string{"cpu Test CPU"}, map[string]string{"pkg": "x"}, sample()); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"Unit GB/s better=higher", "Unit GFLOP/s better=higher", "# cpu Test CPU\n", "pkg: x",
		"BenchmarkAttention/decode-flash/isa=avx512/exp=fast/hd=128/tk=auto/ctx=4096/h=16/kvh=8/kv=f32 "} {
		if !strings.Contains(text, want) {
			t.Fatalf("bench.txt lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\ncpu:") || strings.Contains(text, "\ngoarch:") {
		t.Fatalf("machine-specific file configuration splits benchstat tables between machines:\n%s", text)
	}
	r := benchfmt.NewReader(strings.NewReader(text), "bench.txt")
	n := 0
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			n++
			if _, ok := rec.Value("GB/s"); !ok {
				t.Fatalf("no GB/s in %s", rec.Name)
			}
		case *benchfmt.SyntaxError:
			t.Fatal(rec)
		}
	}
	if n != BenchLinesPerPoint {
		t.Fatalf("%d result lines, want %d (failed points get none)", n, BenchLinesPerPoint)
	}
}

func TestRunFolder(t *testing.T) {
	parent := t.TempDir()
	meta := Meta{RunID: NewRunID(time.Unix(0, 0).UTC()), Machine: machine.Describe()}
	run, err := Create(parent, meta)
	if err != nil {
		t.Fatal(err)
	}
	run.FlushEvery = 0 // rewrite after every point
	for _, rec := range sample() {
		if err := run.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	m, err := ReadMeta(run.Dir)
	if err != nil || m.Complete || m.Points != 2 {
		t.Fatalf("mid-run meta %+v, %v", m, err)
	}
	if err := run.Close(false); err != nil {
		t.Fatal(err)
	}
	if m, _ := ReadMeta(run.Dir); m.Complete || m.Finished.IsZero() {
		t.Fatalf("interrupted run must say complete=false: %+v", m)
	}
	recs, err := ReadPoints(run.Dir)
	if err != nil || len(recs) != 2 {
		t.Fatalf("ReadPoints: %d, %v", len(recs), err)
	}
	entries, _ := os.ReadDir(run.Dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}
	if _, err := Create(parent, meta); err == nil {
		t.Fatal("Create reused an existing run folder")
	}
	file := filepath.Join(parent, "afile")
	os.WriteFile(file, nil, 0o644)
	if _, err := Create(file, meta); err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Fatalf("Create under a file: %v", err)
	}
}

// TestOneWriterPerFolder: a run folder is written by one process at a
// time: while its sweep runs (or a resume of it), another Resume of it is
// ErrBusy and leaves it as it was; after Close it can be resumed.
func TestOneWriterPerFolder(t *testing.T) {
	if !dirLocks {
		t.Skip("no flock on this platform: run folders are not locked")
	}
	run, err := Create(t.TempDir(), Meta{RunID: "r", Machine: machine.Describe()})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range sample() {
		run.Add(rec)
	}
	before, _ := os.ReadFile(filepath.Join(run.Dir, "machine.json"))
	if _, err := Resume(run.Dir); !errors.Is(err, ErrBusy) {
		t.Fatalf("Resume of a folder being written: %v, want ErrBusy", err)
	}
	if after, _ := os.ReadFile(filepath.Join(run.Dir, "machine.json")); !bytes.Equal(before, after) {
		t.Errorf("a refused Resume wrote the folder")
	}
	if err := run.Close(false); err != nil {
		t.Fatal(err)
	}
	again, err := Resume(run.Dir)
	if err != nil {
		t.Fatalf("Resume after Close: %v", err)
	}
	if _, err := Resume(run.Dir); !errors.Is(err, ErrBusy) {
		t.Errorf("a second Resume while the first writes: %v, want ErrBusy", err)
	}
	if err := again.Close(true); err != nil {
		t.Fatal(err)
	}
}

// TestBlankZero: a column of the other family (m, k, rb on attention rows;
// hd, ctx on quant rows) is an empty CSV cell and a JSON null, and reads
// back as 0.
func TestBlankZero(t *testing.T) {
	a := NewRecord()
	a.Family, a.Kernel, a.HD, a.Ctx, a.H, a.KVH = "attention", "decode-flash", 128, 4096, 8, 8
	q := NewRecord()
	q.Family, q.Kernel, q.M, q.K, q.RB = "quant", "gemv-q8", 64, 512, 4
	var csvb, jb bytes.Buffer
	if err := WriteCSV(&csvb, []Record{a, q}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONL(&jb, []Record{a, q}); err != nil {
		t.Fatal(err)
	}
	rows, _ := csv.NewReader(bytes.NewReader(csvb.Bytes())).ReadAll()
	col := map[string]int{}
	for i, n := range rows[0] {
		col[n] = i
	}
	for _, c := range []struct {
		row  int
		name string
	}{{1, "m"}, {1, "k"}, {1, "rb"}, {2, "hd"}, {2, "ctx"}, {2, "h"}, {2, "kvh"}} {
		if v := rows[c.row][col[c.name]]; v != "" {
			t.Errorf("row %d column %s = %q, want empty", c.row, c.name, v)
		}
	}
	if !bytes.Contains(jb.Bytes(), []byte(`"m":null`)) || !bytes.Contains(jb.Bytes(), []byte(`"hd":128`)) {
		t.Errorf("jsonl: %s", jb.Bytes())
	}
	for name, read := range map[string]func() ([]Record, error){
		"csv":   func() ([]Record, error) { return ReadCSV(bytes.NewReader(csvb.Bytes()), "points.csv") },
		"jsonl": func() ([]Record, error) { return ReadJSONL(bytes.NewReader(jb.Bytes()), "points.jsonl") },
	} {
		got, err := read()
		if err != nil || len(got) != 2 || got[0].HD != 128 || got[0].M != 0 || got[1].RB != 4 || got[1].HD != 0 {
			t.Errorf("%s read back: %v %+v", name, err, got)
		}
	}
}

// TestRunIDsUnique: runs started in the same second with the default id
// get distinct folders.
func TestRunIDsUnique(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for range 3 {
		r, err := Create(dir, Meta{Started: started})
		if err != nil {
			t.Fatal(err)
		}
		if seen[r.Dir] {
			t.Fatalf("folder %s given twice", r.Dir)
		}
		seen[r.Dir] = true
	}
	if _, err := Create(dir, Meta{RunID: "20261122-100000", Started: started}); !errors.Is(err, ErrRunExists) {
		t.Fatalf("an explicit id that exists: %v", err)
	}
}

// TestFilesAgreeAfterFailedWrite: when one file of a flush cannot be
// written (a full disk), none of them changes.
func TestFilesAgreeAfterFailedWrite(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")}
	write := func(s string) func(w io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := WriteFilesAtomic(paths, []func(io.Writer) error{write("1"), write("1"), write("1")}); err != nil {
		t.Fatal(err)
	}
	full := func(io.Writer) error { return errors.New("no space left on device") }
	if err := WriteFilesAtomic(paths, []func(io.Writer) error{write("2"), write("2"), full}); err == nil {
		t.Fatal("a failed write reported success")
	}
	for _, p := range paths {
		if b, _ := os.ReadFile(p); string(b) != "1" {
			t.Errorf("%s = %q after a failed flush, want the previous content", p, b)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// TestMetaIsTheFolders: when a flush fails (a full disk; here the folder
// is gone), Meta still says what the folder holds, for the message that
// tells the user so: the points of the last flush that succeeded, not
// complete.
func TestMetaIsTheFolders(t *testing.T) {
	dir := t.TempDir()
	run, err := Create(dir, Meta{RunID: "m", Started: time.Now(), Planned: 3})
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	r.Family, r.Kernel, r.ISA, r.Status = "attention", "decode-flash", "generic", StatusSkipped
	if err := run.Add(r); err != nil || run.Meta.Points != 1 {
		t.Fatalf("first point: %v, meta counts %d", err, run.Meta.Points)
	}
	run.FlushEvery = 0
	if err := os.RemoveAll(run.Dir); err != nil {
		t.Fatal(err)
	}
	r.Kernel = "decode-naive"
	if err := run.Add(r); err == nil {
		t.Fatal("a flush into a removed folder succeeded")
	}
	if err := run.Close(true); err == nil {
		t.Fatal("Close into a removed folder succeeded")
	}
	if run.Meta.Points != 1 || run.Meta.Complete || len(run.Records()) != 2 {
		t.Fatalf("after failed flushes: meta counts %d, complete %v; %d records", run.Meta.Points, run.Meta.Complete, len(run.Records()))
	}
}

// TestCheckSpace: a run the output folder's file system can take passes;
// one of more points than it could hold is refused before anything is
// measured, saying how much is free and how much the run would write.
func TestCheckSpace(t *testing.T) {
	dir := t.TempDir()
	if _, ok := freeBytes(dir); !ok {
		t.Skip("free space is not read on this system: CheckSpace passes")
	}
	if err := CheckSpace(dir, 10); err != nil {
		t.Fatalf("a run of 10 points in a test's temporary folder: %v", err)
	}
	err := CheckSpace(dir, 1<<40) // 5 PiB of results
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "free") || !strings.Contains(err.Error(), "PiB") && !strings.Contains(err.Error(), "GiB") {
		t.Fatalf("a run of 2^40 points: %v", err)
	}
}
