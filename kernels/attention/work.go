package attention

// Work is the work model of one call (DESIGN.md §2).
type Work struct {
	Flops   float64 // multiply and add count 2 each; exp counted apart
	Exps    float64 // exponentials evaluated (one per query head per key)
	Bytes   float64 // compulsory bytes: each input read once, each output written once
	Traffic float64 // bytes this kernel's loop structure streams from the KV cache and q/o
}

// AI is the arithmetic intensity in FLOP per compulsory byte.
func (w Work) AI() float64 { return w.Flops / w.Bytes }

// Work returns the work model of p, with T the keys attended to
// (min(Window, T) under a sliding window) and e the bytes per KV value of
// the cache type (4 f32, 2 f16, 34/32 q8_0: its scales included):
//
//	FLOPs   4·H·T·D           (q·k and P·V, 2·D each per head and key)
//	bytes   2·Hkv·T·D·e + 8·H·D  (K and V once, q read and o written in f32)
//	traffic decode-flash re-reads a KV head once per query head: 2·H·T·D·e + 8·H·D;
//	        the other kernels stream each KV row once: traffic = bytes.
func (p Params) Work() Work {
	h, hkv, t, d := float64(p.H), float64(p.Hkv), float64(p.Keys()), float64(p.D) // a window reads Keys of the T rows
	kvElemBytes := p.KV.ElemBytes()
	w := Work{
		Flops: 4 * h * t * d,
		Exps:  h * t,
		Bytes: 2*hkv*t*d*kvElemBytes + 8*h*d,
	}
	w.Traffic = w.Bytes
	if p.Kernel == DecodeFlash {
		w.Traffic = 2*h*t*d*kvElemBytes + 8*h*d
	}
	return w
}

// WorkFormula states the model of a kernel in the words of Work, for
// `ckbench list`.
func WorkFormula(k Kernel) (flops, bytes, traffic string) {
	flops, bytes = "4·H·T·D (+ H·T exp)", "2·Hkv·T·D·e + 8·H·D (e = 4 f32, 2 f16, 34/32 q8_0)"
	traffic = "= bytes (each KV row streamed once)"
	if k == DecodeFlash {
		traffic = "2·H·T·D·e + 8·H·D (each query head re-reads its KV head)"
	}
	return
}
