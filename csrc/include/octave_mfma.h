// CDNA3 wave64 MFMA (Matrix Fused Multiply-Add) for the Octave kernels: on gfx942 the hardware
// instructions, on the CPU emulator and on NVIDIA GPUs a model of them, behind one set of
// functions, so the same kernel source runs on all three (docs/kernels.md, "The MFMA instructions
// and their model", has the facts, their sources and what the model assumes where they are silent).
//
//   OCT_AMD gfx942   __builtin_amdgcn_mfma_i32_16x16x32_i8, __builtin_amdgcn_mfma_f32_16x16x16f16 and
//                    __builtin_amdgcn_mfma_f32_16x16x16bf16_1k (v_mfma_i32_16x16x32_i8,
//                    v_mfma_f32_16x16x16_f16, v_mfma_f32_16x16x16_bf16), cbsz = abid = blgp = 0
//   OCT_EMU          the model; the 64 fibers of the hardware wave meet at each call
//                    (oct_emu_wave64_exchange)
//   OCT_NV           the model; a wave of 64 is two warps of 32 (threads 64w..64w+63 of the block),
//                    which exchange operands through shared memory between two named barriers of
//                    64 threads (OctMfmaExchange)
//   OCT_AMD gfx1100  nothing: RDNA3 has no MFMA (OCT_MFMA_BODY is 0)
//
// Every call is a collective of the 64 lanes of a wave: all 64 make it, with the same function.
// Lane l is oct_mfma_lane() = thread id mod 64; a workgroup of these kernels has a multiple of 64
// threads, at most OCT_MFMA_MAX_THREADS on NVIDIA.
//
// D = A·B + C, A 16×K (M×K), B K×16 (K×N), C and D 16×16 (M×N). The register layout (AMD CDNA3 ISA
// and the AMD Matrix Instruction Calculator; docs/kernels.md):
//   i8,  K = 32  A[m][k]: lane m + 16·(k/8), register (k mod 8)/4, byte k mod 4.
//                B[k][n]: lane n + 16·(k/8), register (k mod 8)/4, byte k mod 4.
//   f16, K = 16  A[m][k]: lane m + 16·(k/4), register (k mod 4)/2, half k mod 2.
//                B[k][n]: lane n + 16·(k/4), register (k mod 4)/2, half k mod 2.
//   bf16, K = 16 the f16 form's layout, element for element.
//   C/D (both)   D[m][n]: lane n + 16·(m/4), register m mod 4 (32-bit int32 or f32).
// So lane l holds column l mod 16 of D, rows 4·(l/16) .. 4·(l/16)+3; A's lane group l/16 holds the
// k range of that group (each of the 64 lanes holds distinct data: no replication as in wave32 WMMA).
//
// The model's arithmetic (the hardware's internal order and precision are not documented):
//   i32 ← i8   the exact sum in 64 bits of C and the 32 products of signed bytes; D is its low 32
//              bits (two's complement wrap; the instruction has no clamp modifier).
//   f32 ← f16  the 16 products are exact in float64; they are summed in float64 in k order 0..15,
//              C is added, and the sum is rounded once to float32 (nearest even). IEEE specials
//              (NaN, ±inf, inf·0) as float64 has them; f16 and f32 subnormals are kept.
//   f32 ← bf16 as f32 ← f16 with bf16 operands: each product of two bf16 values (8 significant
//              bits each) is exact in float64; the sum in k order, plus C, rounded once to float32.
#pragma once

#include "octave_arch.h"
#include "octave_mutant.h"

// Fragments: what one lane holds for one operand, as 32-bit registers.
struct OctMfmaI8 {  // 8 int8 values of A or B (i8 form): byte j of r[j >> 2] is k = 8·(lane/16) + j
  uint32_t r[2];
};
struct OctMfmaH16 {  // 4 f16 (bf16) values of A or B (f16, bf16 form): half j of r[j >> 1] is k = 4·(lane/16) + j
  uint32_t r[2];
};
struct OctMfmaI32 {  // C/D of the i8 form: r[i] = D[4·(lane/16) + i][lane mod 16]
  int32_t r[4];
};
struct OctMfmaF32 {  // C/D of the f16 and bf16 forms: r[i] = D[4·(lane/16) + i][lane mod 16]
  float r[4];
};

// OCT_MFMA_BODY: this compilation pass has MFMA, on the hardware (gfx942) or on the model
// (emulator, sm_90). gfx1100 device passes have none: kernels that use MFMA compile as stubs there.
#if OCT_DEVICE_BODY && (defined(OCT_EMU) || defined(OCT_NV) || defined(__gfx942__))
#define OCT_MFMA_BODY 1
#else
#define OCT_MFMA_BODY 0
#endif
// OCT_MFMA_MODEL: the model supplies MFMA (every build but the gfx942 hardware).
#if OCT_MFMA_BODY && !defined(OCT_AMD)
#define OCT_MFMA_MODEL 1
#else
#define OCT_MFMA_MODEL 0
#endif

