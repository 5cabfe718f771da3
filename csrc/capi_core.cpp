// The C ABI: errors, library and device information, contexts, memory.
#include "octave_mutant.h"
#include <stdlib.h>

#include <new>

#include "octave_host.h"

#define OCT_STR2(x) #x
#define OCT_STR(x) OCT_STR2(x)

int oct_enter(octave_ctx* ctx, const char* op) {
  if (!ctx) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", op);
  OCT_RT(op, hipSetDevice(ctx->device));
  return OCTAVE_OK;
}

extern "C" {

int32_t octave_abi_version(void) { return OCTAVE_ABI_VERSION; }

const char* octave_status_name(int32_t s) {
  switch (s) {
    case OCTAVE_OK: return "OCTAVE_OK";
    case OCTAVE_ERR_INVALID_ARGUMENT: return "OCTAVE_ERR_INVALID_ARGUMENT";
    case OCTAVE_ERR_FORMAT: return "OCTAVE_ERR_FORMAT";
    case OCTAVE_ERR_GQA: return "OCTAVE_ERR_GQA";
    case OCTAVE_ERR_HEAD_SIZE: return "OCTAVE_ERR_HEAD_SIZE";
    case OCTAVE_ERR_STRIDE: return "OCTAVE_ERR_STRIDE";
    case OCTAVE_ERR_ALIGNMENT: return "OCTAVE_ERR_ALIGNMENT";
    case OCTAVE_ERR_NUM_SPLITS: return "OCTAVE_ERR_NUM_SPLITS";
    case OCTAVE_ERR_WORKSPACE: return "OCTAVE_ERR_WORKSPACE";
    case OCTAVE_ERR_SLOT_RANGE: return "OCTAVE_ERR_SLOT_RANGE";
    case OCTAVE_ERR_SLOT_DUPLICATE: return "OCTAVE_ERR_SLOT_DUPLICATE";
    case OCTAVE_ERR_UNSUPPORTED_TIER: return "OCTAVE_ERR_UNSUPPORTED_TIER";
    case OCTAVE_ERR_DTYPE: return "OCTAVE_ERR_DTYPE";
    case OCTAVE_ERR_SCALE: return "OCTAVE_ERR_SCALE";
    case OCTAVE_ERR_QUERY_GROUP: return "OCTAVE_ERR_QUERY_GROUP";
    case OCTAVE_ERR_NO_DEVICE: return "OCTAVE_ERR_NO_DEVICE";
    case OCTAVE_ERR_UNSUPPORTED_ARCH: return "OCTAVE_ERR_UNSUPPORTED_ARCH";
    case OCTAVE_ERR_RUNTIME: return "OCTAVE_ERR_RUNTIME";
    case OCTAVE_ERR_LAUNCH: return "OCTAVE_ERR_LAUNCH";
  }
  return "OCTAVE_ERR_UNKNOWN";
}

const char* octave_build_info(void) {
  return "runtime=" OCT_RT_NAME " targets=" OCTAVE_TARGETS
#if defined(OCT_AMD)
         " tiers=portable,wmma(gfx1100)"
#elif defined(OCT_NV)
         " tiers=portable,wmma-model,mma"
#else
         " tiers=portable,wmma-model,mma-model"
#endif
         " abi=" OCT_STR(OCTAVE_ABI_VERSION)
#if OCTAVE_MUTANT
         " mutant=" OCT_STR(OCTAVE_MUTANT)
#endif
         " compiler="
#if defined(__clang__)
         "clang " __clang_version__;
#elif defined(__CUDACC_VER_MAJOR__)
         "nvcc " OCT_STR(__CUDACC_VER_MAJOR__) "." OCT_STR(__CUDACC_VER_MINOR__);
#elif defined(__CUDACC__)
         "nvcc";
#else
         "gcc " __VERSION__;
#endif
}

int32_t octave_open(int32_t device, octave_ctx** out) {
  if (!out) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "open: out is NULL");
  *out = nullptr;
  int n = 0;
  hipError_t e = hipGetDeviceCount(&n);
  if (e == hipErrorNoDevice || (e == hipSuccess && n == 0))
    return oct_fail(OCTAVE_ERR_NO_DEVICE, "open: no %s device (hipGetDeviceCount: %s)", OCT_RT_NAME,
                    hipGetErrorString(e));
  if (e != hipSuccess)
    return oct_fail(OCTAVE_ERR_NO_DEVICE, "open: no usable %s device: hipGetDeviceCount failed: %s (%s)",
                    OCT_RT_NAME, hipGetErrorString(e), hipGetErrorName(e));
  if (device < 0 || device >= n)
    return oct_fail(OCTAVE_ERR_NO_DEVICE, "open: device %d does not exist: %d %s device(s)", device, n,
                    OCT_RT_NAME);
  hipDeviceProp_t props;
  char arch[64];
  memset(&props, 0, sizeof props);
  OCT_RT("open", hipSetDevice(device));
  OCT_RT("open", hipGetDeviceProperties(&props, device));
  oct_rt_arch(props, arch, sizeof arch);
  // Refuse an architecture this build has no kernels for rather than launch empty stubs.
  const char* t = OCTAVE_TARGETS;
  size_t al = strlen(arch);
  bool found = false;
  while (*t) {
    const char* end = strchr(t, ',');
    size_t len = end ? (size_t)(end - t) : strlen(t);
    if (len == al && strncmp(t, arch, len) == 0) found = true;
    t += len + (end ? 1 : 0);
  }
  if (!found)
    return oct_fail(OCTAVE_ERR_UNSUPPORTED_ARCH,
                    "open: device %d is %s (%s); this library has kernels for %s only", device, arch,
                    props.name, OCTAVE_TARGETS);
  octave_ctx* ctx = new (std::nothrow) octave_ctx;
  if (!ctx) return oct_fail(OCTAVE_ERR_RUNTIME, "open: out of host memory");
  ctx->device = device;
  ctx->props = props;
  memcpy(ctx->arch, arch, sizeof arch);
  *out = ctx;
  return OCTAVE_OK;
}

