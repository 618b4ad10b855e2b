package sweeps

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/softmax"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/sampler"
)

func tinySoftmaxGrid() SoftmaxGrid {
	return SoftmaxGrid{Variants: softmax.Variants, Tiers: isa.All, Rows: []int{5, 40}, Lens: []int{37},
		Causal: []bool{true, false}, Exps: attention.Exps}
}

// TestRunSoftmax: every variant passes its gate in every tier that runs,
// a tier without kernels is skipped with its reason, a causal matrix with
// more rows than columns is left out, and the bytes are the work model's.
func TestRunSoftmax(t *testing.T) {
	for _, cold := range []bool{false, true} {
		opt := Options{Sampler: sampler.Config{MinTime: 2 * time.Millisecond}, CPU: -1, Seed: 3, Cold: cold, ColdBytes: 64 << 10}
		plan, err := PlanSoftmax(tinySoftmaxGrid(), opt, machine.Describe())
		if err != nil {
			t.Fatal(err)
		}
		// rows 40 > len 37 causal is left out: 3 matrices × 2 variants × 2 exps × 4 tiers.
		if want := 3 * 2 * 2 * len(isa.All); len(plan.Points) != want {
			t.Fatalf("%d points, want %d", len(plan.Points), want)
		}
		ran := 0
		for _, r := range runAll(t, plan, opt) {
			if checkTier(t, r, softmax.Tiers(), fmt.Sprintf("mask=%s rows=%d", r.Mask, r.Tq)) {
				ran++
			}
			if float64(r.Bytes) != float64(8*r.Tq*37) {
				t.Errorf("%s rows %d: %v bytes, want %d", r.Kernel, r.Tq, float64(r.Bytes), 8*r.Tq*37)
			}
		}
		if ran == 0 {
			t.Fatal("no softmax ran")
		}
	}
}

func TestPlanSoftmaxRejects(t *testing.T) {
	info := machine.Describe()
	cases := map[string]func(g *SoftmaxGrid){
		"len":   func(g *SoftmaxGrid) { g.Lens = []int{0} },
		"rows":  func(g *SoftmaxGrid) { g.Rows = []int{-1} },
		"huge":  func(g *SoftmaxGrid) { g.Rows, g.Lens = []int{1 << 20}, []int{1 << 20} },
		"empty": func(g *SoftmaxGrid) { g.Exps = nil },
		"causal": func(g *SoftmaxGrid) {
			g.Rows, g.Lens, g.Causal = []int{40}, []int{37}, []bool{true}
		},
	}
	for name, mutate := range cases {
		g := tinySoftmaxGrid()
		mutate(&g)
		if _, err := PlanSoftmax(g, Options{}, info); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	g := tinySoftmaxGrid()
	if err := g.Set("kernel", "3-pass,2-pass"); err == nil || !strings.Contains(err.Error(), "2-pass") {
		t.Errorf("unknown variant: %v", err)
	}
	if err := g.Set("causal", "maybe"); err == nil {
		t.Error("causal=maybe accepted")
	}
	// A matrix larger than memory is refused before anything runs.
	g = tinySoftmaxGrid()
	g.Rows, g.Lens = []int{1 << 14}, []int{1 << 16}
	if _, err := PlanSoftmax(g, Options{MemAvailable: 1 << 30}, info); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("memory check: %v", err)
	}
}
