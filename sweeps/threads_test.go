package sweeps

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/prefill"
	"github.com/ckbench/ckbench/kernels/quant"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sampler"
)

func TestBalancedRows(t *testing.T) {
	s := prefill.Shape{H: 1, Hkv: 1, D: 16, Tq: 100, Tk: 100, Mask: prefill.Causal}
	b := balancedRows(s, 2, 8)
	if b[0] != 0 || b[2] != 100 || b[1]%8 != 0 || b[1] <= 50 || b[1] >= 80 {
		t.Fatalf("causal bounds %v: the second block holds the longer rows, so it must be shorter", b)
	}
	s.Mask = prefill.None
	if b := balancedRows(s, 4, 8); b[0] != 0 || b[4] != 100 || b[2] != 56 && b[2] != 48 {
		t.Fatalf("unmasked bounds %v", b)
	}
	if b := balancedRows(prefill.Shape{H: 1, Hkv: 1, D: 16, Tq: 3, Tk: 3}, 4, 8); b[4] != 3 {
		t.Fatalf("few rows: %v", b)
	}
}

func TestSplitRange(t *testing.T) {
	for _, c := range []struct{ n, parts, align int }{{10, 3, 1}, {10, 4, 4}, {3, 8, 1}, {4096, 2, 4096}, {0, 2, 1}, {17, 1, 4}} {
		rs := splitRange(c.n, c.parts, c.align)
		at := 0
		for _, r := range rs {
			if r[0] != at || r[1] < r[0] || (r[0]%c.align != 0 && r[0] != c.n) {
				t.Fatalf("splitRange(%d, %d, %d) = %v", c.n, c.parts, c.align, rs)
			}
			at = r[1]
		}
		if at != c.n {
			t.Fatalf("splitRange(%d, %d, %d) = %v: ends at %d", c.n, c.parts, c.align, rs, at)
		}
	}
	blocks := [][2]int{{0, 5}, {100, 103}, {200, 210}}
	parts := splitBlocks(blocks, 3)
	var all [][2]int
	for _, p := range parts {
		all = append(all, p...)
	}
	rows := 0
	for _, r := range all {
		rows += r[1] - r[0]
	}
	if rows != 18 || all[0][0] != 0 || all[len(all)-1][1] != 210 {
		t.Fatalf("splitBlocks = %v", parts)
	}
}

// TestThreads: at 2 threads every family's kernels with a split pass
// their gate (the shares together write the whole output; split-KV's
// merged partials), the records say 2 threads, and a point with a
// 1-thread twin gets its scaling; a kernel without a split is skipped with
// its reason, never run wrong.
func TestThreads(t *testing.T) {
	cpus, err := sampler.AllowedCPUs()
	if err != nil || len(cpus) < 2 {
		t.Skip("needs 2 CPUs this process may use")
	}
	opt := Options{Sampler: sampler.Config{MinTime: 2 * time.Millisecond}, CPU: -1, Seed: 5, Threads: []int{1, 2}}
	info := machine.Describe()
	tiers := []isa.Tier{isa.Generic, isa.AVX512}

	ag := tinyGrid()
	ag.Tiers, ag.KVs, ag.Layouts = tiers, []attention.KVType{attention.F32, attention.F16}, attention.Layouts
	ag.Heads = []HeadPair{{4, 2}, {1, 1}}
	ag.Kernels = []string{string(attention.DecodeFlash), string(attention.DecodeFlashGQA), string(attention.DecodeSplit), string(attention.DecodeNaive), KVRead,
		string(prefill.Flash), string(prefill.Materialized)}
	ag.Tqs, ag.Masks, ag.Docs, ag.Brs, ag.Bcs = []int{24}, []prefill.Mask{prefill.Causal, prefill.None, prefill.Doc}, []int{3}, []int{8}, []int{16}
	qg, _, _ := QuantPreset("quick")
	qg.Tiers, qg.Formats, qg.Shapes = tiers, []quant.Format{quant.Q4_K}, []Shape{{M: 20, K: 256}}
	sg := tinySoftmaxGrid()
	sg.Tiers = tiers
	kg := tinyKVCacheGrid()
	kg.Tiers, kg.Layouts = tiers, attention.Layouts
	plans := map[string]func() (*Plan, error){
		"kvcache":   func() (*Plan, error) { return PlanKVCache(kg, opt, info) },
		"attention": func() (*Plan, error) { return PlanAttention(ag, opt, info) },
		"quant":     func() (*Plan, error) { return PlanQuant(qg, opt, info) },
		"softmax":   func() (*Plan, error) { return PlanSoftmax(sg, opt, info) },
	}
	for name, plan := range plans {
		t.Run(name, func(t *testing.T) {
			p, err := plan()
			if err != nil {
				t.Fatal(err)
			}
			recs := runAll(t, p, opt)
			// The 1-thread times a 2-thread point is scaled by. A twin
			// none of whose samples survived (its thread descheduled on a
			// loaded host, as under -race on CI's 2 cores) has no time,
			// and its 2-thread point rightly has no scaling.
			oneTimed := map[string]bool{}
			for _, r := range recs {
				if r.Th == 1 && timed(r.Status) && r.NsMedian.Valid() {
					oneTimed[results.BenchName(&r)] = true
				}
			}
			two := 0
			for _, r := range recs {
				if r.Status == results.StatusFailed {
					t.Errorf("%s/%s th=%d: failed: %s", r.Kernel, r.ISA, r.Th, r.Reason)
				}
				if r.Th == 2 && r.Status == results.StatusSkipped && r.KVH > 1 && strings.Contains(r.Reason, "split") {
					t.Errorf("%s/%s th=2 kvh=%d layout=%s: skipped: %s", r.Kernel, r.ISA, r.KVH, r.Layout, r.Reason)
				}
				if r.Th != 2 || r.Status == results.StatusSkipped {
					continue
				}
				two++
				one := r
				one.Th = 1
				switch scaled := r.Scaling.Valid() && r.Efficiency.Valid(); {
				case r.NsMedian.Valid() && oneTimed[results.BenchName(&one)] && !scaled:
					t.Errorf("%s/%s th=2: no scaling (%v, %v) though both points have a time", r.Kernel, r.ISA, r.Scaling, r.Efficiency)
				case (!r.NsMedian.Valid() || !oneTimed[results.BenchName(&one)]) && scaled:
					t.Errorf("%s/%s th=2: scaling %v without two times", r.Kernel, r.ISA, r.Scaling)
				}
			}
			if two == 0 {
				t.Fatal("no 2-thread point ran")
			}
			// Split-KV (decode-split; decode, naive too, with one KV head
			// for two threads) runs and passes its gate.
			// (prefill with one KV head splits its query rows.)
			for _, k := range []string{string(attention.DecodeSplit), string(attention.DecodeFlash), string(attention.DecodeNaive), string(prefill.Flash), string(prefill.Materialized)} {
				if name == "attention" && !slices.ContainsFunc(recs, func(r results.Record) bool {
					return r.Kernel == k && r.Th == 2 && r.KVH == 1 && timed(r.Status)
				}) {
					t.Errorf("%s with one KV head at 2 threads did not run", k)
				}
			}
			for _, k := range []string{string(prefill.Flash), string(prefill.Materialized)} {
				if name == "attention" && !slices.ContainsFunc(recs, func(r results.Record) bool {
					return r.Kernel == k && r.Th == 2 && r.KVH == 1 && strings.HasPrefix(r.Mask, "doc") && timed(r.Status)
				}) {
					t.Errorf("%s with one KV head and a doc mask at 2 threads did not run", k)
				}
			}
		})
	}
}
