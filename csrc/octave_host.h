// Host-side internals of the C ABI: the context, error reporting, runtime-call checking.
#pragma once

#include <stdio.h>
#include <string.h>

#include <mutex>
#include <unordered_map>

#include "capi_call.h"
#include "octave_capi.h"
#include "octave_params.h"

struct octave_ctx {
  int device;
  hipDeviceProp_t props;
  char arch[64];
  // Allocations made by octave_alloc on this context and not yet freed (pointer -> bytes):
  // octave_free refuses any other pointer, octave_close frees what is left.
  std::mutex mu;
  std::unordered_map<void*, uint64_t> allocs;
  // The mma prefill's split workspace (octave_prefill, num_splits): grown on demand, freed by
  // octave_close; pm_mu is held from its sizing through both launches that use it.
  std::mutex pm_mu;
  void* pm_ws = nullptr;
  uint64_t pm_ws_bytes = 0;
  // octave_timer_start/stop: two events, created at the first start, destroyed by octave_close.
  std::mutex tm_mu;
  hipEvent_t tm_ev[2] = {};
  bool tm_made = false, tm_started = false;
};

// The WMMA tier (docs/kernels.md, "The WMMA tier and its model"). AMD builds compile it for gfx1100
// only, with the v_wmma instructions: a gfx1100 device has it, a gfx942 device does not. The CPU
// emulator and CUDA builds run the same kernels on the model of the instructions (octave_wmma.h):
// they offer it on every device, named "wmma-model" so that nobody takes it for a tier of their own
// architecture (it is evidence for gfx1100's wmma tier, run on a model).
inline bool oct_wmma_on(const octave_ctx* ctx) {
#if defined(OCT_AMD)
  return strcmp(ctx->arch, "gfx1100") == 0;
#else
  (void)ctx;
  return true;
#endif
}
#if defined(OCT_AMD)
#define OCT_WMMA_TIER_NAME "wmma"
#else
#define OCT_WMMA_TIER_NAME "wmma-model"
#endif
// The MFMA tier (docs/kernels.md, "The MFMA tier"). AMD builds compile it for gfx942 only, with the
// v_mfma instructions (wave64): a gfx942 device has it, a gfx1100 device does not. The CPU emulator
// and CUDA builds run the same kernels on the model of the instructions (octave_mfma.h: a wave of
// 64 fibers, or two warps of 32) and offer it on every device as "mfma-model": evidence for
// gfx942's mfma tier, run on a model, not a tier of their own architecture.
inline bool oct_mfma_on(const octave_ctx* ctx) {
#if defined(OCT_AMD)
  return strcmp(ctx->arch, "gfx942") == 0;
#else
  (void)ctx;
  return true;
#endif
}
#if defined(OCT_AMD)
#define OCT_MFMA_TIER_NAME "mfma"
#else
#define OCT_MFMA_TIER_NAME "mfma-model"
#endif
// The mma tier (decode on NVIDIA's mma.sync, csrc/decode_mma*.hip): the instructions on CUDA
// builds, their model on the emulator (listed as "mma-model"); none on AMD.
inline bool oct_mma_on() {
#if defined(OCT_AMD)
  return false;
#else
  return true;
#endif
}
#if defined(OCT_NV)
#define OCT_MMA_TIER_NAME "mma"
#else
#define OCT_MMA_TIER_NAME "mma-model"
#endif

// Checks a runtime call; on failure sets a message naming the op and the call.
#define OCT_RT(op, call)                                                                     \
  do {                                                                                       \
    hipError_t e_ = (call);                                                                  \
    if (e_ != hipSuccess)                                                                    \
      return oct_fail(OCTAVE_ERR_RUNTIME, "%s: %s failed: %s (%s, %d)", op, #call,             \
                      hipGetErrorString(e_), hipGetErrorName(e_), (int)e_);                  \
  } while (0)

// Checks a launch wrapper's status.
#define OCT_LAUNCHED(op, kernel, call)                                                       \
  do {                                                                                       \
    hipError_t e_ = (call);                                                                  \
    if (e_ != hipSuccess)                                                                    \
      return oct_fail(OCTAVE_ERR_LAUNCH, "%s: launching %s failed: %s (%s, %d)", op, kernel,   \
                      hipGetErrorString(e_), hipGetErrorName(e_), (int)e_);                  \
  } while (0)

// Enters an API call on ctx: checks ctx, selects its device.
int oct_enter(octave_ctx* ctx, const char* op);
