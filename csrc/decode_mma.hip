// decode, mma tier (sm_90; docs/contract.md §3.3, profile wmma-f16q): split-KV attention over the
// packed cache with NVIDIA's warp-level mma.sync (m16n8k16, f16 operands, fp32 accumulation),
// writing split partials (§3.4 layout) that the portable reduce merges. On CUDA builds the
// instructions, on the emulator their model (octave_mma.h); HIP builds get stubs. docs/kernels.md,
// "The mma tier: decode", has the design and its budget; in short:
//
// Workgroup (row chunk, split, KV head), NW warps (4, or 8 on small grids). The queries of a row set (the
// chunk's rows of one request × the G heads of the KV head) are taken 8 or 16 at a time (a "pass":
// one or two 8-column N tiles); when a chunk has more queries than one pass takes (MTP rows), its
// passes go to ⌈G·query_group / pass width⌉ workgroups side by side (p.wpc), not one after
// another. Each warp is its own pipeline over the 16-token tiles ts = 16k, 16(k + 4), ... of the
// split (tiles aligned to multiples of 16; tokens outside the split masked), with no workgroup
// barrier inside the token loop:
//   - staging: the tile's raw slots go to the warp's shared memory with cp.async, one tile ahead:
//     16-byte copies of the whole tile when its 16 slots are contiguous (block size a multiple of
//     16, token stride = slot bytes, 16-byte aligned block and head strides), else per slot in
//     units of 8 bytes (4 for compact);
//   - scores S^T = K·Q^T (the "swapped" product: M = 16 tokens, N = 8 queries, so G = 6 wastes no
//     rows): per 64-dim K block four m16n8k16 on the K codebook bytes as fp16 (byte permute
//     lookup with the table biased by 128, spread into fp16 halves 0x64bb, then one f16x2
//     subtraction, all exact) against the fp16 rotated query, in the permuted dim order of
//     dec_qpos; the block's fp32 dot times the token's K block scale, summed over the blocks in
//     order, times sm_scale·log2(e)/64 — wmma-f16q's arithmetic;
//   - online softmax in base 2 in registers: lane (g, t) holds tokens g, g + 8 of queries 2t,
//     2t + 1; tile max and Σ p by butterflies over g; P' = fp16(fp32(p · V scale) · 256), through
//     a 256-byte per-warp transpose into the B operand of P·V;
//   - O^T += V^T·P'^T: M = 16 dims, N = 8 queries, K = 16 tokens; lane g's V bytes are dims of V
//     lanes 4g..4g+3 (dec_vbytes), paired across tokens by byte permutes into fp16 halves.
// At the end of the split the warps' (m, l, o) are merged in shared memory (warp 0 sums, in warp
// order, into rows in shared memory) and the workgroup writes the partial rows coalesced,
// o = Σ P'·codebook / (256·64).
#include "octave_lane.h"
#include "octave_mma.h"
#include "octave_params.h"
#include "octave_slot.h"

// Warps per workgroup (NW), each its own pipeline over the split's tiles: 4, or 8 for passes of 8
// queries when the grid has no more workgroups than the device has SMs (the latency shapes: one
// workgroup per SM; q1s100k's decode 33.8 against 26.9 µs, while 8 warps everywhere made big 0.57
// → 0.75 ms; docs/measurements.md, "Fourteenth session", call 5). OCT_DM_W8 = 1 takes 8 for every
// pass of 8 (the emulator's variant library, so that `make emu-test` runs them), 0 never.
#ifndef OCT_DM_W8
#define OCT_DM_W8 -1
#endif
// Passes of up to 16 queries (two N tiles, NT 2) when a chunk has more than 8 (1), or always of 8
// (0: more workgroups of the lighter NT 1 kernel).
#ifndef OCT_DM_NT2
#define OCT_DM_NT2 1
#endif
enum {
  DM_TOK = 16,          // tokens per tile
  DM_STAGE = 16 * 248,  // bytes of one staged tile (the largest slot)
  DM_STAGES = 3,        // staged tiles per warp: two in flight while one is computed
  DM_RES = 264,         // words per merged row in the write-out
};

