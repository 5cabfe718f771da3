# Fuzzing of the properties in ./fuzz and of the reproducer reader in ./cases, included by the
# top-level Makefile.
#
#   make fuzz                  every Fuzz target of ./fuzz and ./cases in turn, FUZZTIME each (default 30s);
#                              the GPU targets (FuzzStore, FuzzRotate, FuzzDecode, FuzzReduce,
#                              FuzzPrefill) skip unless OCTANT_LIB names a kernel library
#   make fuzz OCTANT_LIB=build/liboctave_emu.so FUZZ_TARGETS=FuzzDecode
#   make fuzz-gpu              the GPU targets only (OCTANT_LIB defaults to build/liboctave_cuda.so)
#   make fuzz FUZZTIME=5m      longer
#   make fuzz FUZZ_TARGETS=FuzzMergePartials
#   make fuzz FUZZMINIMIZE=60s Go's default minimization (see below)
#
# Go's fuzzer minimizes every new interesting input before it counts it, for up to 60 s by
# default, and prints no progress meanwhile: a GPU case costs milliseconds to a second per run, so
# a 30-s run could spend all its time minimizing one input (a 40-s FuzzPrefill run on the H200 made
# 13 execs; docs/performance.md, "Fuzz throughput"). FUZZMINIMIZE (default 10x: ten runs per
# input) bounds it, as scripts/gpu-acceptance.sh does.
#
# Each target is one rapid property driven by the Go fuzzer (rapid.MakeFuzz). A failure leaves the
# fuzzer's input under fuzz/testdata/fuzz/<Target>/ and a reproducer under
# corpus/regressions/<op>/; the failure message ends with `go run ./cmd/octant replay <file>`.

FUZZ_PREV_GOAL := $(.DEFAULT_GOAL)

GO           ?= go
FUZZTIME     ?= 30s
FUZZMINIMIZE ?= 10x
FUZZ_PKG     ?= ./fuzz
FUZZ_PKGS    ?= ./fuzz ./cases
# A target is PKG:Name; a bare Name is one of $(FUZZ_PKG)'s.
FUZZ_TARGETS ?= $(foreach p,$(FUZZ_PKGS),$(addprefix $(p):,$(shell $(GO) test -list '^Fuzz' $(p) | grep '^Fuzz')))

# go test runs the fuzz binary in $(FUZZ_PKG): a library path given relative to here is made
# absolute, or the GPU targets would look for it there.
FUZZ_LIB_ENV = $(if $(filter command line environment,$(origin OCTANT_LIB)),OCTANT_LIB=$(abspath $(OCTANT_LIB)))

.PHONY: fuzz fuzz-list
fuzz:
	@test -n "$(strip $(FUZZ_TARGETS))" || { echo "fuzz: no Fuzz targets found in $(FUZZ_PKGS)" >&2; exit 2; }
	@set -e; i=0; for t in $(FUZZ_TARGETS); do i=$$((i+1)); \
	  case $$t in *:*) pkg=$${t%%:*}; t=$${t#*:};; *) pkg=$(FUZZ_PKG);; esac; \
	  echo "== [$$i/$(words $(FUZZ_TARGETS))] $$pkg $$t ($(FUZZTIME))"; \
	  $(FUZZ_LIB_ENV) $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) -parallel 1 $$pkg; \
	done

GPU_FUZZ_TARGETS := FuzzStore FuzzRotate FuzzDecode FuzzReduce FuzzPrefill FuzzIsolation
.PHONY: fuzz-gpu
fuzz-gpu:
	@lib=$(abspath $(or $(OCTANT_LIB),build/liboctave_cuda.so)); test -f "$$lib" || { echo "fuzz-gpu: no kernel library at $$lib (make cuda, or set OCTANT_LIB)" >&2; exit 2; }; \
	set -e; i=0; for t in $(GPU_FUZZ_TARGETS); do i=$$((i+1)); \
	  echo "== [$$i/$(words $(GPU_FUZZ_TARGETS))] $$t ($(FUZZTIME), $$lib)"; \
	  OCTANT_LIB=$$lib $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) -parallel 1 $(FUZZ_PKG); \
	done

fuzz-list:
	@echo $(FUZZ_TARGETS)

.DEFAULT_GOAL := $(FUZZ_PREV_GOAL)
