package quant

import (
	"encoding/binary"
	"math"
)

// Quantize writes x (a multiple of f's block) into dst in format f, with
// GGML's reference quantizer of that format. dst must hold
// f.RowBytes(len(x)) bytes. It does not allocate.
func Quantize(f Format, dst []byte, x []float32) error {
	if err := f.CheckRow(len(x), len(dst)); err != nil {
		return err
	}
	fi := formats[f]
	for b := 0; b < len(x)/fi.Block; b++ {
		blk, xs := dst[b*fi.Bytes:(b+1)*fi.Bytes], x[b*fi.Block:(b+1)*fi.Block]
		switch f {
		case Q4_0:
			quantizeQ4_0(blk, xs)
		case Q4_1:
			quantizeQ4_1(blk, xs)
		case Q5_0:
			quantizeQ5_0(blk, xs)
		case Q5_1:
			quantizeQ5_1(blk, xs)
		case Q8_0:
			quantizeQ8_0(blk, xs)
		case Q8_1:
			quantizeQ8_1(blk, xs)
		case Q4_K:
			quantizeQ4_K(blk, xs)
		case Q5_K:
			quantizeQ5_K(blk, xs)
		case Q6_K:
			quantizeQ6_K(blk, xs)
		case Q8_K:
			quantizeQ8_K(blk, xs)
		}
	}
	return nil
}

var le = binary.LittleEndian

func putF16(b []byte, v float32) { le.PutUint16(b, F32ToF16(v)) }
func getF16(b []byte) float32    { return F16ToF32(le.Uint16(b)) }

// signedMax returns the element of largest magnitude, with its sign (the
// first one on ties), and that magnitude.
func signedMax(x []float32) (maxv, amax float32) {
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, maxv = a, v
		}
	}
	return maxv, amax
}