// Shared memory of a workgroup of NW warps whose passes take NT N tiles (8·NT queries): 55 KB for
// NT 1 and 4 warps, more than the 48 KB of static shared memory, so CUDA builds take it as dynamic
// shared memory.
template <int NT, int NW>
struct DmSmem {
  alignas(16) uint8_t stage[NW][DM_STAGES][DM_STAGE];  // per warp: staged tiles (the merge reuses it)
  alignas(8) uint16_t qf[NT][16][32][4];                      // query B fragments: [N tile][k-step][lane] (INT8K: [8][32][8 bytes])
  float qs[8 * NT];                                           // INT8K: each query's scale qmax / 127
  alignas(8) uint16_t pt[NW][NT][8][DM_TOK];           // per warp: P' as [query][token]
  int64_t off[NW][DM_TOK];                             // per warp: slot offsets of the tile being staged
  float mw[NW][8 * NT], lw[NW][8 * NT];               // per warp: m and l of each query
};

#if OCT_MMA_BODY

template <int FMT>
struct DmFmt : SlotCopy<FMT> {
  static_assert(16 * SlotCopy<FMT>::ROW <= DM_STAGE, "staging layout");
};

// Two fp16 values at p (4-byte aligned) as one register (memcpy: no type punning on the emulator).
OCT_DEV uint32_t dm_ld32(const uint16_t* p) {
  uint32_t x;
  __builtin_memcpy(&x, __builtin_assume_aligned(p, 4), 4);
  return x;
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
OCT_DEV int dm_rowj(const OctDecodeParams& p, const DmSet& s, int q) { return (s.rows >> (4 * (q / p.g))) & 15; }
OCT_DEV int64_t dm_prow(const OctDecodeParams& p, const DmSet& s, int q) {
  return (((int64_t)(s.row0 + dm_rowj(p, s, q)) * p.hq + (int64_t)s.h * p.g + q % p.g) * p.num_splits + s.split) *
         p.pstride;
}

// Issues the copies of the tile at ts (a multiple of 16) into stage st and returns its mask of
// tokens to attend to (in [t0, te), in a valid block). contig: the whole-tile path (see the header).
template <int FMT, int NT, int NW>
OCT_DEV uint32_t dm_issue(const OctDecodeParams& p, const DmSet& s, DmSmem<NT, NW>& sm, uint8_t* st, const int32_t* bt_row,
                          int64_t ts, bool contig, int lane, int w) {
  typedef DmFmt<FMT> F;
  const int64_t hoff = (int64_t)s.h * p.c_sh;
  const int lo = s.t0 > ts ? (int)(s.t0 - ts) : 0, hi = s.te - ts < DM_TOK ? (int)(s.te - ts) : DM_TOK;
  const uint32_t range = hi > lo ? ((1u << hi) - 1u) & ~((1u << lo) - 1u) : 0u;
  // Token positions fit 32 bits (a tile starts below te, at most a klen: an int32): 32-bit
  // division, not a 64-bit division routine per tile.
  if (F::CONTIG_OK && contig) {
    const uint32_t lb = (uint32_t)ts / (uint32_t)p.block_size;
    const int32_t bid = bt_row[lb];
    if (bid < 0 || bid >= p.num_blocks) return 0u;
    const uint8_t* src = p.cache + (int64_t)bid * p.c_sb + hoff + (int64_t)((uint32_t)ts - lb * (uint32_t)p.block_size) * F::SLOT;
    for (int u = lane; u < DM_TOK * F::SLOT / 16; u += 32) oct_copy_g2s16(st + 16 * u, src + 16 * u);
    return range;
  }
  if (lane < DM_TOK) {
    int64_t off = -1;
    if ((range >> lane) & 1) {
      const uint32_t tg = (uint32_t)ts + lane, lb = tg / (uint32_t)p.block_size;
      const int32_t bid = bt_row[lb];
      if (bid >= 0 && bid < p.num_blocks) off = (int64_t)bid * p.c_sb + hoff + (int64_t)(tg - lb * (uint32_t)p.block_size) * p.c_st;
    }
    sm.off[w][lane] = off;
  }
  oct_sync_wave();
  uint32_t mask = 0;
  OCT_UNROLL4 for (int t = 0; t < DM_TOK; t++) {
    const int64_t off = sm.off[w][t];
    if (off < 0) continue;
    mask |= 1u << t;
    for (int u = lane; u < F::SU; u += 32)
      oct_copy_g2s<F::UB>(st + t * F::ROW + u * F::UB, p.cache + off + u * F::UB);
  }
  oct_sync_wave();  // sm.off is rewritten by the next tile's call
  return mask;
}

// One pass: queries qb .. qb + np - 1 of the set (np <= 8·NT) over the split's tokens.
template <int FMT, int NT, int NW>
OCT_DEV void dm_pass(const OctDecodeParams& p, const DmSet& s, DmSmem<NT, NW>& sm, int lane, int w) {
  typedef DmFmt<FMT> F;
  const int g = lane >> 2, t = lane & 3;
  const float ninf = -oct_inf();

  // The queries' B fragments: rotated like K in float32, rounded to fp16, at their dec_qpos places;
  // columns past np zero.
  oct_sync();  // the previous pass's shared memory is read
  for (int c = w; c < 8 * NT; c += NW) {
    float x[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (c < s.np) {
      const int q = s.qb + c;
      oct_load8(p.query + (int64_t)(s.row0 + dm_rowj(p, s, q)) * p.q_st + (int64_t)(s.h * p.g + q % p.g) * p.q_sh + 8 * lane,
                p.dtype, x);
      oct_rotate(x, p.k_signs, lane, !DecFmt<FMT>::COMPACT);
    }
#if OCT_DM_INT8K
    // prefill-int8row: qmax = max(1e-8, max|x|) over the row, q = rint(x·127/qmax) clamped to ±127,
    // scale qmax/127; byte e of word j of lane group t of block b goes to k-step 2b + j/2, register
    // j & 1 (the m16n8k32 B operand: rows 4t.. and 16 + 4t..).
    float amax = 0.0f;
    OCT_UNROLL for (int i = 0; i < 8; i++) amax = oct_fmax(amax, oct_fabs(x[i]));
    const float qmax = oct_fmax(oct_max32(amax), 1e-8f);
    uint8_t* qb = (uint8_t*)sm.qf[c >> 3][0][0];
    OCT_UNROLL for (int i = 0; i < 8; i++) {
      const int pos = dec_qpos<FMT>(8 * lane + i), j = (pos >> 2) & 3;
      const float y = oct_fmin(oct_fmax(oct_rint(oct_div_rn(oct_mul_rn(x[i], 127.0f), qmax)), -127.0f), 127.0f);
      qb[((2 * (pos >> 6) + (j >> 1)) * 32 + 4 * (c & 7) + ((pos >> 4) & 3)) * 8 + 4 * (j & 1) + (pos & 3)] = (uint8_t)(int8_t)(int)y;
    }
    if (lane == 0) sm.qs[c] = c < s.np ? oct_div_rn(qmax, 127.0f) : 0.0f;
#else
    OCT_UNROLL for (int i = 0; i < 8; i++) {
      const int pos = dec_qpos<FMT>(8 * lane + i), kk = 4 * (pos >> 6) + ((pos >> 2) & 3);
      sm.qf[c >> 3][kk][4 * (c & 7) + ((pos >> 4) & 3)][pos & 3] = oct_f32_to_f16(x[i]);
    }
#endif
  }

  // Per lane: queries 8n + 2t + c (c = 0, 1) of each N tile: klen, running max, l; o^T fragments.
  int kq[NT][2];
  float mrun[NT][2], lrun[NT][2];
  OctMmaF32 o[16][NT];  // [dim M tile][N tile]: dims of rows g, g + 8 (dm_vdim), queries 2t, 2t + 1
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OCT_UNROLL for (int c = 0; c < 2; c++) {
      const int qc = 8 * n + 2 * t + c, j = qc < s.np ? dm_rowj(p, s, s.qb + qc) : 0;
      kq[n][c] = qc < s.np ? (j == 0 ? s.klen[0] : j == 1 ? s.klen[1] : j == 2 ? s.klen[2] : s.klen[3]) : 0;
      mrun[n][c] = ninf, lrun[n][c] = 0.0f;
    }
    OCT_UNROLL for (int mt = 0; mt < 16; mt++)
      OCT_UNROLL for (int v = 0; v < 4; v++) o[mt][n].r[v] = 0.0f;
  }
  oct_sync();  // the query fragments are written
#if OCT_DM_INT8K
  float qsc[NT][2];
  OCT_UNROLL for (int n = 0; n < NT; n++)
    OCT_UNROLL for (int c = 0; c < 2; c++) qsc[n][c] = sm.qs[8 * n + 2 * t + c];
#endif

  // The set's block table row and the staging path.
  const int32_t* btr = p.block_table + (int64_t)s.req * p.max_blocks;
  const bool contig = p.c_st == DecFmt<FMT>::SLOT && p.block_size % DM_TOK == 0 && (p.c_sb & 15) == 0 &&
                      (p.c_sh & 15) == 0 && ((uintptr_t)p.cache & 15) == 0;
  const int64_t tfirst = s.t0 & ~(int64_t)(DM_TOK - 1);
  const int ntile = (int)((s.te - tfirst + DM_TOK - 1) / DM_TOK);
  uint8_t* stage0 = sm.stage[w][0];
  uint8_t* stage1 = sm.stage[w][1];
  uint8_t* stage2 = sm.stage[w][2];
  uint32_t mcur = 0, mnext = 0, mlast = 0;
  if (w < ntile) mcur = dm_issue<FMT>(p, s, sm, stage0, btr, tfirst + DM_TOK * w, contig, lane, w);
  oct_async_commit();
  if (w + NW < ntile) mnext = dm_issue<FMT>(p, s, sm, stage1, btr, tfirst + DM_TOK * (w + NW), contig, lane, w);
  oct_async_commit();
  for (int it = w; it < ntile; it += NW) {
    const int64_t ts = tfirst + (int64_t)DM_TOK * it;
    if (it + 2 * NW < ntile)
      mlast = dm_issue<FMT>(p, s, sm, stage2, btr, ts + 2 * DM_TOK * NW, contig, lane, w);
    oct_async_commit();
    oct_async_wait<2>();  // this tile's copies (the next two tiles' may still be in flight)
    oct_sync_wave();
    const uint8_t* rg = stage0 + g * F::ROW;
    const uint8_t* r8 = stage0 + (g + 8) * F::ROW;

    // Scales of tokens g and g + 8.
    float ksg[4], ks8[4];
    const uint16_t* scg = (const uint16_t*)(rg + F::SCALES);
    const uint16_t* sc8 = (const uint16_t*)(r8 + F::SCALES);
    OCT_UNROLL for (int b = 0; b < 4; b++) {
      ksg[b] = oct_f16_to_f32(scg[F::COMPACT ? 0 : b]);
      ks8[b] = oct_f16_to_f32(sc8[F::COMPACT ? 0 : b]);
    }
    const float vsg = oct_f16_to_f32(scg[F::COMPACT ? 1 : 4]), vs8 = oct_f16_to_f32(sc8[F::COMPACT ? 1 : 4]);

    // Scores: element i of N tile n is token g + 8(i >> 1), query 8n + 2t + (i & 1).
    float sc[NT][4];
    OCT_UNROLL for (int b = 0; b < 4; b++) {
#if OCT_DM_INT8K
      uint32_t wg[4], w8[4];
      dec_kwords<FMT, false>(rg, b, t, wg);
      dec_kwords<FMT, false>(r8, b, t, w8);
#else
      uint32_t glo[4], ghi[4], elo[4], ehi[4];
      dm_kfrag<FMT>(rg, b, t, glo, ghi);
      dm_kfrag<FMT>(r8, b, t, elo, ehi);
#endif
      // (mutant OCT_MUT_DECODE_MMA_KSCALE_TOKEN: token g's scale for token g + 8 too)
      const float k8 = OCT_MUTANT(OCT_MUT_DECODE_MMA_KSCALE_TOKEN) ? ksg[b] : ks8[b];
      OCT_UNROLL for (int n = 0; n < NT; n++) {
#if OCT_DM_INT8K
        // The block's exact int32 dot: two m16n8k32 k-steps of 32 dims.
        OctMmaI32 acc;
        OCT_UNROLL for (int v = 0; v < 4; v++) acc.r[v] = 0;
        OCT_UNROLL for (int j2 = 0; j2 < 2; j2++) {
          OctMmaA8 a;
          a.r[0] = wg[2 * j2], a.r[1] = w8[2 * j2], a.r[2] = wg[2 * j2 + 1], a.r[3] = w8[2 * j2 + 1];
          const OctMmaB16 qv = dm_ld64(sm.qf[n][0][0] + 4 * ((2 * b + j2) * 32 + lane));
          OctMmaB8 bq;
          bq.r[0] = qv.r[0], bq.r[1] = qv.r[1];
          acc = oct_mma_m16n8k32_s32_s8(a, bq, acc);
        }
        OCT_UNROLL for (int v = 0; v < 4; v++) {
          const float x = oct_mul_rn((float)acc.r[v], v >> 1 ? k8 : ksg[b]);
          sc[n][v] = b == 0 ? x : oct_add_rn(sc[n][v], x);
        }
#else
        OctMmaF32 acc;
        OCT_UNROLL for (int v = 0; v < 4; v++) acc.r[v] = 0.0f;
        OCT_UNROLL for (int j = 0; j < 4; j++) {
          OctMmaA16 a;
          a.r[0] = glo[j], a.r[1] = elo[j], a.r[2] = ghi[j], a.r[3] = ehi[j];
          const OctMmaB16 bq = dm_ld64(sm.qf[n][4 * b + j][lane]);
          acc = oct_mma_m16n8k16_f32_f16(a, bq, acc);
        }
        OCT_UNROLL for (int v = 0; v < 4; v++) {
          const float x = oct_mul_rn(acc.r[v], v >> 1 ? k8 : ksg[b]);
          sc[n][v] = b == 0 ? x : oct_add_rn(sc[n][v], x);
        }
#endif
      }
    }
#if OCT_DM_INT8K
    OCT_UNROLL for (int n = 0; n < NT; n++)  // times the query's scale (then sm_scale·log2(e)/64 below)
      OCT_UNROLL for (int v = 0; v < 4; v++) sc[n][v] = oct_mul_rn(sc[n][v], qsc[n][v & 1]);
#endif

    // Online softmax per query; P' to the warp's transpose buffer.
    const bool okg = (mcur >> g) & 1, ok8 = (mcur >> (g + 8)) & 1;
    const int64_t tgg = ts + g, tg8 = ts + g + 8;
    float alpha[NT][2];
    bool rescale = false;
    OCT_UNROLL for (int n = 0; n < NT; n++) {
      OCT_UNROLL for (int c = 0; c < 2; c++) {
        // (mutant OCT_MUT_DECODE_MMA_KLEN_EDGE: the token at klen attended too)
        const int64_t kqe = kq[n][c] + (OCT_MUTANT(OCT_MUT_DECODE_MMA_KLEN_EDGE) && kq[n][c] > 0 ? 1 : 0);
        const float sg = okg && tgg < kqe ? oct_mul_rn(sc[n][c], p.score_scale) : ninf;
        const float s8 = ok8 && tg8 < kqe ? oct_mul_rn(sc[n][2 + c], p.score_scale) : ninf;
        float mx = oct_fmax(sg, s8);
        mx = oct_fmax(mx, oct_shfl_xor<4>(mx));
        mx = oct_fmax(mx, oct_shfl_xor<8>(mx));
        mx = oct_fmax(mx, oct_shfl_xor<16>(mx));
        const float mo = mrun[n][c], mn = oct_fmax(mo, mx);
        float al = 1.0f, pg = 0.0f, p8 = 0.0f;
        if (mn != ninf) al = oct_exp2(mo - mn), pg = oct_exp2(sg - mn), p8 = oct_exp2(s8 - mn);
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
        const float kap = OCT_DM_INT8K ? 64.0f : 256.0f;  // prefill-int8row's factor, wmma-f16q's
        sm.pt[w][n][qc][g] = pg == 0.0f ? (uint16_t)0 : oct_f32_to_f16(oct_mul_rn(oct_mul_rn(pg, vsg), kap));
        sm.pt[w][n][qc][g + 8] = p8 == 0.0f ? (uint16_t)0 : oct_f32_to_f16(oct_mul_rn(oct_mul_rn(p8, vs8), kap));
      }
    }
    oct_sync_wave();
    OctMmaB16 pb[NT];
    OCT_UNROLL for (int n = 0; n < NT; n++) {
      pb[n].r[0] = dm_ld32(&sm.pt[w][n][g][2 * t]);
      pb[n].r[1] = dm_ld32(&sm.pt[w][n][g][2 * t + 8]);
    }
    if (rescale) {
      OCT_UNROLL for (int n = 0; n < NT; n++) {
        // (mutant OCT_MUT_DECODE_MMA_ALPHA_ROW: query 2t's factor for query 2t + 1 too)
        const float a1 = OCT_MUTANT(OCT_MUT_DECODE_MMA_ALPHA_ROW) ? alpha[n][0] : alpha[n][1];
        OCT_UNROLL for (int mt = 0; mt < 16; mt++) {
          o[mt][n].r[0] = oct_mul_rn(o[mt][n].r[0], alpha[n][0]), o[mt][n].r[2] = oct_mul_rn(o[mt][n].r[2], alpha[n][0]);
          o[mt][n].r[1] = oct_mul_rn(o[mt][n].r[1], a1), o[mt][n].r[3] = oct_mul_rn(o[mt][n].r[3], a1);
        }
      }
    }

    // P·V: tokens 2t, 2t + 1, 2t + 8, 2t + 9; V lane 4g + m gives M tiles 4m .. 4m + 3.
    const uint8_t* ru0 = stage0 + (2 * t) * F::ROW;
    OCT_UNROLL for (int m = 0; m < 4; m++) {
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
          const int mt = 4 * m + 2 * k + hb;
          OCT_UNROLL for (int n = 0; n < NT; n++) o[mt][n] = oct_mma_m16n8k16_f32_f16(a, pb[n], o[mt][n]);
        }
      }
    }
    oct_sync_wave();  // stage0 and pt are read: the tile after next may overwrite them
    uint8_t* tmp = stage0;
    stage0 = stage1, stage1 = stage2, stage2 = tmp;
    mcur = mnext, mnext = mlast;
  }
  oct_async_wait<0>();

  // Merge the warps: m and l of each query, then o, one N tile at a time through the stage area.
  OCT_UNROLL for (int n = 0; n < NT; n++)
    OCT_UNROLL for (int c = 0; c < 2; c++)
      if (g == 0) sm.mw[w][8 * n + 2 * t + c] = mrun[n][c], sm.lw[w][8 * n + 2 * t + c] = lrun[n][c];
  oct_sync();
  float f[NT][2], mall[NT][2], lall[NT][2];
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OCT_UNROLL for (int c = 0; c < 2; c++) {
      const int qc = 8 * n + 2 * t + c;
      float mx = sm.mw[0][qc];
      OCT_UNROLL for (int v = 1; v < NW; v++) mx = oct_fmax(mx, sm.mw[v][qc]);
      float l = 0.0f;
      OCT_UNROLL for (int v = 0; v < NW; v++)
        l = oct_fma(sm.lw[v][qc], mx == ninf ? 0.0f : oct_exp2(sm.mw[v][qc] - mx), l);
      f[n][c] = mx == ninf ? 0.0f : oct_exp2(mrun[n][c] - mx);
      mall[n][c] = mx, lall[n][c] = l;
    }
  }
  // Each warp's o · f as rows [warp][query][DM_RES words: dim d at d + d / 32] (the skew and the
  // row stride, 8 mod 32 words, keep a warp's stores — 8 dim groups 32 apart × 4 queries — on 32
  // banks); then the whole workgroup sums the warps in warp order, ((o0 + o1) + o2) + o3, and
  // writes the rows coalesced, consecutive threads at consecutive dims. (Warp 0 alone summing and
  // storing from its registers, one dim per lane group and query, is 32 sectors per store
  // instruction: on the H200 that end of a pass was a third of q1s100k's decode, 51.9 against
  // 34.2 µs coalesced; docs/measurements.md, "Fourteenth session", calls 1 and 3.)
  float* rw = (float*)&sm.stage[0][0][0];
  static_assert(NW * 8 * DM_RES * 4 <= (int)sizeof(sm.stage), "merge buffer");
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OCT_UNROLL for (int m = 0; m < 4; m++) {
      int run0, run1;
      dec_runs<FMT>(4 * g + m, run0, run1);
      OCT_UNROLL for (int k = 0; k < 2; k++)
        OCT_UNROLL for (int hb = 0; hb < 2; hb++) {
          const int mt = 4 * m + 2 * k + hb;
          OCT_UNROLL for (int v = 0; v < 4; v++) {
            const int e = 2 * hb + (v >> 1), d = (e & 1 ? run1 : run0) + 2 * k + (e >> 1);
            rw[(w * 8 + 2 * t + (v & 1)) * DM_RES + d + (d >> 5)] = oct_mul_rn(o[mt][n].r[v], f[n][v & 1]);
          }
        }
    }
    if (w == 0 && g == 0) {
      OCT_UNROLL for (int c = 0; c < 2; c++) {
        const int qc = 8 * n + 2 * t + c;
        if (qc < s.np) {
          float* dst = p.partials + dm_prow(p, s, s.qb + qc);
          dst[256] = mall[n][c], dst[257] = lall[n][c];
        }
      }
    }
    oct_sync();
    for (int q = 0; q < 8 && 8 * n + q < s.np; q++) {
      float* dst = p.partials + dm_prow(p, s, s.qb + 8 * n + q);
      for (int d = oct_tid(); d < 256; d += 32 * NW) {
        const int a = q * DM_RES + d + (d >> 5);
        float x = rw[a];
        OCT_UNROLL for (int u = 1; u < NW; u++) x = oct_add_rn(x, rw[u * 8 * DM_RES + a]);
        dst[d] = oct_mul_rn(x, OCT_DM_INT8K ? 0x1p-12f : 0x1p-14f);  // o = Σ P'·codebook / (κ·64)
      }
    }
    if (n + 1 < NT) oct_sync();  // rw is read (the next pass starts with a barrier of its own)
  }
}

