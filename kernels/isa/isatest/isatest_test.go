package isatest

import (
	"testing"

	"github.com/ckbench/ckbench/kernels/isa"
)

func TestRequired(t *testing.T) {
	t.Setenv(RequireEnv, "avx2, avx512vnni")
	if !Required(isa.AVX2) || !Required(isa.AVX512VNNI) || Required(isa.AVX512) {
		t.Fatal("the list is not read")
	}
	t.Setenv(RequireEnv, "detected")
	for _, tier := range isa.All {
		if Required(tier) != isa.Detect(tier).Runs {
			t.Errorf("detected: %s required=%v, runs=%v", tier, Required(tier), isa.Detect(tier).Runs)
		}
	}
	t.Setenv(RequireEnv, "")
	if Required(isa.Generic) {
		t.Fatal("nothing is required when the variable is empty")
	}
}

// TestSkipShows: every tier gets a subtest; one that cannot run here is
// skipped (go test -v lists it as SKIP with the reason).
func TestSkipShows(t *testing.T) {
	ran := map[isa.Tier]bool{}
	Tiers(t, isa.All, func(t *testing.T, tier isa.Tier) { ran[tier] = true })
	for _, tier := range isa.All {
		if ran[tier] != isa.Detect(tier).Runs {
			t.Errorf("%s: ran=%v, runs here=%v", tier, ran[tier], isa.Detect(tier).Runs)
		}
	}
}
