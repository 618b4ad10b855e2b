package attention

import "github.com/ckbench/ckbench/kernels/isa"

// flashFunc runs flash decode for g query heads that share one KV head:
// q and o hold g rows of d floats, k and v hold n valid rows of d floats.
type flashFunc func(o, q []float32, g int, k, v []float32, n, d, tk int, scale float32, e Exp, ws []float32)

// naiveFunc runs the materialized decode for one query head.
type naiveFunc func(o, q, k, v []float32, n, d int, scale float32, e Exp, ws []float32)

// Impl is one ISA tier's implementation of the attention kernels.
type Impl struct {
	Tier  isa.Tier
	flash flashFunc
	naive naiveFunc
}

// impls holds every tier compiled into this binary, generic first. The
// per-arch files append to it in init.
var impls = []Impl{{Tier: isa.Generic, flash: flashGeneric, naive: naiveGeneric}}

// Impls returns the tiers compiled into this binary, whether or not the CPU
// can run them: check isa.Detect before calling Run on one.
func Impls() []Impl { return impls }

// Tiers lists the tiers this binary has attention kernels for.
func Tiers() []isa.Tier { return isa.TiersOf(impls) }

// Lookup returns the implementation of tier t, if this binary has one.
func Lookup(t isa.Tier) (Impl, bool) { return isa.Find(impls, t) }

// TierOf makes Impl an isa.Implemented.
func (im Impl) TierOf() isa.Tier { return im.Tier }

// Run executes p on b. The caller must have checked p.Check(b) == nil and
// that the CPU runs im.Tier; Run itself does not allocate.
//
// A sliding window needs nothing of the kernels: they are given the last
// Keys rows of each KV head (from row First) as the whole context.
func (im Impl) Run(p Params, b Buffers) {
	d, n, tk := p.D, p.Keys(), p.Tile()
	stride := p.Capacity() * d // floats per KV head
	off := p.First() * d       // the window's first row within a KV head
	scale := Scale(d)
	rows := func(x []float32, kh int) []float32 { return x[kh*stride+off : kh*stride+off+n*d] }
	switch p.Kernel {
	case DecodeFlash:
		for h := 0; h < p.H; h++ {
			kh := h * p.Hkv / p.H
			im.flash(b.O[h*d:(h+1)*d], b.Q[h*d:(h+1)*d], 1, rows(b.K, kh), rows(b.V, kh), n, d, tk, scale, p.Exp, b.WS)
		}
	case DecodeFlashGQA:
		g := p.Group()
		for kh := 0; kh < p.Hkv; kh++ {
			h0 := kh * g
			im.flash(b.O[h0*d:(h0+g)*d], b.Q[h0*d:(h0+g)*d], g, rows(b.K, kh), rows(b.V, kh), n, d, tk, scale, p.Exp, b.WS)
		}
	case DecodeNaive:
		for h := 0; h < p.H; h++ {
			kh := h * p.Hkv / p.H
			im.naive(b.O[h*d:(h+1)*d], b.Q[h*d:(h+1)*d], rows(b.K, kh), rows(b.V, kh), n, d, scale, p.Exp, b.WS)
		}
	}
}
