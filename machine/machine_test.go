package machine

import (
	"runtime"
	"testing"
)

func TestDescribe(t *testing.T) {
	in := Describe()
	if in.OS.GOARCH != runtime.GOARCH || in.OS.CPUs < 1 || len(in.Tiers) == 0 || len(in.Features) == 0 {
		t.Fatalf("incomplete description: %+v", in)
	}
	if !in.Tiers[0].Runs {
		t.Fatalf("generic tier must run: %+v", in.Tiers[0])
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{512: "512 B", 48 << 10: "48 KiB", 2 << 20: "2 MiB", 3 << 29: "1.5 GiB", -1: "n/a"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
