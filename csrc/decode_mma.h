// decode, mma tier (sm_90; docs/contract.md §3.3, profile int8rowq, or wmma-f16q with
// OCT_DM_INT8K=0: csrc/octave_params.h): split-KV attention over the packed cache with NVIDIA's
// warp-level mma.sync (scores on m16n8k32 s8, or m16n8k16 f16; P·V on m16n8k16, fp32 accumulation),
// writing split partials (§3.4 layout) that the portable reduce merges. On CUDA builds the
// instructions, on the emulator their model (octave_mma.h); HIP builds get stubs. docs/kernels.md,
// "The mma tier: decode", has the design and its budget. This header is the device code that its
// two kinds of workgroup share; decode_mma.hip chooses the kind and the kernel of a launch:
//   - the per-warp kernels (decode_mma_warp.hip): each warp its own pipeline over the split's
//     16-token tiles, passes of up to 8 queries (one N tile) or 16 (two);
//   - the quad kernel (decode_mma_quad.hip), for chunks of more than 8 queries (MTP rows): passes of
//     up to 24 queries (three N tiles), each tile's work split over a quad of 4 warps.
//
// Workgroup (row chunk, split, KV head). The queries of a row set (the chunk's rows of one request
// × the G heads of the KV head) are taken a pass at a time; when a chunk has more queries than one
// pass takes, its passes go to ⌈G·query_group / pass width⌉ workgroups side by side (p.wpc), not
// one after another (dm_body). Per 16-token tile (aligned to a multiple of 16; tokens outside the
// split masked):
//   - staging: the tile's raw slots go to shared memory with cp.async, two tiles ahead: 16-byte
//     copies of the whole tile when its 16 slots are contiguous (block size a multiple of 16, token
//     stride = slot bytes, 16-byte aligned block and head strides), else per slot in units of 8
//     bytes (4 for compact) (dm_issue);
//   - scores S^T = K·Q^T (the "swapped" product: M = 16 tokens, N = 8 queries, so G = 6 wastes no
//     rows): per 64-dim K block two m16n8k32 on the K codebook bytes (byte permute lookup) against
//     the int8 rotated query (one scale per query), an exact int32 dot, in the permuted dim order
//     of dec_qpos; the block's dot times the token's K block scale, summed over the blocks in
//     order, times the query's scale and sm_scale·log2(e)/64 — int8rowq's arithmetic (dm_kblock).
//     (OCT_DM_INT8K=0: four m16n8k16 per block on the codebook bytes as fp16 — the table biased
//     by 128, spread into fp16 halves 0x64bb, then one f16x2 subtraction, all exact — against the
//     fp16 query, an fp32 dot: wmma-f16q's arithmetic);
//   - online softmax in base 2 in registers: lane (g, t) holds tokens g, g + 8 of queries 2t,
//     2t + 1; tile max and Σ p by butterflies over g; P' = fp16(fp32(p · V scale) · κ), κ = 64
//     (256 for wmma-f16q), through a shared-memory transpose into the B operand of P·V
//     (dm_softmax);
//   - O^T += V^T·P'^T: M = 16 dims, N = 8 queries, K = 16 tokens; lane g's V bytes are dims of V
//     lanes 4g..4g+3 (dec_vbytes), paired across tokens by byte permutes into fp16 halves; in the
//     one-N-tile kernel of 4-bit V (k3v4) each operand register is instead one load from a
//     256-entry table in shared memory, indexed by the two tokens' codes of a dim (dm_pv).
// At the end of the split the units' (warps', quads') (m, l, o) are merged in shared memory and the
// workgroup writes the partial rows coalesced, o = Σ P'·codebook / (κ·64).
#pragma once

#include "octave_lane.h"
#include "octave_mma.h"
#include "octave_params.h"
#include "octave_slot.h"

enum {
  DM_TOK = 16,          // tokens per tile
  DM_STAGE = 16 * 248,  // bytes of one staged tile (the largest slot)
  DM_STAGES = 3,        // staged tiles per warp: two in flight while one is computed
  DM_RES = 264,         // words per merged row in the write-out
};
enum { DQ_NT = 3 };  // the quad kernel's N tiles per pass (24 queries)

#if OCT_MMA_BODY

// The two kinds of workgroup, each with its shared memory, its pass (dm_run_pass) and what it
// fills before the first pass (dm_vfill): the per-warp kernels' (decode_mma_warp.hip) and the quad
// kernel's (decode_mma_quad.hip). dm_body runs either.
template <int NT, int NW, int VT>
struct DmSmem;
template <int NQ>
struct DqSmem;
struct DmSet;
template <int FMT, int NT, int NW, int VT>
OCT_DEV void dm_vfill(DmSmem<NT, NW, VT>& sm);
template <int FMT, int NT, int NW, int NQ>
OCT_DEV void dm_vfill(DqSmem<NQ>& sm);
template <int FMT, int NT, int NW, int VT>
OCT_DEV void dm_run_pass(const OctDecodeParams& p, const DmSet& s, DmSmem<NT, NW, VT>& sm, int lane, int w);
template <int FMT, int NT, int NW, int NQ>
OCT_DEV void dm_run_pass(const OctDecodeParams& p, const DmSet& s, DqSmem<NQ>& sm, int lane, int w);

template <int FMT>
struct DmFmt : SlotCopy<FMT> {
  static_assert(16 * SlotCopy<FMT>::ROW <= DM_STAGE, "staging layout");
  static_assert((FMT == 4) == (SlotCopy<FMT>::VBITS == 4), "DmVt: format 4 is the one of 4-bit V");
};

