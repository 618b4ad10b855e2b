package buf

import (
	"testing"
	"unsafe"
)

// TestAligned: every buffer starts a page (so also a line), small or big,
// whatever was allocated before it.
func TestAligned(t *testing.T) {
	var keep [][]byte // small allocations in between, so that size classes shift
	for n := 1; n < 100_000; n = n*3 + 7 {
		x, b := Floats(n), Bytes(n)
		if len(x) != n || cap(x) != n || len(b) != n || cap(b) != n {
			t.Fatalf("n %d: Floats len %d cap %d, Bytes len %d cap %d", n, len(x), cap(x), len(b), cap(b))
		}
		for _, p := range []uintptr{uintptr(unsafe.Pointer(&x[0])), uintptr(unsafe.Pointer(&b[0]))} {
			if p%Page != 0 || p%Align != 0 {
				t.Fatalf("n %d: a buffer at %#x does not start a %d-byte page", n, p, Page)
			}
		}
		keep = append(keep, make([]byte, n%97+1))
	}
	_ = keep
}

func TestFillUniformDeterministic(t *testing.T) {
	a, b := make([]float32, 64), make([]float32, 64)
	FillUniform(a, 7, -1, 1)
	FillUniform(b, 7, -1, 1)
	for i := range a {
		if a[i] != b[i] || a[i] < -1 || a[i] >= 1 {
			t.Fatalf("element %d: %v vs %v", i, a[i], b[i])
		}
	}
}
