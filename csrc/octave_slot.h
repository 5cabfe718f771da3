// The slot layouts as compile-time constants, and the permuted codebook decoding that the decode
// kernels share (the portable tier, csrc/decode.hip, and the mma tier, csrc/decode_mma.h): where
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

// Staging of raw slots into shared memory (the mma kernels): rows of ROW bytes (the slot rounded
// up to 8), copied in SU units of UB bytes; whole tiles go in 16-byte copies when the slots are
// contiguous and ROW == SLOT (CONTIG_OK: every row stays 8-byte aligned).
template <int FMT>
struct SlotCopy : DecFmt<FMT> {
  typedef DecFmt<FMT> B;
  enum {
    ROW = (B::SLOT + 7) & ~7,         // staged slot stride: 248, 216, 200
    SU = B::SLOT / B::UB,             // units per slot: 31, 27, 49
    CONTIG_OK = ROW == (int)B::SLOT,
  };
  static_assert(B::SLOT % B::UB == 0, "slot units");
};

// The K codebook bytes of block b for lane group t of the token staged at `row`: words j = 0..3
// hold the block's bytes 16t + 4j + 0..3 in dec_qpos order (lane t decodes 16 of the block's 64
// dims), signed (m16n8k32.s8 operands: the int8-K decode, the mma prefill) or biased by 128 (BIASED: the
// mma decode's fp16 operands).
template <int FMT, bool BIASED>
OCT_DEV void dec_kwords(const uint8_t* row, int b, int t, uint32_t w[4]) {
  typedef DecFmt<FMT> F;
  if (!F::COMPACT && b == 0) {  // rope: 4-bit, 8 bytes per 16 dims
    const OctU2 x = *(const OctU2*)(row + 8 * t);
    if (BIASED) {
      oct_cb4n(x.x, OCT_CB4B_0, OCT_CB4B_1, OCT_CB4B_2, OCT_CB4B_3, w[0], w[1]);
      oct_cb4n(x.y, OCT_CB4B_0, OCT_CB4B_1, OCT_CB4B_2, OCT_CB4B_3, w[2], w[3]);
    } else {
      oct_cb4n(x.x, OCT_CB4_0, OCT_CB4_1, OCT_CB4_2, OCT_CB4_3, w[0], w[1]);
      oct_cb4n(x.y, OCT_CB4_0, OCT_CB4_1, OCT_CB4_2, OCT_CB4_3, w[2], w[3]);
    }
  } else {  // 3-bit: one 2-bit plane word and half a 1-bit plane word per 16 dims
    const int bb = F::COMPACT ? b : b - 1;
    const uint32_t wl = *(const uint32_t*)(row + F::K_LO + 16 * bb + 4 * t);
    const uint32_t wh = *(const uint32_t*)(row + F::K_HI + 8 * bb + 4 * (t >> 1)) >> (4 * (t & 1));
    if (BIASED) oct_cb3n(wl, wh, OCT_CB3B_LO, OCT_CB3B_HI, w);
    else oct_cb3n(wl, wh, OCT_CB3_LO, OCT_CB3_HI, w);
  }
}

#endif  // OCT_DEVICE_BODY
