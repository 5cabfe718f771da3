// cache_store (docs/contract.md §3.1): rotate, quantize and pack K and V of one (token, KV head) into its
// slot. One logical wave per (token, head); lane l owns dims 8l..8l+7. Only code and scale bytes
// are written; pad bytes and everything else are left as they were.
#include "octave_lane.h"
#include "octave_mutant.h"
#include "octave_params.h"

#if OCT_DEVICE_BODY

// The number of thresholds strictly below y (docs/format.md §1, §4 step 4); NaN gives 0.
OCT_DEV uint32_t oct_code(float y, int bits) {
  if (OCT_MUTANT(OCT_MUT_STORE_TIE_UP)) {  // mutant: >=, a tie goes to the upper code
    if (bits == 4)
      return (y >= -110.5f) + (y >= -84.5f) + (y >= -66.0f) + (y >= -50.5f) + (y >= -36.5f) + (y >= -24.0f) +
             (y >= -12.0f) + (y >= 0.0f) + (y >= 12.0f) + (y >= 24.0f) + (y >= 36.5f) + (y >= 50.5f) +
             (y >= 66.0f) + (y >= 84.5f) + (y >= 110.5f);
    return (y >= -103.0f) + (y >= -62.0f) + (y >= -29.5f) + (y >= 0.0f) + (y >= 29.5f) + (y >= 62.0f) +
           (y >= 103.0f);
  }
  if (bits == 4)
    return (y > -110.5f) + (y > -84.5f) + (y > -66.0f) + (y > -50.5f) + (y > -36.5f) + (y > -24.0f) +
           (y > -12.0f) + (y > 0.0f) + (y > 12.0f) + (y > 24.0f) + (y > 36.5f) + (y > 50.5f) +
           (y > 66.0f) + (y > 84.5f) + (y > 110.5f);
  return (y > -103.0f) + (y > -62.0f) + (y > -29.5f) + (y > 0.0f) + (y > 29.5f) + (y > 62.0f) +
         (y > 103.0f);
}

// Quantizes one group (docs/format.md §4): the 64 dims of the lane's 8-lane group, or all 256 dims
// (all32). Returns the float32 scale; c0/c1 receive the codes of the lane's dims, one per byte.
// ss and dot: each term is one float32 product, as in the format; terms are summed in float64
// (exact for these sums but for far-apart magnitudes) and rounded once to float32, which is the
// oracle's canonical order-independent sum. y = (x / rms) * mult, two rounded float32 operations.
// A group holding NaN or ±inf is stored as the zero group (zero codes, scale +0), as the oracle does.
OCT_DEV float oct_quantize(const float x[8], int bits, bool all32, uint32_t& c0, uint32_t& c1) {
  int bad = 0;
  double ssd = 0.0;
  for (int e = 0; e < 8; e++) {
    bad |= !oct_isfinite(x[e]);
    ssd += (double)oct_mul_rn(x[e], x[e]);
  }
  bad = oct_or_i(bad, all32);
  ssd = oct_sum_d(ssd, all32);
  const float ss = (float)ssd;
  float ms = oct_div_rn(ss, all32 ? 256.0f : 64.0f);
  if (OCT_MUTANT(OCT_MUT_STORE_RMS_CLAMP) && !(ms > 1e-12f)) ms = 1e-12f;  // mutant: clamp before the sqrt
  float rms = oct_sqrt_rn(ms);
  if (!(rms > 1e-12f)) rms = 1e-12f;
  const float mult = bits == 4 ? 46.0f : 59.0f;
  uint32_t c[8];
  for (int e = 0; e < 8; e++) c[e] = oct_code(oct_mul_rn(oct_div_rn(x[e], rms), mult), bits);
  c0 = c[0] | (c[1] << 8) | (c[2] << 16) | (c[3] << 24);
  c1 = c[4] | (c[5] << 8) | (c[6] << 16) | (c[7] << 24);
  const uint32_t l0 = oct_lut(bits, c0), l1 = oct_lut(bits, c1);
  double dd = 0.0;
  for (int e = 0; e < 4; e++) dd += (double)oct_mul_rn(x[e], oct_i8(l0, e));
  for (int e = 0; e < 4; e++) dd += (double)oct_mul_rn(x[4 + e], oct_i8(l1, e));
  dd = oct_sum_d(dd, all32);
  const float dot = (float)dd;
  float scale = dot > 0.0f ? oct_mul_rn(oct_div_rn(ss, dot), 64.0f) : 0.0f;
  if (bad) {
    const uint32_t z = bits == 4 ? 0x07070707u : 0x03030303u;
    c0 = c1 = z;
    scale = 0.0f;
  }
  return scale;
}

// 4-bit stream: lane j writes the word of stream dims 8j..8j+7.
OCT_DEV void oct_pack4(uint8_t* stream, int j, uint32_t c0, uint32_t c1) {
  *(uint32_t*)(stream + 4 * j) = c0 | (c1 << 4);
}

