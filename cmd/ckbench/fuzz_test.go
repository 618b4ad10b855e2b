package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzFlags are the value flags of each family's sweep that FuzzSweepArgs
// draws from (the output, run and roofline flags stay fixed).
var fuzzFlags = map[string][]string{
	"attention": {"--kernel", "--isa", "--hd", "--ctx", "--heads", "--kv", "--layout", "--tk", "--exp", "--window", "--splits", "--threads", "--tq", "--mask", "--docs", "--br", "--bc", "--preset", "--min-time", "--sample-time", "--retries", "--counters", "--seed"},
	"kvcache":   {"--kernel", "--isa", "--hd", "--ctx", "--heads", "--kv", "--layout", "--tokens", "--threads", "--preset", "--min-time", "--sample-time", "--retries", "--seed"},
	"quant":     {"--kernel", "--isa", "--fmt", "--act", "--shape", "--rb", "--threads", "--preset", "--min-time", "--sample-time", "--retries", "--seed"},
	"softmax":   {"--kernel", "--isa", "--rows", "--len", "--causal", "--exp", "--threads", "--preset", "--min-time", "--sample-time", "--retries", "--seed"},
	"all":       {"--preset", "--threads", "--isa", "--steps", "--run-id", "--roofline"},
}

// FuzzSweepArgs: whatever values three of a family's sweep flags (or sweep
// all's) get,
// `--plan` either plans (exit 0) or refuses with exit 2 and one
// 'ckbench: ' line on stderr, within 10 s; it never panics and never
// leaves files in --out.
func FuzzSweepArgs(f *testing.F) {
	f.Add(uint8(0), uint8(3), "512..4096", uint8(4), "32:8", uint8(9), "none,1,77")
	f.Add(uint8(1), uint8(7), "-3", uint8(2), "8", uint8(0), "append")
	f.Add(uint8(2), uint8(4), "4096x4096", uint8(2), "q4_K,q8_0", uint8(5), "1,9")
	f.Add(uint8(3), uint8(2), "9223372036854775807", uint8(3), "1..2..3", uint8(4), "on")
	f.Add(uint8(4), uint8(3), "softmax,quant", uint8(5), "missing.json", uint8(1), "1,all")
	families := []string{"attention", "kvcache", "quant", "softmax", "all"}
	f.Fuzz(func(t *testing.T, family, f1 uint8, v1 string, f2 uint8, v2 string, f3 uint8, v3 string) {
		fam := families[int(family)%len(families)]
		flags := fuzzFlags[fam]
		dir := t.TempDir()
		args := []string{"sweep", fam, "--plan", "--out", dir, "--roofline", "none"}
		for _, fv := range []struct {
			i uint8
			v string
		}{{f1, v1}, {f2, v2}, {f3, v3}} {
			args = append(args, flags[int(fv.i)%len(flags)]+"="+fv.v)
		}
		type result struct {
			code   int
			stderr string
		}
		done := make(chan result, 1)
		go func() {
			var out, errb bytes.Buffer
			c := run(args, &out, &errb)
			done <- result{c, errb.String()}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: --plan still running after 10 s", args)
		}
		code, stderr := r.code, r.stderr
		switch code {
		case exitOK:
		case exitUsage:
			if !badInputLine(stderr) {
				t.Errorf("%q: exit 2 with %q, want one 'ckbench: ' line", args, stderr)
			}
		default:
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%q: --plan left %v", args, entries)
		}
	})
}

// FuzzResultsFiles: a results folder with one of its files spliced
// anywhere with anything (a corrupt or hand-edited results file) makes
// `report`, `compare` of it and a good one, and `compare` of the two as a
// fleet either work (exit 0) or refuse with exit 2 and one 'ckbench: '
// line; they never panic, and a refused report writes no report folder,
// a refused compare no output folder.
func FuzzResultsFiles(f *testing.F) {
	src := filepath.Join("..", "..", "compare", "testdata", "zen4")
	files := []string{"machine.json", "points.jsonl", "points.csv", "bench.txt"}
	orig := map[string][]byte{}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			f.Fatal(err)
		}
		orig[name] = b
	}
	f.Add(uint8(1), uint32(600), uint16(0), []byte(`"status":"ok",`))
	f.Add(uint8(0), uint32(40), uint16(3), []byte("-1e309"))
	f.Add(uint8(1), uint32(300), uint16(9), []byte("NaN"))
	f.Add(uint8(2), uint32(2666), uint16(0), []byte("\nattention,decode-flash,avx2\n"))
	f.Fuzz(func(t *testing.T, which uint8, off uint32, cut uint16, put []byte) {
		name := files[int(which)%len(files)]
		b := orig[name]
		o := int(off % uint32(len(b)+1))
		c := min(int(cut), len(b)-o)
		mutated := append(append(append([]byte(nil), b[:o]...), put...), b[o+c:]...)
		root := t.TempDir()
		write := func(dir string, edit bool) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, n := range files {
				data := orig[n]
				if edit && n == name {
					data = mutated
				}
				if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		good, bad := filepath.Join(root, "good"), filepath.Join(root, "bad")
		write(good, false)
		write(bad, true)
		check := func(args []string, leftover string) {
			code, _, stderr := ckbench(t, args...)
			switch code {
			case exitOK:
			case exitUsage:
				if !badInputLine(stderr) {
					t.Errorf("%q: exit 2 with %q, want one 'ckbench: ' line", args, stderr)
				}
				if _, err := os.Stat(leftover); err == nil {
					t.Errorf("%q: refused, yet wrote %s", args, leftover)
				}
			default:
				t.Fatalf("%q (%s spliced at %d: %d bytes out, %q in): exit %d: %s", args, name, o, c, put, code, stderr)
			}
		}
		check([]string{"report", bad}, filepath.Join(bad, "report"))
		outs := t.TempDir()
		check([]string{"compare", good, bad, "--out", filepath.Join(outs, "pair")}, filepath.Join(outs, "pair"))
		check([]string{"compare", root, "--out", filepath.Join(outs, "fleet")}, filepath.Join(outs, "fleet")) // a fleet of the two
	})
}
