package isa

import (
	"os"
	"strings"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

func TestDetectMissingFeatures(t *testing.T) {
	var cpu cpuid.CPUInfo // no features at all
	if st := detect(&cpu, "amd64", Generic); !st.Runs {
		t.Fatalf("generic must always run: %+v", st)
	}
	st := detect(&cpu, "amd64", AVX512)
	if st.Runs || len(st.Missing) != len(AVX512.Requires()) || st.Reason == "" {
		t.Fatalf("avx512 on a featureless CPU: %+v", st)
	}
	if st := detect(&cpuid.CPU, "arm64", AVX2); st.Runs || st.Reason == "" {
		t.Fatalf("avx2 on arm64: %+v", st)
	}
}

func TestParse(t *testing.T) {
	for _, tier := range All {
		if got, err := Parse(string(tier)); err != nil || got != tier {
			t.Errorf("Parse(%q) = %q, %v", tier, got, err)
		}
	}
	if _, err := Parse("avx1024"); err == nil {
		t.Error("Parse accepted avx1024")
	}
}

// TestExpectedSkips lets a run under emulation prove the skip path:
// make test-portable sets CKBENCH_EXPECT_SKIPPED=avx512 for QEMU's Haswell.
func TestExpectedSkips(t *testing.T) {
	list := os.Getenv("CKBENCH_EXPECT_SKIPPED")
	if list == "" {
		t.Skip("CKBENCH_EXPECT_SKIPPED not set")
	}
	for _, name := range strings.Split(list, ",") {
		tier, err := Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		if st := Detect(tier); st.Runs || st.Reason == "" {
			t.Errorf("tier %s should be skipped here: %+v", tier, st)
		} else {
			t.Logf("tier %s skipped: %s", tier, st.Reason)
		}
	}
}
