// Package quant holds GGML's block quantization formats, byte for byte:
// the block layouts, the reference quantizers (GGML's quantize_row_*_ref,
// without importance matrix), the dequantizers, and the GEMV kernels that
// read them. The pure-Go functions are the contract the SIMD tiers are
// checked against; they round every float operation to float32 on its own
// (no fused multiply-add), as GGML's portable build does, so that they
// match GGML's bytes and floats exactly on every architecture.
//
// Float specials, the same in every tier (TestGemvSpecials and the fuzz
// targets check them against the generic tier):
//   - gemv-f32 is Σ w·x of the dequantized weights summed exactly and
//     rounded once (DotF32): NaN and ±Inf only where IEEE arithmetic on the
//     exact products gives them, and no overflow the true sum does not
//     have. The SIMD kernels' rows that come out NaN or ±Inf are recomputed
//     by that contract (gemvF32Asm).
//   - quantize-q8 stores a block of x that holds NaN or ±Inf with a NaN
//     scale and zero levels (see quantizeQ8_0), so gemv-q8 gives NaN for every
//     row; finite blocks are GGML's bytes.
//   - gemv-q8 sums GGML's float32 terms (a block's scales times its integer
//     dot). Where huge activations bring those partial sums near the
//     float32 range, whether a row overflows (to ±Inf, or NaN where
//     overflows of both signs meet) depends on the order of the additions,
//     which differs between tiers, as it does between GGML's own builds:
//     found by FuzzGemvSpecials (x = 2¹²⁷ three times, q4_K: generic −Inf,
//     AVX2 −1.97·10³⁸). Those rows' class is not part of the contract.
package quant

import (
	"fmt"
	"strings"
)

// Format is one GGML block format.
type Format uint8

const (
	Q4_0 Format = iota
	Q4_1
	Q5_0
	Q5_1
	Q8_0
	Q8_1
	Q4_K
	Q5_K
	Q6_K
	Q8_K
)

// QK is the 32-weight block of the legacy formats, QKK the 256-weight
// super-block of the K-quants.
const (
	QK  = 32
	QKK = 256
)

// FormatInfo describes a format's block.
type FormatInfo struct {
	Name   string
	Block  int    // weights per block
	Bytes  int    // bytes per block
	Act    Format // the 8-bit activation format its integer dot product takes
	Layout string // for ckbench list
	Weight bool   // a weight format (false: activation-only, Q8_1 and Q8_K)
}

var formats = [...]FormatInfo{
	Q4_0: {"q4_0", QK, 18, Q8_0, "f16 d; 16 B nibbles (low → i, high → i+16); x = d·(q−8)", true},
	Q4_1: {"q4_1", QK, 20, Q8_1, "f16 d, f16 m; nibbles as q4_0; x = d·q + m", true},
	Q5_0: {"q5_0", QK, 22, Q8_0, "f16 d; u32 qh (5th bits); nibbles; x = d·(q−16)", true},
	Q5_1: {"q5_1", QK, 24, Q8_1, "f16 d, f16 m; qh; nibbles; x = d·q + m", true},
	Q8_0: {"q8_0", QK, 34, Q8_0, "f16 d; 32 × i8; x = d·q", true},
	Q8_1: {"q8_1", QK, 36, Q8_1, "f16 d, f16 s = d·Σq; 32 × i8; x = d·q", false},
	Q4_K: {"q4_K", QKK, 144, Q8_K, "f16 d, f16 dmin; 12 B 6-bit scales+mins of 8 × 32; 128 B nibbles; x = d·sc·q − dmin·m", true},
	Q5_K: {"q5_K", QKK, 176, Q8_K, "as q4_K plus 32 B high bits", true},
	Q6_K: {"q6_K", QKK, 210, Q8_K, "128 B low 4 bits, 64 B high 2 bits, 16 × i8 scales, f16 d; x = d·sc·(q−32)", true},
	Q8_K: {"q8_K", QKK, 292, Q8_K, "f32 d; 256 × i8; 16 × i16 bsums (sums of 16); x = d·q", false},
}

// Info returns the description of f.
func (f Format) Info() FormatInfo { return formats[f] }

func (f Format) String() string { return formats[f].Name }

// RowBytes is the size of n weights in format f (n a multiple of the block).
func (f Format) RowBytes(n int) int { return n / formats[f].Block * formats[f].Bytes }

// Formats lists every format, weights first.
func Formats() []Format { return []Format{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q8_1, Q8_K} }

// WeightFormats lists the formats GEMV takes as weights.
func WeightFormats() []Format { return []Format{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K} }

// ParseFormat reads a format name (case-insensitive: q4_k or Q4_K).
func ParseFormat(s string) (Format, error) {
	for i, fi := range formats {
		if strings.EqualFold(fi.Name, s) {
			return Format(i), nil
		}
	}
	names := make([]string, len(formats))
	for i, fi := range formats {
		names[i] = fi.Name
	}
	return 0, fmt.Errorf("unknown format %q (known: %s)", s, strings.Join(names, ", "))
}

// CheckRow reports whether n weights fit f's blocks and buf holds them.
func (f Format) CheckRow(n, bufBytes int) error {
	fi := formats[f]
	if n <= 0 || n%fi.Block != 0 {
		return fmt.Errorf("%s: row length %d is not a positive multiple of the block size %d", fi.Name, n, fi.Block)
	}
	if bufBytes != f.RowBytes(n) {
		return fmt.Errorf("%s: %d weights take %d bytes, buffer holds %d", fi.Name, n, f.RowBytes(n), bufBytes)
	}
	return nil
}
