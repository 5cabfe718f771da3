// The Octave slot format (docs/format.md) as constants and per-lane device helpers.
// Fixed kernel shape: head size 256, rope dims 0..63, four 64-dim K blocks.
#pragma once

#include "octave_arch.h"

#if defined(OCT_EMU)
#define OCT_HD inline
#else
#define OCT_HD __host__ __device__ inline
#endif

enum { OCT_D = 256, OCT_KBLOCK = 64 };

// Byte layout of one slot (docs/format.md §5). 3-bit sections are a 2-bit plane followed by a 1-bit
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

// ---- codebooks (docs/format.md §1), little-endian bytes for byte permute -------------------------------
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
// ---- codebook lookups with nibble selectors (decode) -------------------------------------------
// These decode codes in a permuted dimension order that needs no repacking of the code bits: one
// byte permute per 4 codes on NVIDIA (PRMT takes one selector nibble per result byte). A consumer
// permutes the other operand the same way (decode: the int8 query) or writes results back to the
// right dims; the integer dots and the per-dim values are unchanged.
//
// 4-bit word x (stream dims 8j..8j+7; nibble k of x is dim [0,4,1,5,2,6,3,7][k]): w0 = codebook
// bytes of dims [0,4,1,5], w1 = of dims [2,6,3,7] (+8j). t0..t3: the 16-entry table as 4 words.
// The half is chosen on NVIDIA (where oct_nibmask is one PRMT) and on the emulator (which computes
// the same mask) by a bitwise select under the mask of the codes' bit 3: 11 instructions per 8
// codes, not the 12 of a byte permute (in the SASS the permute's selector takes two LOP3, one
// immediate each, and the mask's x << 4 often becomes an IMAD.SHL on the FMA pipe). AMD chooses it
// by a byte permute (m: byte i of the low or the high half; v_perm_b32 replicates signs by other
// selectors).
OCT_DEV void oct_cb4n(uint32_t x, uint32_t t0, uint32_t t1, uint32_t t2, uint32_t t3, uint32_t& w0,
                      uint32_t& w1) {
  const uint32_t s = x & 0x77777777u;  // entry within a half table
#if !defined(OCT_AMD)
  const uint32_t m0 = oct_nibmask(x, 0), m1 = oct_nibmask(x, 1);
  w0 = (oct_perm8n(t0, t1, s) & ~m0) | (oct_perm8n(t2, t3, s) & m0);
  w1 = (oct_perm8n(t0, t1, s >> 16) & ~m1) | (oct_perm8n(t2, t3, s >> 16) & m1);
#else
  const uint32_t m = ((x >> 1) & 0x44444444u) | 0x32103210u;  // byte i of the low or the high half
  w0 = oct_perm8n(oct_perm8n(t0, t1, s), oct_perm8n(t2, t3, s), m);
  w1 = oct_perm8n(oct_perm8n(t0, t1, s >> 16), oct_perm8n(t2, t3, s >> 16), m >> 16);
#endif
}
// 3-bit codes of a 16-dim group as a selector word: wl = its 2-bit plane word, wh = the 1-bit plane
// word shifted so that bit 8b + i holds dim 4i + b of the group (b, i in 0..3; docs/format.md §5).
// Nibble 2b = code of dim b, nibble 2b + 1 = code of dim 8 + b ("A"); with wl >> 2 and wh >> 1 the
// same gives dims 4 + b and 12 + b ("B"). The multiply by 20 places hi bits 8b and 8b+2 at 8b+2 and
// 8b+6 (the carry it can make lands in bit 5 of a byte, which the select drops).
OCT_DEV uint32_t oct_sel3n(uint32_t wl, uint32_t wh) {
  const uint32_t h = (wh & 0x05050505u) * 20u;
  return (wl & 0x33333333u) | (h & 0x44444444u);
}
// Codebook words of a 16-dim group of a 3-bit stream, dims [0,8,1,9], [2,10,3,11], [4,12,5,13],
// [6,14,7,15] of the group (wl, wh as for oct_sel3n). tlo, thi: the 8-entry table.
OCT_DEV void oct_cb3n(uint32_t wl, uint32_t wh, uint32_t tlo, uint32_t thi, uint32_t w[4]) {
  const uint32_t a = oct_sel3n(wl, wh), b = oct_sel3n(wl >> 2, wh >> 1);
  w[0] = oct_perm8n(tlo, thi, a), w[1] = oct_perm8n(tlo, thi, a >> 16);
  w[2] = oct_perm8n(tlo, thi, b), w[3] = oct_perm8n(tlo, thi, b >> 16);
}
// Codebook tables as words: signed (K) and biased by +128 (V, for oct_b128_f32).
enum : uint32_t {
  OCT_CB3_LO = 0xF2D3B181u, OCT_CB3_HI = 0x7F4F2D0Eu,
  OCT_CB4_0 = 0xC6B6A182u, OCT_CB4_1 = 0xFAEEE2D5u, OCT_CB4_2 = 0x2B1E1206u, OCT_CB4_3 = 0x7E5F4A3Au,
  OCT_CB3B_LO = 0x72533101u, OCT_CB3B_HI = 0xFFCFAD8Eu,
  OCT_CB4B_0 = 0x46362102u, OCT_CB4B_1 = 0x7A6E6255u, OCT_CB4B_2 = 0xAB9E9286u, OCT_CB4B_3 = 0xFEDFCABAu,
};

// Biased byte i (0..3) of u as the float 2^23 + 256·(c + 128), c the codebook value: byte permute
// with the exponent of 2^23 (one instruction). fma(f, x/256, -32896·x) = c·x exactly for any x that
// is an fp16 value / 64 (c·x has at most 18 significant bits, 32896·x at most 20; one rounding of
// an exact result). See decode.hip.
OCT_DEV float oct_b128_f32(uint32_t u, int i) {
  return oct_u2f(oct_perm8(u, 0x4B000000u, 0x07040004u | ((uint32_t)i << 8)));
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
