// Package prefill holds the prefill-attention kernels of a CPU inference
// engine (the compute-bound half of attention: Tq query rows at once), with
// the work model of each.
//
// Layout (DESIGN.md §1): queries q[H][Tq][D], keys and values
// k[Hkv][Tk][D], v[Hkv][Tk][D], output o[H][Tq][D], all float32; query
// head h reads KV head h·Hkv/H. Query row t sits at position Tk − Tq + t
// (the queries are the last Tq of the Tk positions) and sees, by Mask:
//
//   - Causal: keys 0 … its position;
//   - Doc: keys from the start of its document to its position (causal
//     within a document; Docs documents of Tk/Docs positions, the last
//     ones one longer when Tk is no multiple of Docs);
//   - None: every key (Tq and Tk then unrelated).
//
// Every row sees at least one key. Two kernels compute softmax(q·Kᵀ/√D)·V
// over those keys:
//
//   - prefill-materialized (CKE): the score matrix [Tq][Tk] of one head
//     is written to the workspace, then the causal 3-pass softmax of
//     package softmax (keys before a document's start scored −Inf), then
//     P·V over each row's keys;
//   - prefill-flash (FlashAttention-2): query tiles of Br rows against key
//     tiles of Bc keys with an online (m, l, o) per row. A key tile no row
//     of the query tile sees is never touched (causal tile skipping; with
//     Doc, tiles wholly before every row's document start), a tile every
//     row sees whole runs unmasked, and only the tiles across a boundary
//     test each key.
//
// The pure-Go functions are the contract; kernels never allocate, never
// start goroutines and never read globals. Float specials follow the
// float64 Reference, as in package attention.
package prefill

import (
	"fmt"
	"math"
	"strings"

	"github.com/ckbench/ckbench/kernels/attention"
)

// Kernel names a prefill kernel. The string is the CLI and results name.
type Kernel string

const (
	Materialized Kernel = "prefill-materialized"
	Flash        Kernel = "prefill-flash"
)

// Kernels lists the prefill kernels in display order.
var Kernels = []Kernel{Materialized, Flash}