// Two fp16 values at p (4-byte aligned) as one register (memcpy: no type punning on the emulator).
OCT_DEV uint32_t dm_ld32(const uint16_t* p) {
  uint32_t x;
  __builtin_memcpy(&x, __builtin_assume_aligned(p, 4), 4);
  return x;
}
// Two halves (lo, hi) stored as one 4-byte word at p (4-byte aligned): the store dm_ld64's loads
// pair with.
// (nvcc's front end fails on __builtin_assume_aligned of a non-const pointer: a cast there.)
OCT_DEV void dm_st32(uint16_t* p, uint32_t v) {
#if defined(OCT_NV)
  *reinterpret_cast<uint32_t*>(p) = v;
#else
  __builtin_memcpy(__builtin_assume_aligned(p, 4), &v, 4);
#endif
}
// Four fp16 values at p (8-byte aligned) as two registers, one load.
OCT_DEV OctMmaB16 dm_ld64(const uint16_t* p) {
  OctMmaB16 x;
  __builtin_memcpy(&x.r[0], __builtin_assume_aligned(p, 8), 8);
  return x;
}

// The A-operand halves of K block b for lane group t (wmma-f16q): k-step j of the block uses
// lo[j] (columns 2t, 2t + 1) and hi[j] (columns 2t + 8, 2t + 9), word j of dm_kwords as fp16.
template <int FMT>
OCT_DEV void dm_kfrag(const uint8_t* row, int b, int t, uint32_t lo[4], uint32_t hi[4]) {
  uint32_t w[4];
  dec_kwords<FMT, true>(row, b, t, w);
  OCT_UNROLL for (int j = 0; j < 4; j++) oct_h4_codes(w[j], lo[j], hi[j]);
}

// Writes the partial row of an empty query: o = 0, m = -inf, l = 0 (one warp, lane l dims 8l..8l+7).
OCT_DEV void dm_write_empty(float* dst, int lane) {
  OctU4 z;
  z.x = z.y = z.z = z.w = 0u;
  *(OctU4*)(dst + 8 * lane) = z;
  *(OctU4*)(dst + 8 * lane + 4) = z;
  if (lane == 0) dst[256] = -oct_inf(), dst[257] = 0.0f;
}

// What a pass needs to know about the row set.
struct DmSet {
  int rows;         // 4 bits per row of the set: the chunk's row index
  int klen[4];      // per chunk row
  int req;          // the request of every row of the set
  int row0, split;  // the chunk's first query row; the split
  int qb, np;       // the pass: queries qb .. qb + np - 1 of the set (query q: row rows[q / G], head h·G + q % G)
  int64_t t0, te;   // the split's tokens for this set: [t0, te)
  int h;            // KV head
};
// Query q of a set (0 <= q < G·query_group <= 32) is head q % G of chunk row q / G: divided by a
// multiply and a shift (exact for q < 4096, g <= 8), not by an integer division by the run-time G,
// which the write-out computes for every four dims it stores.
OCT_DEV int dm_qrow(const OctDecodeParams& p, int q) { return (int)(((uint32_t)q * p.g_mul) >> 20); }
OCT_DEV int dm_qhead(const OctDecodeParams& p, int q) { return q - p.g * dm_qrow(p, q); }
OCT_DEV int dm_rowj(const OctDecodeParams& p, const DmSet& s, int q) { return (s.rows >> (4 * dm_qrow(p, q))) & 15; }
OCT_DEV int64_t dm_prow(const OctDecodeParams& p, const DmSet& s, int q) {
  return (((int64_t)(s.row0 + dm_rowj(p, s, q)) * p.hq + (int64_t)s.h * p.g + dm_qhead(p, q)) * p.num_splits + s.split) *
         p.pstride;
}

// The block index of token t (0 <= t < 2^31: a token below te, at most a klen, an int32): t /
// block_size by the host's multiplier and shift (oct_bs_div, exact for every t < 2^31 and block
// size: octave_params.h), not by a 32-bit division (about 20 instructions, two per tile).
OCT_DEV uint32_t dm_blk(const OctDecodeParams& p, uint32_t t) { return oct_bs_div(t, p.bs_mul, p.bs_sh); }

// The block id of the tile at ts on the whole-tile path (contig), or -1 (the other path reads the
// block table per token).
template <int FMT>
OCT_DEV int32_t dm_tile_bid(const OctDecodeParams& p, const int32_t* bt_row, int64_t ts, bool contig) {
  return DmFmt<FMT>::CONTIG_OK && contig ? bt_row[dm_blk(p, (uint32_t)ts)] : -1;
}

// A warp's whole-tile copy, unrolled (8 rounds for k3v4's 248 units, the last for lanes below 24),
// not a loop that checks its bound each round. Rounds K .. NK - 1 of NU 16-byte units: lane l
// copies unit l + 32k in round k, from the lane's own pair of base addresses (d, s: unit l) at the
// immediate offset 512k, so that the rounds share one address computation.
template <int K, int NK, int NU>
struct DmCopyU {
  static OCT_DEV void run(uint8_t* d, const uint8_t* s, int lane) {
    if (32 * (K + 1) <= NU || lane + 32 * K < NU) oct_copy_g2s16_at<512 * K>(d, s);
    DmCopyU<K + 1, NK, NU>::run(d, s, lane);
  }
};
template <int NK, int NU>
struct DmCopyU<NK, NK, NU> {
  static OCT_DEV void run(uint8_t*, const uint8_t*, int) {}
};

