package main

import (
	"fmt"
	"math/bits"

	. "github.com/ckbench/ckbench/kernels/_vecgen"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/gotypes"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// scores writes buf[j] = scale·(q·k_j) for j < cnt, k rows db bytes apart
// (a row is rl bytes: db = rl in a head-major cache, Hkv·rl position-major),
// and returns their maximum (lane 0 of an xmm). Keys go eight at a time
// (eight independent FMA chains, one q load per eight FMAs, one tree
// reduction per eight keys), the rest one at a time. The maximum is taken
// from registers: reloading the 8-wide stores as 16-wide vectors would
// defeat store forwarding.
//
// With pf set, every two-chunk step also prefetches from pf's region (the
// V tile, pulled in while the scores are computed, so memory keeps
// streaming): half as many bytes as the step reads of K, or, spread
// (AVX2), as many on every ng-th step. AVX-512's whole-row path steps
// per two rows instead, f32 only.
func (t tier) scores(buf, q, k, cnt, db GPVirtual, rl, scale Mem, pf *prefetcher) VecVirtual {
	return t.scoresBy(false, buf, q, k, cnt, db, rl, scale, pf)
}

// scoresBy is scores; with four set, where the tier's scoresBy4 allows,
// it also takes four keys at a time between the batches of eight and the
// single keys (the lone chunks' four keys a call).
func (t tier) scoresBy(four bool, buf, q, k, cnt, db GPVirtual, rl, scale Mem, pf *prefetcher) VecVirtual {
	pf.hold()
	defer pf.release()
	left, row, out := GP64(), GP64(), GP64()
	MOVQ(cnt, left)
	MOVQ(k, row)
	MOVQ(buf, out)
	db3 := GP64()
	LEAQ(Mem{Base: db, Index: db, Scale: 2}, db3)
	mx, mx1 := YMM(), XMM()
	VMOVUPS(KC(CNegInf), mx)
	VMOVSS(KC(CNegInf), mx1)

	by8, by1, done := NewLabel("scores_by8"), NewLabel("scores_by1"), NewLabel("scores_done")
	by4 := by1
	withBy4 := four && t.scoresBy4()
	var mx4 VecVirtual
	if withBy4 {
		by4 = NewLabel("scores_by4")
		mx4 = XMM()
		VMOVUPS(KC(CNegInf).Offset(0), mx4)
	}
	Label(by8)
	CMPQ(left, Imm(8))
	JL(LabelRef(by4))
	// AVX-512 q8_0 takes its rows in pairs (q8DotPair) with accumulators
	// of its own; the rest, eight accumulators.
	rowPairs := t.kv.q8 && t.W == 16
	var acc [8]VecVirtual
	if !rowPairs {
		for i := range acc {
			acc[i] = t.Vec()
			t.Zero(acc[i])
		}
	}
	p0, p4, qd, end := GP64(), GP64(), GP64(), GP64()
	MOVQ(row, p0)
	LEAQ(Mem{Base: row, Index: db, Scale: 4}, p4)
	t.qDelta(qd, q, row) // q chunk = qAt(p0, qd): one induction pointer for all rows
	// Two chunks per iteration, then the odd chunk if D/W is odd.
	MOVQ(rl, end)
	ANDQ(U32(^uint32(2*t.kb()-1)), end)
	ADDQ(row, end)
	reduce := NewLabel("scores_reduce")
	if t.W == 16 && !t.kv.q8 {
		// A row of 4 or 8 vectors (D = 64 or 128): q in registers and
		// the eight rows read one after the other, whole, in address
		// order. Reading them a vector of each at a time (below) defeats
		// the hardware prefetchers: from DRAM that order streams at
		// ~11 GB/s where address order reaches ~26 (Zen 4, a plain asm
		// read of the same bytes in each order). AVX2 has no room for
		// q beside the accumulators at D = 128; read from L1 it cost a
		// third of the speed in cache (measured), so AVX2 keeps the
		// order below.
		//
		// Also measured here (Zen 5, AVX-512, one process, interleaved,
		// 8–16 rounds), not kept: the rows four at a time, a vector of
		// each in turn (more FMA chains in the scheduler's reach): f32
		// 0.84–0.97 of the time at ctx 1024 and 4096, but from DRAM (8
		// lone heads, 128 MB) 0.82–0.86 in one set and 1.02–1.11 in
		// three others an hour on; f16 0.94–0.97 in cache, 1.03–1.05
		// from DRAM; eight at a time, f16 from DRAM 1.22. A batch's
		// FMAs emitted before the reduction of the batch before it (two
		// sets of accumulators taking turns): 0.97–1.02. Two accumulators
		// a row at D = 128 (its chunks alternating, halving each row's
		// chain of dependent FMAs; 16 accumulators and q's 8 fit in the
		// zmm registers): 0.98–1.00 in L2 and L3, f32 and f16 (Zen 5, 3
		// rounds), so the chains' latency is not what holds them back.
		for _, nc := range []int{8, 4} {
			other := NewLabel("scores_seq_no")
			CMPQ(rl, U32(nc*t.kb()))
			JNE(LabelRef(other))
			qv := make([]VecVirtual, nc)
			for c := range qv {
				qv[c] = t.Vec()
				VMOVUPS(Mem{Base: q, Disp: c * t.VB()}, qv[c])
			}
			every := 2 // rows a prefetch step (see below)
			if pf != nil && pf.rows && nc*t.kb() >= 256 {
				every = 1
			}
			for i := range acc {
				for c := range qv {
					t.kvFMA(rowsAt(p0, p4, db, db3, c*t.kb())[i], qv[c], acc[i])
				}
				// Every second row prefetches two rows of pf's region
				// (as many bytes as it read of K; position-major, see
				// below). A lone head's f32 decode took 0.79–0.91 of
				// the time at hd 64 and 128, ctx 1024, 4096 and 32768
				// --cold (Zen 5, interleaved A/B, three runs of 5–6
				// rounds), and 0.94–0.98 an hour later with the host
				// slower (3.1 against 3.5 GHz, 8 rounds): never slower.
				// f16 went 1.23 from DRAM with it at tile_k 16 (and
				// 1.05–1.06 in L3 on Zen 5, ctx 4096, by T1 or T0), but
				// at its auto tile since (32 at hd 128, 64 at hd 64;
				// AutoTileKFor) it gains: Zen 5, its time over the
				// paired kv-read's, sweeps alternated, 3–4 rounds,
				// from DRAM (ctx 32768 --cold) hd 128 0.88–0.95
				// (one head) and 0.98 (8:8), hd 64 0.98; in L3 (ctx
				// 4096) hd 128 1.02 and hd 64 0.94. In one process
				// (12 rounds) 0.93 from DRAM and 1.05 in L3 at hd 128.
				//
				// A position-major cache's prefetcher takes a row a
				// step (two under 256 bytes: stepRows), so where rows
				// are 256 bytes or more every row steps it, or only half
				// the tile's V would be fetched. So (Zen 5, as above, 3–5
				// rounds, 8:8) from DRAM hd 128 f16 0.88 and f32 0.84,
				// hd 64 f32 0.91; in cache (ctx 256 to 1024) 0.93–1.02.
				if pf != nil && i%every == every-1 {
					pf.stepN(2 * nc * t.kb() / 64)
				}
			}
			JMP(LabelRef(reduce))
			Label(other)
		}
	}
	var pairs [4]VecVirtual // AVX-512 q8_0: the accumulators of row pairs
	if t.kv.q8 {
		// One q8_0 block of every row per step, an int8 dot against
		// the quantized query's block (q8Dot; AVX-512 two rows in a
		// zmm, q8DotPair); q and the rows advance 34 bytes.
		MOVQ(q, qd)
		MOVQ(rl, end)
		ADDQ(row, end)
		if rowPairs {
			for i := range pairs {
				pairs[i] = ZMM()
				t.Zero(pairs[i])
			}
		}
		blk := NewLabel("scores_q8")
		Label(blk)
		rows := rowsAt(p0, p4, db, db3, 0)
		if rowPairs {
			qb := t.q8QueryPair(Mem{Base: qd})
			for i := range pairs {
				t.q8DotPair(qb, rows[2*i], rows[2*i+1], pairs[i])
			}
		} else {
			qb := t.q8Query(Mem{Base: qd})
			for i, m := range rows {
				t.q8Dot(qb, m, acc[i])
			}
		}
		// 8 rows of K per step (272 bytes): as many of V (4 lines),
		// spread or not. AVX-512 had taken half as many, as its groups'
		// pairs do; so a lone head's tile of V was half fetched by the
		// end of its scores. All of it (Zen 5, one thread, time over the
		// paired kv-read, sweeps alternated, 3 rounds): from DRAM (ctx
		// 32768 --cold) hd 128 0.85 (tile_k 128), 8:8 0.92 and 32:8 0.97
		// (head 0 of a group prefetches), hd 64 and 256 (tiles of 32 and
		// 8) 1.00–1.01; in L3 (ctx 4096) 0.98–1.01.
		if pf != nil {
			pf.stepN(4)
		}
		ADDQ(U32(q8BlockBytes), p0)
		ADDQ(U32(q8BlockBytes), p4)
		ADDQ(U32(q8BlockBytes), qd)
		CMPQ(p0, end)
		JB(LabelRef(blk))
	} else {
		// AVX2 takes the batch as two halves of four rows (q read twice):
		// a window of 4 rows in which to read a vector of each at a time
		// rather than 8 (at hd 128 f32 the 8 rows are a whole 4 KB page,
		// whose interleaved reading is what the prefetchers do not follow).
		//
		// A cpu-clock profile of AVX2's lone f16 head (hd 128, in L2 and L3)
		// puts 53–55 % of its samples in these scores and 33–35 % in P·V,
		// though both widen and multiply the same bytes. The eight rows as
		// one set (each q vector loaded once for eight rows, not twice for
		// four) pay in cache and lose from DRAM. On an AMD EPYC family 26
		// model 2 (Zen 5, 2026-12-02; one thread, share of the paired
		// kv-read, sweeps alternated, medians of 3–4 rounds, the set against
		// the halves): a lone head at hd 128 in L3 (ctx 4096) 66.3 % against
		// 61.6, hd 256 65.7 against 60.5; from DRAM (ctx 32768 --cold) hd 128
		// 75.5 and 74.7 against 74.9 and 76.6, hd 256 74.9 against 76.2, hd
		// 64 76.8 against 85.5; MHA (8:8, hd 128) 73.4–75.9 against
		// 74.7–77.0; position-major (8:8) 55.3 against 61.8. Built as a mode
		// bit (one set at rows of 256 bytes or more), in one process
		// (BenchmarkPaths, 40 and 60 rounds, the halves' time over the
		// set's): lone head in L3 1.07, from DRAM 0.99–1.03; MHA 1.05 and
		// 0.95. Not kept: a decode's cache mostly comes from DRAM. What holds
		// the halves is not their four FMA chains: two a row in each half
		// (eight chains) took BenchmarkF16Floor's decode-flash to 32.4 % of
		// read in L2 (ctx 1024) and 60.1–60.5 in L3 against the halves' 32.1
		// and 60.2–63.6 (the set 34.9 and 68.1–68.4); nor the prefetch steps
		// (left out, timing only: 33.5 and 58.8).
		halves := [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}
		if t.W == 8 {
			halves = [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}
		}
		for hi, rows := range halves {
			pairs, odd, done := NewLabel("scores_pairs"), NewLabel("scores_odd"), NewLabel("scores_half")
			if hi > 0 { // back to the batch's first chunk
				MOVQ(row, p0)
				LEAQ(Mem{Base: row, Index: db, Scale: 4}, p4)
				MOVQ(rl, end)
				ANDQ(U32(^uint32(2*t.kb()-1)), end)
				ADDQ(row, end)
			}
			CMPQ(p0, end)
			JAE(LabelRef(odd))
			Label(pairs)
			// Each step reads 2·len(rows) vectors of K: it prefetches
			// half as many bytes of V, or, spread, as many on every
			// ng-th step. (AVX-512 lone heads at D other than 64 and
			// 128 taking as many, Zen 5, time over the paired kv-read,
			// 6 rounds: f16 hd 256 0.90–0.92 from DRAM and 0.98 in L3,
			// hd 96 0.95–0.99 and 1.06; f32 0.97–1.03 and 1.02–1.04.
			// Not kept.)
			lines := len(rows) * t.kb() / 64
			if pf != nil && pf.spread {
				lines *= 2
			}
			for u := 0; u < 2; u++ {
				qv := t.Vec()
				VMOVUPS(t.qAt(p0, qd, u*t.kb()), qv)
				all := rowsAt(p0, p4, db, db3, u*t.kb())
				for _, i := range rows {
					t.kvFMA(all[i], qv, acc[i])
				}
				if u == 0 && pf != nil && lines > 0 {
					pf.stepN(lines)
				}
			}
			ADDQ(U32(2*t.kb()), p0)
			ADDQ(U32(2*t.kb()), p4)
			CMPQ(p0, end)
			JB(LabelRef(pairs))
			Label(odd)
			MOVQ(rl, end)
			ADDQ(row, end)
			CMPQ(p0, end)
			JAE(LabelRef(done))
			qv := t.Vec()
			VMOVUPS(t.qAt(p0, qd, 0), qv)
			all := rowsAt(p0, p4, db, db3, 0)
			for _, i := range rows {
				t.kvFMA(all[i], qv, acc[i])
			}
			Label(done)
		}
	}
	Label(reduce)
	var s VecVirtual
	if rowPairs {
		s = reduceLanes(pairs)
	} else {
		s = t.reduce8(acc)
	}
	sc := YMM()
	VBROADCASTSS(scale, sc)
	VMULPS(sc, s, s)
	VMAXPS(s, mx, mx)
	VMOVUPS(s, Mem{Base: out})
	ADDQ(Imm(32), out)
	SUBQ(Imm(8), left)
	LEAQ(Mem{Base: row, Index: db, Scale: 8}, row)
	JMP(LabelRef(by8))

	if withBy4 {
		// Four keys, a vector of each row at a time.
		Label(by4)
		CMPQ(left, Imm(4))
		JL(LabelRef(by1))
		var a4 [4]VecVirtual
		for i := range a4 {
			a4[i] = t.Vec()
			t.Zero(a4[i])
		}
		// Each row whole, in address order (rows interleaved a vector at
		// a time, the hardware prefetchers lose a stream from DRAM).
		rowsDone := NewLabel("scores_by4_rows")
		if t.W == 16 {
			// q in registers where a row is 4 or 8 vectors (D 64, 128).
			for _, nc := range []int{8, 4} {
				other := NewLabel("scores_by4_no")
				CMPQ(rl, U32(nc*t.kb()))
				JNE(LabelRef(other))
				qv := make([]VecVirtual, nc)
				for c := range qv {
					qv[c] = t.Vec()
					VMOVUPS(Mem{Base: q, Disp: c * t.VB()}, qv[c])
				}
				for i, m := range rowsAt(row, row, db, db3, 0)[:4] {
					for c := range qv {
						t.kvFMA(m.Offset(c*t.kb()), qv[c], a4[i])
					}
				}
				JMP(LabelRef(rowsDone))
				Label(other)
			}
		}
		for i := range 4 {
			p0, qd, end := GP64(), GP64(), GP64()
			MOVQ(row, p0)
			for range i {
				ADDQ(db, p0)
			}
			t.qDelta(qd, q, p0)
			MOVQ(rl, end)
			ADDQ(p0, end)
			c4 := NewLabel("scores_c4")
			Label(c4)
			k := t.kvLoad(Mem{Base: p0})
			VFMADD231PS(t.qAt(p0, qd, 0), k, a4[i])
			ADDQ(U32(t.kb()), p0)
			CMPQ(p0, end)
			JB(LabelRef(c4))
		}
		Label(rowsDone)
		var y [4]Register
		for i, a := range a4 {
			y[i] = t.Fold256(a, VADDPS)
		}
		h := t.hadd(t.hadd(y[0], y[1]), t.hadd(y[2], y[3]))
		x := XMM()
		if t.W == 16 {
			VEXTRACTF32X4(Imm(1), h, x)
		} else {
			VEXTRACTF128(Imm(1), h, x)
		}
		VADDPS(h.AsX(), x, x)
		sc := XMM()
		VBROADCASTSS(scale, sc)
		VMULPS(sc, x, x)
		VMAXPS(x, mx4, mx4)
		VMOVUPS(x, Mem{Base: out})
		ADDQ(Imm(16), out)
		SUBQ(Imm(4), left)
		LEAQ(Mem{Base: row, Index: db, Scale: 4}, row)
	}
	Label(by1)
	TESTQ(left, left)
	JZ(LabelRef(done))
	a := t.Vec()
	t.Zero(a)
	MOVQ(row, p0)
	MOVQ(rl, end)
	ADDQ(row, end)
	chunk1 := NewLabel("scores_chunk1")
	if t.kv.q8 {
		MOVQ(q, qd)
		Label(chunk1)
		t.q8Dot(t.q8Query(Mem{Base: qd}), Mem{Base: p0}, a)
		ADDQ(U32(q8BlockBytes), p0)
		ADDQ(U32(q8BlockBytes), qd)
	} else {
		t.qDelta(qd, q, row)
		Label(chunk1)
		qv1 := t.Vec()
		VMOVUPS(t.qAt(p0, qd, 0), qv1)
		t.kvFMA(Mem{Base: p0}, qv1, a)
		ADDQ(U32(t.kb()), p0)
	}
	CMPQ(p0, end)
	JB(LabelRef(chunk1))
	x := t.HReduce(a, VADDPS)
	VMULSS(scale, x, x)
	VMAXSS(x, mx1, mx1)
	VMOVSS(x, Mem{Base: out})
	ADDQ(Imm(4), out)
	DECQ(left)
	ADDQ(db, row)
	JMP(LabelRef(by1))
	Label(done)
	m := t.HReduce128(mx, VMAXPS)
	VMAXSS(mx1, m, m)
	if withBy4 {
		m4 := HReduce4(mx4, VMAXPS)
		VMAXSS(m4, m, m)
	}
	return m
}

// group is the state that scores2 and scores4 keep in scratch memory
// between batches (avo leaves 12 GP registers to allocate): per head its
// q row and output position, and the batch's first row, the row's end (and
// one vector before it) and the keys left.
type group struct {
	lq, lout                 []Mem
	lEnd, lEnd2, lLeft, lRow Mem
}

// newGroup lays the state of a group of heads out in the scratch bytes at
// tmp (32 + 16·heads of them): head h's q row at q + h·qs, its outputs at
// buf + h·bs, k's rows from k, cnt keys.
func newGroup(heads int, tmp Mem, q, qs, buf, bs, k, cnt GPVirtual) *group {
	g := &group{lEnd: tmp, lEnd2: tmp.Offset(8), lLeft: tmp.Offset(16), lRow: tmp.Offset(24)}
	r, o := GP64(), GP64()
	MOVQ(q, r)
	MOVQ(buf, o)
	for h := range heads {
		if h > 0 {
			ADDQ(qs, r)
			ADDQ(bs, o)
		}
		g.lq = append(g.lq, tmp.Offset(32+8*h))
		g.lout = append(g.lout, tmp.Offset(32+8*heads+8*h))
		MOVQ(r, g.lq[h])
		MOVQ(o, g.lout[h])
	}
	MOVQ(cnt, g.lLeft)
	MOVQ(k, g.lRow)
	return g
}

// rows points p0 at the batch's first row and qd[h] at head h's q − row
// (see qAt), and sets the row's end (one row of rl bytes on) and, with
// end2, one vector before it.
func (g *group) rows(t tier, rl Mem, end2 bool) (p0 GPVirtual, qd []GPVirtual) {
	p0 = GP64()
	MOVQ(g.lRow, p0)
	for _, lq := range g.lq {
		d := GP64()
		t.qDelta(d, lq, p0)
		qd = append(qd, d)
	}
	e := GP64()
	MOVQ(rl, e)
	ADDQ(p0, e)
	MOVQ(e, g.lEnd)
	if end2 {
		SUBQ(U32(t.kb()), e) // p0 + 2 vectors ≤ end ⟺ p0 < end − kb
		MOVQ(e, g.lEnd2)
	}
	return p0, qd
}

// cursor is a pointer that chunks moves on with p0: per bytes of p0's
// advance.
type cursor struct {
	r   GPVirtual
	per int
}

// chunks emits body(off) for every vector of the batch's rows from p0
// (the more cursors moving with it): two a step while two remain, then the
// odd one.
func (g *group) chunks(t tier, name string, p0 GPVirtual, body func(off int), more ...cursor) {
	chunk2, odd, done := NewLabel(name+"_chunk2"), NewLabel(name+"_odd"), NewLabel(name+"_chunks")
	CMPQ(p0, g.lEnd2)
	JAE(LabelRef(odd))
	Label(chunk2)
	body(0)
	body(t.kb())
	ADDQ(U32(2*t.kb()), p0)
	for _, c := range more {
		ADDQ(U32(2*t.kb()*c.per), c.r)
	}
	CMPQ(p0, g.lEnd2)
	JB(LabelRef(chunk2))
	Label(odd)
	CMPQ(p0, g.lEnd)
	JAE(LabelRef(done))
	body(0)
	Label(done)
}

// next moves the batch on by n rows (db bytes apart) and n keys: one
// LEAQ per scale (8, 4, 2) that n holds, an ADDQ for a last single row.
func (g *group) next(db GPVirtual, n int) {
	SUBQ(Imm(uint64(n)), g.lLeft)
	r := GP64()
	MOVQ(g.lRow, r)
	for _, s := range []int{8, 4, 2} {
		if n >= s {
			LEAQ(Mem{Base: r, Index: db, Scale: uint8(s)}, r)
			n -= s
		}
	}
	if n == 1 {
		ADDQ(db, r)
	}
	MOVQ(r, g.lRow)
}

// lone emits the keys left after the batches, one at a time: each head's
// score, scaled, into its output and its running maximum mx1[h]. It jumps
// to done when no key is left.
func (g *group) lone(t tier, name string, db GPVirtual, rl, scale Mem, mx1 []VecVirtual, done LabelRef) {
	top, chunk := NewLabel(name+"_by1"), NewLabel(name+"_chunk1")
	Label(top)
	CMPQ(g.lLeft, Imm(0))
	JE(done)
	a := make([]VecVirtual, len(g.lq))
	for h := range a {
		a[h] = t.Vec()
		t.Zero(a[h])
	}
	p1, qd := g.rows(t, rl, false)
	Label(chunk)
	kr := t.kvLoad(Mem{Base: p1})
	for h := range a {
		VFMADD231PS(t.qAt(p1, qd[h], 0), kr, a[h])
	}
	ADDQ(U32(t.kb()), p1)
	CMPQ(p1, g.lEnd)
	JB(LabelRef(chunk))
	for h, v := range a {
		x := t.HReduce(v, VADDPS)
		VMULSS(scale, x, x)
		VMAXSS(x, mx1[h], mx1[h])
		out := GP64()
		MOVQ(g.lout[h], out)
		VMOVSS(x, Mem{Base: out})
		ADDQ(U32(4), g.lout[h])
	}
	g.next(db, 1)
	JMP(LabelRef(top))
}

// scores2 is scores for two heads of a GQA group at once: each K vector is
// loaded (and widened) once into a register and multiplied by both heads'
// q, halving the loads and the loop overhead per score. Keys go in batches
// of eight (AVX-512: 16 zmm accumulators) or, AVX2, of six (f16: 12 of its
// 16 ymm) and four. It writes buf0 and buf1 and returns both maxima. Only
// the chunk loop's pointers live in GP registers; the per-batch state lives
// in the scratch bytes at tmp (96 bytes; avo leaves 12 GP registers to
// allocate). pf is as in scores: four lines of prefetch per step (spread:
// every ng-th).
func (t tier) scores2(buf0, buf1, q0, q1, k, cnt, db GPVirtual, rl, scale Mem, tmp Mem, pf *prefetcher) (VecVirtual, VecVirtual) {
	pf.hold()
	defer pf.release()
	qs, bs := GP64(), GP64()
	MOVQ(q1, qs)
	SUBQ(q0, qs)
	MOVQ(buf1, bs)
	SUBQ(buf0, bs)
	g := newGroup(2, tmp, q0, qs, buf0, bs, k, cnt)
	db3 := GP64()
	LEAQ(Mem{Base: db, Index: db, Scale: 2}, db3)
	// Keys per batch, largest first. AVX-512: eight. AVX2: four, and for
	// f16 six first: 12 ymm accumulators are 12 FMA chains where eight
	// only just cover the FMA latency, and with them the maxima move to
	// scratch memory (16 ymm in all). Interleaved A/B on Zen 3 (decode-
	// flash-gqa, hd 128, 1 thread): f16 2–3 % faster in L3; f32 6–8 %
	// slower (six 512-byte rows streamed side by side), so f32 keeps four.
	sizes := []int{8}
	if t.W == 8 {
		sizes = []int{4}
		if t.kv.size == 2 {
			sizes = []int{6, 4}
		}
	}
	// The running maxima of the batches: AVX-512 in a ymm per head, AVX2
	// an xmm per head at lMx.
	var mx [2]VecVirtual
	mx1 := make([]VecVirtual, 2) // the lone keys' (AVX2: set after the batches)
	lMx := [2]Mem{tmp.Offset(64), tmp.Offset(80)}
	for h := range 2 {
		if t.W == 8 {
			x := XMM()
			VMOVUPS(KC(CNegInf), x)
			VMOVUPS(x, lMx[h])
		} else {
			mx[h], mx1[h] = YMM(), XMM()
			VMOVUPS(KC(CNegInf), mx[h])
			VMOVSS(KC(CNegInf), mx1[h])
		}
	}
	by1, done := NewLabel("scores2_lone"), NewLabel("scores2_done")
	for _, R := range sizes {
		top, next := NewLabel(fmt.Sprintf("scores2_by%d", R)), NewLabel(fmt.Sprintf("scores2_after%d", R))
		Label(top)
		if R == 6 {
			// Sixes while ten or more keys are left, or six: the rest
			// then goes in fours, so an even tile leaves no lone key.
			batch := NewLabel("scores2_six")
			CMPQ(g.lLeft, Imm(6))
			JE(LabelRef(batch))
			CMPQ(g.lLeft, Imm(10))
			JL(LabelRef(next))
			Label(batch)
		} else {
			CMPQ(g.lLeft, Imm(uint64(R)))
			JL(LabelRef(next))
		}
		var acc [2][]VecVirtual
		for h := range 2 {
			for range R {
				a := t.Vec()
				t.Zero(a)
				acc[h] = append(acc[h], a)
			}
		}
		p0, qd := g.rows(t, rl, true)
		var p4 GPVirtual // rows 4–7
		var more []cursor
		if R > 4 {
			p4 = GP64()
			LEAQ(Mem{Base: p0, Index: db, Scale: 4}, p4)
			more = append(more, cursor{p4, 1})
		}
		g.chunks(t, fmt.Sprintf("scores2_%d", R), p0, func(off int) {
			qa, qb := t.Vec(), t.Vec()
			VMOVUPS(t.qAt(p0, qd[0], off), qa)
			VMOVUPS(t.qAt(p0, qd[1], off), qb)
			for i, m := range rowsAt(p0, p4, db, db3, off)[:R] {
				kr := t.kvLoad(m)
				VFMADD231PS(kr, qa, acc[0][i])
				VFMADD231PS(kr, qb, acc[1][i])
			}
			pf.step()
		}, more...)
		for h := range 2 {
			out := GP64()
			if R == 8 {
				x, sc := t.reduce8([8]VecVirtual(acc[h])), YMM()
				VBROADCASTSS(scale, sc)
				VMULPS(sc, x, x)
				VMAXPS(x, mx[h], mx[h])
				MOVQ(g.lout[h], out)
				VMOVUPS(x, Mem{Base: out})
			} else {
				x, sc, m := t.reduce4(acc[h][:4]), XMM(), XMM()
				VBROADCASTSS(scale, sc)
				VMULPS(sc, x, x)
				VMAXPS(lMx[h], x, m)
				MOVQ(g.lout[h], out)
				VMOVUPS(x, Mem{Base: out})
				if R == 6 { // [s4, s5, s4, s5]
					y := t.reduce2(acc[h][4], acc[h][5])
					VMULPS(sc, y, y)
					VMAXPS(y, m, m)
					VMOVLPS(y, Mem{Base: out, Disp: 16})
				}
				VMOVUPS(m, lMx[h])
			}
			ADDQ(U32(4*R), g.lout[h])
		}
		g.next(db, R)
		JMP(LabelRef(top))
		Label(next)
	}

	Label(by1)
	if t.W == 8 {
		for h := range 2 {
			mx1[h] = XMM()
			VMOVSS(KC(CNegInf), mx1[h])
		}
	}
	g.lone(t, "scores2", db, rl, scale, mx1, LabelRef(done))
	Label(done)
	var m [2]VecVirtual
	for h := range 2 {
		if t.W == 8 {
			x := XMM()
			VMOVUPS(lMx[h], x)
			m[h] = HReduce4(x, VMAXPS)
		} else {
			m[h] = t.HReduce128(mx[h], VMAXPS)
		}
		VMAXSS(mx1[h], m[h], m[h])
	}
	return m[0], m[1]
}

// scores4 is scores for four heads of a GQA group at once (AVX-512, f32
// and f16): each K vector is loaded (and widened) once and multiplied by
// the four heads' q. Keys go in batches of four: 16 zmm accumulators,
// reduced eight at a time (heads h, h+1, then h+2, h+3) into one ymm
// whose halves are the two heads' four scores. It writes buf[0..3] (head
// h's at buf + h·bs) and returns the four maxima. The per-batch state
// lives in the 96 scratch bytes at tmp. pf is as in scores2: a step per
// chunk.
//
// An f16 64:8 group's scores run at 63–65 % of the FMA roof in L2
// (flashDecode's phase costs, B). A scratch loop of this shape
// alone (16 accumulators, K from L1 or L2, the same reduction tree)
// runs f32 at 84–93 % of the roofline's FMA rate, 8–10 % slower with the
// tree than without it (20–25 % while the host was busy); with f16 rows
// (VCVTPH2PS) at 0.75–0.82 of f32's rate, and neither eight heads × two
// keys (half the widenings), nor each row loaded then widened, nor
// widened a chunk ahead gained more than 1–4 % there: 147–152 GFLOP/s
// with K in L2, where the kernel's scores above ran at 141–147. So an
// f16 group's scores run about as fast as that loop: what they lose is
// the widening (about a fifth) and the tree, not the kernel's own
// bookkeeping.
//
// Not so on Zen 4 (EPYC family 25 model 17, 2026-11-29; a scratch loop of
// Go assembly outside the repo, K from L1, 16 zmm accumulators, no tree):
// the quads' and the octs' loops of VCVTPH2PS from memory and FMAs run at
// the FMA roof, 116–117 GFLOP/s, as the same loops over f32. There the
// widening costs a group nothing (it bounds a lone head, whose widened
// vectors feed one FMA each: F16Floor), and what holds the f16 groups at
// 74–76 % of the roof in L3 is the tree, the softmax and P·V.
func (t tier) scores4(buf, bs, q, qs, k, cnt, db GPVirtual, rl, scale Mem, tmp Mem, pf *prefetcher, lines int) [4]VecVirtual {
	pf.hold()
	defer pf.release()
	g := newGroup(4, tmp, q, qs, buf, bs, k, cnt)
	db3 := GP64()
	LEAQ(Mem{Base: db, Index: db, Scale: 2}, db3)
	const R = 4 // keys per batch
	// mx[0]: heads 0, 1 (low, high half), mx[1]: heads 2, 3; mx1: the
	// lone keys' maxima.
	mx, mx1 := negInfs(2, 4)

	by4, by1, done := NewLabel("scores4_by4"), NewLabel("scores4_lone"), NewLabel("scores4_done")
	Label(by4)
	CMPQ(g.lLeft, Imm(R))
	JL(LabelRef(by1))
	var acc [4][R]VecVirtual
	for h := range 4 {
		for i := range R {
			acc[h][i] = t.Vec()
			t.Zero(acc[h][i])
		}
	}
	p0, qd := g.rows(t, rl, true)
	g.chunks(t, "scores4", p0, func(off int) {
		var qv [4]VecVirtual
		for h := range 4 {
			qv[h] = t.Vec()
			VMOVUPS(t.qAt(p0, qd[h], off), qv[h])
		}
		for i, m := range rowsAt(p0, nil, db, db3, off)[:R] {
			kr := t.kvLoad(m)
			for h := range 4 {
				VFMADD231PS(kr, qv[h], acc[h][i])
			}
			stepPart(pf, lines, R, i)
		}
	})
	sc := YMM()
	VBROADCASTSS(scale, sc)
	for i := range 2 {
		var a [8]VecVirtual
		copy(a[:4], acc[2*i][:])
		copy(a[4:], acc[2*i+1][:])
		x := t.reduce8(a) // heads 2i (low half), 2i+1 (high half)
		VMULPS(sc, x, x)
		VMAXPS(x, mx[i], mx[i])
		o0, o1 := GP64(), GP64()
		MOVQ(g.lout[2*i], o0)
		MOVQ(g.lout[2*i+1], o1)
		VMOVUPS(x.AsX(), Mem{Base: o0})
		VEXTRACTF128(Imm(1), x, Mem{Base: o1})
		ADDQ(U32(4*R), g.lout[2*i])
		ADDQ(U32(4*R), g.lout[2*i+1])
	}
	g.next(db, R)
	JMP(LabelRef(by4))

	Label(by1)
	g.lone(t, "scores4", db, rl, scale, mx1, LabelRef(done))
	Label(done)
	var m [4]VecVirtual
	for i := range 2 {
		hi := XMM()
		VEXTRACTF128(Imm(1), mx[i], hi)
		for j, x := range []VecVirtual{mx[i].AsX().(VecVirtual), hi} {
			h := 2*i + j
			m[h] = HReduce4(x, VMAXPS)
			VMAXSS(mx1[h], m[h], m[h])
		}
	}
	return m
}

// wide reports whether t has the wide path for the GQA groups over an
// f16 cache (and AVX-512's head-major f32 ones, below): a group's heads
// wideHeads at a time (scoresWide, pvWide) while that many remain, every
// K and V vector widened once for all of them: eight on AVX-512 (then its
// quads), four on AVX2 (then its pairs). A call
// takes it where the caller asks (the mode argument's modeWide bit; wideOn
// in decode_amd64.go: Intel, and Zen 4's AVX-512, whose doc has Zen 4's
// measurements).
//
// On an Intel Xeon (family 6 model 207) VCVTPH2PS zmm is two µops on ports
// 0 and 5, the ports of the 512-bit FMAs: a quad's scores issue 4 FMAs and
// 2 widening µops a vector (its P·V the same), an oct's 8 and 2, and a
// cpu-clock profile of AVX-512 f16 64:8 in L3 had a third of the kernel's
// samples on pv4's row loop. There (one thread, hd 128 unless said, sweeps
// alternated, 3 rounds, time over the narrower sets'):
//
//   - AVX-512, eight heads against two quads (each prefetch step then four
//     lines): in L3 (ctx 1024) 64:8 0.68 and 0.72 (two sets; rounds
//     0.63–0.72 but one noisy 1.22), from 30 % of the paired kv-read to
//     40–41 %; position-major 0.74; ctx 4096 0.87 (position-major 0.92);
//     hd 256 0.93, hd 64 0.89–0.97; from DRAM (ctx 32768 --cold) 1.00
//     (0.94–1.19), where the stream bounds it: see wideLines.
//   - AVX2, four heads against two pairs: in L3 32:8 0.91, 64:8 0.73–0.84
//     (prefetch as the pairs'); with wideLines' pacing, from DRAM 0.87–0.94
//     (4 rounds; 32:8 72–76 % of the read against 67–69 %, 64:8 46–51
//     against 39–43) and in L3 0.84–0.92.
//
// Not kept: AVX2's f32 groups four heads at a time too (no widening to
// share there): in L3 (ctx 1024) 32:8 1.05 and 64:8 1.14 of the pairs'
// time; on the Xeon (in one process, 9 rounds, their near stream spread
// as the f16 sets') from DRAM (ctx 32768) 32:8 1.47 and 64:8 1.51, in L3
// (64:8, ctx 1024) 1.18.
//
// Tile size changes it little (AVX-512 64:8 in L3: tk 16 and 32 the same,
// 64 5 % slower). Where an AVX-512 oct's time goes (profile, ctx 1024):
// scoresWide half (its reductions and stores a third of that), pvWide a
// third, the softmax the rest.
//
// AVX-512 f32 takes octs too, head-major, in groups of 8 to 15 heads (a
// runtime test in eachHead): nothing to widen, but one pass over a tile
// where two quads take two, and half the reductions' setup. On the Xeon
// (one thread, hd 128 unless said, time over the paired quads'): in one
// process, the paths in turn (modeWide flipped, 15 rounds, three runs),
// 64:8 in L3 (ctx 1024) 0.94–0.98, hd 256 0.92–0.94, hd 64 1.00, ctx 4096
// 0.96–0.97, ctx 32768 (past the L3, not rotated) 0.98–1.04. In sweeps
// alternated (a noisy host: rounds of a set 0.5–1.4), 64:8 in L3 (ctx
// 1024, 4 rounds) 0.95, 0.79 and one set of 3 at 1.26, ctx 4096 0.95;
// from DRAM (ctx 32768 --cold, four sets of 4–6 rounds) 0.95, 0.96, 1.17
// and 0.99 (tk 32: 0.90, 0.88), the octs at 73–76 % of the paired
// kv-read round after round where the quads ranged 60–77 %. Not kept: 128:8 as two octs, from DRAM
// 1.12 (their stream paced for one pass: see wideLines); position-major,
// from DRAM 1.08–1.13 though 0.83–0.91 in L3; the octs' stream at one
// line a step (f16's) 0.72–0.84 of the time of two, at four 1.2–1.5.
func (t tier) wide() bool {
	return t.kv.size == 2 || (t.W == 16 && t.kv.size == 4 && !t.pos)
}

// wideHeads is the heads the wide path takes at a time: 8 (AVX-512), 4
// (AVX2).
func (t tier) wideHeads() int { return t.W / 2 }

// wideLines is the lines of prefetch a step of the wide path takes: so
// paced, a tile streams in over the whole phase that reads the other
// (this V over the scores, the next K over P·V), not in a burst at its
// start. AVX-512 (near, T0): the bytes of K (V) the step reads, one line
// over f16, two over f32. Against two lines, from DRAM (64:8) 0.74–0.79 of the time (67–69
// % of the paired kv-read against 53–57 %); two against four 0.89–0.90;
// one against four in L3 (ctx 1024) 0.91–0.98, at ctx 4096 0.87–0.93;
// none at all (the near stream off) 1.84–1.93. AVX2 (spread, every ng-th
// step): two lines, against four 0.87–0.94 from DRAM, against one 0.94
// and 0.77–0.84 (one line 1.06–1.30 of two's time), measured with the
// far T1 stream (a tile ahead). AVX2's wide sets now take the near T0
// stream instead (this tile's V during the scores, the next K during
// P·V; wideNear in flashDecode), so paced: Xeon, f16, sweeps alternated,
// time over far T1's, from DRAM (ctx 32768 --cold) 32:8 0.87 and 0.90 (3
// and 4 rounds; 72–75 % of the paired kv-read to 77–82 %), 64:8 0.94 and
// 1.02 (47–49 % both: its widening bounds it); cold at ctx 1024 and 4096
// 0.98 and 0.84 (32:8, 66–73 % to 77–81 %), 0.99 and 0.90 (64:8); in L3
// (ctx 1024, 4096) 0.96–0.99 (32:8), 0.72–0.99 (64:8). Zen 5 had taken
// its AVX2 groups (pairs then, f32 and f16) 0.91–1.15 with near: the wide
// sets run where modeWide is asked alone (Intel: Zen 4's AVX2 measured
// 1.12–1.14 with them, f16 32:8 from DRAM; wideOn).
func (t tier) wideLines() int {
	if t.W == 16 {
		return t.kv.size / 2
	}
	return 2
}

// pacedLines is the lines of prefetch a step of the AVX-512 quads takes
// where the caller asks for paced quads (the mode argument's modePaced
// bit; wideOn in decode_amd64.go: Intel, Zen 4's AVX-512), so that a
// tile streams in over its whole phase: f16 always (two lines, the bytes of K or V a step
// reads, where their four, chosen on Zen 5, fetch a 32:8 group's tile in
// the first half of its phase), f32 in groups of two quads or more (a
// quad's step reads four lines, and two quads' passes take the phase).
// On the Xeon of wide (f16 32:8,
// sweeps alternated, 3 rounds, time over four lines'): from DRAM (ctx
// 32768 --cold) 0.87–0.91 (77–78 % of the paired kv-read against 65–68
// %); in L3 (ctx 1024, 4096) 0.77–0.93; one line 1.21–1.27 of two's time
// from DRAM. On Zen 5 two lines had taken 1.02 (32:8) and 1.07 (64:8) of
// four's time from DRAM (prefetcher's doc). f32 64:8 (two lines against
// four, 4 rounds): from DRAM 0.92 (0.75–1.01; 72 % of the read to 76 %),
// in L3 (ctx 1024 and 4096) 0.95 (rounds 0.92–0.95 and a noisy 1.26); an
// earlier set of 3 rounds, its points mostly unstable, had 1.11–1.18 from
// DRAM. 32:8 from DRAM 1.04: its single quad keeps four. A far T1
// stream beside the near one: farQuads.
const pacedLines = 2

// farQuads reports whether t's quads have a far stream beside their near
// one (prefetcher.far), taken where the caller asks (the mode argument's
// modeFar bit; wideOn in decode_amd64.go: Intel, Zen 4's AVX-512): the
// head-major quads, whose steps are near. Each near step then also
// PREFETCHT1s as many lines farTiles tiles beyond its cursor: during the
// scores the V of the tile three on, during P·V the K four on (the cursor
// itself runs a tile ahead of near).
//
// On the Xeon of wide (one thread, AVX-512, 32:8 unless said, in one
// process with modeFar flipped between calls, 9 rounds, median time
// without it over with it): from DRAM (ctx 32768, copies rotated past
// 1.2 GB) hd 128 f32 1.03–1.04, f16 1.03–1.07; at tile_k 32 (the
// window's other tile) f32 1.08–1.09, f16 1.09–1.11; hd 64 f32 1.12 (f16
// 0.99), hd 256 f32 1.04, f16 1.10; 128:8 f32 (four quads, compute-bound)
// 0.97. In cache it costs: ctx 4096 (in L3) 0.97, ctx 1024 f32 0.93 (f16
// 1.00). Sweeps alternated from DRAM (4 rounds): see the commit.
// farTiles 3 and 4 were as 2 (f32 1.03–1.04, f16 0.97–1.07, tile_k 32
// 1.08–1.10), a fixed 16 or 32 KB beyond the cursor the same; the cursor
// itself (one tile beyond near: f32 1.03, f16 0.98–0.99) or one tile
// beyond it (f32 1.01, f16 1.04) less.
//
// The reason it pays, in a scratch loop (Go assembly outside the repo,
// Xeon, two 256 MB regions read in tiles of 8 or 16 KB, K then V, each
// 64 bytes widened (f16) and multiplied into the accumulators of 4 or 8
// heads, against a plain read of both regions): with no software
// prefetch it read at 0.45–0.70 of the plain read, with near alone (as
// the kernel's) 0.85–0.98, with near and a far T1 stream two tiles on
// 1.00–1.09. An earlier trial in the kernel, the far lines at the cursor
// itself (f16, sweeps alternated, 3 rounds), had measured from DRAM 32:8
// 0.93 of near alone's time but the wide sets 1.07 and in L3 at ctx 4096
// 1.15. Of the wide sets only AVX-512's f32 octs take it: farOcts.
func farQuads(t tier) bool { return !t.pos }

// farOcts reports whether t's wide sets have the far stream beside their
// near one, as the quads (farQuads; taken where the caller asks): the
// AVX-512 head-major f32 octs, whose steps take a line after each load
// (stepPart). Stepping two lines after two loads, they had measured with
// it (64:8, in one process, time without it over with it, 9 rounds) from
// DRAM f32 1.01 and 1.04 (tile_k 32), f16 0.96 and 0.99, in L3 f32
// 0.93–0.94, f16 0.99; again the morning of 2026-11-29 from DRAM f32
// 1.03, f16 0.99, in L3 (ctx 1024) f32 0.94, f16 1.00. At 10:10–10:30
// UTC, hd 128, their steps split, time with it over without (9 rounds):
// from DRAM f32 0.90 (0.85–1.00), with the split against neither 0.88
// (twice; rounds 0.83–0.91), f16 1.00; in L3 (ctx 1024, 21 rounds) f32
// 1.07 alone, 1.045 with the split. A decode's cache mostly comes from
// DRAM: f32 takes it. f16 (its widening bounds it, wide) does not, nor do
// AVX2's sets of four (f16, spread), slower with it: without it they took
// 0.95–0.98 of its time from DRAM, 0.96–0.98 in L3.
func farOcts(t tier) bool { return t.W == 16 && t.kv.size == 4 && !t.pos }

// nearT1Of reports whether t's quads, octs and pairs send their near
// lines to L2 instead of L1 where the caller asks (the mode argument's
// modeNearT1 bit, which flashAsm passes to groups of four or more;
// nearT1On in decode_amd64.go: Zen 4's AVX-512, whose doc has the
// measurements): f32, head-major. Each near step then PREFETCHT1s the
// lines it would PREFETCHT0. On Zen 4 an L1 fill of a line still on its
// way from DRAM holds one of the few L1 miss buffers, and the f32 sets,
// which read a line for every 4 FMAs of a head (f16: 8), wait on them.
// The f16 quads went 1.01–1.04 with it: they keep T0.
func nearT1Of(t tier) bool { return t.W == 16 && t.kv.size == 4 && !t.pos }

// farTiles is how many tiles beyond the near cursor a far step reaches
// (farQuads): an index scale, so 1, 2, 4 or 8.
const farTiles = 2

// The flash kernels' mode bits (flashMode in the Go package).
const (
	modeLonePipe = 1 << iota
	modeWide
	modePaced
	modeFastExp
	modeFar
	modeSplit
	modeNearT1
	modeSmallTiles // read by flashAsm in Go, never here
	modeSoftmaxStep
	modeQ8Lone // read by flashAsm in Go, never here
	modeL1
)

// softmaxStepOf reports whether t's flash kernel has the softmax step of
// AVX2's head-major f32 pairs: each pair's softmax begins the next tile's
// K (pfK), two lines per byte of an element (8 lines), as the AVX-512
// pairs' near stream does, where the mode argument has modeSoftmaxStep
// (softmaxStepOn in decode_amd64.go: Zen 4, where it was measured). On
// an AMD EPYC family 25 model 17 (2026-11-29, one thread, hd 128, ctx
// 32768 with copies rotated past 1.2 GB, in one process with the bit
// flipped between timed batches, 7–9 rounds, median time with it over
// without): 32:8 at tile_k 8 0.89–0.91 (six sets; 10.1–11.2 ms a call to
// 9.2–10.0), at 16 and 32 0.99; 64:8 at 8 0.98; 16:8 0.99–1.00, 48:8
// 1.01–1.02; hd 64 (tk 16) 0.98, hd 256 (tk 4) 1.00; in L3 (ctx 1024)
// 1.00–1.01. One line alone there did as much (0.89), and so did the
// next K's first line touched at the tile's start (0.90, but f16 1.05):
// what counts is that the next tile's K begins before P·V, not the bytes.
// f16 (four lines) went 1.00–1.01, one line 1.02: f32 alone.
func softmaxStepOf(t tier) bool { return t.W == 8 && t.kv.size == 4 && !t.pos }

// l1Of reports whether t's flash kernel has the L1 stream of AVX2's
// head-major f32 and f16 kernels: their prefetch steps (this tile's V
// during the scores, the next tile's K during P·V: a lone head's phases,
// the pairs' and the wide sets' but for the wide sets' near lines, and
// the f32 pairs' softmax step) PREFETCHT0, into L1, where the mode
// argument has modeL1 (l1On in decode_amd64.go: Zen 5, where it was
// measured), PREFETCHT1 otherwise. On an AMD EPYC family 26 model 2 (Zen
// 5, 2026-12-02; one thread, hd 128, share of the paired kv-read, sweeps
// alternated; a slow hour, the DRAM roofline 33 GB/s):
//
//   - f16 lone head (medians of 10 rounds in two sets): from DRAM (ctx
//     32768 --cold) 82.8 % against 77.6 (81.5 and 75.1 in the first
//     set), in L3 (ctx 4096) 53.9 against 50.9 (55.7 and 52.5); built as
//     this mode bit (a test of it per step), 5 rounds more, 75.5 against
//     71.7 and 62.6 against 58.6. PREFETCHNTA did about as well (81.2 and
//     53.8), PREFETCHT2 no better than T1 (72.8, 52.5), one line in two at
//     T1 (the L2's own prefetchers left the rest) worse (52.0 from DRAM),
//     no prefetch at all 42 from DRAM though 56 in L3.
//   - f16 groups (3 rounds): from DRAM 32:8 49.5 and 64:8 26.1 against
//     50.5 and 26.3, in L3 (ctx 1024) 21.1 and 11.2 against 19.0 and 10.0.
//   - f32 groups (4 rounds, three sets): from DRAM 32:8 77.0, 73.7 and
//     74.7 against 70.8, 68.3 and 72.7; 64:8 49.0, 52.3 and 49.4 against
//     49.7, 49.1 and 56.0 (its rounds 43–58 either way); in L3 level.
//
// In one process (BenchmarkPaths, 30–60 rounds, T1's time over T0's): f16
// lone head 1.05 from DRAM, 1.11 in L3; f16 32:8 1.02 and 1.00, 64:8 1.00
// and 1.01; f32 32:8 1.14–1.24 from DRAM (ctx 16384), 0.97–1.01 in L3;
// f32 64:8 0.99–1.02 and 1.00–1.02. Not for q8_0 (lone, from DRAM 66.8
// against 70.5, in L3 the same). Elsewhere T1 stays: on Zen 4 the groups'
// T0 had read 37–41 % of the paired kv-read where T1 reads 53–59
// (prefetcher), on the Xeon T0 took AVX2's f32 pairs 1.06–1.12 of the
// time, and on Zen 3 every hint fills L1 anyway.
func l1Of(t tier) bool { return t.W == 8 && !t.kv.q8 && !t.pos }

// splitSteps is set while the loops are emitted whose prefetch steps go a
// line after each load (stepPart): the octs' always (a path only Intel
// takes, modeWide), the quads' twice, with it and without, the mode
// argument's modeSplit bit choosing (bySplit in flashDecode).
var splitSteps bool

// stepPart is part i, of parts in a loop body's order, of a prefetch step
// of lines lines: with splitSteps, the lines that fall to it, spread
// evenly (a line after each load where the body loads as many vectors as
// the step takes lines), so that no two PREFETCHs go back to back;
// without, the whole step at the last part. A spread prefetcher (AVX2)
// takes its whole step at the last part, its countdown counting steps, as
// does a rows one (position-major), whose step is a row whatever its
// lines.
//
// Why, in a scratch loop (Go assembly outside the repo, Intel Xeon family
// 6 model 207, one thread): two 256 MB regions read in tiles of 16 KB, K
// then V, each 64-byte line multiplied into the accumulators of eight
// heads twice over (twice an f32 oct's FLOPs a byte: in cache the loop
// computed at 16–21 GB/s, the octs at 24–29), K two rows at a time and V
// in four column passes as the octs read them, the near T0 and far T1
// streams as here. Two lines of each after every two loads read at 76 %
// (near alone) and 81 % (near and far) of a plain read of both regions;
// one line after each load at 86 % and 96 %. Read in address order, two
// lines after two loads did no better (near and far 83–85 %). In the
// kernel (one process, interleaved, 9 rounds, time over two lines after
// two loads' time): AVX-512 f32 64:8 from DRAM (ctx 32768, copies rotated
// past 1.2 GB) 0.96, with the octs' far stream (farOcts) 0.88 (twice),
// hd 64 0.92, hd 256 0.97; in L3 (ctx 1024, 21 rounds) 1.01 alone, 1.045
// with far. The quads (four lines a step, a line after each of their four
// rows; in P·V after each head): from DRAM f32 32:8 0.99, f16 0.97; in L3
// 0.99 and 0.98; in another set (13 rounds) f32 0.99 (tile_k auto) and
// 1.01 (32), f16 0.94. Not kept: AVX2's spread steps split the same way
// (its pairs' scores a line after each row, their P·V after each head and
// row, its f16 sets of four as here; the countdown counting parts, so as
// many lines a phase): from DRAM (32:8, 64:8, f32 and f16, 9 rounds)
// 0.99–1.01 of the time.
func stepPart(pf *prefetcher, lines, parts, i int) {
	if !splitSteps || (pf != nil && (pf.spread || pf.rows)) {
		if i == parts-1 {
			pf.stepN(lines)
		}
		return
	}
	if n := lines*(i+1)/parts - lines*i/parts; n > 0 {
		pf.stepN(n)
	}
}

// headAt addresses head h's item (h < 8) at disp, the heads' items idx
// bytes apart: heads 0–3 from b0, 4–7 from b4 = b0 + 4·idx (nil where no
// head passes 3); idx3 = 3·idx.
func headAt(b0, b4, idx, idx3 GPVirtual, h, disp int) Mem {
	b := b0
	if h >= 4 {
		b = b4
	}
	switch h % 4 {
	case 1:
		return Mem{Base: b, Index: idx, Scale: 1, Disp: disp}
	case 2:
		return Mem{Base: b, Index: idx, Scale: 2, Disp: disp}
	case 3:
		return Mem{Base: b, Index: idx3, Scale: 1, Disp: disp}
	}
	return Mem{Base: b, Disp: disp}
}

// zeroed returns n vectors of t, each set to 0.
func (t tier) zeroed(n int) []VecVirtual {
	v := make([]VecVirtual, n)
	for i := range v {
		v[i] = t.Vec()
		t.Zero(v[i])
	}
	return v
}

// negInfs returns ny ymm and nx xmm registers set to −Inf: running maxima.
func negInfs(ny, nx int) (y, x []VecVirtual) {
	for range ny {
		r := YMM()
		VMOVUPS(KC(CNegInf), r)
		y = append(y, r)
	}
	for range nx {
		r := XMM()
		VMOVSS(KC(CNegInf), r)
		x = append(x, r)
	}
	return y, x
}

// scoresWide is scores4 for wideHeads heads (wide: eight on AVX-512, four
// on AVX2): each K vector is widened once for all of them, in batches of
// two keys (16 zmm or 8 ymm accumulators, the q vectors of a chunk loaded
// once for both keys). q is addressed from two cursors that walk the row
// with the keys, heads 0–3 from qp and 4–7 from qp4 = qp + 4·qs. It writes
// buf + h·bs for every head h and returns the maxima; tmp is 32 + 16·heads
// bytes.
func (t tier) scoresWide(buf, bs, q, qs, k, cnt, db GPVirtual, rl, scale Mem, tmp Mem, pf *prefetcher) []VecVirtual {
	n := t.wideHeads()
	pf.hold()
	defer pf.release()
	g := newGroup(n, tmp, q, qs, buf, bs, k, cnt)
	const R = 2 // keys per batch
	// mx[i]: heads 4i … 4i+3, two lanes each (their batch scores' order);
	// mx1: the lone keys' maxima.
	mx, mx1 := negInfs(n/4, n)
	by2, by1, done := NewLabel("scoresw_by2"), NewLabel("scoresw_lone"), NewLabel("scoresw_done")
	Label(by2)
	CMPQ(g.lLeft, Imm(R))
	JL(LabelRef(by1))
	acc := make([][R]VecVirtual, n)
	for h := range acc {
		for i := range R {
			acc[h][i] = t.Vec()
			t.Zero(acc[h][i])
		}
	}
	p0, qp, qs3 := GP64(), GP64(), GP64()
	var qp4 GPVirtual
	MOVQ(g.lRow, p0)
	MOVQ(g.lq[0], qp)
	if n > 4 {
		qp4 = GP64()
		MOVQ(g.lq[4], qp4)
	}
	LEAQ(Mem{Base: qs, Index: qs, Scale: 2}, qs3)
	{
		e := GP64()
		MOVQ(rl, e)
		ADDQ(p0, e)
		MOVQ(e, g.lEnd)
		SUBQ(U32(t.kb()), e)
		MOVQ(e, g.lEnd2)
	}
	body := func(off int) {
		k0 := t.kvLoad(Mem{Base: p0, Disp: off})
		k1 := t.kvLoad(Mem{Base: p0, Index: db, Scale: 1, Disp: off})
		for h := range n {
			qv := t.Vec()
			VMOVUPS(headAt(qp, qp4, qs, qs3, h, off*t.ratio()), qv)
			VFMADD231PS(k0, qv, acc[h][0])
			VFMADD231PS(k1, qv, acc[h][1])
			stepPart(pf, t.wideLines(), n, h)
		}
	}
	qcs := []cursor{{qp, t.ratio()}}
	if n > 4 {
		qcs = append(qcs, cursor{qp4, t.ratio()})
	}
	g.chunks(t, "scoresw", p0, body, qcs...)

	sc := YMM()
	VBROADCASTSS(scale, sc)
	o0, o4, bs3 := GP64(), GP64(), GP64()
	MOVQ(g.lout[0], o0)
	LEAQ(Mem{Base: bs, Index: bs, Scale: 2}, bs3)
	if n > 4 {
		LEAQ(Mem{Base: o0, Index: bs, Scale: 4}, o4)
	}
	outAt := func(h int) Mem { return headAt(o0, o4, bs, bs3, h, 0) }
	for i := range n / 4 {
		var a [8]VecVirtual
		for j := range 4 {
			copy(a[2*j:], acc[4*i+j][:])
		}
		x := t.reduce8(a) // [h k0, h k1] for heads 4i … 4i+3
		VMULPS(sc, x, x)
		VMAXPS(x, mx[i], mx[i])
		hi := XMM()
		VEXTRACTF128(Imm(1), x, hi)
		VMOVLPS(x.AsX(), outAt(4*i))
		VMOVHPS(x.AsX(), outAt(4*i+1))
		VMOVLPS(hi, outAt(4*i+2))
		VMOVHPS(hi, outAt(4*i+3))
	}
	ADDQ(U32(4*R), g.lout[0])
	g.next(db, R)
	JMP(LabelRef(by2))

	Label(by1)
	// The batches moved head 0's output alone: the others follow it.
	{
		o := GP64()
		MOVQ(g.lout[0], o)
		for h := 1; h < n; h++ {
			ADDQ(bs, o)
			MOVQ(o, g.lout[h])
		}
	}
	g.lone(t, "scoresw", db, rl, scale, mx1, LabelRef(done))
	Label(done)
	m := make([]VecVirtual, n)
	for i := range n / 4 {
		// Each head's two lanes: their max in both.
		sw := YMM()
		VPERMILPS(Imm(0xB1), mx[i], sw)
		VMAXPS(sw, mx[i], mx[i])
		hi := XMM()
		VEXTRACTF128(Imm(1), mx[i], hi)
		for j, x := range []VecVirtual{mx[i].AsX().(VecVirtual), hi} {
			for u := range 2 {
				h := 4*i + 2*j + u
				m[h] = XMM()
				if u == 0 {
					VMOVAPS(x, m[h])
				} else {
					VMOVHLPS(x, x, m[h])
				}
				VMAXSS(mx1[h], m[h], m[h])
			}
		}
	}
	return m
}

// pvWide is pv4 for wideHeads heads (wide): every V vector is widened once
// for all of them. Blocks of up to 2 vectors (16 zmm or 8 ymm
// accumulators), prefetch paced (wideLines).
func (t tier) pvWide(o, w, ws, v, cnt, odb, vdb GPVirtual, tmp Mem, pf *prefetcher) {
	t.pvHeads("pvw", t.wideHeads(), []int{2, 1}, o, w, ws, v, cnt, odb, vdb, tmp, pf, t.wideLines())
}

// prefetcher spreads software prefetches of one region [cur, end) over
// the inner loops of every head (pair) of a GQA group. A spread one
// (countdown set) prefetches on every ng-th step only: the region then
// streams in evenly over all ng heads of a phase rather than in a burst
// during the first, which leaves memory idle for the rest of the tile.
//
// Every software prefetch of the decode kernels but the AVX-512 groups'
// (near, below) and, on Zen 5, AVX2's f32 and f16 kernels' (l1Of) goes
// to L2 (PREFETCHT1), not L1: a PREFETCHT0 holds one of the core's few
// L1 miss buffers until its line arrives from DRAM, so
// a burst of them caps the core's memory parallelism (and stalls the
// kernel's own loads behind them); L2 tracks many more, and the tile is
// re-read from L2 by every head anyway. In
// interleaved A/B runs (Zen 4, decode-flash-gqa 32:8, ctx 32768, --cold,
// one thread, share of the paired kv-read) T1 took AVX-512 f32 from
// 47–66 % to 77–79 % and f16 from 37–48 % to 51–56 %, AVX2 f32 (spread)
// from 37–41 % to 53–59 %; at two threads both tiers' f32 from 40–76 % to
// 85–89 %. Spreading AVX2's prefetches over the heads alone (still T0)
// had given 2–6 points.
//
// The AVX-512 quads and pairs of a group instead pull, from each step,
// the lines one tile behind the cursor into L1 (PREFETCHT0; see near):
// the tile the next phase reads. In interleaved A/B runs (Zen 5, one
// thread, median B/A) from DRAM (ctx 32768 --cold) f32 32:8 and 64:8
// calls took 0.84–0.90 of the time, f16 0.89–0.96; at ctx 4096 (f32 past
// the L3) f32 0.82–0.87; in L3 (ctx 1024) 0.96–1.00; L2-resident (ctx
// 64, 128) 1.00–1.03. So what they save is a wait on lines still on
// their way from L3 or DRAM when the phase reads them, not L2's fill of
// L1. Near prefetch of K alone or of V alone gave about half (0.93–0.98)
// or nothing. At two threads (ctx 4096 and 32768 --cold) f32 took
// 0.82–0.93, f16 0.91–0.99. (Those runs kept T1 too, one line in four;
// it went later, see near.) AVX2 keeps T1 alone but in its wide sets
// (Intel; wideLines): on Zen 5 its groups went 0.91–1.15 with near, on
// the Xeon its f32 pairs 1.04 (32:8) and 1.15 (64:8) from DRAM (ctx 32768
// --cold, sweeps alternated, 3 rounds; 92–93 % of the paired kv-read to
// 87–89, 79–81 to 74–78), and with the far T1 stream beside near and
// their steps split too, as the AVX-512 octs' (stepPart, the countdown
// counting parts; in one process, 9 rounds) 0.97 (32:8) and 1.06 (64:8;
// tile_k 32 1.15); near alone, spread as now, in one process (9 rounds,
// 2026-11-29, a busy hour) 1.07 (32:8) and 1.00 (64:8). A scratch loop of
// the pairs' reads and FMAs (ymm, hd 128, 64:8, tiles of 16 rows, the
// kernel's spread steps, a stand-in for the reductions, no softmax) had
// put near at 0.81–0.83 of a plain read of both regions against 0.64 for
// T1 a tile ahead; but its T1 read at 5.9–7.0 GB/s where the kernel's
// read at 8.0 in the same hour, so the loop missed what makes T1 work
// here (each region's countdown restarting at every tile, perhaps). On
// Zen 3 every hint already fills L1.
//
// Zen 3 has no such L2-only hint: every hint fills L1 there (re-reading a
// 24–28 KB set from L1 while prefetching a DRAM stream slowed it from 4.1
// to 7.6–9.1 ns a step alike under T0, T1, T2 and NTA), so the tiles
// being fetched share its 32 KB with the tile being re-read. Nor does its
// L2 fetch a line's 128-byte buddy: prefetching every other line made
// groups from DRAM 1.45–1.69 times slower (interleaved A/B, f32 and f16
// 32:8 and 64:8, ctx 32768).
//
// On the Xeon (family 6 model 207; AVX2 f32 pairs, hd 128, from DRAM: ctx
// 32768, copies rotated past 1.2 GB; one process, 9 rounds, time over the
// kernel's) T0 at the cursor instead of T1 took 1.12 (32:8) and 1.06
// (64:8), in L3 (ctx 1024) 1.01; the cursor two tiles ahead instead of
// one 1.00 (32:8, 64:8; f16 32:8, whose wide sets' near lines it does
// not move, 0.96 with rounds 0.68–1.20), in L3 1.01; every other line of
// a step 1.26 and 1.16, one line in four 1.30 and 1.29 (as on Zen 3,
// L2's prefetchers do not fetch the lines left out in time).
// A cpu-clock profile of the 32:8 call from DRAM put 26 % of the
// kernel's samples on the instruction after a step's first PREFETCHT1
// (12 % in the scores, 14 % in P·V) and most of the rest on FMAs
// waiting for their K or V: the core waits for a miss buffer, as the
// AVX-512 quads' did on Zen 5 (below) and the octs' on the Xeon
// (stepPart); its paired kv-read, demand loads that L2's streamer runs
// ahead of, reads faster (74–78 % of it in that hour).
//
// On Zen 4 (EPYC family 25 model 17; hd 128, ctx 32768, copies rotated
// past 1.2 GB, one process, the variant flipped between timed batches, 5–7
// rounds, time over the kernel's; none kept): no software prefetch at all
// took the groups 1.24–3.32 times as long (f32 and f16, 32:8 and 64:8,
// both tiers), a lone head's phases 0.83 (AVX2 f16, tk 32) to 1.24 (q8_0,
// tk 128); PREFETCHNTA for AVX2's spread T1 1.16–1.74, for AVX-512's near
// T0 (f16) 0.99–1.00; a group's lead doubled (the next V two tiles on)
// 0.98–1.07; AVX-512's f32 32:8 without its near stream (T1 at the cursor,
// as AVX2's) 0.84–0.86 at tk 8, 0.91 at 16, 1.04 at 32, 64:8 1.02, f16
// 32:8 0.94 at 16 and 1.00 at 32; the same group as two pairs rather than
// a quad 0.98–1.21, as pairs without near 0.82 at tk 8 (11.8 ms a call,
// where AVX2's pairs took 10.8 in the same hour) and 0.94 at 16. What
// AVX2's pairs have that these had not is the spread steps (a step every
// ng-th, spread: not tried in AVX-512). AVX-512 f32 32:8 stays 11.8–12.0
// ms a call at best where AVX2's spread pairs take 10.1–10.9 at tk 8: so
// on Zen 4 the AVX-512 tier runs AVX2's kernel for f32 groups of 2 to 7
// heads in tiles of at most about 4 KB of K (modeSmallTiles,
// smallTilesOn in decode_amd64.go). Nor do AVX2's pairs take both streams
// in every phase (Zen 4, sweeps alternated, 2 rounds, ctx 32768 --cold:
// each spread step half its lines from this tile's stream and half from
// the other's, V's and K's each fetched over the whole tile): f32 32:8 tk
// 8 1.35–1.40, tk 32 0.96–1.00; 64:8 1.24–1.29 and 1.03–1.04; f16
// 0.98–1.02. Nor 2 MB pages for them (one process, 5 rounds, f32 32:8):
// tk 8 0.99, tk 32 0.99, tk 16 0.93 (still 1.06 of tk 8's 4 KB pages).
type prefetcher struct {
	cur, end  Mem
	countdown Mem // spread: steps left to the next prefetching one
	spread    bool
	// rows (the position-major kernels): the region is rows stride bytes
	// apart, rl bytes each (at rl), and a step prefetches whole rows (see
	// stepRows), not the next lines of one range.
	rows bool
	rl   Mem
	// The loops that step it hold cur and countdown in these registers
	// (hold, release): a step's read-modify-write of a stack slot chained
	// the steps through memory (store, then the next step's load), which
	// bounded single-head loops of a few cycles a step (Zen 4: AVX2 f16
	// decode-flash in L3 8 % slower so).
	curReg, cdReg GPVirtual
	// near (set while the AVX-512 quads and pairs are emitted) makes a
	// step PREFETCHT0 the same lines nearOff bytes from cur instead
	// (nearOff = −the tile's bytes, one stack slot, set per tile, that
	// both of flashDecode's prefetchers read): this tile's V during the
	// scores, the next tile's K during the softmax and P·V.
	near    bool
	nearOff Mem
	// far (set while the AVX-512 head-major quads and f32 octs are
	// emitted): where the mode argument has modeFar, a near step also
	// PREFETCHT1s as many lines farTiles tiles beyond cur (farQuads,
	// farOcts).
	far bool
	// nearT1 (set while the AVX-512 f32 quads, octs and pairs are emitted):
	// where the mode argument has modeNearT1, a near step's lines go to
	// L2 (PREFETCHT1), not L1 (nearT1Of).
	nearT1 bool
	// l1 (set while AVX2's head-major f32 and f16 kernels are emitted):
	// where the mode argument has modeL1, a step's lines (not near) go to
	// L1 (PREFETCHT0), not L2 (l1Of).
	l1 bool
}

// With near set a step issues the near lines alone: no T1 ahead of them.
// The far stream had asked L2 for every line (chosen on Zen 4), then on
// Zen 5 for one line in four (L2's own prefetchers bring the other three;
// from DRAM f16 groups took 0.89–0.93 of the time, f32 0.88–1.01, in
// cache 0.88–1.00), and then none. Without it (Zen 5, one thread,
// AVX-512, median B/A against one line in four), in one process, three
// sets of 5–6 rounds over two sessions: from DRAM (ctx 32768 --cold, 32:8
// and 64:8, f32 and f16) 0.79–1.00, in cache and just past the L3 (ctx
// 256 to 4096) 0.87–1.02, at ctx 64 1.00–1.01; in sweeps (3 rounds) from
// DRAM 0.87–1.00 and in L3 (ctx 1024) 0.92–1.02. A stop earlier one
// configuration (f32 64:8 from DRAM) had gone 1.02, so it stayed until
// the later sets and a profile (below) agreed. The near stream cannot be
// thinned: every other line made those calls 1.4–1.75 times slower. Nor
// paced otherwise: f16's quads stepping 2 lines (its tile then lasting
// the whole phase, not half) took 1.02 (32:8) and 1.07 (64:8) of the time
// from DRAM, 8 lines a step (f32, f16) 1.06–1.17 (Zen 5, 3 rounds). Nor
// both streams a tile ahead in every phase (each quad step taking 2 or 4
// lines of the next tile's K and as many of its V): 1.02–1.17 and
// 1.15–1.41, though a scratch loop in the quads' tile order, with no
// reductions, read 10 % faster so than with this stream. Nor moved a
// tile on (the next tile's V during the scores, nearOff 0):
// 1.08–1.20 from DRAM (Zen 5, 32:8 and 64:8, f32 and f16, sweeps
// alternated, 3 rounds); nor spread over a 64:8 group's two quads (half
// the lines a step in scores4): f32 0.92–1.18, median 1.14, f16 0.98.
// Nor the next tile's V begun in P·V, where V's stream is otherwise idle
// (PREFETCHT0 of the lines at pfV's cursor after each of pv4's column
// blocks; Zen 5, hd 128, ctx 32768 --cold, time over the paired kv-read,
// sweeps alternated, 6 sets of 3–8 rounds): 16 lines a block (a quad
// then takes half an f16 tile of the next V, a quarter of an f32 one),
// pooled over 28 rounds, f16 32:8 and 64:8 0.99 and 0.97 (17 and 20
// rounds of 28 below 1; set medians 0.95–1.02 and 0.91–1.06), f32 over
// 20, 0.99 and 0.99; 4, 8, 32 and 64 lines a block and half or all of
// the block's own bytes of V 0.92–1.09 with no trend. Nor the next K
// begun in scores4's batches (4 lines a batch): 0.95–1.04.
// Nor demand loads for the near lines (a MOVL from each line of a step,
// or from its first line, the rest PREFETCHT0), on the chance that the
// L2's stream prefetchers train on demand misses and not on software
// prefetches, and so would run ahead of both streams as they do of
// kv-read's (Zen 5 family 26 model 2, 2026-12-02, AVX-512, hd 128, ctx
// 32768 --cold, sweeps alternated, 3 rounds, share of the paired
// kv-read): f16 32:8 from 70–75 % to 36–57, 64:8 from 45–47 to 26–36;
// f32 32:8 from 75–76 to 74–77, 64:8 from 59–61 to 55–67; in L3 (ctx
// 1024) level or slower. There the tile order itself reads from DRAM at
// 64–82 % of side by side (BenchmarkTileOrder).
//
// What bounds a group from DRAM is this stream, not its arithmetic:
// with the softmax phase left out (timing only, Zen 5, AVX-512, ctx
// 32768, 128–256 MB, 4 paired rounds) f32 32:8 took 1.00 of the time,
// f16 32:8 0.98, f32 64:8 1.03; with P·V left out (its loads and its
// prefetch of K with it) 1.07, 0.90 and 1.05. A scratch loop reading two
// 128 MB regions in tiles of 8 KB, K then V, with 32 FMAs per 256 bytes
// read (about a 32:8 f32 group's work per byte) reached 24–29 GB/s with
// prefetches like these (near alone best), against 27–31 GB/s with no
// FMAs and 15–16 with no prefetch; this kernel read at about 22 (f32
// 32:8, same hour, with the far T1 stream). A cpu-clock profile of that
// call (README, Development; AVX-512, ctx 32768 --cold) then put 31 % of
// the kernel's samples on the instruction just after the far
// PREFETCHT1, in the quads' scores and P·V loops alike: the core waited
// at that prefetch, most likely for a miss buffer while all were busy
// with lines on their way from DRAM. The scratch loop's best scheme was
// near alone, as the kernel's is now.
//
// On an Intel Xeon (family 6 model 207, one thread, AVX-512, hd 128,
// sweeps alternated, 3 rounds, against near alone) the far T1 stream of
// every line beside near: from DRAM (ctx 32768 --cold) f16 32:8 0.75–0.90
// of the time (74–75 % of the paired kv-read against 60–67 %), f32 32:8
// 0.62–0.90, f32 64:8 median 0.85 (0.73–1.32), f16 64:8 0.99 (bound by
// its widening there, not its stream); but in L3 (ctx 1024) 1.02–1.10.
// One line in four: from DRAM 0.88–0.96 for 32:8, 0.96–1.06 for 64:8.
// Not kept: no target from DRAM came within reach with it, and f32 64:8
// in L3, at 65 % of its bound there, would have fallen below its 60.
// Two tiles farther on it pays from DRAM at a smaller cost in cache: the
// quads take that there (farQuads).
//
// Nor a group's tiles taking their keys from both halves of the context
// at once (softmax does not mind the keys' order), which a plain read
// does faster than the tile order (BenchmarkTileOrder's halves). In a
// scratch loop (Go assembly outside the repo, AVX-512, two 16 MB regions
// rotated past 512 MB; Zen 5 family 26 model 2, 2026-12-02, medians of
// 80 rounds, three runs; per tile a pass over K with PREFETCHT0 of V's
// same lines, then over V with PREFETCHT0 of the next tile's K, each
// 64-byte line feeding 8 FMAs into 16 accumulators) side by side read at
// 32–35 GB/s, the tile order at 4 KB tiles 27.7–28.2, at 8 KB 31.1–32.4,
// at 16 KB 29.2–31.3, and both halves (a tile of each, a line of each in
// turn) 31.9–32.7, 32.4–33.7 and 30.7–33.2. Built for the quads (a
// tile of tk keys tk/2 rows from each half, n mod tk keys after them in
// order; scores4's batch rows j, j+1 of each half; pvHeads' rows four at
// a time in that order; each near step half its lines in each half;
// where every head of the group ran in quads, so f16 only at hd 128,
// f32's P·V being pairs there: pv4Max) and measured the same day (hd
// 128, ctx 32768 --cold, sweeps alternated, 2–3 rounds, share of the
// paired kv-read): f16 32:8 at tk 16 68.5 % against 70.4, 64:8 46.0
// against 49.2; at tk 32 and 64 it did better than the tile order at the
// same tk (32:8 67.0 and 63.7 against 64.6 and 54.4; 64:8 47.4 and 42.5
// against 38.4 and 35.8), but no better than tk 16's tile order, which
// stays.
//
// The same scratch loop at a 32:8 f32 group's own work (4 FMAs a line,
// hd 128 rows; three runs of 60 rounds) kept the tile order with its near
// stream at 86–94 % of side by side with the same FMAs at 8 KB tiles
// (30.9–31.6 GB/s against 33.5–36.0), where the kernel reads at 73–77 %
// of its paired kv-read.
// Neither of two kernel traits it then took explains that gap: K read as
// scores4 reads it (four rows a batch, a line of each in turn) 0.95–1.00
// of the row order's rate; V read twice, as f32's pairs read it, with
// the next K's prefetch all in the first pass, 0.90–1.00; an L1 load of
// q beside each K line and a broadcast weight beside each V line (the
// quads' own ratio) 0.95–1.02. Four loads of q a K line took it to
// 0.84–0.92: µops between the misses, even hits, cost the stream more
// than the order does (fewer lines in the core's window at once, most
// likely); the kernel's trees, softmax and o loads and stores add such
// µops.

// hold moves the prefetcher's cursor (and countdown) into registers for
// the loops that follow, until release; a nil prefetcher holds nothing.
func (p *prefetcher) hold() {
	if p == nil {
		return
	}
	p.curReg = GP64()
	MOVQ(p.cur, p.curReg)
	if p.spread {
		p.cdReg = GP64()
		MOVQ(p.countdown, p.cdReg)
	}
}

// release stores what hold took back to the stack slots.
func (p *prefetcher) release() {
	if p == nil || p.curReg == nil {
		return
	}
	MOVQ(p.curReg, p.cur)
	if p.spread {
		MOVQ(p.cdReg, p.countdown)
	}
	p.curReg, p.cdReg = nil, nil
}

const prefetchLines = 4

func (p *prefetcher) step() { p.stepN(prefetchLines) }

// stepN prefetches the next lines lines of the region (if any are left).
func (p *prefetcher) stepN(lines int) {
	if p == nil {
		return
	}
	if p.curReg == nil {
		panic("prefetcher stepped outside hold")
	}
	skip := NewLabel("pf_skip")
	if p.spread {
		DECQ(p.cdReg)
		JNZ(LabelRef(skip))
		Load(Param("ng"), p.cdReg)
	}
	CMPQ(p.curReg, p.end)
	JAE(LabelRef(skip))
	if p.rows {
		p.stepRows(LabelRef(skip))
		Label(skip)
		return
	}
	if p.near {
		n := GP64()
		MOVQ(p.nearOff, n)
		ADDQ(p.curReg, n)
		if p.nearT1 {
			prefetchRunByMode(modeNearT1, PREFETCHT1, PREFETCHT0, n, lines)
		} else {
			prefetchRun(PREFETCHT0, n, lines)
		}
		if p.far {
			noFar := NewLabel("pf_nofar")
			TESTQ(U32(modeFar), paramAddr("mode"))
			JZ(LabelRef(noFar))
			// f = cur + farTiles·ahead, ahead = cur − n (n = cur +
			// nearOff, the near lines' base, already in a register).
			f := GP64()
			MOVQ(p.curReg, f)
			SUBQ(n, f)
			LEAQ(Mem{Base: p.curReg, Index: f, Scale: farTiles}, f)
			prefetchRun(PREFETCHT1, f, lines)
			Label(noFar)
		}
	} else if p.l1 {
		prefetchRunByMode(modeL1, PREFETCHT0, PREFETCHT1, p.curReg, lines)
	} else {
		prefetchRun(PREFETCHT1, p.curReg, lines)
	}
	ADDQ(U32(64*lines), p.curReg)
	Label(skip)
}

// prefetchRun prefetches the lines consecutive cache lines from base with
// hint (PREFETCHT0 or PREFETCHT1).
func prefetchRun(hint func(Op), base Register, lines int) {
	for l := range lines {
		hint(Mem{Base: base, Disp: 64 * l})
	}
}

// prefetchRunByMode is prefetchRun with hint set where the mode argument
// has bit, with unset otherwise (a test of the bit per step).
func prefetchRunByMode(bit int, set, unset func(Op), base Register, lines int) {
	other, done := NewLabel("pf_other"), NewLabel("pf_mode_done")
	TESTQ(U32(bit), paramAddr("mode"))
	JZ(LabelRef(other))
	prefetchRun(set, base, lines)
	JMP(LabelRef(done))
	Label(other)
	prefetchRun(unset, base, lines)
	Label(done)
}

// stepRows is a rows prefetcher's step: the row at cur (the lines at cur,
// cur+64, …: 2, 3, 4, 8, 16 or 17 of them, the fewest that reach the
// row's last byte, which for a row starting late in a line, as q8_0's
// 136-byte rows do, can be one more than rl/64), and, when a row is
// shorter than 256 bytes, the next row too, so that a step fetches about
// as much as a head-major one (4 lines) and a tile's rows are all fetched
// in as many steps as its phase takes (q8_0's scores step once per
// block). cur moves on by stride per row; skip is where the step ends.
// It takes no count of lines: a caller that reads more than a row of K
// between steps steps more often (scores' whole rows: every row).
//
// Against the head-major kernels (no prefetch over a position-major
// cache), in one process, interleaved, B/A (Zen 3, AVX2, 8 KV heads, hd
// 128, 1, 4 and 8 query heads per KV head): from DRAM (ctx 32768) f16
// 0.55–0.74, q8_0 0.56–0.69, f32 0.74–0.77 in groups and 0.92–0.96
// alone; at ctx 4096 0.46–0.77 (f32 alone 1.05); at ctx 1024 f16 and
// q8_0 0.86–1.01, f32 0.90–0.91 in groups and 1.04 alone; hd 64 and 256
// at ctx 4096 0.56–0.86 (f32 hd 256 alone 1.06).
func (p *prefetcher) stepRows(skip LabelRef) {
	row := func() {
		done := NewLabel("pf_row")
		reach := GP64() // the row's last byte + 1, from cur's line: (cur mod 64) + rl
		MOVQ(p.curReg, reach)
		ANDQ(U32(63), reach)
		ADDQ(p.rl, reach)
		PREFETCHT1(Mem{Base: p.curReg})
		PREFETCHT1(Mem{Base: p.curReg, Disp: 64})
		// The lines from..to when the row reaches beyond from.
		for _, g := range []struct{ from, to int }{{128, 192}, {192, 256}, {256, 512}, {512, 1024}, {1024, 1088}} {
			CMPQ(reach, U32(g.from))
			JBE(LabelRef(done))
			for off := g.from; off < g.to; off += 64 {
				PREFETCHT1(Mem{Base: p.curReg, Disp: off})
			}
		}
		Label(done)
		ADDQ(paramAddr("stride"), p.curReg)
	}
	row()
	CMPQ(p.rl, U32(256))
	JAE(skip)
	CMPQ(p.curReg, p.end)
	JAE(skip)
	row()
}

// stepOnce is a step of lines lines on its own, outside any loop that
// holds p: a spread prefetcher's too, its countdown left as it is (the
// countdown paces the loops' steps, not this one).
func (p *prefetcher) stepOnce(lines int) {
	spread := p.spread
	p.spread = false
	p.hold()
	p.stepN(lines)
	p.release()
	p.spread = spread
}

// restart makes the next step of a spread prefetcher prefetch.
func (p *prefetcher) restart() {
	if p.spread {
		MOVQ(U32(1), p.countdown)
	}
}

// rowsAt addresses eight consecutive rows (db bytes apart) at byte offset
// off: rows 0-3 from p0, rows 4-7 from p4 = p0 + 4·db.
func rowsAt(p0, p4, db, db3 GPVirtual, off int) []Mem {
	return []Mem{
		{Base: p0, Disp: off}, {Base: p0, Index: db, Scale: 1, Disp: off}, {Base: p0, Index: db, Scale: 2, Disp: off}, {Base: p0, Index: db3, Scale: 1, Disp: off},
		{Base: p4, Disp: off}, {Base: p4, Index: db, Scale: 1, Disp: off}, {Base: p4, Index: db, Scale: 2, Disp: off}, {Base: p4, Index: db3, Scale: 1, Disp: off},
	}
}

// expInPlace replaces, for each i, bufs[i][j] by exp(bufs[i][j] − ms[i])
// for j < cnt and returns the sums (lane 0 of an xmm each). The buffers
// (one per head, cnt scores each) go through one loop, so that several
// heads' exp chains overlap. The last vector may run into a buffer's
// padding (every buffer is a multiple of 16 floats); padding lanes are
// written but never summed. The exp is the one the mode argument asks for
// (byExp): the whole-vector loop is emitted once per exp, chosen once a
// call; the partial vector after it chooses again.
func (t tier) expInPlace(bufs []GPVirtual, cnt GPVirtual, ms []VecVirtual) []VecVirtual {
	nh := len(bufs)
	acc, p := make([]VecVirtual, nh), make([]GPVirtual, nh)
	for i := range nh {
		acc[i] = t.Vec()
		t.Zero(acc[i])
	}
	for i := range nh {
		p[i] = GP64()
		MOVQ(bufs[i], p[i])
	}
	n := GP64()
	MOVQ(cnt, n)
	// exp loads a vector of each buffer and stores its exp.
	exp := func(fast bool) []VecVirtual {
		x := make([]VecVirtual, nh)
		for i := range nh {
			x[i] = t.loadScores(p[i])
		}
		for i := range nh {
			VSUBPS(ms[i], x[i], x[i])
		}
		for i := range nh {
			t.Exp(fast, x[i])
		}
		for i := range nh {
			VMOVUPS(x[i], Mem{Base: p[i]})
		}
		return x
	}
	// Each exp's loop leaves by its test to tail (byExp's jump past the
	// fast loop is never taken).
	tail, done := NewLabel("exp_tail"), NewLabel("exp_done")
	byExp(func(fast bool) {
		loop := NewLabel("exp_loop")
		Label(loop)
		CMPQ(n, U32(t.W))
		JL(LabelRef(tail))
		for i, x := range exp(fast) {
			VADDPS(x, acc[i], acc[i])
		}
		for i := range nh {
			ADDQ(U32(t.VB()), p[i])
		}
		SUBQ(U32(t.W), n)
		JMP(LabelRef(loop))
	})
	Label(tail)
	s := make([]VecVirtual, nh)
	for i := range nh {
		s[i] = t.HReduce(acc[i], VADDPS)
	}
	TESTQ(n, n)
	JZ(LabelRef(done))
	// A partial vector: the exp of the whole vector, the sum over the n
	// scores that are real.
	byExp(func(fast bool) { exp(fast) })
	tl := NewLabel("exp_tail1")
	Label(tl)
	for i := range nh {
		VADDSS(Mem{Base: p[i]}, s[i], s[i])
	}
	for i := range nh {
		ADDQ(Imm(4), p[i])
	}
	DECQ(n)
	JNZ(LabelRef(tl))
	Label(done)
	return s
}

// byExp emits body(false) (the exact exp) and body(true) (the fast one)
// with a branch between them on the mode argument's modeFastExp bit: one
// kernel for either exp, where the exp is a small share of its code (a
// kernel of each was twice the assembly for a few hundred instructions
// of difference). A site runs a tile's or a call's exps, so the branch,
// always the same way in a call, costs a test a site.
func byExp(body func(fast bool)) {
	fast, done := NewLabel("exp_fast"), NewLabel("exp_chosen")
	TESTQ(U32(modeFastExp), paramAddr("mode"))
	JNZ(LabelRef(fast))
	body(false)
	JMP(LabelRef(done))
	Label(fast)
	body(true)
	Label(done)
}

// scaleRow multiplies the db bytes of floats at row by the vector c.
func (t tier) scaleRow(row, db GPVirtual, c VecVirtual) {
	p, n := GP64(), GP64()
	MOVQ(row, p)
	MOVQ(db, n)
	loop := NewLabel("scale_loop")
	Label(loop)
	x := t.Vec()
	VMULPS(Mem{Base: p}, c, x)
	VMOVUPS(x, Mem{Base: p})
	ADDQ(U32(t.VB()), p)
	SUBQ(U32(t.VB()), n)
	JNZ(LabelRef(loop))
}

// zeroRow clears db bytes at row.
func (t tier) zeroRow(row, db GPVirtual) {
	z := t.Vec()
	t.Zero(z)
	p, n := GP64(), GP64()
	MOVQ(row, p)
	MOVQ(db, n)
	loop := NewLabel("zero_loop")
	Label(loop)
	VMOVUPS(z, Mem{Base: p})
	ADDQ(U32(t.VB()), p)
	SUBQ(U32(t.VB()), n)
	JNZ(LabelRef(loop))
}

// pv accumulates o += Σ_j w[j]·v_j over cnt rows of v (db bytes apart).
// The row of o is walked in column blocks held in registers while all cnt
// rows stream past; every byte of v is still read once. Rows go in pairs
// into two sets of accumulators, halving the FMA dependency chain (a tile
// of 16 rows is otherwise a 16-deep chain of 4-cycle FMAs per register).
//
// o's row is odb bytes, v's rows vdb bytes apart (odb/ratio bytes of
// values each); tile says the rows are one flash tile. With pf = (d, d2)
// set, each row pair also prefetches its lines d and d2 bytes ahead (the
// same rows of the next K tile); with spread set instead, each row
// prefetches as many lines as it reads from spread's region (the next K
// tile) on every ng-th row.
func (t tier) pv(tile bool, o, w, v, cnt, odb, vdb GPVirtual, spread *prefetcher, pf ...GPVirtual) {
	spread.hold()
	defer spread.release()
	// Blocks of 8 vectors (2×8 zmm accumulators of 32), then 4, 2, 1.
	// AVX2's blocks of eight and twelve take one row at a time into 8 or
	// 12 of its 16 ymm (as many independent chains as two rows of four or
	// six): an hd-128 row is read in two passes rather than four, hd 64
	// whole.
	col := GP64()
	XORQ(col, col)
	blocks := []int{8, 4, 2, 1}
	if tile && t.W == 8 && !t.kv.q8 {
		// AVX2, f32 and f16, the rows of a flash tile: twelve vectors
		// first, one row at a time (12 FMA chains, 14 of the 16 ymm).
		// Interleaved A/B on Zen 3 (decode-flash, hd 128, 1 thread): f32
		// from DRAM 6–7 % faster, f16 1–3 % in L3 and from DRAM, f32 in
		// L3 within 1 %. Not for decode-naive's one pass over all rows,
		// where f16 ran slower so.
		blocks = []int{12, 8, 4, 2, 1}
	}
	for _, nb := range blocks {
		one := t.W == 8 && nb >= 8 // one row at a time, one set of accumulators
		top, next := NewLabel("pv_block"), NewLabel("pv_next")
		Label(top)
		left := GP64()
		MOVQ(odb, left)
		SUBQ(col, left)
		CMPQ(left, U32(nb*t.VB()))
		JL(LabelRef(next))
		acc, acc2 := make([]VecVirtual, nb), make([]VecVirtual, nb)
		for u := range acc {
			acc[u] = t.Vec()
			VMOVUPS(Mem{Base: o, Index: col, Scale: 1, Disp: u * t.VB()}, acc[u])
			if !one {
				acc2[u] = t.Vec()
				t.Zero(acc2[u])
			}
		}
		// rowsStep is spread's step (none without it) for rows rows of
		// this block: as many lines as they read, at least one.
		rowsStep := func(rows int) { spread.stepN(max(1, rows*t.blockBytes(nb)/64)) }
		wp, rp, n := GP64(), GP64(), GP64()
		MOVQ(w, wp)
		t.vColumn(rp, v, col)
		MOVQ(cnt, n)
		pair, single, merge := NewLabel("pv_pair"), NewLabel("pv_single"), NewLabel("pv_merge")
		if !one {
			CMPQ(n, Imm(2))
			JL(LabelRef(single))
			Label(pair)
			w0, w1 := t.Vec(), t.Vec()
			VBROADCASTSS(Mem{Base: wp}, w0)
			VBROADCASTSS(Mem{Base: wp, Disp: 4}, w1)
			// The pair's first row whole, then its second: address order (see
			// scores for why interleaving rows costs streaming from DRAM).
			t.rowFMA(nb, rp, nil, w0, acc, pfAt(pf, 0))
			t.rowFMA(nb, rp, vdb, w1, acc2, pfAt(pf, 1))
			rowsStep(2)
			ADDQ(Imm(8), wp)
			LEAQ(Mem{Base: rp, Index: vdb, Scale: 2}, rp)
			SUBQ(Imm(2), n)
			CMPQ(n, Imm(2))
			JGE(LabelRef(pair))
		}
		if one {
			// Two rows an iteration, into the same accumulators in row
			// order (the sums of one row at a time), each row's weight
			// broadcast once the other's is done with: the loop's and the
			// spread prefetcher's checks once for two rows, the prefetch
			// as many lines a byte as a row at a time (blockBytes: one
			// line for two q8_0 rows took 1.18–1.24 times as long from
			// DRAM). A cpu-clock profile of AVX2 q8_0 (one head, hd 128,
			// L3) had put 60 % of the samples in this loop, a sixth of
			// its instructions the loop's. Zen 5 (family 26 model 2,
			// 2026-12-02), one head, hd 128, two builds alternated, 4
			// rounds, time over the row-at-a-time loop's: q8_0 in L3
			// (ctx 4096) 0.96–0.99, from DRAM (ctx 32768 --cold) 0.80–
			// 1.03 (median 0.97); f16 in L3 0.94–0.98 (one round 1.23),
			// from DRAM 0.99–1.03. Not the pairs' loop above with acc for
			// acc2 (both weights broadcast first, the second row indexed):
			// that build read 1–2 % less of the paired read from DRAM (6
			// rounds alternated, f16 71.8 against 72.9 %, q8_0 68.2
			// against 69.8 %), in L3 level.
			Label(pair)
			CMPQ(n, Imm(2))
			JL(LabelRef(single))
			for r := range 2 {
				wr := t.Vec()
				VBROADCASTSS(Mem{Base: wp, Disp: 4 * r}, wr)
				t.rowFMA(nb, rp, nil, wr, acc, pfAt(pf, 0))
				ADDQ(vdb, rp)
			}
			rowsStep(2)
			ADDQ(Imm(8), wp)
			SUBQ(Imm(2), n)
			JMP(LabelRef(pair))
		}
		// The rows left one at a time (all of them in a block of one).
		Label(single)
		TESTQ(n, n)
		JZ(LabelRef(merge))
		w2 := t.Vec()
		VBROADCASTSS(Mem{Base: wp}, w2)
		var pf1 GPVirtual // a row left over from the pairs prefetches nothing
		if one {
			pf1 = pfAt(pf, 0)
		}
		t.rowFMA(nb, rp, nil, w2, acc, pf1)
		rowsStep(1)
		ADDQ(Imm(4), wp)
		ADDQ(vdb, rp)
		DECQ(n)
		JMP(LabelRef(single))
		Label(merge)
		for u := range acc {
			if !one {
				VADDPS(acc2[u], acc[u], acc[u])
			}
			VMOVUPS(acc[u], Mem{Base: o, Index: col, Scale: 1, Disp: u * t.VB()})
		}
		ADDQ(U32(nb*t.VB()), col)
		JMP(LabelRef(top))
		Label(next)
	}
}

// rowFMA emits acc[u] += w·v[u] for the nb vectors of the column block of
// one V row at rp (+ idx when set): f32 and f16 an FMA per vector (f16
// widened), q8_0 per block w·scale once, then an FMA per widened vector of
// int8. With pf set, it prefetches (into L2, see prefetcher) each 64-byte
// line of the row pf bytes further on (pf includes idx).
func (t tier) rowFMA(nb int, rp, idx GPVirtual, w VecVirtual, acc []VecVirtual, pf GPVirtual) {
	at := func(off int) Mem {
		m := Mem{Base: rp, Disp: off}
		if idx != nil {
			m.Index, m.Scale = idx, 1
		}
		return m
	}
	prefetch := func(off int) {
		if pf != nil {
			PREFETCHT1(Mem{Base: rp, Index: pf, Scale: 1, Disp: off})
		}
	}
	if t.kv.q8 {
		blocks := nb * t.W / q8Block
		for b := range blocks {
			t.q8Block(at(b*q8BlockBytes), w, func(c int, x, sc VecVirtual) {
				VFMADD231PS(x, sc, acc[b*q8Block/t.W+c])
			})
		}
		for off := 0; off < t.blockBytes(nb); off += 64 {
			prefetch(off)
		}
		return
	}
	for u := range acc {
		t.kvFMA(at(u*t.kb()), w, acc[u])
		if (u*t.kb())%64 == 0 {
			prefetch(u * t.kb())
		}
	}
}

// pfAt is the i-th prefetch distance of pv's, or nil.
func pfAt(pf []GPVirtual, i int) GPVirtual {
	if i < len(pf) {
		return pf[i]
	}
	return nil
}

// pv2 is pv for two heads at once: every V vector is loaded (and widened)
// once into a register and multiplied by both heads' weights. AVX-512:
// blocks of up to 4 vectors, rows in pairs, two heads: 16 accumulators, 8
// V registers, 4 broadcast weights. AVX2: blocks of up to 6 vectors, one
// row at a time: 12 accumulators, 2 weights, a V register. o[h] and w[h]
// are the heads' output rows and weight buffers; the per-block state lives
// in the 48 scratch bytes at tmp. pf is as in pv.
func (t tier) pv2(o, w [2]GPVirtual, v, cnt, odb, vdb GPVirtual, tmp Mem, pf *prefetcher) {
	pf.hold()
	defer pf.release()
	lo := [2]Mem{tmp, tmp.Offset(8)}
	lW, lV, lCnt, lCol := tmp.Offset(16), tmp.Offset(24), tmp.Offset(32), tmp.Offset(40)
	MOVQ(o[0], lo[0])
	MOVQ(o[1], lo[1])
	MOVQ(w[0], lW)
	wd := GP64() // w[1] - w[0]: both weight buffers from one pointer
	MOVQ(w[1], wd)
	SUBQ(w[0], wd)
	MOVQ(v, lV)
	MOVQ(cnt, lCnt)
	blocks := []int{4, 2, 1}
	switch {
	case t.W == 8:
		// AVX2: six vectors first, 12 accumulators (12 FMA chains; eight
		// only just cover the FMA latency) and an hd-128 row read in three
		// column passes, not four. Interleaved A/B on Zen 3 (decode-flash-
		// gqa, hd 128, 1 thread): 7–11 % off a call in L3, f32 and f16.
		blocks = []int{6, 4, 2, 1}
	case t.kv.size == 4:
		blocks = []int{8, 4, 2, 1}
	}
	t.colBlocks("pv2", blocks, odb, lCol, func(nb int, col GPVirtual) {
		// Eight vectors (hd 128 f32, a whole row): one row at a time,
		// in address order (see scores), sixteen accumulators; fewer:
		// rows in pairs, the two sets of accumulators halving the FMA
		// chains. (f16 stays in blocks of four: one row at a time cost
		// it a third from DRAM, measured.)
		rows := 2
		if nb == 8 || t.W == 8 {
			rows = 1
		}
		var acc [2][2][]VecVirtual // [head][row set][vector]
		for h, a := range t.loadO(lo[:], col, nb) {
			acc[h][0] = a
			if rows == 2 {
				acc[h][1] = make([]VecVirtual, nb)
				for u := range nb {
					acc[h][1][u] = t.Vec()
					t.Zero(acc[h][1][u])
				}
			}
		}
		wp, rp, n := GP64(), GP64(), GP64()
		MOVQ(lW, wp)
		t.vColumn(rp, lV, col)
		MOVQ(lCnt, n)
		pair, single, merge := NewLabel("pv2_pair"), NewLabel("pv2_single"), NewLabel("pv2_merge")
		if rows == 2 {
			CMPQ(n, Imm(2))
			JL(LabelRef(single))
			Label(pair)
			var vr [2][]VecVirtual
			for r := range 2 {
				vr[r] = make([]VecVirtual, nb)
				for u := range nb {
					m := Mem{Base: rp, Disp: u * t.kb()}
					if r == 1 {
						m = Mem{Base: rp, Index: vdb, Scale: 1, Disp: u * t.kb()}
					}
					vr[r][u] = t.kvLoad(m)
				}
			}
			for h := range 2 {
				for r := range 2 {
					wv := t.Vec()
					VBROADCASTSS(weightAt(wp, wd, h, r), wv)
					for u := range nb {
						VFMADD231PS(vr[r][u], wv, acc[h][r][u])
					}
				}
			}
			pf.step()
			ADDQ(Imm(8), wp)
			LEAQ(Mem{Base: rp, Index: vdb, Scale: 2}, rp)
			SUBQ(Imm(2), n)
			CMPQ(n, Imm(2))
			JGE(LabelRef(pair))
		}
		// The rows left one at a time (all of them with one row set).
		Label(single)
		TESTQ(n, n)
		JZ(LabelRef(merge))
		if t.W == 8 {
			// AVX2: each vector of the row loaded (and widened) once into
			// a register and multiplied by both heads' weights.
			var wv [2]VecVirtual
			for h := range 2 {
				wv[h] = t.Vec()
				VBROADCASTSS(weightAt(wp, wd, h, 0), wv[h])
			}
			for u := range nb {
				x := t.kvLoad(Mem{Base: rp, Disp: u * t.kb()})
				for h := range 2 {
					VFMADD231PS(x, wv[h], acc[h][0][u])
				}
			}
		} else {
			// AVX-512: the row's vectors loaded (and widened) once into
			// registers (8 of them beside the 16 accumulators at hd 128),
			// then each head's FMAs. f32 used to take them as the FMAs'
			// memory operands, a load per FMA: against that, a 32:8 or
			// 64:8 call took 0.87–0.90 of the time with the row's data in
			// L2 and 0.93–0.95 in L3 (ctx 512 and 1024); from DRAM (ctx
			// 32768 --cold) 64:8 took 0.92–0.95 and 32:8 0.99 (10 rounds;
			// 1.01–1.07 in shorter runs) (Zen 5, interleaved A/B, one
			// thread).
			vl := make([]VecVirtual, nb)
			for u := range nb {
				vl[u] = t.kvLoad(Mem{Base: rp, Disp: u * t.kb()})
			}
			for h := range 2 {
				wv := t.Vec()
				VBROADCASTSS(weightAt(wp, wd, h, 0), wv)
				for u := range nb {
					VFMADD231PS(vl[u], wv, acc[h][0][u])
				}
			}
		}
		if rows == 1 {
			if pf != nil && pf.spread {
				// A spread step prefetches on every ng-th row, for the
				// ng/2 pairs that read the tile: twice the lines a row
				// reads keeps the next K tile whole (with 6-vector
				// blocks, 4 lines left a quarter of an f32 tile to DRAM).
				pf.stepN(max(prefetchLines, 2*nb*t.kb()/64))
			} else {
				pf.step()
			}
		}
		ADDQ(Imm(4), wp)
		ADDQ(vdb, rp)
		DECQ(n)
		JMP(LabelRef(single))
		Label(merge)
		var sums [][]VecVirtual
		for h := range 2 {
			if rows == 2 {
				for u := range nb {
					VADDPS(acc[h][1][u], acc[h][0][u], acc[h][0][u])
				}
			}
			sums = append(sums, acc[h][0])
		}
		t.storeO(lo[:], col, sums)
	})
}

// weightAt addresses the weight of row r of a pair's head h: wp is head
// 0's weight buffer at the row, wd the bytes from it to head 1's.
func weightAt(wp, wd GPVirtual, h, r int) Mem {
	if h == 1 {
		return Mem{Base: wp, Index: wd, Scale: 1, Disp: 4 * r}
	}
	return Mem{Base: wp, Disp: 4 * r}
}

// colBlocks emits P·V's loop over the column blocks of the output rows
// (odb bytes), shared by pv2 and pv4: for each block size nb of sizes,
// largest first, while nb vectors remain from the offset at lCol,
// body(nb, col) with col that offset; lCol then moves nb vectors on.
func (t tier) colBlocks(name string, sizes []int, odb GPVirtual, lCol Mem, body func(nb int, col GPVirtual)) {
	MOVQ(U32(0), lCol)
	for _, nb := range sizes {
		top, next := NewLabel(name+"_block"), NewLabel(name+"_next")
		Label(top)
		col, left := GP64(), GP64()
		MOVQ(lCol, col)
		MOVQ(odb, left)
		SUBQ(col, left)
		CMPQ(left, U32(nb*t.VB()))
		JL(LabelRef(next))
		body(nb, col)
		ADDQ(U32(nb*t.VB()), lCol)
		JMP(LabelRef(top))
		Label(next)
	}
}

// loadO loads the nb vectors at byte offset col of each output row whose
// address is at lo[h]: one accumulator set per head.
func (t tier) loadO(lo []Mem, col GPVirtual, nb int) [][]VecVirtual {
	acc := make([][]VecVirtual, len(lo))
	for h := range lo {
		ob := GP64()
		MOVQ(lo[h], ob)
		for u := range nb {
			a := t.Vec()
			VMOVUPS(Mem{Base: ob, Index: col, Scale: 1, Disp: u * t.VB()}, a)
			acc[h] = append(acc[h], a)
		}
	}
	return acc
}

// storeO stores what loadO loaded, acc[h] back to the row at lo[h].
func (t tier) storeO(lo []Mem, col GPVirtual, acc [][]VecVirtual) {
	for h := range lo {
		ob := GP64()
		MOVQ(lo[h], ob)
		for u, a := range acc[h] {
			VMOVUPS(a, Mem{Base: ob, Index: col, Scale: 1, Disp: u * t.VB()})
		}
	}
}

// pv4Max is the longest V row (bytes) that P·V takes four heads at a
// time, 0 for no limit. pv4 reads a row in blocks of four vectors, so a
// longer row is read in column passes, one block of every row of the tile
// at a time; from DRAM that order cost f32 hd 128 (eight vectors a row)
// what sharing each load saved: 32:8 and 64:8, ctx 32768 --cold, went
// from 12.6–13.5 and 16.0–16.2 ms a call to 13.8–14.5 and 17.5–17.6
// (interleaved A/B, Zen 4), while in L3 it took 12 % off. f16 rows (hd
// 128: 256 bytes, also eight vectors) gained in both, the widening
// shared: there is no limit for them. On Zen 5, with near prefetch (see
// prefetcher), f32 hd 128 in quads took 0.98–1.01 of the time in L3 (32:8
// and 64:8, ctx 1024, time over the paired kv-read, 3 rounds), and from
// DRAM (family 26 model 2, 2026-12-02, ctx 32768 --cold, sweeps
// alternated, 8 rounds, median time over the pairs') 0.99 (32:8) and 0.985
// (64:8), rounds 0.81–1.20: the limit stays.
func pv4Max(t tier) int {
	if t.kv.size == 4 {
		return 4 * t.kb()
	}
	return 0
}

// pv4 is pv for four heads at once (AVX-512, f32 and f16): every V vector
// is loaded (and widened) once into a register and multiplied by the four
// heads' weights, so that a vector's load and widening serve four FMAs,
// not pv2's two (pvHeads). Blocks of up to 4 vectors, one row at a time:
// 16 accumulators, 4 V registers, 4 broadcast weights. pf steps lines
// lines a row (prefetchLines, or pacedLines where the mode asks).
func (t tier) pv4(o, w, ws, v, cnt, odb, vdb GPVirtual, tmp Mem, pf *prefetcher, lines int) {
	t.pvHeads("pv4", 4, []int{4, 2, 1}, o, w, ws, v, cnt, odb, vdb, tmp, pf, lines)
}

// pvHeads is P·V for n heads at once (n ≤ 8; pv4, pvWide): every V vector
// is loaded (and widened) once into a register and multiplied by the n
// heads' weights, in column blocks of the sizes given (largest first), one
// row at a time. o is head 0's output row (head h's at o + h·odb), w head
// 0's weight buffer (head h's at w + h·ws, addressed from wp for heads 0–3
// and wp4 = wp + 4·ws for 4–7); the per-block state lives in the 96 scratch
// bytes at tmp. pf steps lines lines a row.
func (t tier) pvHeads(name string, n int, sizes []int, o, w, ws, v, cnt, odb, vdb GPVirtual, tmp Mem, pf *prefetcher, lines int) {
	pf.hold()
	defer pf.release()
	lo := make([]Mem, n)
	for h := range lo {
		lo[h] = tmp.Offset(8 * h)
	}
	lW, lV, lCnt, lCol := tmp.Offset(64), tmp.Offset(72), tmp.Offset(80), tmp.Offset(88)
	{
		r := GP64()
		MOVQ(o, r)
		for h := range n {
			if h > 0 {
				ADDQ(odb, r)
			}
			MOVQ(r, lo[h])
		}
	}
	MOVQ(w, lW)
	ws3 := GP64()
	LEAQ(Mem{Base: ws, Index: ws, Scale: 2}, ws3)
	MOVQ(v, lV)
	MOVQ(cnt, lCnt)
	t.colBlocks(name, sizes, odb, lCol, func(nb int, col GPVirtual) {
		acc := t.loadO(lo, col, nb) // [head][vector]
		wp, rp, left := GP64(), GP64(), GP64()
		var wp4 GPVirtual
		MOVQ(lW, wp)
		if n > 4 {
			wp4 = GP64()
			LEAQ(Mem{Base: wp, Index: ws, Scale: 4}, wp4)
		}
		t.vColumn(rp, lV, col)
		MOVQ(lCnt, left)
		row, merge := NewLabel(name+"_row"), NewLabel(name+"_merge")
		TESTQ(left, left)
		JZ(LabelRef(merge))
		Label(row)
		vl := make([]VecVirtual, nb)
		for u := range nb {
			vl[u] = t.kvLoad(Mem{Base: rp, Disp: u * t.kb()})
		}
		for h := range n {
			wv := t.Vec()
			VBROADCASTSS(headAt(wp, wp4, ws, ws3, h, 0), wv)
			for u := range nb {
				VFMADD231PS(vl[u], wv, acc[h][u])
			}
			stepPart(pf, lines, n, h)
		}
		ADDQ(Imm(4), wp)
		if n > 4 {
			ADDQ(Imm(4), wp4)
		}
		ADDQ(vdb, rp)
		DECQ(left)
		JNZ(LabelRef(row))
		Label(merge)
		t.storeO(lo, col, acc)
	})
}

// reciprocalOrZero returns (broadcast) 1/s, or 0 when s == 0; NaN for a
// NaN s (VUCOMISS reports NaN as unordered: ZF and PF set).
func (t tier) reciprocalOrZero(s VecVirtual) VecVirtual {
	r := XMM()
	t.Zero(r)
	zero, div := NewLabel("recip_zero"), NewLabel("recip_div")
	VUCOMISS(r, s)
	JNE(LabelRef(div))
	JPS(LabelRef(div))
	JMP(LabelRef(zero))
	Label(div)
	VMOVSS(KC(COne), r)
	VDIVSS(s, r, r)
	Label(zero)
	b := t.Vec()
	VBROADCASTSS(r, b)
	return b
}

// flashDecode generates the online-softmax decode for g query heads sharing
// one KV head (g = 1 is decode-flash; g = H/Hkv is decode-flash-gqa). Per
// tile of tk keys, in three phases over the heads of the group:
//
//	A  scores of every head into its tile buffer, and the tile max;
//	B  per head: rescale (s, o) if the running max grew, exponentiate, sum;
//	C  P·V of every head.
//
// The heads of one phase are independent, so the core overlaps them; one
// head's scores → max → exp → P·V chain is long and would otherwise run
// alone. The K and V tile stays in L1 between the heads, and software
// prefetch (this tile's V during A, the next tile's K during C, and from
// B on in the AVX-512 groups; into L2, or L1 for those groups: see
// prefetcher) keeps DRAM streaming while they compute: without it a
// group of four heads leaves memory idle for most of the tile and runs
// ~25 % slower (measured).
//
// state holds m[0..g), s[0..g) and the tile max mb[0..g).
func (t tier) flashDecode() {
	name := "flashDecode" + t.kv.name + t.Name
	if t.pos {
		name += "Pos"
	}
	Implement(name) // its signature: the stub in decode_amd64.go
	Attributes(NOSPLIT)
	Doc(name+" is flash decode, with the exp the mode argument asks for (byExp); see flashGeneric.",
		"state holds m[0..ng), s[0..ng), mb[0..ng); tiles holds max(ng, 2) tile buffers of tileStride bytes (a lone head pipelined takes two).")
	lKp, lVp, lRem, lCnt, lH := AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8)
	lTmp := AllocLocal(160)
	// AVX2 (one head at a time) spreads both regions evenly over the heads
	// of a phase; AVX-512's head pairs step through them at half the rate
	// they read K or V, which for 4 heads ends with the phase.
	spread := t.W == 8
	// near: the AVX-512 head-major quads and pairs (and the wide sets of
	// either tier) prefetch into L1, one tile behind the cursor, instead
	// (see prefetcher).
	near := t.W == 16 && !t.pos && !t.kv.q8 // q8_0 has no quads or pairs
	// wideNear: the head-major wide sets (f16, where the mode asks) take
	// the near stream in either tier; AVX2's is spread as the rest of
	// AVX2's (see wideLines).
	wideNear := t.wide() && !t.pos
	var lNearOff Mem
	if near || wideNear {
		lNearOff = AllocLocal(8)
	}
	newPrefetcher := func() prefetcher {
		p := prefetcher{cur: AllocLocal(8), end: AllocLocal(8), spread: spread}
		if spread {
			p.countdown = AllocLocal(8)
		}
		p.nearOff = lNearOff
		return p
	}
	pfV, pfK := newPrefetcher(), newPrefetcher()
	pfV.l1, pfK.l1 = l1Of(t), l1Of(t)
	scale := paramAddr("scale")

	// eachHead emits the loops over the heads of the group, h kept in lH
	// so that a body has every register to itself: with wideSet set (wide:
	// f16, where the mode argument asks), wideHeads heads at a time while
	// that many remain; with quad set (AVX-512, f32 and f16), four heads at
	// a time while four remain, and only when a K or V row is at most
	// quadMax bytes, where quadMax is set (a runtime test: D is a
	// parameter), quad(lines) stepping the prefetch lines a step
	// (pacedLines for f16 where the mode asks); with pair set (f32 and f16), two
	// at a time while two remain; then single, one at a time. The wide
	// sets, quads and pairs step the prefetchers with their near prefetch
	// on (AVX2: the wide sets alone), the single heads with it off.
	var lRL Mem // the bytes of a K or V row (set below)
	eachHead := func(name string, quadMax int, wideSet func(), quad func(lines int), pair, single func()) {
		MOVQ(U32(0), lH)
		loop := func(step int, body func()) {
			top, done := NewLabel(name), NewLabel(name+"_done")
			Label(top)
			h, g := GP64(), GP64()
			MOVQ(lH, h)
			if step > 1 {
				ADDQ(U32(step-1), h)
			}
			Load(Param("ng"), g)
			CMPQ(h, g)
			JGE(LabelRef(done))
			body()
			ADDQ(U32(step), lH)
			JMP(LabelRef(top))
			Label(done)
		}
		// The octs, quads and pairs step the prefetchers with near on
		// (its lines into L2 where the mode asks: nearT1Of).
		pfV.near, pfK.near = near, near
		pfV.nearT1, pfK.nearT1 = nearT1Of(t), nearT1Of(t)
		// askMode jumps to no unless the mode argument has bit.
		askMode := func(bit int, no LabelRef) {
			ask := GP64()
			Load(Param("mode"), ask)
			TESTQ(U32(bit), ask)
			JZ(no)
		}
		// bySplit emits f twice, its steps split (splitSteps) where the
		// mode argument has modeSplit and whole where not.
		bySplit := func(f func()) {
			no, done := NewLabel(name+"_whole"), NewLabel(name+"_split_done")
			askMode(modeSplit, LabelRef(no))
			splitSteps = true
			f()
			splitSteps = false
			JMP(LabelRef(done))
			Label(no)
			f()
			Label(done)
		}
		if wideSet != nil && t.wide() { // where the caller asks
			noWide := NewLabel(name + "_nowide")
			askMode(modeWide, LabelRef(noWide))
			if t.kv.size == 4 { // f32: groups of 8 to 15 heads (see wide)
				g := GP64()
				Load(Param("ng"), g)
				CMPQ(g, Imm(16))
				JGE(LabelRef(noWide))
			}
			pfV.near, pfK.near = wideNear, wideNear
			pfV.far, pfK.far = farOcts(t), farOcts(t)
			splitSteps = true
			loop(t.wideHeads(), wideSet)
			splitSteps = false
			pfV.far, pfK.far = false, false
			pfV.near, pfK.near = near, near
			Label(noWide)
		}
		if quad != nil && t.W == 16 && !t.kv.q8 { // scores4 and pv4: AVX-512, f32 and f16
			pfV.far, pfK.far = farQuads(t), farQuads(t)
			skip := NewLabel(name + "_noquads")
			if quadMax > 0 {
				CMPQ(lRL, U32(quadMax))
				JA(LabelRef(skip))
			}
			if near { // paced where the caller asks (pacedLines)
				unpaced := NewLabel(name + "_unpaced")
				askMode(modePaced, LabelRef(unpaced))
				if t.kv.size == 4 { // f32: groups of two quads or more
					g := GP64()
					Load(Param("ng"), g)
					CMPQ(g, Imm(8))
					JL(LabelRef(unpaced))
				}
				bySplit(func() { loop(4, func() { quad(pacedLines) }) })
				JMP(LabelRef(skip))
				Label(unpaced)
			}
			bySplit(func() { loop(4, func() { quad(prefetchLines) }) })
			Label(skip)
			pfV.far, pfK.far = false, false
		}
		if pair != nil {
			loop(2, pair)
		}
		// (Near on for the single heads too, T0 of this tile's V during
		// a lone head's scores: Zen 5, AVX-512, time over the paired
		// kv-read, 3 rounds, 0.95–1.02 in L2 and L3, 0.98–1.01 from
		// DRAM. Not kept. On the Xeon, f16 and q8_0, hd 128, one
		// process, 9–15 rounds, time over T1 at the cursor's: T0 there
		// instead 1.00–1.05; a far T1 stream two tiles on beside it
		// 1.00–1.07; both, from DRAM (ctx 32768, copies past 1.2 GB)
		// AVX2 0.96–1.01 (f16) and 0.96–0.98 (q8_0), AVX-512 0.98 and
		// 0.99–1.00 (the far stream four tiles on: 0.99–1.02), at ctx
		// 4096 0.94–1.05 with rounds 0.55–1.54 (a busy hour): within the
		// host's noise. Not kept.)
		pfV.near, pfK.near = false, false
		pfV.nearT1, pfK.nearT1 = false, false
		loop(1, single)
	}
	// noQ8 is f, or nil for a q8_0 cache: scores2 and pv2 have no q8_0
	// form.
	noQ8 := func(f func()) func() {
		if t.kv.q8 {
			return nil
		}
		return f
	}
	// forHeads emits "for h := 0; h < ng; h++ { body }".
	forHeads := func(name string, body func()) { eachHead(name, 0, nil, nil, nil, body) }
	// firstHeadOr emits first() for head 0 and other() for the rest.
	firstHeadOr := func(first, other func()) {
		otherL, done := NewLabel("other_head"), NewLabel("first_done")
		CMPQ(lH, U32(0))
		JNE(LabelRef(otherL))
		first()
		JMP(LabelRef(done))
		Label(otherL)
		other()
		Label(done)
	}
	// headRow returns base + h·d·4, the row of head h (h reloaded from lH).
	headRow := func(param string, db GPVirtual) GPVirtual {
		r, base := GP64(), GP64()
		MOVQ(lH, r)
		IMULQ(db, r)
		Load(Param(param), base)
		ADDQ(base, r)
		return r
	}
	rowBytes := func() GPVirtual { // of q and o
		db := GP64()
		Load(Param("d"), db)
		SHLQ(Imm(2), db)
		return db
	}
	// kvStride is the bytes from one K or V row (position) to the next;
	// lRL holds the bytes of one row, kvBytes(d).
	kvStride := func() GPVirtual {
		r := GP64()
		Load(Param("stride"), r)
		return r
	}
	lRL = AllocLocal(8)
	{
		r := t.kvBytes(Param("d"))
		MOVQ(r, lRL)
	}
	pfV.rows, pfV.rl = t.pos, lRL
	pfK.rows, pfK.rl = t.pos, lRL
	tileOf := func() GPVirtual {
		b, tiles := GP64(), GP64()
		Load(Param("tileStride"), b)
		IMULQ(lH, b)
		Load(Param("tiles"), tiles)
		ADDQ(tiles, b)
		return b
	}
	// stateAt addresses state[i·ng + h] (i = 0 m, 1 s, 2 mb).
	stateAt := func(i int) Mem {
		st, h := GP64(), GP64()
		Load(Param("state"), st)
		if i > 0 {
			g := GP64()
			Load(Param("ng"), g)
			for range i {
				LEAQ(Mem{Base: st, Index: g, Scale: 4}, st)
			}
		}
		MOVQ(lH, h)
		return Mem{Base: st, Index: h, Scale: 4}
	}

	// m = -Inf, s = 0, o = 0 for every head of the group.
	forHeads("init", func() {
		ninf := XMM()
		VMOVSS(KC(CNegInf), ninf)
		VMOVSS(ninf, stateAt(0))
		MOVL(U32(0), stateAt(1))
		db := rowBytes()
		t.zeroRow(headRow("o", db), db)
	})
	{
		r := GP64()
		Load(Param("k"), r)
		MOVQ(r, lKp)
		Load(Param("v"), r)
		MOVQ(r, lVp)
		Load(Param("n"), r)
		MOVQ(r, lRem)
	}

	tile, finish := NewLabel("tile"), NewLabel("finish")
	pipe := t.lonePipelined()
	loneL := NewLabel("lone")
	if pipe { // a lone head, where the caller asks (mode bit 0: lonePipelined's doc)
		g, ask := GP64(), GP64()
		phases := NewLabel("lone_phases")
		Load(Param("mode"), ask)
		TESTQ(U32(modeLonePipe), ask)
		JZ(LabelRef(phases))
		Load(Param("ng"), g)
		CMPQ(g, Imm(1))
		if t.kv.q8 { // hd 128 alone: q8Fused
			JNE(LabelRef(phases))
			CMPQ(lRL, U32(q8FusedBlocks*q8BlockBytes))
		}
		JEQ(LabelRef(loneL))
		Label(phases)
	}
	// minTk sets lCnt = min(tk, lRem), the next tile's keys, and returns
	// it in a register; it jumps to empty when no key is left.
	minTk := func(empty LabelRef) GPVirtual {
		rem, cnt := GP64(), GP64()
		MOVQ(lRem, rem)
		TESTQ(rem, rem)
		JLE(empty)
		Load(Param("tk"), cnt)
		CMPQ(rem, cnt)
		CMOVQLT(rem, cnt)
		MOVQ(cnt, lCnt)
		return cnt
	}
	Label(tile)
	{
		cnt := minTk(LabelRef(finish))
		// Prefetch regions of this tile: its V (phase A), the next K
		// (phase C; the AVX-512 groups begin it in B), cnt rows of stride
		// bytes. The head-major kernels, only ever given a head's rows
		// back to back (flashAsm), step through a region in address
		// order; the position-major ones (Pos) row by row (stepRows).
		bytes, p := kvStride(), GP64()
		IMULQ(cnt, bytes)
		// A group (ng > 1) prefetches a tile further ahead: the next
		// tile's V, the K two tiles on. Its phases are long enough that one
		// tile ahead left memory idle: from DRAM (Zen 4, ctx 32768
		// --cold, interleaved A/B) f32 32:8 went from 11.8–12.7 to
		// 10.2–12.0 ms a call (AVX-512) and 13.5–13.7 to 11.2–11.7
		// (AVX2), f16 from 7.6–7.7 to 6.6 and 7.9–8.0 to 7.3–7.5. A
		// lone head keeps one tile: farther, AVX2's q8_0 decode-flash ran
		// 2.4 times slower. (AVX-512 on Zen 5, one or three tiles
		// further: 0.99–1.04 in L3, f32, f16 and q8_0; from DRAM, ctx
		// 32768 --cold, one or two further, time over the paired kv-read,
		// 3 rounds: f16 1.05–1.11, q8_0 1.15–1.21, f32 0.99–1.01. Nor
		// the next tile's V begun in its P·V, each row pair
		// PREFETCHT1-ing 1 or 4 lines of the next tile's V row, 4
		// rounds: f16 1.02 and 0.97, rounds 0.78–1.07 and every point
		// unstable; q8_0 1.05 and 1.19.)
		ahead, g := GP64(), GP64()
		XORQ(ahead, ahead)
		Load(Param("ng"), g)
		CMPQ(g, Imm(1))
		CMOVQGT(bytes, ahead)
		if near || wideNear { // a group's cursor runs ahead bytes on: near is this tile
			MOVQ(ahead, p)
			NEGQ(p)
			MOVQ(p, lNearOff)
		}
		MOVQ(lVp, p)
		ADDQ(ahead, p)
		MOVQ(p, pfV.cur)
		ADDQ(bytes, p)
		MOVQ(p, pfV.end)
		MOVQ(lKp, p)
		ADDQ(bytes, p)
		ADDQ(ahead, p)
		MOVQ(p, pfK.cur)
		ADDQ(bytes, p)
		MOVQ(p, pfK.end)
		pfV.restart()
		pfK.restart()
	}
	// pairRows returns the rows (of param, q or o) and tile buffers of
	// heads h and h+1, and the row size in bytes.
	pairRows := func(param string) (row [2]GPVirtual, buf [2]GPVirtual, db GPVirtual) {
		db = rowBytes()
		row[0], buf[0] = headRow(param, db), tileOf()
		row[1], buf[1] = GP64(), GP64()
		LEAQ(Mem{Base: row[0], Index: db, Scale: 1}, row[1])
		MOVQ(buf[0], buf[1])
		ADDQ(paramAddr("tileStride"), buf[1])
		return row, buf, db
	}
	// A: scores and tile max of every head, two heads at a time (scores2,
	// sharing each K load and widening; on AVX2 it took 16–20 % off a
	// 32:8 or 64:8 call in L3 and lifted a cold one from 54–60 % to
	// 66–69 % of the paired kv-read in f32, 38–39 % to 52–55 % in f16,
	// interleaved A/B on Zen 4). AVX-512 first takes four heads at a time
	// (scores4: in L3, Zen 4, f16 32:8 and 64:8 calls 5–7 % faster than
	// in pairs, f32 1–2 %). Prefetch keeps memory busy through the phase:
	// the quads and pairs spread this tile's V over their loops (pfV); a
	// lone head (decode-flash, odd groups) fetches it if it is the first.
	eachHead("scores", 0, func() {
		q, buf, db := pairRows("q")
		kp, cnt, ts := GP64(), GP64(), GP64()
		MOVQ(lKp, kp)
		MOVQ(lCnt, cnt)
		Load(Param("tileStride"), ts)
		m := t.scoresWide(buf[0], ts, q[0], db, kp, cnt, kvStride(), lRL, scale, lTmp, &pfV)
		mb := stateAt(2)
		for h := range m {
			VMOVSS(m[h], mb.Offset(4*h))
		}
	}, func(lines int) {
		q, buf, db := pairRows("q")
		kp, cnt, ts := GP64(), GP64(), GP64()
		MOVQ(lKp, kp)
		MOVQ(lCnt, cnt)
		Load(Param("tileStride"), ts)
		m := t.scores4(buf[0], ts, q[0], db, kp, cnt, kvStride(), lRL, scale, lTmp, &pfV, lines)
		mb := stateAt(2)
		for h := range m {
			VMOVSS(m[h], mb.Offset(4*h))
		}
	}, noQ8(func() {
		q, buf, _ := pairRows("q")
		kp, cnt := GP64(), GP64()
		MOVQ(lKp, kp)
		MOVQ(lCnt, cnt)
		m0, m1 := t.scores2(buf[0], buf[1], q[0], q[1], kp, cnt, kvStride(), lRL, scale, lTmp, &pfV)
		mb := stateAt(2)
		VMOVSS(m0, mb)
		VMOVSS(m1, mb.Offset(4))
	}), func() {
		db := rowBytes()
		qh, bufh, kp, cnt := headRow("q", db), tileOf(), GP64(), GP64()
		MOVQ(lKp, kp)
		MOVQ(lCnt, cnt)
		kdb := kvStride()
		if spread {
			// Every head prefetches its share of the tile's V.
			VMOVSS(t.scores(bufh, qh, kp, cnt, kdb, lRL, scale, &pfV), stateAt(2))
			return
		}
		// The first head prefetches the tile's V (row by row in Pos).
		other, done := NewLabel("scores_other"), NewLabel("scores_first_done")
		CMPQ(lH, U32(0))
		JNE(LabelRef(other))
		VMOVSS(t.scores(bufh, qh, kp, cnt, kdb, lRL, scale, &pfV), stateAt(2))
		JMP(LabelRef(done))
		Label(other)
		VMOVSS(t.scores(bufh, qh, kp, cnt, kdb, lRL, scale, nil), stateAt(2))
		Label(done)
	})
	// B: online-softmax update of every head, two heads at a time (their
	// exp loops merged, expInPlace): one head's chain (max, exp, sum, its
	// horizontal reduction, the state) is latency, about 34 cycles a head
	// on Zen 3, and two in one loop overlap. In L3 (ctx 1024, 8 KV heads,
	// one process, interleaved, median B/A) AVX2 on Zen 3: f32 32:8 and
	// 64:8 calls took 0.96 and 0.95 of the time, f16 0.94 and 0.94; from
	// DRAM (ctx 32768) 0.99–1.01. AVX-512 on Zen 5 (6 rounds): f32 0.88
	// and 0.96, f16 0.98 and 0.99; from DRAM (ctx 32768 --cold) f32 0.97
	// and 0.95, f16 0.99–1.00. What the phase still costs (9–10 % of an L3
	// call, f32 g = 4 and 8, Zen 3) is mostly not its exps: without them a
	// call took 0.96–0.97 of the time, and computing them in scores2's
	// batch epilogue instead (one ymm per batch, both heads) took
	// 1.05–1.10. Four heads' exps in one loop (AVX-512 quads, softmax(4)
	// in eachHead's quad slot) took 1.00–1.01 of the time (f32 and f16,
	// 32:8 and 64:8, L3, Zen 5, 5 rounds), so the quads take theirs in
	// pairs. (It generates since no vector register is live into the
	// functions; see loadScores.)
	//
	// What each phase costs, from the kernel with that phase left out
	// (timing only; Zen 5, AVX-512, ctx 64 in L2, paired rounds, median
	// of 10): scores 39–48 % of a 32:8 or 64:8 call (f32, f16), this
	// phase 16–17 %, P·V 21–33 %; a lone f16 head (ctx 1024) 52, 19 and
	// 39 %. P·V runs at about 96 % of the FMA roof, scores at about 73 %.
	// At ctx 256 (f16 64:8, in one process): scores 50 %, this phase
	// 14–15 %, P·V 37 %, so scores at 63–65 % of the roof and P·V at
	// about 84 %; the scores' time is the same at tile_k 16 to 128, so it
	// is not their per-call work (why they lose it: scores4).
	// The groups' softmax is work, not waiting: emitted after P·V, where
	// nothing waits on it, a call took 0.98–1.01 of the time, a lone f16
	// head's 0.88 (L2) and 0.94 (L3). So a lone head gains from its
	// softmax overlapping the next tile's scores; groups would not. Built
	// so (a lone head scoring tile t+1 before tile t's softmax and P·V,
	// two score buffers and two tile maxima taking turns, P·V prefetching
	// the K tile after next), it took in cache 0.86–0.93 of the time
	// (AVX-512 f16, ctx 1024 and 4096), f32 0.97–0.98, q8_0 0.97–0.99,
	// AVX2 0.96–1.00; but from DRAM (eight lone heads, 128 MB, 10–14
	// paired rounds) f16 1.03–1.07 (AVX-512) and 1.04 (AVX2), f32
	// 1.00–1.04, q8_0 0.92 and 1.01. The K tile one or three ahead, or
	// this tile's V prefetched during the scores, did worse. Not kept: a
	// decode's cache mostly comes from DRAM. Also measured: each quad's
	// softmax right after its scores, 1.01–1.05; each pair's state
	// addressed from two registers set once, 0.99–1.00 (lone f16 1.05);
	// the rescale left out (timing only), 0.93–0.98. Of this phase's
	// 13–15 % of an f32 32:8 or 64:8 call in L3 (ctx 1024; Zen 5,
	// AVX-512, timing only, 6 rounds), the exps are 5 % and the sums'
	// horizontal reductions 1–4 %; each head's sum kept as 16 lanes (in its
	// tile buffer, reduced once at the end, not once a tile) took 0.95–1.01
	// in one set and 0.98–1.02 in the next (8 and 10 rounds), lone heads
	// 0.94–1.01. Not kept.
	//
	// On the Xeon of wide (family 6 model 207, one thread, hd 128, in one
	// process with a mode bit flipped between calls, 9 rounds, time with
	// over without): the wide sets' exps in one loop (softmax(8) on
	// AVX-512, softmax(4) on AVX2, in eachHead's wide slot, the pairs'
	// prefetch step as one of n·size lines) took in cache (ctx 256, 1024)
	// 0.98–1.05, from DRAM (ctx 32768, copies past 1.2 GB) 0.94–1.04: not
	// kept. This phase left out (timing only) took AVX-512 64:8 0.88 of
	// the time in L2 (ctx 256, f32) and 0.90–0.92 from DRAM (f32, f16),
	// AVX2 0.90 and 0.95–0.99: from DRAM its work adds to the stream's
	// time as in cache, and even without it f32 64:8 read at 10.9 GB/s
	// (27.1 ms a call to 24.6), about 82 % of that hour's kv-read.
	//
	// rescale(k) updates head h+k's running max from its tile max: where
	// it grew, c = exp(m_old − m_new) (0 on the first tile, where m_old
	// = −Inf), s *= c, o *= c, m = m_new.
	//
	// grow is rescale with o wherever it is: scaled(c) multiplies it.
	grow := func(k int, scaled func(c VecVirtual)) {
		mold, mnew := XMM(), XMM()
		VMOVSS(stateAt(0).Offset(4*k), mold)
		VMAXSS(stateAt(2).Offset(4*k), mold, mnew)
		same := NewLabel("no_rescale")
		VUCOMISS(mold, mnew)
		JEQ(LabelRef(same))
		cx := XMM()
		VSUBSS(mnew, mold, cx)
		c := t.Vec()
		VBROADCASTSS(cx, c)
		byExp(func(fast bool) { t.Exp(fast, c) })
		sv := XMM()
		VMULSS(stateAt(1).Offset(4*k), c.AsX(), sv)
		VMOVSS(sv, stateAt(1).Offset(4*k))
		scaled(c)
		VMOVSS(mnew, stateAt(0).Offset(4*k))
		Label(same)
	}
	rescale := func(k int) {
		grow(k, func(c VecVirtual) {
			db := rowBytes()
			row := headRow("o", db)
			for range k { // head h+k's row
				ADDQ(db, row)
			}
			t.scaleRow(row, db, c)
		})
	}
	// softmax(n) is the phase for heads h … h+n−1: rescale each, then
	// their exps in one loop and their sums into s.
	//
	// The AVX-512 pairs (near set) begin the next tile's K here, two lines
	// per byte of an element a pair (8 of an f32 tile's 128 at hd 128 and
	// CKE's tk 16, 4 of an f16 tile's 64): the phase has no other step, so
	// memory idled through it, and P·V takes the rest. Zen 5, one thread,
	// hd 128, ctx 32768 --cold, time over the paired kv-read, sweeps
	// alternated, 3 rounds a set: f32 32:8 0.85–0.91 (6 sets), 64:8
	// 0.83–1.00 (median 0.87); f16 32:8 0.90–0.94 (5 sets), 64:8 0.92–1.04;
	// hd 64 and 256 0.91–1.01; in L3 (ctx 1024 and 4096) 0.97–1.00, one
	// noisy set 0.98–1.07. Twice those lines: f32 0.85–0.90, f16
	// 0.99–1.02; half: f32 0.94, f16 0.90–0.97; twice, from the first pair
	// alone: as kept (f32 0.83–0.89, f16 0.91–0.95). The same in AVX2's
	// spread pairs (a step of its own, their countdown left to P·V) took
	// f32 and f16 0.97–1.13 from DRAM on Zen 5, but is Zen 4's for f32
	// where the caller asks (softmaxStepOf). Not kept: a 64:8 group's
	// second quad of scores beginning the next K once this V is fetched,
	// 1.05–1.10.
	softmax := func(n int) func() {
		return func() {
			if n == 2 && near {
				pfK.stepOnce(2 * t.kv.size)
			}
			if n == 2 && softmaxStepOf(t) { // where the caller asks
				no := NewLabel("softmax_nostep")
				TESTQ(U32(modeSoftmaxStep), paramAddr("mode"))
				JZ(LabelRef(no))
				pfK.stepOnce(2 * t.kv.size)
				Label(no)
			}
			for k := range n {
				rescale(k)
			}
			ms := make([]VecVirtual, n)
			for k := range ms {
				ms[k] = t.Vec()
				VBROADCASTSS(stateAt(0).Offset(4*k), ms[k])
			}
			bufs := []GPVirtual{tileOf()}
			for range n - 1 {
				b := GP64()
				MOVQ(bufs[len(bufs)-1], b)
				ADDQ(paramAddr("tileStride"), b)
				bufs = append(bufs, b)
			}
			cnt := GP64()
			MOVQ(lCnt, cnt)
			for k, sum := range t.expInPlace(bufs, cnt, ms) {
				VADDSS(stateAt(1).Offset(4*k), sum, sum)
				VMOVSS(sum, stateAt(1).Offset(4*k))
			}
		}
	}
	eachHead("softmax", 0, nil, nil, softmax(2), softmax(1))
	// C: P·V of every head, four heads at a time where pv4Max allows
	// (AVX-512), then two (pv2), sharing each V load and widening: in L3
	// (Zen 4), f16 32:8 and 64:8 calls went 7–8 % faster with the quads,
	// and with scores4 too 12–14 %; from DRAM (ctx 32768 --cold) 8.3–9.9
	// and 15.2–15.4 ms to 7.6–7.9 and 13.0–13.5. The quads and pairs
	// spread the next tile's K over their loops (pfK); a
	// lone first head fetches it row by row (from V: the same rows tk·d
	// floats on, in the K buffer).
	eachHead("pv", pv4Max(t), func() {
		o, buf, db := pairRows("o")
		vp, cnt, ts := GP64(), GP64(), GP64()
		MOVQ(lVp, vp)
		MOVQ(lCnt, cnt)
		Load(Param("tileStride"), ts)
		t.pvWide(o[0], buf[0], ts, vp, cnt, db, kvStride(), lTmp, &pfK)
	}, func(lines int) {
		o, buf, db := pairRows("o")
		vp, cnt, ts := GP64(), GP64(), GP64()
		MOVQ(lVp, vp)
		MOVQ(lCnt, cnt)
		Load(Param("tileStride"), ts)
		t.pv4(o[0], buf[0], ts, vp, cnt, db, kvStride(), lTmp, &pfK, lines)
	}, noQ8(func() {
		o, buf, db := pairRows("o")
		vp, cnt := GP64(), GP64()
		MOVQ(lVp, vp)
		MOVQ(lCnt, cnt)
		t.pv2(o, buf, vp, cnt, db, kvStride(), lTmp, &pfK)
	}), func() {
		db := rowBytes()
		oh, bufh, vp, cnt := headRow("o", db), tileOf(), GP64(), GP64()
		MOVQ(lVp, vp)
		MOVQ(lCnt, cnt)
		vdb := kvStride()
		if spread {
			// Every head prefetches its share of the next K tile.
			t.pv(true, oh, bufh, vp, cnt, db, vdb, &pfK)
			return
		}
		firstHeadOr(func() {
			d1, d2 := GP64(), GP64()
			Load(Param("tk"), d1)
			IMULQ(vdb, d1)
			ADDQ(paramAddr("k"), d1)
			SUBQ(paramAddr("v"), d1)
			LEAQ(Mem{Base: d1, Index: vdb, Scale: 1}, d2)
			t.pv(true, oh, bufh, vp, cnt, db, vdb, nil, d1, d2)
		}, func() {
			t.pv(true, oh, bufh, vp, cnt, db, vdb, nil)
		})
	})
	{
		cnt, adv := GP64(), kvStride()
		MOVQ(lCnt, cnt)
		IMULQ(cnt, adv)
		ADDQ(adv, lKp)
		ADDQ(adv, lVp)
		SUBQ(cnt, lRem)
		JMP(LabelRef(tile))
	}

	// o *= 1/s per head (o = 0 when s == 0).
	Label(finish)
	forHeads("norm", func() {
		s := XMM()
		VMOVSS(stateAt(1), s)
		inv := t.reciprocalOrZero(s)
		db := rowBytes()
		t.scaleRow(headRow("o", db), db, inv)
	})
	VZEROUPPER()
	RET()
	if !pipe {
		return
	}
	// A lone head, pipelined (lonePipelined): the scores of tile t+1 and
	// the P·V of tile t in one loop, loneChunk keys of each in turn (the
	// fused loops below: interleaved, a vector or block of each), then
	// tile t+1's softmax; tile 0's scores and softmax come first, the last
	// tile's P·V alone last. The two tile buffers (tileBufs) take turns.
	Label(loneL)
	MOVQ(U32(0), lH)
	lCur, lNext, lCurCnt, lJ := AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8)
	{
		b := GP64()
		Load(Param("tiles"), b)
		MOVQ(b, lCur)
		ADDQ(paramAddr("tileStride"), b)
		MOVQ(b, lNext)
	}
	// advK moves K on past the lCnt keys just scored, which become the
	// current tile (lCurCnt).
	advK := func() {
		cnt, adv := GP64(), kvStride()
		MOVQ(lCnt, cnt)
		MOVQ(cnt, lCurCnt)
		IMULQ(cnt, adv)
		ADDQ(adv, lKp)
		SUBQ(cnt, lRem)
	}
	// nextTile moves V on past the current tile and swaps the tile
	// buffers: the next tile's scores become the current ones.
	nextTile := func() {
		cnt, adv := GP64(), kvStride()
		MOVQ(lCurCnt, cnt)
		IMULQ(cnt, adv)
		ADDQ(adv, lVp)
		a, b := GP64(), GP64()
		MOVQ(lCur, a)
		MOVQ(lNext, b)
		MOVQ(b, lCur)
		MOVQ(a, lNext)
		advK()
	}
	// AVX-512, a row of 4 or 8 vectors (D 64, 128): the same pipeline
	// fused into one loop, q and o in registers for the whole call (the
	// chunks' calls reloaded and stored o every four keys). Against the
	// chunks (Zen 5, f16, hd 128, sweeps alternated, 3 rounds, time over
	// the paired kv-read): in L2 (ctx 1024) 0.86, in L3 (ctx 4096) 0.87,
	// from DRAM 0.98; against the phases before the pipeline 0.95, 0.83
	// and 0.81–0.85. Then q scaled once (scale·q, not each score) and the
	// tile's max taken over its buffer after its scores (not folded in
	// at each step: a chain through memory and a reduction a step): L2
	// 0.91–0.96, L3 0.89–0.95, DRAM 1.00 (4 rounds, hd 64 and 128). The
	// rest of D takes the chunks. A profile in L3 (hd 128) puts a quarter
	// of the samples on the scores' reduction tree, waiting on their FMA
	// chains; then not kept: two chains a row alone (0.98 at hd 128,
	// 1.02–1.04 at hd 64), the steps as straight-line code (0.97–1.03);
	// tile_k 16 to 128 moved it less than 5 %. Since the interleave, two
	// chains a row with the tree a chunk late, and tile 128, pay
	// (interleaved's doc, lonePipeTileK). Nor one tree for two chunks
	// (eight keys' chains kept through the first chunk's P·V, reduce8
	// after the second's; the same order of rows; Zen 5 family 26 model
	// 2, 2026-12-02, sweeps alternated, 4 rounds, share of the paired
	// kv-read): in L3 (ctx 4096) 69–80 % against 70–86, from DRAM (ctx
	// 32768 --cold) 55–68 % against 72–84. Nor the tile's max kept in a
	// register as its scores are flushed (one VMAXPS of a chunk's four,
	// reduced at the tile's end, maxOf only where the tile is not whole
	// chunks; the same host, 2026-12-02, sweeps alternated, 5 rounds, hd
	// 128): in L3 89.3–93.5 % (median 90.0) against 89.3–92.4 (90.0),
	// from DRAM 92.4–97.9 (95.9) against 93.5–100.3 (96.4);
	// BenchmarkF16Floor's decode 88.9–90.9 against 89.2–90.1.
	//
	// The tile's softmax between the loops is work, not waiting, here as in
	// the groups: left out (timing only; BenchmarkF16Floor, hd 128, ctx
	// 4096 in L3, two sets of three runs in turn) decode-flash read at
	// 92.7–95.2 % of read against 87.2–90.3, its exps alone left out
	// 91.2–94.2; but the exps moved into the fused loop (a vector of
	// weights exp'd in place at every fourth chunk, their sum kept until
	// the tile's end, the softmax between the loops its max and rescale
	// alone) 87.4–90.7 against 87.7–88.7 (four runs), in L2 (ctx 1024)
	// 47.7–47.9 against 48.1–48.2. Not kept. Nor is the loop bound by its
	// widenings: with every other vector of V widened by two integer
	// instructions instead (VPMOVZXWD and a shift: wrong values, timing
	// only; three runs in turn) it read 48.3 % of read in L2 and 88.6–89.6
	// in L3, against 48.1–48.3 and 88.0–88.9.
	//
	// tileExp exps a lone head's lCnt scores at bufL in place, less the
	// running max, and adds their sum to s.
	tileExp := func(bufL Mem) {
		ms := t.Vec()
		VBROADCASTSS(stateAt(0), ms)
		b, cnt := GP64(), GP64()
		MOVQ(bufL, b)
		MOVQ(lCnt, cnt)
		sum := t.expInPlace([]GPVirtual{b}, cnt, []VecVirtual{ms})[0]
		VADDSS(stateAt(1), sum, sum)
		VMOVSS(sum, stateAt(1))
	}
	// maxOf sets mb to the max of the cnt scores at bufL.
	maxOf := func(bufL Mem) {
		b, n := GP64(), GP64()
		MOVQ(bufL, b)
		MOVQ(lCnt, n)
		mv := t.Vec()
		VBROADCASTSS(KC(CNegInf), mv)
		vl, one, done := NewLabel("fmax16"), NewLabel("fmax1"), NewLabel("fmaxdone")
		Label(vl)
		CMPQ(n, Imm(16))
		JL(LabelRef(one))
		VMAXPS(Mem{Base: b}, mv, mv)
		ADDQ(Imm(64), b)
		SUBQ(Imm(16), n)
		JMP(LabelRef(vl))
		Label(one)
		m := t.HReduce(mv, VMAXPS)
		Label(done)
		TESTQ(n, n)
		fin := NewLabel("fmaxfin")
		JZ(LabelRef(fin))
		VMAXSS(Mem{Base: b}, m, m)
		ADDQ(Imm(4), b)
		DECQ(n)
		JMP(LabelRef(done))
		Label(fin)
		VMOVSS(m, stateAt(2))
	}
	// softmaxReg is the softmax phase of a fused loop, its output ov in
	// registers: the running max from the tile's (mb), ov and s rescaled
	// where it grew, the tile's scores at bufL exp'd in place, their sum
	// added to s.
	softmaxReg := func(bufL Mem, ov []VecVirtual) {
		grow(0, func(cv VecVirtual) {
			for c := range ov {
				VMULPS(cv, ov[c], ov[c])
			}
		})
		tileExp(bufL)
	}
	// storeFused writes a fused loop's output, in registers, to o.
	storeFused := func(ov []VecVirtual) {
		op := GP64()
		Load(Param("o"), op)
		for c := range ov {
			VMOVUPS(ov[c], Mem{Base: op, Disp: c * t.VB()})
		}
	}
	if t.kv.q8 {
		t.q8Fused(lKp, lVp, lCnt, lCurCnt, lCur, lNext, scale, finish, minTk, advK, nextTile, kvStride, maxOf, softmaxReg, storeFused)
		return
	}
	if t.W == 16 {
		for _, nc := range []int{8, 4} {
			skip := NewLabel("fused_no")
			CMPQ(lRL, U32(nc*t.kb()))
			JNE(LabelRef(skip))
			qv, ov := make([]VecVirtual, nc), make([]VecVirtual, nc)
			{
				qp := GP64()
				Load(Param("q"), qp)
				sv := t.Vec()
				VBROADCASTSS(scale, sv)
				for c := range nc {
					qv[c] = t.Vec()
					VMULPS(Mem{Base: qp, Disp: c * t.VB()}, sv, qv[c])
					ov[c] = t.Vec()
					t.Zero(ov[c])
				}
			}
			// scoreRows: the scores of n (4 or 1) keys from row j of K at
			// lKp into bufL + 4j.
			scoreRows := func(bufL Mem, j GPVirtual, n int) {
				st, rp := kvStride(), GP64()
				MOVQ(j, rp)
				IMULQ(st, rp)
				ADDQ(lKp, rp)
				acc := t.zeroed(n)
				for i := range n {
					if i > 0 {
						ADDQ(st, rp)
					}
					for c := range nc {
						t.kvFMA(Mem{Base: rp, Disp: c * t.kb()}, qv[c], acc[i])
					}
				}
				var x VecVirtual
				if n == 4 {
					x = t.reduce4(acc)
				} else {
					x = t.HReduce(acc[0], VADDPS)
				}
				b := GP64()
				MOVQ(bufL, b)
				if n == 4 {
					VMOVUPS(x, Mem{Base: b, Index: j, Scale: 4})
				} else {
					VMOVSS(x, Mem{Base: b, Index: j, Scale: 4})
				}
			}
			// scoresFrom: the scores of keys j … cnt−1 (cnt in cntL), four
			// at a time then one; at most limit (0: all) keys.
			scoresSpan := func(bufL Mem, jL, cntL Mem, limit int) {
				j, e := GP64(), GP64()
				MOVQ(jL, j)
				MOVQ(cntL, e)
				if limit > 0 {
					lim := GP64()
					LEAQ(Mem{Base: j, Disp: limit}, lim)
					CMPQ(e, lim)
					CMOVQGT(lim, e)
				}
				four, one, done := NewLabel("fs4"), NewLabel("fs1"), NewLabel("fsdone")
				Label(four)
				t4 := GP64()
				LEAQ(Mem{Base: j, Disp: 4}, t4)
				CMPQ(t4, e)
				JGT(LabelRef(one))
				MOVQ(j, lJ)
				scoreRows(bufL, j, 4)
				MOVQ(lJ, j)
				ADDQ(Imm(4), j)
				JMP(LabelRef(four))
				Label(one)
				CMPQ(j, e)
				JGE(LabelRef(done))
				MOVQ(j, lJ)
				scoreRows(bufL, j, 1)
				MOVQ(lJ, j)
				INCQ(j)
				JMP(LabelRef(one))
				Label(done)
			}
			// pvSpan: o += Σ p_r·V_r for rows j … cnt−1 (at most limit).
			pvSpan := func(bufL Mem, jL, cntL Mem, limit int) {
				j, e := GP64(), GP64()
				MOVQ(jL, j)
				MOVQ(cntL, e)
				if limit > 0 {
					lim := GP64()
					LEAQ(Mem{Base: j, Disp: limit}, lim)
					CMPQ(e, lim)
					CMOVQGT(lim, e)
				}
				SUBQ(j, e) // rows
				done, row := NewLabel("fpvdone"), NewLabel("fpvrow")
				TESTQ(e, e)
				JLE(LabelRef(done))
				st, vp, wp := kvStride(), GP64(), GP64()
				MOVQ(j, vp)
				IMULQ(st, vp)
				ADDQ(lVp, vp)
				MOVQ(bufL, wp)
				LEAQ(Mem{Base: wp, Index: j, Scale: 4}, wp)
				Label(row)
				pw := t.Vec()
				VBROADCASTSS(Mem{Base: wp}, pw)
				for c := range nc {
					VFMADD231PS(t.kvLoad(Mem{Base: vp, Disp: c * t.kb()}), pw, ov[c])
				}
				ADDQ(st, vp)
				ADDQ(Imm(4), wp)
				DECQ(e)
				JNZ(LabelRef(row))
				Label(done)
			}
			// pend: the four scores of the last chunk, not yet reduced;
			// lPend: where flush stores them (lScratch when none is).
			var pend []VecVirtual
			lPend, lScratch := AllocLocal(8), AllocLocal(16)
			// idle points lPend at the scratch slot: nothing pending.
			idle := func() {
				b := GP64()
				LEAQ(lScratch, b)
				MOVQ(b, lPend)
			}
			// flush stores the pending chunk's four scores where lPend
			// points, then leaves nothing pending.
			flush := func() {
				b := GP64()
				MOVQ(lPend, b)
				VMOVUPS(t.reduce4(pend), Mem{Base: b})
				idle()
			}
			// interleaved is a whole chunk of both tiles at key jL:
			// the scores of loneChunk keys of the next tile (K at lKp,
			// into lNext) and the P·V of as many of this one (V at lVp,
			// weights at lCur), key by key, a vector of K, then one of
			// V: K and V read side by side, as kv-read reads them, and
			// each FMA chain of the scores with P·V's FMAs between its
			// links. Against the chunk's scores, then its P·V (Zen 5
			// family 26 model 2, 2026-12-02, sweeps alternated, 3–4
			// rounds, share of the paired kv-read): hd 128 from DRAM (ctx
			// 32768 --cold) 93–96 % against 74–86, in L3 (ctx 4096)
			// 87–89 against 83–86; 8:8 from DRAM 92–96 against 80–84;
			// hd 64 from DRAM (ctx 65536) 93–95 against 90–92, in L3
			// (ctx 4096, 8192) 63–70 and 76–82 against 55–64 and 63–81.
			// Chunks of 8 keys interleaved so (reduce8): hd 128 64–73
			// from DRAM and 72–76 in L3. A line of each at a time (two
			// f16 vectors of K, then two of V): in L3 81–89 % against
			// 81–87 (7 rounds, round by round −1.6 to +3.2 points), from
			// DRAM 96–97 both: not kept.
			//
			// Each key's score is two chains, the even and the odd
			// vectors (the first link a multiply: nothing to zero), added
			// at the end; and a chunk's four scores are reduced (sum4)
			// a chunk late, in flush, after the next chunk's first key,
			// so that their tree, which waits on the chunk's last chain,
			// runs under the next chunk's loads. Against one chain a key
			// reduced at once (the same host, 2026-12-02, tile 128, sweeps
			// alternated, 7 rounds, share of the paired kv-read): hd 128
			// in L3 (ctx 4096) 88.0–93.4 % (median 92.9) against
			// 86.2–91.2 (89.0), hd 64 (ctx 8192) 82.3–85.3 (84.8) against
			// 82.2–85.8 (83.0); from DRAM (ctx 32768 --cold, 5 rounds)
			// 93.7–97.1 against 94.4–97.3. The two chains alone: in L3
			// 88.1–92.4 (90.8), hd 64 80.1–85.0 (82.9).
			interleaved := func(jL Mem) {
				j, st, kp, vp, wp := stepRows(jL, kvStride, lKp, lVp, lCur)
				for i := range loneChunk {
					if i > 0 {
						ADDQ(st, kp)
						ADDQ(st, vp)
					}
					pw := t.Vec()
					VBROADCASTSS(Mem{Base: wp, Disp: 4 * i}, pw)
					var ab [2]VecVirtual // the key's two chains
					for c := range nc {
						if c < 2 {
							ab[c] = t.Vec()
							VMULPS(t.kvLoad(Mem{Base: kp, Disp: c * t.kb()}), qv[c], ab[c])
						} else {
							t.kvFMA(Mem{Base: kp, Disp: c * t.kb()}, qv[c], ab[c&1])
						}
						VFMADD231PS(t.kvLoad(Mem{Base: vp, Disp: c * t.kb()}), pw, ov[c])
					}
					if i == 0 {
						flush()
					}
					VADDPS(ab[0], ab[1], pend[i])
				}
				b := GP64()
				MOVQ(lNext, b)
				LEAQ(Mem{Base: b, Index: j, Scale: 4}, b)
				MOVQ(b, lPend)
			}
			lZero, lE := AllocLocal(8), AllocLocal(8)
			MOVQ(U32(0), lZero)
			{
				// nothing pending: a flush stores zeros to the scratch slot
				pend = t.zeroed(loneChunk)
				idle()
			}
			store := NewLabel("fused_store")
			minTk(LabelRef(store))
			scoresSpan(lCur, lZero, lCnt, 0)
			maxOf(lCur)
			softmaxReg(lCur, ov)
			advK()
			loop, last, chunk, chunkDone := NewLabel("fused_loop"), NewLabel("fused_last"), NewLabel("fused_chunk"), NewLabel("fused_chunk_done")
			Label(loop)
			minTk(LabelRef(last))
			MOVQ(U32(0), lE) // the chunk's first key
			Label(chunk)
			single := NewLabel("fused_single")
			{
				// A whole chunk of both tiles left (the next tile, lCnt
				// keys, is never longer than this one): interleaved.
				j, e := GP64(), GP64()
				MOVQ(lE, j)
				CMPQ(j, lCurCnt)
				JGE(LabelRef(chunkDone))
				LEAQ(Mem{Base: j, Disp: loneChunk}, e)
				CMPQ(e, lCnt)
				JG(LabelRef(single))
			}
			interleaved(lE)
			ADDQ(Imm(loneChunk), lE)
			JMP(LabelRef(chunk))
			Label(single)
			flush()
			scoresSpan(lNext, lE, lCnt, loneChunk)
			pvSpan(lCur, lE, lCurCnt, loneChunk)
			ADDQ(Imm(loneChunk), lE)
			JMP(LabelRef(chunk))
			Label(chunkDone)
			flush()
			maxOf(lNext)
			softmaxReg(lNext, ov)
			nextTile()
			JMP(LabelRef(loop))
			Label(last)
			pvSpan(lCur, lZero, lCurCnt, 0)
			Label(store)
			storeFused(ov)
			JMP(LabelRef(finish))
			Label(skip)
		}
	}
	loneSoftmax := func(bufL Mem) {
		rescale(0)
		tileExp(bufL)
	}
	scoresAt := func(bufL Mem, j, cnt GPVirtual) VecVirtual {
		db := rowBytes()
		qh, b, kp, kdb := headRow("q", db), GP64(), GP64(), kvStride()
		MOVQ(bufL, b)
		LEAQ(Mem{Base: b, Index: j, Scale: 4}, b)
		MOVQ(j, kp)
		IMULQ(kdb, kp)
		ADDQ(lKp, kp)
		return t.scoresBy(true, b, qh, kp, cnt, kdb, lRL, scale, nil)
	}
	pvAt := func(bufL Mem, j, cnt GPVirtual) {
		db := rowBytes()
		oh, b, vp, vdb := headRow("o", db), GP64(), GP64(), kvStride()
		MOVQ(bufL, b)
		LEAQ(Mem{Base: b, Index: j, Scale: 4}, b)
		MOVQ(j, vp)
		IMULQ(vdb, vp)
		ADDQ(lVp, vp)
		t.pv(true, oh, b, vp, cnt, db, vdb, nil)
	}
	// Tile 0: its scores and softmax alone.
	minTk(LabelRef(finish))
	{
		z, cnt := GP64(), GP64()
		XORQ(z, z)
		MOVQ(lCnt, cnt)
		VMOVSS(scoresAt(lCur, z, cnt), stateAt(2))
	}
	loneSoftmax(lCur)
	advK()
	loop, last, chunk, chunkDone := NewLabel("lone_loop"), NewLabel("lone_last"), NewLabel("lone_chunk"), NewLabel("lone_chunk_done")
	Label(loop)
	minTk(LabelRef(last))
	{
		ninf := XMM()
		VMOVSS(KC(CNegInf), ninf)
		VMOVSS(ninf, stateAt(2))
	}
	MOVQ(U32(0), lJ)
	Label(chunk)
	{
		j, c := GP64(), GP64()
		MOVQ(lJ, j)
		CMPQ(j, lCurCnt)
		JGE(LabelRef(chunkDone))
		// scores of the next tile's chunk, while it has keys here
		noScores := NewLabel("lone_noscores")
		CMPQ(j, lCnt)
		JGE(LabelRef(noScores))
		MOVQ(lCnt, c)
		SUBQ(j, c)
		k := GP64()
		MOVQ(U32(loneChunk), k)
		CMPQ(c, k)
		CMOVQGT(k, c)
		m := scoresAt(lNext, j, c)
		VMAXSS(stateAt(2), m, m)
		VMOVSS(m, stateAt(2))
		Label(noScores)
		j2, c2, k2 := GP64(), GP64(), GP64()
		MOVQ(lJ, j2)
		MOVQ(lCurCnt, c2)
		SUBQ(j2, c2)
		MOVQ(U32(loneChunk), k2)
		CMPQ(c2, k2)
		CMOVQGT(k2, c2)
		pvAt(lCur, j2, c2)
		ADDQ(U32(loneChunk), lJ)
		JMP(LabelRef(chunk))
	}
	Label(chunkDone)
	loneSoftmax(lNext)
	nextTile()
	JMP(LabelRef(loop))
	// The last tile's P·V alone.
	Label(last)
	{
		z, cnt := GP64(), GP64()
		XORQ(z, z)
		MOVQ(lCurCnt, cnt)
		pvAt(lCur, z, cnt)
	}
	JMP(LabelRef(finish))
}