// Threads of a workgroup that calls the NVIDIA model, at most (4 waves of 64: the shared buffer
// and the named barriers 8..11 are sized for them).
#define OCT_MFMA_MAX_THREADS 256

#if OCT_MFMA_BODY

// The lane of the calling thread in its wave of 64.
OCT_DEV int oct_mfma_lane() { return oct_tid() & 63; }

#if !OCT_MFMA_MODEL
// ---- gfx942: the instructions ---------------------------------------------------------------------
typedef int OctV4iM __attribute__((ext_vector_type(4)));
typedef float OctV4fM __attribute__((ext_vector_type(4)));
typedef _Float16 OctV4hM __attribute__((ext_vector_type(4)));
typedef short OctV4sM __attribute__((ext_vector_type(4)));  // bf16 operands (clang 19 takes them as i16)

// v_mfma_i32_16x16x32_i8
OCT_DEV OctMfmaI32 oct_mfma_i32_16x16x32_i8(const OctMfmaI8& a, const OctMfmaI8& b, const OctMfmaI32& c) {
  const OctV4iM d = __builtin_amdgcn_mfma_i32_16x16x32_i8(__builtin_bit_cast(long, a), __builtin_bit_cast(long, b),
                                                          __builtin_bit_cast(OctV4iM, c), 0, 0, 0);
  return __builtin_bit_cast(OctMfmaI32, d);
}
// v_mfma_f32_16x16x16_f16
OCT_DEV OctMfmaF32 oct_mfma_f32_16x16x16_f16(const OctMfmaH16& a, const OctMfmaH16& b, const OctMfmaF32& c) {
  const OctV4fM d = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(OctV4hM, a), __builtin_bit_cast(OctV4hM, b),
                                                          __builtin_bit_cast(OctV4fM, c), 0, 0, 0);
  return __builtin_bit_cast(OctMfmaF32, d);
}
// v_mfma_f32_16x16x16_bf16 (the builtin's name is CDNA2's v_mfma_f32_16x16x16bf16_1k)
OCT_DEV OctMfmaF32 oct_mfma_f32_16x16x16_bf16(const OctMfmaH16& a, const OctMfmaH16& b, const OctMfmaF32& c) {
  const OctV4fM d = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(OctV4sM, a), __builtin_bit_cast(OctV4sM, b),
                                                               __builtin_bit_cast(OctV4fM, c), 0, 0, 0);
  return __builtin_bit_cast(OctMfmaF32, d);
}

#else
// ---- the model ------------------------------------------------------------------------------------

// OctMfmaExchange<W>: the 64 lanes of the caller's wave meet and each gives W (1..4) 32-bit words;
// get(src, i) is word i of lane src. A collective: every lane of the wave constructs one, with the
// same W, at the same point, and (NVIDIA) calls done() once it has read what it needs, before the
// wave's next exchange.
//   emulator  oct_emu_wave64_exchange (one meeting; its buffers alternate, so done() is empty).
//   NVIDIA    the wave's two warps write their words to the wave's slice of a shared buffer
//             ([4 waves][64 lanes][4 words]), meet at named barrier 8 + wave (bar.sync with a
//             count of 64 threads: the two warps only, not the block), read, and meet there again
//             in done() so that no lane overwrites the slice while the other warp still reads it.
#if defined(OCT_NV)
// The NVIDIA exchange's shared buffer, one for every exchange of the workgroup: [4 waves][64][4].
OCT_DEV uint32_t* oct_mfma_xbuf() {
  __shared__ uint32_t x[OCT_MFMA_MAX_THREADS * 4];
  return x;
}
#endif

template <int W>
struct OctMfmaExchange {
  static_assert(W >= 1 && W <= 4, "1..4 words per lane");
#if defined(OCT_EMU)
  const uint32_t* all;
  OCT_DEV explicit OctMfmaExchange(const uint32_t* mine) : all(oct_emu_wave64_exchange(mine, W)) {}
  OCT_DEV uint32_t get(int src, int i) const { return all[src * W + i]; }
  OCT_DEV void done() const {}
#else
  uint32_t* all;
  OCT_DEV static void meet() { asm volatile("bar.sync %0, 64;\n" ::"r"(8 + (oct_tid() >> 6)) : "memory"); }
  OCT_DEV explicit OctMfmaExchange(const uint32_t* mine) : all(oct_mfma_xbuf() + (oct_tid() >> 6) * 64 * 4) {
    for (int i = 0; i < W; i++) all[oct_mfma_lane() * 4 + i] = mine[i];
    meet();
  }
  OCT_DEV uint32_t get(int src, int i) const { return all[src * 4 + i]; }
  OCT_DEV void done() const { meet(); }
#endif
};

