// Package buf allocates the aligned buffers kernels are handed. Kernels
// assume 64-byte alignment (one cache line, one AVX-512 vector) so that a
// measured load never straddles two lines by accident of the allocator.
//
// Every buffer starts on a 4 KB page, not only on a line: where a buffer
// sits within its page decides whether a kernel's loads from one buffer
// falsely wait on its stores to another (the core matches them by their
// low 12 address bits), and that must not be left to whatever the
// allocator's size classes did before. Big buffers always came
// page-aligned; a small one (a token's rows, a query, a workspace) sat
// wherever earlier small allocations had left room, down to the length
// of the binary's path in argv. A token's f16 append (AVX-512, 8 KV heads
// × hd 128, head-major) ran at 172 GB/s from a binary at /tmp/ck and at
// 283–289 GB/s from the same binary at seven other paths (Zen 5); on
// pages it runs at 288–306 from every path. The decode kernels were
// unchanged by it (0.96–1.02, Zen 5, both tiers, L2 and L3 shapes).
//
// Every page of a buffer is written once when it is made: Go maps fresh
// memory at its first write, and a kernel that is the first to store to a
// page times the OS's page-fault path. (A cold kvcache point, whose cache
// rows are each stored to once every rotation, took 512–1024 faults a
// call so: 6–12 ms against 0.14–0.22.)
package buf

import (
	"math/rand/v2"
	"unsafe"
)

// Align is the alignment kernels assume of every buffer, in bytes.
const Align = 64

// Page is the alignment every buffer has, in bytes (see the package doc).
const Page = 4096

// Floats returns n zeroed float32 whose first element starts a page,
// every page of them mapped: Bytes, viewed as floats.
func Floats(n int) []float32 { return FloatsOf(Bytes(4 * n)) }

// Bytes returns n zeroed bytes whose first starts a page, every page of
// them mapped.
func Bytes(n int) []byte {
	raw := make([]byte, n+Page)
	clear(raw) // maps its pages (see the package doc)
	off := 0
	if r := uintptr(unsafe.Pointer(&raw[0])) % Page; r != 0 {
		off = int(Page - r)
	}
	return raw[off : off+n : off+n]
}

// BytesOf views floats as their bytes (nil for none): the asm takes
// caches of any element type as bytes.
func BytesOf(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// FloatsOf views bytes as floats (len(b)/4 of them; nil for none).
func FloatsOf(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// FillUniform fills x with deterministic values in [lo, hi) from a PCG
// stream seeded by seed, so two runs (and two machines) see the same data.
func FillUniform(x []float32, seed uint64, lo, hi float32) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	for i := range x {
		x[i] = lo + (hi-lo)*r.Float32()
	}
}
