//go:build tools

package main

// The generator reads the stubs the kernels implement from package
// prefill (avo's Package and Implement). This import, never built, keeps
// that package, through the replace directive in go.mod, in the module's
// build list for go mod tidy.
import _ "github.com/ckbench/ckbench/kernels/prefill"
