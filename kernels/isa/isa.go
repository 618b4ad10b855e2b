// Package isa names the instruction-set tiers that ckbench kernels are
// written for and decides, once per process from cpuid, which of them this
// CPU can run.
//
// A tier is a promise about every instruction its kernels use, so a tier is
// available only when the CPU reports every feature on its list. A tier the
// CPU lacks is reported with the missing features and never executed: an
// illegal instruction is not recoverable.
package isa

import (
	"fmt"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// Tier is an instruction-set tier. Its string is the name used on the command
// line, in results and in benchmark names (isa=...).
type Tier string

const (
	// Generic is portable Go: the semantic contract and the fallback.
	Generic Tier = "generic"
	// AVX2 is 256-bit AVX2 with FMA and F16C (Haswell and later, Zen).
	AVX2 Tier = "avx2"
	// AVX512 is 512-bit AVX-512 Foundation with Byte/Word and Vector Length
	// extensions (Skylake-SP and later, Zen 4).
	AVX512 Tier = "avx512"
	// AVX512VNNI adds the VNNI int8 dot product (VPDPBUSD) to AVX512
	// (Cascade Lake and later, Zen 4). Only int8 kernels have this tier.
	AVX512VNNI Tier = "avx512vnni"
)

// All lists every tier ckbench knows, in order from the most portable.
var All = []Tier{Generic, AVX2, AVX512, AVX512VNNI}

// Requires lists the cpuid features a tier's kernels use.
func (t Tier) Requires() []cpuid.FeatureID {
	switch t {
	case AVX2:
		return []cpuid.FeatureID{cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C}
	// The AVX-512 tiers also name AVX2, FMA and F16C: their kernels mix in
	// VEX forms (the assembler picks VEX for Y0–Y15), which every AVX-512
	// CPU has, but a tier must require every feature it uses.
	case AVX512:
		return []cpuid.FeatureID{cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C, cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL}
	case AVX512VNNI:
		return []cpuid.FeatureID{cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C, cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512VNNI}
	}
	return nil
}

// Arch is the GOARCH a tier's kernels are written for ("" for any).
func (t Tier) Arch() string {
	switch t {
	case AVX2, AVX512, AVX512VNNI:
		return "amd64"
	}
	return ""
}

// Zen4 reports whether a CPU of vendor v and family fam, with AVX-512 or
// without, is an AMD Zen 4 core: family 0x19 with AVX-512 (Zen 3, the
// family's other core, has none). The kernels' per-CPU choices measured
// there ask it (attention's and kvcache's *On functions).
func Zen4(v cpuid.Vendor, fam int, avx512 bool) bool {
	return v == cpuid.AMD && fam == 0x19 && avx512
}

// Status says whether a tier runs on this machine and, if not, why.
type Status struct {
	Tier    Tier     `json:"tier"`
	Runs    bool     `json:"runs"`
	Missing []string `json:"missing,omitempty"` // cpuid features the CPU lacks
	Reason  string   `json:"reason,omitempty"`  // human-readable, empty when Runs
}

// Detect reports whether tier t runs here: the CPU has every feature the
// tier uses and this binary carries its kernels (the purego build tag
// leaves only Generic).
func Detect(t Tier) Status {
	return detect(&cpuid.CPU, goarch, t)
}

func detect(cpu *cpuid.CPUInfo, arch string, t Tier) Status {
	st := Status{Tier: t}
	if a := t.Arch(); a != "" && a != arch {
		st.Reason = fmt.Sprintf("needs GOARCH=%s, this build is GOARCH=%s", a, arch)
		return st
	}
	for _, f := range t.Requires() {
		if !cpu.Supports(f) {
			st.Missing = append(st.Missing, f.String())
		}
	}
	if len(st.Missing) > 0 {
		st.Reason = "CPU lacks " + strings.Join(st.Missing, "+")
		return st
	}
	if t != Generic && !asmBuilt {
		st.Reason = "not compiled in (built with -tags purego)"
		return st
	}
	st.Runs = true
	return st
}

// Parse converts a tier name; it names the known tiers when s is not one.
func Parse(s string) (Tier, error) {
	for _, t := range All {
		if string(t) == s {
			return t, nil
		}
	}
	names := make([]string, len(All))
	for i, t := range All {
		names[i] = string(t)
	}
	return "", fmt.Errorf("unknown ISA tier %q (known: %s)", s, strings.Join(names, ", "))
}
