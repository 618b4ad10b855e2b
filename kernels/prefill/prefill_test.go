package prefill

import (
	"fmt"
	"math"
	"testing"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
)

type gateCase struct {
	Shape
	br, bc int
}

// gateCases are #13's gate: Tq ≠ Tk, T no multiple of Br or Bc, Tq = 1,
// one document per token and one for all, causal and not, GQA 1/2/4/8,
// head dims 64/80/96/128/256.
func gateCases() []gateCase {
	var cs []gateCase
	for _, d := range []int{64, 80, 96, 128, 256} {
		cs = append(cs, gateCase{Shape{H: 2, Hkv: 2, D: d, Tq: 37, Tk: 37, Mask: Causal}, 16, 16})
	}
	for _, g := range []int{1, 2, 4, 8} {
		cs = append(cs, gateCase{Shape{H: g * 2, Hkv: 2, D: 64, Tq: 29, Tk: 53, Mask: Causal}, 8, 16})
	}
	return append(cs,
		gateCase{Shape{H: 2, Hkv: 1, D: 64, Tq: 1, Tk: 77, Mask: Causal}, 32, 32},
		gateCase{Shape{H: 2, Hkv: 1, D: 64, Tq: 45, Tk: 45, Mask: None}, 16, 8},
		gateCase{Shape{H: 2, Hkv: 1, D: 64, Tq: 50, Tk: 19, Mask: None}, 16, 8}, // more queries than keys
		gateCase{Shape{H: 2, Hkv: 1, D: 64, Tq: 40, Tk: 60, Mask: Doc, Docs: 1}, 16, 16},
		gateCase{Shape{H: 2, Hkv: 1, D: 64, Tq: 40, Tk: 60, Mask: Doc, Docs: 60}, 16, 16}, // a document per token
		gateCase{Shape{H: 4, Hkv: 2, D: 96, Tq: 70, Tk: 70, Mask: Doc, Docs: 3}, 16, 32},
		gateCase{Shape{H: 2, Hkv: 2, D: 64, Tq: 33, Tk: 33, Mask: Causal}, 1, 1},
		gateCase{Shape{H: 2, Hkv: 2, D: 64, Tq: 33, Tk: 33, Mask: Causal}, 64, 256},
	)
}

func maxAbsErr(got []float32, want []float64) float64 {
	worst := 0.0
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return math.Inf(1)
		}
		worst = math.Max(worst, math.Abs(g-w))
	}
	return worst
}

// TestGate: every kernel, tier and exp equals the float64 reference within
// the decode tolerances (MaxRelErr per output row), and so does its LSE.
func TestGate(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, c := range gateCases() {
			for _, k := range Kernels {
				for _, e := range attention.Exps {
					p := Params{Kernel: k, Shape: c.Shape, Br: c.br, Bc: c.bc, Exp: e}
					name := fmt.Sprintf("%s/%s/H%d:%d/hd%d/tq%d/tk%d/%s%d/br%d/bc%d", k, e, c.H, c.Hkv, c.D, c.Tq, c.Tk, c.Mask, c.Docs, c.br, c.bc)
					if err := p.Validate(); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					gate(t, im, p, name, uint64(c.Tq*131+c.Tk))
				}
			}
		}
	})
}

// gate runs p on im over random inputs (seed) and checks its output and
// LSE against the float64 reference, and that it wrote every output.
func gate(t *testing.T, im Impl, p Params, name string, seed uint64) {
	t.Helper()
	b := Alloc(p)
	FillRandom(b, seed)
	if err := p.Check(b); err != nil {
		t.Fatal(err)
	}
	for i := range b.O {
		b.O[i] = float32(math.NaN()) // every output must be written
	}
	im.Run(p, b)
	want, lse := Reference(p.Shape, b.Q, b.K, b.V)
	tol := attention.Tolerance(p.Exp)
	if err := attention.MaxRelErr(b.O, want, p.D); !(err <= tol) {
		t.Errorf("%s: error %.3g above %.2g", name, err, tol)
	}
	if err := maxAbsErr(b.LSE, lse); !(err <= 10*tol) {
		t.Errorf("%s: LSE error %.3g", name, err)
	}
}

// FuzzGate is the gate over any shape Validate accepts: kernel, exp, 1–4
// KV heads of 1–8 query heads each, hd 16–256, 1–200 query rows, 1–300
// keys, every mask (1 to Tk documents), Br 0–128 and Bc 0–255 (0: the
// default); every tier this CPU runs, a subtest each.
func FuzzGate(f *testing.F) {
	f.Add(uint8(1), uint8(0), uint8(1), uint8(1), uint8(3), uint8(36), uint16(36), uint8(1), uint16(0), uint8(16), uint8(16), uint64(1))
	f.Add(uint8(0), uint8(1), uint8(0), uint8(3), uint8(7), uint8(49), uint16(18), uint8(1), uint16(0), uint8(15), uint8(7), uint64(2))
	f.Add(uint8(1), uint8(1), uint8(2), uint8(0), uint8(5), uint8(69), uint16(69), uint8(2), uint16(2), uint8(16), uint8(32), uint64(3))
	f.Fuzz(func(t *testing.T, kernel, exp, hkv, g, d16, tq uint8, tk uint16, mask uint8, docs uint16, br, bc uint8, seed uint64) {
		s := Shape{Hkv: 1 + int(hkv)%4, D: 16 * (1 + int(d16)%16), Tq: 1 + int(tq)%200, Tk: 1 + int(tk)%300, Mask: Masks[int(mask)%len(Masks)]}
		s.H = s.Hkv * (1 + int(g)%8)
		if s.Mask == Doc {
			s.Docs = 1 + int(docs)%s.Tk
		}
		p := Params{Kernel: Kernels[int(kernel)%len(Kernels)], Shape: s, Br: int(br) % 129, Bc: int(bc), Exp: attention.Exps[int(exp)%len(attention.Exps)]}
		if p.Validate() != nil {
			t.Skip()
		}
		isatest.Run(t, Impls(), func(t *testing.T, im Impl) { gate(t, im, p, fmt.Sprintf("%+v", p), seed) })
	})
}

