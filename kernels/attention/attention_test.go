package attention

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"testing"

	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
)

// guardLen floats after each output buffer (inside its capacity) must
// come back as they were: the asm cannot overrun o or the workspace.
const guardLen = 64

const guardBits = 0x7fa5a5a5 // a NaN no kernel computes

func guarded(x []float32) []float32 {
	g := make([]float32, len(x)+guardLen)
	copy(g, x)
	for i := len(x); i < len(g); i++ {
		g[i] = math.Float32frombits(guardBits)
	}
	return g[:len(x)]
}

func checkGuard(t *testing.T, name string, x []float32) {
	t.Helper()
	for i, v := range x[len(x):cap(x)] {
		if math.Float32bits(v) != guardBits {
			t.Fatalf("the kernel wrote %s[%d], %d past its end", name, len(x)+i, i)
		}
	}
}

// pattern fills a problem in one of the ways the gate must survive.
type pattern func(s Shape, b Buffers)

func random(s Shape, b Buffers) { FillRandom(b, 42) }

// equalScores makes every key row identical: all scores equal.
func equalScores(s Shape, b Buffers) {
	FillRandom(b, 43)
	d := s.D
	for kh := 0; kh < s.Hkv; kh++ {
		first := s.Row(kh, 0) * d
		for j := 1; j < s.T; j++ {
			r := s.Row(kh, j) * d
			copy(b.K[r:r+d], b.K[first:first+d])
		}
	}
}

// hugeScores makes scaled scores land near ±80, where a careless exp
// overflows (e^80 ≈ 5.5e34, e^89 is +Inf in float32) or produces NaN. The
// values are chosen so that every score is exact in float32 (D a power of
// four, so 1/sqrt(D) is exact; q constant; k = ±(1 - j%7/64)): softmax
// amplifies a score's rounding error by |x| ≈ 80, and the gate is about the
// kernel, not about the conditioning of its input.
func hugeScores(s Shape, b Buffers) {
	FillRandom(b, 44)
	d := s.D
	qv := float32(80 * math.Sqrt(float64(d)) / float64(d)) // q·k·scale = ±80 for k = ±1
	for i := range b.Q {
		b.Q[i] = qv
	}
	signs := make([]float32, s.T)
	buf.FillUniform(signs, 45, -1, 1)
	for kh := 0; kh < s.Hkv; kh++ {
		for j := 0; j < s.T; j++ {
			sgn := float32(1)
			if signs[j] < 0 {
				sgn = -1
			}
			jitter := 1 - float32(j%7)/64 // scores 80, 78.75, …, 72.5 and their negatives
			r := s.Row(kh, j) * d
			for i := range d {
				b.K[r+i] = sgn * jitter
			}
		}
	}
}

type gateCase struct {
	name string
	p    Params
	fill pattern
}

