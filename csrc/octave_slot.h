// The slot layouts as compile-time constants, and the permuted codebook decoding that the decode
// kernels share (the portable tier, csrc/decode.hip, and the mma tier, csrc/decode_mma.hip): where
// each K dim lands in a decoded word (dec_qpos) and which dims a lane's V bytes hold (dec_vbytes,
// dec_runs). docs/format.md §5 has the byte layout; oct_layout (octave_format.h) the same numbers
// at run time.
#pragma once

#include "octave_format.h"

#if OCT_DEVICE_BODY

// Compile-time layout of each format (docs/format.md §5; the same numbers as oct_layout). UB is the
// unit a slot is copied in: 8 bytes, 4 for compact (whose strides are only multiples of 4).
template <int FMT>
struct DecFmt;
template <>
struct DecFmt<4> {  // octave_k3v4
  enum { COMPACT = 0, VBITS = 4, SLOT = 248, UB = 8, K_LO = 32, K_HI = 80, V_LO = 104, V_HI = 0, SCALES = 232 };
};
template <>
struct DecFmt<3> {  // octave_k3v3
  enum { COMPACT = 0, VBITS = 3, SLOT = 216, UB = 8, K_LO = 32, K_HI = 80, V_LO = 104, V_HI = 168, SCALES = 200 };
};
template <>
struct DecFmt<19> {  // octave_k3v3_compact
  enum { COMPACT = 1, VBITS = 3, SLOT = 196, UB = 4, K_LO = 0, K_HI = 64, V_LO = 96, V_HI = 160, SCALES = 192 };
};
// Byte position, within the 256-byte int8 query row, of head dim d: the order of dec_kblock.
template <int FMT>
OCT_DEV int dec_qpos(int d) {
  const int b = d >> 6, dl = d & 63;
  if (!DecFmt<FMT>::COMPACT && b == 0) {  // 4-bit: word 2j + h holds dims 8j + [0,4,1,5] + 2h
    const int j = dl >> 3, r = dl & 7;
    return 4 * (2 * j + ((r >> 1) & 1)) + 2 * (r & 1) + (r >> 2);
  }
  const int g = dl >> 4, r = dl & 15;  // 3-bit: word 4g + h holds dims 16g + [0,8,1,9] + 2h
  return 64 * b + 4 * (4 * g + ((r >> 1) & 3)) + 2 * (r & 1) + (r >> 3);
}

// V codebook bytes, biased by +128, for lane l of the token of `row`: 8 dims, in the order of
// dec_write_partial (u0: o[0..3], u1: o[4..7]; even o at run0 + 0..3, odd at run1 + 0..3).
// 4-bit: dims 8l..8l+7 (runs 8l, 8l + 4). 3-bit: half (l & 1) of the 16-dim group l >> 1 (runs
// 16(l >> 1) + 4(l & 1) and 8 further).
template <int FMT>
OCT_DEV void dec_vbytes(const uint8_t* row, int l, uint32_t& u0, uint32_t& u1) {
  typedef DecFmt<FMT> F;
  if (F::VBITS == 4) {
    const uint32_t w = *(const uint32_t*)(row + F::V_LO + 4 * l);
    oct_cb4n(w, OCT_CB4B_0, OCT_CB4B_1, OCT_CB4B_2, OCT_CB4B_3, u0, u1);
  } else {
    const int k = l >> 1, hb = l & 1;
    const uint32_t wl = *(const uint32_t*)(row + F::V_LO + 4 * k);
    const uint32_t wh = *(const uint32_t*)(row + F::V_HI + 4 * (k >> 1));
    const uint32_t sel = oct_sel3n(wl >> (2 * hb), wh >> (4 * (k & 1) + hb));
    u0 = oct_perm8n(OCT_CB3B_LO, OCT_CB3B_HI, sel), u1 = oct_perm8n(OCT_CB3B_LO, OCT_CB3B_HI, sel >> 16);
  }
}
template <int FMT>
OCT_DEV void dec_runs(int l, int& run0, int& run1) {
  if (DecFmt<FMT>::VBITS == 4) run0 = 8 * l, run1 = 8 * l + 4;
  else run0 = 16 * (l >> 1) + 4 * (l & 1), run1 = run0 + 8;
}

#endif  // OCT_DEVICE_BODY
