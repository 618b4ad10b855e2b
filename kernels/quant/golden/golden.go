// Package golden checks kernels/quant against a folder of GGML golden
// vectors (the format of ../shared/golden: index.json plus raw
// little-endian files): identical quantized bytes, bit-identical
// dequantized floats, and dot products within a relative tolerance of the
// float64 dot of the dequantized values. `ckbench verify quant` and the
// package's tests both run it.
package golden

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/ckbench/ckbench/kernels/quant"
)

// Index is the part of index.json the checks read.
type Index struct {
	GGMLCommit string `json:"ggml_repo_commit"`
	Input      struct {
		File  string `json:"file"`
		Shape [2]int `json:"shape"`
	} `json:"input"`
	Activations struct {
		File  string `json:"file"`
		Shape [2]int `json:"shape"`
	} `json:"activations"`
	ActQuant map[string]FormatEntry `json:"act_quant"`
	Formats  map[string]FormatEntry `json:"formats"`
}

// FormatEntry is one format's files.
type FormatEntry struct {
	File      string `json:"file"` // act_quant: the quantized activations
	QuantFile string `json:"quant_file"`
	Dequant   string `json:"dequant_file"`
	Rows      int    `json:"rows"`
	RowBytes  int    `json:"row_bytes"`
	VecDot    *struct {
		Fn      string      `json:"fn"`
		ActType string      `json:"act_type"`
		N       int         `json:"n"`
		File    string      `json:"file"` // f32 simd_native[acts][rows], f32 generic_scalar[acts][rows], f64 ref[acts][rows]
		Ref     [][]float64 `json:"ref_f64_dequant_dot"`
		Native  [][]float64 `json:"simd_native"`
		Generic [][]float64 `json:"generic_scalar"`
	} `json:"vec_dot"`
}

// Result is one check of one format and row.
type Result struct {
	Format string
	Row    int    // weight row (act row for activation formats)
	Act    int    // activation row of a dot product, -1 otherwise
	Check  string // "quant", "dequant", "dot"
	OK     bool
	Detail string  // what differed, or the error found
	Tol    float64 // dot: the relative tolerance applied
}

// DotTolerance is the relative tolerance of a dot product against the
// float64 dot of the dequantized values; CancellationTolerance applies to
// the pairs whose terms cancel (Cancellation), where any float32 summation
// order moves the result in its fourth digit. In GGML's golden data that is
// one pair: q4_K weight row 6 (×1024) with activation row 1 (a spike of
// −30), Σ|w·a| / |Σ w·a| ≈ 46 000; GGML's own SIMD and scalar dots miss the
// float64 value by 1.5e-4 and 3.2e-4 there.
const (
	DotTolerance          = 1e-5
	CancellationTolerance = 1e-3
)

// Cancellation reports whether the dot of w and a cancels heavily:
// Σ|w·a| is more than 1000 × |Σ w·a|.
func Cancellation(w, a []float32) bool {
	var s, sa float64
	for i := range w {
		p := float64(w[i]) * float64(a[i])
		s += p
		sa += math.Abs(p)
	}
	return sa > 1000*math.Abs(s)
}

// Load reads index.json of dir.
func Load(dir string) (*Index, error) {
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, err
	}
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("%s: not a golden index: %v", filepath.Join(dir, "index.json"), err)
	}
	if len(ix.Formats) == 0 || ix.Input.File == "" {
		return nil, fmt.Errorf("%s: no formats or input listed", filepath.Join(dir, "index.json"))
	}
	return &ix, nil
}

func readFloats(path string, n int) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) != 4*n {
		return nil, fmt.Errorf("%s: %d bytes, want %d float32", path, len(b), n)
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x, nil
}

func readBytes(path string, n int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) != n {
		return nil, fmt.Errorf("%s: %d bytes, want %d", path, len(b), n)
	}
	return b, nil
}