// gateCases is the shape table of the correctness gate (issue #2, item 5).
func gateCases() []gateCase {
	var cs []gateCase
	add := func(name string, p Params, f pattern) { cs = append(cs, gateCase{name, p, f}) }
	for _, k := range Kernels {
		for _, e := range []Exp{ExpExact, ExpFast} {
			for _, d := range []int{64, 80, 96, 128, 256} {
				tk := AutoTileK(d)
				for _, t := range []int{1, tk - 1, tk, tk + 1, 16*3 + 5, 200} {
					if t < 1 {
						continue
					}
					add(fmt.Sprintf("T=%d", t), Params{Kernel: k, Shape: Shape{H: 2, Hkv: 1, D: d, T: t, Cap: t + 3}, Exp: e}, random)
				}
			}
			for _, tk := range []int{1, 7, 8, 33, 256} {
				add(fmt.Sprintf("tk=%d", tk), Params{Kernel: k, Shape: Shape{H: 1, Hkv: 1, D: 128, T: 300}, TileK: tk, Exp: e}, random)
			}
			// A lone head's pipeline (AVX-512 f16, AVX2 f32): chunks of four
			// keys of the next tile beside this tile's P·V, every way a
			// tile's length and the last tile's can fall against them.
			for _, kv := range []KVType{F32, F16} {
				for _, d := range []int{64, 96, 128} {
					for _, tk := range []int{4, 5, 8, 13} {
						for _, t := range []int{1, 3, 4, 9, 27} {
							add(fmt.Sprintf("lone/%s/d=%d/tk=%d/T=%d", kv, d, tk, t), Params{Kernel: k, Shape: Shape{H: 1, Hkv: 1, D: d, T: t, KV: kv}, TileK: tk, Exp: e}, random)
						}
					}
				}
				// Scores of ±80 (the running max grows mid-run: the rescale).
				add(fmt.Sprintf("lone/%s/pm80", kv), Params{Kernel: k, Shape: Shape{H: 1, Hkv: 1, D: 64, T: 157, KV: kv}, TileK: 8, Exp: e}, hugeScores)
			}
			// Every mix of AVX-512's head octs (8 to 15), quads, pairs and
			// a lone head; 16 in quads.
			for _, g := range []int{1, 2, 3, 4, 5, 6, 7, 8, 13, 15, 16} {
				for _, d := range []int{64, 80, 96, 128, 256} {
					add(fmt.Sprintf("gqa=%d", g), Params{Kernel: k, Shape: Shape{H: 2 * g, Hkv: 2, D: d, T: 77}, Exp: e}, random)
				}
			}
			// f32 groups of 2 to 7 heads in tiles of at most
			// SmallTileBytes of K (modeSmallTiles), and the first tile
			// past it.
			for _, g := range []int{2, 3, 4, 7, 8} {
				for _, c := range []struct{ d, tk int }{{64, 16}, {128, 8}, {128, 9}, {256, 4}} {
					add(fmt.Sprintf("gqa=%d/d=%d/tk=%d", g, c.d, c.tk), Params{Kernel: k, Shape: Shape{H: 2 * g, Hkv: 2, D: c.d, T: 77}, TileK: c.tk, Exp: e}, random)
				}
			}
			add("equal", Params{Kernel: k, Shape: Shape{H: 4, Hkv: 2, D: 128, T: 100}, Exp: e}, equalScores)
			add("pm80", Params{Kernel: k, Shape: Shape{H: 4, Hkv: 1, D: 64, T: 157}, Exp: e}, hugeScores)
			add("pm80-d256", Params{Kernel: k, Shape: Shape{H: 2, Hkv: 2, D: 256, T: 61}, TileK: 16, Exp: e}, hugeScores)
			add("long", Params{Kernel: k, Shape: Shape{H: 2, Hkv: 1, D: 128, T: 4099}, Exp: e}, random)
			if k == DecodeSplit {
				// Every split count 1…16, on contexts with chunks of one
				// key or none (T = 10) and of several, with GQA groups.
				for splits := 1; splits <= 16; splits++ {
					for _, t := range []int{10, 100} {
						add(fmt.Sprintf("splits=%d", splits), Params{Kernel: k, Shape: Shape{H: 4, Hkv: 2, D: 64, T: t}, TileK: 16, Exp: e, Splits: splits}, random)
					}
				}
			}
			// Sliding windows: one key, a window equal to and wider than
			// the context, and ones that are no multiple of the tile.
			for _, w := range []int{1, 37, 77, 100, 1000} {
				add(fmt.Sprintf("window=%d", w), Params{Kernel: k, Shape: Shape{H: 4, Hkv: 2, D: 64, T: 100, Cap: 120, Window: w}, TileK: 16, Exp: e}, random)
			}
			// f16 and q8_0 caches: the shapes above that exercise the
			// kernels' row loops (head dims, tails of a tile, groups,
			// windows, splits), against the reference over the values the
			// encoded cache holds.
			for _, kv := range []KVType{F16, Q8_0} {
				kvs := func(s Shape) Shape { s.KV = kv; return s }
				for _, d := range []int{64, 96, 128, 256} {
					for _, t := range []int{1, 15, 17, 53, 200} {
						add(fmt.Sprintf("%s/T=%d", kv, t), Params{Kernel: k, Shape: kvs(Shape{H: 2, Hkv: 1, D: d, T: t, Cap: t + 3}), Exp: e}, random)
					}
				}
				for _, g := range []int{1, 3, 4, 8, 13, 15} { // 13, 15: f16's wide sets, then quads, pairs, a lone head
					for _, d := range []int{64, 96, 128, 256} {
						add(fmt.Sprintf("%s/gqa=%d", kv, g), Params{Kernel: k, Shape: kvs(Shape{H: 2 * g, Hkv: 2, D: d, T: 77}), Exp: e}, random)
					}
				}
				// Head pairs over tiles of every length up to 14: AVX2's
				// batches of six and four keys and the lone keys after them.
				for tk := 1; tk <= 14; tk++ {
					add(fmt.Sprintf("%s/pairs/tk=%d", kv, tk), Params{Kernel: k, Shape: kvs(Shape{H: 4, Hkv: 2, D: 64, T: 47}), TileK: tk, Exp: e}, random)
				}
				// tk 0: auto, per tier (Impl.Tile: AVX-512's lone f16
				// pipeline at lonePipeTileK, two whole tiles and a part).
				for _, tk := range []int{0, 1, 7, 33} {
					add(fmt.Sprintf("%s/tk=%d", kv, tk), Params{Kernel: k, Shape: kvs(Shape{H: 1, Hkv: 1, D: 128, T: 300}), TileK: tk, Exp: e}, random)
				}
				add(kv.String()+"/window=37", Params{Kernel: k, Shape: kvs(Shape{H: 4, Hkv: 2, D: 64, T: 100, Cap: 120, Window: 37}), TileK: 16, Exp: e}, random)
				add(kv.String()+"/pm80", Params{Kernel: k, Shape: kvs(Shape{H: 4, Hkv: 1, D: 64, T: 157}), Exp: e}, hugeScores)
				add(kv.String()+"/long", Params{Kernel: k, Shape: kvs(Shape{H: 2, Hkv: 1, D: 128, T: 4099}), Exp: e}, random)
				if k == DecodeSplit {
					for _, splits := range []int{1, 5, 16} {
						add(fmt.Sprintf("%s/splits=%d", kv, splits), Params{Kernel: k, Shape: kvs(Shape{H: 4, Hkv: 2, D: 64, T: 10}), TileK: 16, Exp: e, Splits: splits}, random)
					}
				}
			}
			// A position-major cache: a head's keys Hkv rows apart, in
			// every cache type, with groups, a capacity past T, tile
			// tails, windows and splits.
			for _, kv := range KVTypes {
				pos := func(s Shape) Shape { s.KV, s.Layout = kv, PosMajor; return s }
				for _, d := range []int{64, 96, 128, 256} {
					for _, t := range []int{1, 17, 53} {
						add(fmt.Sprintf("pos/%s/T=%d", kv, t), Params{Kernel: k, Shape: pos(Shape{H: 4, Hkv: 2, D: d, T: t, Cap: t + 3}), Exp: e}, random)
					}
				}
				for _, g := range []int{1, 3, 4, 8, 15} {
					add(fmt.Sprintf("pos/%s/gqa=%d", kv, g), Params{Kernel: k, Shape: pos(Shape{H: 4 * g, Hkv: 4, D: 64, T: 77}), Exp: e}, random)
				}
				add(fmt.Sprintf("pos/%s/window=37", kv), Params{Kernel: k, Shape: pos(Shape{H: 4, Hkv: 2, D: 64, T: 100, Cap: 120, Window: 37}), TileK: 16, Exp: e}, random)
				add(fmt.Sprintf("pos/%s/tk=7", kv), Params{Kernel: k, Shape: pos(Shape{H: 2, Hkv: 2, D: 128, T: 300}), TileK: 7, Exp: e}, random)
				add(fmt.Sprintf("pos/%s/equal", kv), Params{Kernel: k, Shape: pos(Shape{H: 4, Hkv: 2, D: 128, T: 100}), Exp: e}, equalScores)
				add(fmt.Sprintf("pos/%s/pm80", kv), Params{Kernel: k, Shape: pos(Shape{H: 4, Hkv: 2, D: 64, T: 157}), Exp: e}, hugeScores)
				if k == DecodeSplit {
					for _, splits := range []int{1, 5, 16} {
						add(fmt.Sprintf("pos/%s/splits=%d", kv, splits), Params{Kernel: k, Shape: pos(Shape{H: 4, Hkv: 2, D: 64, T: 10}), TileK: 16, Exp: e, Splits: splits}, random)
					}
				}
			}
		}
	}
	return cs
}

