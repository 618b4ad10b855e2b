package report

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// fixture writes a results folder of every kind of point a report draws:
// decode kernels over contexts, tiles, head dims and KV types at 1 and 2
// threads, prefill, GEMV formats, an unstable and an above_bound point;
// and its roofline.
func fixture(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	var info machine.Info
	info.CPU.Brand, info.CPU.Family, info.CPU.Model = "Test CPU", 25, 17
	info.Cache.L1D, info.Cache.L2, info.Cache.L3 = 32<<10, 1<<20, 32<<20
	for _, tr := range isa.All {
		info.Tiers = append(info.Tiers, isa.Status{Tier: tr, Runs: tr != isa.AVX512VNNI, Reason: map[bool]string{true: "", false: "the CPU lacks avx512_vnni"}[tr != isa.AVX512VNNI]})
	}
	info.Counters.Events = []machine.Counter{{Event: "cycles", Kind: "hardware", Reason: "no PMU in this VM"}}
	run, err := results.Create(parent, results.Meta{RunID: "run", Command: []string{"ckbench", "sweep", "attention", "--preset", "quick"}, Started: time.Now(), Machine: info})
	if err != nil {
		t.Fatal(err)
	}
	add := func(r results.Record, gbs, pct float64) {
		r.Status, r.NsMedian, r.GBs, r.PctOfBound, r.Level = results.StatusOK, 1000, results.Float(gbs), results.Float(pct), "L2"
		r.GFlops, r.AI = results.Float(gbs/4), 0.25
		if r.Th == 0 {
			r.Th = 1
		}
		if err := run.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, th := range []int{1, 2} {
		for _, kernel := range []string{"decode-flash", "decode-flash-gqa"} {
			for _, tier := range []string{"avx2", "avx512"} {
				for _, hd := range []int{64, 128} {
					for _, tk := range []int{16, 64, 256} {
						for _, kv := range []string{"f32", "f16", "q8_0"} {
							for _, ctx := range []int{512, 4096, 32768} {
								r := results.NewRecord()
								r.Family, r.Kernel, r.ISA, r.HD, r.TK, r.TKEff, r.Ctx, r.H, r.KVH, r.KV, r.Exp, r.Th = "attention", kernel, tier, hd, strconv.Itoa(tk), tk, ctx, 8, 8, kv, "fast", th
								if th == 2 {
									r.Scaling = 1.8
								}
								add(r, float64(ctx/64+hd+tk/8), float64(40+tk/8+hd/8))
							}
						}
					}
				}
			}
		}
	}
	// The read loop the decode points were paired with: an in-run ceiling
	// (its read_gbs its own rate), at 100 % of its bound, never ranked.
	ceiling := results.NewRecord()
	ceiling.Family, ceiling.Kernel, ceiling.ISA, ceiling.HD, ceiling.TK, ceiling.Ctx, ceiling.H, ceiling.KVH, ceiling.KV, ceiling.Exp, ceiling.Th = "attention", "kv-read", "avx2", 128, "none", 4096, 8, 8, "f32", "none", 1
	ceiling.ReadGBs, ceiling.PctOfRead = 900, 100
	add(ceiling, 900, 100)
	for _, kernel := range []string{"prefill-materialized", "prefill-flash"} {
		r := results.NewRecord()
		r.Family, r.Kernel, r.ISA, r.HD, r.TK, r.Tq, r.Ctx, r.H, r.KVH, r.Mask, r.Exp = "attention", kernel, "avx512", 128, "none", 2048, 2048, 8, 8, "causal", "fast"
		add(r, 20, 70)
	}
	for _, f := range []string{"q4_0", "q4_K", "q8_0"} {
		for _, tier := range []string{"avx2", "avx512"} {
			r := results.NewRecord()
			r.Family, r.Kernel, r.ISA, r.Fmt, r.Act, r.M, r.K = "quant", "gemv-q8", tier, f, "q8_0", 4096, 4096
			add(r, 30, 80)
		}
	}
	bad := results.NewRecord()
	bad.Family, bad.Kernel, bad.ISA, bad.Status, bad.Reason, bad.Th = "attention", "decode-naive", "avx2", results.StatusUnstable, "samples spread 9 % (MAD) > 3 %"+results.SpreadAdvice, 1
	bad.Attempts = 2
	run.Add(bad)
	bad.Kernel, bad.Status, bad.Reason = "decode-split", results.StatusAboveBound, "112 % of the read loop"
	run.Add(bad)
	if err := run.Close(true); err != nil {
		t.Fatal(err)
	}
	rf := roofline.Roofline{Version: 1, Machine: info, Created: time.Now()}
	for _, th := range []int{1, 2} {
		for _, tr := range []isa.Tier{isa.Generic, isa.AVX2, isa.AVX512} {
			rf.Compute = append(rf.Compute, roofline.Compute{Kind: "fp32-fma", Tier: tr, Threads: th, Unit: "GFLOP/s", Value: 100 * float64(th)},
				roofline.Compute{Kind: "int8-dot", Tier: tr, Threads: th, Unit: "GOP/s", Value: 230 * float64(th)})
		}
		for i, l := range []string{"L1", "L2", "L3", "DRAM"} {
			rf.Levels = append(rf.Levels, roofline.Level{Name: l, Threads: th, GBs: float64(th) * []float64{200, 110, 95, 20}[i], Lo: 1 << (12 + 4*i), Hi: 1 << (13 + 4*i)})
		}
	}
	b, _ := json.Marshal(rf)
	if err := os.WriteFile(filepath.Join(run.Dir, "roofline.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return parent
}

// TestReport: a report of a results folder has index.html, report.md and
// every chart as PNG and SVG, the machine, the skipped tier with its
// reason, the commands, the ceilings, the top and bottom points and every
// point that is not a result with its reason.
func TestReport(t *testing.T) {
	runs, out, index := writeFixture(t)
	html, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"roofline", "bandwidth", "attention-gbs", "attention-gflops",
		"attention-tiles-avx2", "attention-tiles-avx512", "attention-kv", "attention-prefill", "quant-formats", "attention-scaling"} {
		for _, ext := range []string{".png", ".svg"} {
			if st, err := os.Stat(filepath.Join(out, name+ext)); err != nil || st.Size() < 1000 {
				t.Errorf("%s%s: %v", name, ext, err)
			}
		}
		if !strings.Contains(string(html), `src="`+name+`.png"`) || !strings.Contains(string(md), "("+name+".png)") {
			t.Errorf("%s not in index.html and report.md", name)
		}
	}
	for _, want := range []string{"Test CPU", "the CPU lacks avx512_vnni", "no PMU in this VM", "ckbench sweep attention --preset quick",
		"int8-dot", "3 % (the least spread of 2 attempts)", "112 % of the read loop", "2 measured again after an unstable attempt", "Closest to their bound", "Furthest from their bound"} {
		if !strings.Contains(string(html), want) || !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The advice of an unstable point is said once, above the table.
	if n := strings.Count(string(md), results.SpreadAdvice); n != 1 || !strings.Contains(string(md), spreadNote()) || !strings.Contains(string(html), "than the limit (MAD) is unstable") {
		t.Errorf("the spread advice is in report.md %d times, want once, in the note above the table", n)
	}
	top := string(md[strings.Index(string(md), "Closest to their bound"):strings.Index(string(md), "Furthest from their bound")])
	if strings.Contains(top, "Attention/kv-read") || strings.Count(top, "\n| Attention/") != 10 {
		t.Errorf("the top ten rank a read ceiling, or are not ten:\n%s", top)
	}
	if strings.Contains(string(html), "http://") || strings.Contains(string(html), "https://") {
		t.Error("index.html refers to the network")
	}
	// Writing again replaces the report whole.
	if _, err := Write(out, runs, nil); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Errorf("left beside the report: %v", ents)
	}
}

// writeFixture loads the fixture's runs and writes their report into a
// fresh folder: the runs, the folder and its index.html.
func writeFixture(t *testing.T) (runs []Run, out, index string) {
	t.Helper()
	runs, _, err := Load(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(t.TempDir(), "report")
	index, err = Write(out, runs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return runs, out, index
}

// TestLoadOnce: a results folder named twice, or inside a folder also
// named, is read once (its points would count twice in the report).
func TestLoadOnce(t *testing.T) {
	parent := fixture(t)
	once, _, err := Load(parent)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := Load(parent, filepath.Join(parent, "run"), parent+string(filepath.Separator))
	if err != nil {
		t.Fatal(err)
	}
	if len(once) != 1 || len(again) != len(once) || len(records(again)) != len(records(once)) {
		t.Errorf("read %d runs (%d records) named once, %d (%d) named thrice", len(once), len(records(once)), len(again), len(records(again)))
	}
}

// TestReportBadInput: a folder without results, a corrupt points.jsonl
// (its line named), and a missing one where machine.json counts points
// (its points would drop out of the report unsaid), are errors.
func TestReportBadInput(t *testing.T) {
	if _, _, err := Load(t.TempDir()); !errors.Is(err, ErrNoResults) {
		t.Errorf("empty folder: %v", err)
	}
	parent := fixture(t)
	f := filepath.Join(parent, "run", "points.jsonl")
	b, _ := os.ReadFile(f)
	lines := strings.SplitAfter(string(b), "\n")
	lines[3] = lines[3][:len(lines[3])/2] + "\n" // a line cut in half
	os.WriteFile(f, []byte(strings.Join(lines, "")), 0o644)
	if _, _, err := Load(parent); !errors.Is(err, results.ErrCorrupt) || !strings.Contains(err.Error(), "points.jsonl:4") {
		t.Errorf("corrupt line 4: %v", err)
	}
	os.Remove(f)
	if _, _, err := Load(parent); !errors.Is(err, results.ErrCorrupt) || !strings.Contains(err.Error(), "points.jsonl is missing") {
		t.Errorf("points.jsonl removed: %v", err)
	}
}

// TestReportInBrowser opens index.html in headless Chromium: every image
// loads (the page's own check sets data-images), no console error, and a
// screenshot is taken. Skipped where Chromium is absent (.ci/run installs
// Debian's chromium).
func TestReportInBrowser(t *testing.T) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium on PATH: install it (Debian: apt-get install chromium) to check the report in a real browser")
	}
	_, _, index := writeFixture(t)
	url := "file://" + index
	common := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-quic", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000"}
	cmd := exec.Command(bin, append(common, "--dump-dom", url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`data-images="([^"]*)"`).FindStringSubmatch(string(dom))
	if m == nil || !strings.HasPrefix(m[1], "ok ") {
		t.Fatalf("images: %v (want every image loaded)", m)
	}
	if n, _ := strconv.Atoi(strings.TrimPrefix(m[1], "ok ")); n < 10 {
		t.Errorf("only %d images on the page", n)
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") {
			t.Errorf("console: %s", l)
		}
	}
	shot := filepath.Join(t.TempDir(), "shot.png")
	cmd = exec.Command(bin, append(common, "--window-size=1280,3000", "--screenshot="+shot, url)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Errorf("screenshot: %v", err)
	}
}

// TestReportFleet: results of several hosts give the report a fleet
// table (every node, scored against its CPU model) and chart.
func TestReportFleet(t *testing.T) {
	root := t.TempDir()
	for _, host := range []string{"node-a", "node-b", "node-c"} {
		src := filepath.Join(fixture(t), "run")
		meta, err := results.ReadMeta(src)
		if err != nil {
			t.Fatal(err)
		}
		meta.Machine.Host = host
		b, _ := json.Marshal(meta)
		os.WriteFile(filepath.Join(src, "machine.json"), b, 0o644)
		if err := os.Rename(src, filepath.Join(root, host)); err != nil {
			t.Fatal(err)
		}
	}
	runs, _, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	index, err := Write(filepath.Join(t.TempDir(), "report"), runs, nil)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(index)
	for _, want := range []string{`id="fleet"`, "node-a", "node-b", "node-c", `src="fleet.png"`, "1.000×"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("fleet report lacks %q", want)
		}
	}
}

// TestCounterRows: counters that share an availability and a reason are
// one row naming them all; the event's own name is not repeated in its
// reason.
func TestCounterRows(t *testing.T) {
	noPMU := func(e string) machine.Counter {
		return machine.Counter{Event: e, Reason: e + ": not supported here (no PMU) [ENOENT]"}
	}
	got := counterRows([]machine.Counter{noPMU("cycles"), noPMU("instructions"), {Event: "task-clock", Available: true}, noPMU("llc-reads"), {Event: "page-faults", Available: true}})
	want := [][3]string{
		{"cycles, instructions, llc-reads", "no", "not supported here (no PMU) [ENOENT]"},
		{"task-clock, page-faults", "yes", ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("counterRows = %q, want %q", got, want)
	}
}
