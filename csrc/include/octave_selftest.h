/* Test entry points of the Octave kernel libraries. NOT PART OF THE C ABI (octave_capi.h): no version,
 * no compatibility promise, may change or disappear with any commit. They exist for Octant's own Go
 * tests (grids/wmma_test.go) and nothing else; production code must not call them.
 *
 * octave_wmma_selftest runs one RDNA3 wave32 WMMA per "problem" on the library's device: on gfx1100
 * the v_wmma_* instruction, on the CPU emulator and CUDA builds the model of it that the WMMA decode
 * tier runs on (csrc/include/octave_wmma.h; docs/kernels.md, "The WMMA tier and its model"). Its
 * operands and results are raw per-lane registers, so that the test, not the library, encodes the
 * documented layout: lane l's A and B registers go in, lane l's D registers come out, and the test
 * compares them with a plain matrix product packed and unpacked by the layout AMD documents. A model
 * (or a kernel) with the wrong layout therefore fails the test instead of agreeing with itself.
 * octave_mma_selftest does the same for NVIDIA's mma.sync (grids/mma_test.go).
 */
#ifndef OCTAVE_SELFTEST_H
#define OCTAVE_SELFTEST_H

#include "octave_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The WMMA forms (clang builtins __builtin_amdgcn_wmma_*_w32). */
enum octave_wmma_form {
  OCTAVE_WMMA_F32_F16 = 0, /* v_wmma_f32_16x16x16_f16: D f32 = A f16 · B f16 + C f32 */
  OCTAVE_WMMA_F16_F16 = 1, /* v_wmma_f16_16x16x16_f16: D f16 = A f16 · B f16 + C f16, op_sel:[0,0,OPSEL] */
  OCTAVE_WMMA_I32_IU8 = 2, /* v_wmma_i32_16x16x16_iu8: D i32 = A iu8 · B iu8 + C i32, neg_lo:[SA,SB,0], clamp */
  OCTAVE_WMMA_F32_BF16 = 3 /* v_wmma_f32_16x16x16_bf16: D f32 = A bf16 · B bf16 + C f32 (no flags) */
};
/* Flags: OPSEL only with F16_F16; SIGNED_A, SIGNED_B, CLAMP only with I32_IU8. */
enum octave_wmma_flags {
  OCTAVE_WMMA_OPSEL = 1,    /* 16-bit C and D in the high half of each register (else the low half) */
  OCTAVE_WMMA_SIGNED_A = 2, /* A bytes are int8 (else uint8) */
  OCTAVE_WMMA_SIGNED_B = 4, /* B bytes are int8 (else uint8) */
  OCTAVE_WMMA_CLAMP = 8     /* saturate the int32 results (else wrap) */
};

typedef struct octave_wmma_selftest_args {
  uint64_t struct_size;
  const uint32_t* a; /* device, [n][32 lanes][8] A registers (I32_IU8 reads the first 4 of each 8), 4-byte aligned */
  const uint32_t* b; /* device, [n][32][8] B registers, the same way */
  const uint32_t* c; /* device, [n][32][8] C registers */
  uint32_t* d;       /* device, [n][32][8] D registers, written */
  int32_t form;      /* enum octave_wmma_form */
  int32_t flags;     /* enum octave_wmma_flags bits */
  int32_t n;         /* problems, 1..65535: one wave of 32 lanes each */
  int32_t reserved0; /* 0 */
} octave_wmma_selftest_args; /* 56 bytes */

/* Statuses as in octave_capi.h: INVALID_ARGUMENT (form, flags, n, NULL, reserved0, struct_size),
 * ALIGNMENT, UNSUPPORTED_TIER (a device without WMMA: gfx942), LAUNCH. */
int32_t octave_wmma_selftest(octave_ctx* ctx, const octave_wmma_selftest_args* a);

/* octave_mma_selftest runs one NVIDIA warp-level mma.sync per problem: on CUDA builds the PTX
 * instruction, on the CPU emulator the model of it that the sm_90 tensor-core tier will be tested
 * on (csrc/include/octave_mma.h). Raw per-lane registers, as for the WMMA self-test. */
enum octave_mma_form {
  OCTAVE_MMA_M16N8K16_F32_F16 = 0, /* mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 */
  OCTAVE_MMA_M16N8K32_S32_S8 = 1,  /* mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 */
  OCTAVE_MMA_LDMATRIX_X4 = 2,      /* ldmatrix.sync.aligned.m8n8.x4.shared.b16: a holds [32 lanes][4] words
                                      copied to shared memory as 32 rows of 16 bytes, b[lane][0] the row
                                      (0..31) whose address the lane gives, d the loaded registers; c unused */
  OCTAVE_MMA_WGMMA_M64N256K16 = 3  /* wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16, A from registers,
                                      B from shared memory (no swizzle), one warpgroup of 128 threads per
                                      problem: a [n][128][4] A registers, b [n][4 + 8192] words (LBO, SBO,
                                      the start's byte offset in the image, 0; then the 32-KB shared image),
                                      c and d [n][128][128] registers. sm_90a builds and the emulator only; the
                                      header is not checked: LBO, SBO and the start multiples of 16 that keep
                                      B inside the image are the caller's duty */
};