func TestGate(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, c := range gateCases() {
			name := fmt.Sprintf("%s/%s/%s/%s/hd=%d/T=%d/g=%d/%s", c.p.Kernel, c.p.Layout, c.p.KV, c.p.Exp, c.p.D, c.p.T, c.p.Group(), c.name)
			t.Run(name, func(t *testing.T) { gate(t, im, c.p, c.fill) })
		}
	})
}

// gate runs p on im over inputs fill makes and checks it as the gate
// does: within Tolerance of the float64 reference over the encoded cache,
// all of o written, no workspace read before written, nothing written
// past o or the workspace.
//
// It does so for every path of the flash kernels that p can take
// (flashPaths: a lone head pipelined or not, a group's head sets and
// prefetch pacing), whichever this CPU takes.
func gate(t *testing.T, im Impl, p Params, fill pattern) {
	t.Helper()
	for _, im := range flashPaths(im, p) {
		gateOne(t, im, p, fill)
	}
}

// flashPaths is im, then im with each optional path that p can take
// turned the other way (Impl.mode): where p runs a lone head, the pipeline
// or the phases; where it runs groups of four or more, the quads paced or
// not, and the wide sets or the narrow. So every CPU checks every
// path, not only the ones it takes by default. The generic tier has one
// path (flashGeneric ignores mode): it runs once.
func flashPaths(im Impl, p Params) []Impl {
	if im.Tier == isa.Generic || p.Kernel == DecodeNaive {
		return []Impl{im}
	}
	paths := []Impl{im}
	flip := func(m flashMode) {
		other := im
		other.mode ^= m
		paths = append(paths, other)
	}
	if p.Kernel == DecodeFlash || p.Group() == 1 {
		flip(modeLonePipe)
		if p.KV == Q8_0 {
			flip(modeQ8Lone) // AVX-512's q8_0 lone heads in AVX2's kernel
		}
	}
	if p.Kernel != DecodeFlash && p.Group() >= 4 && p.KV != Q8_0 {
		flip(modeWide)  // f16: AVX-512 eight heads, then quads; AVX2 four, then pairs; f32: AVX-512 eight (groups of 8–15)
		flip(modePaced) // the AVX-512 quads' prefetch (f32: groups of eight or more)
		flip(modeFar)   // the AVX-512 quads' far stream beside the near one
		flip(modeSplit) // the AVX-512 quads' prefetch a line after each load
	}
	if p.Kernel != DecodeFlash && p.Group() >= 4 && p.KV == F32 {
		flip(modeNearT1) // the AVX-512 f32 groups' near stream into L2
	}
	if p.KV != Q8_0 {
		flip(modeL1) // AVX2's f32 and f16 prefetch into L1
	}
	if p.Kernel != DecodeFlash && p.Group() >= 2 && p.KV == F32 {
		flip(modeSmallTiles)  // AVX-512's f32 groups of small tiles in AVX2's kernel
		flip(modeSoftmaxStep) // AVX2's f32 pairs' softmax stepping the next K
	}
	return paths
}

func gateOne(t *testing.T, im Impl, p Params, fill pattern) {
	t.Helper()
	b := Alloc(p)
	fill(p.Shape, b)
	if err := Encode(p.Shape, b); err != nil {
		t.Fatal(err)
	}
	b.O, b.WS = guarded(b.O), guarded(b.WS)
	if err := p.Check(b); err != nil {
		t.Fatal(err)
	}
	defer checkGuard(t, "o", b.O)
	defer checkGuard(t, "ws", b.WS)
	for i := range b.O {
		b.O[i] = float32(math.NaN()) // the kernel must overwrite all of o
	}
	for i := range b.WS {
		b.WS[i] = float32(math.NaN()) // and must not read workspace it did not write
	}
	im.Run(p, b)
	want := Reference(p.Shape, b.Q, b.K, b.V)
	if err := MaxRelErr(b.O, want, p.D); !(err <= Tolerance(p.Exp)) {
		t.Fatalf("%+v (paths: %v): max rel err %.3g > %.0e", p, im.mode, err, Tolerance(p.Exp))
	}
}

