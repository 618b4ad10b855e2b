package quant

import "math"

// The K-quant reference quantizers. Every float expression is rounded to
// float32 operation by operation (explicit float32() around products that
// feed a sum): GGML's reference build has no fused multiply-add, and the
// search below picks among candidates by comparing errors, so one
// differently rounded sum can change the bytes.

// groupMaxEps is GGML's threshold below which a group counts as zero.
const groupMaxEps = 1e-15

// makeQKX2 quantizes n values to 0…nmax with a scale and a min, searching
// nstep+1 candidate scales around the min/max one for the smallest weighted
// squared error (GGML's make_qkx2_quants with use_mad = false). It returns
// the scale and −min (the min, stored positive), and leaves the levels in l.
func makeQKX2(x, weights []float32, nmax int, l, laux []uint8, rmin, rdelta float32, nstep int) (scale, negMin float32) {
	n := len(x)
	lo, hi := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(l[:n])
		return 0, -lo
	}
	fmax := float32(nmax)
	iscale := fmax / (hi - lo)
	scale = 1 / iscale
	var bestErr float32
	for i := range n {
		q := clampInt(nearestInt(float32(iscale*(x[i]-lo))), 0, nmax)
		l[i] = uint8(q)
		diff := float32(scale*float32(q)) + lo - x[i]
		bestErr += float32(weights[i] * float32(diff*diff))
	}
	for is := 0; is <= nstep; is++ {
		iscale := (float32(rmin+float32(rdelta*float32(is))) + fmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i := range n {
			q := clampInt(nearestInt(float32(iscale*(x[i]-lo))), 0, nmax)
			laux[i] = uint8(q)
			w, fq := weights[i], float32(q)
			sumL += float32(w * fq)
			sumL2 += float32(float32(w*fq) * fq)
			sumXL += float32(float32(w*fq) * x[i])
		}
		d := float32(sumW*sumL2) - float32(sumL*sumL)
		if d > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / d
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / d
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curErr float32
			for i := range n {
				diff := float32(thisScale*float32(laux[i])) + thisMin - x[i]
				curErr += float32(weights[i] * float32(diff*diff))
			}
			if curErr < bestErr {
				copy(l[:n], laux[:n])
				bestErr, scale, lo = curErr, thisScale, thisMin
			}
		}
	}
	return scale, -lo
}

