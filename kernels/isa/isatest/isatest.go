// Package isatest runs a test once per ISA tier, as a subtest named after
// the tier (crypto/internal/cryptotest.TestAllImplementations is the
// model): a tier this CPU or build cannot run is skipped, visibly, with the
// reason, and CKBENCH_REQUIRE_TIERS turns that skip into a failure, so that
// a CI machine with AVX-512 can never silently test less than it has.
package isatest

import (
	"os"
	"strings"
	"testing"

	"github.com/ckbench/ckbench/kernels/isa"
)

// RequireEnv names the environment variable listing the tiers that must
// run here (comma-separated, e.g. avx2,avx512,avx512vnni; "detected" for
// every tier the CPU has): a test that would skip one of them fails.
const RequireEnv = "CKBENCH_REQUIRE_TIERS"

// Required reports whether tier t is listed in CKBENCH_REQUIRE_TIERS.
func Required(t isa.Tier) bool {
	for _, s := range strings.Split(os.Getenv(RequireEnv), ",") {
		s = strings.TrimSpace(s)
		if s == string(t) || (s == "detected" && isa.Detect(t).Runs) {
			return true
		}
	}
	return false
}

// Skip ends t when tier tier cannot run here: t.Skip with the reason, or
// t.Fatal when the tier is required. It reports nothing when the tier runs.
func Skip(t testing.TB, tier isa.Tier) {
	t.Helper()
	st := isa.Detect(tier)
	if st.Runs {
		return
	}
	if Required(tier) {
		t.Fatalf("tier %s is required here (%s) but cannot run: %s", tier, RequireEnv, st.Reason)
	}
	t.Skipf("tier %s: %s", tier, st.Reason)
}

// Run runs f once per tier of isa.All with the implementation impls has
// for it, each as the subtest t.Run(tier). A tier that cannot run here is
// skipped (or fails, see Skip): this covers a build without the tier's
// kernels (purego, another GOARCH) as well as a CPU without its features.
// A tier that runs here but for which the family has no kernels (attention
// has no avx512vnni tier) is skipped, required or not.
func Run[T isa.Implemented](t *testing.T, impls []T, f func(t *testing.T, im T)) {
	t.Helper()
	for _, tier := range isa.All {
		t.Run(string(tier), func(t *testing.T) {
			Skip(t, tier)
			im, ok := isa.Find(impls, tier)
			if !ok {
				t.Skipf("tier %s: this family has no kernels for it", tier)
			}
			f(t, im)
		})
	}
}

// Tiers runs f once per tier in tiers, as Run does for implementations.
func Tiers(t *testing.T, tiers []isa.Tier, f func(t *testing.T, tier isa.Tier)) {
	t.Helper()
	for _, tier := range tiers {
		t.Run(string(tier), func(t *testing.T) {
			Skip(t, tier)
			f(t, tier)
		})
	}
}
