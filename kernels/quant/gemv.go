package quant

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ckbench/ckbench/kernels/buf"
)

// Kernel names a quant kernel.
type Kernel string

const (
	// GemvF32: y = W·x with x in float32; each weight block dequantized in
	// registers and multiplied in (never written to memory).
	GemvF32 Kernel = "gemv-f32"
	// GemvQ8: x quantized to the format's 8-bit activation format (part of
	// the call), then integer dot products per block, scaled per block.
	GemvQ8 Kernel = "gemv-q8"
	// QuantizeQ8: x → 8-bit activations alone (the first step of gemv-q8).
	QuantizeQ8 Kernel = "quantize-q8"
	// Dequant: W → float32 rows, what an engine without fused kernels pays.
	Dequant Kernel = "dequant"
)

// Kernels lists the quant kernels.
var Kernels = []Kernel{GemvF32, GemvQ8, QuantizeQ8, Dequant}

// ParseKernel reads a kernel name.
func ParseKernel(s string) (Kernel, error) {
	for _, k := range Kernels {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown quant kernel %q (known: gemv-f32, gemv-q8, quantize-q8, dequant)", s)
}

// MaxRB is the most rows a pass may share an x load across.
const MaxRB = 8

// Params is one call: kernel, weight format, shape y[M] = W[M×K]·x[K], and
// rows per pass. For QuantizeQ8, Fmt is the weight format whose activation
// format (Fmt.Q8Act()) x is quantized to, and M is ignored.
type Params struct {
	Kernel Kernel
	Fmt    Format
	M, K   int
	RB     int // rows per pass, 1…MaxRB (0 means 1)
}

// Rows returns the resolved rows per pass.
func (p Params) Rows() int { return max(p.RB, 1) }

// Validate reports the first thing wrong with p, in words a user can act on.
func (p Params) Validate() error {
	if _, err := ParseKernel(string(p.Kernel)); err != nil {
		return err
	}
	fi := p.Fmt.Info()
	if !fi.Weight {
		return fmt.Errorf("%s is an activation format; weight formats: q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K", fi.Name)
	}
	if p.K <= 0 || p.K%fi.Block != 0 {
		return fmt.Errorf("row length K=%d is not a positive multiple of %s's block size %d", p.K, fi.Name, fi.Block)
	}
	if p.M <= 0 && p.Kernel != QuantizeQ8 {
		return fmt.Errorf("rows M=%d: must be ≥ 1", p.M)
	}
	if p.RB < 0 || p.RB > MaxRB {
		return fmt.Errorf("rb=%d: rows per pass must be 1…%d", p.RB, MaxRB)
	}
	return nil
}

// Buffers are the operands of a call. W holds M rows of Fmt.RowBytes(K)
// bytes, X K floats, XQ the K activations in Fmt.Q8Act() (gemv-q8's
// workspace, quantize-q8's output) and room for what a kernel derives from
// them (XQLen), Y M floats, D M×K floats (dequant's output).
type Buffers struct {
	W  []byte
	X  []float32
	XQ []byte
	Y  []float32
	D  []float32
}

// prepRoom is the room after the activations for format f and K (the
// sizes q4_0OctetPrep and q8KPrep come from the generator: layout_gen.go).
func prepRoom(f Format, k int) int {
	switch f {
	case Q4_0:
		return k / formats[Q4_0].Block / 8 * q4_0OctetPrep
	case Q4_K:
		return k / QKK * q8KPrep
	}
	return 0
}

// XQLen is the length of XQ that p needs: the activations in Fmt.Q8Act(),
// and the room of the layout gemv-q8 prepares for the format (whatever
// the kernel, so that one set of buffers serves every kernel of a shape).
func (p Params) XQLen() int {
	return p.Fmt.Q8Act().RowBytes(p.K) + prepRoom(p.Fmt, p.K)
}

// Alloc returns buffers for p (D only for Dequant: it is M×K floats).
func Alloc(p Params) Buffers {
	b := Buffers{
		W:  buf.Bytes(max(p.M, 1) * p.Fmt.RowBytes(p.K)),
		X:  buf.Floats(p.K),
		XQ: make([]byte, p.XQLen()),
		Y:  buf.Floats(max(p.M, 1)),
	}
	if p.Kernel == Dequant {
		b.D = buf.Floats(p.M * p.K)
	}
	return b
}

// FillRandom fills x and the weights with deterministic data: weights drawn
// in [-1, 1) and quantized row by row with the reference quantizer (so W
// holds what GGML would store), x in [-1, 1).
func FillRandom(p Params, b Buffers, seed uint64) {
	buf.FillUniform(b.X, seed, -1, 1)
	row := make([]float32, p.K)
	rb := p.Fmt.RowBytes(p.K)
	r := rand.New(rand.NewPCG(seed+1, 0x9e3779b97f4a7c15))
	for m := range len(b.W) / rb {
		for i := range row {
			row[i] = 2*r.Float32() - 1
		}
		Quantize(p.Fmt, b.W[m*rb:(m+1)*rb], row)
	}
}

// Check reports whether b fits p.
func (p Params) Check(b Buffers) error {
	if err := p.Validate(); err != nil {
		return err
	}
	rb := p.Fmt.RowBytes(p.K)
	m := max(p.M, 1)
	switch {
	case len(b.X) < p.K:
		return fmt.Errorf("x holds %d floats, want %d", len(b.X), p.K)
	case len(b.XQ) < p.XQLen():
		return fmt.Errorf("xq holds %d bytes, want %d", len(b.XQ), p.XQLen())
	case p.Kernel != QuantizeQ8 && len(b.W) < m*rb:
		return fmt.Errorf("weights W hold %d bytes, want %d", len(b.W), m*rb)
	case (p.Kernel == GemvF32 || p.Kernel == GemvQ8) && len(b.Y) < p.M:
		return fmt.Errorf("y holds %d floats, want %d", len(b.Y), p.M)
	case p.Kernel == Dequant && len(b.D) < p.M*p.K:
		return fmt.Errorf("dequantized output D holds %d floats, want %d", len(b.D), p.M*p.K)
	}
	return nil
}

// MaxRelErr compares a kernel's output with the generic tier's: the
// largest |got − want| over the largest scale (∞-norm relative error).
// scale is want itself, or for the GEMVs Magnitudes: a dot product is
// accurate relative to Σ|w·x|, not to its own value, which may cancel.
func MaxRelErr(got, want []float32, scale []float64) float64 {
	var diff, mag float64
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		diff = max(diff, d)
		if scale != nil {
			mag = max(mag, scale[i])
		} else {
			mag = max(mag, math.Abs(float64(want[i])))
		}
	}
	if mag == 0 {
		return diff
	}
	return diff / mag
}