template <int FMT, int NT, int NW>
OCT_DEV void dm_body(const OctDecodeParams& p, DmSmem<NT, NW>& sm) {
  const int lane = oct_lane(), w = oct_wave();
  oct_pdl_trigger();  // the reduce may be scheduled once every workgroup has started (it waits for our end)
  // Workgroup x = chunk · wpc + pi: the wpc workgroups of a row chunk share its passes, pass k
  // (counted over the chunk's row sets in order) going to pi = k % wpc.
  const int wpc = p.wpc > 1 ? p.wpc : 1, pi = oct_bid_x() % wpc;
  // (mutant OCT_MUT_DECODE_MMA_PASS_GRID: the pass index left in the chunk's row)
  const int row0 = OCT_MUTANT(OCT_MUT_DECODE_MMA_PASS_GRID) ? oct_bid_x() * p.qgroup / wpc : oct_bid_x() / wpc * p.qgroup;
  const int split = oct_bid_y(), h = oct_bid_z();
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
      dm_pass<FMT, NT, NW>(p, s, sm, lane, w);
    }
  }
}

#if defined(OCT_NV)
extern __shared__ OctU4 dm_dyn[];  // (16-byte aligned)
#endif
template <int FMT, int NT, int NW>
OCT_DEV void dm_kernel(const OctDecodeParams& p) {
#if defined(OCT_NV)
  dm_body<FMT, NT, NW>(p, *reinterpret_cast<DmSmem<NT, NW>*>(dm_dyn));
#else
  OCT_SHARED DmSmem<NT, NW> sm;
  dm_body<FMT, NT, NW>(p, sm);
#endif
}
#define OCT_DM_BODY(fmt, nt, nw) dm_kernel<fmt, nt, nw>(p);
#else
#define OCT_DM_BODY(fmt, nt, nw) (void)p;
#endif