// naiveDecode generates the materialized decode for one query head: scores
// for all n keys into ws, max, exp and sum, normalize, then P·V.
func (t tier) naiveDecode() {
	name := "naiveDecode" + t.kv.name + t.Name
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" is the textbook decode; see naiveGeneric.",
		"ws holds n scores rounded up to a multiple of 16 floats; state receives",
		"the max m and the sum s of exp(x − m), from which the caller has the LSE.")
	ws, q, k, n, db := GP64(), GP64(), GP64(), GP64(), GP64()
	Load(Param("ws"), ws)
	Load(Param("q"), q)
	Load(Param("k"), k)
	Load(Param("n"), n)
	Load(Param("d"), db)
	SHLQ(Imm(2), db)
	lRL := AllocLocal(8)
	{
		r := t.kvBytes(Param("d"))
		MOVQ(r, lRL)
	}
	kdb := GP64()
	Load(Param("stride"), kdb)
	m := t.scores(ws, q, k, n, kdb, lRL, paramAddr("scale"), nil)
	mb := t.Vec()
	VBROADCASTSS(m, mb)
	s := t.expInPlace([]GPVirtual{ws}, n, []VecVirtual{mb})[0]
	{
		st := GP64()
		Load(Param("state"), st)
		VMOVSS(m, Mem{Base: st})
		VMOVSS(s, Mem{Base: st, Disp: 4})
	}
	inv := t.reciprocalOrZero(s)
	// Normalize the probabilities (vector loop may touch the padding).
	{
		p, left := GP64(), GP64()
		MOVQ(ws, p)
		MOVQ(n, left)
		loop, done := NewLabel("normp"), NewLabel("normp_done")
		Label(loop)
		x := t.Vec()
		VMULPS(Mem{Base: p}, inv, x)
		VMOVUPS(x, Mem{Base: p})
		ADDQ(U32(t.VB()), p)
		SUBQ(U32(t.W), left)
		JG(LabelRef(loop))
		Label(done)
	}
	o, v := GP64(), GP64()
	Load(Param("o"), o)
	Load(Param("v"), v)
	t.zeroRow(o, db)
	t.pv(false, o, ws, v, n, db, kdb, nil)
	VZEROUPPER()
	RET()
}