// FuzzGate is the gate over any shape Validate accepts: kernel, KV type,
// layout (with position-major heads beyond Hkv), 1–4 KV heads of 1–9
// query heads each, hd 16–256, 1–700 keys, spare capacity, a sliding
// window, tile_k, exp, split count, and the gate's fillings (hugeScores
// only where its scores are exact); every tier this CPU runs, a subtest
// each.
func FuzzGate(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint8(3), uint8(3), uint8(7), uint16(301), uint8(5), uint16(0), uint8(7), uint8(1), uint8(0), uint8(1), uint8(0))
	f.Add(uint8(3), uint8(2), uint8(0), uint8(1), uint8(4), uint8(3), uint16(99), uint8(0), uint16(40), uint8(0), uint8(0), uint8(5), uint8(0), uint8(2))
	f.Add(uint8(0), uint8(0), uint8(1), uint8(2), uint8(0), uint8(15), uint16(17), uint8(2), uint16(0), uint8(33), uint8(1), uint8(0), uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, kernel, kv, layout, hkv, g, d16 uint8, keys uint16, spare uint8, window uint16, tk, exp, splits, extraHeads, fill uint8) {
		s := Shape{
			Hkv: 1 + int(hkv)%4, D: 16 * (1 + int(d16)%16), T: 1 + int(keys)%700,
			KV: KVTypes[int(kv)%len(KVTypes)], Layout: Layouts[int(layout)%len(Layouts)],
		}
		s.H = s.Hkv * (1 + int(g)%9)
		s.Cap = s.T + int(spare)%8
		if window > 0 {
			s.Window = int(window) % (s.T + 10)
		}
		if s.Layout == PosMajor {
			s.PosHeads = s.Hkv + int(extraHeads)%3
		}
		p := Params{Kernel: Kernels[int(kernel)%len(Kernels)], Shape: s, TileK: int(tk) % 65, Exp: []Exp{ExpExact, ExpFast}[exp%2]}
		if p.Kernel == DecodeSplit {
			p.Splits = 1 + int(splits)%16
		}
		if p.Validate() != nil {
			t.Skip()
		}
		fills := []pattern{random, equalScores}
		if d := p.D; d&(d-1) == 0 && bits.TrailingZeros(uint(d))%2 == 0 {
			fills = append(fills, hugeScores) // its scores are exact only where D is a power of four
		}
		isatest.Run(t, Impls(), func(t *testing.T, im Impl) { gate(t, im, p, fills[int(fill)%len(fills)]) })
	})
}

func TestNoAllocs(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, k := range Kernels {
			for _, kv := range KVTypes {
				p := Params{Kernel: k, Shape: Shape{H: 4, Hkv: 2, D: 64, T: 100, KV: kv, Layout: Layout(kv % 2)}}
				b := Alloc(p)
				FillRandom(b, 1)
				if err := Encode(p.Shape, b); err != nil {
					t.Fatal(err)
				}
				if n := testing.AllocsPerRun(10, func() { im.Run(p, b) }); n != 0 {
					t.Errorf("%s %s allocates %.0f times per call", k, kv, n)
				}
			}
		}
	})
}

// TestExpChosen checks that each tier computes with the exp a call asks
// for (the asm kernels take it as the mode argument's modeFastExp bit,
// one kernel for both): its output is at least five times nearer the
// generic tier's with the same exp than the generic tier's with the other
// (12–50 times on the Xeon), for every kernel, KV type and flash path.
func TestExpChosen(t *testing.T) {
	gen := Impls()[0]
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, k := range Kernels {
			for _, kv := range KVTypes {
				for _, s := range []Shape{{H: 2, Hkv: 2, D: 64, T: 200, KV: kv}, {H: 16, Hkv: 2, D: 128, T: 90, KV: kv}} {
					p := Params{Kernel: k, Shape: s, TileK: 32}
					b := Alloc(p)
					FillRandom(b, 7)
					for i := range b.Q {
						b.Q[i] *= 4 // scores spread over a wide range of exp
					}
					if err := Encode(p.Shape, b); err != nil {
						t.Fatal(err)
					}
					out := func(im Impl, e Exp) []float32 {
						p.Exp = e
						im.Run(p, b)
						return slices.Clone(b.O)
					}
					want := map[Exp][]float64{}
					for _, e := range []Exp{ExpExact, ExpFast} {
						for _, v := range out(gen, e) {
							want[e] = append(want[e], float64(v))
						}
					}
					for _, im := range flashPaths(im, p) {
						for _, e := range []Exp{ExpExact, ExpFast} {
							o := out(im, e)
							same, other := MaxRelErr(o, want[e], s.D), MaxRelErr(o, want[1-e], s.D)
							if !(same*5 < other) {
								t.Errorf("%s %s H=%d paths %v, %s exp: %.2g from the generic tier's %s, %.2g from its other", k, kv, s.H, im.mode, e, same, e, other)
							}
						}
					}
				}
			}
		}
	})
}

