package quant

import "math"

// Dequantize expands src (len(dst) weights in format f) into dst, exactly
// as GGML's dequantize_row_* does: each product rounded to float32.
func Dequantize(f Format, dst []float32, src []byte) error {
	if err := f.CheckRow(len(dst), len(src)); err != nil {
		return err
	}
	fi := formats[f]
	for b := 0; b < len(dst)/fi.Block; b++ {
		DequantizeBlock(f, dst[b*fi.Block:(b+1)*fi.Block], src[b*fi.Bytes:(b+1)*fi.Bytes])
	}
	return nil
}

// DequantizeBlock expands one block (no checks: y holds the block's
// weights, blk its bytes).
func DequantizeBlock(f Format, y []float32, blk []byte) {
	switch f {
	case Q4_0:
		d := getF16(blk)
		for j := range QK / 2 {
			q := blk[2+j]
			y[j] = float32(int(q&0xf)-8) * d
			y[j+QK/2] = float32(int(q>>4)-8) * d
		}
	case Q4_1:
		d, m := getF16(blk), getF16(blk[2:])
		for j := range QK / 2 {
			q := blk[4+j]
			y[j] = float32(float32(q&0xf)*d) + m
			y[j+QK/2] = float32(float32(q>>4)*d) + m
		}
	case Q5_0:
		d, qh := getF16(blk), le.Uint32(blk[2:])
		for j := range QK / 2 {
			q := blk[6+j]
			h0, h1 := byte(qh>>j)<<4&0x10, byte(qh>>(j+12))&0x10
			y[j] = float32(int(q&0xf|h0)-16) * d
			y[j+QK/2] = float32(int(q>>4|h1)-16) * d
		}
	case Q5_1:
		d, m, qh := getF16(blk), getF16(blk[2:]), le.Uint32(blk[4:])
		for j := range QK / 2 {
			q := blk[8+j]
			h0, h1 := byte(qh>>j)<<4&0x10, byte(qh>>(j+12))&0x10
			y[j] = float32(float32(q&0xf|h0)*d) + m
			y[j+QK/2] = float32(float32(q>>4|h1)*d) + m
		}
	case Q8_0:
		d := getF16(blk)
		for j := range QK {
			y[j] = float32(int8(blk[2+j])) * d
		}
	case Q8_1:
		d := getF16(blk)
		for j := range QK {
			y[j] = float32(int8(blk[4+j])) * d
		}
	case Q4_K:
		d, dmin := getF16(blk), getF16(blk[2:])
		sc, qs := blk[4:16], blk[16:]
		for j := 0; j < QKK/64; j++ {
			s1, m1 := scaleMin(2*j, sc)
			s2, m2 := scaleMin(2*j+1, sc)
			d1, mn1 := float32(d*float32(s1)), float32(dmin*float32(m1))
			d2, mn2 := float32(d*float32(s2)), float32(dmin*float32(m2))
			q, out := qs[32*j:32*j+32], y[64*j:64*j+64]
			for l := range 32 {
				out[l] = float32(d1*float32(q[l]&0xf)) - mn1
				out[l+32] = float32(d2*float32(q[l]>>4)) - mn2
			}
		}
	case Q5_K:
		d, dmin := getF16(blk), getF16(blk[2:])
		sc, qh, ql := blk[4:16], blk[16:48], blk[48:]
		for j := 0; j < QKK/64; j++ {
			s1, m1 := scaleMin(2*j, sc)
			s2, m2 := scaleMin(2*j+1, sc)
			d1, mn1 := float32(d*float32(s1)), float32(dmin*float32(m1))
			d2, mn2 := float32(d*float32(s2)), float32(dmin*float32(m2))
			u1, u2 := byte(1)<<(2*j), byte(2)<<(2*j)
			q, out := ql[32*j:32*j+32], y[64*j:64*j+64]
			for l := range 32 {
				lo, hi := q[l]&0xf, q[l]>>4
				if qh[l]&u1 != 0 {
					lo += 16
				}
				if qh[l]&u2 != 0 {
					hi += 16
				}
				out[l] = float32(d1*float32(lo)) - mn1
				out[l+32] = float32(d2*float32(hi)) - mn2
			}
		}
	case Q6_K:
		d := getF16(blk[208:])
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		for n := 0; n < 2; n++ { // two halves of 128
			l4, h2, s8, out := ql[64*n:], qh[32*n:], sc[8*n:], y[128*n:]
			for l := range 32 {
				is := l / 16
				q1 := int(l4[l]&0xf|(h2[l]>>0&3)<<4) - 32
				q2 := int(l4[l+32]&0xf|(h2[l]>>2&3)<<4) - 32
				q3 := int(l4[l]>>4|(h2[l]>>4&3)<<4) - 32
				q4 := int(l4[l+32]>>4|(h2[l]>>6&3)<<4) - 32
				out[l] = float32(d*float32(int8(s8[is]))) * float32(q1)
				out[l+32] = float32(d*float32(int8(s8[is+2]))) * float32(q2)
				out[l+64] = float32(d*float32(int8(s8[is+4]))) * float32(q3)
				out[l+96] = float32(d*float32(int8(s8[is+6]))) * float32(q4)
			}
		}
	case Q8_K:
		d := math.Float32frombits(le.Uint32(blk))
		for j := range QKK {
			y[j] = d * float32(int8(blk[4+j]))
		}
	}
}