// One kernel per format (the layout is a compile-time constant), pass width and warp count: NT 1
// (up to 8 queries per pass, G·query_group <= 8) at 3 workgroups per SM, NT 2 (16) at 2, and NT 1
// with 8 warps at 1 (grids of at most one workgroup per SM).
#define OCT_DM_KERNEL(name, fmt, nt, nw, occ) \
  OCT_KERNEL_OCC(32 * nw, occ) void name(OctDecodeParams p) { OCT_DM_BODY(fmt, nt, nw) }
#ifndef OCT_DM_OCC1
#define OCT_DM_OCC1 3  // workgroups per SM the NT 1 kernels are compiled for (a register budget)
#endif
OCT_DM_KERNEL(octave_decode_mma_k3v4_kernel, 4, 1, 4, OCT_DM_OCC1)
OCT_DM_KERNEL(octave_decode_mma_k3v3_kernel, 3, 1, 4, OCT_DM_OCC1)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_kernel, 19, 1, 4, OCT_DM_OCC1)
#ifndef OCT_DM_OCC2
#define OCT_DM_OCC2 2  // the same for the NT 2 kernels
#endif
OCT_DM_KERNEL(octave_decode_mma_k3v4_n2_kernel, 4, 2, 4, OCT_DM_OCC2)
OCT_DM_KERNEL(octave_decode_mma_k3v3_n2_kernel, 3, 2, 4, OCT_DM_OCC2)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_n2_kernel, 19, 2, 4, OCT_DM_OCC2)
OCT_DM_KERNEL(octave_decode_mma_k3v4_w8_kernel, 4, 1, 8, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3_w8_kernel, 3, 1, 8, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_w8_kernel, 19, 1, 8, 1)

