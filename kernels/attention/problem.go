package attention

import "github.com/ckbench/ckbench/kernels/buf"

// Alloc returns 64-byte aligned, zeroed buffers sized for p.
func Alloc(p Params) Buffers {
	kv := p.Hkv * p.Capacity() * p.D
	return Buffers{
		Q: buf.Floats(p.H * p.D), O: buf.Floats(p.H * p.D),
		K: buf.Floats(kv), V: buf.Floats(kv),
		WS: buf.Floats(p.WorkspaceLen()),
	}
}

// FillRandom fills q, K and V with deterministic values in [-1, 1), the
// data every sweep point is measured and checked on.
func FillRandom(b Buffers, seed uint64) {
	buf.FillUniform(b.Q, seed, -1, 1)
	buf.FillUniform(b.K, seed+1, -1, 1)
	buf.FillUniform(b.V, seed+2, -1, 1)
}
