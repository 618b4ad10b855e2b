package softmax

// Work is the work model of one call (DESIGN.md §2), over the kept
// columns n = KeptTotal and the zeroed ones z = Rows·Len − n.
type Work struct {
	Flops float64 // max, subtract, add, multiply count 1 each; exps apart
	Exps  float64 // exponentials evaluated
	// Bytes are the compulsory bytes: the matrix read once and written
	// once, 8·Rows·Len.
	Bytes float64
	// Traffic is what the passes move, each pass reading (and writing)
	// the kept columns once, plus the zeroed future written once:
	//	3-pass  4n (max) + 8n (exp, sum: read, write) + 8n (normalize) + 4z = 20n + 4z
	//	online  4n (max, sum) + 8n (exp, normalize: read, write) + 4z     = 12n + 4z
	// Only the first pass over a row reads it from the matrix's level: the
	// passes after it find the row (Len floats) in the cache it fits in.
	Traffic float64
}

// Work returns the work model of p:
//
//	3-pass  FLOPs 4n (max; subtract and sum; multiply), exps n
//	online  FLOPs 6n (max, subtract, multiply-add; subtract, multiply), exps 2n
//	        (exp(x − m) in both passes; the rescales, one per vector block, are not counted)
func (p Params) Work() Work {
	n := float64(p.KeptTotal())
	z := float64(p.Rows)*float64(p.Len) - n
	w := Work{Bytes: 8 * float64(p.Rows) * float64(p.Len)}
	switch p.Variant {
	case Online:
		w.Flops, w.Exps, w.Traffic = 6*n, 2*n, 12*n+4*z
	default:
		w.Flops, w.Exps, w.Traffic = 4*n, n, 20*n+4*z
	}
	return w
}

// WorkFormula states the model of a variant, for `ckbench list`.
func WorkFormula(v Variant) (flops, bytes, traffic string) {
	bytes = "8·rows·len (the matrix read once, written once)"
	if v == Online {
		return "6·n (+ 2·n exp), n = kept columns", bytes, "12·n + 4·z (z = zeroed future columns)"
	}
	return "4·n (+ n exp), n = kept columns", bytes, "20·n + 4·z (z = zeroed future columns)"
}
