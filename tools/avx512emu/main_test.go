//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerdict checks how the guest's output is judged: an avx512 failure
// is the emulator's only when its avx2 twin failed too in the same
// package, and a package that failed without a failing test (a crash) or
// never finished fails the run.
func TestVerdict(t *testing.T) {
	const (
		start = startTag + "/repo/kernels/kvcache\n"
		ok    = doneTag + "/repo/kernels/kvcache in 1 s (guest clock) ok\n"
		fail  = doneTag + "/repo/kernels/kvcache in 1 s (guest clock) FAIL: exit status 1\n"
	)
	twins := "--- FAIL: TestStores (0.9s)\n    --- FAIL: TestStores/avx2 (0.3s)\n        --- FAIL: TestStores/avx2/append/f16 (0.0s)\n" +
		"    --- FAIL: TestStores/avx512 (0.3s)\n        --- FAIL: TestStores/avx512/append/f16 (0.0s)\n"
	for _, c := range []struct {
		name, out string
		pkgs      int
		want      string // "" passes; else a part of the error
	}{
		{"all ok", start + ok, 1, ""},
		{"twins", start + twins + fail, 1, ""},
		{"avx512 alone", start + "--- FAIL: TestStores (0.9s)\n    --- FAIL: TestStores/avx512 (0.3s)\n        --- FAIL: TestStores/avx512/append/f16 (0.0s)\n" + fail, 1, "TestStores/avx512/append/f16"},
		{"generic", start + "--- FAIL: TestStores (0.9s)\n    --- FAIL: TestStores/generic (0.3s)\n" + fail, 1, "TestStores/generic"},
		{"crash", start + "SIGILL: illegal instruction\n" + fail, 1, "exit status 1"},
		{"twin in another package", start + "    --- FAIL: TestStores/avx2/x (0.3s)\n" + fail +
			strings.ReplaceAll(start, "kvcache", "quant") + "    --- FAIL: TestStores/avx512/x (0.3s)\n" + strings.ReplaceAll(fail, "kvcache", "quant"), 2, "TestStores/avx512/x"},
		{"unfinished", start + ok, 2, "finished 1 of 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "serial.out")
			if err := os.WriteFile(f, []byte(strings.ReplaceAll(c.out, "\n", "\r\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			err := verdict(f, make([]string, c.pkgs))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("failed: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error naming %q", err, c.want)
			}
		})
	}
}
