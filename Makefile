# ckbench — see README.md. Every target works on a fresh machine with Go.
GO      ?= go
BIN     := bin/ckbench
OUT     ?= out
PRESET  ?= quick
# Haswell has AVX2+FMA+F16C and no AVX-512; the features TCG cannot emulate are
# turned off so that QEMU does not warn about them on every run.
QEMU_X86   ?= qemu-x86_64 -cpu Haswell,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm
QEMU_ARM64 ?= qemu-aarch64

.PHONY: run build install test test-race test-portable test-avx512-emu cross lint bench bwcheck generate check-generate vet fmt-check ci clean

# The main job: the whole suite at the quick preset (the roofline once,
# every family, then the report) into out/<run-id>/; it prints where the
# report's index.html is.
RUN_ID  ?= $(shell date +%Y%m%d-%H%M%S)
run: build
	$(BIN) sweep all --preset $(PRESET) --out $(OUT) --run-id $(RUN_ID)

build:
	$(GO) build -o $(BIN) ./cmd/ckbench

# ckbench on your PATH: $(go env GOPATH)/bin/ckbench.
install:
	$(GO) install ./cmd/ckbench

# Unit, correctness and CLI tests (every tier this CPU runs: a tier it
# lacks shows as a skipped subtest; CKBENCH_REQUIRE_TIERS=avx2,avx512 makes
# such a skip fail), plus the pure-Go build that the purego tag forces
# (where only generic runs, so nothing is required).
test:
	$(GO) test ./...
	CKBENCH_REQUIRE_TIERS= $(GO) test -tags purego ./kernels/... ./cmd/...

# The race detector over the packages that run goroutines: the CLI (a
# sweep's Ctrl-C handler and progress share its writers), the runner, the
# sampler, the results. The kernels have none (a kernel never starts one).
test-race:
	$(GO) test -race ./cmd/... ./sweeps/... ./sampler/... ./results/...

# The same tests where AVX-512 does not exist (QEMU's Haswell model: the
# avx512 tier must report skipped, never run) and on arm64 (generic only).
# CKBENCH_EMULATED tells the tests they run under qemu-user: the one that
# forks a real ckbench child (TestKillResumeReport) skips there.
# Needs qemu-user (Debian: apt-get install qemu-user).
test-portable:
	CKBENCH_EMULATED=1 CKBENCH_REQUIRE_TIERS= CKBENCH_EXPECT_SKIPPED=avx512,avx512vnni GOARCH=amd64 $(GO) test -exec "$(QEMU_X86)" ./...
	CKBENCH_EMULATED=1 CKBENCH_REQUIRE_TIERS= CKBENCH_EXPECT_SKIPPED=avx2,avx512,avx512vnni GOARCH=arm64 $(GO) test -exec "$(QEMU_ARM64)" ./...

# The AVX-512 tiers' tests on a CPU without AVX-512 (AMD Zen 3, say):
# tools/avx512emu boots a Debian kernel in Bochs' emulation of a Skylake-X
# and runs the kernels' and the roofline's avx2 and avx512 subtests there,
# required to run; the avx2 tier, also run natively first, tells the
# emulator's own errors from ckbench's (see its doc). Correctness only,
# never speed; 18 minutes on a Zen 3. Needs (Debian) apt-get install
# bochs bochsbios vgabios isolinux syslinux-common xorriso, and a kernel
# (fetched with apt-get download, or EMUFLAGS=-kernel PATH).
EMUFLAGS ?=
test-avx512-emu:
	$(GO) run ./tools/avx512emu $(EMUFLAGS)

# ckbench builds (and vets, tests included) wherever Go does: outside
# linux/amd64 it has the generic tier; outside Linux no counters, no CPU
# pinning or locks, and says so.
CROSS ?= linux/amd64 linux/arm64 darwin/arm64 windows/amd64
cross:
	@set -e; for p in $(CROSS); do echo "GOOS=$${p%/*} GOARCH=$${p#*/}"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -o /dev/null ./cmd/ckbench; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; done

# staticcheck, pinned (installed into bin/, not a dependency of the
# module), on every OS the project builds for.
lint:
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	@set -e; for os in linux darwin windows; do echo "staticcheck GOOS=$$os"; GOOS=$$os bin/staticcheck ./...; done

# go test's own benchmarks of the kernels (ckbench sweep is the real tool).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 200ms ./kernels/... ./roofline/

# The 1-thread read ceilings against an independent C loop (needs a C
# compiler): roofline/testdata/bwcheck.c built with -march=native, and on an
# AVX-512 CPU also without AVX-512 against ckbench's avx2 tier (the code an
# AVX2-only CPU runs). C and ckbench run in turn, BWRUNS times each, and
# each side keeps its best: a noisy moment of a shared host decides
# neither. About 2 minutes per run and width; results in $(OUT)/bwcheck/.
CC     ?= cc
BWRUNS ?= 2
bwcheck: build
	rm -rf $(OUT)/bwcheck && mkdir -p $(OUT)/bwcheck
	$(CC) -O3 -march=native -o $(OUT)/bwcheck/c-native roofline/testdata/bwcheck.c
	if grep -qw avx512f /proc/cpuinfo; then $(CC) -O3 -march=native -mno-avx512f -o $(OUT)/bwcheck/c-avx2 roofline/testdata/bwcheck.c; fi
	set -e; for i in $$(seq $(BWRUNS)); do \
	  $(OUT)/bwcheck/c-native > $(OUT)/bwcheck/native-c$$i.tsv; \
	  $(BIN) roofline --threads 1 --out $(OUT)/bwcheck --run-id native-go$$i > /dev/null; \
	  if [ -x $(OUT)/bwcheck/c-avx2 ]; then \
	    $(OUT)/bwcheck/c-avx2 > $(OUT)/bwcheck/avx2-c$$i.tsv; \
	    $(BIN) roofline --threads 1 --isa generic,avx2 --out $(OUT)/bwcheck --run-id avx2-go$$i > /dev/null; \
	  fi; \
	done
	$(GO) run roofline/testdata/bwcompare.go $(OUT)/bwcheck/native-go*/roofline.json $(OUT)/bwcheck/native-c*.tsv
	if [ -x $(OUT)/bwcheck/c-avx2 ]; then $(GO) run roofline/testdata/bwcompare.go $(OUT)/bwcheck/avx2-go*/roofline.json $(OUT)/bwcheck/avx2-c*.tsv; fi

# Regenerate the avo assembly (each generator is its own module in _asm/).
generate:
	$(GO) generate ./...

# CI: regenerating must leave the tree unchanged.
check-generate: generate
	@git diff --exit-code -- '*.s' '*_stubs_amd64.go' '*_tiers_amd64.go' '*_gen.go' || { echo "generated assembly is stale: run make generate and commit"; exit 1; }

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

ci: fmt-check vet lint test check-generate cross test-portable

clean:
	rm -rf bin
