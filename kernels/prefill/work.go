package prefill

// Work is the work model of one call (DESIGN.md §2).
type Work struct {
	// Flops counts the unmasked work: 4·D per query head, row and key the
	// row sees (q·k and P·V); exps apart.
	Flops float64
	// DenseFlops is the dense equivalent, 4·H·Tq·Tk·D: the same useful
	// work for every kernel and mask, to compare them on.
	DenseFlops float64
	Exps       float64 // one per head, row and key seen
	// Bytes are the compulsory bytes: q read and o written (8·H·Tq·D), K
	// and V read once (8·Hkv·Tk·D).
	Bytes float64
	// Traffic adds what the kernel's structure moves besides: the
	// materialized score matrix (written, then the softmax's passes, then
	// read by P·V), or prefill-flash's K and V tiles re-read once per
	// query tile of a group.
	Traffic float64
}

// Seen is Σ over query rows of the keys each sees.
func (s Shape) Seen() int {
	n := 0
	for t := range s.Tq {
		lo, hi := s.Keys(t)
		n += hi - lo
	}
	return n
}

// Work returns the work model of p:
//
//	FLOPs       4·H·D·n, n = Σ_t keys row t sees (dense: 4·H·Tq·Tk·D)
//	bytes       8·H·Tq·D + 8·Hkv·Tk·D
//	traffic     materialized: bytes + H·(4·Tq·Tk + (20·c + 4·(Tq·Tk − c)) + 4·c), c = Σ_t last key of row t + 1
//	            (scores written; the 3-pass softmax's passes; P read by P·V)
//	            flash: 8·H·Tq·D + 8·D·Σ over KV heads and query tiles of the key tiles touched·Bc
func (p Params) Work() Work {
	h, d, n := float64(p.H), float64(p.D), float64(p.Seen())
	w := Work{
		Flops:      4 * h * d * n,
		DenseFlops: 4 * h * float64(p.Tq) * float64(p.Tk) * d,
		Exps:       h * n,
		Bytes:      8*h*float64(p.Tq)*d + 8*float64(p.Hkv)*float64(p.Tk)*d,
	}
	if p.Kernel == Materialized {
		c, all := 0.0, float64(p.Tq)*float64(p.Tk) // c: the columns the softmax keeps (Tq·Tk unmasked)
		for t := range p.Tq {
			_, hi := p.Keys(t)
			c += float64(hi)
		}
		w.Traffic = w.Bytes + h*(4*all+20*c+4*(all-c)+4*c)
		return w
	}
	br, bc := p.Tiles()
	keys := 0
	for t0 := 0; t0 < p.Tq; t0 += br {
		klo, khi := p.Tk, 0
		for t := t0; t < min(t0+br, p.Tq); t++ {
			lo, hi := p.Keys(t)
			klo, khi = min(klo, lo), max(khi, hi)
		}
		keys += min(p.Tk, (khi+bc-1)/bc*bc) - klo/bc*bc
	}
	w.Traffic = 8*h*float64(p.Tq)*d + 8*d*float64(p.Hkv)*float64(keys)
	return w
}
