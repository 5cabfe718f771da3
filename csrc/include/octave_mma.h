// NVIDIA warp-level MMA (mma.sync, sm_80 and later) for the sm_90 tensor-core tier: on
// NVIDIA builds the PTX instructions, on the CPU emulator a model of them, behind one set of
// functions, so that the same kernel source — lane indexing, fragment packing and all — runs on the
// H200 and in `make test` (docs/kernels.md, "The mma model"; the WMMA tier's model, octave_wmma.h,
// is the pattern).
//
//   OCT_NV    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32,
//             mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 and
//             ldmatrix.sync.aligned.m8n8.x4.shared.b16 (inline PTX)
//   OCT_EMU   the model; the warp's 32 fibers meet at each call (oct_emu_wave_exchange)
//   OCT_AMD   nothing (OCT_MMA_BODY is 0)
//
// D = A·B + C, A M×K row-major, B K×N column-major, C and D M×N, M = 16, N = 8. The register
// layout (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" and "… for
// mma.m16n8k32"), with g = lane >> 2 (groupID) and t = lane & 3 (threadID_in_group):
//   m16n8k16 .f16   A: 4 registers, element i (0..7) in half i & 1 of r[i >> 1]:
//                      row g + 8·((i >> 1) & 1), column 2t + (i & 1) + 8·(i >> 2)
//                   B: 2 registers, element i (0..3) in half i & 1 of r[i >> 1]:
//                      row (k) 2t + (i & 1) + 8·(i >> 1), column (n) g
//   m16n8k32 .s8    A: 4 registers, element i (0..15) in byte i & 3 of r[i >> 2]:
//                      row g + 8·((i >> 2) & 1), column 4t + (i & 3) + 16·(i >> 3)
//                   B: 2 registers, element i (0..7) in byte i & 3 of r[i >> 2]:
//                      row (k) 4t + (i & 3) + 16·(i >> 2), column (n) g
//   C/D (.f32, .s32) 4 registers, element i (0..3): row g + 8·(i >> 1), column 2t + (i & 1)
//   ldmatrix .x4    four 8×8 matrices of 16-bit elements, each row 16 contiguous bytes of shared
//                   memory (16-byte aligned) whose address lane 8j + r gives for row r of matrix j;
//                   register j of lane l is bytes 4t..4t+3 of row g of matrix j (PTX ISA, "Warp-level
//                   matrix load instruction: ldmatrix"): exactly a B fragment of m16n8k16 when the
//                   rows are the n columns and the k elements lie along each row.
//
// The model's arithmetic (the hardware's internal order and precision are not documented):
//   f32 ← f16  the K products A[m][k]·B[k][n] are exact in float64; they are summed in float64 in
//              k order, C[m][n] is added, and the sum is rounded once to float32 (nearest even).
//   s32 ← s8   the exact sum in 64 bits of the K products and C; its low 32 bits (the PTX form
//              without .satfinite wraps).
#pragma once

#include "octave_arch.h"
#include "octave_mutant.h"

struct OctMmaA16 {  // m16n8k16 A, f16: 8 elements
  uint32_t r[4];
};
struct OctMmaB16 {  // m16n8k16 B, f16: 4 elements
  uint32_t r[2];
};
struct OctMmaA8 {  // m16n8k32 A, s8: 16 elements
  uint32_t r[4];
};
struct OctMmaB8 {  // m16n8k32 B, s8: 8 elements
  uint32_t r[2];
};
struct OctMmaF32 {  // C/D f32: 4 elements
  float r[4];
};
struct OctMmaI32 {  // C/D s32: 4 elements
  int32_t r[4];
};

// OCT_MMA_BODY: this compilation pass has mma.sync, on the hardware (NVIDIA) or on the model (the
// emulator). AMD device passes have none.
#if OCT_DEVICE_BODY && (defined(OCT_EMU) || defined(OCT_NV))
#define OCT_MMA_BODY 1
#else
#define OCT_MMA_BODY 0
#endif

// The (row, column) of C/D element i (0..3) of a lane.
OCT_DEV int oct_mma_acc_row(int i, int lane) { return (lane >> 2) + 8 * (i >> 1); }
OCT_DEV int oct_mma_acc_col(int i, int lane) { return 2 * (lane & 3) + (i & 1); }

// Mutant OCT_MUT_MMA_ACC_TRANSPOSED: a kernel that reads the accumulator's element pairs as rows
// (element i at row g + 8·(i & 1), column 2t + (i >> 1)) sees elements 1 and 2 swapped. Applied to
// the instruction's result and to the model's alike, so the mutant is one on every build.
template <typename D>
OCT_DEV D oct_mma_mutate_acc(D d) {
  if (OCT_MUTANT(OCT_MUT_MMA_ACC_TRANSPOSED)) {
    const auto x = d.r[1];
    d.r[1] = d.r[2], d.r[2] = x;
  }
  return d;
}

