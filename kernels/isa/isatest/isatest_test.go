package isatest

import (
	"strings"
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

// TestEVEXInAVX2: the registers only AVX-512 has are found in AVX2
// functions, and only there.
func TestEVEXInAVX2(t *testing.T) {
	src := `TEXT ·fAVX2(SB), NOSPLIT, $0-8
	VFMADD231PS Y1, Y2, Y15 // Y16 in a comment is fine
	VADDPS      X3, X4, X5
TEXT ·fAVX512(SB), NOSPLIT, $0-8
	VADDPS Z1, Z2, Z31
	KMOVW  K1, AX
TEXT ·gAVX2(SB), NOSPLIT, $0-8
	VMOVUPS (AX), Y16
	VADDPS  X20, X1, X1
	VPADDD  Z0, Z0, Z0
	KMOVW   K2, AX
`
	funcs, bad := evexInAVX2(src)
	if funcs != 2 || len(bad) != 4 {
		t.Fatalf("%d AVX2 functions, %d bad lines: %q", funcs, len(bad), bad)
	}
	for _, b := range bad {
		if !strings.Contains(b, "gAVX2") {
			t.Errorf("flagged outside gAVX2: %s", b)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// Paired calls both sides equally often, reps at a time, in both orders.
func TestPaired(t *testing.T) {
	var na, nb, aFirst int
	last := ""
	r := testing.Benchmark(func(b *testing.B) {
		Paired(b, 3, func() { na++; last = "a" }, func() {
			nb++
			if last == "a" {
				aFirst++
			}
			last = "b"
		})
	})
	if r.N == 0 || na != nb || na%3 != 0 {
		t.Fatalf("a called %d times, b %d (N %d)", na, nb, r.N)
	}
	if aFirst == 0 || aFirst == nb/3 && nb/3 > 1 {
		t.Errorf("b followed a in %d of %d rounds: the order never alternated", aFirst, nb/3)
	}
}
