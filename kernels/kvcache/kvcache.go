// Package kvcache holds the stores every decoded token pays for: writing
// its keys and values into the KV cache that the attention kernels read,
// in every ISA tier, with the work model of each.
//
// The cache is package attention's: Hkv·Cap rows of D values, head-major
// ([kv_head][Cap][D]) or position-major ([Cap][kv_head][D]), of f32, f16
// or q8_0 (attention.KVType, attention.Layout). A store reads float32 rows
// and writes them in the cache's type: f32 copied, f16 rounded to nearest
// even (VCVTPS2PH in the SIMD tiers, quant.F32ToF16 in the generic one),
// q8_0 quantized byte for byte as GGML's reference quantizer does (each
// tier's q8_0 quantizer of package quant). Every store is a plain
// (temporal) store: the row written is read by the next decode step, so
// it should stay in cache; none is non-temporal.
//
// Kernels never allocate, start goroutines or read globals; buffers are
// passed in.
package kvcache

import (
	"fmt"
	"strings"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/buf"
)

// Op names a store. The string is the CLI and results name.
type Op string

const (
	// Append writes one token's K and V rows, every KV head, at position
	// Pos: the store of each decode step.
	Append Op = "append"
	// BatchCopy writes Tokens tokens' K and V rows from a compact
	// head-major scratch [kv_head][Tokens][D] into the cache at positions
	// Pos…Pos+Tokens−1: the store of a prefill.
	BatchCopy Op = "batch-copy"
)

// Ops lists the stores in display order.
var Ops = []Op{Append, BatchCopy}

// ParseOp converts a store name, naming the known ones on error.
func ParseOp(s string) (Op, error) {
	for _, o := range Ops {
		if string(o) == s {
			return o, nil
		}
	}
	names := make([]string, len(Ops))
	for i, o := range Ops {
		names[i] = string(o)
	}
	return "", fmt.Errorf("unknown kvcache store %q (known: %s)", s, strings.Join(names, ", "))
}

// MaxHeadDim and HeadDimMultiple are attention's: a cache the stores write
// is one the attention kernels can read.
const (
	MaxHeadDim      = attention.MaxHeadDim
	HeadDimMultiple = attention.HeadDimMultiple
)

// Params is one store: which, into what cache, where.
type Params struct {
	Op     Op
	Hkv    int // KV heads
	D      int // head dim
	Cap    int // positions the cache holds (0: Pos + Tokens)
	KV     attention.KVType
	Layout attention.Layout
	Pos    int // first position written
	Tokens int // BatchCopy: tokens written (Append writes 1; 0 means 1)
	// PosHeads is attention.Shape's: position-major, the heads a
	// position's rows hold when Hkv is a block of them (0 means Hkv).
	PosHeads int
}

// Count is the tokens written: 1 for Append.
func (p Params) Count() int { return count(p.Op, p.Tokens) }

// Capacity is the positions the cache holds.
func (p Params) Capacity() int { return capacity(p.Cap, p.Pos, p.Count()) }

// count and capacity are Count and Capacity of the fields they read: Run
// calls them on a *Params, where the value methods, inlined, each copied
// the whole Params.
func count(op Op, tokens int) int {
	if op == Append || tokens == 0 {
		return 1
	}
	return tokens
}

func capacity(cap, pos, n int) int {
	if cap == 0 {
		return pos + n
	}
	return cap
}

// cache is the cache as package attention describes it.
func (p Params) cache() attention.Shape {
	return attention.Shape{H: p.Hkv, Hkv: p.Hkv, D: p.D, T: p.Capacity(), KV: p.KV, Layout: p.Layout, PosHeads: p.PosHeads}
}

// Validate reports the first thing wrong with p, in words a user can act on.
func (p Params) Validate() error {
	if _, err := ParseOp(string(p.Op)); err != nil {
		return err
	}
	switch {
	case p.Pos < 0:
		return fmt.Errorf("position %d: must be ≥ 0", p.Pos)
	case p.Tokens < 0:
		return fmt.Errorf("tokens %d: must be ≥ 1", p.Tokens)
	case p.Cap != 0 && p.Pos+p.Count() > p.Cap:
		return fmt.Errorf("positions %d…%d do not fit a cache of %d", p.Pos, p.Pos+p.Count()-1, p.Cap)
	}
	return p.cache().Validate()
}

