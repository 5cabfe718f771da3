// Per-lane building blocks shared by the kernels: a logical wave of 32 lanes holds one 256-dim row,
// lane l owning dims 8l..8l+7 (the upstream launch shape).
#pragma once

#include "octave_format.h"

#if OCT_DEVICE_BODY

struct alignas(16) OctU4 {
  uint32_t x, y, z, w;
};
struct alignas(8) OctU2 {
  uint32_t x, y;
};

// ---- activations: 8 consecutive fp16/bf16 elements <-> float ------------------------------------
OCT_DEV float oct_h2f(uint16_t h, int dtype) {
  return dtype == 2 ? oct_bf16_to_f32(h) : oct_f16_to_f32(h);
}
OCT_DEV uint16_t oct_f2h(float f, int dtype) {
  return dtype == 2 ? oct_f32_to_bf16(f) : oct_f32_to_f16(f);
}
OCT_DEV void oct_load8(const uint16_t* p, int dtype, float v[8]) {
  uint16_t h[8];
  if (((uintptr_t)p & 15) == 0) {
    OctU4 u = *(const OctU4*)p;
    uint32_t w[4] = {u.x, u.y, u.z, u.w};
    for (int i = 0; i < 4; i++) h[2 * i] = (uint16_t)w[i], h[2 * i + 1] = (uint16_t)(w[i] >> 16);
  } else {
    for (int i = 0; i < 8; i++) h[i] = p[i];
  }
  for (int i = 0; i < 8; i++) v[i] = oct_h2f(h[i], dtype);
}
OCT_DEV void oct_store8(uint16_t* p, int dtype, const float v[8]) {
  uint16_t h[8];
  for (int i = 0; i < 8; i++) h[i] = oct_f2h(v[i], dtype);
  if (((uintptr_t)p & 15) == 0) {
    OctU4 u;
    u.x = h[0] | ((uint32_t)h[1] << 16), u.y = h[2] | ((uint32_t)h[3] << 16);
    u.z = h[4] | ((uint32_t)h[5] << 16), u.w = h[6] | ((uint32_t)h[7] << 16);
    *(OctU4*)p = u;
  } else {
    for (int i = 0; i < 8; i++) p[i] = h[i];
  }
}

// 8 consecutive 16-bit elements as 4 raw words (element 2i in the low half of word i): one 16-byte
// load when aligned, else eight 2-byte loads (prefill's k and v).
OCT_DEV void oct_load8_raw(const uint16_t* p, uint32_t u[4]) {
  if (((uintptr_t)p & 15) == 0) {
    const OctU4 a = *(const OctU4*)p;
    u[0] = a.x, u[1] = a.y, u[2] = a.z, u[3] = a.w;
  } else {
    for (int i = 0; i < 4; i++) u[i] = p[2 * i] | ((uint32_t)p[2 * i + 1] << 16);
  }
}

// The sequence of row i of a prefill: s with cu[s] <= i < cu[s+1], or -1 (cu: cu_seqlens_q).
OCT_DEV int oct_row_seq(const int32_t* cu, int num_seqs, int64_t i) {
  int lo = 0, hi = num_seqs;  // #{ j in 1..num_seqs : cu[j] <= i }
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if ((int64_t)cu[mid + 1] <= i) lo = mid + 1;
    else hi = mid;
  }
  return lo < num_seqs && (int64_t)cu[lo] <= i && i < (int64_t)cu[lo + 1] ? lo : -1;
}

// ---- signs and the Walsh-Hadamard transform (docs/format.md §3) ------------------------------------------
// The lane's 8 sign bits: bits 8(l%4)..8(l%4)+7 of word l/4.
OCT_DEV void oct_apply_signs(const uint32_t signs[8], int lane, float v[8]) {
  uint32_t bits = (signs[lane >> 2] >> (8 * (lane & 3))) & 0xFFu;
  for (int i = 0; i < 8; i++)
    if (bits & (1u << i)) v[i] = -v[i];
}

// One cross-lane butterfly stage: dims differ in lane bit M (stride 8M dims).
template <int M>
OCT_DEV void oct_fwht_cross(float v[8], int lane) {
  for (int e = 0; e < 8; e++) {
    float p = oct_shfl_xor<M>(v[e]);
    v[e] = (lane & M) ? oct_sub_rn(p, v[e]) : oct_add_rn(v[e], p);
  }
}

// Normalized FWHT over 64-dim blocks (block64) or all 256 dims, bit-exact to docs/format.md §3: float32
// stages h = 1, 2, 4 inside the lane, then 8, 16, 32 (, 64, 128) across lanes, then the exact
// power-of-two scale.
OCT_DEV void oct_fwht(float v[8], int lane, bool block64) {
  for (int h = 1; h < 8; h <<= 1)
    for (int k = 0; k < 8; k++)
      if (!(k & h)) {
        float a = v[k], b = v[k + h];
        v[k] = oct_add_rn(a, b);
        v[k + h] = oct_sub_rn(a, b);
      }
  oct_fwht_cross<1>(v, lane);
  oct_fwht_cross<2>(v, lane);
  oct_fwht_cross<4>(v, lane);
  float s = 0.125f;
  if (!block64) {
    oct_fwht_cross<8>(v, lane);
    oct_fwht_cross<16>(v, lane);
    s = 0.0625f;
  }
  for (int e = 0; e < 8; e++) v[e] = oct_mul_rn(v[e], s);
}

OCT_DEV void oct_rotate(float v[8], const uint32_t signs[8], int lane, bool block64) {
  oct_apply_signs(signs, lane, v);
  oct_fwht(v, lane, block64);
}
OCT_DEV void oct_unrotate(float v[8], const uint32_t signs[8], int lane, bool block64) {
  oct_fwht(v, lane, block64);
  oct_apply_signs(signs, lane, v);
}

// ---- reductions over a group of 8 lanes (one 64-dim block) or all 32 ------------------------------
OCT_DEV double oct_sum_d(double x, bool all32) {
  x += oct_shfl_xor_d<1>(x);
  x += oct_shfl_xor_d<2>(x);
  x += oct_shfl_xor_d<4>(x);
  double y = oct_shfl_xor_d<8>(x);
  if (all32) x += y;
  y = oct_shfl_xor_d<16>(x);
  if (all32) x += y;
  return x;
}
OCT_DEV int oct_or_i(int x, bool all32) {
  x |= oct_shfl_xor_i<1>(x);
  x |= oct_shfl_xor_i<2>(x);
  x |= oct_shfl_xor_i<4>(x);
  int y = oct_shfl_xor_i<8>(x);
  if (all32) x |= y;
  y = oct_shfl_xor_i<16>(x);
  if (all32) x |= y;
  return x;
}
OCT_DEV float oct_max8(float x) {  // max over the lane's 8-lane group (NaN-ignoring)
  x = oct_fmax(x, oct_shfl_xor<1>(x));
  x = oct_fmax(x, oct_shfl_xor<2>(x));
  x = oct_fmax(x, oct_shfl_xor<4>(x));
  return x;
}
OCT_DEV float oct_max32(float x) {
  x = oct_max8(x);
  x = oct_fmax(x, oct_shfl_xor<8>(x));
  x = oct_fmax(x, oct_shfl_xor<16>(x));
  return x;
}
OCT_DEV float oct_sum32(float x) {
  x += oct_shfl_xor<1>(x);
  x += oct_shfl_xor<2>(x);
  x += oct_shfl_xor<4>(x);
  x += oct_shfl_xor<8>(x);
  x += oct_shfl_xor<16>(x);
  return x;
}

#endif  // OCT_DEVICE_BODY