// 3-bit stream: the 2-bit plane word of 16 dims is assembled from lanes j, j^1, the 1-bit plane
// word of 32 dims from lanes j..j^3. Every lane of the wave must call; lanes with mine = false
// (another section) contribute nothing and write nothing.
OCT_DEV void oct_pack3(uint8_t* lo, uint8_t* hi, int j, bool mine, uint32_t c0, uint32_t c1) {
  const int i = 2 * (j & 1), k = 2 * (j & 3);
  uint32_t wl = ((c0 & 0x03030303u) << (2 * i)) | ((c1 & 0x03030303u) << (2 * i + 2));
  uint32_t wh = (((c0 >> 2) & 0x01010101u) << k) | (((c1 >> 2) & 0x01010101u) << (k + 1));
  if (OCT_MUTANT(OCT_MUT_STORE_PLANE_SWAP)) {  // mutant: code = 2·lo + hi (planes' bits swapped)
    wl = (((c0 >> 1) & 0x03030303u) << (2 * i)) | (((c1 >> 1) & 0x03030303u) << (2 * i + 2));
    wh = ((c0 & 0x01010101u) << k) | ((c1 & 0x01010101u) << (k + 1));
  }
  if (!mine) wl = wh = 0;
  wl |= oct_shfl_xor_u32<1>(wl);
  wh |= oct_shfl_xor_u32<1>(wh);
  wh |= oct_shfl_xor_u32<2>(wh);
  if (mine && (j & 1) == 0) *(uint32_t*)(lo + 4 * (j >> 1)) = wl;
  if (mine && (j & 3) == 0) *(uint32_t*)(hi + 4 * (j >> 2)) = wh;
}

// The forward rotation of store; mutant OCT_MUT_STORE_SIGN_MSB reads the sign words MSB first.
OCT_DEV void st_rotate(float v[8], const uint32_t signs[8], int lane, bool block64) {
  if (OCT_MUTANT(OCT_MUT_STORE_SIGN_MSB)) {  // mutant: bit 31 - i of word w negates dim 32w + i
    const uint32_t word = signs[lane >> 2];
    for (int i = 0; i < 8; i++)
      if ((word >> (31 - 8 * (lane & 3) - i)) & 1u) v[i] = -v[i];
    oct_fwht(v, lane, block64);
    return;
  }
  oct_rotate(v, signs, lane, block64);
}

// fp32 scale -> fp16 bits, round to nearest even; mutant OCT_MUT_STORE_SCALE_TRUNC rounds toward
// zero (as __float2half_rz would).
OCT_DEV uint32_t st_scale16(float s) {
  uint32_t h = oct_f32_to_f16(s);
  if (OCT_MUTANT(OCT_MUT_STORE_SCALE_TRUNC) && oct_fabs(oct_f16_to_f32((uint16_t)h)) > oct_fabs(s)) h -= 1;
  return h;
}

#endif  // OCT_DEVICE_BODY

OCT_KERNEL(OCT_THREADS) void octave_store_kernel(OctStoreParams p) {
#if OCT_DEVICE_BODY
  const int lane = oct_lane();
  const int64_t gw = (int64_t)oct_bid_x() * OCT_WAVES + oct_wave();
  if (gw >= (int64_t)p.n * p.hkv) return;
  const int64_t t = gw / p.hkv, h = gw % p.hkv;
  const int64_t s = p.slot_mapping[t];
  if (s < 0 || s >= p.num_slots) return;  // skip (-1 padding); out of range never writes
  const OctLayout L = oct_layout(p.fmt);
  uint8_t* slot = p.cache + (s / p.block_size) * p.c_sb + h * p.c_sh + (s % p.block_size) * p.c_st;

  float x[8];
  uint32_t c0, c1;
  // K: 64-dim blocks (block 0 rope 4-bit, blocks 1..3 nope 3-bit), or one 256-dim 3-bit group.
  oct_load8(p.key + t * p.k_st + h * p.k_sh + 8 * lane, p.dtype, x);
  st_rotate(x, p.k_signs, lane, !L.compact);
  float ks;
  if (L.compact) {
    ks = oct_quantize(x, 3, true, c0, c1);
    oct_pack3(slot + L.k_lo, slot + L.k_hi, lane, true, c0, c1);
  } else {
    const int bits = lane < 8 ? 4 : 3;
    ks = oct_quantize(x, bits, false, c0, c1);
    if (lane < 8) oct_pack4(slot, lane, c0, c1);
    oct_pack3(slot + L.k_lo, slot + L.k_hi, lane - 8, lane >= 8, c0, c1);
  }
  // V: one 256-dim group.
  oct_load8(p.value + t * p.v_st + h * p.v_sh + 8 * lane, p.dtype, x);
  st_rotate(x, p.v_signs, lane, false);
  const float vs = oct_quantize(x, L.v_bits, true, c0, c1);
  if (L.v_bits == 4) oct_pack4(slot + L.v_lo, lane, c0, c1);
  else oct_pack3(slot + L.v_lo, slot + L.v_hi, lane, true, c0, c1);

  // Scales, fp16 round-to-nearest-even, written as whole words where they are whole words.
  const uint32_t k16 = st_scale16(ks), v16 = st_scale16(vs);
  const uint32_t k1 = oct_shfl_xor_u32<8>(k16), k2 = oct_shfl_xor_u32<16>(k16);
  const uint32_t k3 = oct_shfl_xor_u32<16>(k1);
  if (lane == 0) {
    uint8_t* sc = slot + L.off_scales;
    if (L.compact) {
      *(uint32_t*)sc = k16 | (v16 << 16);
    } else {
      *(uint32_t*)sc = k16 | (k1 << 16);
      *(uint32_t*)(sc + 4) = k2 | (k3 << 16);
      if (OCT_MUTANT(OCT_MUT_STORE_PAD_WRITE)) *(uint32_t*)(sc + 8) = v16;  // mutant: 2 pad bytes zeroed
      else *(uint16_t*)(sc + 8) = (uint16_t)v16;
    }
  }
#endif
}

hipError_t oct_launch_store(const OctStoreParams& p) {
  const int64_t waves = (int64_t)p.n * p.hkv;
  OCT_LAUNCH(octave_store_kernel, (waves + OCT_WAVES - 1) / OCT_WAVES, 1, 1, OCT_THREADS, p);
  return oct_launch_status();
}
