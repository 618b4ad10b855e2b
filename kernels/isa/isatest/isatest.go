// Package isatest runs a test once per ISA tier, as a subtest named after
// the tier (crypto/internal/cryptotest.TestAllImplementations is the
// model): a tier this CPU or build cannot run is skipped, visibly, with the
// reason, and CKBENCH_REQUIRE_TIERS turns that skip into a failure, so that
// a CI machine with AVX-512 can never silently test less than it has.
package isatest

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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

// evexOnly matches what only an EVEX encoding (AVX-512) can express: a zmm
// or mask register, or x/ymm 16–31.
var evexOnly = regexp.MustCompile(`\b(Z\d+|K[1-7]|[XY](1[6-9]|2\d|3[01]))\b`)

// VEXOnly fails t for every AVX2 function (a TEXT symbol with AVX2 in its
// name) of the Go assembly files that uses a register only AVX-512 has.
// avo's allocator hands out x/ymm 16–31 once 16 are live, and on an
// AVX-512 machine such a kernel runs correctly: only an AVX2-only CPU
// would fault (SIGILL). This check fails on every machine instead.
func VEXOnly(t *testing.T, files ...string) {
	t.Helper()
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		funcs, bad := evexInAVX2(string(b))
		if funcs == 0 {
			t.Errorf("%s: no AVX2 function", file)
		}
		for _, e := range bad {
			t.Errorf("%s:%s", file, e)
		}
	}
}

// evexInAVX2 returns the AVX2 functions of a Go assembly source and a line
// for each use of an AVX-512 register in one of them.
func evexInAVX2(src string) (funcs int, bad []string) {
	fn := ""
	for i, line := range strings.Split(src, "\n") {
		if f, ok := strings.CutPrefix(line, "TEXT "); ok {
			fn, _, _ = strings.Cut(f, "(SB)")
			if strings.Contains(fn, "AVX2") {
				funcs++
			}
			continue
		}
		code, _, _ := strings.Cut(line, "//")
		if strings.Contains(fn, "AVX2") && evexOnly.MatchString(code) {
			bad = append(bad, fmt.Sprintf("%d: %s is an AVX2 function but uses %s, an AVX-512 register: %s",
				i+1, fn, evexOnly.FindString(code), strings.TrimSpace(code)))
		}
	}
	return funcs, bad
}

// Fastest runs calls in turn, round after round while b.Loop lasts, and
// returns each one's fastest time in ns a call, timing reps calls at a
// time: the floor benchmarks' ruler, since the host's noise only slows a
// call, and calls in alternation see the same moments of the host.
func Fastest(b *testing.B, reps int, calls ...func()) []float64 {
	best := make([]float64, len(calls))
	for i := range best {
		best[i] = math.Inf(1)
	}
	for b.Loop() {
		for i, call := range calls {
			t0 := time.Now()
			for range reps {
				call()
			}
			best[i] = min(best[i], float64(time.Since(t0).Nanoseconds())/float64(reps))
		}
	}
	return best
}

// Paired times calls a and b in turn, round after round while b.Loop
// lasts, reps calls at a time, the order swapped every round, and returns
// the median over the rounds of b's time over a's beside it, and each
// one's median time in ns a call: the ruler where the two read different
// data each call (a cache rotated through copies, which differ by a few
// per cent), so that neither a fastest time nor a host that drifts
// between rounds decides.
func Paired(tb *testing.B, reps int, a, b func()) (ratio, aNs, bNs float64) {
	timed := func(call func()) float64 {
		t0 := time.Now()
		for range reps {
			call()
		}
		return float64(time.Since(t0).Nanoseconds()) / float64(reps)
	}
	var ratios, as, bs []float64
	for i := 0; tb.Loop(); i++ {
		var da, db float64
		if i%2 == 0 {
			da = timed(a)
			db = timed(b)
		} else {
			db = timed(b)
			da = timed(a)
		}
		ratios, as, bs = append(ratios, db/da), append(as, da), append(bs, db)
	}
	return median(ratios), median(as), median(bs)
}

// median is the middle of xs (the mean of the two middle ones when even;
// 0 when empty). It sorts xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	slices.Sort(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