func TestFastExp(t *testing.T) {
	for x := float32(-87); x <= 88; x += 0.173 {
		got, want := float64(FastExp(x)), math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > 2e-4 {
			t.Fatalf("FastExp(%v) = %v, want %v (rel %.2g)", x, got, want, rel)
		}
	}
	if FastExp(-1000) != 0 || math.IsInf(float64(FastExp(1000)), 0) {
		t.Fatalf("FastExp clamps: got %v and %v", FastExp(-1000), FastExp(1000))
	}
}

func TestValidate(t *testing.T) {
	bad := []Params{
		{Kernel: "nope", Shape: Shape{H: 1, Hkv: 1, D: 64, T: 1}},
		{Kernel: DecodeFlash, Shape: Shape{H: 3, Hkv: 2, D: 64, T: 1}},
		{Kernel: DecodeFlash, Shape: Shape{H: 1, Hkv: 1, D: 72, T: 1}},
		{Kernel: DecodeFlash, Shape: Shape{H: 1, Hkv: 1, D: 512, T: 1}},
		{Kernel: DecodeFlash, Shape: Shape{H: 1, Hkv: 1, D: 64, T: 0}},
		{Kernel: DecodeFlash, Shape: Shape{H: 1, Hkv: 1, D: 64, T: 9, Cap: 8}},
		{Kernel: DecodeFlash, Shape: Shape{H: 1, Hkv: 1, D: 64, T: 9}, TileK: 257},
		{Kernel: DecodeFlash, Shape: Shape{H: 0, Hkv: 1, D: 64, T: 9}},
	}
	for _, p := range bad {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	p := Params{Kernel: DecodeFlash, Shape: Shape{H: 1, Hkv: 1, D: 64, T: 8}}
	if err := p.Check(Buffers{}); err == nil {
		t.Error("Check accepted empty buffers")
	}
}

// TestWindow: a window reads only its keys: the output is that of the
// last Keys rows taken as the whole context, whatever the rows before
// them hold (NaN here), and the work model counts Keys rows.
func TestWindow(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, k := range Kernels {
			p := Params{Kernel: k, Shape: Shape{H: 2, Hkv: 1, D: 64, T: 90, Window: 33}}
			b := Alloc(p)
			FillRandom(b, 5)
			for i := range p.First() * p.D {
				b.K[i], b.V[i] = float32(math.NaN()), float32(math.NaN()) // outside the window
			}
			im.Run(p, b)
			want := Reference(p.Shape, b.Q, b.K, b.V)
			if err := MaxRelErr(b.O, want, p.D); !(err <= Tolerance(p.Exp)) {
				t.Fatalf("%s: max rel err %.3g (a key outside the window was read?)", k, err)
			}
			full := p
			full.T, full.Window = 33, 0
			if p.Work() != full.Work() {
				t.Errorf("%s: window work %+v, want that of 33 keys %+v", k, p.Work(), full.Work())
			}
		}
	})
	if err := (Shape{H: 1, Hkv: 1, D: 64, T: 8, Window: -1}).Validate(); err == nil {
		t.Error("a negative window was accepted")
	}
}

// TestLSE: every kernel returns each head's log-sum-exp of its scaled
// scores, the float64 one (over the values the cache holds) within the
// gate's tolerance (relative to its magnitude, at least 1), for every KV
// type and layout; groups of two query heads, and f16's of two and nine
// (the wide sets, then a lone head).
func TestLSE(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, k := range Kernels {
			for _, kv := range KVTypes {
				for _, l := range Layouts {
					for _, e := range []Exp{ExpExact, ExpFast} {
						for _, g := range []int{2, 9} {
							if g != 2 && kv != F16 {
								continue
							}
							p := Params{Kernel: k, Shape: Shape{H: 2 * g, Hkv: 2, D: 64, T: 77, Window: 50, KV: kv, Layout: l}, Exp: e, Splits: 5}
							b := Alloc(p)
							FillRandom(b, 9)
							if err := Encode(p.Shape, b); err != nil {
								t.Fatal(err)
							}
							b.LSE = make([]float32, p.H)
							want := referenceLSE(p.Shape, b.Q, b.K)
							for _, im := range flashPaths(im, p) {
								im.Run(p, b)
								for h, w := range want {
									if d := math.Abs(float64(b.LSE[h]) - w); !(d <= Tolerance(e)*max(1, math.Abs(w))) {
										t.Errorf("%s %s %s %s H=%d head %d (paths: %v): LSE %v, reference %v", k, kv, l, e, p.H, h, im.mode, b.LSE[h], w)
									}
								}
							}
						}
					}
				}
			}
		}
	})
}

// referenceLSE is ln Σ_j exp(scale·q·k_j) per head, in float64, over the
// window's keys.
func referenceLSE(s Shape, q, k []float32) []float64 {
	d := s.D
	q = QueryAsRead(s.KV, q, d) // as Reference
	out := make([]float64, s.H)
	for h := range s.H {
		var xs []float64
		m := math.Inf(-1)
		for j := range s.Keys() {
			kr := k[s.Row(h*s.Hkv/s.H, s.First()+j)*d:]
			var acc float64
			for i := range d {
				acc += float64(q[h*d+i]) * float64(kr[i])
			}
			x := acc / math.Sqrt(float64(d))
			xs = append(xs, x)
			m = max(m, x)
		}
		var sum float64
		for _, x := range xs {
			sum += math.Exp(x - m)
		}
		out[h] = m + math.Log(sum)
	}
	return out
}

