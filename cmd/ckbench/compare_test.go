package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{zen4}, "at least two"},
		{[]string{zen4, filepath.Join(empty, "nope")}, "no such file"},
		{[]string{zen4, empty}, "no bench.txt"},
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
	for _, args := range [][]string{{"--preset", "huge"}, {"--threads", "0"}, {"--isa", "sse9"}, {"--run-id", "a/b"}} {
		code, _, stderr := ckbench(t, append([]string{"sweep", "all", "--out", out}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("sweep all %v: exit %d, %q", args, code, stderr)
		}
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("bad input wrote %v", ents)
	}
}
