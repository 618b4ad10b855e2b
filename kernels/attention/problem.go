package attention

import "github.com/ckbench/ckbench/kernels/buf"

// Alloc returns 64-byte aligned, zeroed buffers sized for p: for an f16
// or q8_0 cache both the encoded cache and K and V in float32 (what Encode
// reads and the reference checks against).
func Alloc(p Params) Buffers {
	kv := p.CacheRows() * p.D
	b := Buffers{
		Q: buf.Floats(p.H * p.D), O: buf.Floats(p.H * p.D),
		K: buf.Floats(kv), V: buf.Floats(kv),
		WS: buf.Floats(p.WorkspaceLen()),
	}
	if p.KV != F32 {
		b.KEnc, b.VEnc = buf.Bytes(p.CacheBytes()), buf.Bytes(p.CacheBytes())
	}
	return b
}

// FillRandom fills q, K and V with deterministic values in [-1, 1), the
// data every sweep point is measured and checked on. For an f16 or q8_0
// cache, Encode them next.
func FillRandom(b Buffers, seed uint64) {
	buf.FillUniform(b.Q, seed, -1, 1)
	buf.FillUniform(b.K, seed+1, -1, 1)
	buf.FillUniform(b.V, seed+2, -1, 1)
}
