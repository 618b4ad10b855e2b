package sweeps

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/prefill"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/sampler"
)

func tinyPrefillGrid() PrefillGrid {
	return PrefillGrid{Kernels: prefill.Kernels, Tiers: isa.All, HeadDims: []int{64}, Heads: []HeadPair{{4, 2}},
		Tqs: []int{9, 20}, Tks: []int{20}, Masks: prefill.Masks, Docs: []int{3}, Brs: []int{8}, Bcs: []int{16},
		Exps: []attention.Exp{attention.ExpFast}}
}

// TestRunPrefill: every kernel passes its gate in every tier that has
// kernels and runs here, the others are skipped with a reason, and FLOPs
// count only the keys each row sees.
func TestRunPrefill(t *testing.T) {
	opt := Options{Sampler: sampler.Config{MinTime: 2 * time.Millisecond}, CPU: -1, Seed: 3}
	plan, err := PlanPrefill(tinyPrefillGrid(), opt, machine.Describe())
	if err != nil {
		t.Fatal(err)
	}
	// 2 tq × 3 masks, × 2 kernels × 4 tiers.
	if want := 2 * 3 * 2 * len(isa.All); len(plan.Points) != want {
		t.Fatalf("%d points, want %d", len(plan.Points), want)
	}
	ran := 0
	for _, r := range runAll(t, plan, opt) {
		if checkTier(t, r, prefill.Tiers(), fmt.Sprintf("mask=%s tq=%d", r.Mask, r.Tq)) {
			ran++
		}
		if dense := float64(4 * 4 * 64 * r.Tq * 20); float64(r.DenseFlops) != dense ||
			(r.Mask == "none") != (float64(r.Flops) == dense) {
			t.Errorf("%s mask %s tq %d: %v FLOPs, %v dense", r.Kernel, r.Mask, r.Tq, float64(r.Flops), float64(r.DenseFlops))
		}
	}
	if ran == 0 {
		t.Fatal("no prefill ran")
	}
}

func TestPlanPrefillRejects(t *testing.T) {
	info := machine.Describe()
	cases := map[string]func(g *PrefillGrid){
		"hd":    func(g *PrefillGrid) { g.HeadDims = []int{72} },
		"heads": func(g *PrefillGrid) { g.Heads = []HeadPair{{3, 2}} },
		"tq":    func(g *PrefillGrid) { g.Tqs = []int{0} },
		"br":    func(g *PrefillGrid) { g.Brs = []int{1000} },
		"docs":  func(g *PrefillGrid) { g.Docs = []int{0} },
		"empty": func(g *PrefillGrid) { g.Masks = nil },
		"masked": func(g *PrefillGrid) {
			g.Tqs, g.Tks, g.Masks = []int{30}, []int{20}, []prefill.Mask{prefill.Causal}
		},
	}
	for name, mutate := range cases {
		g := tinyPrefillGrid()
		mutate(&g)
		if _, err := PlanPrefill(g, Options{}, info); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	g := tinyPrefillGrid()
	if err := g.Set("mask", "causal,sliding"); err == nil || !strings.Contains(err.Error(), "sliding") {
		t.Errorf("unknown mask: %v", err)
	}
	if _, err := PlanPrefill(tinyPrefillGrid(), Options{Cold: true}, info); err == nil {
		t.Error("--cold accepted")
	}
	g = tinyPrefillGrid()
	g.Tqs, g.Tks = []int{1 << 17}, []int{1 << 17}
	if _, err := PlanPrefill(g, Options{MemAvailable: 8 << 30}, info); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("memory check: %v", err)
	}
}
