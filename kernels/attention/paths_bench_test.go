package attention

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
)

// BenchmarkPaths checks the flash kernels' per-CPU choices on this CPU:
// for each optional path (a flashMode bit, or the wide shape's four, set
// once per tier from the vendor and family: the per-arch files say where
// each was measured), it times the tier as this CPU configures it (chosen)
// and with that path flipped (flipped), in one process, the two calls in
// turn (isatest.Paired: each b.Loop iteration a round), on the shapes the
// path is for, with the cache in L3 and from DRAM; flipped/chosen is the
// median over the rounds of the two batches' ratio. Above 1 the CPU's
// choice is the faster here; below 1 the other side would be (measure
// again, and on a quiet host, before changing a choice). Rounds count
// from DRAM, where each call reads another copy of the cache and copies
// differ by several per cent (on a Zen 5 guest a flip that changes
// nothing, the lone-pipe bit of AVX2's f16 kernel, which has no pipeline,
// read 0.93 over 15 rounds and 1.01 over 40). On a new CPU:
//
//	go test -run '^$' -bench Paths -benchtime 40x ./kernels/attention
//
// (-bench 'Paths/path=paced/' for one path; a DRAM case allocates about
// 512 MB of cache copies, read in turn so that each call finds its copy
// evicted.) The names say the chosen side (chosen=on or off), the tier,
// the shape and the level; ns/op is a round's time (both batches).
func BenchmarkPaths(b *testing.B) {
	type shape struct {
		h, kvh int
		kv     KVType
		tk     int
	}
	group := func(kv KVType, tk int) shape { return shape{32, 8, kv, tk} }
	lone := func(kv KVType) shape { return shape{1, 1, kv, 0} }
	// Each path on the shapes of the kernels that have it (impl.go's
	// flashMode): a flip elsewhere changes nothing.
	avx2, avx512, both := []isa.Tier{isa.AVX2}, []isa.Tier{isa.AVX512}, []isa.Tier{isa.AVX2, isa.AVX512}
	cases := []struct {
		name  string
		mode  flashMode
		tiers []isa.Tier
		of    []shape
	}{
		{"lone-pipe", modeLonePipe, avx2, []shape{lone(F32)}},
		{"lone-pipe", modeLonePipe, avx512, []shape{lone(F16), lone(Q8_0)}},
		{"wide", modeWide | modePaced | modeFar | modeSplit, both, []shape{group(F16, 0), {64, 8, F16, 0}}},
		{"wide", modeWide | modePaced | modeFar | modeSplit, avx512, []shape{group(F32, 0), {64, 8, F32, 0}}},
		{"paced", modePaced, avx512, []shape{group(F16, 0), {64, 8, F32, 0}}},
		{"near-t1", modeNearT1, avx512, []shape{group(F32, 0), {64, 8, F32, 0}}},
		{"small-tiles", modeSmallTiles, avx512, []shape{group(F32, 8)}},
		{"softmax-step", modeSoftmaxStep, avx2, []shape{group(F32, 8)}},
		{"q8-lone", modeQ8Lone, avx512, []shape{lone(Q8_0)}},
		{"l1", modeL1, avx2, []shape{lone(F16), group(F16, 0), group(F32, 0), {64, 8, F32, 0}}},
	}
	// The context of each level: a group's KV in L3 is 8 MB of f32 at 8 KV
	// heads, a lone head's 4 MB.
	levels := []struct {
		name        string
		group, lone int
	}{{"l3", 1024, 4096}, {"dram", 16384, 32768}}
	const (
		dramBytes = 512 << 20 // the copies a DRAM case reads in turn
		batch     = 2 * time.Millisecond
	)
	for _, c := range cases {
		for _, im := range Impls() {
			if !slices.Contains(c.tiers, im.Tier) || !isa.Detect(im.Tier).Runs {
				continue
			}
			chosen, flipped := im, im
			flipped.mode ^= c.mode
			on := "off"
			if im.mode&c.mode == c.mode {
				on = "on"
			} else if im.mode&c.mode != 0 {
				on = "part"
			}
			for _, s := range c.of {
				for _, level := range levels {
					k, ctx := DecodeFlashGQA, level.group
					if s.h == s.kvh {
						k, ctx = DecodeFlash, level.lone
					}
					p := Params{Kernel: k, Shape: Shape{H: s.h, Hkv: s.kvh, D: 128, T: ctx, KV: s.kv}, TileK: s.tk, Exp: ExpFast}
					tk := "auto"
					if s.tk != 0 {
						tk = fmt.Sprint(s.tk)
					}
					name := fmt.Sprintf("path=%s/chosen=%s/isa=%s/kv=%s/h=%d/kvh=%d/tk=%s/level=%s", c.name, on, im.Tier, s.kv, s.h, s.kvh, tk, level.name)
					b.Run(name, func(b *testing.B) {
						copies := 1
						if level.name == "dram" {
							copies = max(2, dramBytes/max(1, 2*p.CacheBytes()))
						}
						bufs := make([]Buffers, copies)
						for i := range bufs {
							bufs[i] = Alloc(p)
							FillRandom(bufs[i], uint64(i+1))
							if err := Encode(p.Shape, bufs[i]); err != nil {
								b.Fatal(err)
							}
							if p.KV != F32 { // the kernels read the encoded cache only
								bufs[i].K, bufs[i].V = nil, nil
							}
						}
						next := 0 // the copy the next call reads
						call := func(x Impl) func() {
							return func() {
								x.Run(p, bufs[next])
								next = (next + 1) % copies
							}
						}
						cc, cf := call(chosen), call(flipped)
						// A batch of about 2 ms of calls (one call where
						// a call is longer).
						reps := 1
						for ; reps < 1<<16; reps *= 2 {
							t0 := time.Now()
							for range reps {
								cc()
							}
							if time.Since(t0) >= batch {
								break
							}
						}
						ratio, tc, tf := isatest.Paired(b, reps, cc, cf)
						b.ReportMetric(ratio, "flipped/chosen")
						b.ReportMetric(tc/1e3, "chosen_µs")
						b.ReportMetric(tf/1e3, "flipped_µs")
					})
				}
			}
		}
	}
}
