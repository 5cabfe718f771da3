// Test entry points (csrc/include/octave_selftest.h): not part of the C ABI, used by Octant's Go tests
// only. octave_wmma_selftest runs one WMMA (instruction or model) per problem on raw registers,
// octave_mma_selftest one mma.sync.
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "octave_host.h"
#include "octave_selftest.h"

// The register buffers a, b, c, d of a self-test: not NULL, 4-byte aligned.
static int st_check_regs(const char* op, const void* a, const void* b, const void* c, const void* d) {
  const void* ptrs[4] = {a, b, c, d};
  const char* names[4] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; i++) {
    if (!ptrs[i]) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, names[i]);
    if ((uintptr_t)ptrs[i] % 4)
      return oct_fail(OCTAVE_ERR_ALIGNMENT, "%s: %s = %p is not 4-byte aligned: registers are 32-bit words", op,
                      names[i], ptrs[i]);
  }
  return OCTAVE_OK;
}

static_assert(sizeof(octave_wmma_selftest_args) == 56 && offsetof(octave_wmma_selftest_args, form) == 40,
              "octave_wmma_selftest_args layout (grids/wmma_test.go mirrors it)");

extern "C" int32_t octave_wmma_selftest(octave_ctx* ctx, const octave_wmma_selftest_args* in) {
  const char* op = "wmma_selftest";
  octave_wmma_selftest_args a;
  if (int s = oct_args(in, a, op)) return s;
  if (int s = oct_enter(ctx, op)) return s;
  const int allowed = a.form == OCTAVE_WMMA_F32_F16 ? 0
                      : a.form == OCTAVE_WMMA_F16_F16 ? OCTAVE_WMMA_OPSEL
                      : a.form == OCTAVE_WMMA_I32_IU8 ? OCTAVE_WMMA_SIGNED_A | OCTAVE_WMMA_SIGNED_B | OCTAVE_WMMA_CLAMP
                      : a.form == OCTAVE_WMMA_F32_BF16 ? 0
                                                      : -1;
  if (allowed < 0)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                    "%s: form = %d, expected 0 (f32 <- f16), 1 (f16 <- f16), 2 (i32 <- iu8) or 3 (f32 <- bf16)", op,
                    a.form);
  if (a.flags & ~allowed)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: flags = %#x, form %d takes only the bits %#x", op, a.flags, a.form,
                    allowed);
  if (a.n < 1 || a.n > 65535) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: n = %d, expected 1..65535", op, a.n);
  if (a.reserved0) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: reserved0 = %d, expected 0", op, a.reserved0);
  if (int s = st_check_regs(op, a.a, a.b, a.c, a.d)) return s;
  if (!oct_wmma_on(ctx))
    return oct_fail(OCTAVE_ERR_UNSUPPORTED_TIER,
                    "%s: %s has no WMMA (gfx1100 runs the instructions; the emulator and CUDA builds run the model)",
                    op, ctx->arch);
  OctWmmaSelftestParams p;
  p.a = a.a, p.b = a.b, p.c = a.c, p.d = a.d, p.form = a.form, p.flags = a.flags, p.n = a.n, p.pad = 0;
  OCT_LAUNCHED(op, "octave_wmma_selftest_kernel", oct_launch_wmma_selftest(p));
  return OCTAVE_OK;
}

static_assert(sizeof(octave_mma_selftest_args) == 48 && offsetof(octave_mma_selftest_args, form) == 40,
              "octave_mma_selftest_args layout (grids/mma_test.go mirrors it)");

extern "C" int32_t octave_mma_selftest(octave_ctx* ctx, const octave_mma_selftest_args* in) {
  const char* op = "mma_selftest";
  octave_mma_selftest_args a;
  if (int s = oct_args(in, a, op)) return s;
  if (int s = oct_enter(ctx, op)) return s;
  if (a.form < OCTAVE_MMA_M16N8K16_F32_F16 || a.form > OCTAVE_MMA_WGMMA_M64N256K16)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                    "%s: form = %d, expected 0 (m16n8k16 f32 <- f16), 1 (m16n8k32 s32 <- s8), 2 (ldmatrix.x4) or 3 "
                    "(wgmma m64n256k16)",
                    op, a.form);
  if (a.n < 1 || a.n > 65535) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: n = %d, expected 1..65535", op, a.n);
  if (int s = st_check_regs(op, a.a, a.b, a.c, a.d)) return s;
