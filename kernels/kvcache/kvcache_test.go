package kvcache

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/ckbench/ckbench/kernels/attention"
	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/isa/isatest"
)

// specials are values a store must write as the contract does in every
// tier: NaN (quiet and signalling), ±Inf, ±0, float32 denormals, values
// that round to f16's largest finite, to +Inf, to an f16 denormal, and ties.
var specials = []float32{
	float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc12345),
	float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
	math.Float32frombits(1), 65504, 65519.99, 65520, -70000, 6e-8, 3e-5,
	1 + 1.0/2048, 1 + 3.0/2048, // ties: to even down, to even up
}

// fill writes deterministic values into the rows a store reads; with
// withSpecials, a few of them are replaced by specials.
func fill(b Buffers, seed uint64, withSpecials bool) {
	buf.FillUniform(b.SrcK, seed, -3, 3)
	buf.FillUniform(b.SrcV, seed+1, -3, 3)
	if withSpecials {
		for i, v := range specials {
			b.SrcK[(i*37)%len(b.SrcK)] = v
			b.SrcV[(i*53)%len(b.SrcV)] = v
		}
	}
}

// want is the cache after p: the guard pattern everywhere, the rows
// written as attention.EncodeRow writes them (f32: the values).
func want(p Params, b Buffers, guard byte) (k, v []byte) {
	c := p.cache()
	rb, d, n := p.KV.RowBytes(p.D), p.D, p.Count()
	size := c.CacheBytes()
	k, v = bytes.Repeat([]byte{guard}, size), bytes.Repeat([]byte{guard}, size)
	for _, x := range []struct {
		src []float32
		dst []byte
	}{{b.SrcK, k}, {b.SrcV, v}} {
		for kh := range p.Hkv {
			for j := range n {
				r := c.Row(kh, p.Pos+j)
				row := x.src[(kh*n+j)*d : (kh*n+j+1)*d]
				if p.KV == attention.F32 {
					for i, f := range row {
						bits := math.Float32bits(f)
						x.dst[r*rb+4*i], x.dst[r*rb+4*i+1], x.dst[r*rb+4*i+2], x.dst[r*rb+4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
					}
					continue
				}
				attention.EncodeRow(p.KV, x.dst[r*rb:(r+1)*rb], row)
			}
		}
	}
	return k, v
}

// cacheBytes is the cache of b as bytes (f32 as little-endian floats).
func cacheBytes(p Params, b Buffers) (k, v []byte) {
	if p.KV != attention.F32 {
		return b.KEnc, b.VEnc
	}
	conv := func(x []float32) []byte {
		out := make([]byte, 4*len(x))
		for i, f := range x {
			bits := math.Float32bits(f)
			out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
		}
		return out
	}
	return conv(b.K), conv(b.V)
}

// guardCache fills the cache with a byte pattern the stores must leave
// wherever they do not write.
func guardCache(b Buffers, guard byte) {
	for _, x := range [][]byte{b.KEnc, b.VEnc} {
		for i := range x {
			x[i] = guard
		}
	}
	g := math.Float32frombits(uint32(guard) * 0x01010101)
	for _, x := range [][]float32{b.K, b.V} {
		for i := range x {
			x[i] = g
		}
	}
}

func cases() []Params {
	var ps []Params
	for _, op := range Ops {
		for _, kv := range attention.KVTypes {
			for _, l := range attention.Layouts {
				// hd 32: a row shorter than the stores' eight-vector step.
				for _, d := range []int{32, 64, 96, 128, 256} {
					ts := []int{1, 3, 17}
					if d == 256 {
						// More positions than a position-major block of
						// f32 (85 here) or f16 (170), not a multiple.
						ts = append(ts, 200)
					}
					for _, t := range ts {
						for _, pos := range []int{0, 5} {
							ps = append(ps, Params{Op: op, Hkv: 3, D: d, KV: kv, Layout: l, Pos: pos, Tokens: t, Cap: pos + t + 2})
						}
					}
				}
			}
		}
	}
	return ps
}

// TestStores: every tier writes, byte for byte, what the contract writes
// (f16 rounded to nearest even, q8_0 GGML's quantizer, f32 the values,
// specials included) into exactly the rows of the store, in both layouts.
func TestStores(t *testing.T) {
	// The default blocks on every CPU, so that cases' 200 positions span
	// more than one (a CPU may take larger ones: zen4PosBlocksOn).
	defer func(b int) { posBlockBytes = b }(posBlockBytes)
	posBlockBytes = defaultPosBlockBytes
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, p := range cases() {
			name := fmt.Sprintf("%s/%s/%s/hd=%d/n=%d/pos=%d", p.Op, p.KV, p.Layout, p.D, p.Count(), p.Pos)
			t.Run(name, func(t *testing.T) { checkStore(t, im, p, uint64(p.D+p.Pos), p.D == 128) })
			if im.copyAlt.asm != nil && p.KV == attention.F32 { // the tier's other f32 copy too
				alt := im
				alt.copy = im.copyAlt
				t.Run(name+"/other-copy", func(t *testing.T) { checkStore(t, alt, p, uint64(p.D+p.Pos), p.D == 128) })
			}
		}
	})
}