#if OCT_MMA_BODY
// Two biased codebook bytes as fp16 operands: x holds the halves 0x64bb (1024 + b, b = c + 128 the
// biased byte, exact in fp16); the result holds c = b - 128 in each half, exactly (sub.f16x2 of
// 1152; the difference is a small integer, so no rounding happens).
#if defined(OCT_NV)
OCT_DEV uint32_t oct_h2_unbias(uint32_t x) {
  uint32_t r;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(0x64806480u));
  return r;
}
#else
OCT_DEV uint32_t oct_h2_unbias(uint32_t x) {
  const float lo = oct_f16_to_f32((uint16_t)x) - 1152.0f, hi = oct_f16_to_f32((uint16_t)(x >> 16)) - 1152.0f;
  return (uint32_t)oct_f32_to_f16(lo) | ((uint32_t)oct_f32_to_f16(hi) << 16);
}
#endif

// Biased codebook word w (bytes b0..b3) as two fp16 operand registers: lo = (c0, c1), hi = (c2, c3).
OCT_DEV void oct_h4_codes(uint32_t w, uint32_t& lo, uint32_t& hi) {
  lo = oct_h2_unbias(oct_perm8n(w, 0x64646464u, 0x4140u));
  hi = oct_h2_unbias(oct_perm8n(w, 0x64646464u, 0x4342u));
}

// A word of two tokens' interleaved codebook bytes (a0, a1, b0, b1: oct_cb4n of a pair of tokens'
// code bytes) as two fp16 operand registers: lo = (a0, b0), hi = (a1, b1).
OCT_DEV void oct_h4_pairs(uint32_t w, uint32_t& lo, uint32_t& hi) {
  lo = oct_h2_unbias(oct_perm8n(w, 0x64646464u, 0x4240u));
  hi = oct_h2_unbias(oct_perm8n(w, 0x64646464u, 0x4341u));
}

// Two tokens' codebook words a and b (4 dims each) interleaved by dim: half hb (0, 1) holds dims
// 2hb and 2hb + 1 as (a, b, a, b) bytes, the layout of a P·V operand's token pairs.
OCT_DEV uint32_t oct_pair_tokens(uint32_t a, uint32_t b, int hb) { return oct_perm8n(a, b, hb ? 0x7362u : 0x5140u); }

#if defined(OCT_NV)
// ---- NVIDIA: the instructions ------------------------------------------------------------------
// A shared-memory address for ldmatrix: the shared window's 32-bit address (one conversion, then
// plain offsets that the compiler folds into the instruction).
typedef uint32_t OctSmemAddr;
OCT_DEV OctSmemAddr oct_smem_addr(const void* p) { return oct_smem_u32(p); }
OCT_DEV void oct_ldsm_x4(OctSmemAddr row, uint32_t r[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row)
               : "memory");
}
OCT_DEV OctMmaF32 oct_mma_m16n8k16_f32_f16(const OctMmaA16& a, const OctMmaB16& b, const OctMmaF32& c) {
  OctMmaF32 d;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};"
      : "=f"(d.r[0]), "=f"(d.r[1]), "=f"(d.r[2]), "=f"(d.r[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]), "f"(c.r[0]), "f"(c.r[1]),
        "f"(c.r[2]), "f"(c.r[3]));
  return oct_mma_mutate_acc(d);
}
OCT_DEV OctMmaI32 oct_mma_m16n8k32_s32_s8(const OctMmaA8& a, const OctMmaB8& b, const OctMmaI32& c) {
  OctMmaI32 d;
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};"
      : "=r"(d.r[0]), "=r"(d.r[1]), "=r"(d.r[2]), "=r"(d.r[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]), "r"(c.r[0]), "r"(c.r[1]),
        "r"(c.r[2]), "r"(c.r[3]));
  return oct_mma_mutate_acc(d);
}
#else
// ---- the emulator: the model -------------------------------------------------------------------