// Verify runs every check of dir's golden data. An error means the folder
// could not be read; mismatches are Results with OK false.
func Verify(dir string) ([]Result, error) {
	ix, err := Load(dir)
	if err != nil {
		return nil, err
	}
	rows, cols := ix.Input.Shape[0], ix.Input.Shape[1]
	input, err := readFloats(filepath.Join(dir, ix.Input.File), rows*cols)
	if err != nil {
		return nil, err
	}
	arows := ix.Activations.Shape[0]
	act, err := readFloats(filepath.Join(dir, ix.Activations.File), arows*cols)
	if err != nil {
		return nil, err
	}
	var out []Result
	// The activation formats first: the dot products use them.
	actQ, actDQ := map[string][]byte{}, map[string][]float32{}
	// A format whose files cannot be read (missing, truncated) fails its
	// own checks, naming the file; the other formats are still checked.
	for _, name := range sortedKeys(ix.ActQuant) {
		e := ix.ActQuant[name]
		res, q, err := checkRows(dir, name, e.File, e.Dequant, act, arows, cols)
		if err != nil {
			out = append(out, fileFailure(name, err))
			continue
		}
		if actDQ[name], err = readFloats(filepath.Join(dir, e.Dequant), arows*cols); err != nil {
			out = append(out, fileFailure(name, err))
			continue
		}
		actQ[name] = q
		out = append(out, res...)
	}
	for _, name := range sortedKeys(ix.Formats) {
		e := ix.Formats[name]
		res, q, err := checkRows(dir, name, e.QuantFile, e.Dequant, input, rows, cols)
		if err != nil {
			out = append(out, fileFailure(name, err))
			continue
		}
		out = append(out, res...)
		if e.VecDot == nil {
			continue
		}
		wdq, err := readFloats(filepath.Join(dir, e.Dequant), rows*cols)
		if err != nil {
			out = append(out, fileFailure(name, err))
			continue
		}
		ref, err := readVecDot(dir, e, rows)
		if err != nil {
			out = append(out, fileFailure(name, err))
			continue
		}
		out = append(out, checkDots(name, e, ref, q, actQ, wdq, actDQ[e.VecDot.ActType], rows, cols)...)
	}
	return out, nil
}

// fileFailure is the one failed check of a format whose files could not
// be read.
func fileFailure(name string, err error) Result {
	return Result{Format: name, Row: -1, Act: -1, Check: "files", Detail: err.Error()}
}

// readVecDot reads a format's .vecdot.bin: f32 simd_native[acts][rows],
// f32 generic_scalar[acts][rows], then f64 ref[acts][rows] (the float64
// dot of the dequantized values). The file, not the copy of its numbers
// in index.json, is what the dots are checked against; the two must
// agree, or the folder is corrupt.
func readVecDot(dir string, e FormatEntry, rows int) ([][]float64, error) {
	vd := e.VecDot
	acts := len(vd.Ref)
	if vd.File == "" {
		return nil, fmt.Errorf("index.json names no vecdot file for %s", vd.Fn)
	}
	n := acts * rows
	path := filepath.Join(dir, vd.File)
	b, err := readBytes(path, n*(4+4+8))
	if err != nil {
		return nil, err
	}
	ref := make([][]float64, acts)
	for a := range acts {
		ref[a] = make([]float64, rows)
		for r := range rows {
			i := a*rows + r
			native := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			generic := math.Float32frombits(binary.LittleEndian.Uint32(b[4*n+4*i:]))
			ref[a][r] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*n+8*i:]))
			if !sameAs(ref[a][r], vd.Ref[a][r], 1e-12) || !sameAs(float64(native), vd.Native[a][r], 1e-6) || !sameAs(float64(generic), vd.Generic[a][r], 1e-6) {
				return nil, fmt.Errorf("%s: act %d row %d holds %v/%v/%v, index.json %v/%v/%v: the file is corrupt",
					path, a, r, native, generic, ref[a][r], vd.Native[a][r], vd.Generic[a][r], vd.Ref[a][r])
			}
		}
	}
	return ref, nil
}

// sameAs compares a value read from a file with its decimal copy in
// index.json, to the precision the copy was printed with.
func sameAs(file, index, rel float64) bool {
	return math.Abs(file-index) <= rel*max(math.Abs(index), 1e-30)
}

