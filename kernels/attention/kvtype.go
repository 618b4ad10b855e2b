package attention

import (
	"encoding/binary"
	"fmt"

	"github.com/ckbench/ckbench/kernels/buf"
	"github.com/ckbench/ckbench/kernels/quant"
)

// Encode writes the float32 cache K, V of s into KEnc, VEnc in s.KV (f16
// rounded to nearest even, q8_0 with GGML's quantizer: byte-exact), then
// overwrites K and V with the values the encoded cache holds, so that the
// float64 Reference over K and V is the reference over the dequantized
// cache. Every row of the capacity is encoded. Nothing to do for F32.
func Encode(s Shape, b Buffers) error {
	if s.KV == F32 {
		return nil
	}
	rb, rows := s.KV.RowBytes(s.D), s.CacheRows()
	if len(b.KEnc) < rows*rb || len(b.VEnc) < rows*rb || len(b.K) < rows*s.D || len(b.V) < rows*s.D {
		return fmt.Errorf("encode %s cache: buffers too small for %d rows", s.KV, rows)
	}
	for _, kv := range []struct {
		x   []float32
		enc []byte
	}{{b.K, b.KEnc}, {b.V, b.VEnc}} {
		for r := range rows {
			x, e := kv.x[r*s.D:(r+1)*s.D], kv.enc[r*rb:(r+1)*rb]
			EncodeRow(s.KV, e, x)
			DecodeRow(s.KV, x, e)
		}
	}
	return nil
}

// EncodeRow writes the d = len(x) values of one cache row into dst
// (t.RowBytes(d) bytes): the store every KV-cache write performs.
func EncodeRow(t KVType, dst []byte, x []float32) {
	switch t {
	case F16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], quant.F32ToF16(v))
		}
	case Q8_0:
		if err := quant.Quantize(quant.Q8_0, dst, x); err != nil {
			panic(err) // d is a multiple of the block: Validate checked it
		}
	}
}

// DecodeRow expands one encoded row into dst (len(dst) values): f16
// widened exactly, q8_0 as GGML dequantizes it (d·q rounded to float32).
func DecodeRow(t KVType, dst []float32, src []byte) {
	switch t {
	case F16:
		for i := range dst {
			dst[i] = quant.F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case Q8_0:
		if err := quant.Dequantize(quant.Q8_0, dst, src[:t.RowBytes(len(dst))]); err != nil {
			panic(err) // d is a multiple of the block: Validate checked it
		}
	}
}

// QuantizeQuery writes the h query rows of d values in q, each quantized
// to q8_0 (GGML's quantizer, byte-exact), into dst: row i's RowBytes(d)
// bytes at byte 4·d·i, so that the quantized rows sit where the float rows
// would (the kernels address both alike). A q8_0 cache's Q·K is an int8
// dot against these (see the package doc).
func QuantizeQuery(dst, q []float32, h, d int) {
	db := buf.BytesOf(dst[:h*d])
	for i := range h {
		EncodeRow(Q8_0, db[4*d*i:4*d*i+Q8_0.RowBytes(d)], q[i*d:(i+1)*d])
	}
}

// QueryAsRead is the query the kernels read for a cache of type t: q
// itself, or for q8_0 its q8_0 round trip (a new slice), the values the
// int8 dot multiplies. The reference takes it in place of q.
func QueryAsRead(t KVType, q []float32, d int) []float32 {
	if t != Q8_0 {
		return q
	}
	out := make([]float32, len(q))
	enc := make([]byte, Q8_0.RowBytes(d))
	for i := 0; i+d <= len(q); i += d {
		EncodeRow(Q8_0, enc, q[i:i+d])
		DecodeRow(Q8_0, out[i:i+d], enc)
	}
	return out
}

// kvSrc is the rows of one KV head a kernel reads, in its element type,
// rs cache rows apart (1 head-major, Hkv position-major).
type kvSrc struct {
	f32 []float32 // F32: the rows
	enc []byte    // F16, Q8_0: the encoded rows
	typ KVType
	d   int
	rs  int
}

// rowLen is the length of one row in f32 or enc elements.
func (s kvSrc) rowLen() int {
	if s.typ == F32 {
		return s.d
	}
	return s.typ.RowBytes(s.d)
}

// span is the elements (floats or bytes) from the first of n rows to the
// end of the last.
func (s kvSrc) span(n int) int { return spanLen(n, s.rs, s.rowLen()) }

// strideBytes is the byte distance from one row to the next.
func (s kvSrc) strideBytes() int { return s.rs * s.typ.RowBytes(s.d) }

// rows returns rows [j0, j0+cnt) as contiguous float32: the cache itself
// for a head-major f32 cache, else decoded or gathered into scratch
// (cnt·d floats).
func (s kvSrc) rows(scratch []float32, j0, cnt int) []float32 {
	if s.typ == F32 && s.rs == 1 {
		return s.f32[j0*s.d : (j0+cnt)*s.d]
	}
	for j := range cnt {
		if s.typ == F32 {
			at := (j0 + j) * s.rs * s.d
			copy(scratch[j*s.d:(j+1)*s.d], s.f32[at:at+s.d])
		} else {
			DecodeRow(s.typ, scratch[j*s.d:(j+1)*s.d], s.encRow(j0+j))
		}
	}
	return scratch[:cnt*s.d]
}

// encRow is encoded row j (F16, Q8_0).
func (s kvSrc) encRow(j int) []byte {
	rl := s.rowLen()
	return s.enc[j*s.rs*rl : j*s.rs*rl+rl]
}

// sub is rows [lo, hi).
func (s kvSrc) sub(lo, hi int) kvSrc {
	a, b := lo*s.rs*s.rowLen(), lo*s.rs*s.rowLen()+s.span(hi-lo)
	if s.typ == F32 {
		s.f32 = s.f32[a:b]
	} else {
		s.enc = s.enc[a:b]
	}
	return s
}

// kvOf is the window of KV head kh in x (K or V) or xe (KEnc or VEnc).
func (s Shape) kvOf(x []float32, xe []byte, kh int) kvSrc {
	if s.KV == F32 {
		return kvSrc{f32: s.KVRows(x, kh), typ: F32, d: s.D, rs: s.PosStride()}
	}
	return kvSrc{enc: s.KVRowBytes(xe, kh), typ: s.KV, d: s.D, rs: s.PosStride()}
}
