package sweeps

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/kvcache"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/sampler"
)

func tinyKVCacheGrid() KVCacheGrid {
	return KVCacheGrid{Ops: KVCacheOps(), Tiers: isa.All, HeadDims: []int{64}, Heads: []int{3}, Tokens: []int{5},
		Ctxs: []int{7}, KVs: attention.KVTypes, Layouts: attention.Layouts}
}

// TestRunKVCache: per store shape the kv-copy ceiling runs first (widest
// tier that runs first), every store passes its byte-for-byte gate in
// every tier that runs, a tier without stores is skipped with its reason,
// and the stores' bytes are the work model's; cold rotates positions.
func TestRunKVCache(t *testing.T) {
	for _, cold := range []bool{false, true} {
		opt := Options{Sampler: sampler.Config{MinTime: 2 * time.Millisecond}, CPU: -1, Seed: 3, Cold: cold, ColdBytes: 64 << 10}
		plan, err := PlanKVCache(tinyKVCacheGrid(), opt, machine.Describe())
		if err != nil {
			t.Fatal(err)
		}
		checkCeilingFirst(t, plan, KVCopy, widestRunning(kvcache.Tiers()))
		recs := runAll(t, plan, opt)
		stores := 0
		for _, r := range recs {
			runs := checkTier(t, r, kvcache.Tiers(), fmt.Sprintf("kv=%s layout=%q", r.KV, r.Layout))
			if r.Kernel == KVCopy || !runs {
				continue
			}
			stores++
			kv, _ := attention.ParseKVType(r.KV)
			want := 2 * 3 * r.Tokens * 64 * (4 + kv.RowBytes(64)/64)
			if kv == attention.Q8_0 {
				want = 2*3*r.Tokens*64*4 + 2*3*r.Tokens*kv.RowBytes(64)
			}
			if float64(r.Bytes) != float64(want) {
				t.Errorf("%s/%s kv=%s: %v bytes, want %d", r.Kernel, r.ISA, r.KV, float64(r.Bytes), want)
			}
		}
		if stores == 0 {
			t.Fatal("no store ran")
		}
		checkReadCeiling(t, recs, KVCopy)
	}
}

func TestPlanKVCacheRejects(t *testing.T) {
	info := machine.Describe()
	cases := map[string]func(g *KVCacheGrid){
		"hd":     func(g *KVCacheGrid) { g.HeadDims = []int{72} },
		"q8 hd":  func(g *KVCacheGrid) { g.HeadDims = []int{80} },
		"tokens": func(g *KVCacheGrid) { g.Tokens = []int{0} },
		"heads":  func(g *KVCacheGrid) { g.Heads = []int{0} },
		"ctx":    func(g *KVCacheGrid) { g.Ctxs = []int{-1} },
		"empty":  func(g *KVCacheGrid) { g.KVs = nil },
	}
	for name, mutate := range cases {
		g := tinyKVCacheGrid()
		mutate(&g)
		if _, err := PlanKVCache(g, Options{}, info); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	g := tinyKVCacheGrid()
	if err := g.Set("kernel", "append,flush"); err == nil || !strings.Contains(err.Error(), "flush") {
		t.Errorf("unknown store: %v", err)
	}
	// A cache larger than memory is refused before anything runs.
	g = tinyKVCacheGrid()
	g.Ctxs, g.Heads, g.HeadDims = []int{1 << 28}, []int{64}, []int{256}
	if _, err := PlanKVCache(g, Options{MemAvailable: 8 << 30}, info); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("memory check: %v", err)
	}
}

// TestPresetsValid: every preset of every registered family is a grid
// its own Validate accepts (a preset a user cannot run is a bug).
func TestPresetsValid(t *testing.T) {
	for _, f := range Families() {
		for _, name := range f.Presets() {
			g, _, err := f.Grid(name)
			if err != nil {
				t.Fatalf("%s preset %s: %v", f.Name(), name, err)
			}
			v, ok := g.(interface{ Validate() error })
			if !ok {
				continue
			}
			if err := v.Validate(); err != nil {
				t.Errorf("%s preset %s: %v", f.Name(), name, err)
			}
		}
	}
}

// TestConfigReadable: every preset's config, as machine.json writes it,
// lists values a reader can use: a list of names or numbers per key, never
// a list turned into one string (base64, as encoding/json writes a
// []uint8 such as []attention.Exp) or into objects.
func TestConfigReadable(t *testing.T) {
	for _, f := range Families() {
		for _, name := range f.Presets() {
			g, _, err := f.Grid(name)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(g.Config())
			if err != nil {
				t.Fatalf("%s %s: %v", f.Name(), name, err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			for k, v := range cfg {
				list, ok := v.([]any)
				if !ok {
					t.Errorf("%s %s: %s is %v, not a list", f.Name(), name, k, v)
					continue
				}
				for _, x := range list {
					switch x.(type) {
					case string, float64:
					default:
						if f.Name() != "quant" || k != "shape" { // quant shapes are {M, K}
							t.Errorf("%s %s: %s holds %v", f.Name(), name, k, x)
						}
					}
				}
			}
		}
	}
}

// TestFastest: the ceiling keeps the faster of its shapes, whichever
// comes first (calls of 10 µs and 300 µs: no host noise swaps them).
func TestFastest(t *testing.T) {
	var ran [2]int
	call := func(i int, d time.Duration) func() {
		return func() {
			ran[i]++
			for st := time.Now(); time.Since(st) < d; {
			}
		}
	}
	slow, quick := call(0, 300*time.Microsecond), call(1, 10*time.Microsecond)
	for _, order := range [][]func(){{slow, quick}, {quick, slow}} {
		got := fastest(2, order...)
		before := ran
		got()
		if ran[1] != before[1]+1 {
			t.Errorf("fastest kept the 300 µs call over the 10 µs one")
		}
	}
}
