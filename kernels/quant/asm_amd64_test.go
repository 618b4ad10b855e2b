//go:build !purego

package quant

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestAVX2KernelsUseVEXRegistersOnly guards the AVX2 tier: the Go
// assembler silently picks an EVEX (AVX-512) encoding when an instruction
// names X16–X31, Y16–Y31, a ZMM or a mask register, and such code would
// fault on an AVX2-only CPU. avo's register allocator may hand those out,
// so every AVX2 function of the generated file is checked.
func TestAVX2KernelsUseVEXRegistersOnly(t *testing.T) {
	f, err := os.Open("gemv_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evexOnly := regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z[0-9]+|K[1-7])\b`)
	fn, checked := "", 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "TEXT ") {
			fn = line
			if strings.Contains(fn, "AVX2") {
				checked++
			}
			continue
		}
		if strings.Contains(fn, "AVX2") && evexOnly.MatchString(line) {
			t.Errorf("%s: %s uses an AVX-512 register", fn, strings.TrimSpace(line))
		}
	}
	if checked == 0 {
		t.Fatal("no AVX2 functions found in gemv_amd64.s")
	}
}
