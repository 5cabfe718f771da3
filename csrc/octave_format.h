// The Octave slot format (spec/FORMAT.md) as constants and per-lane device helpers.
// Fixed kernel shape: head size 256, rope dims 0..63, four 64-dim K blocks.
#pragma once

#include "octave_arch.h"

#if defined(OCT_EMU)
#define OCT_HD inline
#else
#define OCT_HD __host__ __device__ inline
#endif

enum { OCT_D = 256, OCT_KBLOCK = 64 };

// Byte layout of one slot (FORMAT.md §5). 3-bit sections are a 2-bit plane followed by a 1-bit
// plane; *_hi is where the 1-bit plane starts.
struct OctLayout {
  int slot_bytes;
  int compact;     // K quantized as one 256-dim group, rotated over 256 dims
  int v_bits;      // 3 or 4
  int k_lo;        // block-K: nope 2-bit plane; compact: K 2-bit plane
  int k_hi;        // the matching 1-bit plane
  int v_lo;        // V codes (4-bit) or V 2-bit plane
  int v_hi;        // V 1-bit plane (3-bit V only)
  int off_scales;  // fp16 scales: K0..K3 then V (block-K) or K then V (compact)
};

// Returns 0 for an unknown format id; the host rejects those before any launch.
OCT_HD OctLayout oct_layout(int fmt) {
  switch (fmt) {
    case 4: return OctLayout{248, 0, 4, 32, 80, 104, 0, 232};
    case 3: return OctLayout{216, 0, 3, 32, 80, 104, 168, 200};
    case 19: return OctLayout{196, 1, 3, 0, 64, 96, 160, 192};
    default: return OctLayout{0, 0, 0, 0, 0, 0, 0, 0};
  }
}

#if OCT_DEVICE_BODY

// ---- codebooks (FORMAT.md §1), little-endian bytes for byte permute -------------------------------
// 3-bit: -127 -79 -45 -14 | 14 45 79 127.  4-bit: -126 -95 -74 -58 -43 -30 -18 -6 | 6 .. 126.
OCT_DEV uint32_t oct_lut3(uint32_t codes) {  // 4 codes (bytes 0..7) -> 4 int8 codebook bytes
  return oct_perm8(0xF2D3B181u, 0x7F4F2D0Eu, codes);
}
OCT_DEV uint32_t oct_lut4(uint32_t codes) {  // 4 codes (bytes 0..15) -> 4 int8 codebook bytes
  uint32_t low = oct_perm8(0xC6B6A182u, 0xFAEEE2D5u, codes & 0x07070707u);
  uint32_t high = oct_perm8(0x2B1E1206u, 0x7E5F4A3Au, codes & 0x07070707u);
  uint32_t m = ((codes >> 3) & 0x01010101u) * 0xFFu;  // 0xFF where code >= 8
  return (low & ~m) | (high & m);
}
OCT_DEV uint32_t oct_lut(int bits, uint32_t codes) {
  return bits == 4 ? oct_lut4(codes) : oct_lut3(codes);
}
OCT_DEV float oct_i8(uint32_t w, int i) { return (float)(int8_t)(w >> (8 * i)); }

// ---- code extraction: the lane's 8 dims of a packed stream ----------------------------------------
// Lane j of a stream owns stream dims 8j..8j+7. The two returned words hold the codes of dims
// 8j..8j+3 and 8j+4..8j+7, one per byte.
OCT_DEV void oct_codes4(const uint8_t* stream, int j, uint32_t& c0, uint32_t& c1) {
  uint32_t w = *(const uint32_t*)(stream + 4 * j);
  c0 = w & 0x0F0F0F0Fu;
  c1 = (w >> 4) & 0x0F0F0F0Fu;
}
// 3-bit stream: lo = 2-bit plane (16 dims per word), hi = 1-bit plane (32 dims per word).
OCT_DEV void oct_codes3(const uint8_t* lo, const uint8_t* hi, int j, uint32_t& c0, uint32_t& c1) {
  uint32_t wl = *(const uint32_t*)(lo + 4 * (j >> 1));
  uint32_t wh = *(const uint32_t*)(hi + 4 * (j >> 2));
  int i = 2 * (j & 1);  // 4-dim group inside the 16-dim word
  int k = 2 * (j & 3);  // 4-dim group inside the 32-dim word
  c0 = ((wl >> (2 * i)) & 0x03030303u) | (((wh >> k) & 0x01010101u) << 2);
  c1 = ((wl >> (2 * i + 2)) & 0x03030303u) | (((wh >> (k + 1)) & 0x01010101u) << 2);
}

// K codebook bytes of lane l (dims 8l..8l+7) and V codebook bytes, for one slot.
OCT_DEV void oct_slot_k(const uint8_t* slot, const OctLayout& L, int l, uint32_t& k0, uint32_t& k1) {
  uint32_t c0, c1;
  if (L.compact) {
    oct_codes3(slot + L.k_lo, slot + L.k_hi, l, c0, c1);
    k0 = oct_lut3(c0), k1 = oct_lut3(c1);
  } else if (l < 8) {
    oct_codes4(slot, l, c0, c1);
    k0 = oct_lut4(c0), k1 = oct_lut4(c1);
  } else {
    oct_codes3(slot + L.k_lo, slot + L.k_hi, l - 8, c0, c1);
    k0 = oct_lut3(c0), k1 = oct_lut3(c1);
  }
}
OCT_DEV void oct_slot_v(const uint8_t* slot, const OctLayout& L, int l, uint32_t& v0, uint32_t& v1) {
  uint32_t c0, c1;
  if (L.v_bits == 4) {
    oct_codes4(slot + L.v_lo, l, c0, c1);
    v0 = oct_lut4(c0), v1 = oct_lut4(c1);
  } else {
    oct_codes3(slot + L.v_lo, slot + L.v_hi, l, c0, c1);
    v0 = oct_lut3(c0), v1 = oct_lut3(c1);
  }
}
// The K scale of 64-dim block b (compact: the one K scale) and the V scale, as float32.
OCT_DEV float oct_slot_kscale(const uint8_t* slot, const OctLayout& L, int b) {
  const uint16_t* s = (const uint16_t*)(slot + L.off_scales);
  return oct_f16_to_f32(s[L.compact ? 0 : b]);
}
OCT_DEV float oct_slot_vscale(const uint8_t* slot, const OctLayout& L) {
  const uint16_t* s = (const uint16_t*)(slot + L.off_scales);
  return oct_f16_to_f32(s[L.compact ? 1 : 4]);
}

#endif  // OCT_DEVICE_BODY
