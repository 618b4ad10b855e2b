package prefill

import (
	"github.com/ckbench/ckbench/kernels/isa"
	"github.com/ckbench/ckbench/kernels/softmax"
)

// Impl is one ISA tier's implementation of the prefill kernels.
type Impl struct {
	Tier isa.Tier
	sm   softmax.Impl // the tier's softmax, for prefill-materialized
	mk   *micro       // the tier's micro-kernels (tiled.go); nil: the generic contract
}

// impls holds every tier compiled into this binary, generic first; the
// per-arch file appends the asm tiers.
var impls = []Impl{{Tier: isa.Generic, sm: smTier(isa.Generic)}}

func smTier(t isa.Tier) softmax.Impl {
	im, _ := softmax.Lookup(t)
	return im
}

// Impls returns the tiers compiled into this binary.
func Impls() []Impl { return impls }

// Tiers lists the tiers this binary has prefill kernels for.
func Tiers() []isa.Tier { return isa.TiersOf(impls) }

// Lookup returns the implementation of tier t, if this binary has one.
func Lookup(t isa.Tier) (Impl, bool) { return isa.Find(impls, t) }

// TierOf makes Impl an isa.Implemented.
func (im Impl) TierOf() isa.Tier { return im.Tier }

// Run executes p on b. The caller must have checked p.Check(b) == nil and
// that the CPU runs im.Tier; Run does not allocate.
func (im Impl) Run(p Params, b Buffers) {
	switch {
	case im.mk != nil && p.Kernel == Materialized:
		materializedTiled(p, b, im.mk, im.sm)
	case im.mk != nil:
		flashTiled(p, b, im.mk)
	case p.Kernel == Materialized:
		materializedGeneric(p, b, im.sm)
	default:
		flashGeneric(p, b)
	}
}
