package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/roofline"
)

// TestCompare: two results folders of two machines (the compare
// package's fixtures) give a table naming both machines and the four
// files; bad input is one line and exit 2, with nothing written.
func TestCompare(t *testing.T) {
	zen4, zen3 := filepath.Join("..", "..", "compare", "testdata", "zen4"), filepath.Join("..", "..", "compare", "testdata", "zen3")
	out := filepath.Join(t.TempDir(), "cmp")
	code, stdout, stderr := ckbench(t, "compare", zen4, zen3, "--out", out, "--metric", "gbs")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"AMD EPYC 9R14", "AMD EPYC 7R13", "[generic,avx2]", "geomean avx2", "8 points compared"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"compare.txt", "compare.csv", "compare.png", "compare.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// Flags before the inputs, a bench.txt as an input.
	if code, _, stderr := ckbench(t, "compare", "--filter", "isa=avx2", "--out", out, zen4, filepath.Join(zen3, "bench.txt")); code != 0 {
		t.Errorf("exit %d: %s", code, stderr)
	}
	// Two roofline folders: their ceilings, side by side.
	r1, r2 := filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")
	other := machine.Describe()
	other.CPU.Brand = "Some Other CPU"
	for _, r := range []struct {
		dir string
		m   machine.Info
	}{{r1, machine.Describe()}, {r2, other}} {
		os.MkdirAll(r.dir, 0o755)
		writeRooflineWith(t, filepath.Join(r.dir, "roofline.json"), r.m, func(rf *roofline.Roofline) {
			if r.dir == r2 {
				rf.Levels[3].GBs *= 2
			}
		})
	}
	code, stdout, stderr = ckbench(t, "compare", r1, r2, "--out", out)
	if code != 0 || !strings.Contains(stdout, "roofline ceilings compared") || !strings.Contains(stdout, "Some Other CPU") || !regexp.MustCompile(`read DRAM th=1 .* 2\.000×`).MatchString(stdout) {
		t.Errorf("two rooflines: exit %d, %s\n%s", code, stderr, stdout)
	}
	corruptRoof := t.TempDir()
	os.WriteFile(filepath.Join(corruptRoof, "roofline.json"), []byte(`{"version": 1, "levels": [`), 0o644)
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{zen4, filepath.Join(empty, "nope")}, "no such file"},
		{[]string{zen4, empty}, "no bench.txt"},
		{[]string{r1, corruptRoof}, "corrupt"},
		{[]string{zen4, r1}, "a roofline only"},
		{[]string{zen4, zen3, "--metric", "speed"}, "--metric"},
		{[]string{zen4, zen3, "--filter", "isa"}, "--filter"},
		{[]string{zen4, zen3, "--filter", "isa=avx512"}, "share no points"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		code, _, stderr := ckbench(t, append(append([]string{"compare"}, c.args...), "--out", dir)...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("compare %v: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, c.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("compare %v: wrote %s", c.args, dir)
		}
	}
}