// Issues the copies of the tile at ts (a multiple of 16) into stage st and returns its mask of
// tokens to attend to (in [t0, te), in a valid block), one warp. contig: the whole-tile path (see
// the header). off: the warp's 16 slot offsets in shared memory.
// bid: the tile's block id on the whole-tile path, dm_tile_bid's (loaded apart, so that a caller can
// have it in flight early); unread on the other path. The overload without it loads it itself.
template <int FMT>
OCT_DEV uint32_t dm_issue(const OctDecodeParams& p, const DmSet& s, int64_t* off, uint8_t* st, const int32_t* bt_row,
                          int64_t ts, bool contig, int lane, int32_t bid) {
  typedef DmFmt<FMT> F;
  const int64_t hoff = (int64_t)((uint64_t)(uint32_t)s.h * (uint64_t)p.c_sh);  // (h >= 0: no sign extension)
  // (in 32 bits: token positions are below 2^31, so are their differences' magnitudes)
  const int d0 = (int)s.t0 - (int)ts, d1 = (int)s.te - (int)ts;
  const int lo = d0 > 0 ? d0 : 0, hi = d1 < DM_TOK ? d1 : DM_TOK;
  const uint32_t range = hi > lo ? ((1u << hi) - 1u) & ~((1u << lo) - 1u) : 0u;
  // Token positions fit 32 bits (a tile starts below te, at most a klen: an int32): the block
  // index in 32 bits (dm_blk), not a 64-bit division routine per tile.
  if (F::CONTIG_OK && contig) {
    const uint32_t lb = dm_blk(p, (uint32_t)ts);
    if (bid < 0 || bid >= p.num_blocks) return 0u;
    const uint8_t* src = p.cache + (int64_t)((uint64_t)(uint32_t)bid * (uint64_t)p.c_sb) + hoff +
                         (int64_t)((uint32_t)ts - lb * (uint32_t)p.block_size) * F::SLOT;
    enum { NU = DM_TOK * F::SLOT / 16 };  // 16-byte units of the tile
    DmCopyU<0, (NU + 31) / 32, NU>::run(st + 16 * lane, src + 16 * lane, lane);
    return range;
  }
  if (lane < DM_TOK) {
    int64_t o = -1;
    if ((range >> lane) & 1) {
      const uint32_t tg = (uint32_t)ts + lane, lb = dm_blk(p, tg);
      const int32_t bid = bt_row[lb];
      if (bid >= 0 && bid < p.num_blocks) o = (int64_t)bid * p.c_sb + hoff + (int64_t)(tg - lb * (uint32_t)p.block_size) * p.c_st;
    }
    off[lane] = o;
  }
  oct_sync_wave();
  uint32_t mask = 0;
  OCT_UNROLL4 for (int t = 0; t < DM_TOK; t++) {
    const int64_t o = off[t];
    if (o < 0) continue;
    mask |= 1u << t;
    for (int u = lane; u < F::SU; u += 32)
      oct_copy_g2s<F::UB>(st + t * F::ROW + u * F::UB, p.cache + o + u * F::UB);
  }
  oct_sync_wave();  // off is rewritten by the next tile's call
  return mask;
}
template <int FMT>
OCT_DEV uint32_t dm_issue(const OctDecodeParams& p, const DmSet& s, int64_t* off, uint8_t* st, const int32_t* bt_row,
                          int64_t ts, bool contig, int lane) {
  return dm_issue<FMT>(p, s, off, st, bt_row, ts, contig, lane, dm_tile_bid<FMT>(p, bt_row, ts, contig));
}

// The queries of a pass, in two parts so that the caller can stage its first tiles while the loads
// are in flight: dm_qload loads warp w's queries w, w + NWQ, ... of the NWQ warps
// (zero past np), dm_qput rotates them like K in float32 and writes their B fragments, rounded to
// fp16 at their dec_qpos places (INT8K: the int8 row, and its scale in qs).
template <int NT, int NWQ>
struct DmQ {
  enum { PER = (8 * NT + NWQ - 1) / NWQ };
  float x[PER][8];
};
template <int FMT, int NT, int NWQ>
OCT_DEV void dm_qload(const OctDecodeParams& p, const DmSet& s, int lane, int w, DmQ<NT, NWQ>& qx) {
  OCT_UNROLL for (int k = 0; k < DmQ<NT, NWQ>::PER; k++) {
    const int c = w + k * NWQ;
    OCT_UNROLL for (int i = 0; i < 8; i++) qx.x[k][i] = 0.0f;
    if (c < s.np) {
      const int q = s.qb + c;
      oct_load8(p.query + (int64_t)(s.row0 + dm_rowj(p, s, q)) * p.q_st + (int64_t)(s.h * p.g + dm_qhead(p, q)) * p.q_sh + 8 * lane,
                p.dtype, qx.x[k]);
    }
  }
}
template <int FMT, int NT, int NWQ>
OCT_DEV void dm_qput(const OctDecodeParams& p, const DmSet& s, uint16_t (*qf)[16][32][4], float* qs, int lane, int w,
                     DmQ<NT, NWQ>& qx) {
  OCT_UNROLL for (int k = 0; k < DmQ<NT, NWQ>::PER; k++) {
    const int c = w + k * NWQ;
    if (c >= 8 * NT) continue;
    float* x = qx.x[k];
    if (c < s.np) oct_rotate(x, p.k_signs, lane, !DecFmt<FMT>::COMPACT);
#if OCT_DM_INT8K
    // int8rowq: qmax = max(1e-8, max|x|) over the row, q = rint(x·127/qmax) clamped to ±127,
    // scale qmax/127; byte e of word j of lane group t of block b goes to k-step 2b + j/2, register
    // j & 1 (the m16n8k32 B operand: rows 4t.. and 16 + 4t..).
    float amax = 0.0f;
    OCT_UNROLL for (int i = 0; i < 8; i++) amax = oct_fmax(amax, oct_fabs(x[i]));
    const float qmax = oct_fmax(oct_max32(amax), 1e-8f);
    uint8_t* qb = (uint8_t*)qf[c >> 3][0][0];
    OCT_UNROLL for (int i = 0; i < 8; i++) {
      const int pos = dec_qpos<FMT>(8 * lane + i), j = (pos >> 2) & 3;
      const float y = oct_fmin(oct_fmax(oct_rint(oct_div_rn(oct_mul_rn(x[i], 127.0f), qmax)), -127.0f), 127.0f);
      qb[((2 * (pos >> 6) + (j >> 1)) * 32 + 4 * (c & 7) + ((pos >> 4) & 3)) * 8 + 4 * (j & 1) + (pos & 3)] = (uint8_t)(int8_t)(int)y;
    }
    if (lane == 0) qs[c] = c < s.np ? oct_div_rn(qmax, 127.0f) : 0.0f;
#else
    (void)qs;
    // wmma-f16q: the row as fp16 at dec_qpos's places, in 4- and 8-byte stores (not one 2-byte
    // store per dim), the places worked out per lane (dims 8·lane + i of block b = lane >> 3):
    // - a 3-bit block (compact, or b > 0): dim i goes to k-step 4b + i/2, B row 4(c & 7) + g
    //   (g = (lane & 7) >> 1), half (lane & 1) + 2(i & 1). So lanes 2u and 2u + 1 fill the four
    //   halves of one entry per pair of dims: after one exchange each lane stores one word,
    //   (its x[2m], the pair's x[2m]) from the even lane and (the pair's x[2m+1], its x[2m+1])
    //   from the odd one;
    // - the 4-bit block 0 (not compact): dim i = 4a + 2p + e goes to k-step 2(lane & 1) + p, B row
    //   4(c & 7) + ((lane & 7) >> 1), half 2e + a: two whole entries, one 8-byte store each.
    uint32_t hv[8];
    OCT_UNROLL for (int i = 0; i < 8; i++) hv[i] = oct_f32_to_f16(x[i]);
    const int odd = lane & 1, row = 4 * (c & 7) + ((lane & 7) >> 1);
    uint32_t snd[2], rcv[2];  // halves for m = 2j, 2j + 1: the odd lane sends x[2m], the even x[2m + 1]
    OCT_UNROLL for (int j = 0; j < 2; j++) {
      snd[j] = odd ? hv[4 * j] | hv[4 * j + 2] << 16 : hv[4 * j + 1] | hv[4 * j + 3] << 16;
      rcv[j] = oct_shfl_xor_u32<1>(snd[j]);
    }
    if (!DecFmt<FMT>::COMPACT && lane < 8) {
      OCT_UNROLL for (int pp = 0; pp < 2; pp++) {
        uint16_t* e = qf[c >> 3][2 * odd + pp][row];
        dm_st32(e, hv[2 * pp] | hv[4 + 2 * pp] << 16), dm_st32(e + 2, hv[2 * pp + 1] | hv[5 + 2 * pp] << 16);
      }
    } else {
      OCT_UNROLL for (int m = 0; m < 4; m++) {
        const uint32_t r = (rcv[m >> 1] >> (16 * (m & 1))) & 0xFFFFu;
        dm_st32(&qf[c >> 3][4 * (lane >> 3) + m][row][2 * odd], odd ? r | hv[2 * m + 1] << 16 : hv[2 * m] | r << 16);
      }
    }
#endif
  }
}