// paramAddr is the frame address of a scalar argument, for use as a memory
// operand (e.g. VBROADCASTSS straight from the argument).
func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// loadScores loads one vector of a tile buffer. Scores were stored eight at
// a time; a 16-wide load spanning two such stores cannot be forwarded from
// the store buffer and stalls, so AVX-512 assembles it from two halves.
func (t tier) loadScores(p GPVirtual) VecVirtual {
	x := t.Vec()
	if t.W == 8 {
		VMOVUPS(Mem{Base: p}, x)
		return x
	}
	// The low half by a broadcast: a whole zmm written, where a ymm load
	// leaves x's upper half live to avo from the function's entry on (a
	// register taken from every loop before it). Calls within noise
	// against the ymm load (0.99–1.01, decode-flash f32 0.93–0.97; L3,
	// Zen 5, 5 rounds, the constant table aligned in both).
	VBROADCASTF64X4(Mem{Base: p}, x)
	VINSERTF64X4(Imm(1), Mem{Base: p, Disp: 32}, x, x)
	return x
}

// kvBytes returns the bytes of one K or V row of d values.
func (t tier) kvBytes(d Component) GPVirtual {
	r := GP64()
	Load(d, r)
	if t.kv.q8 {
		SHRQ(Imm(5), r)
		IMUL3Q(Imm(q8BlockBytes), r, r)
		return r
	}
	SHLQ(Imm(uint64(bits.Len(uint(t.kv.size))-1)), r)
	return r
}