// ParseKernel converts a kernel name, naming the known ones on error.
func ParseKernel(s string) (Kernel, error) {
	for _, k := range Kernels {
		if string(k) == s {
			return k, nil
		}
	}
	names := make([]string, len(Kernels))
	for i, k := range Kernels {
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown prefill kernel %q (known: %s)", s, strings.Join(names, ", "))
}

// Mask says which keys a query row sees.
type Mask uint8

const (
	Causal Mask = iota
	None
	Doc
)

// Masks lists the masks in display order.
var Masks = []Mask{Causal, None, Doc}

func (m Mask) String() string {
	switch m {
	case None:
		return "none"
	case Doc:
		return "doc"
	}
	return "causal"
}

// MarshalText writes the name (machine.json's config lists names).
func (m Mask) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseMask converts causal, none or doc.
func ParseMask(s string) (Mask, error) {
	for _, m := range Masks {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown mask %q (known: causal, none, doc)", s)
}

// Exp is attention's exponential (exact or fast).
type Exp = attention.Exp

// Shape is the problem size of one prefill call.
type Shape struct {
	H, Hkv, D int
	Tq, Tk    int // query rows, key positions
	Mask      Mask
	Docs      int // documents of a Doc mask (1 … Tk); 0 means 1
	// DocTk is the positions the Docs documents divide (0 means Tk): a
	// caller that runs the rows of a prefix of the keys (one thread's
	// share) keeps the documents of the whole by setting it to the
	// whole's Tk.
	DocTk int
}

// docTk is the resolved DocTk.
func (s Shape) docTk() int {
	if s.DocTk == 0 {
		return s.Tk
	}
	return s.DocTk
}

// Group is the number of query heads sharing one KV head.
func (s Shape) Group() int { return s.H / s.Hkv }

// Pos is the position of query row t: Tk − Tq + t.
func (s Shape) Pos(t int) int { return s.Tk - s.Tq + t }

// DocStart is the first position of the document holding position p
// (document i covers [i·Tk/Docs, (i+1)·Tk/Docs), Tk or DocTk).
func (s Shape) DocStart(p int) int {
	n, tk := max(s.Docs, 1), s.docTk()
	i := (p*n + n - 1) / tk // a first guess at p's document, then exact
	for i > 0 && i*tk/n > p {
		i--
	}
	for (i+1)*tk/n <= p {
		i++
	}
	return i * tk / n
}

// Keys returns the keys [lo, hi) query row t sees.
func (s Shape) Keys(t int) (lo, hi int) {
	switch s.Mask {
	case None:
		return 0, s.Tk
	case Doc:
		p := s.Pos(t)
		return s.DocStart(p), p + 1
	}
	return 0, s.Pos(t) + 1
}

// last is the last key row t sees: its position, or Tk − 1 without a mask.
func (s Shape) last(t int) int {
	_, hi := s.Keys(t)
	return hi - 1
}

// Limits shared with decode attention.
const (
	MaxHeadDim = attention.MaxHeadDim
	MaxTile    = 256 // bounds Br and Bc
	// MaxT bounds Tq and Tk: the materialized scores of one head,
	// Tq·Tk floats, stay addressable (and a grid's memory check refuses
	// what does not fit long before).
	MaxT = 1 << 20
)

// Validate reports the first thing wrong with a shape.
func (s Shape) Validate() error {
	switch {
	case s.H <= 0 || s.Hkv <= 0:
		return fmt.Errorf("heads must be positive (got H=%d, Hkv=%d)", s.H, s.Hkv)
	case s.H%s.Hkv != 0:
		return fmt.Errorf("query heads H=%d are not a multiple of the KV heads Hkv=%d", s.H, s.Hkv)
	case s.D <= 0 || s.D%attention.HeadDimMultiple != 0 || s.D > MaxHeadDim:
		return fmt.Errorf("head dim %d not supported (use a multiple of %d up to %d)", s.D, attention.HeadDimMultiple, MaxHeadDim)
	case s.Tq < 1 || s.Tk < 1 || s.Tq > MaxT || s.Tk > MaxT:
		return fmt.Errorf("query rows %d and key positions %d must be 1…%d", s.Tq, s.Tk, MaxT)
	case s.Mask != None && s.Tq > s.Tk:
		return fmt.Errorf("%s mask with %d query rows > %d keys: the queries are the last positions of the keys", s.Mask, s.Tq, s.Tk)
	case s.Mask > Doc:
		return fmt.Errorf("unknown mask %d", s.Mask)
	case s.DocTk != 0 && s.DocTk < s.Tk:
		return fmt.Errorf("documents over %d positions, fewer than the %d keys", s.DocTk, s.Tk)
	case s.Docs < 0 || s.Docs > s.docTk():
		return fmt.Errorf("%d documents for %d positions: 1…%d", s.Docs, s.docTk(), s.docTk())
	}
	return nil
}

// Params is one call.
type Params struct {
	Kernel Kernel
	Shape
	Br, Bc int // prefill-flash's query and key tiles; 0 means DefaultBr, DefaultBc
	Exp    Exp
}

// DefaultBr and DefaultBc are prefill-flash's tiles when none are given,
// chosen by measurement: on a Zen 4 (1 thread, hd 128, H = Hkv = 8, Tq =
// Tk = 2048, causal) both the avx2 and the avx512 tier ran fastest at
// 64 × 128 of Br 32/48/64/96/128 × Bc 32/64/128/256 (avx512 90, avx2 85
// GFLOP/s; 32 × 32, tiny-llm's FA2 tile, 79 and 67): a wider key tile
// spreads each row's softmax step (two horizontal reductions) over more
// keys, and pv's rescale of O over more FMAs.
const (
	DefaultBr = 64
	DefaultBc = 128
)

// Tiles returns the resolved Br and Bc.
func (p Params) Tiles() (br, bc int) {
	br, bc = p.Br, p.Bc
	if br == 0 {
		br = DefaultBr
	}
	if bc == 0 {
		bc = DefaultBc
	}
	return br, bc
}

// Validate checks the kernel, shape and tiles.
func (p Params) Validate() error {
	if _, err := ParseKernel(string(p.Kernel)); err != nil {
		return err
	}
	if err := p.Shape.Validate(); err != nil {
		return err
	}
	if p.Br < 0 || p.Br > MaxTile || p.Bc < 0 || p.Bc > MaxTile {
		return fmt.Errorf("tiles Br=%d Bc=%d out of range: 1…%d (0: the default)", p.Br, p.Bc, MaxTile)
	}
	return nil
}

// Buffers are the operands of one call: Q and O hold H·Tq·D floats, K and
// V Hkv·Tk·D, WS WorkspaceLen; LSE, when not nil (H·Tq floats), receives
// each row's log-sum-exp of its scaled scores.
type Buffers struct {
	Q, K, V, O, WS []float32
	LSE            []float32
}

// WorkspaceLen is the float32 workspace p needs in any tier: the generic
// contract's (the materialized scores of one head, Tq·Tk, or
// prefill-flash's m and l of Br rows and a Br×Bc score tile), or, if
// larger, the SIMD tiers' (tiledLayout: K packed as well).
func (p Params) WorkspaceLen() int {
	n := p.tiled().total
	if p.Kernel == Materialized {
		return max(n, p.Tq*p.Tk)
	}
	br, bc := p.Tiles()
	return max(n, 2*br+br*bc)
}

// Check verifies that b is large enough for p.
func (p Params) Check(b Buffers) error {
	if err := p.Validate(); err != nil {
		return err
	}
	type need1 struct {
		name      string
		have, min int
	}
	q, kv := p.H*p.Tq*p.D, p.Hkv*p.Tk*p.D
	need := []need1{{"q", len(b.Q), q}, {"o", len(b.O), q}, {"k", len(b.K), kv}, {"v", len(b.V), kv}, {"workspace", len(b.WS), p.WorkspaceLen()}}
	if b.LSE != nil {
		need = append(need, need1{"lse", len(b.LSE), p.H * p.Tq})
	}
	for _, n := range need {
		if n.have < n.min {
			return fmt.Errorf("%s buffer has %d elements, %s needs %d", n.name, n.have, p.Kernel, n.min)
		}
	}
	return nil
}

// Scale is the softmax scale 1/√D.
func Scale(d int) float32 { return float32(1 / math.Sqrt(float64(d))) }
