package softmax

import "github.com/ckbench/ckbench/kernels/isa"

// Impl is one ISA tier's implementation of the variants.
type Impl struct {
	Tier      isa.Tier
	threePass rowFunc
	online    rowFunc
}

// impls holds every tier compiled into this binary, generic first; the
// per-arch file appends to it in init.
var impls = []Impl{{Tier: isa.Generic, threePass: threePassGeneric, online: onlineGeneric}}

// Impls returns the tiers compiled into this binary, whether or not the CPU
// can run them: check isa.Detect before calling Run on one.
func Impls() []Impl { return impls }

// Tiers lists the tiers this binary has softmax kernels for.
func Tiers() []isa.Tier { return isa.TiersOf(impls) }

// Lookup returns the implementation of tier t, if this binary has one.
func Lookup(t isa.Tier) (Impl, bool) { return isa.Find(impls, t) }

// TierOf makes Impl an isa.Implemented.
func (im Impl) TierOf() isa.Tier { return im.Tier }

// Row computes variant v of one row in place: the softmax of x[:kept]
// (kept ≥ 1), and x[kept:] = 0. It is Run for a row of a matrix whose row
// stride is not its length (a caller's padded score matrix).
func (im Impl) Row(v Variant, x []float32, kept int, e Exp) {
	if v == Online {
		im.online(x, kept, e)
		return
	}
	im.threePass(x, kept, e)
}

// Run computes the softmax p describes over x (Rows·Len floats) in place.
// The caller must have checked p.Validate() == nil, len(x) ≥ Rows·Len and
// that the CPU runs im.Tier; Run does not allocate.
func (im Impl) Run(p Params, x []float32) {
	for r := range p.Rows {
		im.Row(p.Variant, x[r*p.Len:(r+1)*p.Len], p.Kept(r), p.Exp)
	}
}
