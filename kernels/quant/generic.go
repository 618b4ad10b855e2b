package quant

// The generic tier: the readable contract every SIMD tier is checked
// against. One row at a time; row blocking changes nothing here.

func gemvF32Generic(f Format, y []float32, w []byte, x []float32, m, k, _ int) {
	rb := f.RowBytes(k)
	for r := range m {
		y[r] = dotF32(f, w[r*rb:(r+1)*rb], x[:k])
	}
}

func gemvQ8Generic(f Format, y []float32, w []byte, x []float32, xq []byte, m, k, _ int) {
	quantizeQ8Generic(f.Q8Act(), xq, x[:k])
	rb := f.RowBytes(k)
	for r := range m {
		y[r] = dotQ8(f, w[r*rb:(r+1)*rb], xq, k)
	}
}

func quantizeQ8Generic(act Format, xq []byte, x []float32) {
	fi := formats[act]
	for b := range len(x) / fi.Block {
		blk, xs := xq[b*fi.Bytes:(b+1)*fi.Bytes], x[b*fi.Block:(b+1)*fi.Block]
		switch act {
		case Q8_0:
			quantizeQ8_0(blk, xs)
		case Q8_1:
			quantizeQ8_1(blk, xs)
		case Q8_K:
			quantizeQ8_K(blk, xs)
		}
	}
}

func dequantGeneric(f Format, d []float32, w []byte, m, k int) {
	fi := formats[f]
	for b := range m * k / fi.Block {
		DequantizeBlock(f, d[b*fi.Block:(b+1)*fi.Block], w[b*fi.Bytes:(b+1)*fi.Bytes])
	}
}