// checkStore runs p in tier im over a cache full of a guard byte and
// sources filled from seed (with specials, if asked), and fails t at the
// first cache byte that differs from what the contract writes there.
func checkStore(t *testing.T, im Impl, p Params, seed uint64, withSpecials bool) {
	t.Helper()
	b := Alloc(p)
	fill(b, seed, withSpecials)
	guardCache(b, 0xa5)
	if err := p.Check(b); err != nil {
		t.Fatal(err)
	}
	im.Run(&p, &b)
	wk, wv := want(p, b, 0xa5)
	gk, gv := cacheBytes(p, b)
	for _, c := range []struct {
		name      string
		got, want []byte
	}{{"k", gk, wk}, {"v", gv, wv}} {
		if i := firstDiff(c.got, c.want); i >= 0 {
			rb := p.KV.RowBytes(p.D)
			t.Fatalf("%+v: %s cache byte %d (row %d, byte %d of the row): %#02x, want %#02x", p, c.name, i, i/rb, i%rb, c.got[i], c.want[i])
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func TestNoAllocs(t *testing.T) {
	isatest.Run(t, Impls(), func(t *testing.T, im Impl) {
		for _, op := range Ops {
			for _, kv := range attention.KVTypes {
				p := Params{Op: op, Hkv: 8, D: 128, KV: kv, Pos: 7, Tokens: 9, Layout: attention.Layout(kv % 2)}
				b := Alloc(p)
				fill(b, 1, false)
				if n := testing.AllocsPerRun(10, func() { im.Run(&p, &b) }); n != 0 {
					t.Errorf("%s %s allocates %.0f times per call", op, kv, n)
				}
			}
		}
	})
}

func TestValidate(t *testing.T) {
	bad := map[string]Params{
		"op":       {Op: "append-all", Hkv: 8, D: 128},
		"hd":       {Op: Append, Hkv: 8, D: 72},
		"q8 hd":    {Op: Append, Hkv: 8, D: 80, KV: attention.Q8_0},
		"heads":    {Op: Append, Hkv: 0, D: 128},
		"pos":      {Op: Append, Hkv: 8, D: 128, Pos: -1},
		"overflow": {Op: BatchCopy, Hkv: 8, D: 128, Pos: 10, Tokens: 10, Cap: 15},
	}
	for name, p := range bad {
		if err := p.Validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, p)
		}
	}
	if err := (Params{Op: BatchCopy, Hkv: 8, D: 128, Pos: 10, Tokens: 6, Cap: 16}).Validate(); err != nil {
		t.Errorf("a store that fits: %v", err)
	}
}

func TestWork(t *testing.T) {
	for _, c := range []struct {
		kv attention.KVType
		e  float64
	}{{attention.F32, 4}, {attention.F16, 2}, {attention.Q8_0, 34.0 / 32}} {
		p := Params{Op: BatchCopy, Hkv: 8, D: 128, KV: c.kv, Tokens: 512}
		w := p.Work()
		if w.Read != 2*8*512*128*4 || w.Written != 2*8*512*128*c.e {
			t.Errorf("%s: %+v", c.kv, w)
		}
		p.Op = Append
		if w := p.Work(); w.Read != 2*8*128*4 || w.Written != 2*8*128*c.e {
			t.Errorf("append %s: %+v", c.kv, w)
		}
	}
}

// TestRow: the stores' row arithmetic is attention's.
func TestRow(t *testing.T) {
	for _, l := range attention.Layouts {
		for _, ph := range []int{0, 5} { // a block of 3 heads of 5, position-major
			p := Params{Op: BatchCopy, Hkv: 3, D: 64, Pos: 2, Tokens: 4, Cap: 9, Layout: l}
			if l == attention.PosMajor {
				p.PosHeads = ph
			}
			for kh := range p.Hkv {
				for pos := range p.Capacity() {
					if got, want := p.Row(kh, pos), p.cache().Row(kh, pos); got != want {
						t.Fatalf("%s (heads per position %d) head %d position %d: row %d, attention's %d", l, ph, kh, pos, got, want)
					}
				}
			}
		}
	}
}

// TestAVX2IsVEX: no AVX2 kernel uses a register only AVX-512 has (it would
// pass here on an AVX-512 machine and fault on an AVX2-only one).
func TestAVX2IsVEX(t *testing.T) { isatest.VEXOnly(t, "store_amd64.s") }

// FuzzStores: on a store of any shape Validate accepts (op, KV type,
// layout, KV heads, head dim, tokens, position, spare capacity,
// position-major heads beyond Hkv), every tier this CPU runs writes,
// byte for byte, what the contract writes, and nothing else: specials
// included, blocks of positions and their remainders included.
func FuzzStores(f *testing.F) {
	f.Add(uint8(1), uint8(0), uint8(1), uint8(8), uint8(8), uint16(200), uint8(3), uint8(2), uint8(0), uint64(1))
	f.Add(uint8(1), uint8(2), uint8(1), uint8(3), uint8(1), uint16(77), uint8(0), uint8(0), uint8(2), uint64(2))
	f.Add(uint8(0), uint8(1), uint8(0), uint8(5), uint8(4), uint16(1), uint8(9), uint8(1), uint8(1), uint64(3))
	f.Fuzz(func(t *testing.T, op, kv, layout, hkv, d16 uint8, tokens uint16, pos, spare, extraHeads uint8, seed uint64) {
		p := Params{
			Op: Ops[int(op)%len(Ops)], KV: attention.KVTypes[int(kv)%len(attention.KVTypes)],
			Layout: attention.Layouts[int(layout)%len(attention.Layouts)],
			Hkv:    1 + int(hkv)%9, D: 16 * (1 + int(d16)%16), Tokens: 1 + int(tokens)%300, Pos: int(pos) % 32,
		}
		p.Cap = p.Pos + p.Count() + int(spare)%4
		if p.Layout == attention.PosMajor {
			p.PosHeads = p.Hkv + int(extraHeads)%3
		}
		if p.Validate() != nil {
			t.Skip()
		}
		isatest.Run(t, Impls(), func(t *testing.T, im Impl) { checkStore(t, im, p, seed, seed%2 == 0) })
	})
}