// Per lane, before a pass's tiles: the klen of queries 8(n0 + n) + 2t + c of N tiles n0 .. n0 + NT - 1
// (0 past np), the running max -inf and l 0.
template <int NT>
OCT_DEV void dm_rows(const OctDecodeParams& p, const DmSet& s, int t, int n0, int kq[NT][2], float mrun[NT][2], float lrun[NT][2]) {
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OCT_UNROLL for (int c = 0; c < 2; c++) {
      const int qc = 8 * (n0 + n) + 2 * t + c, j = qc < s.np ? dm_rowj(p, s, s.qb + qc) : 0;
      kq[n][c] = qc < s.np ? (j == 0 ? s.klen[0] : j == 1 ? s.klen[1] : j == 2 ? s.klen[2] : s.klen[3]) : 0;
      mrun[n][c] = -oct_inf(), lrun[n][c] = 0.0f;
    }
  }
}

// K block b's share of the scores of the staged rows rg (token g) and r8 (token g + 8): x[n][v] =
// the block's dot (fp32 over four m16n8k16 k-steps; INT8K: the exact int32 dot of two m16n8k32) ×
// the token's K block scale (ksb for token g, k8 for g + 8), for element v of N tile n (token g +
// 8(v >> 1), query 8n + 2t + (v & 1)).
template <int FMT, int NT>
OCT_DEV void dm_kblock(const uint8_t* rg, const uint8_t* r8, int b, int t, int lane, uint16_t (*qf)[16][32][4], float ksb,
                       float k8, float x[NT][4]) {
#if OCT_DM_INT8K
  uint32_t wg[4], w8[4];
  dec_kwords<FMT, false>(rg, b, t, wg);
  dec_kwords<FMT, false>(r8, b, t, w8);
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OctMmaI32 acc;
    OCT_UNROLL for (int v = 0; v < 4; v++) acc.r[v] = 0;
    OCT_UNROLL for (int j2 = 0; j2 < 2; j2++) {
      OctMmaA8 a;
      a.r[0] = wg[2 * j2], a.r[1] = w8[2 * j2], a.r[2] = wg[2 * j2 + 1], a.r[3] = w8[2 * j2 + 1];
      const OctMmaB16 qv = dm_ld64(qf[n][0][0] + 4 * ((2 * b + j2) * 32 + lane));
      OctMmaB8 bq;
      bq.r[0] = qv.r[0], bq.r[1] = qv.r[1];
      acc = oct_mma_m16n8k32_s32_s8(a, bq, acc);
    }
    OCT_UNROLL for (int v = 0; v < 4; v++) x[n][v] = oct_mul_rn((float)acc.r[v], v >> 1 ? k8 : ksb);
  }
#else
  uint32_t glo[4], ghi[4], elo[4], ehi[4];
  dm_kfrag<FMT>(rg, b, t, glo, ghi);
  dm_kfrag<FMT>(r8, b, t, elo, ehi);
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OctMmaF32 acc;
    OCT_UNROLL for (int v = 0; v < 4; v++) acc.r[v] = 0.0f;
    OCT_UNROLL for (int j = 0; j < 4; j++) {
      OctMmaA16 a;
      a.r[0] = glo[j], a.r[1] = elo[j], a.r[2] = ghi[j], a.r[3] = ehi[j];
      const OctMmaB16 bq = dm_ld64(qf[n][4 * b + j][lane]);
      acc = oct_mma_m16n8k16_f32_f16(a, bq, acc);
    }
    OCT_UNROLL for (int v = 0; v < 4; v++) x[n][v] = oct_mul_rn(acc.r[v], v >> 1 ? k8 : ksb);
  }
#endif
}

