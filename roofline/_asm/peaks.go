package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// chains is the number of independent accumulators of a peak kernel:
// enough to cover latency × ports (FMA: 4 cycles × 2 ports = 8; VPDPBUSD
// 5 × 2 = 10) with slack, leaving registers for the operands (AVX2 has 16
// vector registers, AVX-512 32).
func (t tier) chains() int {
	if t.vb == 64 {
		return 24
	}
	return 12
}

// Constant rows of 64 bytes, read as broadcast vectors.
const (
	cMul    = iota // FMA multiplier just below 1: accumulators converge, never overflow
	cAdd           // FMA addend, also the step between chains' start values
	cSeed          // first chain's start value
	cU8            // int8 kernels: unsigned bytes
	cS8            // int8 kernels: signed bytes
	cOnes16        // int16 ones for VPMADDWD
	cZero          // zeros (VXORPS on zmm is AVX512DQ, outside the avx512 tier)
	nConsts
)

var constTable Mem

func emitConsts() {
	constTable = GLOBL("peakconst", RODATA|NOPTR)
	rows := [nConsts]uint32{
		cMul:    math.Float32bits(0.9999999),
		cAdd:    math.Float32bits(0.001),
		cSeed:   math.Float32bits(0.5),
		cU8:     0x03020103,
		cS8:     0xfd02ff01,
		cOnes16: 0x00010001,
	}
	for i, v := range rows {
		for lane := 0; lane < 16; lane++ {
			DATA(64*i+4*lane, U32(v))
		}
	}
}

func kc(i int) Mem { return constTable.Offset(64 * i) }

// fmaPeak generates func(iters int) float32: iters rounds of one FMA
// (acc = acc·a + b) on each of chains() independent accumulators. The
// chains start at distinct values (compilers and CPUs may merge identical
// ones); the sum of all lanes is returned so the work is observable.
// FLOPs per call: iters × chains × lanes × 2.
func fmaPeak(t tier) {
	Implement("fmaPeak" + t.name)
	Attributes(NOSPLIT)
	Doc("fmaPeak" + t.name + " runs iters rounds of one FMA on each independent accumulator.")
	n := GP64()
	Load(Param("iters"), n)
	a, b := t.vec(), t.vec()
	VMOVUPS(kc(cMul), a)
	VMOVUPS(kc(cAdd), b)
	acc := make([]VecVirtual, t.chains())
	for i := range acc {
		acc[i] = t.vec()
		if i == 0 {
			VMOVUPS(kc(cSeed), acc[i])
		} else {
			VADDPS(b, acc[i-1], acc[i]) // start values seed, seed+b, seed+2b, ...
		}
	}
	countdown(n, "fma_loop"+t.name, "fma_done"+t.name, func() {
		for i := range acc {
			VFMADD213PS(b, a, acc[i]) // acc = a·acc + b
		}
	})
	returnLaneSum(t, acc)
}

// f16FMAPeak generates func(iters int) float32: fmaPeak with every FMA's
// operand widened from f16 in memory first (VCVTPH2PS m → register, then
// acc += x·a), as the decode kernels consume an f16 KV cache. Where the
// widening competes with the FMAs for the same units (Zen 4's 512-bit
// VCVTPH2PS), this is the compute roof of an f16-KV kernel, below
// fmaPeak's. FLOPs per call: as fmaPeak's.
func f16FMAPeak(t tier) {
	widenFMAPeak(t, "f16FMAPeak", "f16-widened", func(m Mem, x VecVirtual) {
		VCVTPH2PS(m, x)
	})
}

// q8FMAPeak generates func(iters int) float32: fmaPeak with every FMA's
// operand widened from int8 in memory first (VPMOVSXBD, VCVTDQ2PS, then
// acc += x·a): the roof of a kernel dequantizing a q8_0 KV cache in
// registers (the per-block scale is left out: this is the most such a
// kernel can do). FLOPs per call: as fmaPeak's.
func q8FMAPeak(t tier) {
	widenFMAPeak(t, "q8FMAPeak", "int8-widened", func(m Mem, x VecVirtual) {
		VPMOVSXBD(m, x)
		VCVTDQ2PS(x, x)
	})
}

// widenFMAPeak is the body of f16FMAPeak and q8FMAPeak: widen(m, x) loads
// one vector's operand from m into x as float32.
func widenFMAPeak(t tier, name, what string, widen func(m Mem, x VecVirtual)) {
	Implement(name + t.name)
	Attributes(NOSPLIT)
	Doc(name + t.name + " runs iters rounds of one " + what + " FMA on each independent accumulator.")
	n := GP64()
	Load(Param("iters"), n)
	a := t.vec()
	VMOVUPS(kc(cMul), a)
	acc := make([]VecVirtual, t.chains())
	for i := range acc {
		acc[i] = t.vec()
		VMOVUPS(kc(cSeed), acc[i])
	}
	// The operands: cAdd's rows (0.001 as f32 bits), read as f16 halves
	// (small normals, no NaN) or as int8 bytes.
	src := kc(cAdd)
	countdown(n, name+"_loop"+t.name, name+"_done"+t.name, func() {
		for i := range acc {
			x := t.vec()
			widen(src.Offset(16*(i%2)), x)
			VFMADD231PS(x, a, acc[i])
		}
	})
	returnLaneSum(t, acc)
}