// checkRows quantizes each row of x with GGML's reference quantizer of
// format name and compares bytes with quantFile, then dequantizes GGML's
// bytes and compares float bits with dequantFile.
func checkRows(dir, name, quantFile, dequantFile string, x []float32, rows, cols int) ([]Result, []byte, error) {
	f, err := quant.ParseFormat(name)
	if err != nil {
		return nil, nil, fmt.Errorf("golden format %s: %v", name, err)
	}
	rb := f.RowBytes(cols)
	want, err := readBytes(filepath.Join(dir, quantFile), rows*rb)
	if err != nil {
		return nil, nil, err
	}
	wantDQ, err := readFloats(filepath.Join(dir, dequantFile), rows*cols)
	if err != nil {
		return nil, nil, err
	}
	var out []Result
	got := make([]byte, rb)
	dq := make([]float32, cols)
	for r := range rows {
		res := Result{Format: name, Row: r, Act: -1, Check: "quant", OK: true}
		if err := quant.Quantize(f, got, x[r*cols:(r+1)*cols]); err != nil {
			res.OK, res.Detail = false, err.Error()
		} else if i := firstDiff(got, want[r*rb:(r+1)*rb], unspecified(f, want[r*rb:(r+1)*rb])); i >= 0 {
			fi := f.Info()
			res.OK = false
			res.Detail = fmt.Sprintf("byte %d (block %d, offset %d): got %#02x, GGML %#02x", i, i/fi.Bytes, i%fi.Bytes, got[i], want[r*rb+i])
		}
		out = append(out, res)
		res = Result{Format: name, Row: r, Act: -1, Check: "dequant", OK: true}
		if err := quant.Dequantize(f, dq, want[r*rb:(r+1)*rb]); err != nil {
			res.OK, res.Detail = false, err.Error()
		} else {
			for i, v := range dq {
				if w := wantDQ[r*cols+i]; math.Float32bits(v) != math.Float32bits(w) {
					res.OK = false
					res.Detail = fmt.Sprintf("element %d: got %v (%#08x), GGML %v (%#08x)", i, v, math.Float32bits(v), w, math.Float32bits(w))
					break
				}
			}
		}
		out = append(out, res)
	}
	return out, want, nil
}

// checkDots compares the integer dot product of GGML's weight bytes and
// GGML's activation bytes with the float64 dot of their dequantized values.
func checkDots(name string, e FormatEntry, ref [][]float64, wq []byte, actQ map[string][]byte, wdq, adq []float32, rows, cols int) []Result {
	f, _ := quant.ParseFormat(name)
	af, err := quant.ParseFormat(e.VecDot.ActType)
	var out []Result
	aq, ok := actQ[e.VecDot.ActType]
	rb, ab := f.RowBytes(cols), af.RowBytes(cols)
	for a := range len(ref) {
		for r := range rows {
			res := Result{Format: name, Row: r, Act: a, Check: "dot", OK: true}
			switch {
			case err != nil || !ok:
				res.OK, res.Detail = false, fmt.Sprintf("no activations in %s", e.VecDot.ActType)
			default:
				got, derr := quant.DotQ8(f, wq[r*rb:(r+1)*rb], aq[a*ab:(a+1)*ab], cols)
				want := ref[a][r]
				tol := DotTolerance
				if len(adq) > 0 && Cancellation(wdq[r*cols:(r+1)*cols], adq[a*cols:(a+1)*cols]) {
					tol = CancellationTolerance
				}
				res.Tol = tol
				rel := math.Abs(float64(got)-want) / max(math.Abs(want), 1e-30)
				if want == 0 {
					rel = math.Abs(float64(got))
				}
				if derr != nil {
					res.OK, res.Detail = false, derr.Error()
				} else if rel > tol {
					res.OK = false
					res.Detail = fmt.Sprintf("got %.9g, float64 dot %.9g: relative error %.2g > %.0e", got, want, rel, tol)
				} else {
					res.Detail = fmt.Sprintf("relative error %.2g (≤ %.0e)", rel, tol)
				}
			}
			out = append(out, res)
		}
	}
	return out
}

// unspecified marks the bytes GGML leaves uninitialized: the bsums of a
// Q8_K super-block that is all zero (quantize_row_q8_K_ref sets d and qs
// and skips the rest). They are not compared.
func unspecified(f quant.Format, row []byte) func(int) bool {
	if f != quant.Q8_K {
		return func(int) bool { return false }
	}
	bs := f.Info().Bytes
	return func(i int) bool {
		blk := row[i/bs*bs:]
		off := i % bs
		return off >= 4+quant.QKK && binary.LittleEndian.Uint32(blk) == 0
	}
}

func firstDiff(a, b []byte, skip func(int) bool) int {
	for i := range a {
		if a[i] != b[i] && !skip(i) {
			return i
		}
	}
	return -1
}

func sortedKeys(m map[string]FormatEntry) []string {
	keys := make([]string, 0, len(m))
	for _, f := range quant.Formats() { // the package's order
		if _, ok := m[f.String()]; ok {
			keys = append(keys, f.String())
		}
	}
	return keys
}
