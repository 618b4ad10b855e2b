//go:build amd64 && !purego

package isa

// asmBuilt reports whether this binary carries the assembly tiers. Every
// kernel package guards its asm with the same constraint (amd64 && !purego).
const asmBuilt = true