// vColumn sets rp to the V bytes of output column col (bytes of o): v +
// col/ratio. v is a register or a memory operand.
//
// q8_0: v + (col/128)·34, the block of the column (col is block-aligned:
// D is a multiple of 32 values, and pv's column blocks are whole blocks).
func (t tier) vColumn(rp GPVirtual, v Op, col GPVirtual) {
	if t.kv.q8 {
		MOVQ(col, rp)
		SHRQ(Imm(7), rp)
		IMUL3Q(Imm(q8BlockBytes), rp, rp)
		ADDQ(v, rp)
		return
	}
	if r, ok := v.(GPVirtual); ok && t.ratio() == 1 {
		LEAQ(Mem{Base: r, Index: col, Scale: 1}, rp)
		return
	}
	if t.ratio() == 1 {
		MOVQ(v, rp)
		ADDQ(col, rp)
		return
	}
	MOVQ(col, rp)
	SHRQ(Imm(uint64(bits.Len(uint(t.ratio()))-1)), rp)
	ADDQ(v, rp)
}

// The q8_0 block: an f16 scale, then 32 int8 values.
const (
	q8Block      = 32
	q8BlockBytes = 34
)

// q8q is one block of the quantized query, ready for q8Dot: its values'
// magnitudes (u8), what carries their signs (AVX2: the bytes at sign;
// AVX-512: a mask of the negative ones), and its scale in 8 lanes.
type q8q struct {
	abs  VecVirtual
	sign Mem
	neg  Register   // AVX-512
	zero VecVirtual // AVX-512
	dq   VecVirtual
}

