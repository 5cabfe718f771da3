# Octant. `make test` is what CI runs (.ci/run); it needs no GPU.
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
export CGO_ENABLED ?= 0

KBUILD ?= build

# go test with one line per package as it ends, every failure's output in full, a line every 30 s
# saying what still runs, and go test's exit status (internal/cmd/gotest, built once as
# $(GOTEST_BIN)). With GOTEST_SUMMARY=FILE each run also appends its counts to FILE, which
# `gotest -total FILE` adds up: make test ends on that.
GOTEST_BIN = $(KBUILD)/gotest
GOTEST = $(GOTEST_BIN) -go $(GO) $(if $(GOTEST_SUMMARY),-summary $(GOTEST_SUMMARY)) --

.PHONY: setup test test-steps isa-log vet fmt-check bench golden sums conform bin/octant
# make setup: the Go modules, every package built, and the command line as bin/octant (put it on
# PATH: export PATH=$PWD/bin:$PATH; make bin/octant rebuilds it after a change).
setup:
	@command -v $(GO) >/dev/null || { echo "Go not found: install Go 1.26 (expected /usr/local/go/bin)"; exit 2; }
	$(GO) mod download
	$(GO) build ./...
	@$(MAKE) --no-print-directory bin/octant
	@echo "setup: done. To run octant as a command: export PATH=$(CURDIR)/bin:\$$PATH"

bin/octant:
	$(GO) build -buildvcs=auto -o bin/octant ./cmd/octant

# make test: formatting, vet, golden checksums, every Go test, the golden check, the AMD ISA check
# (clang-19, installed when missing; its table in build/isa.log), the HIP library loaded without an
# AMD GPU, and on the CPU emulator build of the kernels: the fuzz targets' seed corpora, the
# regression corpus, the GPU and must-not-matter properties and the kernel tests' -short grids
# (make emu-test), the op bridge's verdict parity on the emulator (make bridge-test, about 3
# minutes) and through vLLM's op schemas in torch mode (make torch-test, about 2 minutes), and the
# judges on the pure-Python implementation (make pyref-test, about 1.5 minutes) and the campaign
# templates (make deploy-test, about 15 s). The emulator
# library is built (or brought up to date) first: cmd/octant's conform test runs on it. About 37
# minutes on 2 cores, peak memory about 8 GB (README).
#
# The steps run in a sub-make (test-steps), which stops at the first failure; whatever it did, the
# last two lines are the verdict over every go test run of the steps (each appends its counts to
# $(TEST_SUMMARY)): "make test: passed (N packages, ..., time)" or "make test: FAILED: <what>",
# then "test: N passed, M failed" alone on the last line, the form CI reads. A step that fails
# outside go test (gofmt, vet, a build, a check) counts as one failure.
TEST_SUMMARY = $(KBUILD)/test-summary.jsonl
test: $(GOTEST_BIN)
	@mkdir -p $(KBUILD) && rm -f $(TEST_SUMMARY); start=$$(date +%s); \
	$(MAKE) --no-print-directory test-steps GOTEST_SUMMARY=$(abspath $(TEST_SUMMARY)); rc=$$?; \
	$(GOTEST_BIN) -total $(TEST_SUMMARY) -exit $$rc -since $$start -label "make test"

test-steps: fmt-check vet sums isa-log hip emu bin/octant $(GOTEST_BIN) bridge-test torch-test pyref-test deploy-test
	@OCTANT_HIP_LIB=$(CURDIR)/$(KBUILD)/liboctave_hip.so $(GOTEST) ./...
	@# the oracle's long rows run on several goroutines (oracle.sweepTokens): under the race detector
	@# (it needs cgo; the C++ compiler `make emu` uses is there)
	@CGO_ENABLED=1 $(GOTEST) -race -count=1 -run 'TestSweepTokens' ./oracle/
	@echo "golden: bin/octant golden --check corpus/golden/upstream"
	@bin/octant golden --check corpus/golden/upstream
	@# A static certificate is never certified: nothing ran (exit 1; gfx1100 misses no kernel since
	@# its wmma prefill exists); the static ISA checks themselves ran in `make isa`. Exit 2 (an
	@# error) fails the test.
	@echo "conform: bin/octant conform --isa-only --arch gfx1100 (exit 1 expected: a static check never certifies)"
	@bin/octant conform --isa-only --arch gfx1100 --out $(KBUILD)/conform-gfx1100; test $$? -le 1
	@$(MAKE) --no-print-directory emu-test

