package quant

import (
	"fmt"
	"math"
)

// The dot products of one weight row with activations: the generic
// (pure-Go) contract of the GEMV kernels. In the integer path every block
// yields an exact integer sum (and, for the formats with a min, an exact
// integer min term): the SIMD tiers must produce the same integers, and
// differ from these only in the order the scaled float terms are added.

// Q8Act is the activation format the integer dot product of weight format
// f takes: Q8_0 for q4_0, q5_0, q8_0; Q8_1 for q4_1, q5_1; Q8_K for the
// K-quants.
func (f Format) Q8Act() Format { return formats[f].Act }

// DotQ8 is the dot product of n weights w (format f) with n activations aq
// quantized to f.Q8Act().
func DotQ8(f Format, w, aq []byte, n int) (float32, error) {
	if !formats[f].Weight {
		return 0, fmt.Errorf("%s is an activation format, not a weight format", f)
	}
	if err := f.CheckRow(n, len(w)); err != nil {
		return 0, err
	}
	if err := f.Q8Act().CheckRow(n, len(aq)); err != nil {
		return 0, err
	}
	return dotQ8(f, w, aq, n), nil
}

func dotQ8(f Format, w, aq []byte, n int) float32 {
	fi, ai := formats[f], formats[f.Q8Act()]
	var sum float32
	for b := range n / fi.Block {
		wb, ab := w[b*fi.Bytes:(b+1)*fi.Bytes], aq[b*ai.Bytes:(b+1)*ai.Bytes]
		sum += blockDotQ8(f, wb, ab)
	}
	return sum
}

// blockDotQ8 is one block's scaled contribution.
func blockDotQ8(f Format, wb, ab []byte) float32 {
	switch f {
	case Q4_0, Q5_0, Q8_0:
		isum := BlockSumQ8(f, wb, ab)
		return float32(float32(isum)*getF16(wb)) * getF16(ab)
	case Q4_1, Q5_1:
		// d·dy·Σq·q8 + m·dy·Σq8. GGML takes dy·Σq8 from the block's s,
		// rounded to f16, which moves its result by up to 0.6 %; the
		// exact integer Σq8 keeps this the dot of the dequantized values.
		isum, qsum := BlockSumQ8(f, wb, ab), sumQ8(ab[4:4+QK])
		dy := getF16(ab)
		return float32(float32(getF16(wb)*dy)*float32(isum)) + float32(float32(getF16(wb[2:])*dy)*float32(qsum))
	case Q4_K, Q5_K:
		isum, msum := blockSumsK(f, wb, ab)
		dy := math.Float32frombits(le.Uint32(ab))
		d, dmin := float32(getF16(wb)*dy), float32(getF16(wb[2:])*dy)
		return float32(d*float32(isum)) - float32(dmin*float32(msum))
	case Q6_K:
		isum, _ := blockSumsK(f, wb, ab)
		dy := math.Float32frombits(le.Uint32(ab))
		return float32(getF16(wb[208:])*dy) * float32(isum)
	}
	panic("quant: no dot product for " + f.String())
}

// BlockSumQ8 is the exact integer Σ q·q8 of one 32-weight block (q the
// signed level for q4_0/q5_0/q8_0, the unsigned one for q4_1/q5_1).
func BlockSumQ8(f Format, wb, ab []byte) int32 {
	var levels [QK]int8
	blockLevels(f, wb, &levels)
	q8 := ab[2:]
	if f.Q8Act() == Q8_1 {
		q8 = ab[4:]
	}
	var s int32
	for j, l := range levels {
		s += int32(l) * int32(int8(q8[j]))
	}
	return s
}

// sumQ8 is Σq8 of a block of 8-bit activations.
func sumQ8(q8 []byte) int32 {
	var s int32
	for _, q := range q8 {
		s += int32(int8(q))
	}
	return s
}

// blockLevels unpacks the integer levels of a 32-weight block.
func blockLevels(f Format, wb []byte, l *[QK]int8) {
	switch f {
	case Q4_0, Q4_1:
		off, bias := 2, int8(8)
		if f == Q4_1 {
			off, bias = 4, 0
		}
		for j := range QK / 2 {
			q := wb[off+j]
			l[j], l[j+QK/2] = int8(q&0xf)-bias, int8(q>>4)-bias
		}
	case Q5_0, Q5_1:
		off, qhOff, bias := 6, 2, int8(16)
		if f == Q5_1 {
			off, qhOff, bias = 8, 4, 0
		}
		qh := le.Uint32(wb[qhOff:])
		for j := range QK / 2 {
			q := wb[off+j]
			h0, h1 := byte(qh>>j)<<4&0x10, byte(qh>>(j+12))&0x10
			l[j], l[j+QK/2] = int8(q&0xf|h0)-bias, int8(q>>4|h1)-bias
		}
	case Q8_0:
		for j := range QK {
			l[j] = int8(wb[2+j])
		}
	}
}

