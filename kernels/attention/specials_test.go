package attention

import (
	"fmt"
	"math"
	"testing"

	"github.com/ckbench/ckbench/kernels/isa/isatest"
)

// class sorts a float into the four kinds the specials contract speaks of.
func class(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return "finite"
}

// special is one way of planting a non-finite value in a problem: which
// buffer (q, k or v), which row (query head or key position), which
// element, which value. With setQ0, q[h][0] = q0 in every head first, so
// that an infinite k[j][0] gives a score of known sign (or NaN, for 0).
type special struct {
	name   string
	buf    byte
	row    int
	col    int
	val    float32
	setQ0  bool
	q0     float32
	allKey bool // plant in every key row of the KV head
}

var (
	nan  = float32(math.NaN())
	pinf = float32(math.Inf(1))
	ninf = float32(math.Inf(-1))
)

func specials() []special {
	return []special{
		{name: "nan-q", buf: 'q', row: 1, col: 5, val: nan},
		{name: "inf-q", buf: 'q', row: 0, col: 5, val: pinf},
		{name: "nan-k", buf: 'k', row: 17, col: 3, val: nan},
		{name: "pinf-score", buf: 'k', row: 30, col: 0, val: pinf, setQ0: true, q0: 1}, // +Inf score: Inf − Inf in the softmax
		{name: "ninf-score", buf: 'k', row: 30, col: 0, val: ninf, setQ0: true, q0: 1}, // −Inf score: the key has no weight
		{name: "inf-times-0", buf: 'k', row: 2, col: 0, val: pinf, setQ0: true, q0: 0}, // 0·Inf: a NaN score
		{name: "ninf-first", buf: 'k', row: 0, col: 0, val: ninf, setQ0: true, q0: 1},  // the first key masked
		{name: "all-ninf", buf: 'k', col: 0, val: ninf, setQ0: true, q0: 1, allKey: true},
		{name: "nan-v", buf: 'v', row: 9, col: 7, val: nan},
		{name: "pinf-v", buf: 'v', row: 9, col: 7, val: pinf},
		{name: "ninf-v", buf: 'v', row: 40, col: 1, val: ninf},
	}
}

// TestSpecials: NaN and ±Inf in q, k or v give, element for element, the
// class (NaN, +Inf, −Inf, finite) the float64 reference gives, in every
// tier, kernel and exp; finite elements stay within the gate's tolerance.
// The contract is in the package doc (Float specials).
func TestSpecials(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, k := range Kernels {
			for _, e := range []Exp{ExpExact, ExpFast} {
				for _, sp := range specials() {
					// Every cache type: a special is encoded (f16 keeps it;
					// q8_0 turns its block's scale NaN or Inf, which its
					// dequantized values and the reference over them follow).
					// Groups of two query heads, and of eight (the wide
					// sets: AVX-512 takes them whole, f32 head-major too;
					// AVX2 f16 four at a time).
					for _, c := range []Shape{{KV: F32}, {KV: F16}, {KV: Q8_0}, {Layout: PosMajor}, {KV: F16, H: 16}, {KV: F16, Layout: PosMajor, H: 16}, {KV: F32, H: 16}} {
						kv, layout, h := c.KV, c.Layout, max(c.H, 4)
						p := Params{Kernel: k, Shape: Shape{H: h, Hkv: 2, D: 64, T: 45, KV: kv, Layout: layout}, TileK: 16, Exp: e}
						t.Run(fmt.Sprintf("%s/%s/%s/g%d/%s/%s", k, layout, kv, h/2, e, sp.name), func(t *testing.T) {
							b := Alloc(p)
							FillRandom(b, 7)
							plant(p, b, sp)
							if err := Encode(p.Shape, b); err != nil {
								t.Fatal(err)
							}
							want := Reference(p.Shape, b.Q, b.K, b.V)
							for _, im := range flashPaths(im, p) {
								im.Run(p, b)
								checkSpecials(t, b.O, want, p.D, Tolerance(e))
							}
						})
					}
				}
			}
		}
	})
}

func plant(p Params, b Buffers, sp special) {
	d := p.D
	if sp.setQ0 {
		for h := range p.H {
			b.Q[h*d] = sp.q0
		}
	}
	switch sp.buf {
	case 'q':
		b.Q[sp.row*d+sp.col] = sp.val
	case 'k', 'v':
		buf := b.K
		if sp.buf == 'v' {
			buf = b.V
		}
		rows := []int{sp.row}
		if sp.allKey {
			rows = rows[:0]
			for j := range p.T {
				rows = append(rows, j)
			}
		}
		for _, j := range rows {
			buf[p.Row(0, j)*d+sp.col] = sp.val // KV head 0 only: heads of KV head 1 stay finite
		}
	}
}

func checkSpecials(t *testing.T, got []float32, want []float64, d int, tol float64) {
	t.Helper()
	for h := 0; h+d <= len(want); h += d {
		var mag, diff float64
		for i := h; i < h+d; i++ {
			g, w := float64(got[i]), want[i]
			if class(g) != class(w) {
				t.Fatalf("head %d element %d: %v, reference %v", h/d, i-h, g, w)
			}
			if class(w) == "finite" {
				mag = math.Max(mag, math.Abs(w))
				diff = math.Max(diff, math.Abs(g-w))
			}
		}
		if mag == 0 {
			mag = 1
		}
		if diff/mag > tol {
			t.Fatalf("head %d: finite elements off by %.3g relative (> %.0e)", h/d, diff/mag, tol)
		}
	}
}

// FuzzSpecials: on random q, k, v with values planted where the fuzzer
// says (4 bytes a plant: buffer, 16-bit index, value code 0–2 for NaN,
// +Inf, −Inf, else (code−128)/64), every tier gives the float64
// reference's class element for element, finite elements within the
// gate's tolerance.
func FuzzSpecials(f *testing.F) {
	f.Add([]byte{'k', 0, 1, 0, 'v', 3, 0, 1})
	f.Add([]byte{'q', 7, 0, 2, 'k', 200, 4, 250})
	f.Fuzz(func(t *testing.T, data []byte) {
		isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
			p := Params{Kernel: DecodeFlashGQA, Shape: Shape{H: 2, Hkv: 1, D: 64, T: 21}, TileK: 8}
			for _, k := range Kernels {
				for _, e := range []Exp{ExpExact, ExpFast} {
					p.Kernel, p.Exp = k, e
					b := Alloc(p)
					FillRandom(b, 3)
					for i := 0; i+4 <= len(data); i += 4 {
						buf := [][]float32{b.Q, b.K, b.V}[data[i]%3]
						idx := int(data[i+1])<<8 | int(data[i+2])
						v := float32(int(data[i+3])-128) / 64
						switch data[i+3] {
						case 0:
							v = nan
						case 1:
							v = pinf
						case 2:
							v = ninf
						}
						buf[idx%len(buf)] = v
					}
					want := Reference(p.Shape, b.Q, b.K, b.V)
					for _, im := range flashPaths(im, p) {
						im.Run(p, b)
						checkSpecials(t, b.O, want, p.D, Tolerance(e))
					}
				}
			}
		})
	})
}