# make isa with its table (isacheck's output) in $(KBUILD)/isa.log instead of the terminal: the
# compile steps' one-line progress and the toolchain's installation still show (stderr); the log
# is printed when make isa fails.
isa-log:
	@mkdir -p $(KBUILD); $(MAKE) --no-print-directory isa >$(KBUILD)/isa.log || \
	  { cat $(KBUILD)/isa.log; echo "isa: make isa failed (output above, in $(KBUILD)/isa.log)" >&2; exit 1; }
	@echo "isa: gfx1100 and gfx942 code objects built and checked against arch/ (table in $(KBUILD)/isa.log)"

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./oracle/

golden: bin/octant
	bin/octant golden --check corpus/golden/upstream

# The main job: `octant conform` on the default target. With nvcc and an NVIDIA GPU: the CUDA library
# certified at runtime on the GPU. Without: the static certification of the gfx1100 and gfx942 code
# objects (make isa), the oracle's golden check and a runtime certification on the CPU emulator
# (build/conform-emu, labelled so); it says what it did not certify.
# It runs bin/octant (built first), so that an exit status 1 is printed once, by conform itself.
CONFORM_BUDGET ?= 10m
CONFORM_EMU_BUDGET ?= 20s
conform: bin/octant
	@if command -v $(NVCC) >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then \
	  $(MAKE) --no-print-directory cuda && bin/octant conform --lib $(CURDIR)/$(KBUILD)/liboctave_cuda.so --budget $(CONFORM_BUDGET) --out $(KBUILD)/conform-gpu; \
	else \
	  echo "conform: no nvcc here: static certification of gfx1100 and gfx942 (code objects only), the oracle's golden check,"; \
	  echo "conform: and a runtime certification of the kernels on the CPU emulator (every tier it lists; about 2 minutes on 2 cores)."; \
	  echo "conform: nothing is run on a GPU, so no GPU is certified (run make conform on a GPU machine for that)."; \
	  $(MAKE) --no-print-directory isa-log && \
	  bin/octant golden --check corpus/golden/upstream && \
	  { bin/octant conform --isa-only --arch gfx1100 --out $(KBUILD)/conform-gfx1100; a=$$?; \
	    bin/octant conform --isa-only --arch gfx942 --out $(KBUILD)/conform-gfx942; b=$$?; \
	    $(MAKE) --no-print-directory emu && \
	    bin/octant conform --lib $(CURDIR)/$(KBUILD)/liboctave_emu.so --fixed 32 --budget $(CONFORM_EMU_BUDGET) --out $(KBUILD)/conform-emu; e=$$?; \
	    echo "conform: gfx1100 exit $$a, gfx942 exit $$b (1 = not certified: a static check never certifies" \
	      "(gfx1100 and gfx942 certify on their instruction models with a GPU library: docs/conformance.md));" \
	      "CPU emulator exit $$e (0 = certified on the emulator, with plots);" \
	      "reports in $(KBUILD)/conform-gfx1100, $(KBUILD)/conform-gfx942 and $(KBUILD)/conform-emu"; [ $$a -le 1 ] && [ $$b -le 1 ] && [ $$e -eq 0 ]; }; \
	fi

# The golden files must be the upstream ones, unchanged.
sums:
	cd corpus/golden/upstream && sha256sum --quiet -c SHA256SUMS

# Kernel builds: hip, isa, cuda, emu (mk/kernels.mk).
include mk/kernels.mk

# Binaries for scripts/gpu-acceptance.sh on the GPU machine (no Go there): CGO_ENABLED=0 static builds.
.PHONY: gpu-bins
gpu-bins:
	@mkdir -p bin
	$(GO) test -c -ldflags="-s -w" -o bin/kernels.test ./kernels
	$(GO) test -c -ldflags="-s -w" -o bin/grids.test ./grids
	$(GO) test -c -ldflags="-s -w" -o bin/oracle.test ./oracle
	$(GO) test -c -ldflags="-s -w" -fuzz=. -o bin/fuzz.test ./fuzz
	$(GO) test -c -ldflags="-s -w" -o bin/fuzz-plain.test ./fuzz
	$(GO) build -buildvcs=true -ldflags="-s -w" -o bin/octant ./cmd/octant