// makeQX quantizes n values symmetrically to −nmax…nmax−1 (stored +nmax),
// weighting each by x² and trying 18 scales around nmax/max (GGML's
// make_qx_quants with rmse_type = 1, no importance).
func makeQX(x []float32, nmax int, l []int8) float32 {
	maxv, amax := signedMax(x)
	if amax < groupMaxEps {
		clear(l[:len(x)])
		return 0
	}
	fmax := float32(nmax)
	iscale := -fmax / maxv
	var sumLX, sumL2 float32
	for i, v := range x {
		q := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		l[i] = int8(q + nmax)
		w, fq := float32(v*v), float32(q)
		sumLX += float32(float32(w*v) * fq)
		sumL2 += float32(float32(w*fq) * fq)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale := -(fmax + float32(0.1*float32(is))) / maxv
		sumLX, sumL2 = 0, 0
		for _, v := range x {
			q := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
			w, fq := float32(v*v), float32(q)
			sumLX += float32(float32(w*v) * fq)
			sumL2 += float32(float32(w*fq) * fq)
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i, v := range x {
				l[i] = int8(nmax + clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1))
			}
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}

func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

// packScalesMins stores 8 six-bit scales and 8 six-bit mins in 12 bytes:
// sub-blocks 0–3 in the low 6 bits of bytes 0–3 (scales) and 4–7 (mins);
// 4–7 as nibbles in bytes 8–11, their top 2 bits in the high bits of 0–7.
func packScalesMins(dst []byte, ls, lm *[8]uint8) {
	clear(dst[:12])
	for j := range 8 {
		if j < 4 {
			dst[j] = ls[j]
			dst[j+4] = lm[j]
		} else {
			dst[j+4] = ls[j]&0xf | (lm[j]&0xf)<<4
			dst[j-4] |= (ls[j] >> 4) << 6
			dst[j] |= (lm[j] >> 4) << 6
		}
	}
}

// scaleMin unpacks sub-block j's scale and min (GGML's get_scale_min_k4).
func scaleMin(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// quantizeKScaleMin is the part q4_K and q5_K share: per sub-block of 32,
// a scale and a min from makeQKX2 (weights |x| + rms), both quantized to 6
// bits against the super-block's d and dmin; then each value's level.
func quantizeKScaleMin(blk []byte, x []float32, nmax int, rmin float32, nstep int, levels *[QKK]uint8) {
	var (
		weights          [32]float32
		laux             [32]uint8
		scales, mins     [8]float32
		maxScale, maxMin float32
	)
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for i, v := range xs {
			weights[i] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2(xs, weights[:], nmax, levels[32*j:32*j+32], laux[:], rmin, 0.1, nstep)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	var ls, lm [8]uint8
	for j := range 8 {
		// As GGML: to uint8 first (wrapping), then clamp.
		ls[j] = min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm[j] = min(63, uint8(nearestInt(float32(invMin*mins[j]))))
	}
	packScalesMins(blk[4:16], &ls, &lm)
	putF16(blk, maxScale/63)
	putF16(blk[2:], maxMin/63)
	d, dmin := getF16(blk), getF16(blk[2:])
	for j := range 8 {
		sc, m := scaleMin(j, blk[4:16])
		ds := float32(d * float32(sc))
		if ds == 0 {
			continue // keep makeQKX2's levels
		}
		dm := float32(dmin * float32(m))
		for i := 32 * j; i < 32*j+32; i++ {
			levels[i] = uint8(clampInt(nearestInt((x[i]+dm)/ds), 0, nmax))
		}
	}
}

func quantizeQ4_K(blk []byte, x []float32) {
	var levels [QKK]uint8
	quantizeKScaleMin(blk, x, 15, -1, 20, &levels)
	qs := blk[16:]
	for j := 0; j < QKK; j += 64 {
		for i := range 32 {
			qs[j/2+i] = levels[j+i] | levels[j+i+32]<<4
		}
	}
}

func quantizeQ5_K(blk []byte, x []float32) {
	var levels [QKK]uint8
	quantizeKScaleMin(blk, x, 31, -0.5, 15, &levels)
	qh, ql := blk[16:48], blk[48:]
	clear(qh)
	m1, m2 := uint8(1), uint8(2)
	for j := 0; j < QKK; j += 64 {
		for i := range 32 {
			l1, l2 := levels[j+i], levels[j+i+32]
			if l1 > 15 {
				l1 -= 16
				qh[i] |= m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[i] |= m2
			}
			ql[j/2+i] = l1 | l2<<4
		}
		m1, m2 = m1<<2, m2<<2
	}
}

// Q6_K: 16 sub-blocks of 16, each with a signed 8-bit scale against one
// f16 d; the levels 0…63 are split into 4 low bits (ql) and 2 high (qh).
func quantizeQ6_K(blk []byte, x []float32) {
	var (
		levels              [QKK]int8
		scales              [16]float32
		maxScale, maxAbsScl float32
	)
	for ib := range 16 {
		s := makeQX(x[16*ib:16*ib+16], 32, levels[16*ib:16*ib+16])
		scales[ib] = s
		if a := abs32(s); a > maxAbsScl {
			maxAbsScl, maxScale = a, s
		}
	}
	clear(blk)
	if maxAbsScl < groupMaxEps {
		return // all zero, d = 0
	}
	ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
	iscale := -128 / maxScale
	putF16(blk[208:], 1/iscale)
	for ib := range 16 {
		sc[ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
	}
	d := getF16(blk[208:])
	for j := range 16 {
		ds := float32(d * float32(int8(sc[j])))
		if ds == 0 {
			continue
		}
		for i := 16 * j; i < 16*j+16; i++ {
			levels[i] = int8(clampInt(nearestInt(x[i]/ds), -32, 31) + 32)
		}
	}
	for j := 0; j < QKK; j += 128 {
		for i := range 32 {
			q1, q2 := uint8(levels[j+i])&0xf, uint8(levels[j+i+32])&0xf
			q3, q4 := uint8(levels[j+i+64])&0xf, uint8(levels[j+i+96])&0xf
			ql[j/2+i] = q1 | q3<<4
			ql[j/2+i+32] = q2 | q4<<4
			qh[j/4+i] = uint8(levels[j+i])>>4 | (uint8(levels[j+i+32])>>4)<<2 |
				(uint8(levels[j+i+64])>>4)<<4 | (uint8(levels[j+i+96])>>4)<<6
		}
	}
}