// Magnitudes returns Σ_i |w_i·x_i| per row of a GEMV (in float64, from the
// dequantized weights and, for gemv-q8, the dequantized activations in
// b.XQ as the generic tier left them), the scale of MaxRelErr; nil for the
// other kernels.
func Magnitudes(p Params, b Buffers) []float64 {
	if p.Kernel != GemvF32 && p.Kernel != GemvQ8 {
		return nil
	}
	x := activations(p, b)
	w := make([]float32, p.K)
	rb := p.Fmt.RowBytes(p.K)
	mag := make([]float64, p.M)
	for m := range p.M {
		Dequantize(p.Fmt, w, b.W[m*rb:(m+1)*rb])
		for i := range w {
			mag[m] += math.Abs(float64(w[i]) * float64(x[i]))
		}
	}
	return mag
}

// activations are the x a GEMV multiplies by: b.X, or for gemv-q8 the
// dequantized activations in b.XQ as the generic tier left them.
func activations(p Params, b Buffers) []float32 {
	if p.Kernel != GemvQ8 {
		return b.X[:p.K]
	}
	x := make([]float32, p.K)
	Dequantize(p.Fmt.Q8Act(), x, b.XQ[:p.Fmt.Q8Act().RowBytes(p.K)])
	return x
}

// Tolerance is the gate of a tier against the generic tier: integer sums
// are exact, so only the order of the float additions differs, which
// moves a dot product by a few float32 roundings of Σ|w·x|.
const Tolerance = 1e-6
