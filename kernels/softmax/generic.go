package softmax

import (
	"math"

	"github.com/ckbench/ckbench/kernels/attention"
)

// rowFunc is one tier's softmax of a row: x[:kept] in place, x[kept:] = 0.
// kept ≥ 1.
type rowFunc func(x []float32, kept int, e Exp)

func expf(x float32, e Exp) float32 {
	if e == attention.ExpFast {
		return attention.FastExp(x)
	}
	return float32(math.Exp(float64(x)))
}

// threePassGeneric is the contract of ThreePass. Go's max is NaN if either
// argument is, so a NaN column makes m NaN and the whole row NaN.
func threePassGeneric(x []float32, kept int, e Exp) {
	row := x[:kept]
	m := float32(math.Inf(-1))
	for _, v := range row {
		m = max(m, v)
	}
	var s float32
	for i, v := range row {
		w := expf(v-m, e)
		row[i] = w
		s += w
	}
	r := 1 / s
	for i := range row {
		row[i] *= r
	}
	clear(x[kept:])
}

// onlineGeneric is the contract of Online. The running max starts at
// −MaxFloat32, not −Inf, so that a leading −Inf column is exp(−Inf) = 0
// of weight instead of exp(−Inf + Inf) = NaN; a row of only −Inf ends with
// s = 0 and comes out NaN (0 · 1/0), as in the reference.
func onlineGeneric(x []float32, kept int, e Exp) {
	row := x[:kept]
	m, s := float32(-math.MaxFloat32), float32(0)
	for _, v := range row {
		mn := max(m, v)
		s = s*expf(m-mn, e) + expf(v-mn, e)
		m = mn
	}
	r := 1 / s
	for i, v := range row {
		row[i] = expf(v-m, e) * r
	}
	clear(x[kept:])
}
