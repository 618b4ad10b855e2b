package quant

// Work is the work model of one call (DESIGN.md §2).
type Work struct {
	Flops  float64 // multiply and add count 2 each (0: a data-movement kernel)
	IntOps float64 // int8 multiply-adds count 2 each (gemv-q8)
	Bytes  float64 // compulsory bytes: each input read once, each output written once
}

// AI is the arithmetic intensity in FLOP per compulsory byte.
func (w Work) AI() float64 { return w.Flops / w.Bytes }

// Work returns the work model of p:
//
//	gemv-f32     FLOPs 2·M·K; bytes M·(K/QK)·block_bytes + 4·K (x) + 4·M (y)
//	gemv-q8      FLOPs 2·M·K, int8 ops 2·M·K; bytes as gemv-f32 (x is read
//	             in f32 and quantized inside the call)
//	quantize-q8  bytes 4·K + (K/QK)·act_block_bytes
//	dequant      bytes M·(K/QK)·block_bytes + 4·M·K
func (p Params) Work() Work {
	m, k := float64(p.M), float64(p.K)
	wbytes := m * float64(p.Fmt.RowBytes(p.K))
	switch p.Kernel {
	case GemvF32:
		return Work{Flops: 2 * m * k, Bytes: wbytes + 4*k + 4*m}
	case GemvQ8:
		return Work{Flops: 2 * m * k, IntOps: 2 * m * k, Bytes: wbytes + 4*k + 4*m}
	case QuantizeQ8:
		return Work{Bytes: 4*k + float64(p.Fmt.Q8Act().RowBytes(p.K))}
	case Dequant:
		return Work{Bytes: wbytes + 4*m*k}
	}
	return Work{}
}

// WorkFormula states the model of a kernel, for `ckbench list quant`.
func WorkFormula(k Kernel) (flops, bytes string) {
	switch k {
	case GemvF32:
		return "2·M·K", "M·(K/QK)·block + 4·K + 4·M"
	case GemvQ8:
		return "2·M·K (int8 ops 2·M·K)", "M·(K/QK)·block + 4·K + 4·M"
	case QuantizeQ8:
		return "-", "4·K + (K/QK)·act_block"
	case Dequant:
		return "-", "M·(K/QK)·block + 4·M·K"
	}
	return "", ""
}
