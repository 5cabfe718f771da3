// A tile of up to 32 cached tokens decoded into shared memory: int8 codebook bytes of K and V for
// all 256 dims, the four K block scales and V scale / 64 as float32 (exact). Used by the prefill
// kernel (decode stages raw slots per wave instead: decode.hip). A token whose physical block id is
// outside [0, num_blocks) is marked not ok and its bytes are zeros; the cache is never read for it.
#pragma once

#include "octave_format.h"

enum { OCT_TILE = 32 };

#if OCT_DEVICE_BODY

struct OctTileSmem {
  uint32_t (*k)[65];  // [OCT_TILE][64 + 1 pad]: lane = token reads rows without bank conflicts
  uint32_t (*v)[64];  // [OCT_TILE][64]
  float (*ks)[4];     // [OCT_TILE][4]
  float* vs;          // [OCT_TILE]: V scale / 64
  int* ok;            // [OCT_TILE]
};

struct OctCacheView {
  const uint8_t* cache;
  const int32_t* bt_row;  // block table row of the request
  int64_t c_sb, c_sh, c_st, head;
  int32_t block_size, num_blocks;
};

// Every thread of the workgroup calls; wave w decodes tile tokens 8w..8w+7 (tokens >= tn are
// marked not ok). tile_start + ti is the logical token position.
OCT_DEV void oct_tile_load(const OctCacheView& c, const OctLayout& L, int64_t tile_start, int tn,
                           const OctTileSmem& s) {
  const int lane = oct_lane(), w = oct_wave();
  for (int k = 0; k < 8; k++) {
    const int ti = 8 * w + k;
    const int64_t t = tile_start + ti;
    bool ok = false;
    const uint8_t* slot = nullptr;
    if (ti < tn) {
      const int32_t bid = c.bt_row[t / c.block_size];
      ok = bid >= 0 && bid < c.num_blocks;
      if (ok) slot = c.cache + (int64_t)bid * c.c_sb + c.head * c.c_sh + (t % c.block_size) * c.c_st;
    }
    uint32_t k0 = 0, k1 = 0, v0 = 0, v1 = 0;
    float kscale = 0.0f, vscale = 0.0f;
    if (ok) {
      oct_slot_k(slot, L, lane, k0, k1);
      oct_slot_v(slot, L, lane, v0, v1);
      kscale = oct_slot_kscale(slot, L, lane >> 3);
      vscale = oct_slot_vscale(slot, L) * 0.015625f;
    }
    s.k[ti][2 * lane] = k0;
    s.k[ti][2 * lane + 1] = k1;
    s.v[ti][2 * lane] = v0;
    s.v[ti][2 * lane + 1] = v1;
    if ((lane & 7) == 0) s.ks[ti][lane >> 3] = kscale;
    if (lane == 0) s.vs[ti] = vscale, s.ok[ti] = ok;
  }
}

// Online softmax step in base 2 for one query over one tile, wave-wide (lane = token): s is this
// lane's score (-inf when masked). Updates m and l, returns this lane's p and sets alpha, the factor
// for the running o. Empty so far (m = -inf after the step): p = 0, alpha = 1.
OCT_DEV float oct_softmax_step(float s, float& m, float& l, float& alpha) {
  const float ninf = -oct_inf();
  const float mn = oct_fmax(m, oct_max32(s));
  float p = 0.0f;
  alpha = 1.0f;
  if (mn != ninf) {
    p = oct_exp2(s - mn);
    alpha = oct_exp2(m - mn);
  }
  l = oct_fma(l, alpha, oct_sum32(p));
  m = mn;
  return p;
}

#endif  // OCT_DEVICE_BODY
