//go:build !purego

package roofline

import "github.com/ckbench/ckbench/kernels/isa"

//go:generate go run -C _asm . -out ../kernels_amd64.s

var (
	kAVX2   = asmKernels{readSumAVX2, readXorAVX2, copyAVX2, writeAVX2, writeNTAVX2, fmaPeakAVX2, fmaClockAVX2, int8PeakAVX2, 12, 32}
	kAVX512 = asmKernels{readSumAVX512, readXorAVX512, copyAVX512, writeAVX512, writeNTAVX512, fmaPeakAVX512, fmaClockAVX512, int8PeakAVX512, 24, 64}
	kVNNI   = asmKernels{readSumAVX512, readXorAVX512, copyAVX512, writeAVX512, writeNTAVX512, fmaPeakAVX512, fmaClockAVX512, int8PeakVNNI, 24, 64}
)

func kernelsFor(t isa.Tier) *asmKernels {
	switch t {
	case isa.AVX2:
		return &kAVX2
	case isa.AVX512:
		return &kAVX512
	case isa.AVX512VNNI:
		return &kVNNI
	}
	return nil
}

// int8Chains is the accumulator count of the int8 kernel of t.
func int8Chains(t isa.Tier) int {
	if t == isa.AVX2 {
		return 11 // u, s, ones and a temporary take 5 of the 16 ymm
	}
	return 24
}

func clockChainAsm(n int) int { return clockChain(n) }

func rdtscAsm() uint64 { return rdtsc() }

// fmaGenericFor is the generic tier's FMA ceiling kernel: asm, so the Go
// scheduler cannot preempt it mid-sample; same instructions as compiled Go.
var fmaGenericFor = fmaScalar

const haveClockChain = true

//go:noescape
func readSumAVX2(p *float32, n, reps int) float32

//go:noescape
func readSumAVX512(p *float32, n, reps int) float32

//go:noescape
func readXorAVX2(p *byte, n int) uint64

//go:noescape
func readXorAVX512(p *byte, n int) uint64

//go:noescape
func copyAVX2(dst, src *float32, n, reps int)

//go:noescape
func copyAVX512(dst, src *float32, n, reps int)

//go:noescape
func writeAVX2(dst *float32, n, reps int)

//go:noescape
func writeAVX512(dst *float32, n, reps int)

//go:noescape
func writeNTAVX2(dst *float32, n, reps int)

//go:noescape
func writeNTAVX512(dst *float32, n, reps int)

func fmaPeakAVX2(iters int) float32
func fmaPeakAVX512(iters int) float32
func fmaClockAVX2(iters int) int
func fmaClockAVX512(iters int) int
func int8PeakAVX2(iters int) int32
func int8PeakAVX512(iters int) int32
func int8PeakVNNI(iters int) int32
func clockChain(n int) int
func rdtsc() uint64
func fmaScalar(iters int) float32
