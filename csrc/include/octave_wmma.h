// RDNA3 wave32 WMMA (Wave Matrix Multiply Accumulate) for the Octave kernels: on gfx1100 the
// hardware instructions, on every other build a model of them, behind one set of functions, so the
// very same kernel source — lane indexing, fragment packing and all — runs on the gfx1100 hardware,
// on the CPU emulator and on NVIDIA GPUs (docs/kernels.md, "The WMMA tier and its model", has the
// facts with their sources and what the model assumes where the documents are silent).
//
//   OCT_AMD gfx1100  __builtin_amdgcn_wmma_{f32,f16}_16x16x16_f16_w32,
//                    __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32 and
//                    __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32 (v_wmma_* instructions)
//   OCT_EMU          the model; the wave's 32 fibers meet at each call (oct_emu_wave_exchange), as
//                    they do at a shuffle
//   OCT_NV           the model; a warp is 32 lanes like an RDNA3 wave32, and each lane gathers the
//                    A rows it needs with __shfl_sync
//   OCT_AMD gfx942   nothing: CDNA3 has no WMMA (OCT_WMMA_BODY is 0; its kernels are stubs and the
//                    host does not offer the tier there)
//
// D = A·B + C with A 16×16 (M×K), B 16×16 (K×N), C and D 16×16 (M×N). The register layout (AMD,
// RDNA3 ISA and the AMD Matrix Instruction Calculator):
//   A   lane l supplies row l mod 16 as 16 elements; element k: f16 or bf16 in half k mod 2 (bits
//       16·(k mod 2)..+15) of register k/2, int8 in byte k mod 4 of register k/4. Lanes 16–31
//       must hold the same values as lanes 0–15 (the wave32 replication).
//   B   lane l supplies column l mod 16, elements k like A; lanes 16–31 replicate lanes 0–15.
//   C/D 32-bit results: register v of lane l holds D[2v + l/16][l mod 16] (rows interleaved
//       between the two 16-lane halves, not rows 0–7 in lanes 0–15). 16-bit results (the f16
//       form): the same element in half OPSEL of register v; the other half of each register is
//       C's, passed through.
//
// The model's arithmetic (the hardware's internal order and precision are not documented):
//   f32 ← f16  the 16 products A[m][k]·B[k][n] are exact in float64 (and in float32); they are
//              summed in float64 in k order 0..15, C[m][n] is added, and the sum is rounded once
//              to float32 (nearest even). IEEE specials (NaN, ±inf, inf·0) as float64 has them.
//   f16 ← f16  the same sum, with C an f16 value, rounded once to f16 (nearest even, overflow to
//              ±inf).
//   f32 ← bf16 as f32 ← f16 with bf16 operands: each product of two bf16 values (8 significant
//              bits each) is exact in float64; the sum in k order, plus C, rounded once to float32.
//   i32 ← iu8  the exact sum in 64 bits of the 16 products (A and B bytes signed or unsigned as
//              the flags say) and C; CLAMP saturates it to int32, otherwise its low 32 bits.
// Operands that break the replication (lanes 16–31 of A or B differ from lanes 0–15) are a defect
// of the calling kernel, whose result on the hardware is not documented: the model poisons every
// D element of the call (f32 NaN 0x7FC00000, f16 NaN 0x7E00 in the selected half, i32 INT32_MIN).
#pragma once

#include "octave_arch.h"
#include "octave_mutant.h"

// Fragments: what one lane holds for one operand, as 32-bit registers.
struct OctWmmaH16 {  // 16 f16 or bf16 values (A row, B column; C/D of the f16 form): element k in half k & 1 of r[k >> 1]
  uint32_t r[8];
};
struct OctWmmaI8 {  // 16 int8/uint8 values (A row, B column of the iu8 form): element k in byte k & 3 of r[k >> 2]
  uint32_t r[4];
};
struct OctWmmaF32 {  // C/D of the f32 form: r[v] = D[2v + lane/16][lane % 16]
  float r[8];
};
struct OctWmmaI32 {  // C/D of the iu8 form: r[v] = D[2v + lane/16][lane % 16]
  int32_t r[8];
};