// Buffers are the operands of one store. SrcK and SrcV hold the rows
// written: Hkv·D floats for Append (head by head), Hkv·Tokens·D for
// BatchCopy ([kv_head][Tokens][D]). K and V are an f32 cache
// (Hkv·Capacity·D floats; attention.Shape.CacheRows), KEnc and VEnc an f16 or q8_0 one
// (attention.Shape.CacheBytes each).
type Buffers struct {
	SrcK, SrcV []float32
	K, V       []float32
	KEnc, VEnc []byte
}

// Check verifies that b is large enough for p. Run assumes it passed.
func (p Params) Check(b Buffers) error {
	if err := p.Validate(); err != nil {
		return err
	}
	src := p.Hkv * p.Count() * p.D
	if len(b.SrcK) < src || len(b.SrcV) < src {
		return fmt.Errorf("source rows: %d and %d floats, %s needs %d", len(b.SrcK), len(b.SrcV), p.Op, src)
	}
	if p.KV == attention.F32 {
		if n := p.cache().CacheRows() * p.D; len(b.K) < n || len(b.V) < n {
			return fmt.Errorf("f32 cache: %d and %d floats, %d positions of %d heads need %d", len(b.K), len(b.V), p.Capacity(), p.Hkv, n)
		}
		return nil
	}
	if n := p.cache().CacheBytes(); len(b.KEnc) < n || len(b.VEnc) < n {
		return fmt.Errorf("%s cache: %d and %d bytes, %d positions of %d heads need %d", p.KV, len(b.KEnc), len(b.VEnc), p.Capacity(), p.Hkv, n)
	}
	return nil
}

// Work is the work model of one store: compulsory bytes only (a store
// does no arithmetic beyond its conversion).
type Work struct {
	Read, Written float64
}

// Bytes is all bytes moved: read + written.
func (w Work) Bytes() float64 { return w.Read + w.Written }

// Work returns the work model of p, n the tokens written:
//
//	read    2·Hkv·n·D·4          (the float32 K and V rows)
//	written 2·Hkv·n·D·e          (e = 4 f32, 2 f16, 34/32 q8_0)
func (p Params) Work() Work {
	rows := 2 * float64(p.Hkv) * float64(p.Count())
	return Work{Read: rows * float64(p.D) * 4, Written: rows * float64(p.KV.RowBytes(p.D))}
}

// WorkFormula states the model for `ckbench list`.
func WorkFormula() (read, written string) {
	return "2·Hkv·n·D·4 (float32 K and V rows; n = 1 for append, tokens for batch-copy)",
		"2·Hkv·n·D·e (e = 4 f32, 2 f16, 34/32 q8_0)"
}

// Alloc returns 64-byte aligned, zeroed buffers sized for p.
func Alloc(p Params) Buffers {
	src := p.Hkv * p.Count() * p.D
	b := Buffers{SrcK: buf.Floats(src), SrcV: buf.Floats(src)}
	if p.KV == attention.F32 {
		n := p.cache().CacheRows() * p.D
		b.K, b.V = buf.Floats(n), buf.Floats(n)
	} else {
		n := p.cache().CacheBytes()
		b.KEnc, b.VEnc = buf.Bytes(n), buf.Bytes(n)
	}
	return b
}

// FillRandom fills the rows a store reads with deterministic values in
// [-1, 1).
func FillRandom(b Buffers, seed uint64) {
	buf.FillUniform(b.SrcK, seed, -1, 1)
	buf.FillUniform(b.SrcV, seed+1, -1, 1)
}

// Row is the cache row (of Hkv·Capacity) holding position pos of KV head
// kh: attention.Shape.Row (TestRow), without building the Shape, which
// cost a token's append (~60 ns) a third of its time.
func (p Params) Row(kh, pos int) int {
	if p.Layout == attention.PosMajor {
		return pos*posHeads(p.PosHeads, p.Hkv) + kh
	}
	return kh*p.Capacity() + pos
}

// posHeads is the rows a position holds in a position-major cache.
func posHeads(posHeads, hkv int) int {
	if posHeads != 0 {
		return posHeads
	}
	return hkv
}
