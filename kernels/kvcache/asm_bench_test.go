//go:build !purego

package kvcache

import (
	"testing"

	"github.com/ckbench/ckbench/kernels/buf"
)

func BenchmarkRowsAsm(b *testing.B) {
	src := buf.Floats(8 * 128)
	dst := buf.Bytes(4 * 8 * 128 * 4097)
	flat := buf.Bytes(4 * 8 * 128)
	b.Run("strided", func(b *testing.B) {
		for b.Loop() {
			copyRowsAVX512(&dst[4096*512], &dst[4096*512], 4097*512, &src[0], &src[0], 512, 8, 128)
		}
	})
	b.Run("flat", func(b *testing.B) {
		for b.Loop() {
			copyRowsAVX512(&flat[0], &flat[0], 512, &src[0], &src[0], 512, 8, 128)
		}
	})
	b.Run("one", func(b *testing.B) {
		for b.Loop() {
			copyRowsAVX512(&flat[0], &flat[0], 4096, &src[0], &src[0], 4096, 1, 1024)
		}
	})
}

func BenchmarkRowsFunc(b *testing.B) {
	im, _ := Lookup("avx512")
	p := Params{Op: Append, Hkv: 8, D: 128, Pos: 4096}
	bufs := Alloc(p)
	k := bytesOf(bufs.K)
	b.Run("rowsFunc", func(b *testing.B) {
		for b.Loop() {
			im.copy(k[4096*512:], k[4096*512:], 4097*512, bufs.SrcK, bufs.SrcK, 512, 8, 128)
		}
	})
	b.Run("run", func(b *testing.B) {
		for b.Loop() {
			im.Run(p, bufs)
		}
	})
}