#if defined(OCT_AMD)
  return oct_fail(OCTAVE_ERR_UNSUPPORTED_TIER,
                  "%s: %s has no mma.sync (NVIDIA sm_80 and later run the instruction; the emulator runs the model)", op,
                  ctx->arch);
#else
#if defined(OCT_NV) && !OCT_BUILD_SM90A
  if (a.form == OCTAVE_MMA_WGMMA_M64N256K16)
    return oct_fail(OCTAVE_ERR_UNSUPPORTED_TIER,
                    "%s: form 3 (wgmma) needs a library built for sm_90a (make cuda builds one); this one was built "
                    "without it",
                    op);
#endif
  OctMmaSelftestParams p;
  p.a = a.a, p.b = a.b, p.c = a.c, p.d = a.d, p.form = a.form, p.n = a.n;
  OCT_LAUNCHED(op, "octave_mma_selftest_kernel", oct_launch_mma_selftest(p));
  return OCTAVE_OK;
#endif
}

static_assert(sizeof(octave_mfma_selftest_args) == 48 && offsetof(octave_mfma_selftest_args, form) == 40,
              "octave_mfma_selftest_args layout (grids/mfma_test.go mirrors it)");

extern "C" int32_t octave_mfma_selftest(octave_ctx* ctx, const octave_mfma_selftest_args* in) {
  const char* op = "mfma_selftest";
  octave_mfma_selftest_args a;
  if (int s = oct_args(in, a, op)) return s;
  if (int s = oct_enter(ctx, op)) return s;
  if (a.form < OCTAVE_MFMA_I32_16X16X32_I8 || a.form > OCTAVE_MFMA_F32_16X16X16_BF16)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                    "%s: form = %d, expected 0 (i32 <- i8, 16x16x32), 1 (f32 <- f16, 16x16x16), 2 (the model's "
                    "exchange) or 3 (f32 <- bf16, 16x16x16)",
                    op, a.form);
  if (a.n < 1 || a.n > 65535) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: n = %d, expected 1..65535", op, a.n);
  if (int s = st_check_regs(op, a.a, a.b, a.c, a.d)) return s;
#if defined(OCT_AMD)
  // gfx942 runs the instructions (and has no model, so no exchange); gfx1100 has no MFMA.
  if (strcmp(ctx->arch, "gfx942") != 0)
    return oct_fail(OCTAVE_ERR_UNSUPPORTED_TIER,
                    "%s: %s has no MFMA (gfx942 runs the instructions; the emulator and CUDA builds run the model)", op,
                    ctx->arch);
  if (a.form == OCTAVE_MFMA_EXCHANGE)
    return oct_fail(OCTAVE_ERR_UNSUPPORTED_TIER,
                    "%s: form 2 (the model's exchange) exists on the emulator and CUDA builds only; %s runs the "
                    "instructions",
                    op, ctx->arch);
#endif
  OctMfmaSelftestParams p;
  p.a = a.a, p.b = a.b, p.c = a.c, p.d = a.d, p.form = a.form, p.n = a.n;
  OCT_LAUNCHED(op, "octave_mfma_selftest_kernel", oct_launch_mfma_selftest(p));
  return OCTAVE_OK;
}

extern "C" int32_t octave_blockdiv_selftest(int32_t block_size, const uint32_t* t, uint32_t* q, int64_t n) {
  const char* op = "blockdiv_selftest";
  if (block_size < 1) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: block_size = %d, expected >= 1", op, block_size);
  if (n < 0) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: n = %lld, expected >= 0", op, (long long)n);
  if (n > 0 && (!t || !q)) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: t or q is NULL with n = %lld", op, (long long)n);
  uint32_t mul;
  int32_t sh;
  oct_bs_magic(block_size, mul, sh);
  for (int64_t i = 0; i < n; i++) {
    if (t[i] >= 0x80000000u)
      return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: t[%lld] = %u, expected < 2^31 (a token position)", op,
                      (long long)i, t[i]);
    q[i] = oct_bs_div(t[i], mul, sh);
  }
  return OCTAVE_OK;
}

