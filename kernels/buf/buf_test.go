package buf

import (
	"testing"
	"unsafe"
)

func TestFloatsAligned(t *testing.T) {
	for n := 1; n < 100; n += 7 {
		x := Floats(n)
		if len(x) != n || cap(x) != n {
			t.Fatalf("Floats(%d): len %d cap %d", n, len(x), cap(x))
		}
		if p := uintptr(unsafe.Pointer(&x[0])); p%Align != 0 {
			t.Fatalf("Floats(%d) at %#x, not %d-byte aligned", n, p, Align)
		}
	}
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
