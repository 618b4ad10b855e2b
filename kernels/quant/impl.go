package quant

import (
	"fmt"

	"github.com/ckbench/ckbench/kernels/isa"
)

// The functions one tier provides. A tier need not cover every format: a
// missing one is reported (ckbench list quant) and skipped, never replaced
// by another tier's code.
type (
	gemvF32Func    func(f Format, y []float32, w []byte, x []float32, m, k, rb int)
	gemvQ8Func     func(f Format, y []float32, w []byte, x []float32, xq []byte, m, k, rb int)
	quantizeQ8Func func(act Format, xq []byte, x []float32)
	// rowsQ8_0Func quantizes nrows rows of nb Q8_0 blocks, row r from x
	// at float r·xStride to dst at byte r·dstStride.
	rowsQ8_0Func func(dst []byte, dstStride int, x []float32, xStride, nrows, nb int)
	dequantFunc  func(f Format, d []float32, w []byte, m, k int)
)

// Impl is one ISA tier's implementation of the quant kernels.
type Impl struct {
	Tier isa.Tier
	// maxRB is the most rows per pass its GEMVs take (0: any, up to
	// MaxRB); maxRBF32 overrides it for gemv-f32 of some formats.
	maxRB    int
	maxRBF32 map[Format]int
	// Which formats each kernel covers in this tier (for QuantizeQ8: the
	// activation formats).
	gemvF32    map[Format]gemvF32Func
	gemvQ8     map[Format]gemvQ8Func
	quantizeQ8 map[Format]quantizeQ8Func
	rowsQ8_0   rowsQ8_0Func
	dequant    map[Format]dequantFunc
}

func everyFormat[F any](fs []Format, fn F) map[Format]F {
	m := map[Format]F{}
	for _, f := range fs {
		m[f] = fn
	}
	return m
}

// impls holds every tier compiled into this binary, generic first; the
// per-arch files append to it in init.
var impls = []Impl{{
	Tier:       isa.Generic,
	gemvF32:    everyFormat(WeightFormats(), gemvF32Func(gemvF32Generic)),
	gemvQ8:     everyFormat(WeightFormats(), gemvQ8Func(gemvQ8Generic)),
	quantizeQ8: everyFormat([]Format{Q8_0, Q8_1, Q8_K}, quantizeQ8Func(quantizeQ8Generic)),
	rowsQ8_0:   rowsQ8_0Generic,
	dequant:    everyFormat(WeightFormats(), dequantFunc(dequantGeneric)),
}}

// rowsQ8_0Generic is the contract of rowsQ8_0Func: Quantize, row by row.
func rowsQ8_0Generic(dst []byte, dstStride int, x []float32, xStride, nrows, nb int) {
	n := nb * QK
	for r := range nrows {
		quantizeQ8Generic(Q8_0, dst[r*dstStride:r*dstStride+Q8_0.RowBytes(n)], x[r*xStride:r*xStride+n])
	}
}

// Impls returns the tiers compiled into this binary, whether or not the
// CPU runs them: check isa.Detect before calling Run on one.
func Impls() []Impl { return impls }

// Tiers lists the tiers this binary has quant kernels for.
func Tiers() []isa.Tier { return isa.TiersOf(impls) }

// Lookup returns the implementation of tier t, if this binary has one.
func Lookup(t isa.Tier) (Impl, bool) { return isa.Find(impls, t) }

// TierOf makes Impl an isa.Implemented.
func (im Impl) TierOf() isa.Tier { return im.Tier }

// Has reports whether im implements p's kernel for its format and rows
// per pass, and if not why.
func (im Impl) Has(p Params) (bool, string) {
	k, f := p.Kernel, p.Fmt
	if ok, why := im.HasFormat(k, f); !ok {
		return false, why
	}
	most := im.maxRB
	if n, ok := im.maxRBF32[f]; ok && k == GemvF32 {
		most = n
	}
	if (k == GemvF32 || k == GemvQ8) && most > 0 && p.Rows() > most {
		return false, fmt.Sprintf("%s %s %s takes at most %d rows per pass (rb=%d)", im.Tier, k, f, most, p.Rows())
	}
	return true, ""
}