# Kernel tests (grids/*_test.go; docs/kernels.md, "The kernel tests"): every op and tier against
# the oracle, through a kernel library named by OCTANT_LIB, with the binding's own tests (./kernels).
#   make gpu-test   the full grids on a GPU (OCTANT_LIB defaults to build/liboctave_cuda.so: make cuda)
#   make emu-test   the fuzz targets' seed corpora and the regression corpus, the GPU,
#                   must-not-matter and isolation properties (-short), then the -short grids, on
#                   the CPU emulator (builds build/liboctave_emu.so)
OCTANT_LIB ?= $(KBUILD)/liboctave_cuda.so
.PHONY: gpu-test emu-test
gpu-test: $(GOTEST_BIN)
	@test -f $(OCTANT_LIB) || { echo "gpu-test: $(OCTANT_LIB) not found: build it (make cuda, make hip) or set OCTANT_LIB" >&2; exit 1; }
	OCTANT_LIB=$(abspath $(OCTANT_LIB)) $(GOTEST) -count=1 -timeout 60m ./kernels/ ./grids/

emu-test: $(KBUILD)/liboctave_emu.so $(KBUILD)/variants/liboctave_emu_f16k.so $(KBUILD)/variants/liboctave_emu_f16kq.so $(KBUILD)/variants/liboctave_emu_w8.so \
  $(KBUILD)/variants/liboctave_emu_vt128.so $(KBUILD)/variants/liboctave_emu_nowg.so $(GOTEST_BIN)
	OCTANT_LIB=$(abspath $(KBUILD)/liboctave_emu.so) $(GOTEST) -count=1 -run '^Fuzz|TestReplayRegressions' ./fuzz/
	@# the GPU properties (TestGPU*), the must-not-matter properties (TestMustNotMatter*) and the
	@# isolation property with its reproducer and mask-by-zero fixture (TestIsolation*), their -short
	@# form (20 cases each), on every tier the emulator library lists: about 3 minutes on 2 cores
	@# (TestIsolation* about 50 s of it)
	OCTANT_LIB=$(abspath $(KBUILD)/liboctave_emu.so) $(GOTEST) -short -count=1 -run '^(TestGPU|TestMustNotMatter|TestSkipContract|TestIsolation)' ./fuzz/
	OCTANT_LIB=$(abspath $(KBUILD)/liboctave_emu.so) $(GOTEST) -short -count=1 -timeout 25m ./kernels/ ./grids/
	@# the mma decode's variants (mk/kernels.mk), on their tier alone: fp16 K with per-warp passes of 16,
	@# fp16 K with the quad kernel, int8 K (the default) with the 8-warp kernel and per-warp passes of 16,
	@# the V table in rows of 128 bytes
	OCTANT_LIB=$(abspath $(KBUILD)/variants/liboctave_emu_f16k.so) OCTANT_TIERS=mma-model $(GOTEST) -short -count=1 -run '^TestDecode' ./grids/
	OCTANT_LIB=$(abspath $(KBUILD)/variants/liboctave_emu_f16kq.so) OCTANT_TIERS=mma-model $(GOTEST) -short -count=1 -run '^TestDecode' ./grids/
	OCTANT_LIB=$(abspath $(KBUILD)/variants/liboctave_emu_w8.so) OCTANT_TIERS=mma-model $(GOTEST) -short -count=1 -run '^TestDecode' ./grids/
	OCTANT_LIB=$(abspath $(KBUILD)/variants/liboctave_emu_vt128.so) OCTANT_TIERS=mma-model $(GOTEST) -short -count=1 -run '^TestDecode' ./grids/
	@# the mma prefill's mma.sync path (variant nowg: the path of sm_90 builds without wgmma)
	OCTANT_LIB=$(abspath $(KBUILD)/variants/liboctave_emu_nowg.so) OCTANT_TIERS=mma-model $(GOTEST) -short -count=1 -run '^TestPrefill' ./grids/
