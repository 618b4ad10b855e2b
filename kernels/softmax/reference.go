package softmax

import "math"

// Reference is the softmax of s over x in float64 (exact exp, two passes):
// the oracle every tier is checked against. It allocates; it is not a
// kernel. math.Max is NaN when either argument is, so a NaN column makes
// the row NaN, as do +Inf (Inf − Inf) and a row of only −Inf (−Inf + Inf).
func Reference(s Shape, x []float32) []float64 {
	out := make([]float64, s.Rows*s.Len)
	for r := range s.Rows {
		row, o := x[r*s.Len:(r+1)*s.Len], out[r*s.Len:(r+1)*s.Len]
		kept := s.Kept(r)
		m := math.Inf(-1)
		for _, v := range row[:kept] {
			m = math.Max(m, float64(v))
		}
		var sum float64
		for i, v := range row[:kept] {
			o[i] = math.Exp(float64(v) - m)
			sum += o[i]
		}
		for i := range o[:kept] {
			o[i] /= sum
		}
	}
	return out
}