// CUDA: the shared memory is dynamic (more than 48 KB): the kernel's limit is raised before each
// launch (cheap; the status is checked), then it is launched with that many bytes.
#if defined(OCT_NV)
template <int NT, int NW>
static hipError_t dm_launch(void (*kern)(OctDecodeParams), const OctDecodeParams& p, int64_t chunks) {
  const int bytes = (int)sizeof(DmSmem<NT, NW>);
  cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess)  // the largest shared-memory carve-out, so that 4 workgroups fit an SM
    e = cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  if (e != cudaSuccess) return e;
  kern<<<dim3((unsigned)chunks, (unsigned)p.num_splits, (unsigned)p.hkv), dim3(32 * NW), bytes, 0>>>(p);
  return oct_launch_status();
}
#define OCT_DM_LAUNCH(name, nt, nw) return dm_launch<nt, nw>(name, p, chunks)
#else
#define OCT_DM_LAUNCH(name, nt, nw) \
  OCT_LAUNCH(name, chunks, p.num_splits, p.hkv, 32 * nw, p); \
  return oct_launch_status()
#endif
hipError_t oct_launch_decode_mma(const OctDecodeParams& p0) {
  // The chunk's passes (G · query_group queries, 8 or 16 per pass) go to as many workgroups, so
  // that MTP rows cost one pass's latency, not several in a row.
  OctDecodeParams p = p0;
  const int nt = p.g * p.qgroup <= 8 || !OCT_DM_NT2 ? 1 : 2;
  p.wpc = (p.g * p.qgroup + 8 * nt - 1) / (8 * nt);
  const int64_t chunks = ((int64_t)p.num_q + p.qgroup - 1) / p.qgroup * p.wpc;
  // 8 warps when every workgroup that has tokens gets an SM of its own (splits past the last
  // token are empty and end at once).
  const int64_t used = (p.kv_max + p.split_len - 1) / p.split_len;
  const int64_t busy = chunks * (used < p.num_splits ? used : p.num_splits) * p.hkv;
  const bool w8 = nt == 1 && (OCT_DM_W8 > 0 || (OCT_DM_W8 < 0 && busy <= p.sms));
  if (w8) {
    switch (p.fmt) {
      case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_w8_kernel, 1, 8);
      case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_w8_kernel, 1, 8);
      default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_w8_kernel, 1, 8);
    }
  }
  if (nt == 1) {
    switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
      case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_kernel, 1, 4);
      case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_kernel, 1, 4);
      default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_kernel, 1, 4);
    }
  }
  switch (p.fmt) {
    case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_n2_kernel, 2, 4);
    case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_n2_kernel, 2, 4);
    default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_n2_kernel, 2, 4);
  }
}
