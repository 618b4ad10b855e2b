package sweeps

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/prefill"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/sampler"
)

func tinyPrefillGrid() AttentionGrid {
	g, _, _ := Preset("quick") // fast exp only
	g.Kernels, g.Tiers, g.HeadDims, g.Heads = prefillKernels(), isa.All, []int{64}, []HeadPair{{4, 2}}
	g.Tqs, g.Ctxs, g.Masks, g.Docs, g.Brs, g.Bcs = []int{9, 20}, []int{20}, prefill.Masks, []int{3}, []int{8}, []int{16}
	return g
}

// TestRunPrefill: every kernel passes its gate in every tier that has
// kernels and runs here, the others are skipped with a reason, and FLOPs
// count only the keys each row sees.
func TestRunPrefill(t *testing.T) {
	opt := Options{Sampler: sampler.Config{MinTime: 2 * time.Millisecond}, CPU: -1, Seed: 3}
	plan, err := PlanAttention(tinyPrefillGrid(), opt, machine.Describe())
	if err != nil {
		t.Fatal(err)
	}
	// 2 tq × 3 masks, × 2 kernels × 4 tiers (× 1 exp), and no decode point.
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
	cases := map[string]func(g *AttentionGrid){
		"hd":    func(g *AttentionGrid) { g.HeadDims = []int{72} },
		"heads": func(g *AttentionGrid) { g.Heads = []HeadPair{{3, 2}} },
		"tq":    func(g *AttentionGrid) { g.Tqs = []int{0} },
		"br":    func(g *AttentionGrid) { g.Brs = []int{1000} },
		"docs":  func(g *AttentionGrid) { g.Docs = []int{0} },
		"empty": func(g *AttentionGrid) { g.Masks = nil },
		"masked": func(g *AttentionGrid) {
			g.Tqs, g.Ctxs, g.Masks = []int{30}, []int{20}, []prefill.Mask{prefill.Causal}
		},
	}
	for name, mutate := range cases {
		g := tinyPrefillGrid()
		mutate(&g)
		if _, err := PlanAttention(g, Options{}, info); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	g := tinyPrefillGrid()
	if err := g.Set("mask", "causal,sliding"); err == nil || !strings.Contains(err.Error(), "sliding") {
		t.Errorf("unknown mask: %v", err)
	}
	if _, err := PlanAttention(tinyPrefillGrid(), Options{Cold: true}, info); err == nil {
		t.Error("--cold accepted")
	}
	g = tinyPrefillGrid()
	g.Tqs, g.Ctxs = []int{1 << 17}, []int{1 << 17}
	if _, err := PlanAttention(g, Options{MemAvailable: 8 << 30}, info); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("memory check: %v", err)
	}
}