// q8Query prepares the query block at m (an f16 scale, 32 int8) for the
// q8Dot of every row of a batch.
func (t tier) q8Query(m Mem) q8q {
	b := q8q{abs: YMM(), sign: m.Offset(2), dq: YMM()}
	VPABSB(m.Offset(2), b.abs)
	if t.W == 16 {
		// The registers may be ymm16–31, which only EVEX encodes, and
		// VPSIGNB has no EVEX form: AVX-512 negates K's bytes under a
		// mask of the query's negative ones instead.
		x := YMM()
		VMOVUPS(m.Offset(2), x)
		b.neg = K()
		VPMOVB2M(x, b.neg)
		b.zero = YMM()
		t.Zero(b.zero) // VPXORD's zeroing would leave b.zero live-in to avo
	}
	h := XMM()
	VPBROADCASTW(m, h)
	VCVTPH2PS(h, b.dq)
	return b
}

// q8Dot adds to acc (8 lanes; an AVX-512 accumulator's upper half stays
// 0) the int8 dot of the q8_0 block at m with the query block qb, as GGML's
// vec_dot_q8_0_q8_0: Σ q·k exact in int32 (|q|·(k·sign q) by VPMADDUBSW,
// pairs of int16 by VPMADDWD: |q|, |k| ≤ 127 never saturate), converted,
// times d_q·d_k.
func (t tier) q8Dot(qb q8q, m Mem, acc VecVirtual) {
	k := YMM()
	VMOVUPS(m.Offset(2), k)
	if t.W == 16 {
		VPSUBB(k, qb.zero, qb.neg, k) // k = −k where q < 0
	} else {
		VPSIGNB(qb.sign, k, k)
	}
	VPMADDUBSW(k, qb.abs, k)
	VPMADDWD(KC(CI16One), k, k)
	VCVTDQ2PS(k, k)
	h, sc := XMM(), YMM()
	VPBROADCASTW(m, h)
	VCVTPH2PS(h, sc)
	VMULPS(qb.dq, sc, sc)
	VFMADD231PS(k, sc, acc.AsY())
}