// HasFormat reports whether im implements kernel k for format f at all.
func (im Impl) HasFormat(k Kernel, f Format) (bool, string) {
	var ok bool
	switch k {
	case GemvF32:
		_, ok = im.gemvF32[f]
	case GemvQ8:
		_, ok = im.gemvQ8[f]
	case QuantizeQ8:
		_, ok = im.quantizeQ8[f.Q8Act()]
	case Dequant:
		_, ok = im.dequant[f]
	}
	if ok {
		return true, ""
	}
	what := f.String()
	if k == QuantizeQ8 {
		what = f.Q8Act().String()
	}
	return false, fmt.Sprintf("%s has no %s kernel for %s yet", im.Tier, k, what)
}

// Run executes p on b. The caller must have checked p.Check(b), that the
// CPU runs im.Tier and that im.Has(p). Run does not allocate.
func (im Impl) Run(p Params, b Buffers) {
	switch p.Kernel {
	case GemvF32:
		im.gemvF32[p.Fmt](p.Fmt, b.Y, b.W, b.X, p.M, p.K, p.Rows())
	case GemvQ8:
		im.gemvQ8[p.Fmt](p.Fmt, b.Y, b.W, b.X, b.XQ, p.M, p.K, p.Rows())
	case QuantizeQ8:
		act := p.Fmt.Q8Act()
		im.quantizeQ8[act](act, b.XQ[:act.RowBytes(p.K)], b.X[:p.K])
	case Dequant:
		im.dequant[p.Fmt](p.Fmt, b.D, b.W, p.M, p.K)
	}
}

// Q8_0Rows returns tier im's Q8_0 quantizer of strided rows: it writes
// nrows rows of n values (a multiple of 32), row r from x[r·xStride:] to
// dst[r·dstStride:] (bytes), each byte for byte Quantize, GGML's
// reference quantizer (every tier is checked against it), and does not
// allocate. The KV cache's q8_0 stores write many short rows (hd 128: 4
// blocks) per call; quantized one call at a time, a row's chain (its
// maxima, two divisions, then its levels) did not overlap the next's,
// and a token's append paid it Hkv times over (Zen 4).
func (im Impl) Q8_0Rows() Q8_0RowsFunc {
	return func(dst []byte, dstStride int, x []float32, xStride, nrows, n int) error {
		if nrows <= 0 {
			return nil
		}
		rb := Q8_0.RowBytes(n)
		if err := Q8_0.CheckRow(n, rb); err != nil { // n whole blocks
			return err
		}
		if dstStride < rb || xStride < n {
			return fmt.Errorf("q8_0 rows: strides %d bytes and %d values are shorter than a row (%d and %d)", dstStride, xStride, rb, n)
		}
		if last := (nrows - 1) * dstStride; len(dst) < last+rb {
			return fmt.Errorf("q8_0 rows: %d rows %d bytes apart need %d bytes, dst has %d", nrows, dstStride, last+rb, len(dst))
		}
		if last := (nrows - 1) * xStride; len(x) < last+n {
			return fmt.Errorf("q8_0 rows: %d rows %d values apart need %d values, x has %d", nrows, xStride, last+n, len(x))
		}
		im.rowsQ8_0(dst, dstStride, x, xStride, nrows, n/QK)
		return nil
	}
}

// Q8_0RowsFunc quantizes nrows rows of n values (a multiple of 32) to
// Q8_0, row r from x[r·xStride:] to dst[r·dstStride:] (bytes); an error
// says which bound the arguments break (see Impl.Q8_0Rows).
type Q8_0RowsFunc func(dst []byte, dstStride int, x []float32, xStride, nrows, n int) error