// The row of D (and C) that register i of a lane of group g = lane/16 holds: 4g + i. Mutant
// OCT_MUT_MFMA_D_ROWS: the rows interleaved over the groups, 4i + g (the wave32 WMMA's habit of
// interleaving rows between lane halves, carried to the four groups of a wave64).
OCT_DEV int oct_mfma_row(int i, int g) { return OCT_MUTANT(OCT_MUT_MFMA_D_ROWS) ? 4 * i + g : 4 * g + i; }

// Byte j (0..3) of a register, as a signed value.
OCT_DEV int oct_mfma_s8(uint32_t reg, int j) { return (int)(int8_t)(uint8_t)(reg >> (8 * j)); }
OCT_DEV double oct_mfma_h2d(uint32_t reg, int half) { return (double)oct_f16_to_f32((uint16_t)(reg >> (16 * half))); }
OCT_DEV double oct_mfma_b2d(uint32_t reg, int half) { return (double)oct_bf16_to_f32((uint16_t)(reg >> (16 * half))); }

// i32 ← i8 (the model of v_mfma_i32_16x16x32_i8).
OCT_DEV OctMfmaI32 oct_mfma_i32_16x16x32_i8(const OctMfmaI8& a, const OctMfmaI8& b, const OctMfmaI32& c) {
  const uint32_t mine[4] = {a.r[0], a.r[1], b.r[0], b.r[1]};
  const OctMfmaExchange<4> x(mine);
  const int l = oct_mfma_lane(), n = l & 15, g = l >> 4;
  OctMfmaI32 d;
  for (int i = 0; i < 4; i++) {
    const int m = oct_mfma_row(i, g);
    int64_t s = c.r[i];
    for (int k = 0; k < 32; k++) {
      const int reg = (k & 7) >> 2, byte = k & 3, grp = 16 * (k >> 3);
      s += (int64_t)oct_mfma_s8(x.get(m + grp, reg), byte) * oct_mfma_s8(x.get(n + grp, 2 + reg), byte);
    }
    d.r[i] = (int32_t)(uint32_t)(uint64_t)s;
  }
  x.done();
  return d;
}

// f32 ← f16 (BF false: the model of v_mfma_f32_16x16x16_f16) or ← bf16 (BF true: of
// v_mfma_f32_16x16x16_bf16); the two differ only in the element type.
template <bool BF>
OCT_DEV OctMfmaF32 oct_mfma_f32_16x16x16_h(const OctMfmaH16& a, const OctMfmaH16& b, const OctMfmaF32& c) {
  const uint32_t mine[4] = {a.r[0], a.r[1], b.r[0], b.r[1]};
  const OctMfmaExchange<4> x(mine);
  const int l = oct_mfma_lane(), n = l & 15, g = l >> 4;
  OctMfmaF32 d;
  for (int i = 0; i < 4; i++) {
    const int m = oct_mfma_row(i, g);
    double s = 0.0;
    for (int k = 0; k < 16; k++) {
      const int reg = (k & 3) >> 1, half = k & 1, grp = 16 * (k >> 2);
      s += BF ? oct_mfma_b2d(x.get(m + grp, reg), half) * oct_mfma_b2d(x.get(n + grp, 2 + reg), half)
              : oct_mfma_h2d(x.get(m + grp, reg), half) * oct_mfma_h2d(x.get(n + grp, 2 + reg), half);
    }
    d.r[i] = (float)(s + (double)c.r[i]);
  }
  x.done();
  return d;
}
OCT_DEV OctMfmaF32 oct_mfma_f32_16x16x16_f16(const OctMfmaH16& a, const OctMfmaH16& b, const OctMfmaF32& c) {
  return oct_mfma_f32_16x16x16_h<false>(a, b, c);
}
OCT_DEV OctMfmaF32 oct_mfma_f32_16x16x16_bf16(const OctMfmaH16& a, const OctMfmaH16& b, const OctMfmaF32& c) {
  return oct_mfma_f32_16x16x16_h<true>(a, b, c);
}

#endif  // OCT_MFMA_MODEL

// Barrier and shared-memory fence for the 64 lanes of the calling wave (the MFMA kernels' wave):
// every lane's shared-memory writes before it are visible to the wave's lanes after it. All 64
// lanes must reach it. gfx942: the hardware wave is the 64 lanes (a wave barrier with fences, as
// oct_sync_wave); emulator: the wave's 64 fibers meet (a one-word exchange); NVIDIA: the wave's
// two warps meet at its named barrier (OctMfmaExchange::meet).
#if !OCT_MFMA_MODEL
OCT_DEV void oct_mfma_sync_wave() { oct_sync_wave(); }
#elif defined(OCT_EMU)
OCT_DEV void oct_mfma_sync_wave() {
  const uint32_t z = 0;
  (void)oct_emu_wave64_exchange(&z, 1);
}
#else
OCT_DEV void oct_mfma_sync_wave() { OctMfmaExchange<1>::meet(); }
#endif
#endif  // OCT_MFMA_BODY