// The online softmax of one tile per query (base 2, in registers; lane (g, t) holds tokens g, g + 8
// of queries 2t, 2t + 1 of each N tile): updates mrun and lrun, returns each query's alpha and
// whether any is not 1, and writes P' = fp16(fp32(p · V scale) · κ) to the warp's transpose buffer
// pt [N tile][query][token]. sc: the tile's summed scores (before score_scale); mask: the tile's
// tokens to attend to; vsg, vs8: the V scales of tokens g and g + 8.
// The exp2 is ex2.approx.ftz, within 2 ulps with results below 2^-126 flushed to 0 (the fp32
// profiles' exp2 and ftz terms, as the mma prefill), not exp2f with its fix-ups for subnormal
// results (a compare and two predicated multiplies per call; six calls per tile and N tile).

template <int NT>
OCT_DEV bool dm_softmax(const OctDecodeParams& p, float sc[NT][4], uint32_t mask, int64_t ts, int g, int t, int kq[NT][2],
                        float mrun[NT][2], float lrun[NT][2], float alpha[NT][2], float vsg, float vs8,
                        uint16_t (*pt)[8][DM_TOK]) {
  const float ninf = -oct_inf();
  const bool okg = (mask >> g) & 1, ok8 = (mask >> (g + 8)) & 1;
  const int tgg = (int)ts + g, tg8 = (int)ts + g + 8;  // (token positions are below 2^31)
  bool rescale = false;
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OCT_UNROLL for (int c = 0; c < 2; c++) {
      // (mutant OCT_MUT_DECODE_MMA_KLEN_EDGE: the token at klen attended too)
      const int kqe = kq[n][c] + (OCT_MUTANT(OCT_MUT_DECODE_MMA_KLEN_EDGE) && kq[n][c] > 0 ? 1 : 0);
      const float sg = okg && tgg < kqe ? oct_mul_rn(sc[n][c], p.score_scale) : ninf;
      const float s8 = ok8 && tg8 < kqe ? oct_mul_rn(sc[n][2 + c], p.score_scale) : ninf;
      float mx = oct_fmax(sg, s8);
      mx = oct_fmax(mx, oct_shfl_xor<4>(mx));
      mx = oct_fmax(mx, oct_shfl_xor<8>(mx));
      mx = oct_fmax(mx, oct_shfl_xor<16>(mx));
      const float mo = mrun[n][c], mn = oct_fmax(mo, mx);
      float al = 1.0f, pg = 0.0f, p8 = 0.0f;
      if (mn != ninf) al = oct_exp2_ftz(mo - mn), pg = oct_exp2_ftz(sg - mn), p8 = oct_exp2_ftz(s8 - mn);
      float sum = oct_add_rn(pg, p8);
      sum = oct_add_rn(sum, oct_shfl_xor<4>(sum));
      sum = oct_add_rn(sum, oct_shfl_xor<8>(sum));
      sum = oct_add_rn(sum, oct_shfl_xor<16>(sum));
      lrun[n][c] = oct_fma(lrun[n][c], al, sum);
      if (OCT_MUTANT(OCT_MUT_DECODE_MMA_L_F16)) lrun[n][c] = oct_f16_to_f32(oct_f32_to_f16(lrun[n][c]));  // mutant
      mrun[n][c] = mn;
      alpha[n][c] = al;
      rescale = rescale || al != 1.0f;
      // P' = fp16(fp32(p · V scale) · 256); a masked token (p = 0) is exactly 0, whatever its V
      // scale (a poisoned slot a query does not attend to may hold inf).
      const int qc = 2 * t + c;
      const float kap = OCT_DM_INT8K ? 64.0f : 256.0f;  // int8rowq's factor, wmma-f16q's
      pt[n][qc][g] = pg == 0.0f ? (uint16_t)0 : oct_f32_to_f16(oct_mul_rn(oct_mul_rn(pg, vsg), kap));
      pt[n][qc][g + 8] = p8 == 0.0f ? (uint16_t)0 : oct_f32_to_f16(oct_mul_rn(oct_mul_rn(p8, vs8), kap));
    }
  }
  return rescale;
}

// P's B fragments of P·V from the warp's transpose buffer (after oct_sync_wave).
template <int NT>
OCT_DEV void dm_pfrag(uint16_t (*pt)[8][DM_TOK], int g, int t, OctMmaB16 pb[NT]) {
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    pb[n].r[0] = dm_ld32(&pt[n][g][2 * t]);
    pb[n].r[1] = dm_ld32(&pt[n][g][2 * t + 8]);
  }
}

// o (MT dim tiles) times each query's alpha.
template <int NT, int MT>
OCT_DEV void dm_rescale(OctMmaF32 (*o)[NT], float alpha[NT][2]) {
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    // (mutant OCT_MUT_DECODE_MMA_ALPHA_ROW: query 2t's factor for query 2t + 1 too)
    const float a1 = OCT_MUTANT(OCT_MUT_DECODE_MMA_ALPHA_ROW) ? alpha[n][0] : alpha[n][1];
    OCT_UNROLL for (int mt = 0; mt < MT; mt++) {
      o[mt][n].r[0] = oct_mul_rn(o[mt][n].r[0], alpha[n][0]), o[mt][n].r[2] = oct_mul_rn(o[mt][n].r[2], alpha[n][0]);
      o[mt][n].r[1] = oct_mul_rn(o[mt][n].r[1], a1), o[mt][n].r[3] = oct_mul_rn(o[mt][n].r[3], a1);
    }
  }
}