typedef struct octave_mma_selftest_args {
  uint64_t struct_size;
  const uint32_t* a; /* device, [n][32 lanes][4] A registers, 4-byte aligned */
  const uint32_t* b; /* device, [n][32][2] B registers */
  const uint32_t* c; /* device, [n][32][4] C registers (f32 or s32 bits) */
  uint32_t* d;       /* device, [n][32][4] D registers, written */
  int32_t form;      /* enum octave_mma_form */
  int32_t n;         /* problems, 1..65535: one warp of 32 lanes each */
} octave_mma_selftest_args; /* 48 bytes */

/* Statuses: INVALID_ARGUMENT (form, n, NULL, struct_size), ALIGNMENT,
 * UNSUPPORTED_TIER (a device without mma.sync: the HIP builds; form 3 on a CUDA build without sm_90a),
 * LAUNCH. */
int32_t octave_mma_selftest(octave_ctx* ctx, const octave_mma_selftest_args* a);

/* octave_mfma_selftest runs one CDNA3 wave64 MFMA per problem on a wave of 64 lanes: on gfx942 the
 * v_mfma instruction, on the CPU emulator and CUDA builds the model of it (csrc/include/octave_mfma.h;
 * docs/kernels.md, "The MFMA instructions and their model"). Raw per-lane registers, as for the WMMA
 * self-test: lane l of problem p reads a[p][l][0..1], b[p][l][0..1], c[p][l][0..3] and writes
 * d[p][l][0..3]. Form 2 runs the model's 64-lane operand exchange alone (on CUDA: the two warps of a
 * wave through shared memory and named barriers): d[p][l][0..1] = a[p][s][0..1] with s = b[p][l][0]
 * mod 64, then, in a second exchange, d[p][l][2..3] = c[p][s'][2..3] with s' = b[p][l][1] mod 64. */
enum octave_mfma_form {
  OCTAVE_MFMA_I32_16X16X32_I8 = 0,  /* v_mfma_i32_16x16x32_i8: D i32 = A i8 · B i8 + C i32 */
  OCTAVE_MFMA_F32_16X16X16_F16 = 1, /* v_mfma_f32_16x16x16_f16: D f32 = A f16 · B f16 + C f32 */
  OCTAVE_MFMA_EXCHANGE = 2,         /* the model's operand exchange (emulator and CUDA builds only) */
  OCTAVE_MFMA_F32_16X16X16_BF16 = 3 /* v_mfma_f32_16x16x16_bf16: D f32 = A bf16 · B bf16 + C f32 */
};

typedef struct octave_mfma_selftest_args {
  uint64_t struct_size;
  const uint32_t* a; /* device, [n][64 lanes][4] registers (forms 0, 1 and 3 read the first 2 of each 4), 4-byte aligned */
  const uint32_t* b; /* device, [n][64][4] registers, the same way */
  const uint32_t* c; /* device, [n][64][4] C registers (int32 or f32 bits) */
  uint32_t* d;       /* device, [n][64][4] D registers, written */
  int32_t form;      /* enum octave_mfma_form */
  int32_t n;         /* problems, 1..65535: one wave of 64 lanes each, four waves a workgroup */
} octave_mfma_selftest_args; /* 48 bytes */

/* Statuses: INVALID_ARGUMENT (form, n, NULL, struct_size), ALIGNMENT, UNSUPPORTED_TIER (a device
 * without MFMA: gfx1100; form 2 on gfx942, which runs the instructions, not the model), LAUNCH. */
int32_t octave_mfma_selftest(octave_ctx* ctx, const octave_mfma_selftest_args* a);

/* octave_blockdiv_selftest computes q[i] = t[i] / block_size for i < n the way the mma decode and
 * prefill do (oct_bs_magic on the host, then oct_bs_div: a multiply and a shift;
 * csrc/octave_params.h), on the host, for grids/blockdiv_test.go. Needs no context.
 * Statuses: INVALID_ARGUMENT (block_size < 1, n < 0, t or q NULL with n > 0, some t[i] >= 2^31). */
int32_t octave_blockdiv_selftest(int32_t block_size, const uint32_t* t, uint32_t* q, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* OCTAVE_SELFTEST_H */
