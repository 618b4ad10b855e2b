package attention

import (
	"encoding/binary"
	"math"

	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/quant"
)

// flashGeneric is the readable contract of flash decode (DESIGN.md §1):
// per query head a running max m, running sum s and unnormalized output o,
// updated one tile of tk keys at a time, normalized once at the end. An
// f16 or q8_0 tile is decoded into the last 2·tk·d floats of ws first.
func flashGeneric(o, q []float32, g int, k, v kvSrc, n, d, tk int, scale float32, e Exp, ws []float32, _ flashMode) {
	m, s := ws[:g], ws[g:2*g]
	tiles := ws[flashStateLen(g):]
	tb := tileBufLen(tk)
	var kbuf, vbuf []float32
	if k.typ != F32 || k.rs != 1 {
		kbuf, vbuf = ws[len(ws)-2*tk*d:len(ws)-tk*d], ws[len(ws)-tk*d:]
	}
	for h := range g {
		m[h], s[h] = float32(math.Inf(-1)), 0
		clear(o[h*d : (h+1)*d])
	}
	for t0 := 0; t0 < n; t0 += tk {
		cnt := min(tk, n-t0)
		var kt []float32
		if k.typ != Q8_0 { // q8_0: Q·K reads the encoded rows (dotQ8)
			kt = k.rows(kbuf, t0, cnt)
		}
		vt := v.rows(vbuf, t0, cnt)
		// Every head of the group works on the same tile while it is in L1.
		for h := range g {
			x := tiles[h*tb : h*tb+cnt]
			qh, oh := q[h*d:(h+1)*d], o[h*d:(h+1)*d]
			mBlk := float32(math.Inf(-1))
			for j := range cnt {
				if k.typ == Q8_0 {
					x[j] = scale * dotQ8(qh, k.encRow(t0+j), d)
				} else {
					x[j] = scale * dot(qh, kt[j*d:(j+1)*d])
				}
				mBlk = max(mBlk, x[j])
			}
			if mBlk > m[h] {
				var c float32 // first tile: nothing to rescale
				if !math.IsInf(float64(m[h]), -1) {
					c = expf(m[h]-mBlk, e)
				}
				s[h] *= c
				scaleInPlace(oh, c)
				m[h] = mBlk
			}
			var ts float32 // the tile's sum, added once: s stays accurate over long contexts
			for j := range cnt {
				w := expf(x[j]-m[h], e)
				ts += w
				axpy(oh, w, vt[j*d:(j+1)*d])
			}
			s[h] += ts
		}
	}
	for h := range g {
		normalize(o[h*d:(h+1)*d], s[h])
	}
}

// naiveGeneric is the textbook decode: scores for all n keys, a 3-pass
// softmax over them (max; exp and sum; normalize), then P·V. An f16 or
// q8_0 row is decoded into the last d floats of ws first. The max and the
// sum go to ws[roundUp(n, 16)] and the float after it (naiveState), from
// which the caller has the LSE.
func naiveGeneric(o, q []float32, k, v kvSrc, n, d int, scale float32, e Exp, ws []float32) {
	p := ws[:n]
	var row []float32
	if k.typ != F32 || k.rs != 1 {
		row = ws[len(ws)-d:]
	}
	mx := float32(math.Inf(-1))
	for j := range n {
		if k.typ == Q8_0 {
			p[j] = scale * dotQ8(q, k.encRow(j), d)
		} else {
			p[j] = scale * dot(q, k.rows(row, j, 1))
		}
		mx = max(mx, p[j])
	}
	var sum float32
	for j0 := 0; j0 < n; j0 += 16 { // blocked sum: accurate over long contexts
		var bs float32
		for j := j0; j < min(j0+16, n); j++ {
			p[j] = expf(p[j]-mx, e)
			bs += p[j]
		}
		sum += bs
	}
	st := ws[roundUp(n, 16):]
	st[0], st[1] = mx, sum
	inv := 1 / sum
	for j := range n {
		p[j] *= inv
	}
	clear(o[:d])
	for j := range n {
		axpy(o[:d], p[j], v.rows(row, j, 1))
	}
}

// dotQ8 is Q·K over a q8_0 cache, as GGML computes it
// (vec_dot_q8_0_q8_0): q holds the query quantized to q8_0 (QuantizeQuery:
// its bytes in the first RowBytes(d) of the row's floats), k one encoded
// row; per block of 32 the exact int32 Σ q·k (quant.BlockSumQ8), times
// d_q·d_k (the order the SIMD tiers multiply in), summed in float32.
func dotQ8(q []float32, k []byte, d int) float32 {
	qb := buf.BytesOf(q)
	var acc float32
	for b := 0; b < d/Q8Block; b++ {
		qq, kq := qb[b*Q8BlockBytes:(b+1)*Q8BlockBytes], k[b*Q8BlockBytes:(b+1)*Q8BlockBytes]
		isum := quant.BlockSumQ8(quant.Q8_0, kq, qq)
		dq, dk := quant.F16ToF32(binary.LittleEndian.Uint16(qq)), quant.F16ToF32(binary.LittleEndian.Uint16(kq))
		acc += float32(isum) * (dq * dk)
	}
	return acc
}

func dot(a, b []float32) float32 {
	var acc float32
	for i := range a {
		acc += a[i] * b[i]
	}
	return acc
}

// axpy: y += a*x.
func axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

func scaleInPlace(y []float32, c float32) {
	for i := range y {
		y[i] *= c
	}
}

// normalize divides o by s, or zeroes it when s is 0 (no weight at all).
func normalize(o []float32, s float32) {
	if s == 0 {
		clear(o)
		return
	}
	scaleInPlace(o, 1/s)
}
