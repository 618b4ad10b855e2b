package prefill

import (
	"math"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/softmax"
)

func expf(x float32, e Exp) float32 {
	if e == attention.ExpFast {
		return attention.FastExp(x)
	}
	return float32(math.Exp(float64(x)))
}

func dot(a, b []float32) float32 {
	var s float32
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// axpy is y += a·x.
func axpy(y []float32, a float32, x []float32) {
	for i, v := range x {
		y[i] += a * v
	}
}

// materializedGeneric is the contract of prefill-materialized: per query
// head, the scores of every row up to its last key (keys before a
// document's start −Inf), the 3-pass softmax of sm over them (causal rows
// zero their future), then o = P·V over each row's keys.
func materializedGeneric(p Params, b Buffers, sm softmax.Impl) {
	d, tq, tk := p.D, p.Tq, p.Tk
	scale := Scale(d)
	s := b.WS[:tq*tk]
	ninf := float32(math.Inf(-1))
	for h := range p.H {
		kh := h * p.Hkv / p.H
		k, v := b.K[kh*tk*d:(kh+1)*tk*d], b.V[kh*tk*d:(kh+1)*tk*d]
		for t := range tq {
			q := b.Q[(h*tq+t)*d : (h*tq+t+1)*d]
			row := s[t*tk : (t+1)*tk]
			lo, hi := p.Keys(t)
			for j := range lo {
				row[j] = ninf
			}
			for j := lo; j < hi; j++ {
				row[j] = scale * dot(q, k[j*d:(j+1)*d])
			}
		}
		if b.LSE != nil {
			rowMax(b.LSE[h*tq:(h+1)*tq], p, s, tk)
		}
		// Causal and doc rows keep their columns up to their position; the
		// softmax zeroes the rest.
		sm.Run(softmax.Params{Variant: softmax.ThreePass, Shape: softmax.Shape{Rows: tq, Len: tk, Causal: p.Mask != None}, Exp: p.Exp}, s)
		if b.LSE != nil {
			lseFromWeights(b.LSE[h*tq:(h+1)*tq], p, s, tk)
		}
		for t := range tq {
			o := b.O[(h*tq+t)*d : (h*tq+t+1)*d]
			clear(o)
			lo, hi := p.Keys(t)
			row := s[t*tk : (t+1)*tk]
			for j := lo; j < hi; j++ {
				axpy(o, row[j], v[j*d:(j+1)*d])
			}
		}
	}
}

// rowMax writes each row's largest score over the keys it sees to lse,
// from the score matrix s of one head (rows lds floats apart) before the
// softmax: the first half of the row's LSE (see lseFromWeights).
func rowMax(lse []float32, p Params, s []float32, lds int) {
	for t := range p.Tq {
		lo, hi := p.Keys(t)
		m := float32(math.Inf(-1))
		for _, x := range s[t*lds+lo : t*lds+hi] {
			m = max(m, x) // NaN if any is
		}
		lse[t] = m
	}
}

// lseFromWeights completes each row's LSE from its weights after the
// 3-pass softmax: the largest weight, at the max's column, is exp(0)/Σ =
// 1/Σ, so LSE = m + ln Σ = m − ln(largest weight), with no exp to
// evaluate again.
func lseFromWeights(lse []float32, p Params, s []float32, lds int) {
	for t := range p.Tq {
		lo, hi := p.Keys(t)
		var w float32
		for _, x := range s[t*lds+lo : t*lds+hi] {
			w = max(w, x)
		}
		lse[t] -= float32(math.Log(float64(w)))
	}
}

// onlineTile updates one query row's online state (o unnormalized, its
// running max m and sum l) with the n = len(x) keys k and values v (n rows
// of len(q) floats) it sees in a key tile; x receives the scores.
func onlineTile(o, q, k, v, x []float32, m, l *float32, scale float32, e Exp) {
	d := len(q)
	ninf := float32(math.Inf(-1))
	mb := ninf
	for j := range x {
		x[j] = scale * dot(q, k[j*d:(j+1)*d])
		mb = max(mb, x[j])
	}
	if !(mb <= *m) { // a larger max, or NaN (which then reaches l and o)
		c := float32(0)
		if *m != ninf {
			c = expf(*m-mb, e)
		}
		*l *= c
		for i := range o {
			o[i] *= c
		}
		*m = mb
	}
	if *m == ninf {
		return // every score so far −Inf: no weight yet
	}
	for j, xj := range x {
		w := expf(xj-*m, e)
		*l += w
		axpy(o, w, v[j*d:(j+1)*d])
	}
}

// flashGeneric is the contract of prefill-flash (FlashAttention-2): for
// each KV head, each query tile of Br rows, and each key tile of Bc keys
// that some row of the tile sees, every query head of the group takes the
// tile (K and V read once per group and tile) and updates its rows'
// online state: scores x_j = scale·q·k_j over the keys the row sees (all
// of them, unmasked, when every row of the tile sees the whole key tile);
// m_blk = max x_j; if m_blk > m (or is NaN): c = exp(m − m_blk) (0 when m = −Inf),
// l *= c, o *= c, m = m_blk; then w_j = exp(x_j − m), l += w_j,
// o += w_j·v_j. At the end o /= l and LSE = m + ln l.
func flashGeneric(p Params, b Buffers) {
	d, tq, tk, g := p.D, p.Tq, p.Tk, p.Group()
	br, bc := p.Tiles()
	scale := Scale(d)
	ninf := float32(math.Inf(-1))
	ml, st := b.WS[:2*br], b.WS[2*br:2*br+br*bc]
	for kh := range p.Hkv {
		k, v := b.K[kh*tk*d:(kh+1)*tk*d], b.V[kh*tk*d:(kh+1)*tk*d]
		for t0 := 0; t0 < tq; t0 += br {
			t1 := min(t0+br, tq)
			// The keys the tile's rows see: [klo, khi) overall; every row
			// sees all of [alo, ahi).
			klo, khi, alo, ahi := tk, 0, 0, tk
			for t := t0; t < t1; t++ {
				lo, hi := p.Keys(t)
				klo, khi, alo, ahi = min(klo, lo), max(khi, hi), max(alo, lo), min(ahi, hi)
			}
			for h := kh * g; h < (kh+1)*g; h++ {
				m, l := ml[:br], ml[br:2*br]
				for r := range t1 - t0 {
					m[r], l[r] = ninf, 0
					clear(b.O[(h*tq+t0+r)*d : (h*tq+t0+r+1)*d])
				}
				// Key tiles are aligned to Bc; those wholly outside
				// [klo, khi) are never touched.
				for j0 := klo / bc * bc; j0 < khi; j0 += bc {
					j1 := min(j0+bc, tk)
					whole := j0 >= alo && j1 <= ahi // no row of the tile masks a key of it
					for r := range t1 - t0 {
						t := t0 + r
						lo, hi := j0, j1
						if !whole {
							rlo, rhi := p.Keys(t)
							lo, hi = max(lo, rlo), min(hi, rhi)
						}
						if lo >= hi {
							continue // this row sees no key of the tile
						}
						row := (h*tq + t) * d
						onlineTile(b.O[row:row+d], b.Q[row:row+d], k[lo*d:hi*d], v[lo*d:hi*d], st[r*bc:r*bc+hi-lo], &m[r], &l[r], scale, p.Exp)
					}
				}
				for r := range t1 - t0 {
					t := t0 + r
					o := b.O[(h*tq+t)*d : (h*tq+t+1)*d]
					inv := 1 / l[r] // l = 0 (every score −Inf): NaN, as the reference
					for i := range o {
						o[i] *= inv
					}
					if b.LSE != nil {
						b.LSE[h*tq+t] = m[r] + float32(math.Log(float64(l[r])))
					}
				}
			}
		}
	}
}