// P·V of the dims of V lane 4g + m (M tiles 4m .. 4m + 3, om[0..3]) over the staged tile at ru0 =
// the row of token 2t: tokens 2t, 2t + 1, 2t + 8, 2t + 9 paired by byte permutes into fp16 halves.
// 4-bit V in the kernels of one N tile: the tokens are paired on their code bytes before the lookup
// (one byte permute per 8 codes, not one per 4 codebook bytes): byte j of a lane's code word holds
// dims j and j + 4 (nibbles 2j, 2j + 1), so the pair (a.b0, b.b0, a.b1, b.b1) looks up to the
// codebook bytes (a0, a4, b0, b4 | a1, a5, b1, b5), and oct_h4_pairs takes (a0, b0) and (a4, b4)
// from each word: the operands of the unpaired path, bit for bit (big 0.5109 ms against 0.5158).
// The quad kernel (three N tiles share each decoded tile) pairs after the lookup: the pairing
// gains it nothing on q4s100k.
// Entry (byte i of x) of copy lc (times 4: its byte offset) of the V table at vt. Rows of 32 words
// (VW, OCT_DM_VTROW 128): the byte's offset e · 128 computed as one shift and one select that also
// takes in the copy (its bits below the entry's), so the load's address is that register plus the
// table's (warp-uniform) base. Rows of 64 words (OCT_DM_VTROW 256): the offset e · 256 + lc is one
// byte permute, byte i of x above lc's low byte.
template <int VW>
OCT_DEV uint32_t dm_vt(const uint32_t* vt, uint32_t x, int i, uint32_t lc) {
  if (VW == 64) return *(const uint32_t*)((const uint8_t*)vt + oct_perm8n(x, lc, 0x5504u | (uint32_t)i << 4));
  enum { SH = 7 };
  const uint32_t e = 8 * i < SH ? x << (SH - 8 * i) : x >> (8 * i - SH);
  return *(const uint32_t*)((const uint8_t*)vt + oct_and_or<255u << SH>(e, lc));
}
// The V table (VR > 0, NT 1): vt is the table (DmVt), lc the lane's copy times 4. The code words of
// tokens a, b (and c, d) are interleaved by nibble, so that byte j of one word is (a, b)'s codes of
// dim j and byte j of the other of dim j + 4; each byte is an entry: the operand register itself.
template <int FMT, int NT, int VR = 0, int VW = VR>
OCT_DEV void dm_pv(const uint8_t* ru0, int g, int m, const OctMmaB16 pb[NT], OctMmaF32 (*om)[NT],
                   const uint32_t* vtl = nullptr, uint32_t lc = 0) {
  typedef DmFmt<FMT> F;
  if (VR > 0) {
    static_assert(VR == 0 || (VR == 32 && F::VBITS == 4 && NT == 1), "the V table: 32 copies, 4-bit V, one N tile");
    const int vo = F::V_LO + 4 * (4 * g + m);
    const uint32_t xa = *(const uint32_t*)(ru0 + vo), xb = *(const uint32_t*)(ru0 + F::ROW + vo);
    const uint32_t xc = *(const uint32_t*)(ru0 + 8 * F::ROW + vo), xd = *(const uint32_t*)(ru0 + 9 * F::ROW + vo);
    const uint32_t lab = (xa & 0x0F0F0F0Fu) | ((xb << 4) & 0xF0F0F0F0u), hab = ((xa >> 4) & 0x0F0F0F0Fu) | (xb & 0xF0F0F0F0u);
    const uint32_t lcd = (xc & 0x0F0F0F0Fu) | ((xd << 4) & 0xF0F0F0F0u), hcd = ((xc >> 4) & 0x0F0F0F0Fu) | (xd & 0xF0F0F0F0u);
    OCT_UNROLL for (int i = 0; i < 4; i++) {  // om[i]: dims i (rows g) and i + 4 (rows g + 8) of the word
      OctMmaA16 a;
      a.r[0] = dm_vt<VW>(vtl, lab, i, lc), a.r[1] = dm_vt<VW>(vtl, hab, i, lc);
      a.r[2] = dm_vt<VW>(vtl, lcd, i, lc), a.r[3] = dm_vt<VW>(vtl, hcd, i, lc);
      OCT_UNROLL for (int n = 0; n < NT; n++) om[i][n] = oct_mma_m16n8k16_f32_f16(a, pb[n], om[i][n]);
    }
    return;
  }
  if (F::VBITS == 4 && NT == 1) {
    const int vo = F::V_LO + 4 * (4 * g + m);
    const uint32_t xa = *(const uint32_t*)(ru0 + vo), xb = *(const uint32_t*)(ru0 + F::ROW + vo);
    const uint32_t xc = *(const uint32_t*)(ru0 + 8 * F::ROW + vo), xd = *(const uint32_t*)(ru0 + 9 * F::ROW + vo);
    OCT_UNROLL for (int k = 0; k < 2; k++) {
      uint32_t ab[2], cd[2];
      oct_cb4n(oct_perm8n(xa, xb, k ? 0x7362u : 0x5140u), OCT_CB4B_0, OCT_CB4B_1, OCT_CB4B_2, OCT_CB4B_3, ab[0], ab[1]);
      oct_cb4n(oct_perm8n(xc, xd, k ? 0x7362u : 0x5140u), OCT_CB4B_0, OCT_CB4B_1, OCT_CB4B_2, OCT_CB4B_3, cd[0], cd[1]);
      OCT_UNROLL for (int hb = 0; hb < 2; hb++) {
        OctMmaA16 a;
        oct_h4_pairs(ab[hb], a.r[0], a.r[1]);
        oct_h4_pairs(cd[hb], a.r[2], a.r[3]);
        OCT_UNROLL for (int n = 0; n < NT; n++) om[2 * k + hb][n] = oct_mma_m16n8k16_f32_f16(a, pb[n], om[2 * k + hb][n]);
      }
    }
    return;
  }
  uint32_t wa[2], wb[2], wc[2], wd[2];
  dec_vbytes<FMT>(ru0, 4 * g + m, wa[0], wa[1]);
  dec_vbytes<FMT>(ru0 + F::ROW, 4 * g + m, wb[0], wb[1]);
  dec_vbytes<FMT>(ru0 + 8 * F::ROW, 4 * g + m, wc[0], wc[1]);
  dec_vbytes<FMT>(ru0 + 9 * F::ROW, 4 * g + m, wd[0], wd[1]);
  OCT_UNROLL for (int k = 0; k < 2; k++) {
    OCT_UNROLL for (int hb = 0; hb < 2; hb++) {
      OctMmaA16 a;
      oct_h4_codes(oct_pair_tokens(wa[k], wb[k], hb), a.r[0], a.r[1]);
      oct_h4_codes(oct_pair_tokens(wc[k], wd[k], hb), a.r[2], a.r[3]);
      OCT_UNROLL for (int n = 0; n < NT; n++) om[2 * k + hb][n] = oct_mma_m16n8k16_f32_f16(a, pb[n], om[2 * k + hb][n]);
    }
  }
}