// OCT_WMMA_BODY: this compilation pass has WMMA, on the hardware (gfx1100) or on the model
// (emulator, sm_90). gfx942 device passes have none: kernels that use WMMA compile as stubs there.
#if OCT_DEVICE_BODY && (defined(OCT_EMU) || defined(OCT_NV) || defined(__gfx1100__))
#define OCT_WMMA_BODY 1
#else
#define OCT_WMMA_BODY 0
#endif
// OCT_WMMA_MODEL: the model supplies WMMA (every build but the gfx1100 hardware).
#if OCT_WMMA_BODY && !defined(OCT_AMD)
#define OCT_WMMA_MODEL 1
#else
#define OCT_WMMA_MODEL 0
#endif

#if OCT_WMMA_BODY

#if !OCT_WMMA_MODEL
// ---- gfx1100: the instructions --------------------------------------------------------------------
typedef _Float16 OctV16h __attribute__((ext_vector_type(16)));
typedef short OctV16s __attribute__((ext_vector_type(16)));  // bf16 operands (clang 19 takes them as i16)
typedef float OctV8f __attribute__((ext_vector_type(8)));
typedef int OctV4i __attribute__((ext_vector_type(4)));
typedef int OctV8i __attribute__((ext_vector_type(8)));

// v_wmma_f32_16x16x16_f16
OCT_DEV OctWmmaF32 oct_wmma_f32_16x16x16_f16(const OctWmmaH16& a, const OctWmmaH16& b, const OctWmmaF32& c) {
  const OctV8f d = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(
      __builtin_bit_cast(OctV16h, a), __builtin_bit_cast(OctV16h, b), __builtin_bit_cast(OctV8f, c));
  return __builtin_bit_cast(OctWmmaF32, d);
}
// v_wmma_f32_16x16x16_bf16
OCT_DEV OctWmmaF32 oct_wmma_f32_16x16x16_bf16(const OctWmmaH16& a, const OctWmmaH16& b, const OctWmmaF32& c) {
  const OctV8f d = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(
      __builtin_bit_cast(OctV16s, a), __builtin_bit_cast(OctV16s, b), __builtin_bit_cast(OctV8f, c));
  return __builtin_bit_cast(OctWmmaF32, d);
}
// v_wmma_f16_16x16x16_f16 with op_sel:[0,0,OPSEL]
template <bool OPSEL>
OCT_DEV OctWmmaH16 oct_wmma_f16_16x16x16_f16(const OctWmmaH16& a, const OctWmmaH16& b, const OctWmmaH16& c) {
  const OctV16h d = __builtin_amdgcn_wmma_f16_16x16x16_f16_w32(
      __builtin_bit_cast(OctV16h, a), __builtin_bit_cast(OctV16h, b), __builtin_bit_cast(OctV16h, c), OPSEL);
  return __builtin_bit_cast(OctWmmaH16, d);
}
// v_wmma_i32_16x16x16_iu8 with neg_lo:[SA,SB,0] (A, B signed) and clamp
template <bool SA, bool SB, bool CLAMP>
OCT_DEV OctWmmaI32 oct_wmma_i32_16x16x16_iu8(const OctWmmaI8& a, const OctWmmaI8& b, const OctWmmaI32& c) {
  const OctV8i d = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(SA, __builtin_bit_cast(OctV4i, a), SB,
                                                              __builtin_bit_cast(OctV4i, b),
                                                              __builtin_bit_cast(OctV8i, c), CLAMP);
  return __builtin_bit_cast(OctWmmaI32, d);
}

#else
// ---- the model ------------------------------------------------------------------------------------

// The A rows and B columns of the wave, as the model reads them. W: registers per operand (8 for
// f16, 4 for iu8).
template <int W>
struct OctWmmaWave {
#if defined(OCT_EMU)
  const uint32_t* all;  // [32 lanes][2W]: A registers, then B registers
  OCT_DEV OctWmmaWave(const uint32_t* a, const uint32_t* b) {
    uint32_t mine[2 * W];
    for (int i = 0; i < W; i++) mine[i] = a[i], mine[W + i] = b[i];
    all = oct_emu_wave_exchange(mine, 2 * W);
  }
  // Register i of lane src's A (a collective call on NVIDIA: every lane of the warp makes it).
  OCT_DEV uint32_t a(int src, int i) const { return all[src * 2 * W + i]; }
  // Every lane's A and B equal those of lane ^ 16 (the same answer in every lane).
  OCT_DEV bool replicated() const {
    for (int l = 0; l < 16; l++)
      for (int i = 0; i < 2 * W; i++)
        if (all[l * 2 * W + i] != all[(l + 16) * 2 * W + i]) return false;
    return true;
  }
#else
  const uint32_t* a_;
  bool rep;
  OCT_DEV OctWmmaWave(const uint32_t* a, const uint32_t* b) : a_(a) {
    bool same = true;
    for (int i = 0; i < W; i++) {
      same = same && __shfl_xor_sync(0xffffffffu, a[i], 16, 32) == a[i];
      same = same && __shfl_xor_sync(0xffffffffu, b[i], 16, 32) == b[i];
    }
    rep = !__any_sync(0xffffffffu, !same);
  }
  OCT_DEV uint32_t a(int src, int i) const { return __shfl_sync(0xffffffffu, a_[i], src, 32); }
  OCT_DEV bool replicated() const { return rep; }
#endif
};