# make bridge-test: the op bridge's verdict parity (docs/adapters.md). The store, rotate, reduce,
# query-map, decode and prefill grids (-short) and the seed runs of the GPU fuzz targets for
# store, rotate, reduce and decode (-short) run on the CPU emulator twice: on the library
# directly, and through a worker (kernels/worker) whose reference adapter
# (kernels/worker/py/octant_adapters/capi.py) forwards every op to the same library. parity
# (internal/cmd/parity) requires the same verdict for every test and subtest, and lists those that
# skip through the worker only, with their reasons. Needs python3 (standard library only); about 3
# minutes on 2 cores (the grids take most of it, once per side).
BRIDGE_GRIDS := TestStore|TestRotate|TestReduce|TestQueryMaps|TestDecodeGrid|TestPrefillGrid
BRIDGE_FUZZ := TestGPUStore|TestGPURotate|TestGPUReduce|TestGPUDecode
BRIDGE_SPEC = host:$(CURDIR)/kernels/worker/py/octant_adapters/capi.py?lib=$(CURDIR)/$(KBUILD)/liboctave_emu.so
# Both sides draw the same fuzz cases: one rapid seed per make run (BRIDGE_SEED=N repeats a run).
ifndef BRIDGE_SEED
BRIDGE_SEED := $(shell date +%s)
endif
PARITY_BIN = $(KBUILD)/parity
.PHONY: bridge-test
bridge-test: $(KBUILD)/liboctave_emu.so $(PARITY_BIN)
	@mkdir -p $(KBUILD)/bridge
	@for side in direct worker; do \
	  if [ $$side = direct ]; then lib='$(CURDIR)/$(KBUILD)/liboctave_emu.so'; else lib='$(BRIDGE_SPEC)'; fi; \
	  echo "bridge-test: $$side: OCTANT_LIB=$$lib go test -short -run '$(BRIDGE_GRIDS)' ./grids/; -run '$(BRIDGE_FUZZ)' ./fuzz/ -args -rapid.seed=$(BRIDGE_SEED)"; \
	  OCTANT_LIB="$$lib" OCTANT_REGRESSIONS=off $(GO) test -json -short -count=1 -run '$(BRIDGE_GRIDS)' ./grids/ >$(KBUILD)/bridge/$$side.json; \
	  OCTANT_LIB="$$lib" OCTANT_REGRESSIONS=off $(GO) test -json -short -count=1 -run '$(BRIDGE_FUZZ)' ./fuzz/ -args -rapid.seed=$(BRIDGE_SEED) >>$(KBUILD)/bridge/$$side.json; \
	done
	@$(PARITY_BIN) $(KBUILD)/bridge/direct.json $(KBUILD)/bridge/worker.json

# make torch-test: the vLLM-schema adapter's verdict parity (docs/adapters.md, "The vLLM-schema
# adapter"). The store, rotate, decode and prefill grids (-short) and the seed runs of the GPU
# fuzz targets for store, rotate and decode run on the CPU emulator directly and through a torch-
# mode worker (OCTANT_PYTHON=/usr/bin/python3: Debian's python3-torch, CPU) whose vllm_ops.py
# calls the ops a C++ torch extension (kernels/worker/testdata/octave_torch_ext.cpp, built here with
# torch.utils.cpp_extension: Debian's libtorch-dev and ninja-build) registers with vLLM's schemas
# and forwards to the same library: the extension the GPU run builds over liboctave_cuda.so. Both sides run the tiers vLLM's ops can ask
# for (TORCH_TIERS: decode's use_wmma False and True; the emulator's mma-model has no counterpart).
# The cases outside the adapter's declared domain (bf16 prefill, invalid block ids, slots out of
# range or repeated; the store error grid, whose rows need those) skip through the worker with
# "outside declared domain", which parity allows and lists. TORCH_EXCLUDE names what the
# declaration cannot say, left out and listed by parity: the portable prefill (the op has one
# tier, declared wmma-model here; the direct library's portable prefill has no counterpart). Skips, saying so, when
# /usr/bin/python3 has no torch (apt-get install python3-torch). About 2 minutes on 2 cores.
TORCH_PYTHON := /usr/bin/python3
TORCH_GRIDS := TestStore|TestRotate|TestDecodeGrid|TestPrefillGrid
TORCH_FUZZ := TestGPUStore|TestGPURotate|TestGPUDecode
TORCH_TIERS := portable,wmma-model
TORCH_EXCLUDE := ^TestPrefillGrid/.*/portable$$
TORCH_EXT := $(KBUILD)/torch_ext/octave_torch_ext.so
TORCH_SPEC = torch:$(CURDIR)/kernels/worker/py/octant_adapters/vllm_ops.py?ext=$(CURDIR)/$(TORCH_EXT)&lib=$(CURDIR)/$(KBUILD)/liboctave_emu.so&tiers=portable,wmma-model&prefill=wmma-model&arch=emu&device=cpu
.PHONY: torch-test
torch-test: $(KBUILD)/liboctave_emu.so $(PARITY_BIN)
	@if ! $(TORCH_PYTHON) -c 'import torch' 2>/dev/null; then \
	  echo "torch-test: SKIPPED, NOT TESTED: $(TORCH_PYTHON) cannot import torch; apt-get install python3-torch python3-numpy to judge the vLLM-schema adapter" >&2; exit 0; fi; \
	$(MAKE) --no-print-directory $(TORCH_EXT) || exit 1; \
	mkdir -p $(KBUILD)/torch; \
	for side in direct worker; do \
	  if [ $$side = direct ]; then lib='$(CURDIR)/$(KBUILD)/liboctave_emu.so'; else lib='$(TORCH_SPEC)'; fi; \
	  echo "torch-test: $$side: OCTANT_TIERS=$(TORCH_TIERS) OCTANT_LIB=$$lib go test -short -run '$(TORCH_GRIDS)' ./grids/; -run '$(TORCH_FUZZ)' ./fuzz/ -args -rapid.seed=$(BRIDGE_SEED)"; \
	  OCTANT_TIERS=$(TORCH_TIERS) OCTANT_PYTHON=$(TORCH_PYTHON) OCTANT_LIB="$$lib" OCTANT_REGRESSIONS=off $(GO) test -json -short -count=1 -run '$(TORCH_GRIDS)' ./grids/ >$(KBUILD)/torch/$$side.json; \
	  OCTANT_TIERS=$(TORCH_TIERS) OCTANT_PYTHON=$(TORCH_PYTHON) OCTANT_LIB="$$lib" OCTANT_REGRESSIONS=off $(GO) test -json -short -count=1 -run '$(TORCH_FUZZ)' ./fuzz/ -args -rapid.seed=$(BRIDGE_SEED) >>$(KBUILD)/torch/$$side.json; \
	done; \
	$(PARITY_BIN) -skip-word 'through a worker|outside declared domain' -exclude '$(TORCH_EXCLUDE)' $(KBUILD)/torch/direct.json $(KBUILD)/torch/worker.json