func minMax(x []float32) (lo, hi float32) {
	lo, hi = x[0], x[0]
	for _, v := range x[1:] {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// inv is 1/d, or 0 for d = 0 (an all-zero block quantizes to zeros).
func inv(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// roundAway rounds half away from zero, as C's roundf.
func roundAway(v float32) float32 { return float32(math.Round(float64(v))) }

// Q4_0: the signed maximum maps to −8, so the full range −8…7 is used on
// the side of the largest value.
func quantizeQ4_0(blk []byte, x []float32) {
	maxv, _ := signedMax(x)
	d := maxv / -8
	id := inv(d)
	putF16(blk, d)
	for j := range QK / 2 {
		x0, x1 := float32(x[j]*id), float32(x[j+QK/2]*id)
		q0, q1 := min(15, int8(x0+8.5)), min(15, int8(x1+8.5))
		blk[2+j] = byte(q0) | byte(q1)<<4
	}
}

func quantizeQ4_1(blk []byte, x []float32) {
	lo, hi := minMax(x)
	d := (hi - lo) / 15
	id := inv(d)
	putF16(blk, d)
	putF16(blk[2:], lo)
	for j := range QK / 2 {
		x0, x1 := float32((x[j]-lo)*id), float32((x[j+QK/2]-lo)*id)
		q0, q1 := min(15, int8(x0+0.5)), min(15, int8(x1+0.5))
		blk[4+j] = byte(q0) | byte(q1)<<4
	}
}

func quantizeQ5_0(blk []byte, x []float32) {
	maxv, _ := signedMax(x)
	d := maxv / -16
	id := inv(d)
	putF16(blk, d)
	var qh uint32
	for j := range QK / 2 {
		x0, x1 := float32(x[j]*id), float32(x[j+QK/2]*id)
		q0, q1 := min(31, int8(x0+16.5)), min(31, int8(x1+16.5))
		blk[6+j] = byte(q0)&0xf | (byte(q1)&0xf)<<4
		qh |= uint32(q0>>4&1) << j
		qh |= uint32(q1>>4&1) << (j + QK/2)
	}
	le.PutUint32(blk[2:], qh)
}

func quantizeQ5_1(blk []byte, x []float32) {
	lo, hi := minMax(x)
	d := (hi - lo) / 31
	id := inv(d)
	putF16(blk, d)
	putF16(blk[2:], lo)
	var qh uint32
	for j := range QK / 2 {
		x0, x1 := float32((x[j]-lo)*id), float32((x[j+QK/2]-lo)*id)
		q0, q1 := uint8(x0+0.5), uint8(x1+0.5)
		blk[8+j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0>>4&1) << j
		qh |= uint32(q1>>4&1) << (j + QK/2)
	}
	le.PutUint32(blk[4:], qh)
}

// Activation blocks that hold a NaN or ±Inf. Q8 cannot carry them (a NaN
// has no level, and Inf/127 is an Inf scale that turns every level into
// 0·Inf), so such a block is stored with a NaN scale and zero levels: every
// dot product that reads it is NaN. The bits are fixed (f16 0x7e00, f32
// 0x7fc00000) so that every tier writes the same bytes. GGML's reference
// leaves these blocks undefined (NaN compares false in its max, and C's
// float → int8 of NaN is undefined behaviour).
const (
	nanF16 = 0x7e00
	nanF32 = 0x7fc00000
)

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float32) bool { return math.Float32bits(v)&0x7f800000 != 0x7f800000 }

// allFinite reports whether every element of x is finite: the largest |x|
// as bits is below Inf's. Branch-free, about 5 instructions an element
// (callgrind): the SIMD GEMVs check every row of y with it.
func allFinite(x []float32) bool {
	var mx uint32
	for _, v := range x {
		mx = max(mx, math.Float32bits(v)&0x7fffffff)
	}
	return mx < 0x7f800000
}

func quantizeQ8_0(blk []byte, x []float32) {
	if !allFinite(x) {
		clear(blk)
		le.PutUint16(blk, nanF16)
		return
	}
	_, amax := signedMax(x)
	d := amax / 127
	id := inv(d)
	putF16(blk, d)
	for j, v := range x {
		blk[2+j] = byte(int8(roundAway(float32(v * id))))
	}
}

// Q8_1 also stores s = d·Σq, which the q4_1/q5_1 dot products use for the
// min term.
func quantizeQ8_1(blk []byte, x []float32) {
	if !allFinite(x) {
		clear(blk)
		le.PutUint16(blk, nanF16)
		le.PutUint16(blk[2:], nanF16)
		return
	}
	_, amax := signedMax(x)
	d := amax / 127
	id := inv(d)
	putF16(blk, d)
	sum := 0
	for j, v := range x {
		q := int8(roundAway(float32(v * id)))
		blk[4+j] = byte(q)
		sum += int(q)
	}
	putF16(blk[2:], float32(sum)*d)
}

// Q8_K keeps the sign of the largest value (it maps to −127 exactly, so
// the other side can reach 128 and is clamped to 127) and the sums of
// each 16 values for the K-quants' min terms.
func quantizeQ8_K(blk []byte, x []float32) {
	clear(blk)
	if !allFinite(x) {
		le.PutUint32(blk, nanF32)
		return
	}
	maxv, amax := signedMax(x)
	if amax == 0 {
		return
	}
	iscale := -127 / maxv
	for j, v := range x {
		blk[4+j] = byte(int8(min(127, nearestInt(float32(iscale*v)))))
	}
	for g := range QKK / 16 {
		var s int16
		for _, q := range blk[4+16*g : 4+16*g+16] {
			s += int16(int8(q))
		}
		le.PutUint16(blk[4+QKK+2*g:], uint16(s))
	}
	le.PutUint32(blk, math.Float32bits(1/iscale))
}

// nearestInt rounds to nearest, ties to even, by GGML's float trick: adding
// 1.5·2^23 leaves the integer in the low mantissa bits (|v| < 2^22).
func nearestInt(v float32) int {
	i := int32(math.Float32bits(v + 12582912))
	return int(i&0x007fffff) - 0x00400000
}