func TestWork(t *testing.T) {
	p := Params{Kernel: DecodeFlashGQA, Shape: Shape{H: 32, Hkv: 8, D: 128, T: 4096}}
	w := p.Work()
	if w.Flops != 4*32*4096*128 || w.Bytes != 2*8*4096*128*4+8*32*128 || w.Traffic != w.Bytes || w.Exps != 32*4096 {
		t.Fatalf("gqa work %+v", w)
	}
	p.Kernel = DecodeFlash
	if w := p.Work(); w.Traffic != 2*32*4096*128*4+8*32*128 || w.Bytes != 2*8*4096*128*4+8*32*128 {
		t.Fatalf("flash work %+v", w)
	}
	// The element size of the cache: f16 halves the KV bytes, q8_0 is
	// 34 bytes per 32 values (the f16 scale of each block included).
	for _, c := range []struct {
		kv KVType
		e  float64
	}{{F16, 2}, {Q8_0, 34.0 / 32}} {
		p := Params{Kernel: DecodeFlashGQA, Shape: Shape{H: 32, Hkv: 8, D: 128, T: 4096, KV: c.kv}}
		if w := p.Work(); w.Bytes != 2*8*4096*128*c.e+8*32*128 || w.Flops != 4*32*4096*128 {
			t.Errorf("%s work %+v", c.kv, w)
		}
		if got, want := p.CacheBytes(), 8*4096*int(128*c.e); got != want {
			t.Errorf("%s cache bytes %d, want %d", c.kv, got, want)
		}
	}
	// Decode attention does 4 FLOPs (q·k and p·v, a multiply and an add
	// each) per 8 bytes of K and V read: AI 0.5 without sharing, g/2 when
	// g query heads share each KV tile (the q and o bytes add under 1 %).
	for g := 1; g <= 8; g *= 2 {
		p := Params{Kernel: DecodeFlashGQA, Shape: Shape{H: 8 * g, Hkv: 8, D: 128, T: 4096}}
		if ai := p.Work().AI(); math.Abs(ai-float64(g)/2) > 0.01*float64(g)/2 {
			t.Errorf("gqa group %d: AI %.4f, want %.2f", g, ai, float64(g)/2)
		}
	}
}

func TestGateTolerance(t *testing.T) {
	if GateTolerance(ExpExact, 4096) != 1e-5 || GateTolerance(ExpFast, 65536) != 5e-4 {
		t.Fatal("short contexts and fast exp keep the fixed tolerance")
	}
	if got := GateTolerance(ExpExact, 65536); math.Abs(got-256*0x1p-24) > 1e-12 {
		t.Fatalf("T=65536: %g", got)
	}
}

func TestAutoTileK(t *testing.T) {
	defer func(c int) { loneTileCap = c }(loneTileCap)
	loneTileCap = 0 // the shape's tiles, whatever this CPU caps
	for d, want := range map[int]int{64: 32, 80: 16, 128: 16, 256: 8} {
		if got := AutoTileK(d); got != want {
			t.Errorf("AutoTileK(%d) = %d, want %d", d, got, want)
		}
		if got := AutoTileKFor(d, F32, 1); got != want {
			t.Errorf("AutoTileKFor(%d, f32, 1) = %d, want %d", d, got, want)
		}
		if got := AutoTileKFor(d, F16, 4); got != want {
			t.Errorf("AutoTileKFor(%d, f16, 4) = %d, want %d", d, got, want)
		}
	}
	// f16, one head a pass: twice AutoTileK up to D = 128.
	for d, want := range map[int]int{64: 64, 80: 32, 128: 32, 256: 8} {
		if got := AutoTileKFor(d, F16, 1); got != want {
			t.Errorf("AutoTileKFor(%d, f16, 1) = %d, want %d", d, got, want)
		}
	}
	// q8_0: per head dim, the tile of one head a pass and of a group of 4.
	for d, want := range map[int][2]int{64: {32, 32}, 96: {128, 32}, 128: {128, 32}, 256: {8, 8}} {
		for i, g := range []int{1, 4} {
			if got := AutoTileKFor(d, Q8_0, g); got != want[i] {
				t.Errorf("AutoTileKFor(%d, q8_0, %d) = %d, want %d", d, g, got, want[i])
			}
		}
		// decode-flash passes one head at a time whatever the shape;
		// decode-flash-gqa and decode-split a group.
		for _, c := range []struct {
			k    Kernel
			h    int
			want int
		}{{DecodeFlash, 1, want[0]}, {DecodeFlash, 4, want[0]}, {DecodeFlashGQA, 1, want[0]}, {DecodeFlashGQA, 4, want[1]}, {DecodeSplit, 4, want[1]}} {
			p := Params{Kernel: c.k, Shape: Shape{H: c.h, Hkv: 1, D: d, T: 10, KV: Q8_0}}
			if got := (Impl{}).Tile(p); got != c.want {
				t.Errorf("q8_0 %s hd %d H=%d Hkv=1: Tile = %d, want %d", c.k, d, c.h, got, c.want)
			}
		}
	}
}