// blockSumsK returns, for one K-quant super-block against Q8_K
// activations, Σ_sub sc·Σ q·q8 and (q4_K, q5_K) the min term
// Σ_sub m·Σ q8, the latter from the activations' bsums.
func blockSumsK(f Format, wb, ab []byte) (isum, msum int32) {
	q8 := ab[4 : 4+QKK]
	bsum := func(g int) int32 { return int32(int16(le.Uint16(ab[4+QKK+2*g:]))) }
	switch f {
	case Q4_K, Q5_K:
		var levels [QKK]uint8
		kLevels(f, wb, &levels)
		for j := range 8 {
			sc, m := scaleMin(j, wb[4:16])
			var s int32
			for i := 32 * j; i < 32*j+32; i++ {
				s += int32(levels[i]) * int32(int8(q8[i]))
			}
			isum += int32(sc) * s
			msum += int32(m) * (bsum(2*j) + bsum(2*j+1))
		}
	case Q6_K:
		var levels [QKK]int8
		q6Levels(wb, &levels)
		for j := range 16 {
			var s int32
			for i := 16 * j; i < 16*j+16; i++ {
				s += int32(levels[i]) * int32(int8(q8[i]))
			}
			isum += int32(int8(wb[192+j])) * s
		}
	}
	return isum, msum
}

// kLevels unpacks the 4- or 5-bit levels of a q4_K/q5_K super-block.
func kLevels(f Format, wb []byte, l *[QKK]uint8) {
	if f == Q4_K {
		qs := wb[16:]
		for j := range 4 {
			for i := range 32 {
				l[64*j+i], l[64*j+32+i] = qs[32*j+i]&0xf, qs[32*j+i]>>4
			}
		}
		return
	}
	qh, ql := wb[16:48], wb[48:]
	for j := range 4 {
		for i := range 32 {
			lo, hi := ql[32*j+i]&0xf, ql[32*j+i]>>4
			lo |= (qh[i] >> (2 * j) & 1) << 4
			hi |= (qh[i] >> (2*j + 1) & 1) << 4
			l[64*j+i], l[64*j+32+i] = lo, hi
		}
	}
}

// q6Levels unpacks the signed levels (−32…31) of a q6_K super-block.
func q6Levels(wb []byte, l *[QKK]int8) {
	ql, qh := wb[0:128], wb[128:192]
	for n := range 2 {
		l4, h2, out := ql[64*n:], qh[32*n:], l[128*n:]
		for i := range 32 {
			out[i] = int8(l4[i]&0xf|(h2[i]&3)<<4) - 32
			out[i+32] = int8(l4[i+32]&0xf|(h2[i]>>2&3)<<4) - 32
			out[i+64] = int8(l4[i]>>4|(h2[i]>>4&3)<<4) - 32
			out[i+96] = int8(l4[i+32]>>4|(h2[i]>>6&3)<<4) - 32
		}
	}
}

// DotF32 is the dot product of n weights w (format f) with float32 x:
// each block dequantized (on the stack); the products of the dequantized
// weights and x are exact in float64 and summed there, and the sum rounded
// once to float32. So the result overflows only when the true dot product
// does, and NaN or ±Inf come out as IEEE arithmetic on the exact products
// gives them (Inf·0 and Inf − Inf are NaN).
func DotF32(f Format, w []byte, x []float32) (float32, error) {
	if !formats[f].Weight {
		return 0, fmt.Errorf("%s is an activation format, not a weight format", f)
	}
	if err := f.CheckRow(len(x), len(w)); err != nil {
		return 0, err
	}
	return dotF32(f, w, x), nil
}

func dotF32(f Format, w []byte, x []float32) float32 {
	fi := formats[f]
	var buf [QKK]float32
	var sum float64
	for b := range len(x) / fi.Block {
		y := buf[:fi.Block]
		DequantizeBlock(f, y, w[b*fi.Bytes:(b+1)*fi.Bytes])
		xs := x[b*fi.Block : (b+1)*fi.Block]
		for i, v := range y {
			sum += float64(v) * float64(xs[i])
		}
	}
	return float32(sum)
}
