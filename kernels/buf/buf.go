// Package buf allocates the aligned buffers kernels are handed. Kernels
// assume 64-byte alignment (one cache line, one AVX-512 vector) so that a
// measured load never straddles two lines by accident of the allocator.
//
// Every page of a buffer is written once when it is made: Go maps fresh
// memory at its first write, and a kernel that is the first to store to a
// page times the OS's page-fault path. (A cold kvcache point, whose cache
// rows are each stored to once every rotation, took 512–1024 faults a
// call so: 6–12 ms against 0.14–0.22.)
//
// That first write goes a MiB at a time, yielding between pieces: a
// collection scans this goroutine's stack only where it can stop it, and
// one clear of a whole buffer (a single assembly call) cannot be stopped,
// so the collector signalled the thread every few µs until it returned,
// and every page fault of the clear handled a signal. A cold attention
// sweep of two points (256 MiB caches, Zen 5) spent 1.5–2 s in each of
// three collections so and took 6.5 s; it takes 2.9 s a MiB at a time.
package buf

import (
	"math/rand/v2"
	"runtime"
	"unsafe"
)

// Align is the alignment of every buffer, in bytes.
const Align = 64

// Floats returns n zeroed float32 whose first element is 64-byte aligned,
// every page of them mapped.
func Floats(n int) []float32 {
	b := Bytes(4 * n) // Bytes' alignment and mapping, viewed as floats
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// Bytes returns n zeroed bytes whose first is 64-byte aligned, every page
// of them mapped.
func Bytes(n int) []byte {
	raw := make([]byte, n+Align)
	touch(raw)
	off := 0
	if r := uintptr(unsafe.Pointer(&raw[0])) % Align; r != 0 {
		off = int(Align - r)
	}
	return raw[off : off+n : off+n]
}

// touch maps b's pages by clearing it a MiB at a time, letting the
// scheduler stop this goroutine between pieces (see the package doc).
func touch(b []byte) {
	const piece = 1 << 20
	for i := 0; i < len(b); i += piece {
		clear(b[i:min(i+piece, len(b))])
		runtime.Gosched()
	}
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