// TestOneQueryIsDecode: Tq = 1 is decode; its output equals attention's
// decode reference over the same cache.
func TestOneQueryIsDecode(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		s := Shape{H: 8, Hkv: 2, D: 128, Tq: 1, Tk: 99, Mask: Causal}
		for _, k := range Kernels {
			p := Params{Kernel: k, Shape: s, Exp: attention.ExpExact}
			b := Alloc(p)
			FillRandom(b, 5)
			im.Run(p, b)
			want := attention.Reference(attention.Shape{H: 8, Hkv: 2, D: 128, T: 99}, b.Q, b.K, b.V)
			if err := attention.MaxRelErr(b.O, want, 128); err > attention.Tolerance(attention.ExpExact) {
				t.Errorf("%s: error %.3g against decode", k, err)
			}
		}
	})
}

// TestSpecials: a NaN in q or k, a +Inf score, or every score of a row
// −Inf give the reference's NaN rows; other rows stay finite.
func TestSpecials(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		s := Shape{H: 2, Hkv: 1, D: 64, Tq: 20, Tk: 20, Mask: Causal}
		plants := map[string]func(b Buffers){
			"nan-q":      func(b Buffers) { b.Q[5*64+3] = float32(math.NaN()) },
			"nan-k":      func(b Buffers) { b.K[7*64+1] = float32(math.NaN()) },
			"pinf-score": func(b Buffers) { b.Q[9*64] = 1; b.K[4*64] = float32(math.Inf(1)) },
			"ninf-first": func(b Buffers) {
				for t := range 20 {
					b.Q[t*64] = 1
				}
				b.K[0] = float32(math.Inf(-1)) // row 0 sees only key 0: NaN
			},
		}
		for name, plant := range plants {
			for _, k := range Kernels {
				for _, e := range attention.Exps {
					p := Params{Kernel: k, Shape: s, Br: 8, Bc: 8, Exp: e}
					b := Alloc(p)
					FillRandom(b, 9)
					plant(b)
					im.Run(p, b)
					want, _ := Reference(s, b.Q, b.K, b.V)
					for i, w := range want {
						g := float64(b.O[i])
						if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && math.Abs(g-w) > 1e-3) {
							t.Fatalf("%s/%s/%s: output %d (head %d row %d) is %v, the reference %v", name, k, e, i, i/(20*64), i/64%20, g, w)
						}
					}
				}
			}
		}
	})
}

func TestNoAllocs(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, k := range Kernels {
			p := Params{Kernel: k, Shape: Shape{H: 4, Hkv: 2, D: 64, Tq: 40, Tk: 40, Mask: Doc, Docs: 3}}
			b := Alloc(p)
			FillRandom(b, 1)
			if n := testing.AllocsPerRun(3, func() { im.Run(p, b) }); n != 0 {
				t.Errorf("%s: %v allocations per call", k, n)
			}
		}
	})
}

func TestDocStart(t *testing.T) {
	s := Shape{Tk: 10, Docs: 3} // documents [0,3) [3,6) [6,10)
	want := []int{0, 0, 0, 3, 3, 3, 6, 6, 6, 6}
	for p, w := range want {
		if got := s.DocStart(p); got != w {
			t.Errorf("DocStart(%d) = %d, want %d", p, got, w)
		}
	}
	s = Shape{Tk: 7, Docs: 7}
	for p := range 7 {
		if s.DocStart(p) != p {
			t.Errorf("a document per token: DocStart(%d) = %d", p, s.DocStart(p))
		}
	}
}

func TestWork(t *testing.T) {
	s := Shape{H: 2, Hkv: 1, D: 16, Tq: 4, Tk: 6, Mask: Causal} // rows see 3, 4, 5, 6 keys
	if s.Seen() != 18 {
		t.Fatalf("Seen %d, want 18", s.Seen())
	}
	w := Params{Kernel: Flash, Shape: s, Br: 2, Bc: 4}.Work()
	if w.Flops != 4*2*16*18 || w.DenseFlops != 4*2*4*6*16 || w.Exps != 36 || w.Bytes != 8*2*4*16+8*6*16 {
		t.Errorf("work %+v", w)
	}
	// Query tiles rows 0-1 (keys 0..3: one tile) and rows 2-3 (keys 0..5: two tiles).
	if want := 8*2*4*16 + 8*16*(4+6); w.Traffic != float64(want) {
		t.Errorf("flash traffic %v, want %d", w.Traffic, want)
	}
	for _, bad := range []Shape{{H: 3, Hkv: 2, D: 64, Tq: 1, Tk: 1}, {H: 1, Hkv: 1, D: 72, Tq: 1, Tk: 1},
		{H: 1, Hkv: 1, D: 64, Tq: 5, Tk: 4}, {H: 1, Hkv: 1, D: 64, Tq: 1, Tk: 4, Mask: Doc, Docs: 5}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestAVX2IsVEX: no AVX2 kernel uses a register only AVX-512 has (it would
// pass here on an AVX-512 machine and fault on an AVX2-only one).
func TestAVX2IsVEX(t *testing.T) { isatest.VEXOnly(t, "prefill_amd64.s") }