// The row of D (and C) that register v of the calling lane holds. Mutant OCT_MUT_WMMA_RESULT_HALVES:
// the classic mistaken layout, rows 0–7 in lanes 0–15 and rows 8–15 in lanes 16–31.
OCT_DEV int oct_wmma_row(int v, int lane) {
  return OCT_MUTANT(OCT_MUT_WMMA_RESULT_HALVES) ? v + 8 * (lane >> 4) : 2 * v + (lane >> 4);
}

OCT_DEV double oct_wmma_h2d(uint32_t reg, int half) { return (double)oct_f16_to_f32((uint16_t)(reg >> (16 * half))); }
OCT_DEV double oct_wmma_b2d(uint32_t reg, int half) { return (double)oct_bf16_to_f32((uint16_t)(reg >> (16 * half))); }

// Σ_k A[m][k]·B[k][n] in float64, k in order 0..15 (m = row, B from the calling lane); the 16-bit
// elements are f16 (BF = false) or bf16 (BF = true).
template <int W, bool BF = false>
OCT_DEV double oct_wmma_dot_f16(const OctWmmaWave<W>& wv, int m, const OctWmmaH16& b) {
  uint32_t ar[8];
  for (int i = 0; i < 8; i++) ar[i] = wv.a(m, i);  // NVIDIA: every lane gathers in step
  double s = 0.0;
  for (int k = 0; k < 16; k++)
    s += BF ? oct_wmma_b2d(ar[k >> 1], k & 1) * oct_wmma_b2d(b.r[k >> 1], k & 1)
            : oct_wmma_h2d(ar[k >> 1], k & 1) * oct_wmma_h2d(b.r[k >> 1], k & 1);
  return s;
}

// float64 → f16 bits, round to nearest even, overflow to ±inf, gradual underflow (integer
// arithmetic, the same on every backend).
OCT_DEV uint16_t oct_wmma_d2h(double x) {
#if defined(OCT_NV)
  const uint64_t bits = (uint64_t)__double_as_longlong(x);
#else
  const uint64_t bits = __builtin_bit_cast(uint64_t, x);
#endif
  const uint16_t sign = (uint16_t)((bits >> 48) & 0x8000u);
  const uint64_t ab = bits & 0x7FFFFFFFFFFFFFFFull;
  if (ab > 0x7FF0000000000000ull) return sign | 0x7E00u;   // NaN
  if (ab == 0x7FF0000000000000ull) return sign | 0x7C00u;  // ±inf
  const int e = (int)(ab >> 52);
  if (e == 0) return sign;  // float64 subnormal: far below half the smallest f16 subnormal
  const uint64_t m = (ab & 0xFFFFFFFFFFFFFull) | (1ull << 52);  // value = m·2^(e−1075)
  const int E = e - 1008;                                       // biased f16 exponent if normal
  const int shift = E >= 1 ? 42 : 43 - E;                       // bits of m below the f16 ulp
  if (shift > 53) return sign;                                  // below half the smallest subnormal
  uint64_t q = m >> shift;
  const uint64_t rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  const uint64_t h = E >= 1 ? ((uint64_t)(E - 1) << 10) + q : q;  // q = 2048 carries into the exponent
  return h >= 0x7C00u ? (uint16_t)(sign | 0x7C00u) : (uint16_t)(sign | h);
}