// TestLoneTileCap: where a CPU caps a lone head's auto tile (Zen 4:
// loneTileCapOn), Tile halves the head-major f16 and q8_0 tiles at D ≤ 128
// of shapes with one query head per KV head until they hold no more than
// the cap's bytes of K, and leaves every other tile as AutoTileKFor has
// it.
func TestLoneTileCap(t *testing.T) {
	defer func(c int) { loneTileCap = c }(loneTileCap)
	loneTileCap = zen4LoneTileBytes
	for _, c := range []struct {
		k      Kernel
		h, d   int
		kv     KVType
		layout Layout
		want   int
	}{
		{DecodeFlash, 1, 128, F16, HeadMajor, 16},   // 32 rows: 8 KB
		{DecodeFlash, 1, 64, F16, HeadMajor, 32},    // 64 rows: 8 KB
		{DecodeFlash, 8, 128, F16, HeadMajor, 32},   // not capped: 8 query heads re-read the KV head
		{DecodeFlash, 8, 128, Q8_0, HeadMajor, 128}, //
		{DecodeFlash, 1, 128, Q8_0, HeadMajor, 32},  // 128 rows: 17 KB
		{DecodeFlash, 1, 96, Q8_0, HeadMajor, 32},
		{DecodeFlashGQA, 1, 128, Q8_0, HeadMajor, 32},
		{DecodeFlash, 1, 128, F16, PosMajor, 32},      // not capped: position-major
		{DecodeFlash, 1, 128, Q8_0, PosMajor, 128},    //
		{DecodeFlash, 1, 128, F32, HeadMajor, 16},     // f32
		{DecodeFlash, 1, 256, F16, HeadMajor, 8},      // hd > 128
		{DecodeFlashGQA, 4, 128, Q8_0, HeadMajor, 32}, // groups
		{DecodeFlashGQA, 4, 128, F16, HeadMajor, 16},
	} {
		p := Params{Kernel: c.k, Shape: Shape{H: c.h, Hkv: 1, D: c.d, T: 10, KV: c.kv, Layout: c.layout}}
		if got := (Impl{}).Tile(p); got != c.want {
			t.Errorf("%s %s %s hd %d H=%d Hkv=1: Tile = %d, want %d", c.k, c.kv, c.layout, c.d, c.h, got, c.want)
		}
	}
	// MHA: every KV head read once by its one query head.
	for _, k := range []Kernel{DecodeFlash, DecodeFlashGQA, DecodeSplit} {
		p := Params{Kernel: k, Shape: Shape{H: 8, Hkv: 8, D: 128, T: 10, KV: F16}}
		if got := (Impl{}).Tile(p); got != 16 {
			t.Errorf("%s f16 hd 128 8:8: Tile = %d, want 16", k, got)
		}
	}
}

// TestLonePipeTile: a tier that pipelines a lone f16 head (AVX-512's
// kernel, where the CPU asks for the pipeline) runs it at lonePipeTileK
// where the tile is auto: head-major, D ≤ 128, one query head a pass; the
// CPU's lone cap still applies; everything else, and every tier without
// the pipeline, keeps the tile the others run. WorkspaceLen covers the
// largest tile any tier of the binary runs.
func TestLonePipeTile(t *testing.T) {
	defer func(c int) { loneTileCap = c }(loneTileCap)
	loneTileCap = 0
	pipe := Impl{mode: modeLonePipe, pipeF16: true}
	for _, c := range []struct {
		k      Kernel
		h, d   int
		kv     KVType
		layout Layout
		tk     int
		want   int
	}{
		{DecodeFlash, 1, 128, F16, HeadMajor, 0, lonePipeTileK},
		{DecodeFlash, 4, 64, F16, HeadMajor, 0, lonePipeTileK}, // a pass is one head
		{DecodeFlashGQA, 1, 128, F16, HeadMajor, 0, lonePipeTileK},
		{DecodeSplit, 1, 128, F16, HeadMajor, 0, lonePipeTileK},
		{DecodeFlash, 1, 128, F16, HeadMajor, 32, 32}, // an explicit tile
		{DecodeFlashGQA, 4, 128, F16, HeadMajor, 0, 16},
		{DecodeFlash, 1, 128, F16, PosMajor, 0, 32},
		{DecodeFlash, 1, 256, F16, HeadMajor, 0, 8},
		{DecodeFlash, 1, 128, F32, HeadMajor, 0, 16},
		{DecodeFlash, 1, 128, Q8_0, HeadMajor, 0, 128},
	} {
		p := Params{Kernel: c.k, Shape: Shape{H: c.h, Hkv: 1, D: c.d, T: 10, KV: c.kv, Layout: c.layout}, TileK: c.tk}
		if got := pipe.Tile(p); got != c.want {
			t.Errorf("pipelined %s %s %s hd %d H=%d Hkv=1 tk %d: Tile = %d, want %d", c.k, c.kv, c.layout, c.d, c.h, c.tk, got, c.want)
		}
		for _, im := range []Impl{{}, {mode: modeLonePipe}, {pipeF16: true}} {
			if got, want := im.Tile(p), (Impl{}).Tile(p); got != want {
				t.Errorf("no pipeline (%+v) %s %s hd %d: Tile = %d, want %d", im, c.k, c.kv, c.d, got, want)
			}
		}
	}
	loneTileCap = zen4LoneTileBytes
	p := Params{Kernel: DecodeFlash, Shape: Shape{H: 1, Hkv: 1, D: 128, T: 10, KV: F16}}
	if got := pipe.Tile(p); got != 16 {
		t.Errorf("pipelined f16 hd 128 under Zen 4's cap: Tile = %d, want 16", got)
	}
	loneTileCap = 0
	for _, kv := range []KVType{F16, Q8_0} {
		p := Params{Kernel: DecodeFlash, Shape: Shape{H: 1, Hkv: 1, D: 128, T: 4096, KV: kv}}
		for _, im := range Impls() {
			bufs := Alloc(p)
			if err := p.Check(bufs); err != nil {
				t.Fatal(err)
			}
			if need := flashStateLen(1) + tileBufs(1)*tileBufLen(im.Tile(p)) + 2*im.Tile(p)*p.D; len(bufs.WS) < need {
				t.Errorf("%s %s: workspace %d floats, the tier's tile needs %d", im.Tier, kv, len(bufs.WS), need)
			}
		}
	}
}

