package softmax

import (
	"fmt"
	"math"
	"testing"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
)

// guard is how many floats after the matrix a test fills with a sentinel
// that no kernel may touch.
const guard = 40

const sentinel = float32(12345)

// run runs p in tier im over a copy of x with a guard zone after it, and
// checks the guard.
func run(t *testing.T, im Impl, p Params, x []float32) []float32 {
	t.Helper()
	n := p.Rows * p.Len
	y := buf.Floats(n + guard)
	copy(y, x)
	for i := n; i < len(y); i++ {
		y[i] = sentinel
	}
	im.Run(p, y[:n])
	for i := n; i < len(y); i++ {
		if y[i] != sentinel {
			t.Fatalf("float %d after the matrix changed to %v", i-n, y[i])
		}
	}
	return y[:n]
}

// shapes cover every tail length of both vector widths (len 1…40), rows
// of one vector block, long rows, causal and not, one row and many.
func shapes() []Shape {
	var ss []Shape
	for l := 1; l <= 40; l++ {
		ss = append(ss, Shape{Rows: min(l, 3), Len: l, Causal: true}, Shape{Rows: 2, Len: l})
	}
	return append(ss, Shape{Rows: 64, Len: 64, Causal: true}, Shape{Rows: 37, Len: 301, Causal: true},
		Shape{Rows: 1, Len: 4099}, Shape{Rows: 5, Len: 2048, Causal: true})
}

// TestKernels checks every tier, variant and exp against the float64
// reference (MaxRelErr per row within Tolerance) and that every future
// column is exactly 0.
func TestKernels(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, v := range Variants {
			for _, e := range attention.Exps {
				for _, s := range shapes() {
					p := Params{Variant: v, Shape: s, Exp: e}
					if err := p.Validate(); err != nil {
						t.Fatal(err)
					}
					x := buf.Floats(s.Rows * s.Len)
					buf.FillUniform(x, uint64(s.Rows*1000+s.Len), -8, 8)
					check(t, im, p, x)
				}
			}
		}
	})
}

// check runs p in tier im over x and checks it against the float64
// reference (MaxRelErr per row within Tolerance) and that every future
// column is exactly 0.
func check(t *testing.T, im Impl, p Params, x []float32) {
	t.Helper()
	s, v, e := p.Shape, p.Variant, p.Exp
	want := Reference(s, x)
	got := run(t, im, p, x)
	if err := attention.MaxRelErr(got, want, s.Len); !(err <= Tolerance(e, s.Len)) {
		t.Errorf("%s/%s rows %d len %d causal %v: error %.3g above %.3g", v, e, s.Rows, s.Len, s.Causal, err, Tolerance(e, s.Len))
	}
	for r := range s.Rows {
		for c := s.Kept(r); c < s.Len; c++ {
			if got[r*s.Len+c] != 0 {
				t.Fatalf("%s/%s rows %d len %d: future column %d of row %d is %v, not 0", v, e, s.Rows, s.Len, c, r, got[r*s.Len+c])
			}
		}
	}
}

// FuzzKernels is TestKernels over any shape Validate accepts (1–64 rows
// of 1–3000 columns, causal or not), every variant and exp, values
// uniform in ±2^(0…20); every tier this CPU runs, a subtest each.
func FuzzKernels(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(3), uint16(41), true, uint8(3), uint64(1))
	f.Add(uint8(1), uint8(1), uint8(0), uint16(2999), false, uint8(10), uint64(2))
	f.Fuzz(func(t *testing.T, variant, exp, rows uint8, cols uint16, causal bool, log2Range uint8, seed uint64) {
		p := Params{Variant: Variants[int(variant)%len(Variants)], Exp: attention.Exps[int(exp)%len(attention.Exps)],
			Shape: Shape{Rows: 1 + int(rows)%64, Len: 1 + int(cols)%3000, Causal: causal}}
		if p.Validate() != nil {
			t.Skip()
		}
		r := float32(math.Ldexp(1, int(log2Range)%21))
		isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
			x := buf.Floats(p.Rows * p.Len)
			buf.FillUniform(x, seed, -r, r)
			check(t, im, p, x)
		})
	})
}