// f32 ← f16 (the model of v_wmma_f32_16x16x16_f16).
OCT_DEV OctWmmaF32 oct_wmma_f32_16x16x16_f16(const OctWmmaH16& a, const OctWmmaH16& b, const OctWmmaF32& c) {
  const int lane = oct_lane();
  const OctWmmaWave<8> wv(a.r, b.r);
  OctWmmaF32 d;
  for (int v = 0; v < 8; v++) d.r[v] = (float)(oct_wmma_dot_f16(wv, oct_wmma_row(v, lane), b) + (double)c.r[v]);
  if (!wv.replicated())
    for (int v = 0; v < 8; v++) d.r[v] = oct_u2f(0x7FC00000u);
  return d;
}

// f32 ← bf16 (the model of v_wmma_f32_16x16x16_bf16).
OCT_DEV OctWmmaF32 oct_wmma_f32_16x16x16_bf16(const OctWmmaH16& a, const OctWmmaH16& b, const OctWmmaF32& c) {
  const int lane = oct_lane();
  const OctWmmaWave<8> wv(a.r, b.r);
  OctWmmaF32 d;
  for (int v = 0; v < 8; v++)
    d.r[v] = (float)(oct_wmma_dot_f16<8, true>(wv, oct_wmma_row(v, lane), b) + (double)c.r[v]);
  if (!wv.replicated())
    for (int v = 0; v < 8; v++) d.r[v] = oct_u2f(0x7FC00000u);
  return d;
}

// f16 ← f16 (the model of v_wmma_f16_16x16x16_f16, op_sel:[0,0,OPSEL]). Mutant
// OCT_MUT_WMMA_OPSEL_INVERTED: reads and writes the half OPSEL does not select.
template <bool OPSEL>
OCT_DEV OctWmmaH16 oct_wmma_f16_16x16x16_f16(const OctWmmaH16& a, const OctWmmaH16& b, const OctWmmaH16& c) {
  const int lane = oct_lane();
  const int sh = 16 * (OPSEL != OCT_MUTANT(OCT_MUT_WMMA_OPSEL_INVERTED));
  const OctWmmaWave<8> wv(a.r, b.r);
  const bool rep = wv.replicated();
  OctWmmaH16 d;
  for (int v = 0; v < 8; v++) {
    const double s = oct_wmma_dot_f16(wv, oct_wmma_row(v, lane), b) + oct_wmma_h2d(c.r[v], sh / 16);
    const uint32_t h = rep ? oct_wmma_d2h(s) : 0x7E00u;
    d.r[v] = (c.r[v] & ~(0xFFFFu << sh)) | (h << sh);
  }
  return d;
}

// i32 ← iu8 (the model of v_wmma_i32_16x16x16_iu8, neg_lo:[SA,SB,0] clamp:CLAMP). Mutant
// OCT_MUT_WMMA_IU8_SIGN_SWAP: A's signedness flag read for B and B's for A.
template <bool SA, bool SB, bool CLAMP>
OCT_DEV OctWmmaI32 oct_wmma_i32_16x16x16_iu8(const OctWmmaI8& a, const OctWmmaI8& b, const OctWmmaI32& c) {
  const bool swap = OCT_MUTANT(OCT_MUT_WMMA_IU8_SIGN_SWAP);
  const bool sa = swap ? SB : SA, sb = swap ? SA : SB;
  const int lane = oct_lane();
  const OctWmmaWave<4> wv(a.r, b.r);
  OctWmmaI32 d;
  for (int v = 0; v < 8; v++) {
    const int m = oct_wmma_row(v, lane);
    uint32_t ar[4];
    for (int i = 0; i < 4; i++) ar[i] = wv.a(m, i);
    int64_t s = c.r[v];
    for (int k = 0; k < 16; k++) {
      const uint32_t x = (ar[k >> 2] >> (8 * (k & 3))) & 0xFFu, y = (b.r[k >> 2] >> (8 * (k & 3))) & 0xFFu;
      s += (int64_t)(sa ? (int)(int8_t)x : (int)x) * (int64_t)(sb ? (int)(int8_t)y : (int)y);
    }
    if (CLAMP) s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
    d.r[v] = (int32_t)(uint32_t)(uint64_t)s;
  }
  if (!wv.replicated())
    for (int v = 0; v < 8; v++) d.r[v] = INT32_MIN;
  return d;
}

#endif  // OCT_WMMA_MODEL
#endif  // OCT_WMMA_BODY
