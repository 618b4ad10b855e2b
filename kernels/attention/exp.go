package attention

import "math"

// expf is the softmax exponential of the generic tier.
func expf(x float32, e Exp) float32 {
	if e == ExpFast {
		return FastExp(x)
	}
	return float32(math.Exp(float64(x)))
}

// Coefficients of CKE's fast exp: 2^f ≈ 1 + c1·f + c2·f² + c3·f³ + c4·f⁴
// on f ∈ [-0.5, 0.5].
const (
	fastExpC1 = 0.6931471805599453
	fastExpC2 = 0.2402265069591007
	fastExpC3 = 0.05550410866482158
	fastExpC4 = 0.009618129107628478
	log2e     = 1.4426950408889634
)

// FastExp is CKE's polynomial exp (DESIGN.md §1): clamp to [-88, 88],
// split x·log2(e) into n + f with n = round(z), evaluate 2^f by a degree-4
// polynomial and build 2^n in the exponent bits. About 1e-4 relative error;
// exp(-88) comes out as exactly 0, which the online softmax relies on only
// through the (m == -inf) special case.
func FastExp(x float32) float32 {
	x = min(max(x, -88), 88)
	z := x * log2e
	n := float32(math.RoundToEven(float64(z)))
	f := z - n
	p := (((fastExpC4*f+fastExpC3)*f+fastExpC2)*f+fastExpC1)*f + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}
