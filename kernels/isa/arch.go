package isa

import "runtime"

const goarch = runtime.GOARCH
