package prefill

import (
	"math"

	"github.com/ckbench/ckbench/kernels/buf"
)

// Reference computes prefill attention for s in float64 with an exact
// two-pass softmax over each row's keys, and each row's LSE: the oracle
// every kernel and tier is checked against. It allocates; it is not a
// kernel.
func Reference(s Shape, q, k, v []float32) (out, lse []float64) {
	d, tq, tk := s.D, s.Tq, s.Tk
	scale := 1 / math.Sqrt(float64(d))
	out, lse = make([]float64, s.H*tq*d), make([]float64, s.H*tq)
	x := make([]float64, tk)
	for h := range s.H {
		kh := h * s.Hkv / s.H
		for t := range tq {
			qr := q[(h*tq+t)*d : (h*tq+t+1)*d]
			lo, hi := s.Keys(t)
			m := math.Inf(-1)
			for j := lo; j < hi; j++ {
				kr := k[(kh*tk+j)*d : (kh*tk+j+1)*d]
				var acc float64
				for i, qi := range qr {
					acc += float64(qi) * float64(kr[i])
				}
				x[j] = acc * scale
				m = math.Max(m, x[j])
			}
			var sum float64
			for j := lo; j < hi; j++ {
				x[j] = math.Exp(x[j] - m)
				sum += x[j]
			}
			o := out[(h*tq+t)*d : (h*tq+t+1)*d]
			for j := lo; j < hi; j++ {
				vr := v[(kh*tk+j)*d : (kh*tk+j+1)*d]
				w := x[j] / sum
				for i := range o {
					o[i] += w * float64(vr[i])
				}
			}
			lse[h*tq+t] = m + math.Log(sum)
		}
	}
	return out, lse
}

// Alloc returns 64-byte aligned buffers for p (LSE included).
func Alloc(p Params) Buffers {
	q, kv := p.H*p.Tq*p.D, p.Hkv*p.Tk*p.D
	return Buffers{Q: buf.Floats(q), O: buf.Floats(q), K: buf.Floats(kv), V: buf.Floats(kv),
		WS: buf.Floats(p.WorkspaceLen()), LSE: buf.Floats(p.H * p.Tq)}
}

// FillRandom fills q, K and V with reproducible values in [-1, 1).
func FillRandom(b Buffers, seed uint64) {
	buf.FillUniform(b.Q, seed, -1, 1)
	buf.FillUniform(b.K, seed+1, -1, 1)
	buf.FillUniform(b.V, seed+2, -1, 1)
}