// The warp's A and B registers (4 and 2 per lane), as every lane sees them after the exchange.
struct OctMmaWarp {
  const uint32_t* all;  // [32 lanes][6]: A registers, then B registers
  OCT_DEV OctMmaWarp(const uint32_t* a, const uint32_t* b) {
    uint32_t mine[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
    all = oct_emu_wave_exchange(mine, 6);
  }
  OCT_DEV uint32_t a(int lane, int reg) const { return all[lane * 6 + reg]; }
  OCT_DEV uint32_t b(int lane, int reg) const { return all[lane * 6 + 4 + reg]; }
};

// A[m][k] and B[k][n] of the f16 form, as float64, found through the documented layout.
OCT_DEV double oct_mma_a16(const OctMmaWarp& w, int m, int k) {
  const int t = (k & 7) >> 1, i = (k & 1) | ((m >> 3) << 1) | ((k >> 3) << 2);
  const uint32_t reg = w.a(4 * (m & 7) + t, i >> 1);
  return (double)oct_f16_to_f32((uint16_t)(reg >> (16 * (i & 1))));
}
OCT_DEV double oct_mma_b16(const OctMmaWarp& w, int k, int n) {
  const int t = (k & 7) >> 1, i = (k & 1) | ((k >> 3) << 1);
  const uint32_t reg = w.b(4 * n + t, i >> 1);
  return (double)oct_f16_to_f32((uint16_t)(reg >> (16 * (i & 1))));
}
// A[m][k] and B[k][n] of the s8 form.
OCT_DEV int oct_mma_a8(const OctMmaWarp& w, int m, int k) {
  const int t = (k & 15) >> 2, i = (k & 3) | ((m >> 3) << 2) | ((k >> 4) << 3);
  return (int)(int8_t)(w.a(4 * (m & 7) + t, i >> 2) >> (8 * (i & 3)));
}
OCT_DEV int oct_mma_b8(const OctMmaWarp& w, int k, int n) {
  const int t = (k & 15) >> 2, i = (k & 3) | ((k >> 4) << 2);
  return (int)(int8_t)(w.b(4 * n + t, i >> 2) >> (8 * (i & 3)));
}

// The model of ldmatrix.sync.aligned.m8n8.x4.shared.b16: the lanes exchange their row addresses;
// a row address that is not 16-byte aligned (undefined on the hardware) stops the emulator (a
// programming error in the kernel, as a bad oct_emu_wave_exchange is).
typedef uintptr_t OctSmemAddr;
OCT_DEV OctSmemAddr oct_smem_addr(const void* p) { return (uintptr_t)p; }
OCT_DEV void oct_ldsm_x4(OctSmemAddr row, uint32_t r[4]) {
  const uint64_t a = (uint64_t)row;
  if (a & 15) __builtin_trap();
  const uint32_t mine[2] = {(uint32_t)a, (uint32_t)(a >> 32)};
  const uint32_t* all = oct_emu_wave_exchange(mine, 2);
  const int lane = oct_lane();
  for (int j = 0; j < 4; j++) {
    const int src = 8 * j + (lane >> 2);
    const uint8_t* p = (const uint8_t*)(uintptr_t)((uint64_t)all[2 * src] | ((uint64_t)all[2 * src + 1] << 32));
    __builtin_memcpy(&r[j], p + 4 * (lane & 3), 4);
  }
}

// f32 ← f16 (the model of mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32).
OCT_DEV OctMmaF32 oct_mma_m16n8k16_f32_f16(const OctMmaA16& a, const OctMmaB16& b, const OctMmaF32& c) {
  const int lane = oct_lane();
  const OctMmaWarp w(a.r, b.r);
  OctMmaF32 d;
  for (int i = 0; i < 4; i++) {
    const int m = oct_mma_acc_row(i, lane), n = oct_mma_acc_col(i, lane);
    double s = 0.0;
    for (int k = 0; k < 16; k++) s += oct_mma_a16(w, m, k) * oct_mma_b16(w, k, n);
    d.r[i] = (float)(s + (double)c.r[i]);
  }
  return oct_mma_mutate_acc(d);
}

// s32 ← s8 (the model of mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32).
OCT_DEV OctMmaI32 oct_mma_m16n8k32_s32_s8(const OctMmaA8& a, const OctMmaB8& b, const OctMmaI32& c) {
  const int lane = oct_lane();
  const OctMmaWarp w(a.r, b.r);
  OctMmaI32 d;
  for (int i = 0; i < 4; i++) {
    const int m = oct_mma_acc_row(i, lane), n = oct_mma_acc_col(i, lane);
    int64_t s = c.r[i];
    for (int k = 0; k < 32; k++) s += (int64_t)oct_mma_a8(w, m, k) * oct_mma_b8(w, k, n);
    d.r[i] = (int32_t)(uint32_t)(uint64_t)s;
  }
  return oct_mma_mutate_acc(d);
}
#endif  // OCT_NV
#endif  // OCT_MMA_BODY
