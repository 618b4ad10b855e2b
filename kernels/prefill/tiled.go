package prefill

import (
	"math"

	"github.com/ckbench/ckbench/kernels/softmax"
)

// micro is one SIMD tier's micro-kernels (prefill_amd64.go); the drivers
// below tile the problem, pack K, apply the masks and call them.
type micro struct {
	// qk: s[i·lds + j] = scale·Σ_c q[i·d + c]·k[c·ldk + j], i < rows, j < cols (a multiple of Panel).
	qk func(s, q, k *float32, rows, cols, d, ldk, lds int, scale float32)
	// pv: o[i·d + e] = c[i]·o[i·d + e] + Σ_{j<n} p[i·ldp + j]·v[j·d + e].
	pv func(o, p, v, c *float32, rows, n, d, ldp int)
	// soft[e]: one online-softmax step per row of a score tile (see
	// tileSoftmaxExactAVX2), exact (ExpExact) and fast (ExpFast).
	soft [2]softFunc
}

type softFunc func(s, m, l, c *float32, rows, cols, lds int)

// Panel is the key columns the micro-kernels compute at a time: a packed
// key tile, and a row of the score tile, is padded to a multiple of it.
const Panel = 32

// tiledLayout is where the SIMD tiers' drivers keep their state in the
// workspace (float offsets): first pvBlock ones (the c of a pv call that
// must not rescale), then
//
//	flash         m, l, c (Br each); the score tile, Br rows of
//	              cp = roundUp(Bc, Panel) floats; K packed, ⌈Tk/Bc⌉ tiles
//	              of d rows of cp floats
//	materialized  the scores, Tq rows of roundUp(Tk, Panel) floats; K
//	              packed in tiles of Panel
type tiledLayout struct {
	br, bc, cp    int // the tiles, and a score row's length
	s, kp         int // offsets of the scores and of packed K
	ntiles, total int
}

// pvBlock is the query rows pvRows gives pv at once (its register block).
const pvBlock = 6