// Waits for the device, frees every allocation of the context still outstanding and releases the
// context, whatever happens on the way: the first failure is reported, the context is gone anyway.
int32_t octave_close(octave_ctx* ctx) {
  if (!ctx) return OCTAVE_OK;
  int st = OCTAVE_OK;
  hipError_t e = hipSetDevice(ctx->device);
  if (e == hipSuccess) e = hipDeviceSynchronize();
  if (e != hipSuccess)
    st = oct_fail(OCTAVE_ERR_RUNTIME,
                  "close: waiting for the device failed: %s (%s, %d); the context and its %zu outstanding "
                  "allocation(s) were released anyway",
                  hipGetErrorString(e), hipGetErrorName(e), (int)e, ctx->allocs.size());
  for (auto& a : ctx->allocs) {
    hipError_t f = hipFree(a.first);
    if (f != hipSuccess && st == OCTAVE_OK)
      st = oct_fail(OCTAVE_ERR_RUNTIME, "close: hipFree(%p, %llu bytes) failed: %s (%s, %d); the context was released",
                    a.first, (unsigned long long)a.second, hipGetErrorString(f), hipGetErrorName(f), (int)f);
  }
  if (ctx->pm_ws) {
    hipError_t f = hipFree(ctx->pm_ws);
    if (f != hipSuccess && st == OCTAVE_OK)
      st = oct_fail(OCTAVE_ERR_RUNTIME, "close: hipFree(prefill workspace %p, %llu bytes) failed: %s (%s, %d); the context was released",
                    ctx->pm_ws, (unsigned long long)ctx->pm_ws_bytes, hipGetErrorString(f), hipGetErrorName(f), (int)f);
  }
  if (ctx->tm_made)
    for (hipEvent_t ev : ctx->tm_ev) {
      hipError_t f = hipEventDestroy(ev);
      if (f != hipSuccess && st == OCTAVE_OK)
        st = oct_fail(OCTAVE_ERR_RUNTIME, "close: hipEventDestroy(timer event) failed: %s (%s, %d); the context was released",
                      hipGetErrorString(f), hipGetErrorName(f), (int)f);
    }
  delete ctx;
  return st;
}

int32_t octave_device_get_info(octave_ctx* ctx, octave_device_info* info) {
  if (int s = oct_enter(ctx, "device_get_info")) return s;
  if (!info) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "device_get_info: info is NULL");
  // An output struct: the caller sets struct_size to the size it compiled; a larger one (a newer
  // caller) gets this library's fields, the rest zeroed, and struct_size = this library's size.
  const uint64_t n = info->struct_size;
  if (n < sizeof *info)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                    "device_get_info: struct_size = %llu, expected %zu: the caller sets struct_size on output "
                    "structs too (octave_capi.h, ABI %d)",
                    (unsigned long long)n, sizeof *info, OCTAVE_ABI_VERSION);
  if (n > sizeof *info + OCTAVE_STRUCT_SIZE_SLACK)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                    "device_get_info: struct_size = %llu is implausible: this library's is %zu, and at most %d "
                    "bytes more are accepted",
                    (unsigned long long)n, sizeof *info, OCTAVE_STRUCT_SIZE_SLACK);
  octave_device_info d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.total_memory = ctx->props.totalGlobalMem;
  d.device = ctx->device;
  d.wave_size = ctx->props.warpSize;
  d.compute_units = ctx->props.multiProcessorCount;
  d.logical_wave = 32;
  snprintf(d.name, sizeof d.name, "%s", ctx->props.name);
  snprintf(d.arch, sizeof d.arch, "%s", ctx->arch);
  snprintf(d.runtime, sizeof d.runtime, "%s", OCT_RT_NAME);
  memcpy(info, &d, sizeof d);
  if (n > sizeof d) memset((uint8_t*)info + sizeof d, 0, (size_t)(n - sizeof d));
  return OCTAVE_OK;
}