// TestSweepAllPlan: sweep all --plan prints every step's plan and
// measures nothing; bad input is refused before anything is written.
func TestSweepAllPlan(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := ckbench(t, "sweep", "all", "--plan", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, step := range []string{"== attention", "== prefill", "== quant", "== kvcache", "== softmax", "prefill-flash", "estimated time"} {
		if !strings.Contains(stdout, step) {
			t.Errorf("plan lacks %q", step)
		}
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("--plan wrote %v", ents)
	}
	code, stdout, _ = ckbench(t, "sweep", "all", "--plan", "--steps", "softmax,kvcache", "--out", out)
	if code != 0 || strings.Contains(stdout, "== attention") || !strings.Contains(stdout, "== softmax") || !strings.Contains(stdout, "== kvcache") {
		t.Errorf("--steps softmax,kvcache: exit %d:\n%s", code, stdout)
	}
	for _, args := range [][]string{{"--preset", "huge"}, {"--threads", "0"}, {"--isa", "sse9"}, {"--run-id", "a/b"}, {"--steps", "attention,nope"}} {
		code, _, stderr := ckbench(t, append([]string{"sweep", "all", "--out", out}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("sweep all %v: exit %d, %q", args, code, stderr)
		}
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("bad input wrote %v", ents)
	}
}

// TestSweepAllResume: a killed suite is finished with --resume: a complete
// step is kept, an incomplete one measures only the points it lacks, the
// report is written again; a resume with another grid, or of a folder that
// is not a suite's, is refused with nothing written.
func TestSweepAllResume(t *testing.T) {
	out := t.TempDir()
	suite := []string{"sweep", "all", "--steps", "softmax", "--roofline", "none", "--no-progress", "--retries", "0"}
	if code, _, stderr := ckbench(t, append(suite, "--out", out, "--run-id", "r")...); code != 0 {
		t.Fatalf("sweep all: exit %d: %s", code, stderr)
	}
	dir := filepath.Join(out, "r")
	step := filepath.Join(dir, "softmax")
	before, _ := os.ReadFile(filepath.Join(step, "points.jsonl"))
	code, _, stderr := ckbench(t, append(suite, "--resume", dir)...)
	if code != 0 || !strings.Contains(stderr, "softmax is complete: kept") {
		t.Fatalf("resume of a complete suite: exit %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(step, "points.jsonl")); !bytes.Equal(before, after) {
		t.Errorf("a complete step was measured again")
	}
	// The step as a kill leaves it: incomplete, two points recorded.
	lines := strings.SplitAfter(string(before), "\n")
	os.WriteFile(filepath.Join(step, "points.jsonl"), []byte(strings.Join(lines[:2], "")), 0o644)
	meta, _ := os.ReadFile(filepath.Join(step, "machine.json"))
	os.WriteFile(filepath.Join(step, "machine.json"), []byte(strings.Replace(string(meta), `"complete": true`, `"complete": false`, 1)), 0o644)
	os.RemoveAll(filepath.Join(dir, "report"))
	code, _, stderr = ckbench(t, append(suite, "--resume", dir)...)
	if code != 0 || !strings.Contains(stderr, "2 points recorded") {
		t.Fatalf("resume of a killed step: exit %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(step, "points.jsonl")); strings.Count(string(after), "\n") != strings.Count(string(before), "\n") {
		t.Errorf("resumed step has %d records, want %d", strings.Count(string(after), "\n"), strings.Count(string(before), "\n"))
	}
	if _, err := os.Stat(filepath.Join(dir, "report", "index.html")); err != nil {
		t.Errorf("no report after the resume: %v", err)
	}
	corrupt := filepath.Join(t.TempDir(), "s")
	os.MkdirAll(filepath.Join(corrupt, "softmax"), 0o755)
	os.WriteFile(filepath.Join(corrupt, "roofline.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(corrupt, "softmax", "machine.json"), []byte("{"), 0o644)
	for name, args := range map[string][]string{
		"a corrupt step": append(suite, "--resume", corrupt),
		"another preset": append(suite, "--resume", dir, "--preset", "default"),
		"with --out":     append(suite, "--resume", dir, "--out", out),
		"a step's":       append(suite, "--resume", step),
		"no suite":       append(suite, "--resume", t.TempDir()),
		"nowhere":        append(suite, "--resume", filepath.Join(out, "nope")),
	} {
		code, _, stderr := ckbench(t, args...)
		if code != 2 || !badInputLine(stderr) {
			t.Errorf("%s: exit %d, %q", name, code, stderr)
		}
	}
}

// TestReportBadInput: report of a folder without results, of a corrupt
// points.jsonl (its line named) and of another schema version: one line,
// exit 2, no report written.
func TestReportBadInput(t *testing.T) {
	src := filepath.Join("..", "..", "compare", "testdata", "zen4")
	cp := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "run")
		os.MkdirAll(dir, 0o755)
		for _, f := range []string{"machine.json", "points.jsonl", "bench.txt", "points.csv"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		return dir
	}
	good := cp(t)
	if code, stdout, stderr := ckbench(t, "report", good); code != 0 || !strings.Contains(stdout, "index.html") {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	corrupt := cp(t)
	b, _ := os.ReadFile(filepath.Join(corrupt, "points.jsonl"))
	os.WriteFile(filepath.Join(corrupt, "points.jsonl"), b[:len(b)/2], 0o644) // cut mid-line
	schema := cp(t)
	b, _ = os.ReadFile(filepath.Join(schema, "machine.json"))
	os.WriteFile(filepath.Join(schema, "machine.json"), []byte(strings.Replace(string(b), `"schema": 1`, `"schema": 7`, 1)), 0o644)
	noPoints := cp(t)
	os.Remove(filepath.Join(noPoints, "points.jsonl"))
	oldLine := cp(t)
	b, _ = os.ReadFile(filepath.Join(oldLine, "points.jsonl"))
	os.WriteFile(filepath.Join(oldLine, "points.jsonl"), []byte(strings.Replace(string(b), `"schema":1`, `"schema":0`, 1)), 0o644)
	for _, c := range []struct {
		dir, want string
	}{
		{t.TempDir(), "no results folder"},
		{filepath.Join(t.TempDir(), "nope"), "no such file"},
		{corrupt, "points.jsonl:"},
		{schema, "schema 7, this ckbench reads schema 1"},
		{oldLine, "points.jsonl:1: results of another schema version"},
		{noPoints, "points.jsonl is missing"},
	} {
		code, _, stderr := ckbench(t, "report", c.dir)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("report %s: exit %d, %q; want 2 and %q", c.dir, code, stderr, c.want)
		}
		if _, err := os.Stat(filepath.Join(c.dir, "report")); err == nil {
			t.Errorf("report %s: a report was written", c.dir)
		}
	}
	// compare refuses a tolerance that flags every node (or none),
	// whatever the mode.
	for _, tol := range []string{"-5", "0", "NaN", "+Inf"} {
		if code, _, stderr := ckbench(t, "compare", good, good, "--tolerance", tol, "--out", filepath.Join(t.TempDir(), "c")); code != 2 || !badInputLine(stderr) {
			t.Errorf("compare --tolerance %s: exit %d, %q", tol, code, stderr)
		}
	}
	// compare refuses another schema version too.
	if code, _, stderr := ckbench(t, "compare", good, schema, "--out", filepath.Join(t.TempDir(), "c")); code != 2 || !strings.Contains(stderr, "schema 7") {
		t.Errorf("compare across schemas: exit %d, %q", code, stderr)
	}
}

// TestCompareFleet: one folder tree of several hosts is a fleet: nodes
// grouped by CPU model, each scored, the files written.
func TestCompareFleet(t *testing.T) {
	root := t.TempDir()
	for _, host := range []string{"n1", "n2"} {
		for _, f := range []string{"machine.json", "bench.txt", "points.jsonl", "points.csv"} {
			b, err := os.ReadFile(filepath.Join("..", "..", "compare", "testdata", "zen4", f))
			if err != nil {
				t.Fatal(err)
			}
			if f == "machine.json" {
				b = []byte(strings.Replace(string(b), `"machine": {`, `"machine": {"host": "`+host+`",`, 1))
			}
			os.MkdirAll(filepath.Join(root, host, "run"), 0o755)
			os.WriteFile(filepath.Join(root, host, "run", f), b, 0o644)
		}
	}
	out := filepath.Join(t.TempDir(), "fleet")
	code, stdout, stderr := ckbench(t, "compare", root, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"fleet: 2 nodes, 1 CPU models", "n1", "n2", "AMD EPYC 9R14"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"fleet.txt", "fleet.csv", "compare.png", "compare.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if code, _, stderr := ckbench(t, "compare", "--fleet", t.TempDir(), "--out", out); code != 2 || !strings.Contains(stderr, "no results folder") {
		t.Errorf("empty fleet: exit %d, %q", code, stderr)
	}
}
