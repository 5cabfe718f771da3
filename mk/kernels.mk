# Kernel builds, included by the top-level Makefile (docs/kernels.md, "Building").
#
#   make hip    build/liboctave_hip.so for gfx1100 and gfx942: hipcc when present, else Debian's
#               clang-19 with libamdhip64-dev (HIP 5.2 runtime), installed with apt-get if missing.
#   make isa    device-only code objects per AMD target, disassembled with llvm-objdump-19 and
#               checked against the arch registry (go run ./arch/cmd/isacheck).
#   make cuda   build/liboctave_cuda.so for sm_90 with nvcc (on the GPU machine): code for sm_90a
#               (the wgmma the mma prefill uses), named sm_90 (the arch the library serves).
#               CUDA_ARCH=sm_90 builds it without wgmma (the mma.sync path, for an A/B).
#   make emu    build/liboctave_emu.so: the same kernels on the CPU emulator (csrc/emu), any C++17
#               compiler; lets the C ABI and the kernels run where there is no GPU.

# Defining targets here must not change the including Makefile's default goal.
KERNELS_PREV_GOAL := $(.DEFAULT_GOAL)

KBUILD       ?= build
KSRC_DEV     := $(sort $(wildcard csrc/*.hip))
KSRC_HOST    := $(sort $(wildcard csrc/*.cpp))
KHDRS        := $(wildcard csrc/*.h csrc/include/*.h csrc/emu/*.h)
KINC         := -Icsrc/include -Icsrc
LLVM_BIN     ?= /usr/lib/llvm-19/bin
HIP_ARCHS    ?= gfx1100 gfx942
CUDA_ARCH    ?= sm_90a
# The architecture the library serves (OCTAVE_TARGETS): CUDA_ARCH without its "a" (sm_90a's code
# runs on sm_90 only); the host knows about wgmma (OCT_BUILD_SM90A) when CUDA_ARCH names 90a.
CUDA_TARGET  ?= $(patsubst %a,%,$(CUDA_ARCH))
KCUDA_DEFS    = -DOCTAVE_TARGETS='"$(CUDA_TARGET)"' $(if $(findstring 90a,$(CUDA_ARCH)),-DOCT_BUILD_SM90A=1)
NVCC         ?= nvcc
HIPCC        ?= $(shell command -v hipcc 2>/dev/null)
KCXX         ?= $(CXX)
comma        := ,
empty        :=
space        := $(empty) $(empty)
HIP_TARGETS  := $(subst $(space),$(comma),$(strip $(HIP_ARCHS)))
KAPT_PKGS    := clang-19 clang-tools-19 lld-19 llvm-19 libamdhip64-dev
# The clang steps of hip and isa take minutes: each prints "isa: [3/12] gfx1100 decode.hip" on
# stderr instead of its command line (V=1 prints the commands too).
Q            := $(if $(V),,@)
# $(call knumber,LIST,VAR): VAR := i for the i-th target of LIST, for the [i/n] of those lines.
knumber       = $(foreach i,$(shell seq $(words $(1))),$(eval $(word $(i),$(1)): $(2) := $(i)))

.PHONY: hip isa cuda emu emu-check kernels-toolchain kernels-clean cuda-syntax cuda-regs

# ---- toolchain: Debian packages, installed quietly when missing (CI and developers run as root) ----
# The line saying what is installed and why goes to stderr: make isa's output may go to a log
# (make conform, make test), and apt-get takes seconds to minutes.
kernels-toolchain:
	@missing=; for p in $(KAPT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "kernels: installing$$missing with apt-get (Debian's clang-19 builds the AMD code objects for make isa and make hip; llvm-objdump-19 disassembles them; libamdhip64-dev is the HIP runtime): up to a few minutes" >&2; \
	  if [ "$$(id -u)" != 0 ]; then echo "kernels: need root to apt-get install$$missing" >&2; exit 1; fi; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing) \
	    >/tmp/octant-kernels-apt.log 2>&1 || { tail -20 /tmp/octant-kernels-apt.log >&2; echo "kernels: apt-get install failed" >&2; exit 1; }; \
	  rm -f /tmp/octant-kernels-apt.log; \
	fi

# ---- HIP: the full library for AMD ----
hip: $(KBUILD)/liboctave_hip.so

ifneq ($(HIPCC),)
$(KBUILD)/liboctave_hip.so: $(KSRC_DEV) $(KSRC_HOST) $(KHDRS)
	@mkdir -p $(@D)
	$(HIPCC) -x hip $(addprefix --offload-arch=,$(HIP_ARCHS)) -std=c++17 -O3 -fPIC -shared $(KINC) \
	  -fhip-fp32-correctly-rounded-divide-sqrt -DOCTAVE_TARGETS='"$(HIP_TARGETS)"' \
	  $(KSRC_DEV) $(KSRC_HOST) -o $@
	@echo "hip: built $@ with $(HIPCC) for $(HIP_TARGETS)"
else
KHIP_OBJ := $(patsubst csrc/%,$(KBUILD)/hip/%.o,$(KSRC_DEV) $(KSRC_HOST))
$(call knumber,$(KHIP_OBJ),KHIP_I)
KHIP_CXX = PATH=$(LLVM_BIN):$$PATH clang++ -x hip -std=c++17 -nogpulib --rocm-path=/usr -O3 -fPIC $(KINC) \
  -DOCTAVE_TARGETS='"$(HIP_TARGETS)"' -Wall -cuid=$(subst .,_,$(notdir $<))

$(KBUILD)/hip/%.hip.o: csrc/%.hip $(KHDRS) | kernels-toolchain
	@mkdir -p $(@D)
	@echo "hip: [$(KHIP_I)/$(words $(KHIP_OBJ))] $(HIP_TARGETS) $(notdir $<)" >&2
	$(Q)$(KHIP_CXX) $(addprefix --offload-arch=,$(HIP_ARCHS)) -fhip-fp32-correctly-rounded-divide-sqrt -c $< -o $@

$(KBUILD)/hip/%.cpp.o: csrc/%.cpp $(KHDRS) | kernels-toolchain
	@mkdir -p $(@D)
	@echo "hip: [$(KHIP_I)/$(words $(KHIP_OBJ))] $(HIP_TARGETS) $(notdir $<)" >&2
	$(Q)$(KHIP_CXX) $(addprefix --offload-arch=,$(HIP_ARCHS)) -c $< -o $@

$(KBUILD)/liboctave_hip.so: $(KHIP_OBJ)
	$(Q)PATH=$(LLVM_BIN):$$PATH clang++ -shared -fPIC --rocm-path=/usr $^ -o $@ -lamdhip64
	@echo "hip: built $@ with Debian clang-19 for $(HIP_TARGETS) (HIP runtime: libamdhip64)"
endif

# ---- ISA: device-only code objects, disassembled and checked ----
KISA_DIS := $(foreach a,$(HIP_ARCHS),$(patsubst csrc/%.hip,$(KBUILD)/isa/$(a)/%.s,$(KSRC_DEV)))
.SECONDARY: $(KISA_DIS:.s=.o)
$(call knumber,$(KISA_DIS:.s=.o),KISA_I)

isa: $(KISA_DIS)
	$(or $(GO),go) run ./arch/cmd/isacheck -dir $(KBUILD)/isa $(HIP_ARCHS)

define KISA_RULE
$(KBUILD)/isa/$(1)/%.o: csrc/%.hip $(KHDRS) | kernels-toolchain
	@mkdir -p $$(@D)
	@echo "isa: [$$(KISA_I)/$(words $(KISA_DIS))] $(1) $$(notdir $$<)" >&2
	$(Q)PATH=$(LLVM_BIN):$$$$PATH clang++ -x hip -std=c++17 --offload-arch=$(1) --cuda-device-only \
	  --no-gpu-bundle-output -nogpulib --rocm-path=/usr -O3 $(KINC) -fhip-fp32-correctly-rounded-divide-sqrt \
	  -c $$< -o $$@
$(KBUILD)/isa/$(1)/%.s: $(KBUILD)/isa/$(1)/%.o
	$(Q)$(LLVM_BIN)/llvm-objdump -d --mcpu=$(1) $$< > $$@
endef
$(foreach a,$(HIP_ARCHS),$(eval $(call KISA_RULE,$(a))))

# ---- CUDA: on a machine with nvcc ----
# One nvcc per source file, as many at once as the machine has cores (the mma kernels take most of
# the time: one nvcc over every file took 1 m 45 s on the GPU machine), then one link.
KCUDA_OBJ := $(patsubst csrc/%,$(KBUILD)/cuda/%.o,$(KSRC_DEV) $(KSRC_HOST))
KNPROC    := $(shell nproc 2>/dev/null || echo 4)
cuda:
	@command -v $(NVCC) >/dev/null 2>&1 || { \
	  echo "make cuda: nvcc not found (NVCC=$(NVCC)). Build the CUDA library on a machine with the CUDA" >&2; \
	  echo "toolkit (the GPU machine), or set NVCC=/path/to/nvcc. Nothing was built." >&2; exit 1; }
	@$(MAKE) --no-print-directory -j$(KNPROC) $(KBUILD)/liboctave_cuda.so

$(KBUILD)/cuda/%.o: csrc/% $(KHDRS)
	@mkdir -p $(@D)
	$(NVCC) -x cu -arch=$(CUDA_ARCH) -O3 -std=c++17 -Xcompiler -fPIC $(KINC) $(KCUDA_DEFS) -c $< -o $@

$(KBUILD)/liboctave_cuda.so: $(KCUDA_OBJ)
	$(NVCC) -arch=$(CUDA_ARCH) -shared $(KCUDA_OBJ) -o $@
	@echo "cuda: built $@ for $(CUDA_ARCH)"

# Syntax check of the CUDA path with clang-19 in CUDA mode (no CUDA toolkit needed): stand-in
# declarations in csrc/emu/cuda_standin/cuda_runtime.h replace the CUDA toolkit headers.
KCUDA_CLANG = $(LLVM_BIN)/clang++ -x cuda --cuda-gpu-arch=sm_90 -nocudainc -nocudalib -std=c++17 \
  -Xclang -target-sdk-version=12.0 -D__CUDACC__ -Icsrc/emu/cuda_standin -include cuda_runtime.h $(KINC)
# The files with wgmma (octave_wgmma.h) again for sm_90a, the build that ships: their wgmma path.
KWG_SRC = $(shell grep -l octave_wgmma.h $(KSRC_DEV))
cuda-syntax: | kernels-toolchain
	@for f in $(KSRC_DEV) $(KSRC_HOST); do \
	  $(KCUDA_CLANG) -fsyntax-only $$f || exit 1; \
	done; for f in $(KWG_SRC); do \
	  $(KCUDA_CLANG) --cuda-gpu-arch=sm_90a --cuda-device-only -fsyntax-only $$f || exit 1; \
	done; echo "cuda-syntax: $(words $(KSRC_DEV) $(KSRC_HOST)) files pass clang's CUDA front end (host and sm_90), $(words $(KWG_SRC)) with wgmma for sm_90a too"

# Registers, stack and spills of every sm_90 kernel without a GPU or the CUDA toolkit (the sm_90
# code: CUDA 11.8's ptxas predates wgmma, so the mma prefill is its mma.sync path here): clang-19
# compiles each device file to PTX with the stand-in's device functions inline
# (cuda_device_inline.h), and ptxas reports. ptxas comes from PATH, PTXAS=..., or Debian's
# nvidia-cuda-toolkit (non-free, CUDA 11.8: ptxas supports sm_90), fetched once into
# $(KBUILD)/ptxas (84 MB) by `make ptxas-fetch`. clang's code generation is not nvcc's; the two
# agree within a few registers (decode_mma NT 1: 165 against nvcc 13.0's 168, stack 16 both; NT 2
# and the prefill: 255 with spills both), which is what a register-pressure change needs to know
# before it spends device time.
PTXAS ?= $(firstword $(shell command -v ptxas 2>/dev/null) $(wildcard $(KBUILD)/ptxas/usr/bin/ptxas))
KREGS_CLANG = $(KCUDA_CLANG) -O3 -Xclang -target-feature -Xclang +ptx78 -DOCT_STANDIN_INLINE --cuda-device-only -S
.PHONY: cuda-regs ptxas-fetch
cuda-regs: | kernels-toolchain
	@ptxas="$(PTXAS)"; if [ -z "$$ptxas" ]; then $(MAKE) --no-print-directory ptxas-fetch || exit 1; ptxas=$(KBUILD)/ptxas/usr/bin/ptxas; fi; \
	mkdir -p $(KBUILD)/regs; for f in $(KSRC_DEV); do \
	  b=$(KBUILD)/regs/$$(basename $$f .hip); \
	  $(KREGS_CLANG) -o $$b.ptx $$f || exit 1; \
	  $$ptxas -arch=sm_90 -v -o /dev/null $$b.ptx 2>&1 | awk '/Compiling entry/ {k=$$7; gsub(/[^A-Za-z0-9_]/, "", k)} \
	    /stack frame/ {st=$$1; sp=$$5} /Used [0-9]+ registers/ {printf "%-48s %3d registers, stack %3d B, spill stores %3d B\n", k, $$5, st, sp}'; \
	done

ptxas-fetch:
	@mkdir -p $(KBUILD)/ptxas/lists/partial; echo "deb http://deb.debian.org/debian bookworm non-free" > $(KBUILD)/ptxas/sources.list; \
	a="-o Dir::Etc::sourcelist=$(abspath $(KBUILD))/ptxas/sources.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$(abspath $(KBUILD))/ptxas/lists"; \
	echo "ptxas-fetch: Debian's nvidia-cuda-toolkit (non-free) into $(KBUILD)/ptxas, for ptxas only (84 MB)" >&2; \
	apt-get $$a update >/dev/null && (cd $(KBUILD)/ptxas && apt-get $$a download nvidia-cuda-toolkit >/dev/null) && \
	dpkg -x $(KBUILD)/ptxas/nvidia-cuda-toolkit_*.deb $(KBUILD)/ptxas && test -x $(KBUILD)/ptxas/usr/bin/ptxas || \
	{ echo "ptxas-fetch: could not fetch nvidia-cuda-toolkit from Debian's non-free archive; set PTXAS=/path/to/ptxas" >&2; exit 1; }

# ---- EMU: the CPU emulator build ----
# Each compile step prints "emu: [3/14] csrc/decode.hip" on stderr instead of its command line
# (V=1 prints the commands too), like hip and isa.
KEMU_OBJ := $(patsubst csrc/%,$(KBUILD)/emu/%.o,$(KSRC_DEV) $(KSRC_HOST) csrc/emu/emu.cpp)
$(call knumber,$(KEMU_OBJ),KEMU_I)

emu: $(KBUILD)/liboctave_emu.so

$(KBUILD)/emu/%.o: csrc/% $(KHDRS)
	@mkdir -p $(@D)
	@echo "emu: [$(KEMU_I)/$(words $(KEMU_OBJ))] $<" >&2
	$(Q)$(KCXX) -x c++ -std=c++17 -O2 -fPIC -ffp-contract=off -Wall $(KINC) -Icsrc/emu -c $< -o $@

$(KBUILD)/liboctave_emu.so: $(KEMU_OBJ)
	$(Q)$(KCXX) -shared -fPIC $^ -o $@ -lpthread
	@echo "emu: built $@ (the kernels on the CPU emulator)"

# ---- Emulator variants of the mma decode: its build switches, each built and tested here ----
# emu_variant(NAME, FLAGS[, OBJECTS]): build/variants/liboctave_emu_NAME.so, the files that FLAGS change
# (KVAR_OBJ: the mma decode's, and capi_core.cpp, which names the decode's profile) rebuilt with
# FLAGS and linked with the rest of the emulator build. `make emu-test` runs the -short decode
# tests on the mma-model tier of each, so that every switch of the mma decode
# (csrc/decode_mma*.hip; OCT_DM_INT8K in csrc/octave_params.h) stays correct in both positions:
#   OCT_DM_INT8K=0  fp16 K (profile wmma-f16q, the WMMA tier's arithmetic), not int8 K (int8rowq);
#   OCT_DM_W8=1     the 8-warp kernel for every pass of 8 queries, which the default build takes
#                   only for grids of at most one workgroup per SM (on the emulator's one "SM":
#                   one-workgroup grids);
#   OCT_DM_QUAD=0   the per-warp kernel's passes of up to 16 queries for chunks of more than 8,
#                   which the default build gives to the quad kernel;
#   OCT_DM_VTAB=0   k3v4's one-N-tile kernel at 4 warps reading 4-bit V by the permute lookup, not
#                   through the V table (the build the table is measured against);
#   OCT_DM_VTROW=128  the V table in rows of 128 bytes (6 warps, two workgroups per SM), not 256.
KVAR_OBJ := $(addsuffix .o,$(notdir $(wildcard csrc/decode_mma*.hip)) capi_core.cpp)
define emu_variant
$(KBUILD)/variants/$(1)/%.o: csrc/% $(KHDRS)
	@mkdir -p $$(@D)
	@echo "emu-$(1): $$< ($(2))" >&2
	$(Q)$(KCXX) -x c++ -std=c++17 -O2 -fPIC -ffp-contract=off -Wall $(KINC) -Icsrc/emu $(2) -c $$< -o $$@
$(KBUILD)/variants/liboctave_emu_$(1).so: $(addprefix $(KBUILD)/variants/$(1)/,$(or $(3),$(KVAR_OBJ))) $(KEMU_OBJ)
	$(Q)$(KCXX) -shared -fPIC $$(filter $(KBUILD)/variants/$(1)/%,$$^) $$(filter-out $(addprefix $(KBUILD)/emu/,$(or $(3),$(KVAR_OBJ))) $(KBUILD)/variants/%,$$^) -o $$@ -lpthread
	@echo "emu-$(1): built $$@"
endef
# f16k: fp16 K with the 8-warp kernel for every pass of 8 and the per-warp passes of 16 (the fp16-K
# build that scripts/gpu-acceptance.sh also runs on the GPU, its kernels on the emulator's grids).
$(eval $(call emu_variant,f16k,-DOCT_DM_INT8K=0 -DOCT_DM_W8=1 -DOCT_DM_QUAD=0))
# f16kq: fp16 K with the quad kernel for chunks of more than 8 queries (its fp16-K path), and k3v4's
# one-N-tile kernel without the V table.
$(eval $(call emu_variant,f16kq,-DOCT_DM_INT8K=0 -DOCT_DM_VTAB=0))
# w8: int8 K (the default) with the 8-warp kernel for every pass of 8 and the per-warp passes of 16.
$(eval $(call emu_variant,w8,-DOCT_DM_W8=1 -DOCT_DM_QUAD=0))
# vt128: the V table in rows of 128 bytes.
$(eval $(call emu_variant,vt128,-DOCT_DM_VTROW=128))
# The mma prefill's mma.sync path for P·V (OCT_NO_WGMMA, csrc/include/octave_wgmma.h): the path of
# sm_90 builds without the "a" (CUDA_ARCH=sm_90), which the emulator otherwise never takes (it has
# the wgmma model); emu_variant's third argument names the objects it rebuilds.
$(eval $(call emu_variant,nowg,-DOCT_NO_WGMMA=1,prefill_mma.hip.o))

# ---- Mutants (corpus/mutants.md): one deliberate defect per library, -DOCTAVE_MUTANT=<id> ----
#   make cuda-mutant MUTANT=1   build/mutants/liboctave_cuda_m1.so (GPU machine)
#   make emu-mutant MUTANT=1    build/mutants/liboctave_emu_m1.so (anywhere)
.PHONY: cuda-mutant emu-mutant
cuda-mutant emu-mutant: mutant-id
mutant-id:
	@case "$(MUTANT)" in ''|*[!0-9]*|0) echo "MUTANT=<id> expected: a positive mutant id from corpus/mutants.md, found '$(MUTANT)'" >&2; exit 2;; esac
.PHONY: mutant-id
cuda-mutant:
	@command -v $(NVCC) >/dev/null 2>&1 || { echo "make cuda-mutant: nvcc not found (NVCC=$(NVCC))" >&2; exit 1; }
	@mkdir -p $(KBUILD)/mutants
	$(NVCC) -x cu -arch=$(CUDA_ARCH) -O3 -std=c++17 -shared -Xcompiler -fPIC $(KINC) -DOCTAVE_MUTANT=$(MUTANT) \
	  $(KCUDA_DEFS) $(KSRC_DEV) $(KSRC_HOST) -o $(KBUILD)/mutants/liboctave_cuda_m$(MUTANT).so
	@echo "cuda-mutant: built $(KBUILD)/mutants/liboctave_cuda_m$(MUTANT).so (mutant $(MUTANT), corpus/mutants.md)"
emu-mutant:
	@mkdir -p $(KBUILD)/mutants/emu$(MUTANT)
	@for f in $(KSRC_DEV) $(KSRC_HOST) csrc/emu/emu.cpp; do \
	  $(KCXX) -x c++ -std=c++17 -O2 -fPIC -ffp-contract=off -Wall $(KINC) -Icsrc/emu -DOCTAVE_MUTANT=$(MUTANT) \
	    -c $$f -o $(KBUILD)/mutants/emu$(MUTANT)/$$(basename $$f).o || exit 1; done
	$(KCXX) -shared -fPIC $(KBUILD)/mutants/emu$(MUTANT)/*.o -o $(KBUILD)/mutants/liboctave_emu_m$(MUTANT).so -lpthread
	@echo "emu-mutant: built $(KBUILD)/mutants/liboctave_emu_m$(MUTANT).so (mutant $(MUTANT), corpus/mutants.md)"

kernels-clean:
	rm -rf $(KBUILD)/hip $(KBUILD)/cuda $(KBUILD)/isa $(KBUILD)/emu $(KBUILD)/mutants $(KBUILD)/liboctave_hip.so $(KBUILD)/liboctave_emu.so $(KBUILD)/liboctave_cuda.so

# Runs every kernel through the C ABI on the CPU emulator and checks it against the worked example,
# the upstream golden vectors and the oracle: the Go kernel tests (grids/*_test.go, -short grids;
# no cgo needed): the top-level `make emu-test`.
emu-check: emu-test

.DEFAULT_GOAL := $(KERNELS_PREV_GOAL)