// Scale i of a staged row (fp16 after its codes: the K block scales, then the V scale) and where
// K block b's and the V scale are (the compact format: one K scale, then V).
template <int FMT>
OCT_DEV float dm_sc(const uint8_t* row, int i) {
  return oct_f16_to_f32(((const uint16_t*)(row + DmFmt<FMT>::SCALES))[i]);
}
template <int FMT>
OCT_DEV int dm_kix(int b) { return DmFmt<FMT>::COMPACT ? 0 : b; }
template <int FMT>
OCT_DEV int dm_vix() { return DmFmt<FMT>::COMPACT ? 1 : 4; }

// The K block scale of block b of the staged rows rg and r8 (tokens g, g + 8) and their V scales
// (the quad kernel: a warp scores one K block, so it reads one scale per row, not four).
template <int FMT>
OCT_DEV void dm_scale1(const uint8_t* rg, const uint8_t* r8, int b, float& kg, float& k8, float& vsg, float& vs8) {
  kg = dm_sc<FMT>(rg, dm_kix<FMT>(b)), k8 = dm_sc<FMT>(r8, dm_kix<FMT>(b));
  vsg = dm_sc<FMT>(rg, dm_vix<FMT>()), vs8 = dm_sc<FMT>(r8, dm_vix<FMT>());
}

// The K block scales of the staged rows rg and r8 (tokens g, g + 8) and their V scales.
template <int FMT>
OCT_DEV void dm_scales(const uint8_t* rg, const uint8_t* r8, float ksg[4], float ks8[4], float& vsg, float& vs8) {
  OCT_UNROLL for (int b = 0; b < 4; b++) ksg[b] = dm_sc<FMT>(rg, dm_kix<FMT>(b)), ks8[b] = dm_sc<FMT>(r8, dm_kix<FMT>(b));
  vsg = dm_sc<FMT>(rg, dm_vix<FMT>()), vs8 = dm_sc<FMT>(r8, dm_vix<FMT>());
}

// The staging path of a pass: whole 16-byte tiles when the slots of a tile are contiguous.
template <int FMT>
OCT_DEV bool dm_contig(const OctDecodeParams& p) {
  return p.c_st == DecFmt<FMT>::SLOT && p.block_size % DM_TOK == 0 && (p.c_sb & 15) == 0 && (p.c_sh & 15) == 0 &&
         ((uintptr_t)p.cache & 15) == 0;
}

// One unit's (a warp's, or a quad's) o · f of the dims of V lane 4g + m (om: its four M tiles) for N
// tile n into rows [query 0..7][DM_RES words: dim d at d + d / 32] at rw.
template <int FMT, int NT, bool SCALE = true>
OCT_DEV void dm_put_rows(float* rw, OctMmaF32 (*om)[NT], int n, int m, int g, int t, const float* f) {
  int run0, run1;
  dec_runs<FMT>(4 * g + m, run0, run1);
  OCT_UNROLL for (int k = 0; k < 2; k++)
    OCT_UNROLL for (int hb = 0; hb < 2; hb++)
      OCT_UNROLL for (int v = 0; v < 4; v++) {
        const int e = 2 * hb + (v >> 1), d = (e & 1 ? run1 : run0) + 2 * k + (e >> 1);
        rw[(2 * t + (v & 1)) * DM_RES + d + (d >> 5)] = SCALE ? oct_mul_rn(om[2 * k + hb][n].r[v], f[v & 1]) : om[2 * k + hb][n].r[v];
      }
}

