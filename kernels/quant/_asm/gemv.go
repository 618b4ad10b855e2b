package main

import (
	"fmt"
	"math"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// tier is one ISA level of the integer GEMV. All tiers work on one
// 32-weight block per 256-bit vector; they differ in how the u8×s8 dot
// product is formed and in how many registers they have:
//
//	avx2        VPMADDUBSW + VPMADDWD (VEX), 16 registers: up to 4 rows a pass
//	avx512      the same in EVEX form (AVX-512BW/VL), 32 registers: up to 8 rows
//	avx512vnni  one VPDPBUSD (AVX-512 VNNI/VL), 32 registers: up to 8 rows
type tier struct {
	name  string
	evex  bool // may use Y16–Y31 and EVEX-only forms; must avoid VEX-only ones
	vnni  bool
	maxRB int
}

var tiers = []tier{
	{name: "AVX2", maxRB: 4},
	{name: "AVX512", evex: true, maxRB: 8},
	{name: "VNNI", evex: true, vnni: true, maxRB: 8},
}

// format is a weight block format. The fields after bytes describe the
// 32-weight ones, paired with Q8_0 activations (f16 d, 32 × i8) or, for
// those with a min, Q8_1 (f16 d, f16 s, 32 × i8).
type format struct {
	name  string
	bytes int // bytes per weight block
	qs    int // offset of the levels (nibbles, or int8 for q8_0)
	qh    int // offset of the u32 of fifth bits (q5_0, q5_1), or −1
	min   int // offset of the f16 min (q4_1, q5_1), or −1
	bias  int // subtracted from the levels: 8 (q4_0), 16 (q5_0) or 0
}

var (
	q4_0 = format{"Q4_0", 18, 2, -1, -1, 8} // x = d·(q−8)
	q4_1 = format{"Q4_1", 20, 4, -1, 2, 0}  // x = d·q + m
	q5_0 = format{"Q5_0", 22, 6, 2, -1, 16} // x = d·(q−16), q = nibble | bit<<4
	q5_1 = format{"Q5_1", 24, 8, 4, 2, 0}   // x = d·q + m
	q8_0 = format{"Q8_0", 34, 2, -1, -1, 0} // x = d·q
)

// actBytes is the size of a Q8_0 activation block.
const actBytes = 34

// act returns the size of the format's activation block and the offset of
// its levels: Q8_1 (36, 4) for the formats with a min, else Q8_0 (34, 2).
func (f format) act() (bytes, qs int) {
	if f.min >= 0 {
		return 36, 4
	}
	return actBytes, 2
}

// Constant rows of 32 bytes, read as ymm memory operands.
const (
	cNibble = iota // 0x0F bytes
	cEight         // 0x08 bytes: Σ 8·y, the −8 of q4_0
	cOnes16        // int16 ones for VPMADDWD
	cHigh          // 0x80 bytes: y+128 as u8 (VNNI q8_0)
	nConsts
)

var constTable Mem

func emitConsts() {
	constTable = GLOBL("gemvconst", RODATA|NOPTR)
	rows := [nKConsts]uint32{
		cNibble: 0x0f0f0f0f,
		cEight:  0x08080808,
		cOnes16: 0x00010001,
		cHigh:   0x80808080,
		cLow2:   0x30303030,
	}
	rows[cOnes16Z], rows[cOnes16Z+1] = 0x00010001, 0x00010001
	rows[cMinus8] = math.Float32bits(-8)
	rows[cAbsMask] = 0x7fffffff
	rows[cHalf] = math.Float32bits(0.5)
	rows[c127] = math.Float32bits(127)
	rows[cMinus127] = math.Float32bits(-127)
	rows[cOneF] = math.Float32bits(1)
	rows[cInt127] = 127
	rows[cLowByte] = 0xff
	rows[cSixteen] = 0x10101010
	rows[cOnes8] = 0x01010101
	rows[cMinus16] = math.Float32bits(-16)
	rows[cOne32] = 1
	rows[cThree] = 3
	rows[cMinus32] = math.Float32bits(-32)
	rows[cRoundC] = 0x3effffff
	rows[cInfBits] = 0x7f800000
	rows[cTinyBits] = 0x0d800000
	for i, v := range rows {
		if i == cShift4 { // qwords 0, 0, 4, 4 (the assembler wants DATA in order)
			for j, q := range []uint64{0, 0, 4, 4} {
				DATA(32*i+8*j, U64(q))
			}
			continue
		}
		if i == cLane4 {
			for j := range 8 {
				DATA(32*i+4*j, U32(uint32(4*(j%4))))
			}
			continue
		}
		if i == cLaneIdx {
			for j := range 8 {
				DATA(32*i+4*j, U32(uint32(j)))
			}
			continue
		}
		if i >= cPairIdx && i < cPairIdx+4 {
			k := uint32(i - cPairIdx)
			lo, hi := 2*(2*k), 2*(2*k+1)
			for j := range 8 {
				v := lo | (lo+1)<<8 | lo<<16 | (lo+1)<<24
				if j >= 4 {
					v = hi | (hi+1)<<8 | hi<<16 | (hi+1)<<24
				}
				DATA(32*i+4*j, U32(v))
			}
			continue
		}
		if i == cSpread { // per 128-bit half: bytes 0–7 ← 0, 8–15 ← 1 (low half); 2, 3 (high half)
			for j := range 8 {
				b := uint32(j / 2)
				if j >= 4 {
					b = 2 + uint32(j-4)/2
				}
				DATA(32*i+4*j, U32(b*0x01010101))
			}
			continue
		}
		if i == cBitSel {
			for j := range 8 {
				v := uint32(0x08040201)
				if j%2 == 1 {
					v = 0x80402010
				}
				DATA(32*i+4*j, U32(v))
			}
			continue
		}
		if i >= cBitIdx && i < cBitIdx+4 {
			for j := range 8 {
				DATA(32*i+4*j, U32(uint32(8*(i-cBitIdx)+j)))
			}
			continue
		}
		if i >= cQuad && i < cQuad+8 {
			k, half := (i-cQuad)/2, (i-cQuad)%2
			for j := range 8 {
				w := 16*half + 2*j // first of the two words in this dword
				DATA(32*i+4*j, U32(uint32(quadIdx[k](w))|uint32(quadIdx[k](w+1))<<16))
			}
			continue
		}
		if i >= cQuadLanes && i < cQuadLanes+4 {
			h, half := (i-cQuadLanes)/2, (i-cQuadLanes)%2
			for j := range 8 {
				DATA(32*i+4*j, U32(uint32(4*h+(8*half+j)/4)))
			}
			continue
		}
		if i >= cQ6Shift && i < cQ6Shift+4 {
			k, half := (i-cQ6Shift)/2, (i-cQ6Shift)%2
			c := [2][2]uint32{{4, 2}, {0, 2}}[k][half]
			for j := range 8 {
				DATA(32*i+4*j, U32(c|c<<16))
			}
			continue
		}
		if i >= cQ6Scale && i < cQ6Scale+4 {
			k, half := (i-cQ6Scale)/2, (i-cQ6Scale)%2
			for j := range 8 { // bytes 32·half + 4j … +3: 128-bit lane (2·half + j/4)
				lane := uint32(2*half + j/4)
				wd := lane + uint32(4*k)
				v := (2 * wd) | (2*wd+1)<<8
				DATA(32*i+4*j, U32(v|v<<16))
			}
			continue
		}
		if i >= cKSpread && i < cKSpread+8 {
			v, half := (i-cKSpread)/2, (i-cKSpread)%2
			pair := [4][2]uint32{{0, 2}, {1, 3}, {4, 6}, {5, 7}}[v]
			for j := range 8 {
				DATA(32*i+4*j, U32(pair[half]))
			}
			continue
		}
		if i == cD9 {
			for j := range 8 {
				DATA(32*i+4*j, U32(uint32(18*j)|uint32(18*j+9)<<16))
			}
			continue
		}
		if i == cPackOrder {
			for j, q := range []uint32{0, 4, 1, 5, 2, 6, 3, 7} {
				DATA(32*i+4*j, U32(q))
			}
			continue
		}
		for lane := 0; lane < 8; lane++ {
			DATA(32*i+4*lane, U32(v))
		}
	}
}

func kc(i int) Mem { return constTable.Offset(32 * i) }

// dotU8S8 returns, in int32 lanes, Σ of 4 consecutive u8·s8 products of
// u and s (each lane four bytes), with add (if not nil) added per lane.
func (t tier) dotU8S8(u VecVirtual, s Op, add VecVirtual) VecVirtual {
	return t.dotIn(YMM, kc(cOnes16), u, s, add)
}

// dotIn is dotU8S8 on vectors made by vec (YMM or ZMM); ones16 is a row
// of int16 ones of that width.
func (t tier) dotIn(vec func() VecVirtual, ones16 Mem, u VecVirtual, s Op, add VecVirtual) VecVirtual {
	p := vec()
	if t.vnni {
		if add != nil {
			VMOVDQA32(add, p)
		} else {
			VPXORD(p, p, p)
		}
		VPDPBUSD(s, u, p)
		return p
	}
	VPMADDUBSW(s, u, p) // u8·s8 pairs summed to int16: |31·127·2|, |128·127·2| < 2^15
	VPMADDWD(ones16, p, p)
	if add != nil {
		VPADDD(add, p, p)
	}
	return p
}

// blocksKernel declares one generated block kernel, func(<out>, <in>, nb
// int) (quantizers, dequantizers), and loads its three arguments.
func blocksKernel(name, doc, out, in string) (o, i, nb GPVirtual) {
	TEXT(name, NOSPLIT, "func("+out+", "+in+", nb int)")
	Pragma("noescape")
	Doc(doc)
	o, i, nb = GP64(), GP64(), GP64()
	Load(Param(strings.Fields(out)[0]), o)
	Load(Param(strings.Fields(in)[0]), i)
	Load(Param("nb"), nb)
	return o, i, nb
}

// kernel declares one generated GEMV, func(y *float32, w *byte, stride
// int, <act>, nb int), and loads its arguments but y (stored last).
func kernel(name, doc, actName, actType string) (w, s, act, nb GPVirtual) {
	TEXT(name, NOSPLIT, "func(y *float32, w *byte, stride int, "+actName+" "+actType+", nb int)")
	Pragma("noescape")
	dot := "DotF32"
	if actName != "x" {
		dot = "DotQ8"
	}
	Doc(doc, "For each row r: y[r] = "+dot+" of the nb blocks at w + r·stride with those at "+actName+".")
	w, s, act, nb = GP64(), GP64(), GP64(), GP64()
	Load(Param("w"), w)
	Load(Param("stride"), s)
	Load(Param(actName), act)
	Load(Param("nb"), nb)
	return w, s, act, nb
}

// zeroAccs returns rb zeroed 256-bit accumulators, one per row.
func (t tier) zeroAccs(rb int) []VecVirtual {
	acc := make([]VecVirtual, rb)
	for r := range acc {
		acc[r] = YMM()
		t.zero(acc[r])
	}
	return acc
}

// storeRows writes the lane sum of acc[r] to y[r] and returns.
func (t tier) storeRows(acc []VecVirtual) {
	y := Load(Param("y"), GP64())
	for r := range acc {
		h := t.hsum(acc[r])
		VMOVSS(h, Mem{Base: y, Disp: 4 * r})
	}
	VZEROUPPER()
	RET()
}

// q8_0Shared loads what the rows of one block share: the activations at
// xq, their scale in 8 lanes, and
//   - for q4_0, q5_0: −bias·Σy per lane (bias: the bias bytes in a register);
//   - for q4_1, q5_1: Σy per lane as float (bias: 0x01 bytes), for the min;
//   - for VNNI q8_0: the activations + 128 (high).
func (t tier) q8_0Shared(f format, xq GPVirtual, bias, high VecVirtual) (yv, dy, corr, yu VecVirtual) {
	_, qs := f.act()
	yv = YMM()
	t.loadu(Mem{Base: xq, Disp: qs}, yv)
	dy = YMM()
	t.halfToFloat(Mem{Base: xq}, dy)
	if f.bias > 0 {
		e := t.dotU8S8(bias, yv, nil)
		corr = YMM()
		t.zero(corr)
		VPSUBD(e, corr, corr)
	}
	if f.min >= 0 {
		corr = t.dotU8S8(bias, yv, nil)
		VCVTDQ2PS(corr, corr)
	}
	if f == q8_0 && t.vnni {
		// VPDPBUSD multiplies u8 by s8: take y+128 as the unsigned side
		// and subtract 128·Σw per row.
		yu = YMM()
		VPXORD(high, yv, yu)
	}
	return yv, dy, corr, yu
}

// q4_0Dot returns the int32 lanes of Σ (q−8)·y for the q4_0 block at m
// (see nibbleDot).
func (t tier) q4_0Dot(m Mem, yv, nibble, neg8 VecVirtual) VecVirtual {
	return t.dotU8S8(t.nibbles(m, nibble), yv, neg8)
}

// nibbles returns the 32 unsigned 4-bit levels of the 16 bytes at m in
// the order of the activations: low nibbles are weights 0–15, high ones
// 16–31.
func (t tier) nibbles(m Mem, nibble Op) VecVirtual {
	lo, hi := XMM(), XMM()
	t.loadu(m, lo)
	VPSRLW(Imm(4), lo, hi)
	q := YMM()
	t.insert128(hi, lo, q)
	t.and2(nibble, q, q)
	return q
}

// addFifthBits ORs bit e of the u32 at m, as 16, into byte e of q: the
// fifth bit of q5_0/q5_1 level e.
func (t tier) addFifthBits(m Mem, ones VecVirtual, q VecVirtual) {
	h := YMM()
	VPBROADCASTD(m, h)
	VPSHUFB(kc(cSpread), h, h) // byte e ← byte e/8 of the u32
	t.and2(kc(cBitSel), h, h)  // ← bit e%8 of it
	VPMINUB(ones, h, h)        // 0 or 1
	VPSLLW(Imm(4), h, h)       // 0 or 16
	t.or(h, q, q)
}

// addScaled adds p (int32 lanes) × the row's f16 scale at m × dy to acc.
func (t tier) addScaled(p VecVirtual, m Mem, dy, acc VecVirtual) {
	VCVTDQ2PS(p, p)
	d := YMM()
	t.halfToFloat(m, d)
	VMULPS(dy, d, d)
	VFMADD231PS(d, p, acc)
}

// gemvQ8 generates func(y *float32, w *byte, stride int, xq *byte, nb int):
// y[r] = Σ_b d_r,b · dy_b · Σ q·q8 for rb rows r of W (row r at w + r·stride,
// nb blocks) against nb Q8_0 activation blocks at xq. Per block and row the
// integer sum is exact (int32 lanes); the float sum runs in 8 lanes and is
// reduced at the end of the row.
func gemvQ8(t tier, f format, rb int) {
	name := fmt.Sprintf("gemvQ8%s%sR%d", f.name, t.name, rb)
	actName := "Q8_0"
	if f.min >= 0 {
		actName = "Q8_1"
	}
	w, s, xq, nb := kernel(name, fmt.Sprintf("%s computes %d rows of a %s × %s GEMV (%s tier).", name, rb, f.name, actName, t.name), "xq", "*byte")
	// Rows 0–3 at w + {0, s, 2s, 3s}, rows 4–7 at w4 + the same.
	s3 := GP64()
	LEAQ(Mem{Base: s, Index: s, Scale: 2}, s3)
	var w4 GPVirtual
	if rb > 4 {
		w4 = GP64()
		LEAQ(Mem{Base: w, Index: s, Scale: 4}, w4)
	}
	row := func(r int, off int) Mem {
		base := w
		if r >= 4 {
			base, r = w4, r-4
		}
		switch r {
		case 0:
			return Mem{Base: base, Disp: off}
		case 1:
			return Mem{Base: base, Index: s, Scale: 1, Disp: off}
		case 2:
			return Mem{Base: base, Index: s, Scale: 2, Disp: off}
		}
		return Mem{Base: base, Index: s3, Scale: 1, Disp: off}
	}
	acc := t.zeroAccs(rb)
	// Constants kept in registers: the unsigned operand of VPMADDUBSW and
	// VPDPBUSD must be one.
	var nibble, bias, ones, high VecVirtual
	if f != q8_0 {
		nibble = YMM()
		t.loadu(kc(cNibble), nibble)
	}
	switch f.bias {
	case 8:
		bias = YMM()
		t.loadu(kc(cEight), bias)
	case 16:
		bias = YMM()
		t.loadu(kc(cSixteen), bias)
	}
	if f.qh >= 0 || f.min >= 0 {
		ones = YMM()
		t.loadu(kc(cOnes8), ones)
	}
	if f.min >= 0 {
		bias = ones // Σy = Σ 1·y
	}
	if f == q8_0 && t.vnni {
		high = YMM()
		t.loadu(kc(cHigh), high)
	}
	var adv []advance
	if rb > 4 {
		adv = append(adv, advance{w4, f.bytes})
	}
	ab, _ := f.act()
	blockLoop(name, f, w, xq, nb, ab, newNextPass(w, s, rb, rb*f.bytes), func() {
		yv, dy, corr, yu := t.q8_0Shared(f, xq, bias, high)
		for r := range rb {
			prefetchRow(func(off int) Mem { return row(r, off) }, f.bytes, prefetchDist(rb))
			var p VecVirtual
			switch {
			case f != q8_0:
				q := t.nibbles(row(r, f.qs), nibble)
				if f.qh >= 0 {
					t.addFifthBits(row(r, f.qh), ones, q)
				}
				if f.bias > 0 {
					p = t.dotU8S8(q, yv, corr)
				} else {
					p = t.dotU8S8(q, yv, nil)
				}
			case t.vnni: // q8_0
				wq := YMM()
				t.loadu(row(r, 2), wq)
				p = t.dotU8S8(yu, wq, nil)
				c := t.dotU8S8(high, wq, nil)
				VPSUBD(c, p, p)
			case t.evex: // q8_0, AVX-512BW: |w| and y with w's sign (through a mask)
				wq := YMM()
				t.loadu(row(r, 2), wq)
				aw := YMM()
				VPABSB(wq, aw)
				k := K()
				VPMOVB2M(wq, k)
				sy, zero := YMM(), YMM()
				VMOVDQU64(yv, sy)
				t.zero(zero)
				VPSUBB(yv, zero, k, sy)
				p = t.dotU8S8(aw, sy, nil)
			default: // q8_0, AVX2
				wq := YMM()
				t.loadu(row(r, 2), wq)
				aw, sy := YMM(), YMM()
				VPABSB(wq, aw)
				VPSIGNB(wq, yv, sy)
				p = t.dotU8S8(aw, sy, nil)
			}
			t.addScaled(p, row(r, 0), dy, acc[r])
			if f.min >= 0 { // + m·dy·Σy
				m := YMM()
				t.halfToFloat(row(r, f.min), m)
				VMULPS(dy, m, m)
				VFMADD231PS(m, corr, acc[r])
			}
		}
	}, adv...)
	t.storeRows(acc)
}

// advance is a pointer a loop moves on by a fixed number of bytes.
type advance struct {
	reg GPVirtual
	by  int
}

// blockLoop emits a GEMV kernel's loop over its nb blocks (super-blocks
// for the K-quants): each iteration prefetches the next pass's bytes (np;
// nil: none), runs body, and moves w on by a block, x (the activations)
// by actBytes and each of adv by its own step.
func blockLoop(name string, f format, w, x, nb GPVirtual, actBytes int, np *nextPass, body func(), adv ...advance) {
	steps := append(append([]advance{{w, f.bytes}}, adv...), advance{x, actBytes})
	countLoop(name, nb, func() {
		np.step()
		body()
	}, steps...)
}

// countLoop emits "while n > 0 { body; move each of steps on; n-- }", with
// the labels loop<name> and done<name>: the loop of every block kernel.
func countLoop(name string, n GPVirtual, body func(), steps ...advance) {
	loop, done := "loop"+name, "done"+name
	TESTQ(n, n)
	JZ(LabelRef(done))
	Label(loop)
	body()
	for _, a := range steps {
		ADDQ(U32(a.by), a.reg)
	}
	DECQ(n)
	JNZ(LabelRef(loop))
	Label(done)
}

// eachRow emits body(r) for the rb rows of a pass, row set to row r
// (w + r·s), each row's bytes of an iteration prefetched dist ahead.
func eachRow(w, s, row GPVirtual, rb, bytes, dist int, body func(r int)) {
	MOVQ(w, row)
	for r := range rb {
		if r > 0 {
			ADDQ(s, row)
		}
		prefetchRow(func(off int) Mem { return Mem{Base: row, Disp: off} }, bytes, dist)
		body(r)
	}
}

// prefetchDist is how far ahead of a row's loads the kernels prefetch
// into L1 (PREFETCHT0), per row: rb rows are rb streams, and about 4 KiB
// in flight over all of them kept DRAM busiest in interleaved A/B runs on
// the 16384×8192 --cold shapes (at rb 8, 512 bytes a row beat 1024 by 5–8 %).
func prefetchDist(rb int) int {
	if rb > 4 {
		return 512
	}
	return 1024
}

// prefetchRow asks for the lines a row will reach dist bytes ahead, one
// per 64 of the bytes an iteration consumes.
func prefetchRow(at func(off int) Mem, bytesPerIter, dist int) {
	for off := 0; off < bytesPerIter; off += 64 {
		PREFETCHT0(at(dist + off))
	}
}

// nextPass prefetches, into L2 (PREFETCHT1), the rows of the pass after
// this one in a single linear walk: those rb rows follow this pass's in W,
// so one pointer at w + rb·stride, advanced by the bytes an iteration
// consumes, has them in L2 by the time the pass reaches them. The row
// prefetches alone leave rb short streams for the hardware prefetcher to
// find anew at every row. In interleaved A/B runs against them (4096×8192,
// --cold, avx512vnni) it took 14–26 % off a q4_K call and 9–24 % off a
// q4_0 call at rb 1–4, 20–25 % off q6_K and q8_0 at rb 1, left those two
// within ±4 % at rb 4, and cost up to 12 % at rb 8, where it is left out.
type nextPass struct {
	p       GPVirtual
	perIter int // bytes an iteration of the kernel's loop consumes
}

// newNextPass returns the walker for a kernel of rb rows at w, stride s,
// or nil (no prefetch) for rb > 4.
func newNextPass(w, s GPVirtual, rb, perIter int) *nextPass {
	if rb > 4 {
		return nil
	}
	p := GP64()
	IMUL3Q(U32(rb), s, p)
	ADDQ(w, p)
	return &nextPass{p, perIter}
}

// step prefetches one iteration's bytes and advances.
func (n *nextPass) step() {
	if n != nil {
		n.stepBytes(n.perIter)
	}
}

// stepBytes is step for a loop whose iterations consume perIter bytes.
func (n *nextPass) stepBytes(perIter int) {
	if n == nil {
		return
	}
	for off := 0; off < perIter; off += 64 {
		PREFETCHT1(Mem{Base: n.p, Disp: off})
	}
	ADDQ(U32(perIter), n.p)
}

// halfToFloat broadcasts the f16 at m to 8 float32 lanes.
func (t tier) halfToFloat(m Mem, dst VecVirtual) {
	h := XMM()
	VPBROADCASTW(m, h)
	VCVTPH2PS(h, dst)
}

// insert128 sets dst to lo in the low and hi in the high 128 bits.
func (t tier) insert128(hi, lo VecVirtual, dst VecVirtual) {
	if t.evex {
		VINSERTI32X4(Imm(1), hi, lo.AsY(), dst)
		return
	}
	VINSERTI128(Imm(1), hi, lo.AsY(), dst)
}

// loadu loads a vector (or xmm) from m, unaligned (or copies a register).
func (t tier) loadu(m Op, dst VecVirtual) {
	if t.evex {
		VMOVDQU64(m, dst)
		return
	}
	VMOVDQU(m, dst)
}

// and2 is and with a memory operand allowed for a.
func (t tier) and2(a Op, b, dst VecVirtual) {
	if t.evex {
		VPANDD(a, b, dst)
		return
	}
	VPAND(a, b, dst)
}

func (t tier) and(a, b, dst VecVirtual) {
	if t.evex {
		VPANDD(a, b, dst)
		return
	}
	VPAND(a, b, dst)
}

func (t tier) zero(v VecVirtual) {
	if t.evex {
		VPXORD(v, v, v)
		return
	}
	VPXOR(v, v, v)
}

// hsum returns lane 0 of an xmm holding the sum of v's 8 lanes.
func (t tier) hsum(v VecVirtual) VecVirtual { return hreduce(v, t.evex, VADDPS, VADDSS) }

// hreduce folds the float lanes of v (ymm or zmm) with op down to lane 0
// of an xmm (opss for the last, scalar step). evex: v may be one of
// Y16–Y31 (the EVEX extracts); a zmm is always EVEX.
func hreduce(v VecVirtual, evex bool, op, opss func(...Op)) VecVirtual {
	y := v
	if v.Size() == 64 {
		y = YMM()
		VEXTRACTF64X4(Imm(1), v, y)
		op(v.AsY(), y, y)
		evex = true
	}
	x := XMM()
	if evex {
		VEXTRACTF32X4(Imm(1), y, x)
	} else {
		VEXTRACTF128(Imm(1), y, x)
	}
	op(y.AsX(), x, x)
	h := XMM()
	VMOVHLPS(x, x, h)
	op(h, x, x)
	VMOVSHDUP(x, h)
	opss(h, x, x)
	return x
}
