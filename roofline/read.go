// Package roofline measures what this machine can do, so that every kernel
// can be judged against it: today the read-bandwidth kernel that decode
// attention is compared to; compute and bandwidth ceilings per memory level
// come next (issue #3).
package roofline

import "github.com/ckbench/ckbench/kernels/isa"

// ReadVectorFloats is the granule of the read kernels: n must be a multiple
// of it (8 AVX-512 vectors).
const ReadVectorFloats = 128

// ReadSum returns the sum of x, reading it with the widest loads tier t
// has and 8 independent accumulators: a plain load-and-sum loop, the read
// bandwidth a streaming kernel can hope for. len(x) must be a multiple of
// ReadVectorFloats; the CPU must run t.
func ReadSum(t isa.Tier, x []float32) float32 {
	if len(x)%ReadVectorFloats != 0 {
		panic("roofline: ReadSum length not a multiple of ReadVectorFloats")
	}
	if len(x) == 0 {
		return 0
	}
	if f := readSumFor(t); f != nil {
		return f(&x[0], len(x))
	}
	return readSumGeneric(x)
}

func readSumGeneric(x []float32) float32 {
	var a [8]float32
	for i := 0; i < len(x); i += 8 {
		for j := range a {
			a[j] += x[i+j]
		}
	}
	return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))
}
