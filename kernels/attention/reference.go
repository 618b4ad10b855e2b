package attention

import "math"

// Reference computes decode attention for shape s (over its window's keys)
// in float64 with an exact two-pass softmax: the oracle every tier is
// checked against. It allocates and is slow on purpose; it is not a kernel.
// k and v are the values the cache holds (Encode); for a q8_0 cache q is
// taken as the kernels read it, quantized to q8_0 (QueryAsRead).
func Reference(s Shape, q, k, v []float32) []float64 {
	d, n := s.D, s.Keys()
	q = QueryAsRead(s.KV, q, d)
	scale := 1 / math.Sqrt(float64(d))
	out := make([]float64, s.H*d)
	x := make([]float64, n)
	for h := 0; h < s.H; h++ {
		kh := h * s.Hkv / s.H
		kb, vb := s.KVRows(k, kh), s.KVRows(v, kh)
		rs := s.PosStride() * d // from one key of the head to the next
		qh := q[h*d : (h+1)*d]
		mx := math.Inf(-1)
		for j := range n {
			var acc float64
			for i, qi := range qh {
				acc += float64(qi) * float64(kb[j*rs+i])
			}
			x[j] = acc * scale
			mx = math.Max(mx, x[j])
		}
		var sum float64
		for j := range n {
			x[j] = math.Exp(x[j] - mx)
			sum += x[j]
		}
		oh := out[h*d : (h+1)*d]
		for j := range n {
			w := x[j] / sum
			for i := range oh {
				oh[i] += w * float64(vb[j*rs+i])
			}
		}
	}
	return out
}

// MaxRelErr is the error measure of the correctness gate: per query head,
// the largest absolute difference divided by the largest magnitude of the
// reference row (an ∞-norm relative error, immune to outputs that cancel to
// near zero), maximized over heads. NaN or Inf in got gives +Inf.
func MaxRelErr(got []float32, want []float64, d int) float64 {
	worst := 0.0
	for h := 0; h+d <= len(want); h += d {
		var diff, mag float64
		for i := h; i < h+d; i++ {
			g := float64(got[i])
			if math.IsNaN(g) || math.IsInf(g, 0) {
				return math.Inf(1)
			}
			diff = math.Max(diff, math.Abs(g-want[i]))
			mag = math.Max(mag, math.Abs(want[i]))
		}
		if mag == 0 {
			mag = 1 // an all-zero reference row: fall back to absolute error
		}
		worst = math.Max(worst, diff/mag)
	}
	return worst
}
