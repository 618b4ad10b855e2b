module github.com/ckbench/ckbench/roofline/_asm

go 1.26.0

require (
	github.com/ckbench/ckbench v0.0.0
	github.com/mmcloughlin/avo v0.6.0
)

require (
	github.com/ckbench/ckbench/kernels/_vecgen v0.0.0
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
)

replace github.com/ckbench/ckbench => ../..

replace github.com/ckbench/ckbench/kernels/_vecgen => ../../kernels/_vecgen