# The C++ torch extension with vLLM's op schemas over any Octave C library (the path given by
# vllm_ops.py's lib= option), built for the CPU with torch.utils.cpp_extension (needs torch's
# headers: Debian's libtorch-dev, and ninja-build).
$(TORCH_EXT): kernels/worker/testdata/octave_torch_ext.cpp csrc/include/octave_capi.h
	@mkdir -p $(@D)
	@echo "torch-test: building $@ (torch.utils.cpp_extension)"
	@$(TORCH_PYTHON) -c "from torch.utils.cpp_extension import load; load('octave_torch_ext', ['kernels/worker/testdata/octave_torch_ext.cpp'], extra_include_paths=['csrc/include'], build_directory='$(@D)', is_python_module=False)" >$(@D)/build.log 2>&1 || \
	  { tail -20 $(@D)/build.log; echo "torch-test: building the C++ torch extension failed (log: $(@D)/build.log); it needs torch's headers and ninja: apt-get install libtorch-dev ninja-build" >&2; exit 1; }

$(PARITY_BIN): $(wildcard internal/cmd/parity/*.go) go.mod
	@mkdir -p $(@D)
	@$(GO) build -o $@ ./internal/cmd/parity

# make pyref-test: the judges on a second implementation of the ops in Python and numpy
# (internal/pyref, docs/adapters.md "A pure-Python implementation as a test subject"), run through a
# worker: its clean version passes the store, rotate, reduce, query-map and decode grids (-short)
# and the GPU fuzz targets' runs, the decode isolation and the must-not-matter properties for
# store, rotate, reduce and decode; each planted defect fails a judge whose message names it;
# `octant conform` through its spec certifies the domain it declares.
# Needs an interpreter with numpy (OCTANT_PYTHON when it has numpy, else /usr/bin/python3: the test
# skips, saying so, when neither has); about 1 to 2 minutes on 2 cores (1m12s alone, 2m13s beside
# other work).
.PHONY: pyref-test
pyref-test: $(GOTEST_BIN)
	@$(GOTEST) -count=1 ./internal/pyref/ -args -pyref.judges

# make deploy-test: the campaign templates (deploy/, docs/campaigns.md) validated without a
# cluster, in their own Go module (deploy/go.mod: the Kubernetes API and actionlint modules stay
# out of Octant's go.mod): the Slurm scripts submitted through a fake sbatch and their 4 shards and
# merge run on the CPU emulator, the Kubernetes manifests strictly decoded into the API's types,
# the GitHub Actions workflow through actionlint. About 12 s on 2 cores (30 s when the Kubernetes
# and actionlint packages are not built yet).
.PHONY: deploy-test
deploy-test: $(KBUILD)/liboctave_emu.so bin/octant $(GOTEST_BIN)
	cd deploy && $(GO) vet ./...
	@cd deploy && $(CURDIR)/$(GOTEST) -count=1 . -args -octant=$(CURDIR)/bin/octant -lib=$(abspath $(KBUILD)/liboctave_emu.so)

# Fuzzing: make fuzz FUZZTIME=30s (mk/fuzz.mk).
include mk/fuzz.mk

# The go test wrapper, built once (go run would rebuild it at every step and add its own
# "exit status N" line to every failing one).
$(GOTEST_BIN): $(wildcard internal/cmd/gotest/*.go) go.mod
	@mkdir -p $(@D)
	@$(GO) build -o $@ ./internal/cmd/gotest