int32_t octave_tiers(octave_ctx* ctx, octave_tier_desc* out, int32_t cap, int32_t* count) {
  if (int s = oct_enter(ctx, "tiers")) return s;
  if (!count || cap < 0 || (cap > 0 && !out))
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "tiers: need count, and out when cap > 0 (cap = %d)", cap);
  // Every architecture has the portable tier; the WMMA tier (decode, profile wmma-f16q; prefill,
  // profiles int8rowq for the prefix and prefill-chunk-f16 for the chunk) is on gfx1100 and,
  // run on the model of the instructions, on the emulator and CUDA builds. The prefill pair is
  // written "int8rowq+chunk-f16", the chunk's name without its "prefill-" (the field holds 31
  // characters; oracle.ParsePrefillProfile reads either spelling).
  octave_tier_desc t[4];
  memset(t, 0, sizeof t);
  t[0].tier = OCTAVE_TIER_PORTABLE;
  t[0].ops = OCTAVE_OP_DECODE | OCTAVE_OP_PREFILL;
  snprintf(t[0].name, sizeof t[0].name, "portable");
  snprintf(t[0].decode_profile, sizeof t[0].decode_profile, "dot4-int8q");
  snprintf(t[0].prefill_profile, sizeof t[0].prefill_profile, "prefill-fp32");
  t[1].tier = OCTAVE_TIER_WMMA;
  t[1].ops = OCTAVE_OP_DECODE | OCTAVE_OP_PREFILL;
  snprintf(t[1].name, sizeof t[1].name, "%s", OCT_WMMA_TIER_NAME);
  snprintf(t[1].decode_profile, sizeof t[1].decode_profile, "wmma-f16q");
  static_assert(sizeof "int8rowq+chunk-f16" <= sizeof t[1].prefill_profile, "prefill profile fits its field");
  snprintf(t[1].prefill_profile, sizeof t[1].prefill_profile, "int8rowq+chunk-f16");
  // The mfma tier (decode, profile int8rowq: the int8 query against the K codebook bytes on
  // v_mfma_i32_16x16x32_i8, P·V on v_mfma_f32_16x16x16_f16; prefill, the WMMA tier's pair) on
  // gfx942 and, run on the model of the instructions, on the emulator and CUDA builds. The mma tier
  // (decode, profile int8rowq: the int8 query against the K codebook bytes on mma.sync's s8 form,
  // or wmma-f16q, the WMMA tier's arithmetic, with OCT_DM_INT8K=0; prefill, the WMMA tier's pair),
  // on CUDA builds and, on the model, the emulator. The list is in tier id order.
  int n = 1;
  if (oct_wmma_on(ctx)) n = 2;
  if (oct_mfma_on(ctx)) {
    t[n] = octave_tier_desc{};
    t[n].tier = OCTAVE_TIER_MFMA;
    t[n].ops = OCTAVE_OP_DECODE | OCTAVE_OP_PREFILL;
    snprintf(t[n].name, sizeof t[n].name, "%s", OCT_MFMA_TIER_NAME);
    snprintf(t[n].decode_profile, sizeof t[n].decode_profile, "int8rowq");
    snprintf(t[n].prefill_profile, sizeof t[n].prefill_profile, "int8rowq+chunk-f16");
    n++;
  }
  if (oct_mma_on()) {
    t[n] = octave_tier_desc{};
    t[n].tier = OCTAVE_TIER_MMA;
    t[n].ops = OCTAVE_OP_DECODE | OCTAVE_OP_PREFILL;
    snprintf(t[n].name, sizeof t[n].name, "%s", OCT_MMA_TIER_NAME);
    snprintf(t[n].decode_profile, sizeof t[n].decode_profile, "%s", OCT_MMA_DECODE_PROFILE);
    snprintf(t[n].prefill_profile, sizeof t[n].prefill_profile, "int8rowq+chunk-f16");
    n++;
  }
  *count = n;
  for (int i = 0; i < *count && i < cap; i++) out[i] = t[i];
  return OCTAVE_OK;
}