func (p Params) tiled() tiledLayout {
	br, bc := p.Tiles()
	l := tiledLayout{br: br, bc: bc}
	rowsS, ldS := br, 0 // the score matrix's rows and their length
	if p.Kernel == Materialized {
		l.br, l.bc = 0, Panel // no online state; K packed in panels
		rowsS, ldS = p.Tq, roundUp(p.Tk, Panel)
	}
	l.cp, l.ntiles = roundUp(l.bc, Panel), (p.Tk+l.bc-1)/l.bc
	if ldS == 0 {
		ldS = l.cp
	}
	l.s = roundUp(pvBlock+3*l.br, 16)
	l.kp = l.s + rowsS*ldS
	l.total = l.kp + l.ntiles*p.D*l.cp
	return l
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// ones returns the workspace's pvBlock ones, writing them.
func ones(ws []float32) []float32 {
	one := ws[:pvBlock]
	for i := range one {
		one[i] = 1
	}
	return one
}

// pvRows runs o = c·o + P·V for rows query rows, row r over its own keys
// [lo, hi) = span(r) only: the keys every row sees in one pv call for all
// rows, the rest row by row. Each row is rescaled by c once (its later
// calls take a 1 from one). A row that sees no key is left alone: its c
// is then 1 (exp(m − m)). p holds the rows' weights, ldp apart; v the
// keys' values, d apart.
func pvRows(mk *micro, o, p []float32, ldp int, v []float32, c, one []float32, rows, d int, span func(r int) (lo, hi int)) {
	clo, chi := 0, math.MaxInt
	for r := range rows {
		lo, hi := span(r)
		clo, chi = max(clo, lo), min(chi, hi)
	}
	first := c
	if clo < chi {
		mk.pv(&o[0], &p[clo], &v[clo*d], &c[0], rows, chi-clo, d, ldp)
		first = one
	} else {
		clo, chi = math.MaxInt, math.MaxInt // no key common to all: each row whole
	}
	for r := range rows {
		lo, hi := span(r)
		cr := &first[r]
		for _, part := range [2][2]int{{lo, min(hi, clo)}, {max(lo, chi), hi}} {
			if part[0] < part[1] {
				mk.pv(&o[r*d], &p[r*ldp+part[0]], &v[part[0]*d], cr, 1, part[1]-part[0], d, ldp)
				cr = &one[0]
			}
		}
	}
}

// packK writes the keys k (rows of d floats) as tiles of bc keys, each d
// rows of cp floats (key j of the tile in column j, the columns past the
// last key 0), so that qk reads a tile's d × cp block contiguously.
func packK(kp, k []float32, tk, d, bc, cp int) {
	for t := 0; t*bc < tk; t++ {
		j0 := t * bc
		tile := kp[t*d*cp : (t+1)*d*cp]
		cols := min(bc, tk-j0)
		// 16 keys at a time: their rows (16 × d floats) stay in L1 while
		// each of the d output rows gets its 16 floats, a cache line.
		for jb := 0; jb < cols; jb += 16 {
			n := min(16, cols-jb)
			for c := range d {
				out := tile[c*cp+jb : c*cp+jb+n]
				for j := range out {
					out[j] = k[(j0+jb+j)*d+c]
				}
			}
		}
		for c := range d {
			clear(tile[c*cp+cols : (c+1)*cp])
		}
	}
}

// maskRow sets the scores of row (cols floats) outside [lo, hi) to −Inf.
func maskRow(row []float32, lo, hi int) {
	ninf := float32(math.Inf(-1))
	for j := range row[:lo] {
		row[j] = ninf
	}
	for j := hi; j < len(row); j++ {
		row[j] = ninf
	}
}

// flashTiled is prefill-flash in a SIMD tier: flashGeneric's tiles and
// online state, with S = scale·Q·Kᵀ, the tile's softmax step and O = c·O +
// P·V in micro-kernels. A tile across a mask boundary masks each row's
// scores; P·V (pvRows) runs each row over just the keys it sees, so that
// a weight of 0 never multiplies a value the row must not see (0·Inf is
// NaN).
func flashTiled(p Params, b Buffers, mk *micro) {
	d, tq, tk, g := p.D, p.Tq, p.Tk, p.Group()
	ly := p.tiled()
	br, bc, cp := ly.br, ly.bc, ly.cp
	scale := Scale(d)
	soft := mk.soft[p.Exp]
	one := ones(b.WS)
	m, l, c := b.WS[pvBlock:pvBlock+br], b.WS[pvBlock+br:pvBlock+2*br], b.WS[pvBlock+2*br:pvBlock+3*br]
	st, kp := b.WS[ly.s:ly.s+br*cp], b.WS[ly.kp:ly.total]
	for kh := range p.Hkv {
		packK(kp, b.K[kh*tk*d:(kh+1)*tk*d], tk, d, bc, cp)
		v := b.V[kh*tk*d : (kh+1)*tk*d]
		for t0 := 0; t0 < tq; t0 += br {
			rows := min(br, tq-t0)
			klo, khi, alo, ahi := tk, 0, 0, tk
			for t := t0; t < t0+rows; t++ {
				lo, hi := p.Keys(t)
				klo, khi, alo, ahi = min(klo, lo), max(khi, hi), max(alo, lo), min(ahi, hi)
			}
			for h := kh * g; h < (kh+1)*g; h++ {
				o := b.O[(h*tq+t0)*d : (h*tq+t0+rows)*d]
				clear(o)
				for r := range rows {
					m[r], l[r] = -math.MaxFloat32, 0
				}
				q := &b.Q[(h*tq+t0)*d]
				for j0 := klo / bc * bc; j0 < khi; j0 += bc {
					// The tile's keys up to the last any row sees.
					j1 := min(j0+bc, khi)
					cols, cpc := j1-j0, roundUp(j1-j0, Panel)
					whole := j0 >= alo && j1 <= ahi // every row sees every key of it
					ktile := kp[j0/bc*d*cp:]
					if whole {
						mk.qk(&st[0], q, &ktile[0], rows, cpc, d, cp, cp, scale)
					} else {
						// A panel of keys for the rows from the first that
						// sees one of them (a row's last key grows with it).
						r0 := 0
						for c0 := 0; c0 < cpc; c0 += Panel {
							for r0 < rows && p.last(t0+r0) < j0+c0 {
								r0++
							}
							if r0 < rows {
								mk.qk(&st[r0*cp+c0], &b.Q[(h*tq+t0+r0)*d], &ktile[c0], rows-r0, Panel, d, cp, cp, scale)
							}
						}
					}
					// Scores outside each row's keys (and past the last key)
					// are −Inf; a tile every row sees whole masks nothing.
					span := func(r int) (lo, hi int) {
						if whole {
							return 0, cols
						}
						lo, hi = p.Keys(t0 + r)
						return min(max(lo-j0, 0), cols), max(min(hi-j0, cols), 0)
					}
					if !whole || cpc > cols {
						for r := range rows {
							lo, hi := span(r)
							maskRow(st[r*cp:r*cp+cpc], lo, hi)
						}
					}
					soft(&st[0], &m[0], &l[0], &c[0], rows, cpc, cp)
					for r0 := 0; r0 < rows; r0 += pvBlock {
						n := min(pvBlock, rows-r0)
						pvRows(mk, o[r0*d:], st[r0*cp:], cp, v[j0*d:], c[r0:r0+n], one, n, d,
							func(r int) (int, int) { return span(r0 + r) })
					}
				}
				for r := range rows {
					inv := 1 / l[r] // l = 0 (every score −Inf): NaN, as the reference
					or := o[r*d : (r+1)*d]
					for i := range or {
						or[i] *= inv
					}
					if b.LSE != nil {
						b.LSE[h*tq+t0+r] = m[r] + float32(math.Log(float64(l[r])))
					}
				}
			}
		}
	}
}

// materializedTiled is prefill-materialized in a SIMD tier: a head's scores
// by qk, a panel of keys at a time over the rows that see some key of it;
// each row's 3-pass softmax by the tier's softmax kernel (keys before a
// document's start −Inf, the future zeroed); then P·V by pvRows, each row
// over just the keys it sees.
func materializedTiled(p Params, b Buffers, mk *micro, sm softmax.Impl) {
	d, tq, tk, g := p.D, p.Tq, p.Tk, p.Group()
	ly := p.tiled()
	ldS := roundUp(tk, Panel)
	scale := Scale(d)
	one := ones(b.WS)
	s, kp := b.WS[ly.s:ly.s+tq*ldS], b.WS[ly.kp:ly.total]
	for kh := range p.Hkv {
		packK(kp, b.K[kh*tk*d:(kh+1)*tk*d], tk, d, Panel, Panel)
		v := b.V[kh*tk*d : (kh+1)*tk*d]
		for h := kh * g; h < (kh+1)*g; h++ {
			q := b.Q[h*tq*d : (h+1)*tq*d]
			// A panel of keys for the rows that see some key of it: the
			// rows' last keys grow with the row, so those are the rows
			// from the first that does.
			t0 := 0
			for j0 := 0; j0 < tk; j0 += Panel {
				for t0 < tq && p.last(t0) < j0 {
					t0++
				}
				mk.qk(&s[t0*ldS+j0], &q[t0*d], &kp[j0*d], tq-t0, Panel, d, Panel, ldS, scale)
			}
			if b.LSE != nil {
				rowMax(b.LSE[h*tq:(h+1)*tq], p, s, ldS)
			}
			for t := range tq {
				lo, hi := p.Keys(t)
				row := s[t*ldS : t*ldS+tk]
				maskRow(row[:hi], lo, hi)
				sm.Row(softmax.ThreePass, row, hi, p.Exp)
			}
			if b.LSE != nil {
				lseFromWeights(b.LSE[h*tq:(h+1)*tq], p, s, ldS)
			}
			o := b.O[h*tq*d : (h+1)*tq*d]
			clear(o)
			for t0 := 0; t0 < tq; t0 += pvBlock {
				n := min(pvBlock, tq-t0)
				pvRows(mk, o[t0*d:], s[t0*ldS:], ldS, v, one, one, n, d,
					func(r int) (int, int) { return p.Keys(t0 + r) })
			}
		}
	}
}
