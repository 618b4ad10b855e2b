package isa

import (
	"testing"

	"github.com/klauspost/cpuid/v2"
)

func TestDetectMissingFeatures(t *testing.T) {
	var cpu cpuid.CPUInfo // no features at all
	if st := detect(&cpu, "amd64", Generic); !st.Runs {
		t.Fatalf("generic must always run: %+v", st)
	}
	st := detect(&cpu, "amd64", AVX512)
	if st.Runs || len(st.Missing) != 3 || st.Reason == "" {
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