int32_t octave_alloc(octave_ctx* ctx, uint64_t bytes, void** out) {
  if (int s = oct_enter(ctx, "alloc")) return s;
  if (!out) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "alloc: out is NULL");
  *out = nullptr;
  if (bytes == 0) return OCTAVE_OK;
  void* p = nullptr;
  hipError_t e = hipMalloc(&p, (size_t)bytes);
  if (e != hipSuccess) {
    // An allocation failure is not sticky, but it stays as the runtime's last error: clear it so
    // that the next launch check does not report it against an unrelated kernel.
    (void)hipGetLastError();
    return oct_fail(OCTAVE_ERR_RUNTIME, "alloc: hipMalloc(%llu bytes) failed: %s (%s)",
                    (unsigned long long)bytes, hipGetErrorString(e), hipGetErrorName(e));
  }
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    ctx->allocs[p] = bytes;
  }
  *out = p;
  return OCTAVE_OK;
}

int32_t octave_free(octave_ctx* ctx, void* ptr) {
  if (int s = oct_enter(ctx, "free")) return s;
  if (!ptr) return OCTAVE_OK;
  std::lock_guard<std::mutex> lock(ctx->mu);
  auto it = ctx->allocs.find(ptr);
  if (it == ctx->allocs.end())
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                    "free: ptr %p is not an allocation of this context: octave_free takes only a pointer that "
                    "octave_alloc returned on the same context and that is not yet freed",
                    ptr);
  OCT_RT("free", hipFree(ptr));
  ctx->allocs.erase(it);
  return OCTAVE_OK;
}

static int oct_copy(octave_ctx* ctx, void* dst, const void* src, uint64_t n, hipMemcpyKind k, const char* op) {
  if (int s = oct_enter(ctx, op)) return s;
  if (n == 0) return OCTAVE_OK;
  if (!dst || !src) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: NULL pointer with %llu bytes", op,
                                    (unsigned long long)n);
  OCT_RT(op, hipMemcpy(dst, src, (size_t)n, k));
  return OCTAVE_OK;
}

int32_t octave_copy_h2d(octave_ctx* ctx, void* dst, const void* src, uint64_t n) {
  return oct_copy(ctx, dst, src, n, hipMemcpyHostToDevice, "copy_h2d");
}
int32_t octave_copy_d2h(octave_ctx* ctx, void* dst, const void* src, uint64_t n) {
  return oct_copy(ctx, dst, src, n, hipMemcpyDeviceToHost, "copy_d2h");
}
int32_t octave_copy_d2d(octave_ctx* ctx, void* dst, const void* src, uint64_t n) {
  return oct_copy(ctx, dst, src, n, hipMemcpyDeviceToDevice, "copy_d2d");
}

int32_t octave_memset(octave_ctx* ctx, void* dst, int32_t v, uint64_t n) {
  if (int s = oct_enter(ctx, "memset")) return s;
  if (n == 0) return OCTAVE_OK;
  if (!dst) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "memset: dst is NULL");
  OCT_RT("memset", hipMemset(dst, v, (size_t)n));
  OCT_RT("memset", hipDeviceSynchronize());
  return OCTAVE_OK;
}

int32_t octave_sync(octave_ctx* ctx) {
  if (int s = oct_enter(ctx, "sync")) return s;
  OCT_RT("sync", hipDeviceSynchronize());
  OCT_RT("sync", hipGetLastError());
  return OCTAVE_OK;
}

// The timer's events are made at the first start; one that fails to be made leaves none made.
int32_t octave_timer_start(octave_ctx* ctx) {
  const char* op = "timer_start";
  if (int s = oct_enter(ctx, op)) return s;
  std::lock_guard<std::mutex> lock(ctx->tm_mu);
  if (!ctx->tm_made) {
    OCT_RT(op, hipEventCreate(&ctx->tm_ev[0]));
    hipError_t e = hipEventCreate(&ctx->tm_ev[1]);
    if (e != hipSuccess) {
      (void)hipEventDestroy(ctx->tm_ev[0]);
      return oct_fail(OCTAVE_ERR_RUNTIME, "%s: hipEventCreate(stop event) failed: %s (%s, %d)", op, hipGetErrorString(e),
                      hipGetErrorName(e), (int)e);
    }
    ctx->tm_made = true;
  }
  OCT_RT(op, hipEventRecord(ctx->tm_ev[0], 0));
  ctx->tm_started = true;
  return OCTAVE_OK;
}

int32_t octave_timer_stop(octave_ctx* ctx, float* ms) {
  const char* op = "timer_stop";
  if (int s = oct_enter(ctx, op)) return s;
  if (!ms) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: ms is NULL", op);
  std::lock_guard<std::mutex> lock(ctx->tm_mu);
  if (!ctx->tm_started)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: no octave_timer_start on this context since the last stop", op);
  ctx->tm_started = false;
  OCT_RT(op, hipEventRecord(ctx->tm_ev[1], 0));
  OCT_RT(op, hipEventSynchronize(ctx->tm_ev[1]));
  float t = 0;
  OCT_RT(op, hipEventElapsedTime(&t, ctx->tm_ev[0], ctx->tm_ev[1]));
  *ms = t;
  return OCTAVE_OK;
}

}  // extern "C"
