package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

func ckbench(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// badInputLine reports whether stderr is what bad input gets: one line,
// "ckbench: " and the reason.
func badInputLine(stderr string) bool {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return len(lines) == 1 && strings.HasPrefix(lines[0], "ckbench: ")
}

// tiny is a sweep small enough for a test (and for qemu).
func tiny(out string, extra ...string) []string {
	args := []string{"sweep", "attention", "--kernel", "decode-flash,decode-flash-gqa,kv-read", "--hd", "64",
		"--ctx", "40", "--heads", "4:2", "--exp", "fast", "--min-time", "2ms", "--out", out, "--no-progress", "--roofline", "none"}
	return append(args, extra...)
}

// tinyQuant is a quant sweep of a few milliseconds.
func tinyQuant(out string, extra ...string) []string {
	args := []string{"sweep", "quant", "--kernel", "gemv-f32,gemv-q8,quantize-q8,dequant", "--fmt", "q4_0,q4_K",
		"--shape", "16x512", "--rb", "1,3", "--min-time", "2ms", "--out", out, "--no-progress", "--roofline", "none"}
	return append(args, extra...)
}

// tinyFamily is a sweep of family with the roofline off and a short
// minimum time, for bad-input cases that must be refused before it runs.
func tinyFamily(family, out string, extra ...string) []string {
	args := []string{"sweep", family, "--min-time", "2ms", "--out", out, "--no-progress", "--roofline", "none"}
	return append(args, extra...)
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plainfile")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	badRoof := filepath.Join(t.TempDir(), "roofline.json")
	if err := os.WriteFile(badRoof, []byte(`{"version": 1, "levels": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"plan bad roofline":  tiny(dir, "--plan", "--roofline", badRoof),
		"all bad roofline":   {"sweep", "all", "--steps", "softmax", "--no-progress", "--out", dir, "--roofline", badRoof},
		"no command":         {},
		"unknown command":    {"benchmark"},
		"unknown family":     {"sweep", "convolution"},
		"no family":          {"sweep"},
		"unknown flag":       tiny(dir, "--colour", "red"),
		"unknown kernel":     tiny(dir, "--kernel", "decode-fast"),
		"unknown tier":       tiny(dir, "--isa", "avx1024"),
		"attention vnni":     tiny(dir, "--isa", "avx512vnni"),
		"unsupported hd":     tiny(dir, "--hd", "72"),
		"hd too large":       tiny(dir, "--hd", "512"),
		"tk too large":       tiny(dir, "--tk", "512"),
		"tk not a number":    tiny(dir, "--tk", "big"),
		"H not multiple":     tiny(dir, "--heads", "12:8"),
		"ctx zero":           tiny(dir, "--ctx", "0"),
		"ctx negative":       tiny(dir, "--ctx", "-5"),
		"malformed range":    tiny(dir, "--ctx", "512..64x"),
		"reversed range":     tiny(dir, "--ctx", "4096..512"),
		"out is a file":      tiny(file),
		"threads zero":       tiny(dir, "--threads", "0"),
		"window zero":        tiny(dir, "--window", "0"),
		"splits too many":    tiny(dir, "--splits", "65"),
		"threads too many":   tiny(dir, "--threads", "4096"),
		"threads word":       tiny(dir, "--threads", "many"),
		"unknown exp":        tiny(dir, "--exp", "approx"),
		"unknown preset":     tiny(dir, "--preset", "huge"),
		"bad min-time":       tiny(dir, "--min-time", "-1s"),
		"retries negative":   tiny(dir, "--retries", "-1"),
		"retries too many":   tiny(dir, "--retries", "1000000"),
		"min-time huge":      tiny(dir, "--min-time", "2h"),
		"version stray":      {"version", "2"},
		"verify elsewhere":   {"verify", "quant"}, // the default golden folder is relative to the repository's root
		"tk zero":            tiny(dir, "--tk", "0"),
		"stray argument":     tiny(dir, "extra"),
		"cpu not allowed":    tiny(dir, "--cpu", "100000"),
		"run-id with slash":  tiny(dir, "--run-id", "a/b"),
		"run-id newline":     tiny(dir, "--run-id", "a\nb"),
		"run-id long":        tiny(dir, "--run-id", strings.Repeat("a", 300)),
		"larger than memory": tiny(dir, "--ctx", "100000000", "--heads", "64:64", "--hd", "256"),
		"ctx max int64":      tiny(dir, "--ctx", "9223372036854775807", "--hd", "16"),
		"ctx 2^60":           tiny(dir, "--ctx", "1152921504606846976"),
		"ctx over int64":     tiny(dir, "--ctx", "99999999999999999999"),
		"heads huge":         tiny(dir, "--heads", "1048576:1048576"),
		"heads at limit":     tiny(dir, "--ctx", "1073741824", "--heads", "4096:4096"),
		"quant shape 2^62":   tinyQuant(dir, "--shape", "4611686018427387904x4096"),
		"quant shape limit":  tinyQuant(dir, "--fmt", "q4_0", "--shape", "268435456x268435456"),
		"cold huge":          tiny(dir, "--ctx", "1073741824", "--cold"),
		"unknown counter":    tiny(dir, "--counters", "cyclez"),
		"bad raw counter":    tiny(dir, "--counters", "rxyz"),
		"counters events":    {"counters", "--events", "bogus"},
		"counters none":      {"counters", "--events", "none"},
		"counters rounds":    {"counters", "--rounds", "5"},
		"quant K not blocks": tinyQuant(dir, "--fmt", "q4_K", "--shape", "64x100"),
		"quant unknown fmt":  tinyQuant(dir, "--fmt", "q3_K"),
		"quant pair":         tinyQuant(dir, "--fmt", "q4_K", "--act", "q8_0"),
		"quant act fmt":      tinyQuant(dir, "--fmt", "q8_K"),
		"quant bad act":      tinyQuant(dir, "--act", "f16"),
		"quant bad shape":    tinyQuant(dir, "--shape", "4096"),
		"quant rb":           tinyQuant(dir, "--rb", "9"),
		"quant kernel":       tinyQuant(dir, "--kernel", "gemm"),
		"softmax rows":       tinyFamily("softmax", dir, "--rows", "0"),
		"sample time short":  tinyFamily("attention", dir, "--sample-time", "1ns"),
		"sample time long":   tinyFamily("kvcache", dir, "--sample-time", "1h"),
		"softmax causal":     tinyFamily("softmax", dir, "--rows", "100", "--len", "50", "--causal", "on"),
		"softmax causal arg": tinyFamily("softmax", dir, "--causal", "maybe"),
		"softmax huge":       tinyFamily("softmax", dir, "--rows", "1073741824", "--len", "1073741824"),
		"softmax variant":    tinyFamily("softmax", dir, "--kernel", "2-pass"),
		"prefill mask":       tinyFamily("attention", dir, "--kernel", "prefill-flash", "--mask", "sliding"),
		"prefill tq > ctx":   tinyFamily("attention", dir, "--kernel", "prefill-flash", "--tq", "64", "--ctx", "32", "--mask", "causal"),
		"prefill br":         tinyFamily("attention", dir, "--kernel", "prefill-flash", "--br", "0"),
		"prefill cold":       tinyFamily("attention", dir, "--kernel", "prefill-flash", "--cold"),
		"prefill memory":     tinyFamily("attention", dir, "--kernel", "prefill-materialized", "--tq", "1000000", "--ctx", "1000000"),
		"prefill ctx":        tinyFamily("attention", dir, "--kernel", "prefill-flash", "--ctx", "2000000"),
		"verify no golden":   {"verify", "quant", "--golden", filepath.Join(dir, "nowhere")},
		"verify what":        {"verify", "attention"},
		"info stray":         {"info", "--yaml"},
		"list family":        {"list", "gemm"},
	}
	for name, args := range cases {
		code, _, stderr := ckbench(t, args...)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d (stderr %q)", name, code, exitUsage, stderr)
			continue
		}
		if name == "no command" {
			continue // prints the usage, then the error
		}
		if !badInputLine(stderr) {
			t.Errorf("%s: want one 'ckbench: ' line, got %q", name, stderr)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 { // only plainfile: no run folder for refused input
		t.Errorf("bad input left files behind: %v", entries)
	}
}

func TestHelpAndInfo(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"sweep", "attention", "--help"}, {"info", "--help"}, {"list", "--help"}, {"version"}} {
		if code, out, _ := ckbench(t, args...); code != 0 || out == "" {
			t.Errorf("%v: exit %d, output %q", args, code, out)
		}
	}
	code, out, _ := ckbench(t, "info")
	if code != 0 || !strings.Contains(out, "tiers") || !strings.Contains(out, "generic    runs here") {
		t.Fatalf("info: %d\n%s", code, out)
	}
	code, out, _ = ckbench(t, "info", "--json")
	var in map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || in["tiers"] == nil || in["cache"] == nil {
		t.Fatalf("info --json: %d\n%s", code, out)
	}
	if !strings.Contains(out, "counters") || !strings.Contains(out, "task-clock") {
		t.Fatalf("info does not list the counters:\n%s", out)
	}
	// Every event is shown, as available or with its reason.
	code, out, _ = ckbench(t, "counters", "--events", "task-clock,cycles", "--rounds", "100000")
	if code != 0 || !strings.Contains(out, "task-clock") || !strings.Contains(out, "cycles") {
		t.Fatalf("counters: %d\n%s", code, out)
	}
	code, out, _ = ckbench(t, "list", "attention")
	if code != 0 || !strings.Contains(out, "4·H·T·D") || !strings.Contains(out, "decode-flash-gqa") {
		t.Fatalf("list: %d\n%s", code, out)
	}
}

func TestSweepEndToEnd(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := ckbench(t, tiny(out, "--isa", "all", "--run-id", "e2e")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	dir := filepath.Join(out, "e2e")
	meta, err := results.ReadMeta(dir)
	if err != nil || !meta.Complete || meta.Points != meta.Planned || meta.Points == 0 {
		t.Fatalf("machine.json: %+v, %v", meta, err)
	}
	recs, err := results.ReadPoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "points.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fromCSV, err := results.ReadCSV(f, "points.csv")
	if err != nil || len(fromCSV) != len(recs) {
		t.Fatalf("points.csv: %d records, %v", len(fromCSV), err)
	}
	timed := 0 // ok points: the only ones bench.txt carries
	for _, r := range recs {
		st := isa.Detect(isa.Tier(r.ISA))
		if _, built := attention.Lookup(isa.Tier(r.ISA)); !built && st.Runs {
			st.Runs, st.Reason = false, r.Reason // a tier without attention kernels
		}
		switch {
		case !st.Runs:
			if r.Status != results.StatusSkipped || r.Reason != st.Reason {
				t.Errorf("%s/%s must be skipped with %q: %s %q", r.Kernel, r.ISA, st.Reason, r.Status, r.Reason)
			}
		case r.Status == results.StatusOK:
			timed++
		case r.Status == results.StatusUnstable || r.Status == results.StatusAboveBound:
			// Only a point whose every sample was preempted (a loaded
			// host) has no time.
			if r.Reason == "" || !r.NsMedian.Valid() && r.Samples > 0 {
				t.Errorf("%s/%s: %s without reason or time", r.Kernel, r.ISA, r.Status)
			}
		default:
			t.Errorf("%s/%s: %s %s", r.Kernel, r.ISA, r.Status, r.Reason)
		}
	}
	// Counters (--counters default): machine.json gives each event's
	// availability once; a timed point has a value exactly for those that
	// opened, and an empty cell (never 0) for the rest.
	if len(meta.Machine.Counters.Events) == 0 {
		t.Fatal("machine.json lists no counters")
	}
	for _, c := range meta.Machine.Counters.Events {
		if !c.Available && c.Reason == "" {
			t.Errorf("counter %s unavailable without a reason", c.Event)
		}
		for _, r := range fromCSV {
			if r.Status != results.StatusOK {
				continue
			}
			var v results.Float
			switch c.Event {
			case "task-clock":
				v = r.TaskClockNs
			case "cycles":
				v = r.Cycles
			default:
				continue
			}
			if v.Valid() != c.Available {
				t.Errorf("%s/%s: %s = %v but available=%v", r.Kernel, r.ISA, c.Event, v, c.Available)
			}
		}
	}
	// bench.txt: one line group per ok point, readable by benchfmt
	// (what benchstat uses), with the tier as a name key for -col /isa.
	bf, err := os.Open(filepath.Join(dir, "bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	names := map[string]bool{}
	rd := benchfmt.NewReader(bf, "bench.txt")
	for rd.Scan() {
		switch r := rd.Result().(type) {
		case *benchfmt.Result:
			names[r.Name.String()] = true
			if _, parts := r.Name.Parts(); !strings.Contains(string(bytes.Join(parts, nil)), "/isa=") {
				t.Fatalf("no isa key in %s", r.Name)
			}
		case *benchfmt.SyntaxError:
			t.Fatal(r)
		}
	}
	if len(names) != timed {
		t.Fatalf("bench.txt names %d benchmarks, %d points were timed", len(names), timed)
	}
	if !strings.Contains(stdout, "decode-flash-gqa") || !strings.Contains(stdout, dir) {
		t.Fatalf("summary:\n%s", stdout)
	}
}

// writeRoofline writes a synthetic roofline.json for machine m.
func writeRoofline(t *testing.T, path string, m machine.Info) {
	t.Helper()
	writeRooflineWith(t, path, m, func(*roofline.Roofline) {})
}

func writeRooflineWith(t *testing.T, path string, m machine.Info, edit func(*roofline.Roofline)) {
	t.Helper()
	r := roofline.Roofline{Version: 1, Method: "synthetic", Machine: m}
	for _, tier := range isa.All {
		r.Compute = append(r.Compute, roofline.Compute{Kind: "fp32-fma", Tier: tier, Threads: 1, Unit: "GFLOP/s", Value: 100})
	}
	for i, name := range []string{"L1", "L2", "L3", "DRAM"} {
		r.Levels = append(r.Levels, roofline.Level{Name: name, Threads: 1, Kernel: "read", GBs: 400 / float64(i+1)})
	}
	edit(&r)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSweepRoofline(t *testing.T) {
	dir := t.TempDir()
	here, other := filepath.Join(dir, "here.json"), filepath.Join(dir, "other.json")
	writeRoofline(t, here, machine.Describe())
	m := machine.Describe()
	m.CPU.Brand = "Some Other CPU"
	writeRoofline(t, other, m)
	zero, negative := filepath.Join(dir, "zero.json"), filepath.Join(dir, "negative.json")
	writeRooflineWith(t, zero, machine.Describe(), func(r *roofline.Roofline) { r.Levels[3].GBs = 0 })
	writeRooflineWith(t, negative, machine.Describe(), func(r *roofline.Roofline) { r.Compute[0].Value = -100 })
	corrupt := filepath.Join(dir, "corrupt.json")
	os.WriteFile(corrupt, []byte(`{"version": 1, "levels": [`), 0o644)

	with := func(id string, extra ...string) []string {
		args := tiny(filepath.Join(dir, "out"))
		args = args[:len(args)-2] // drop --roofline none
		return append(append(args, "--run-id", id), extra...)
	}
	for name, args := range map[string][]string{
		"other machine": with("a", "--roofline", other),
		"missing file":  with("b", "--roofline", filepath.Join(dir, "nope.json")),
		"corrupt file":  with("c", "--roofline", corrupt),
		"not json":      with("d", "--roofline", "/etc/hostname"),
		"zero ceiling":  with("e", "--roofline", zero),
		"negative peak": with("f", "--roofline", negative),
	} {
		if code, _, stderr := ckbench(t, args...); code != exitUsage || !strings.Contains(stderr, "--roofline") {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr)
		}
	}
	// Refused input leaves nothing behind: no run folder, no temporary plot.
	if entries, _ := os.ReadDir(filepath.Join(dir, "out")); len(entries) != 0 {
		t.Errorf("refused rooflines left %v", entries)
	}
	if code, _, stderr := ckbench(t, with("forced", "--roofline", other, "--force")...); code != 0 || !strings.Contains(stderr, "another machine") {
		t.Fatalf("--force: exit %d, stderr %q", code, stderr)
	}
	code, out, stderr := ckbench(t, with("ok", "--roofline", here)...)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	run := filepath.Join(dir, "out", "ok")
	recs, err := results.ReadPoints(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		// A read loop has no compute bound: only its level's bandwidth.
		if r.Status == results.StatusOK && (r.Level == "" || r.BoundGFlops.Valid() != (r.Flops > 0) || !r.PctOfBound.Valid()) {
			t.Fatalf("%s/%s not on the roofline: level %q bound %v pct %v", r.Kernel, r.ISA, r.Level, r.BoundGFlops, r.PctOfBound)
		}
	}
	for _, f := range []string{"roofline.json", "roofline.png", "roofline.svg"} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRooflineBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for name, args := range map[string][]string{
		"threads 0":         {"roofline", "--threads", "0"},
		"too many threads":  {"roofline", "--threads", "100000"},
		"out is a file":     {"roofline", "--out", file},
		"unknown flag":      {"roofline", "--fast"},
		"threads malformed": {"roofline", "--threads", "1..x"},
		"unknown tier":      {"roofline", "--isa", "avx9"},
		"empty tier list":   {"roofline", "--isa", ","},
		"run-id dots":       {"roofline", "--run-id", ".."},
		"run-id tab":        {"roofline", "--run-id", "x\ty"},
	} {
		if code, _, stderr := ckbench(t, args...); code != exitUsage {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr)
		}
	}
	// A tier this CPU lacks is refused with the reason, before anything
	// is measured.
	for _, tier := range isa.All {
		if st := isa.Detect(tier); !st.Runs {
			code, _, stderr := ckbench(t, "roofline", "--isa", string(tier), "--out", dir)
			if code != exitUsage || !strings.Contains(stderr, string(tier)) {
				t.Errorf("--isa %s (not here): exit %d, stderr %q", tier, code, stderr)
			}
		}
	}
}

func TestSweepQuantEndToEnd(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := ckbench(t, tinyQuant(out, "--isa", "all", "--run-id", "q")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs, err := results.ReadPoints(filepath.Join(out, "q"))
	if err != nil {
		t.Fatal(err)
	}
	kernels := map[string]int{}
	for _, r := range recs {
		if r.Family != "quant" || r.Fmt == "" || r.K != 512 {
			t.Errorf("record without its quant keys: %+v", r)
		}
		switch r.Status {
		case results.StatusOK, results.StatusUnstable:
			kernels[r.Kernel]++
			if r.Samples == 0 { // every sample preempted (a loaded host): gated, no rate
				if !r.MaxRelErr.Valid() || r.Status != results.StatusUnstable {
					t.Errorf("%s/%s %s: %s without a sample or gate", r.Kernel, r.ISA, r.Fmt, r.Status)
				}
				continue
			}
			if !r.MaxRelErr.Valid() || !r.GBs.Valid() {
				t.Errorf("%s/%s %s: timed without gate or rate", r.Kernel, r.ISA, r.Fmt)
			}
			if (r.Kernel == "gemv-q8") != r.GOps.Valid() {
				t.Errorf("%s: gops %v", r.Kernel, r.GOps)
			}
		case results.StatusSkipped:
			if r.Reason == "" {
				t.Errorf("%s/%s skipped without a reason", r.Kernel, r.ISA)
			}
		default:
			t.Errorf("%s/%s %s: %s %s", r.Kernel, r.ISA, r.Fmt, r.Status, r.Reason)
		}
	}
	// q4_0 and q4_K, rb 1 and 3: 4 gemv points each; quantize-q8 once per
	// activation format (q8_0, q8_K); dequant per format.
	if kernels["gemv-f32"] < 4 || kernels["gemv-q8"] < 4 || kernels["quantize-q8"] < 2 || kernels["dequant"] < 2 {
		t.Errorf("timed points per kernel (generic at least): %v", kernels)
	}
	// bench.txt names every ok point (an unstable one, on a busy test
	// machine, is left out of it).
	b, err := os.ReadFile(filepath.Join(out, "q", "bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		r := &recs[i]
		if name := "Benchmark" + results.BenchName(r) + " "; strings.Contains(string(b), name) != (r.Status == results.StatusOK) {
			t.Errorf("%s (status %s): in bench.txt %v", name, r.Status, !(r.Status == results.StatusOK))
		}
	}
}

// TestResumeChecks: a sweep none of whose points is timed here (a resumed
// run that has them all; or every tier asked for absent) does not spend a
// roofline's 20 s bounding nothing; and a run is resumed only with the grid
// it ran with (else its config would not describe its points).
func TestResumeChecks(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := ckbench(t, tiny(dir, "--isa", "generic", "--run-id", "r")...); code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, stderr)
	}
	run := filepath.Join(dir, "r")
	code, _, stderr := ckbench(t, tiny(dir, "--isa", "generic", "--resume", run, "--roofline", "auto")...)
	if code != 0 || !strings.Contains(stderr, "0 to measure") || strings.Contains(stderr, "measuring the roofline") ||
		!strings.Contains(stderr, "no roofline measured: no point of this sweep is timed here") {
		t.Fatalf("resume of a complete run: exit %d, stderr:\n%s", code, stderr)
	}
	before, _ := os.ReadFile(filepath.Join(run, "points.jsonl"))
	for _, other := range [][]string{{"--hd", "128"}, {"--cold"}, {"--kv", "f32"}, {"--threads", "1,2"}} {
		code, _, stderr := ckbench(t, tiny(dir, append([]string{"--isa", "generic", "--resume", run}, other...)...)...)
		if code != exitUsage || !badInputLine(stderr) || !strings.Contains(stderr, "resume it with the flags it ran with") {
			t.Errorf("resume with %v: exit %d, %q", other, code, stderr)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(run, "points.jsonl")); !bytes.Equal(before, after) {
		t.Errorf("a refused resume changed the folder's points")
	}
}

func TestVerifyQuant(t *testing.T) {
	const dir = "../../testdata/golden"
	code, stdout, _ := ckbench(t, "verify", "quant", "--golden", dir)
	if code != 0 || !strings.Contains(stdout, "0 failed") {
		t.Fatalf("verify quant on GGML's data: exit %d\n%s", code, stdout)
	}
	// A copy with one byte changed fails, naming the format and row.
	bad := t.TempDir()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if e.Name() == "q8_0.quant.bin" {
			b[34*16*3+5] ^= 1 // row 3 (16 blocks of 34 bytes per row), block 0, a weight byte
		}
		os.WriteFile(filepath.Join(bad, e.Name()), b, 0o644)
	}
	code, stdout, stderr := ckbench(t, "verify", "quant", "--golden", bad)
	if code != exitFailure || !strings.Contains(stdout, "FAIL") || !strings.Contains(stderr, "failed") {
		t.Fatalf("verify quant on a changed copy: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, "FAIL") && !strings.HasPrefix(line, "q8_0") {
			t.Errorf("unexpected failure: %s", line)
		}
	}
	// A corrupted .vecdot.bin fails its format's dots; a truncated quant
	// file fails that format alone (named), and every other format is
	// still checked and summarized. --quiet prints the summaries only.
	for name, edit := range map[string]func(b []byte) []byte{
		"q4_K.vecdot.bin": func(b []byte) []byte { b[130] ^= 0x40; return b },
		"q5_0.quant.bin":  func(b []byte) []byte { return b[:len(b)-7] },
	} {
		bad := t.TempDir()
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			if e.Name() == name {
				b = edit(b)
			}
			os.WriteFile(filepath.Join(bad, e.Name()), b, 0o644)
		}
		code, stdout, _ := ckbench(t, "verify", "quant", "--quiet", "--golden", bad)
		format := strings.SplitN(name, ".", 2)[0]
		if code != exitFailure || !strings.Contains(stdout, name) {
			t.Errorf("%s damaged: exit %d, file not named:\n%s", name, code, stdout)
		}
		for _, f := range []string{"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_K", "q5_K", "q6_K", "q8_K", "q8_1"} {
			line := ""
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, f+":") {
					line = l
				}
			}
			if line == "" {
				t.Errorf("%s damaged: no summary line for %s:\n%s", name, f, stdout)
			} else if strings.Contains(line, " 0 failed") == (f == format) {
				t.Errorf("%s damaged: %s", name, line)
			}
		}
		if strings.Contains(stdout, "\tpass") || strings.Count(stdout, "pass\n") > 0 {
			t.Errorf("--quiet printed the table:\n%s", stdout)
		}
	}
}

// TestHelpOnce: --help prints a command's usage once, with its flags; a
// flag error prints one line on stderr and nothing on stdout; list with no
// family lists every family.
func TestHelpOnce(t *testing.T) {
	for _, args := range [][]string{
		{"sweep", "attention", "--help"}, {"sweep", "quant", "--help"}, {"roofline", "--help"},
		{"verify", "--help"}, {"verify", "quant", "--help"}, {"list", "--help"}, {"info", "--help"}, {"counters", "--help"},
	} {
		code, out, _ := ckbench(t, args...)
		hasFlags := args[0] != "list" // the one command without flags
		if code != 0 || strings.Count(out, "Usage:") != 1 || strings.Contains(out, "\n  -") != hasFlags {
			t.Errorf("%v: exit %d, %d usages, flags listed: %v\n%s", args, code, strings.Count(out, "Usage:"), strings.Contains(out, "\n  -"), out)
		}
	}
	for _, args := range [][]string{{"sweep", "attention", "--bogus"}, {"sweep", "quant", "--rb"}, {"roofline", "--x"}} {
		code, out, errOut := ckbench(t, args...)
		if code != exitUsage || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	_, out, _ := ckbench(t, "list")
	for _, fam := range []string{"family attention", "family quant"} {
		if !strings.Contains(out, fam) {
			t.Errorf("list with no family lacks %q", fam)
		}
	}
}

// TestPlan: --plan prints the points, the largest point's memory and an
// estimated time, and measures nothing: no run folder, no roofline.
func TestPlan(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := ckbench(t, "sweep", "attention", "--preset", "full", "--plan", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"decode-flash", "points", "largest point", "estimated time"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--plan output lacks %q:\n%s", want, stdout)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--plan left files: %v", entries)
	}
}