// TestSmallTileGroup: the f32 groups that Zen 4's AVX-512 tier runs in
// AVX2's kernel (modeSmallTiles) are those of 2 to 7 heads with at most
// 4352 bytes of K a tile.
func TestSmallTileGroup(t *testing.T) {
	for _, c := range []struct {
		kv       KVType
		g, d, tk int
		want     bool
	}{
		{F32, 4, 128, 8, true},
		{F32, 2, 64, 16, true},
		{F32, 7, 256, 4, true},
		{F32, 6, 128, 1, true},
		{F32, 4, 128, 9, false}, // 4608 bytes
		{F32, 4, 64, 32, false},
		{F32, 1, 128, 8, false}, // a lone head
		{F32, 8, 128, 8, false}, // octs
		{F16, 4, 128, 8, false},
		{Q8_0, 4, 128, 8, false},
	} {
		if got := smallTileGroup(c.kv, c.g, c.d, c.tk); got != c.want {
			t.Errorf("smallTileGroup(%s, g %d, d %d, tk %d) = %v, want %v", c.kv, c.g, c.d, c.tk, got, c.want)
		}
	}
}

// TestNarrowFor: the calls the AVX-512 tier runs in AVX2's kernel where
// its mode asks (flashAsm), and none where it does not.
func TestNarrowFor(t *testing.T) {
	for _, c := range []struct {
		mode     flashMode
		kv       KVType
		g, d, tk int
		want     bool
	}{
		{modeSmallTiles, F32, 4, 128, 8, true},
		{modeSmallTiles, F32, 4, 128, 16, false},
		{modeSmallTiles, Q8_0, 1, 128, 32, false},
		{modeQ8Lone, Q8_0, 1, 128, 32, true},
		{modeQ8Lone, Q8_0, 1, 64, 128, true},
		{modeQ8Lone, Q8_0, 2, 128, 32, false}, // groups keep AVX-512's
		{modeQ8Lone, F16, 1, 128, 16, false},
		{modeQ8Lone, F32, 4, 128, 8, false},
		{modeSmallTiles | modeQ8Lone, F32, 4, 128, 8, true},
		{modeSmallTiles | modeQ8Lone, Q8_0, 1, 128, 32, true},
		{0, F32, 4, 128, 8, false},
		{0, Q8_0, 1, 128, 32, false},
	} {
		if got := narrowFor(c.mode, c.kv, c.g, c.d, c.tk); got != c.want {
			t.Errorf("narrowFor(%v, %s, g %d, d %d, tk %d) = %v, want %v", c.mode, c.kv, c.g, c.d, c.tk, got, c.want)
		}
	}
}

// TestPosHeads: a block of the KV heads of a position-major cache, run as a
// call of its own (the cache from the block's first head on, PosHeads the
// cache's heads), gives exactly the whole call's output for its heads: a
// thread's share of a decode.
func TestPosHeads(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, k := range Kernels {
			for _, kv := range KVTypes {
				p := Params{Kernel: k, Shape: Shape{H: 8, Hkv: 4, D: 64, T: 45, Cap: 50, Window: 40, KV: kv, Layout: PosMajor}, Splits: 3}
				b := Alloc(p)
				FillRandom(b, 3)
				if err := Encode(p.Shape, b); err != nil {
					t.Fatal(err)
				}
				im.Run(p, b)
				rb, g := kv.RowBytes(p.D), p.Group()
				for _, blk := range [][2]int{{0, 1}, {1, 3}, {3, 4}} {
					q := p
					q.Hkv, q.H, q.PosHeads = blk[1]-blk[0], (blk[1]-blk[0])*g, p.Hkv
					h0, h1 := blk[0]*g*p.D, blk[1]*g*p.D
					s := Buffers{Q: b.Q[h0:h1], O: make([]float32, h1-h0), WS: make([]float32, q.WorkspaceLen())}
					if kv == F32 {
						s.K, s.V = b.K[blk[0]*p.D:], b.V[blk[0]*p.D:]
					} else {
						s.KEnc, s.VEnc = b.KEnc[blk[0]*rb:], b.VEnc[blk[0]*rb:]
					}
					if err := q.Check(s); err != nil {
						t.Fatalf("%s %s heads %v: %v", k, kv, blk, err)
					}
					im.Run(q, s)
					for i, x := range s.O {
						if math.Float32bits(x) != math.Float32bits(b.O[h0+i]) {
							t.Fatalf("%s %s heads %v: o[%d] = %v, the whole call's %v", k, kv, blk, h0+i, x, b.O[h0+i])
						}
					}
				}
			}
		}
	})
}

// TestAVX2IsVEX: no AVX2 kernel uses a register only AVX-512 has (it would
// pass here on an AVX-512 machine and fault on an AVX2-only one).
func TestAVX2IsVEX(t *testing.T) { isatest.VEXOnly(t, "decode_amd64.s") }