// TestLargeRange: scores far apart (exp(x − max) underflows for most) and
// all equal.
func TestLargeRange(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, v := range Variants {
			for _, e := range attention.Exps {
				s := Shape{Rows: 3, Len: 70}
				x := buf.Floats(s.Rows * s.Len)
				buf.FillUniform(x[:70], 1, -300, 300)
				for i := 70; i < 140; i++ {
					x[i] = 3.5
				}
				buf.FillUniform(x[140:], 2, -1e30, 1e30)
				p := Params{Variant: v, Shape: s, Exp: e}
				got := run(t, im, p, x)
				if err := attention.MaxRelErr(got, Reference(s, x), s.Len); err > Tolerance(e, s.Len) {
					t.Errorf("%s/%s: error %.3g", v, e, err)
				}
			}
		}
	})
}

func class(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 0):
		return "Inf"
	}
	return "finite"
}

// TestSpecials: NaN and ±Inf in a row give, element for element, the class
// the float64 reference gives (see the package doc), in every tier,
// variant and exp, wherever they sit (main loop, single vector, tail).
func TestSpecials(t *testing.T) {
	nan, pinf, ninf := float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	type plant struct {
		name string
		at   []int // columns of row 0
		val  float32
	}
	plants := []plant{
		{"nan-first", []int{0}, nan}, {"nan-mid", []int{37}, nan}, {"nan-tail", []int{69}, nan},
		{"pinf", []int{20}, pinf}, {"pinf-tail", []int{68}, pinf},
		{"ninf-first", []int{0}, ninf}, {"ninf-some", []int{3, 40, 69}, ninf},
		{"nan-future", []int{70}, nan}, // beyond the kept columns: no effect
	}
	allNinf := plant{name: "all-ninf", val: ninf}
	for c := range 71 {
		allNinf.at = append(allNinf.at, c)
	}
	plants = append(plants, allNinf)
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, v := range Variants {
			for _, e := range attention.Exps {
				for _, pl := range plants {
					t.Run(fmt.Sprintf("%s/%s/%s", v, e, pl.name), func(t *testing.T) {
						s := Shape{Rows: 2, Len: 71, Causal: true} // row 0 keeps 70 columns
						x := buf.Floats(s.Rows * s.Len)
						buf.FillUniform(x, 3, -4, 4)
						for _, c := range pl.at {
							x[c] = pl.val
						}
						want := Reference(s, x)
						got := run(t, im, Params{Variant: v, Shape: s, Exp: e}, x)
						for i := range got {
							if class(float64(got[i])) != class(want[i]) {
								t.Fatalf("column %d: %v, the reference %v", i, got[i], want[i])
							}
							if class(want[i]) == "finite" && math.Abs(float64(got[i])-want[i]) > Tolerance(e, s.Len) {
								t.Fatalf("column %d: %v, the reference %v", i, got[i], want[i])
							}
						}
					})
				}
			}
		}
	})
}

// TestNoAllocs: a kernel call allocates nothing.
func TestNoAllocs(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, v := range Variants {
			p := Params{Variant: v, Shape: Shape{Rows: 8, Len: 100, Causal: true}}
			x := buf.Floats(800)
			buf.FillUniform(x, 1, -1, 1)
			if n := testing.AllocsPerRun(10, func() { im.Run(p, x) }); n != 0 {
				t.Errorf("%s: %v allocations per call", v, n)
			}
		}
	})
}

func TestValidateAndWork(t *testing.T) {
	for _, s := range []Shape{{}, {Rows: 1}, {Rows: 5, Len: 4, Causal: true}, {Rows: 1, Len: MaxLen + 1}, {Rows: MaxElems, Len: 2}} {
		if s.Validate() == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	if _, err := ParseVariant("2-pass"); err == nil {
		t.Error("ParseVariant accepted 2-pass")
	}
	s := Shape{Rows: 4, Len: 10, Causal: true} // kept 7, 8, 9, 10
	if s.KeptTotal() != 34 {
		t.Fatalf("KeptTotal %d, want 34", s.KeptTotal())
	}
	w := Params{Variant: ThreePass, Shape: s}.Work()
	if w.Traffic != 20*34+4*6 || w.Exps != 34 || w.Flops != 4*34 || w.Bytes != 320 {
		t.Errorf("3-pass work %+v", w)
	}
	w = Params{Variant: Online, Shape: s}.Work()
	if w.Traffic != 12*34+4*6 || w.Exps != 68 || w.Flops != 6*34 || w.Bytes != 320 {
		t.Errorf("online work %+v", w)
	}
}

// TestAVX2IsVEX: no AVX2 kernel uses a register only AVX-512 has (it would
// pass here on an AVX-512 machine and fault on an AVX2-only one).
func TestAVX2IsVEX(t *testing.T) { isatest.VEXOnly(t, "softmax_amd64.s") }
