// Package vecgen holds the avo emitters the kernel generators share: the
// AVX2 and AVX-512 tiers as register width, a table of broadcast constants,
// the softmax exponentials (CKE's fast polynomial and an accurate one) and
// horizontal reductions. Each generator (kernels/*/_asm, each its own
// module) calls EmitConsts once per output file and these from its kernels.
package vecgen

import (
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Tier is one vector ISA level: the AVX2 and AVX-512 kernels share every
// line of generator code except where the ISAs differ (register width, the
// 512→256 fold of a reduction, and 2^n scaling in the exact exp).
type Tier struct {
	Name string // suffix of the generated function names
	W    int    // float32 lanes per vector
	Vec  func() VecVirtual
}

var (
	AVX2   = Tier{Name: "AVX2", W: 8, Vec: YMM}
	AVX512 = Tier{Name: "AVX512", W: 16, Vec: ZMM}
)

// VB is the size of one vector in bytes.
func (t Tier) VB() int { return 4 * t.W }

// Broadcast constants, one 64-byte row each, so that a ymm or zmm memory
// operand at row i reads 8 or 16 copies of the value.
const (
	CNegInf = iota
	COne
	CLog2e
	CBias127 // int32
	CFastLo
	CFastHi
	CFastC1
	CFastC2
	CFastC3
	CFastC4
	CExactLo  // below this exp(x) is flushed to 0 (AVX2)
	CExactLoZ // clamp for AVX-512, where VSCALEFPS underflows gracefully
	CExactHi  // exp(88) < MaxFloat32
	CLn2Hi    // ln 2 = CLn2Hi + CLn2Lo (Cody–Waite)
	CLn2Lo
	CP0 // Cephes expf polynomial: e^r ≈ 1 + r + r²·P(r)
	CP1
	CP2
	CP3
	CP4
	CP5
	CZero
	CReduceIdx // int32 lane indices for reduce8Z
	CLaneIdx   // int32 0, 1, …, 15: lane numbers, for tail masks
	CNegMax    // −MaxFloat32
	CI16One    // int16 1s (0x00010001 per 32-bit lane): VPMADDWD's pair sums
	nConsts
)

var constTable Mem

// reduceIdx picks lane 0 of each 128-bit lane, then lane 1 (see reduce8Z).
var reduceIdx = [16]uint32{0, 4, 8, 12, 1, 5, 9, 13}

// Begin starts the file a generator writes: the target pinned so the
// output does not depend on the host (avo loads the package for type
// information, mmcloughlin/avo#450), the package whose stubs the kernels
// implement (Implement takes each signature from there, so a stub and its
// asm cannot disagree), the !purego constraint, and the constant table
// under the symbol consts.
func Begin(pkg, consts string) {
	os.Setenv("GOOS", "linux")
	os.Setenv("GOARCH", "amd64")
	Package(pkg)
	ConstraintExpr("!purego")
	EmitConsts(consts)
}

// EmitConsts writes the constant table as the read-only symbol name; call
// it once per generated file, before any kernel.
func EmitConsts(name string) {
	vals := [nConsts]uint32{
		CNegInf:   math.Float32bits(float32(math.Inf(-1))),
		COne:      math.Float32bits(1),
		CLog2e:    math.Float32bits(math.Log2E),
		CBias127:  127,
		CFastLo:   math.Float32bits(-88),
		CFastHi:   math.Float32bits(88),
		CFastC1:   math.Float32bits(0.6931471805599453),
		CFastC2:   math.Float32bits(0.2402265069591007),
		CFastC3:   math.Float32bits(0.05550410866482158),
		CFastC4:   math.Float32bits(0.009618129107628478),
		CExactLo:  math.Float32bits(-87.33654), // ln(2^-126): smallest normal result
		CExactLoZ: math.Float32bits(-104),      // e^-104 < 2^-149: underflows to 0
		CExactHi:  math.Float32bits(88),
		CLn2Hi:    math.Float32bits(0.693359375),
		CLn2Lo:    math.Float32bits(-2.12194440e-4),
		CP0:       math.Float32bits(1.9875691500e-4),
		CP1:       math.Float32bits(1.3981999507e-3),
		CP2:       math.Float32bits(8.3334519073e-3),
		CP3:       math.Float32bits(4.1665795894e-2),
		CP4:       math.Float32bits(1.6666665459e-1),
		CP5:       math.Float32bits(5.0000001201e-1),
		CZero:     0,
		CNegMax:   math.Float32bits(-math.MaxFloat32),
		CI16One:   0x00010001,
	}
	constTable = GLOBL(name, RODATA|NOPTR)
	for i, v := range vals {
		for lane := 0; lane < 16; lane++ {
			switch i {
			case CReduceIdx:
				v = reduceIdx[lane]
			case CLaneIdx:
				v = uint32(lane)
			}
			DATA(64*i+4*lane, U32(v))
		}
	}
}

// KC is the memory operand of broadcast constant i.
func KC(i int) Mem { return constTable.Offset(64 * i) }

var labels = map[string]int{}

// NewLabel returns a fresh label name with the given stem.
func NewLabel(stem string) string {
	labels[stem]++
	return fmt.Sprintf("%s_%d", stem, labels[stem])
}

// clamp limits x to [lo, hi] (constants) and lets NaN through: x is the
// second source of VMAXPS/VMINPS, which is what they return when either
// source is NaN. (With the constant as a memory operand, the only form
// that takes one, NaN would become lo: a NaN score turned into a weight.)
func (t Tier) Clamp(x VecVirtual, lo, hi int) {
	c := t.Vec()
	VMOVUPS(KC(lo), c)
	VMAXPS(x, c, x)
	VMOVUPS(KC(hi), c)
	VMINPS(x, c, x)
}

// expFast overwrites x with CKE's polynomial exp of x (DESIGN.md §1); NaN
// stays NaN.
func (t Tier) ExpFast(x VecVirtual) {
	t.Clamp(x, CFastLo, CFastHi)
	VMULPS(KC(CLog2e), x, x) // z
	n := t.Vec()
	VCVTPS2DQ(x, n) // round to nearest even (MXCSR default)
	nf := t.Vec()
	VCVTDQ2PS(n, nf)
	VSUBPS(nf, x, x) // f = z - n
	p := t.Vec()
	VMOVUPS(KC(CFastC4), p)
	VFMADD213PS(KC(CFastC3), x, p)
	VFMADD213PS(KC(CFastC2), x, p)
	VFMADD213PS(KC(CFastC1), x, p)
	VFMADD213PS(KC(COne), x, p)
	VPADDD(KC(CBias127), n, n)
	VPSLLD(Imm(23), n, n) // 2^n in the exponent field; n = -127 gives +0
	VMULPS(n, p, x)
}

// expExact overwrites x with an accurate exp (≤ 2 ulp): Cody–Waite range
// reduction x = n·ln2 + r with ln 2 split in two constants, then the Cephes
// degree-5 minimax polynomial for e^r on |r| ≤ ln2/2, then a scale by 2^n.
// NaN stays NaN; −Inf gives 0.
func (t Tier) ExpExact(x VecVirtual) {
	var keep VecVirtual
	if t.W == 16 {
		t.Clamp(x, CExactLoZ, CExactHi)
	} else {
		keep = t.Vec()
		VCMPPS(Imm(0x05), KC(CExactLo), x, keep) // !(x < lo) (NLT_US): false for -Inf, true for NaN
		t.Clamp(x, CExactLo, CExactHi)
	}
	nf := t.Vec()
	VMULPS(KC(CLog2e), x, nf)
	n := t.Vec()
	VCVTPS2DQ(nf, n)
	VCVTDQ2PS(n, nf)
	VFNMADD231PS(KC(CLn2Hi), nf, x) // r = x - n·ln2hi
	VFNMADD231PS(KC(CLn2Lo), nf, x) //   - n·ln2lo
	p := t.Vec()
	VMOVUPS(KC(CP0), p)
	for _, c := range []int{CP1, CP2, CP3, CP4, CP5} {
		VFMADD213PS(KC(c), x, p)
	}
	r2 := t.Vec()
	VMULPS(x, x, r2)
	VFMADD213PS(x, r2, p) // r²·P(r) + r
	VADDPS(KC(COne), p, p)
	if t.W == 16 {
		VSCALEFPS(nf, p, x) // p·2^n, underflowing to denormals and 0
		return
	}
	VPADDD(KC(CBias127), n, n)
	VPSLLD(Imm(23), n, n)
	VMULPS(n, p, x)
	VANDPS(keep, x, x) // flush results below the smallest normal to 0
}

// ExpName is the infix of a kernel's name for its exp: Fast or Exact.
func ExpName(fast bool) string {
	if fast {
		return "Fast"
	}
	return "Exact"
}

func (t Tier) Exp(fast bool, x VecVirtual) {
	if fast {
		t.ExpFast(x)
	} else {
		t.ExpExact(x)
	}
}

// fold256 returns a ymm holding the pairwise sum (or max) of the two halves
// of a zmm; for AVX2 it returns v itself.
func (t Tier) Fold256(v VecVirtual, op func(...Op)) Register {
	if t.W == 8 {
		return v
	}
	hi := YMM()
	VEXTRACTF64X4(Imm(1), v, hi)
	op(hi, v.AsY(), hi)
	return hi
}

// hreduce folds all lanes of v with op (VADDPS or VMAXPS) into lane 0 of
// the returned xmm.
func (t Tier) HReduce(v VecVirtual, op func(...Op)) VecVirtual {
	return t.HReduce128(t.Fold256(v, op), op)
}

// The AVX-512 tier may be given registers 16–31, which only EVEX encodings
// reach: it must use EVEX forms (VEXTRACTF32X4 for VEXTRACTF128,
// VSHUFF32X4 for VPERM2F128, shuffles for VHADDPS, a zero load for VXORPS, the
// latter also because VXORPS on zmm is AVX512DQ, outside the tier).

// zero clears v.
//
// AVX-512 loads zeros from the constant table: avo's liveness analysis
// knows VXORPS x,x,x as a zeroing idiom but not VPXORD, and would keep the
// register live from the function entry.
func (t Tier) Zero(v VecVirtual) {
	if t.W == 16 {
		VMOVUPS(KC(CZero), v)
		return
	}
	VXORPS(v, v, v)
}

// hreduce128 folds the eight lanes of a ymm with op into lane 0 of an xmm.
func (t Tier) HReduce128(y Register, op func(...Op)) VecVirtual {
	x := XMM()
	if t.W == 16 {
		VEXTRACTF32X4(Imm(1), y, x)
	} else {
		VEXTRACTF128(Imm(1), y, x)
	}
	op(y.(VecVirtual).AsX(), x, x)
	return HReduce4(x, op)
}

// HReduce4 folds the four lanes of the xmm x with op into its lane 0 (x
// is overwritten and returned).
func HReduce4(x VecVirtual, op func(...Op)) VecVirtual {
	h := XMM()
	VMOVHLPS(x, x, h)
	op(h, x, x)
	VMOVSHDUP(x, h)
	op(h, x, x)
	return x
}

// FuncAlign is the alignment GenerateAligned gives every function of a
// generated file, and its constant table: a whole cache line.
//
// Functions: Go aligns them to 32 bytes, so where the linker places a
// kernel moved its loops across 64-byte lines from one binary to the next.
//
// The table: the linker aligns a data symbol to 32 bytes at most, so in
// some binaries every 64-byte row sat across two cache lines, and every
// zmm operand taken from it (the exp's polynomial, t.Zero) was a split
// load. Identical f32 and f16 GQA kernels took 5–12 % longer in such a
// binary (Zen 5, L3, interleaved A/B), which an A/B of a kernel change
// then measured as the change's. A TEXT symbol can be aligned (PCALIGN),
// so the table is written as one, its bytes as LONGs: never executed, only
// read through its name, as before.
const FuncAlign = 64

var (
	dataLine  = regexp.MustCompile(`^DATA (\S+)\+(\d+)\(SB\)/(\d+), \$(0x[0-9a-f]+)\n$`)
	globlLine = regexp.MustCompile(`^GLOBL (\S+)\(SB\), RODATA\|NOPTR, \$(\d+)\n$`)
)

// GenerateAligned is avo's Generate, then the file written to the -out
// flag rewritten (avo has no PCALIGN): a PCALIGN FuncAlign at the first
// instruction of every function, which pads nothing there and makes the
// linker align the function, and every read-only table (GLOBL … RODATA
// and its DATA lines) as an aligned TEXT symbol of the same name.
func GenerateAligned() {
	Generate()
	out := flag.Lookup("out")
	if out == nil || out.Value.String() == "" {
		return
	}
	path := out.Value.String()
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(path, []byte(alignFile(string(b))), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// alignFile is GenerateAligned's rewrite of the text of a generated file.
func alignFile(src string) string {
	tables := map[string][]byte{}
	var s strings.Builder
	for _, line := range strings.SplitAfter(src, "\n") {
		if m := dataLine.FindStringSubmatch(line); m != nil {
			off, _ := strconv.Atoi(m[2])
			n, _ := strconv.Atoi(m[3])
			v, _ := strconv.ParseUint(m[4], 0, 64)
			t := tables[m[1]]
			for len(t) < off+n {
				t = append(t, 0)
			}
			for k := range n {
				t[off+k] = byte(v >> (8 * k))
			}
			tables[m[1]] = t
			continue
		}
		if m := globlLine.FindStringSubmatch(line); m != nil {
			size, _ := strconv.Atoi(m[2])
			t := tables[m[1]]
			for len(t) < (size+3)/4*4 { // whole LONGs
				t = append(t, 0)
			}
			fmt.Fprintf(&s, "// %s is the constant table, a TEXT symbol so that it is %d-byte\n// aligned (see vecgen.FuncAlign): never executed.\n", m[1], FuncAlign)
			fmt.Fprintf(&s, "TEXT %s(SB), NOSPLIT|NOFRAME, $0\n\tPCALIGN $%d\n", m[1], FuncAlign)
			for off := 0; off < size; off += 16 {
				var longs []string
				for k := off; k < off+16 && k < size; k += 4 {
					longs = append(longs, fmt.Sprintf("LONG $0x%08x", uint32(t[k])|uint32(t[k+1])<<8|uint32(t[k+2])<<16|uint32(t[k+3])<<24))
				}
				fmt.Fprintf(&s, "\t%s\n", strings.Join(longs, "; "))
			}
			continue
		}
		s.WriteString(line)
		if strings.HasPrefix(line, "TEXT ") {
			fmt.Fprintf(&s, "\tPCALIGN $%d\n", FuncAlign)
		}
	}
	return s.String()
}
