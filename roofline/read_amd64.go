//go:build !purego

package roofline

import "github.com/ckbench/ckbench/kernels/isa"

//go:generate go run -C _asm . -out ../read_amd64.s

func readSumFor(t isa.Tier) func(*float32, int) float32 {
	switch t {
	case isa.AVX2:
		return readSumAVX2
	case isa.AVX512, isa.AVX512VNNI:
		return readSumAVX512
	}
	return nil
}

//go:noescape
func readSumAVX2(p *float32, n int) float32

//go:noescape
func readSumAVX512(p *float32, n int) float32