// q8Block widens the q8_0 block at m: for each vector c of its 32
// values, x = float32(q) and sc = the block's scale times mul (lane 0),
// handed to f.
//
// The scale is widened and multiplied in an xmm, then broadcast: a zmm
// VCVTPH2PS costs Zen 4 more than a zmm FMA (0.37 ns, measured), and a key
// paid one per block for K and again for V.
//
// What a lone q8_0 head's arithmetic could still give in cache, from
// builds that compute wrong values on purpose (timing only; Zen 5 family
// 26 model 2, 2026-12-02, AVX-512, hd 128, ctx 4096 in L3, the fastest of
// 20 rounds of 50 calls, five runs in turn, median time over the
// kernel's): P·V left out (each block one widening and one add) 0.76,
// the call then 46–55 % of a read of its bytes timed beside it, where
// the kernel reads 34–39 %; P·V's per-block scale work gone (the weight
// p·d one VBROADCASTSS, as if computed a tile at a time first, that pass
// not counted) 0.91; P·V in int16 (VPMOVSXBW, then VPMADDWD against the
// weight quantized to (w, 0) and (0, w), even and odd lanes, VPADDD; its
// quantization pass not counted) 0.96; the scores' scales one
// VBROADCASTSS and one masked (q8DotPair's five instructions) 1.04; both
// scale cuts 0.86. So the scores alone, not this widening, hold a lone
// q8_0 head below the 75 % of read its target asks in cache (the
// roofline's q8-decode loop says the same: 39–58 % of the L3 read).
func (t tier) q8Block(m Mem, mul VecVirtual, f func(c int, x, sc VecVirtual)) {
	sx, sc := XMM(), t.Vec()
	VMOVD(m, sx) // the scale and the block's first two values: lane 0 is the scale
	VCVTPH2PS(sx, sx)
	VMULSS(mul.AsX(), sx, sx)
	VBROADCASTSS(sx, sc)
	for c := range q8Block / t.W {
		x := t.Vec()
		VPMOVSXBD(m.Offset(2+c*t.W), x)
		VCVTDQ2PS(x, x)
		f(c, x, sc)
	}
}

