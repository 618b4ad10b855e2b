package sweeps

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
	"github.com/ckbench/ckbench/kernels/kvcache"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
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

// TestStorePieces: a warm store's ceiling moves the store's own lines.
// Its pieces copy into the cache rows the store writes, all of them but
// less than a line a piece, and nowhere else, without overlapping; they
// copy from and read the store's sources, every float once; and they come
// K then V per head, so that workers take the heads the store gives them.
// A store that writes under minPiece a head has none.
func TestStorePieces(t *testing.T) {
	for _, kv := range attention.KVTypes {
		for _, layout := range attention.Layouts {
			for _, d := range []int{96, 128} {
				p := kvcache.Params{Op: kvcache.BatchCopy, Hkv: 3, D: d, KV: kv, Layout: layout, Pos: 7, Tokens: 64}
				name := fmt.Sprintf("kv=%s layout=%s hd=%d", kv, layout, d)
				b := kvcache.Alloc(p)
				ps := storePieces(p, b)
				if len(ps) != 2*p.Hkv {
					t.Fatalf("%s: %d pieces, want %d", name, len(ps), 2*p.Hkv)
				}
				rb := kv.RowBytes(d)
				for ci, cache := range [][]byte{cacheAsBytes(b.K, b.KEnc), cacheAsBytes(b.V, b.VEnc)} {
					written := make([]bool, len(cache))
					for kh := range p.Hkv {
						for j := range p.Count() {
							r := p.Row(kh, p.Pos+j)
							for i := r * rb; i < (r+1)*rb; i++ {
								written[i] = true
							}
						}
					}
					copied := make([]int, len(cache))
					srcSeen := make([]int, len(b.SrcK))
					src := [][]float32{b.SrcK, b.SrcV}[ci]
					for i := ci; i < len(ps); i += 2 {
						pc := ps[i]
						so := int(uintptr(unsafe.Pointer(&pc.src[0]))-uintptr(unsafe.Pointer(&src[0]))) / 4
						if head := so / (p.Count() * d); head != i/2 {
							t.Errorf("%s: piece %d is head %d's, want %d's", name, i, head, i/2)
						}
						off := int(uintptr(unsafe.Pointer(&pc.dst[0])) - uintptr(unsafe.Pointer(&cache[0])))
						for k := off; k < off+4*len(pc.dst); k++ {
							copied[k]++
						}
						for k := so; k < so+len(pc.src); k++ {
							srcSeen[k]++
						}
					}
					missed := 0
					for i := range cache {
						switch {
						case copied[i] > 1 || copied[i] == 1 && !written[i]:
							t.Fatalf("%s: cache byte %d copied %d times, written by the store: %v", name, i, copied[i], written[i])
						case written[i] && copied[i] == 0:
							missed++
						}
					}
					if missed >= 64*p.Hkv {
						t.Errorf("%s: the pieces leave %d written bytes uncopied, want under a line a piece", name, missed)
					}
					for k, n := range srcSeen {
						if n != 1 {
							t.Fatalf("%s: source float %d in %d pieces", name, k, n)
						}
					}
				}
			}
		}
	}
	p := kvcache.Params{Op: kvcache.Append, Hkv: 8, D: 128, KV: attention.F16, Pos: 7}
	if ps := storePieces(p, kvcache.Alloc(p)); ps != nil {
		t.Errorf("an append has %d pieces, want none (its rows are under minPiece)", len(ps))
	}
}

// TestKVCopyPieces: a warm batch-copy's ceiling copies the store's own
// lines in every tier and layout and for 1 and 2 workers, and the stores
// still pass their byte-for-byte gate after it has written over their
// rows (the ceiling is planned first).
func TestKVCopyPieces(t *testing.T) {
	g := KVCacheGrid{Ops: []string{string(kvcache.BatchCopy), KVCopy}, Tiers: isa.All, HeadDims: []int{64}, Heads: []int{3}, Tokens: []int{64},
		Ctxs: []int{7}, KVs: attention.KVTypes, Layouts: attention.Layouts}
	opt := Options{Sampler: sampler.Config{MinTime: 2 * time.Millisecond}, CPU: -1, Seed: 3}
	plan, err := PlanKVCache(g, opt, machine.Describe())
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range plan.Points {
		if pt.Rec.Kernel != KVCopy || pt.Skip != "" {
			continue
		}
		if _, _, err := pt.prepare(pt.group); err != nil {
			t.Fatalf("kv-copy/%s kv=%s layout=%q: %v", pt.Tier, pt.Rec.KV, pt.Rec.Layout, err)
		}
		if d := pt.group.get().(*kvcacheData); d.pieces == nil || d.src != nil {
			t.Fatalf("kv-copy/%s kv=%s layout=%q: the warm ceiling has data of its own", pt.Tier, pt.Rec.KV, pt.Rec.Layout)
		}
		shares, _, err := pt.prepareN(pt.group, 2)
		if err != nil || len(shares) != 2 {
			t.Fatalf("kv-copy/%s: %d shares for 2 workers: %v", pt.Tier, len(shares), err)
		}
		for _, s := range shares {
			s()
		}
	}
	recs := runAll(t, plan, opt)
	// A subtest a tier, so that tools/avx512emu tells an avx512 failure
	// its avx2 twin shares (the emulator's) from one of ckbench's.
	isatest.Tiers(t, kvcache.Tiers(), func(t *testing.T, tier isa.Tier) {
		for _, r := range recs {
			if r.ISA == string(tier) && r.Status == results.StatusFailed {
				t.Errorf("%s/%s kv=%s layout=%q failed: %s", r.Kernel, r.ISA, r.KV, r.Layout, r.Reason)
			}
		}
	})
}