// countdown emits "for ; n != 0; n-- { body() }" (nothing for n = 0),
// under the labels loop and done.
func countdown(n GPVirtual, loop, done string, body func()) {
	TESTQ(n, n)
	JZ(LabelRef(done))
	Label(loop)
	body()
	DECQ(n)
	JNZ(LabelRef(loop))
	Label(done)
}

// returnLaneSum adds the accumulators in a tree (half onto the other
// half, log depth), returns the sum of the lanes of the result as the
// float32 result and ends the function.
func returnLaneSum(t tier, acc []VecVirtual) {
	for len(acc) > 1 {
		half := (len(acc) + 1) / 2
		for i := half; i < len(acc); i++ {
			VADDPS(acc[i], acc[i-half], acc[i-half])
		}
		acc = acc[:half]
	}
	Store(horizontalSum(t, acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// int8Peak generates func(iters int) int32: iters rounds of an unsigned ×
// signed int8 dot product into each of chains() int32 accumulators:
// VPMADDUBSW + VPMADDWD + VPADDD (AVX2, AVX-512BW), or one VPDPBUSD (VNNI).
// Each round is vb multiply-adds per chain; ops = 2 per multiply-add.
func int8Peak(t tier, vnni bool) {
	name := "int8Peak" + t.name
	if vnni {
		name = "int8PeakVNNI"
	}
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name + " runs iters rounds of an int8 dot product on each independent accumulator.")
	n := GP64()
	Load(Param("iters"), n)
	u, s := t.vec(), t.vec()
	VMOVUPS(kc(cU8), u)
	VMOVUPS(kc(cS8), s)
	var ones VecVirtual
	if !vnni {
		ones = t.vec()
		VMOVUPS(kc(cOnes16), ones)
	}
	k := t.chains()
	if !vnni && t.vb == 32 {
		k = 11 // u, s, ones and a temporary take the other 5 of 16
	}
	acc := make([]VecVirtual, k)
	for i := range acc {
		acc[i] = t.vec()
		VMOVUPS(kc(cOnes16), acc[i]) // any start: integer chains cannot be merged
	}
	countdown(n, name+"_loop", name+"_done", func() {
		for i := range acc {
			if vnni {
				VPDPBUSD(s, u, acc[i]) // acc += Σ4 u8·s8 per int32 lane
				continue
			}
			p := t.vec()
			VPMADDUBSW(s, u, p)  // u8·s8 pairs summed to int16
			VPMADDWD(ones, p, p) // int16 pairs summed to int32
			VPADDD(p, acc[i], acc[i])
		}
	})
	for i := 1; i < len(acc); i++ {
		VPADDD(acc[i], acc[0], acc[0])
	}
	r := GP32()
	VMOVD(acc[0].AsX(), r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// clockChain generates func(n int) int: n rounds of 8 dependent integer
// adds (1 cycle each on every x86 core since the P6), so 8n cycles; the
// loop counter runs in parallel. It estimates the core clock without
// trusting the TSC, which ticks at a fixed rate that is not the core's.
func clockChain() {
	Implement("clockChain")
	Attributes(NOSPLIT)
	Doc("clockChain runs n rounds of 8 dependent adds: 8n core cycles.")
	n, x, one := GP64(), GP64(), GP64()
	Load(Param("n"), n)
	XORQ(x, x)
	MOVQ(U32(1), one)
	countdown(n, "clock_loop", "clock_done", func() {
		for range 8 {
			ADDQ(one, x)
		}
	})
	Store(x, ReturnIndex(0))
	RET()
}

// rdtsc generates func() uint64: the time-stamp counter.
func rdtsc() {
	Implement("rdtsc")
	Attributes(NOSPLIT)
	Doc("rdtsc returns the time-stamp counter (fixed rate, not core cycles), read once every earlier instruction has completed.")
	LFENCE() // RDTSC alone may run before the kernel just called has finished
	RDTSC()
	SHLQ(Imm(32), RDX)
	ORQ(RDX, RAX)
	Store(RAX, ReturnIndex(0))
	RET()
}

// horizontalSum returns lane 0 of an xmm holding the sum of v's lanes.
func horizontalSum(t tier, v VecVirtual) VecVirtual {
	y := Register(v)
	if t.vb == 64 {
		hi := YMM()
		VEXTRACTF64X4(Imm(1), v, hi)
		VADDPS(hi, v.AsY(), hi)
		y = hi
	}
	x := XMM()
	if t.vb == 64 {
		VEXTRACTF32X4(Imm(1), y, x) // EVEX: y may be one of Y16–Y31
	} else {
		VEXTRACTF128(Imm(1), y, x)
	}
	VADDPS(y.(VecVirtual).AsX(), x, x)
	h := XMM()
	VMOVHLPS(x, x, h)
	VADDPS(h, x, x)
	VMOVSHDUP(x, h)
	VADDSS(h, x, x)
	return x
}

// fmaClock generates func(iters int) int: each iteration issues chains()
// FMAs (as fmaPeak) beside a chain of clockAdds dependent integer adds.
// The add chain is the longer of the two (clockAdds cycles against at most
// chains() cycles of FMA throughput), so an iteration takes clockAdds
// core cycles exactly, while the FMA units are kept busy at the clock the
// core holds under this tier's vector load (AVX-512 may run below the
// scalar clock).
func fmaClock(t tier) {
	Implement("fmaClock" + t.name)
	Attributes(NOSPLIT)
	Doc("fmaClock" + t.name + " runs iters rounds of FMAs beside a dependent add chain; see clockAdds.")
	n, x, one := GP64(), GP64(), GP64()
	Load(Param("iters"), n)
	XORQ(x, x)
	MOVQ(U32(1), one)
	a, b := t.vec(), t.vec()
	VMOVUPS(kc(cMul), a)
	VMOVUPS(kc(cAdd), b)
	acc := make([]VecVirtual, t.chains())
	for i := range acc {
		acc[i] = t.vec()
		VMOVUPS(kc(cSeed), acc[i])
	}
	countdown(n, "fmaclock_loop"+t.name, "fmaclock_done"+t.name, func() {
		for i := range acc {
			VFMADD213PS(b, a, acc[i])
			if i < clockAdds(t) {
				ADDQ(one, x)
			}
		}
		for i := len(acc); i < clockAdds(t); i++ {
			ADDQ(one, x)
		}
	})
	Store(x, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// clockAdds is the length of fmaClock's add chain per iteration: a third
// more cycles than its FMAs need at one vector FMA per cycle, so that the
// chain sets the pace on every core: two full-width pipes (then the FMAs
// use 3/8 of them), and also a core that splits the tier's vectors in
// halves, as Zen 4 does 512-bit ones (3/4; with two ports' worth, 24 zmm
// FMAs took 24 cycles there against 16 adds, and the clock read 2.3 GHz
// for 3.5).
func clockAdds(t tier) int { return t.chains() * 4 / 3 }

// fmaScalar generates func(iters int) float32: the generic tier's ceiling,
// what compiled Go does for float32 x = x·a + b (MULSS then ADDSS: Go only
// fuses with GOAMD64=v3), on 12 independent chains. Written in asm like
// the other peaks so that the Go scheduler cannot preempt it mid-sample.
// FLOPs per call: iters × 12 × 2.
func fmaScalar() {
	Implement("fmaScalar")
	Attributes(NOSPLIT)
	Doc("fmaScalar runs iters rounds of x = x*a + b (MULSS, ADDSS) on 12 independent chains.")
	n := GP64()
	Load(Param("iters"), n)
	a, b := XMM(), XMM()
	MOVSS(kc(cMul), a)
	MOVSS(kc(cAdd), b)
	acc := make([]VecVirtual, 12)
	for i := range acc {
		acc[i] = XMM()
		if i == 0 {
			MOVSS(kc(cSeed), acc[i])
		} else {
			MOVSS(acc[i-1], acc[i])
			ADDSS(b, acc[i])
		}
	}
	countdown(n, "fmas_loop", "fmas_done", func() {
		for i := range acc {
			MULSS(a, acc[i])
			ADDSS(b, acc[i])
		}
	})
	for i := 1; i < len(acc); i++ {
		ADDSS(acc[i], acc[0])
	}
	Store(acc[0], ReturnIndex(0))
	RET()
}

// q8 decode ceiling: the geometry of the q8_0 block (GGML: an f16 scale,
// then 32 int8 values) and of q8DecodePeak's buffer.
const (
	q8Block      = 32
	q8BlockBytes = 34
	q8Row        = 4 * q8BlockBytes // hd 128
	q8Keys       = 8                // keys a round
)

// q8DecodePeak generates func(p *byte, iters int) float32: iters rounds
// of the arithmetic a decode over a q8_0 KV cache does for q8Keys keys of
// hd 128, with nothing else (no softmax, no loop over tiles, no
// reductions, all of it in L1), as ckbench's decode kernels do it: p holds
// the quantized query's row, then q8Keys K rows, then q8Keys V rows.
//
//   - Q·K, per block of the query (its magnitudes, sign mask and f16 scale
//     prepared once for all keys): each key's block times the query's as
//     an int8 dot (VPMADDUBSW, VPMADDWD), converted (VCVTDQ2PS), times
//     the key's f16 scale widened and times the query's (AVX-512: two keys
//     in the halves of a zmm, as q8DotPair), into an accumulator (FMA);
//   - P·V, per key and block: the block's f16 scale widened and times the
//     key's weight, then each vector of its values widened (VPMOVSXBD,
//     VCVTDQ2PS) and accumulated (FMA).
//
// FLOPs per round: q8Keys × 4 × 128, as the decode counts them (2·D for
// Q·K, 2·D for P·V). AVX2's accumulators are shared by two keys (16 ymm):
// a chain still takes at most 16 FMAs a round, well under its length.
func q8DecodePeak(t tier) {
	name := "q8DecodePeak" + t.name
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name + " runs iters rounds of a q8_0 decode's per-key arithmetic over the q8_0 rows at p (query, K, V).")
	p, n := GP64(), GP64()
	Load(Param("p"), p)
	Load(Param("iters"), n)
	z := t.vb == 64
	w := t.vb / 4 // lanes
	at := func(off int) Mem { return Mem{Base: p, Disp: off} }
	kRow := func(r int) int { return q8Row * (1 + r) }
	vRow := func(r int) int { return q8Row * (1 + q8Keys + r) }
	nk, nv := 4, 8 // accumulators
	if !z {
		nk, nv = 2, 4
	}
	accK, accV := make([]VecVirtual, nk), make([]VecVirtual, nv)
	for i := range accK {
		accK[i] = t.vec()
		VMOVUPS(kc(cZero), accK[i])
	}
	for i := range accV {
		accV[i] = t.vec()
		VMOVUPS(kc(cZero), accV[i])
	}
	wt := t.vec() // the keys' weight
	VMOVUPS(kc(cMul), wt)
	ones := t.vec()
	VMOVUPS(kc(cOnes16), ones)
	var zero VecVirtual
	if z {
		zero = t.vec()
		VMOVUPS(kc(cZero), zero)
	}
	step := 1 // keys a dot
	if z {
		step = 2
	}
	countdown(n, name+"_loop", name+"_done", func() {
		for b := range 4 {
			qb := b * q8BlockBytes
			abs, dq, h := t.vec(), t.vec(), YMM()
			var neg Register
			if z {
				x := ZMM()
				VBROADCASTI64X4(at(qb+2), x)
				VPABSB(x, abs)
				neg = K()
				VPMOVB2M(x, neg)
				VPBROADCASTW(at(qb), h)
				VCVTPH2PS(h, dq)
			} else {
				VPABSB(at(qb+2), abs)
				VPBROADCASTW(at(qb), h.AsX())
				VCVTPH2PS(h.AsX(), dq)
			}
			for r := 0; r < q8Keys; r += step {
				m0 := kRow(r) + qb
				k, sc := t.vec(), t.vec()
				if z {
					VBROADCASTI64X4(at(m0+2), k)
					VINSERTI64X4(Imm(1), at(kRow(r+1)+qb+2), k, k)
					VPSUBB(k, zero, neg, k)
				} else {
					VMOVDQU(at(m0+2), k)
					VPSIGNB(at(qb+2), k, k)
				}
				VPMADDUBSW(k, abs, k)
				VPMADDWD(ones, k, k)
				VCVTDQ2PS(k, k)
				if z {
					h1 := XMM()
					VPBROADCASTW(at(m0), h)
					VPBROADCASTW(at(kRow(r+1)+qb), h1)
					VINSERTI32X4(Imm(1), h1, h, h)
					VCVTPH2PS(h, sc)
				} else {
					VPBROADCASTW(at(m0), h.AsX())
					VCVTPH2PS(h.AsX(), sc)
				}
				VMULPS(dq, sc, sc)
				VFMADD231PS(k, sc, accK[(r/step)%nk])
			}
		}
		for r := range q8Keys {
			for b := range 4 {
				m := vRow(r) + b*q8BlockBytes
				sx, sc := XMM(), t.vec()
				VMOVD(at(m), sx)
				VCVTPH2PS(sx, sx)
				VMULSS(wt.AsX(), sx, sx)
				VBROADCASTSS(sx, sc)
				for c := range q8Block / w {
					x := t.vec()
					VPMOVSXBD(at(m+2+c*w), x)
					VCVTDQ2PS(x, x)
					VFMADD231PS(x, sc, accV[(b*q8Block/w+c)%nv])
				}
			}
		}
	})
	returnLaneSum(t, append(accK, accV...))
}