// q8QueryPair is q8Query for q8DotPair: the query block's magnitudes in
// both 256-bit halves of a zmm, a 64-bit mask of its negative bytes (both
// halves) and its scale in 16 lanes.
func (t tier) q8QueryPair(m Mem) q8q {
	b := q8q{abs: ZMM(), dq: ZMM(), zero: ZMM()}
	x := ZMM()
	VBROADCASTI64X4(m.Offset(2), x)
	VPABSB(x, b.abs)
	b.neg = K()
	VPMOVB2M(x, b.neg)
	t.Zero(b.zero)
	h := YMM()
	VPBROADCASTW(m, h)
	VCVTPH2PS(h, b.dq)
	return b
}

// q8DotPair is q8Dot for two rows at once: the blocks at m0 and m1 in the
// low and high halves of one zmm, each half's 8 lanes added to the same
// half of acc (the row pair's accumulator), scaled by its own row's d_k.
// Per two blocks it takes one instruction of each step where q8Dot takes
// two, and two VPBROADCASTW, a VINSERTI32X4 and one VCVTPH2PS (zmm) for
// the scales where q8Dot takes two broadcasts and two VCVTPH2PS: 12
// instructions where two q8Dot take 18. AVX-512 q8_0 decode calls took
// 0.86–0.93 of the time in L3 (hd 64, 128 and 256, one head and 32:8,
// decode-flash and -gqa, ctx 4096) and 0.90–0.95 from DRAM (ctx 32768
// --cold); the scores phase of a lone hd-128 head went from ~2.9 to ~2.2
// ns a key (Zen 5, interleaved A/B, 4–5 rounds).
func (t tier) q8DotPair(qb q8q, m0, m1 Mem, acc VecVirtual) {
	k := ZMM()
	VBROADCASTI64X4(m0.Offset(2), k) // a whole zmm written (a ymm load would leave k live-in to avo)
	VINSERTI64X4(Imm(1), m1.Offset(2), k, k)
	VPSUBB(k, qb.zero, qb.neg, k) // k = −k where q < 0
	VPMADDUBSW(k, qb.abs, k)
	VPMADDWD(KC(CI16One), k, k)
	VCVTDQ2PS(k, k)
	h, h1, sc := YMM(), XMM(), ZMM()
	VPBROADCASTW(m0, h)
	VPBROADCASTW(m1, h1)
	VINSERTI32X4(Imm(1), h1, h, h)
	VCVTPH2PS(h, sc)
	VMULPS(qb.dq, sc, sc)
	VFMADD231PS(k, sc, acc)
}

