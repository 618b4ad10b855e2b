package roofline

import (
	"fmt"

	"github.com/ckbench/ckbench/kernels/isa"
)

// FMAUnits is the FP32 FMA hardware of one core as a tier's vectors see
// it: how many FMA pipes, how wide, and so how many FP32 FMAs it can
// complete per cycle. PctOfPorts is measured against it.
type FMAUnits struct {
	Pipes int `json:"pipes"`
	Bits  int `json:"bits"` // datapath width of each pipe
	// Lanes is FP32 FMAs per cycle for the tier: pipes × min(bits, the
	// tier's vector bits)/32. A vector wider than the pipe is split over
	// it (Zen 4 runs a 512-bit FMA as two 256-bit halves; Zen 1 a 256-bit
	// one as two 128-bit halves), so it does not add lanes.
	Lanes  int    `json:"lanes_per_cycle"`
	Source string `json:"source"` // the CPU line the figures come from, or "assumed"
}

func (u FMAUnits) String() string { return fmt.Sprintf("%d×%d-bit FMA", u.Pipes, u.Bits) }

// FMAUnitsFor returns the FMA units of a CPU (cpuid vendor string,
// family, model) for tier t; ok is false for tiers without FMA (generic).
// CPUs the table does not name get two pipes as wide as the tier's
// vectors, the Source saying it is assumed.
func FMAUnitsFor(vendor string, family, model int, t isa.Tier) (u FMAUnits, ok bool) {
	vec := 0
	switch t {
	case isa.AVX2:
		vec = 256
	case isa.AVX512, isa.AVX512VNNI:
		vec = 512
	default:
		return FMAUnits{}, false
	}
	in := func(lo, hi int) bool { return model >= lo && model <= hi }
	u = FMAUnits{Pipes: 2, Bits: vec, Source: "assumed: two FMA pipes as wide as the tier's vectors"}
	switch vendor {
	case "AuthenticAMD", "AMD":
		switch family {
		case 0x17:
			if model < 0x30 {
				u = FMAUnits{Pipes: 2, Bits: 128, Source: "AMD Zen/Zen+ (family 17h, model < 30h): two 128-bit FMA pipes"}
			} else {
				u = FMAUnits{Pipes: 2, Bits: 256, Source: "AMD Zen 2 (family 17h): two 256-bit FMA pipes"}
			}
		case 0x19:
			if in(0x10, 0x1f) || in(0x60, 0x7f) || in(0xa0, 0xaf) {
				u = FMAUnits{Pipes: 2, Bits: 256, Source: "AMD Zen 4 (family 19h): two 256-bit FMA pipes; 512-bit FMAs run double-pumped"}
			} else {
				u = FMAUnits{Pipes: 2, Bits: 256, Source: "AMD Zen 3 (family 19h): two 256-bit FMA pipes"}
			}
		case 0x1a:
			if in(0x20, 0x2f) || in(0x60, 0x7f) {
				u = FMAUnits{Pipes: 2, Bits: 256, Source: "AMD Zen 5 mobile (family 1Ah): two 256-bit FMA pipes; 512-bit FMAs run double-pumped"}
			} else {
				u = FMAUnits{Pipes: 2, Bits: 512, Source: "AMD Zen 5 (family 1Ah): two 512-bit FMA pipes"}
			}
		}
	case "GenuineIntel", "Intel":
		if family != 6 {
			break
		}
		switch {
		case vec == 256:
			u = FMAUnits{Pipes: 2, Bits: 256, Source: "Intel since Haswell: two 256-bit FMA pipes (ports 0 and 1)"}
		case model == 0x55 || model == 0x6a || model == 0x6c || model == 0x8f || model == 0xcf || model == 0xad || model == 0xae:
			u = FMAUnits{Pipes: 2, Bits: 512, Source: "Intel Xeon Scalable: two 512-bit FMA units (ports 0+1 and 5); some Skylake-SP Silver/Gold 5xxx have one, and read 50 %"}
		case model == 0x66 || model == 0x7d || model == 0x7e || model == 0x8c || model == 0x8d || model == 0xa7:
			u = FMAUnits{Pipes: 1, Bits: 512, Source: "Intel client with AVX-512: one 512-bit FMA (ports 0+1 fused)"}
		}
	}
	u.Lanes = u.Pipes * min(u.Bits, vec) / 32
	return u, true
}
