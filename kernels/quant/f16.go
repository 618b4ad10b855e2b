package quant

import "math"

// F32ToF16 converts to IEEE 754 half precision, rounding to nearest even,
// with subnormals, infinities and NaN: what GGML_FP32_TO_FP16 (and F16C's
// VCVTPS2PH with rounding mode 0) computes.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff { // Inf or NaN (NaN stays NaN: keep it quiet)
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	if e := exp - 127 + 15; e >= 1 {
		// Normal in half: round the 23-bit mantissa to 10 bits; a carry
		// runs into the exponent, and past the largest finite into Inf.
		v := uint32(e)<<23 | man
		v += 0xfff + (v>>13)&1
		if v >= 0x1f<<23 {
			return sign | 0x7c00
		}
		return sign | uint16(v>>13)
	}
	// Subnormal (or zero) in half: value = m · 2^-24.
	if exp == 0 {
		return sign // float32 zero or subnormal: far below half's range
	}
	full := man | 0x800000 // value = full · 2^(exp-150)
	s := uint(126 - exp)   // m = full >> s, s ≥ 14
	if s > 24 {
		return sign
	}
	m := full >> s
	rem, half := full&(1<<s-1), uint32(1)<<(s-1)
	if rem > half || rem == half && m&1 == 1 {
		m++ // may become 0x400, the smallest normal: still the right bits
	}
	return sign | uint16(m)
}

// F16ToF32 converts a half to float32 exactly. It is small enough to
// inline: the pure-Go kernels widen every f16 KV value through it.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	em := uint32(h & 0x7fff) // the half's exponent and mantissa
	switch {
	case em-0x400 < 0x7800: // normal (exponent 1…30; below 0x400 wraps round)
		return math.Float32frombits(sign | (em<<13 + (127-15)<<23))
	case em < 0x400: // ±0 or subnormal: em · 2^-24, exact in float32
		return math.Float32frombits(sign | math.Float32bits(float32(em)*(1.0/(1<<24))))
	}
	return math.Float32frombits(sign | (em<<13 + (255-31)<<23)) // ±Inf, NaN with its payload
}