// lonePipelined reports whether t's flash kernel has a pipelined path for
// a lone head (ng = 1: decode-flash, and MHA's groups of one): the scores of the next
// tile and the P·V of this one in one loop, loneChunk keys of each in
// turn (AVX-512's fused loops: a vector of K, then one of V; q8_0 a block
// of each), with no software prefetch, so that K and V stream from memory
// side by side, as kv-read reads them, and the scores' chains overlap
// P·V's. Head-major AVX-512 f16 and q8_0 (hd 128: q8Fused) and AVX2 f32
// only: where it was measured
// faster (Zen 5, hd 128, one thread, sweeps alternated, 3 rounds a set,
// time over the paired kv-read, B/A against the phases one after the
// other with their prefetch):
//
//   - AVX-512 f16, fused (hd 64 and 128: q and o in registers, see the
//     lone path): at hd 128 from DRAM (ctx 32768 --cold, 1:1 and 8:8)
//     0.81–0.83 (then 95–98 % of the read), in L3 (ctx 4096) 0.83, in L2
//     (ctx 1024) 0.95; at hd 64 from DRAM 0.96–1.01 (the phases already
//     read 93–98 % there). Other D, in chunks of calls (with scoresBy4):
//     from DRAM 0.82–0.83 at hd 128, L3 0.92, L2 1.11.
//   - AVX2 f32: from DRAM 0.85–0.90, in L3 0.81–0.84, in L2 0.89–0.93.
//
// The fused loop's whole chunks then went interleaved (a vector of K, then
// one of V, key by key: the lone path's interleaved), which took a Zen 5
// guest's pipeline from 74–86 % of the paired kv-read to 93–96 from DRAM
// and 83–86 to 87–89 in L3 (hd 128; the phases there 86–93 and 58–63):
// the figures above and below are the chunks', K's four rows, then V's.
//
// Not for the rest: AVX-512 f32 (from DRAM 1.28–1.34, and fused in steps
// of 4 or 2 keys 1.17–1.25, though 0.86–0.87 in L3: its phases' own
// whole-row prefetch already read at 92–94 % of kv-read there), AVX2 f16
// (from DRAM 0.82, but in L3 and L2 1.37–1.57: its four-key scores one
// key at a time or rows interleaved), AVX2's q8_0 (not built), position-major
// caches (without prefetch their strided rows streamed 1.1–2.7 times
// slower from DRAM). A chunk of 8 keys streamed 1.6–2.1 times slower
// from DRAM than 4 (2 KB of K, then 2 KB of V, where 4 keys take 1 KB);
// 2 keys 1.07–1.10 of the read against 1.04–1.06. With software prefetch
// a tile ahead (PREFETCHT0 or T1, one or two tiles, in chunks of 8, 16
// or 32) from DRAM 0.91–1.03 for f16 but in L2 and L3 1.00–1.14, and
// AVX-512 f32 1.14–1.26: none kept. Nor the groups so (AVX-512, 32:8
// and 64:8, f32 and f16, every head's scores of the next tile and P·V of
// this one a chunk at a time, no prefetch; from DRAM): chunks of 4 keys
// 1.11–1.55 of the time, of 16 1.39–1.72. Their P·V reloads and stores
// four heads' outputs a chunk, and their phases' near prefetch already
// keeps memory busier than a lone head's did. Nor in pairs interleaved
// as the lone path's chunks (Zen 5 family 26 model 2, 2026-12-02; two
// heads at a time, their o in registers for the tile, q from memory,
// four keys a step: a vector of the next tile's K for both heads' scores,
// then one of this tile's V for both heads' P·V; every head's max and
// softmax after the pairs; one round, share of the paired kv-read, against
// the phases): from DRAM (ctx 32768 --cold) f32 32:8 56 % against 75 at
// tile_k 16, 67–70 % at tile_k 8 to 64 against 56–69, f16 32:8 62 against
// 71, 64:8 35–42 against 46–61; in L3 (ctx 1024) 17–52 against 21–66.
// Nor a group of four in one pass (the same host, 2026-12-02, AVX-512,
// hd 128, 32:8): the four heads' dots of a key of the next tile (q from
// memory; their tree a key late, one xmm a key, [key][head] scores in two
// sets of tile buffers), then the same key of this tile's V added to each
// head's o in its row in memory, a vector of K then one of V, key by key,
// so that K and V stream side by side; per tile the four maxima, rescale
// and exps. Against the phases, 2 rounds, share of the paired kv-read:
// from DRAM (ctx 32768 --cold) f32 72–74 % against 73–76, f16 66–67
// against 71–72; at tile_k 64 and 128 f32 65–70 (the phases 55–57), f16
// 65–66 (52–55); with K and V prefetched 16 or 48 keys ahead, a line of
// each in turn (PREFETCHT0), f32 75–80 against 76–77 without, f16 52–57
// against 56–73 (the clock 2.9 GHz); in L3 (ctx 1024) 55 % of the bound
// against 68 (f32) and 48 against 65 (f16). With about 200 instructions
// a key (a quarter of them o's loads and stores) the window holds two
// keys of loads, where a lone head's holds ten: the stream's order alone
// does not make up for it.
//
// AVX2 f16 again, on a slower Zen 5 host (AMD EPYC family 26 model 2,
// 2026-12-01, 2.9–3.6 GHz; one process, the bit flipped between timed
// batches, 7–9 rounds, the pipeline's time over the phases', hd 128 unless
// said; DRAM is ctx 32768 with 24 copies rotated, L3 ctx 4096, L2 ctx
// 1024), none kept:
//
//   - the chunks with scoresBy4's per-row loops for AVX2 (one chain a row):
//     DRAM 0.80–0.92, L3 1.37, L2 1.52; two chains a row: L3 1.20;
//   - the fused loop with q and o in memory (q scaled after each
//     reduction, o summed half a row at a time over the chunk's rows, two
//     chains a row, rows whole): DRAM 0.87–0.91, L3 1.05–1.10, L2 1.18–
//     1.27; hd 64 DRAM 0.84–0.92 but L3 1.24–1.35; hd 256 (the chunks)
//     DRAM 1.20–1.28. Its chunk as 8 keys: L3 1.02–1.05, L2 1.11, but
//     DRAM 0.97–1.05 (hd 64 1.05–1.07); as 1 KB of K at hd 64 (8 keys):
//     DRAM 1.03;
//   - that loop's scores a vector of q at a time into the four rows (q
//     loaded once a vector, not once an FMA): L3 0.97–1.00, L2 1.04–1.06,
//     but DRAM 1.07–1.12; with the chunk's K prefetched 1, 2 or 4 KB ahead
//     (PREFETCHT0) DRAM 1.08–1.12 still.
//
// AVX-512 f16 on a Zen 5 host of the same model (2026-12-02; sweeps
// alternated, hd 128, share of the paired kv-read): the pipeline read
// 75–85 % from DRAM (ctx 32768 --cold, 7 rounds in two sets) where the
// phases read 85–89 %, and 71–88 % in L3 (ctx 4096) where the phases
// read 55–67 % (lonePipelinedOn). A software prefetch in the fused loop,
// each K and V row's four lines a fixed distance on after the row (every
// row), lost at both levels (3 rounds, against 81–85 and 83–88 for none):
// PREFETCHT0 8 KB on, from DRAM 72–82 %, in L3 60–86 %; 16 KB on, 70–78
// and 53–64 %; PREFETCHT1 16 or 32 KB on, 68–71 and 57–68 %. Not kept.
// Nor at the tile's end alone, where the loop stops reading for the
// softmax (the same host, 2026-12-02; PREFETCHT0 of the first 16 or 32
// lines of the next K and V before it, or T1 of 32; BenchmarkF16Floor in
// L3, three runs in turn): decode-flash at 89.6–90.1 % of read with 16
// lines, 84.8–89.0 with 32 (T1 85.3–91.2), 88.1–91.9 with none.
//
// The trade is the one above: rows whole keep the prefetchers' streams
// from DRAM, rows interleaved (q loaded once for four) the arithmetic in
// cache, and no order had both. A choice for Zen 5 alone (whose best
// tier is AVX-512's) would not reach the CPUs that run this tier for
// want of AVX-512: Zen 3 never measured it, and Zen 4's AVX2 f16 phases
// already read at 97–99 % of kv-read from DRAM.
//
// Whether a call takes the path is the caller's (the mode argument's
// modeLonePipe bit): the
// Go side asks for it on the CPUs where it was measured faster
// (lonePipelinedOn in decode_amd64.go). On an Intel Xeon (family 6 model
// 207, 2.4 GHz, one thread, hd 128, sweeps alternated, 3–4 rounds) the
// phases took, against the pipeline, from DRAM 0.68–0.82 of the time for
// AVX-512 f16 (90 % of the paired kv-read against 70–76 %) and 0.82–0.91
// for AVX2 f32 (100 % against 85–86 %; ctx 4096 --cold 0.85–0.89); warm,
// AVX2 f32 at ctx 2048 0.95, but AVX-512 f16 in L2 (ctx 1024 and 4096,
// hd 128) medians 1.12–1.18. Also measured there, not kept:
// the fused loop prefetching the four rows of K and of V one tile ahead
// after each step, PREFETCHT1: from DRAM 1.02 of the phases' time (85–89
// % of the read), in cache 1.04–1.26 (the pipeline's gain there gone);
// PREFETCHT0: from DRAM 1.10.
func (t tier) lonePipelined() bool {
	if t.pos {
		return false
	}
	if t.kv.q8 {
		return t.W == 16 // hd 128 alone (q8Fused; the dispatch checks D)
	}
	return (t.W == 16 && t.kv.size == 2) || (t.W == 8 && t.kv.size == 4)
}

// loneChunk is the keys of each tile a step of the lone pipeline takes.
const loneChunk = 4

// scoresBy4 reports whether t's scoresBy(true, …) takes four keys at a
// time between the batches of eight and the single keys (AVX-512 f16: the
// lone pipeline's chunks are four keys; one at a time, its scores made
// lonePipelined's chunks of 4 slower than 8 in cache, 1.07–1.34 against
// 0.91–0.98 of the phases' time). Each row whole, in address order: a
// vector of each of the four rows at a time lost the pipeline's gain
// from DRAM (0.97–1.06).
func (t tier) scoresBy4() bool { return t.W == 16 && t.kv.size == 2 }

// stepRows addresses a step of a lone pipeline's fused loop at key jL: it
// returns j, the rows' stride (from stride), the next tile's K row j (from
// lKp), this tile's V row j (from lVp) and this tile's weight j (from
// lCur).
func stepRows(jL Mem, stride func() GPVirtual, lKp, lVp, lCur Mem) (j, st, kp, vp, wp GPVirtual) {
	j, st = GP64(), stride()
	MOVQ(jL, j)
	kp, vp, wp = GP64(), GP64(), GP64()
	MOVQ(j, kp)
	IMULQ(st, kp)
	MOVQ(kp, vp)
	ADDQ(lKp, kp)
	ADDQ(lVp, vp)
	MOVQ(lCur, wp)
	LEAQ(Mem{Base: wp, Index: j, Scale: 4}, wp)
	return j, st, kp, vp, wp
}

// q8FusedBlocks is the q8_0 blocks of a row q8Fused takes: hd 128.
const q8FusedBlocks = 4

// q8Fused is the lone path (lonePipelined) of AVX-512's head-major q8_0
// kernel, hd 128 alone (the caller's dispatch checks D): the f16 fused
// loop's pipeline, the scores of the next tile and the P·V of this one in
// one loop, its o and the quantized query's four blocks (q8QueryPair) in
// registers for the call. A step takes eight keys of both tiles, a row
// pair at a time, block by block: the pair's block of K (q8DotPair), then
// the same block of its two V rows (q8Block), so that K and V stream side
// by side, as kv-read reads them; then the four pairs' tree (reduceLanes)
// and the eight scores scaled. Keys past a whole step go one at a time;
// tile 0's scores and the last tile's P·V go alone.
//
// Against the phases (Zen 5, family 26 model 2, 2026-12-02; sweeps
// alternated, 3 rounds, share of the paired kv-read, hd 128, one thread):
// from DRAM (ctx 32768 --cold) 86–90 % against 74–78, in L3 (ctx 4096)
// 34–39 against 36–38, where the q8_0 arithmetic bounds both (q8Block).
// BenchmarkPaths (40 rounds, the phases' time over the pipeline's): from
// DRAM 1.13, in L3 0.90. A decode's cache mostly comes from DRAM.
//
// From DRAM its rate depends on where the binary's code sits in physical
// memory (the same host, 2026-12-02, sweeps alternated, share of the
// paired kv-read): one ckbench file ran it at 70–78 % in five sets of 2–3
// rounds, where a byte-identical copy of that file ran it at 87–90 % in
// the same rounds, and so did the first file once the page cache was
// dropped (89 %); eight fresh copies of one build gave medians 75–90 (f16's
// lone loop 91–96 across the same copies). The eight-key step's code is
// about 3.4 KB, the f16 loop's under 1 KB. No PMU here to say whether it is
// the code's lines or its constants' (expconst, in the text) that suffer;
// a window's q8_0 line from DRAM can land on either side of its 75 %.
func (t tier) q8Fused(lKp, lVp, lCnt, lCurCnt, lCur, lNext, scale Mem, finish string, minTk func(LabelRef) GPVirtual, advK, nextTile func(), kvStride func() GPVirtual, maxOf func(Mem), softmaxReg func(Mem, []VecVirtual), storeFused func([]VecVirtual)) {
	const nb = q8FusedBlocks
	lE := AllocLocal(8)
	var qb [nb]q8q
	{
		qp := GP64()
		Load(Param("q"), qp)
		for b := range qb {
			qb[b] = t.q8QueryPair(Mem{Base: qp, Disp: b * q8BlockBytes})
			if b > 0 {
				qb[b].zero = qb[0].zero
			}
		}
	}
	ov := t.zeroed(2 * nb)
	sc := ZMM()
	VBROADCASTSS(scale, sc)
	// blockPV: o += w·V block b of the row at vr (w in lane 0 of an xmm).
	blockPV := func(vr GPVirtual, w VecVirtual, b int) {
		t.q8Block(Mem{Base: vr, Disp: b * q8BlockBytes}, w, func(c int, x, s VecVirtual) {
			VFMADD231PS(x, s, ov[2*b+c])
		})
	}
	// step8: eight keys from key jL, their scores (of the next tile's K
	// at lKp) into bufL and, with pv, their P·V (this tile's V at lVp).
	step8 := func(jL, bufL Mem, pv bool) {
		j, st, kp, vp, wp := stepRows(jL, kvStride, lKp, lVp, lCur)
		acc := t.zeroed(4)
		for p := range acc {
			if p > 0 {
				LEAQ(Mem{Base: kp, Index: st, Scale: 2}, kp)
				LEAQ(Mem{Base: vp, Index: st, Scale: 2}, vp)
			}
			k1 := GP64()
			LEAQ(Mem{Base: kp, Index: st, Scale: 1}, k1)
			var v1 GPVirtual
			var w0, w1 VecVirtual
			if pv {
				v1 = GP64()
				LEAQ(Mem{Base: vp, Index: st, Scale: 1}, v1)
				w0, w1 = XMM(), XMM()
				VMOVSS(Mem{Base: wp, Disp: 8 * p}, w0)
				VMOVSS(Mem{Base: wp, Disp: 8*p + 4}, w1)
			}
			for b := range nb {
				off := b * q8BlockBytes
				t.q8DotPair(qb[b], Mem{Base: kp, Disp: off}, Mem{Base: k1, Disp: off}, acc[p])
				if pv {
					blockPV(vp, w0, b)
					blockPV(v1, w1, b)
				}
			}
		}
		y := reduceLanes([4]VecVirtual(acc))
		VMULPS(sc.AsY(), y, y)
		out := GP64()
		MOVQ(bufL, out)
		VMOVUPS(y, Mem{Base: out, Index: j, Scale: 4})
	}
	// rowOf is key jL's index and its row's offset from the cache start.
	rowOf := func(jL Mem) (j, r GPVirtual) {
		j, st := GP64(), kvStride()
		MOVQ(jL, j)
		r = GP64()
		MOVQ(j, r)
		IMULQ(st, r)
		return j, r
	}
	// scoreOne: key jL's score (of the next tile's K at lKp) into bufL.
	scoreOne := func(jL, bufL Mem) {
		j, kr := rowOf(jL)
		ADDQ(lKp, kr)
		a := ZMM()
		t.Zero(a)
		for b := range nb {
			m := Mem{Base: kr, Disp: b * q8BlockBytes}
			t.q8DotPair(qb[b], m, m, a) // the row in both halves: the low one counts
		}
		x := XMM()
		VEXTRACTF32X4(Imm(1), a.AsY(), x)
		VADDPS(a.AsX(), x, x)
		s1 := HReduce4(x, VADDPS)
		VMULSS(sc.AsX(), s1, s1)
		bp := GP64()
		MOVQ(bufL, bp)
		VMOVSS(s1, Mem{Base: bp, Index: j, Scale: 4})
	}
	// pvOne: key jL's P·V (this tile's V at lVp, its weight at lCur).
	pvOne := func(jL Mem) {
		j, vr := rowOf(jL)
		ADDQ(lVp, vr)
		wp := GP64()
		MOVQ(lCur, wp)
		w := XMM()
		VMOVSS(Mem{Base: wp, Index: j, Scale: 4}, w)
		for b := range nb {
			blockPV(vr, w, b)
		}
	}
	// keys emits "for ; lE+n ≤ bound; lE += n { body() }".
	keys := func(name string, n int, bound Mem, body func()) {
		top, done := NewLabel(name), NewLabel(name+"_done")
		Label(top)
		j, e := GP64(), GP64()
		MOVQ(lE, j)
		LEAQ(Mem{Base: j, Disp: n}, e)
		CMPQ(e, bound)
		JG(LabelRef(done))
		body()
		ADDQ(Imm(uint64(n)), lE)
		JMP(LabelRef(top))
		Label(done)
	}
	store := NewLabel("q8fused_store")
	minTk(LabelRef(store))
	// Tile 0's scores alone.
	MOVQ(U32(0), lE)
	keys("q8f0_8", 8, lCnt, func() { step8(lE, lCur, false) })
	keys("q8f0_1", 1, lCnt, func() { scoreOne(lE, lCur) })
	maxOf(lCur)
	softmaxReg(lCur, ov)
	advK()
	// Then tile after tile: eight keys of both at a time while the next
	// tile has them (it is never longer than this one), then this tile's
	// rest a key at a time, each scored while the next tile has it.
	loop, last := NewLabel("q8f_loop"), NewLabel("q8f_last")
	Label(loop)
	minTk(LabelRef(last))
	MOVQ(U32(0), lE)
	keys("q8f_8", 8, lCnt, func() { step8(lE, lNext, true) })
	keys("q8f_1", 1, lCurCnt, func() {
		j := GP64()
		MOVQ(lE, j)
		noScore := NewLabel("q8f_noscore")
		CMPQ(j, lCnt)
		JGE(LabelRef(noScore))
		scoreOne(lE, lNext)
		Label(noScore)
		pvOne(lE)
	})
	maxOf(lNext)
	softmaxReg(lNext, ov)
	nextTile()
	JMP(LabelRef(loop))
	// The last tile's P·V alone.
	Label(last)
	MOVQ(U32(0), lE)
	keys("q8fl_1", 1, lCurCnt, func() { pvOne(lE) })
	Label(store)
	storeFused(ov)
	JMP(LabelRef(finish))
}