// A workgroup's work: the empty partial rows of its chunk's rows that attend to nothing, then its
// share of the passes of each row set (the chunk's rows of one request), pass by pass.
template <int FMT, int NT, int NW, class SM>
OCT_DEV void dm_body(const OctDecodeParams& p, SM& sm) {
  const int lane = oct_lane(), w = oct_wave();
  oct_pdl_trigger();  // the reduce may be scheduled once every workgroup has started (it waits for our end)
  dm_vfill<FMT, NT, NW>(sm);
  // Workgroup x = chunk · wpc + pi: the wpc workgroups of a row chunk share its passes, pass k
  // (counted over the chunk's row sets in order) going to pi = k % wpc.
  const int wpc = p.wpc > 1 ? p.wpc : 1, pi = oct_bid_x() % wpc;
  // (mutant OCT_MUT_DECODE_MMA_PASS_GRID: the pass index left in the chunk's row)
  const int row0 = OCT_MUTANT(OCT_MUT_DECODE_MMA_PASS_GRID) ? oct_bid_x() * p.qgroup / wpc : oct_bid_x() / wpc * p.qgroup;
  const int split = oct_bid_y(), h = oct_bid_z();
  {  // the chunk's query rows (its G heads of KV head h) asked of the L2 while the maps load:
    // query q = i / 4 of the chunk (row dm_qrow, head dm_qhead), 128-byte line i % 4 of its 512 bytes
    const int nrow = p.num_q - row0 < p.qgroup ? p.num_q - row0 : p.qgroup, nl = nrow * p.g * 4;
    for (int i = oct_tid(); i < nl; i += 32 * NW)
      oct_prefetch_l2(p.query + (int64_t)(row0 + dm_qrow(p, i >> 2)) * p.q_st + (int64_t)(h * p.g + dm_qhead(p, i >> 2)) * p.q_sh +
                      64 * (i & 3));
  }
  const int64_t t0 = (int64_t)split * p.split_len;
  const int64_t t1 = t0 + p.split_len < p.kv_max ? t0 + p.split_len : p.kv_max;

  // Rows of the chunk: request and clamped klen; invalid request or klen <= 0: an empty row.
  int req[4], klen[4], exist = 0, valid = 0;
  OCT_UNROLL for (int j = 0; j < 4; j++) {
    req[j] = -1, klen[j] = 0;
    const int i = row0 + j;
    if (j >= p.qgroup || i >= p.num_q) continue;
    exist |= 1 << j;
    const int r = p.q_to_req[i];
    int64_t k = p.q_to_klen[i];
    k = k < p.kv_max ? k : p.kv_max;
    if (r >= 0 && r < p.num_reqs && k > 0) req[j] = r, klen[j] = (int)k, valid |= 1 << j;
  }
  if (pi == 0) {
    OCT_UNROLL for (int j = 0; j < 4; j++) {
      if (!((exist & ~valid) >> j & 1)) continue;
      for (int q = w; q < p.g; q += NW) {
        const int64_t prow = ((int64_t)(row0 + j) * p.hq + (int64_t)h * p.g + q) * p.num_splits + split;
        dm_write_empty(p.partials + prow * p.pstride, lane);
      }
    }
  }

  int remaining = valid, k = 0;
  while (remaining) {
    // The row set: remaining rows with the request of the lowest remaining row.
    int first = 0;
    while (!((remaining >> first) & 1)) first++;
    const int r = req[first == 0 ? 0 : first == 1 ? 1 : first == 2 ? 2 : 3];
    DmSet s;
    s.rows = 0, s.req = r, s.row0 = row0, s.split = split, s.h = h;
    int nrows = 0, kmax = 0;
    OCT_UNROLL for (int j = 0; j < 4; j++) {
      s.klen[j] = klen[j];
      if (((remaining >> j) & 1) && req[j] == r) {
        s.rows |= j << (4 * nrows++);
        kmax = klen[j] > kmax ? klen[j] : kmax;
        remaining &= ~(1 << j);
      }
    }
    const int nq = nrows * p.g;
    // (mutant OCT_MUT_DECODE_MMA_SPLIT_EDGE: the split does not end at t1)
    s.t0 = t0, s.te = t1 < kmax && !OCT_MUTANT(OCT_MUT_DECODE_MMA_SPLIT_EDGE) ? t1 : (int64_t)kmax;
    if (s.te <= s.t0) {  // no token of the split for this set: empty partials, nothing read (one pass)
      if (k++ % wpc == pi) {
        s.qb = 0, s.np = nq;
        for (int q = w; q < nq; q += NW) dm_write_empty(p.partials + dm_prow(p, s, q), lane);
      }
      continue;
    }
    // Passes of equal width (24 queries in two passes: 12 + 12, not 16 + 8).
    const int npass = (nq + 8 * NT - 1) / (8 * NT), width = (nq + npass - 1) / npass;
    for (int qb = 0; qb < nq; qb += width) {
      if (k++ % wpc != pi) continue;
      s.qb = qb, s.np = nq - qb < width ? nq - qb : width;
      dm_run_pass<FMT, NT, NW>(p, s, sm, lane, w);
    }
  }
}

#if defined(OCT_NV)
extern __shared__ OctU4 dm_dyn[];  // (16-byte aligned)
#endif
// The kernel body of a workgroup kind whose shared memory is SM.
template <int FMT, int NT, int NW, class SM>
OCT_DEV void dm_kernel(const OctDecodeParams& p) {
#if defined(OCT_NV)
  dm_body<FMT, NT, NW>(p, *reinterpret_cast<SM*>(dm_dyn));
#else
  OCT_SHARED SM sm;
  dm_body<FMT, NT, NW>(p, sm);
#endif
}
#define OCT_DM_BODY(fmt, nt, nw, smt) dm_kernel<fmt, nt, nw, smt<fmt, nt, nw>>(p);
#else
#define OCT_DM_BODY(fmt, nt, nw, smt) (void)p;
#endif

// One kernel per format (the layout is a compile-time constant), pass width and warp count: name
// (fmt, nt N tiles per pass, nw warps, smt<fmt, nt, nw> its shared memory), compiled for occ
// workgroups per SM (a register budget).
#define OCT_DM_KERNEL(name, fmt, nt, nw, smt, occ) \
  OCT_KERNEL_OCC(32 * nw, occ) void name(OctDecodeParams p) { OCT_DM_BODY(fmt, nt, nw, smt) }

// CUDA: the shared memory is dynamic (more than 48 KB): the kernel's limit is raised before each
// launch (cheap; the status is checked), then it is launched with that many bytes.
#if defined(OCT_NV)
template <class SM, int NW>
static hipError_t dm_launch(void (*kern)(OctDecodeParams), const OctDecodeParams& p, int64_t chunks) {
  const int bytes = (int)sizeof(SM);
  cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess)  // the largest shared-memory carve-out, so that 4 workgroups fit an SM
    e = cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  if (e != cudaSuccess) return e;
  kern<<<dim3((unsigned)chunks, (unsigned)p.num_splits, (unsigned)p.hkv), dim3(32 * NW), bytes, 0>>>(p);
  return oct_launch_status();
}
#define OCT_DM_LAUNCH(name, fmt, nt, nw, smt) return dm_launch<smt<fmt, nt, nw>, nw>(name, p, chunks)
#else
#define OCT_DM_LAUNCH(name, fmt, nt, nw, smt) \
  OCT_LAUNCH(name, chunks, p.num_splits, p.hkv, 32 * nw, p); \
  return oct_launch_status()
#endif

// The launches of each kind (p.wpc set; chunks: the grid's x), which oct_launch_decode_mma
// (decode_mma.hip) chooses between: the per-warp kernels with nt N tiles per pass, on 8 warps when
// w8; the quad kernel.
hipError_t oct_launch_decode_mma_warp(const OctDecodeParams& p, int64_t chunks, int nt, bool w8);
hipError_t oct_launch_decode_mma_quad(const OctDecodeParams& p, int64_t chunks);
