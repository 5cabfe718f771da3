// prefill, portable fp32 tier (docs/contract.md §3.5, profile prefill-fp32). Query row j of sequence s
// attends to the packed prefix (tokens 0..ctx-1, dequantized exactly) and to chunk tokens 0..j
// (the chunk's own rotated k, v, exact). One online softmax in base 2 covers both. Output rotated.
//
// Workgroup (tile of 8 consecutive rows of q, query head). Rows of the tile belonging to different
// sequences are processed one sequence at a time. Wave w owns rows w and w + 4 of a set.
#include "octave_lane.h"
#include "octave_mutant.h"
#include "octave_params.h"
#include "octave_tile.h"

enum { PF_ROWS = 8, PF_QPW = PF_ROWS / OCT_WAVES };

OCT_KERNEL(OCT_THREADS) void octave_prefill_fp32_kernel(OctPrefillParams p) {
#if OCT_DEVICE_BODY
  OCT_SHARED float sQ[PF_ROWS][256];
  // Prefix tiles and chunk tiles share one buffer:
  //  prefix: k[32][65] u32 | v[32][64] u32 | ks[32][4] f32 | vs[32] f32   (17152 bytes)
  //  chunk:  k[32][129] u32 (two raw 16-bit values each) | v[32][128] u32 (32896 bytes)
  OCT_SHARED uint32_t sBuf[OCT_TILE * 129 + OCT_TILE * 128];
  OCT_SHARED int sOK[OCT_TILE];
  OCT_SHARED float sP[PF_ROWS][OCT_TILE];
  const OctTileSmem tile = {(uint32_t(*)[65])sBuf, (uint32_t(*)[64])(sBuf + OCT_TILE * 65),
                            (float(*)[4])(sBuf + OCT_TILE * 129), (float*)(sBuf + OCT_TILE * 133), sOK};
  uint32_t(*cK)[129] = (uint32_t(*)[129])sBuf;
  uint32_t(*cV)[128] = (uint32_t(*)[128])(sBuf + OCT_TILE * 129);

  const int lane = oct_lane(), w = oct_wave();
  const int64_t row0 = (int64_t)oct_bid_x() * PF_ROWS;
  const int hq = oct_bid_y(), h = hq / p.g;
  const OctLayout L = oct_layout(p.fmt);
  const float ninf = -oct_inf();

  int seq[PF_ROWS], remaining = 0;
  for (int j = 0; j < PF_ROWS; j++) {
    seq[j] = row0 + j < p.rows ? oct_row_seq(p.cu_seqlens, p.num_seqs, row0 + j) : -1;
    if (seq[j] >= 0) remaining |= 1 << j;
  }

  while (remaining) {
    int first = 0;
    while (!((remaining >> first) & 1)) first++;
    const int s = seq[first];
    const int64_t qstart = p.cu_seqlens[s], qlen = (int64_t)p.cu_seqlens[s + 1] - qstart;
    int64_t ctx = (int64_t)p.seq_lens[s] - qlen;
    const bool clamp = !OCT_MUTANT(OCT_MUT_PREFILL_CTX_UNCLAMPED);  // mutant: no upper clamp
    ctx = ctx < 0 ? 0 : (clamp && ctx > p.kv_max ? p.kv_max : ctx);
    int rows[PF_ROWS], nq = 0;
    int64_t maxpos = 0;
    for (int j = 0; j < PF_ROWS; j++)
      if (((remaining >> j) & 1) && seq[j] == s) {
        rows[nq++] = j;
        maxpos = row0 + j - qstart > maxpos ? row0 + j - qstart : maxpos;
        remaining &= ~(1 << j);
      }

    oct_sync();
    for (int q = w; q < nq; q += OCT_WAVES) {
      float x[8];
      oct_load8(p.q + (row0 + rows[q]) * p.q_st + (int64_t)hq * p.q_sh + 8 * lane, p.dtype, x);
      for (int e = 0; e < 8; e++) sQ[q][8 * lane + e] = x[e];
    }
    float o[PF_QPW][8], m[PF_QPW], l[PF_QPW], alpha[PF_QPW];
    int64_t pos[PF_QPW];
    OCT_UNROLL for (int a = 0; a < PF_QPW; a++) {
      const int q = w + OCT_WAVES * a;
      m[a] = ninf, l[a] = 0.0f, alpha[a] = 1.0f;
      pos[a] = q < nq ? row0 + rows[q] - qstart : -1;
      OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] = 0.0f;
    }

    // Phase 1: the packed prefix.
    const OctCacheView cv = {p.cache, p.block_table + (int64_t)s * p.max_blocks, p.c_sb, p.c_sh, p.c_st,
                             (int64_t)h, p.block_size, p.num_blocks};
    // (mutant OCT_MUT_PREFILL_CHUNK_CACHED: the chunk's tokens ctx..ctx+maxpos too, from the cache)
    const bool chunk_cached = OCT_MUTANT(OCT_MUT_PREFILL_CHUNK_CACHED);
    int64_t pend = ctx;
    if (chunk_cached) pend = ctx + maxpos + 1 < p.kv_max ? ctx + maxpos + 1 : p.kv_max;
    for (int64_t tt = 0; tt < pend; tt += OCT_TILE) {
      const int tn = (int)(pend - tt < OCT_TILE ? pend - tt : (int64_t)OCT_TILE);
      oct_sync();
      oct_tile_load(cv, L, tt, tn, tile);
      oct_sync();
      const bool tok_ok = lane < tn && sOK[lane];
      float acc[PF_QPW] = {};
      for (int b = 0; b < 4; b++) {
        const float ksb = tile.ks[lane][b] * 0.015625f;  // fp16 scale / 64, exact
        for (int d = 0; d < 16; d++) {
          const uint32_t kw = tile.k[lane][16 * b + d];
          for (int e = 0; e < 4; e++) {
            const float kf = oct_i8(kw, e) * ksb;  // dequantized K, exact in float32
            OCT_UNROLL for (int a = 0; a < PF_QPW; a++)
              acc[a] = oct_fma(sQ[w + OCT_WAVES * a < nq ? w + OCT_WAVES * a : 0][64 * b + 4 * d + e], kf, acc[a]);
          }
        }
      }
      OCT_UNROLL for (int a = 0; a < PF_QPW; a++) {
        const int q = w + OCT_WAVES * a;
        if (q >= nq) break;
        const float sc = tok_ok && (!chunk_cached || tt + lane <= ctx + pos[a]) ? acc[a] * p.score_scale : ninf;
        sP[q][lane] = oct_softmax_step(sc, m[a], l[a], alpha[a]);
      }
      oct_sync();
      OCT_UNROLL for (int a = 0; a < PF_QPW; a++)
        OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] *= alpha[a];
      for (int ti = 0; ti < tn; ti++) {
        const uint32_t v0 = tile.v[ti][2 * lane], v1 = tile.v[ti][2 * lane + 1];
        const float vs = tile.vs[ti];
        float vv[8];
        for (int e = 0; e < 4; e++) vv[e] = oct_i8(v0, e) * vs, vv[4 + e] = oct_i8(v1, e) * vs;
        OCT_UNROLL for (int a = 0; a < PF_QPW; a++) {
          const int q = w + OCT_WAVES * a;
          if (q >= nq) break;
          const float pt = sP[q][ti];
          if (pt == 0.0f) continue;
          OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] = oct_fma(pt, vv[e], o[a][e]);
        }
      }
    }

    // Phase 2: the chunk's own tokens 0..maxpos, exact, causal.
    for (int64_t tt = 0; !chunk_cached && tt <= maxpos; tt += OCT_TILE) {
      const int tn = (int)(maxpos + 1 - tt < OCT_TILE ? maxpos + 1 - tt : (int64_t)OCT_TILE);
      oct_sync();
      for (int k = 0; k < 8; k++) {
        const int ti = 8 * w + k;
        uint32_t ku[4] = {0, 0, 0, 0}, vu[4] = {0, 0, 0, 0};
        if (ti < tn) {
          const int64_t row = qstart + tt + ti;
          oct_load8_raw(p.k + row * p.k_st + (int64_t)h * p.k_sh + 8 * lane, ku);
          oct_load8_raw(p.v + row * p.v_st + (int64_t)h * p.v_sh + 8 * lane, vu);
        }
        for (int i = 0; i < 4; i++) cK[ti][4 * lane + i] = ku[i], cV[ti][4 * lane + i] = vu[i];
      }
      oct_sync();
      float acc[PF_QPW] = {};
      for (int d = 0; d < 128; d++) {
        const uint32_t kw = cK[lane][d];
        const float k0 = oct_h2f((uint16_t)kw, p.dtype), k1 = oct_h2f((uint16_t)(kw >> 16), p.dtype);
        OCT_UNROLL for (int a = 0; a < PF_QPW; a++) {
          const int q = w + OCT_WAVES * a < nq ? w + OCT_WAVES * a : 0;
          acc[a] = oct_fma(sQ[q][2 * d], k0, acc[a]);
          acc[a] = oct_fma(sQ[q][2 * d + 1], k1, acc[a]);
        }
      }
      OCT_UNROLL for (int a = 0; a < PF_QPW; a++) {
        const int q = w + OCT_WAVES * a;
        if (q >= nq) break;
        // (mutant OCT_MUT_PREFILL_CAUSAL: t < j, the row's own token masked)
        const float sc = lane < tn && (OCT_MUTANT(OCT_MUT_PREFILL_CAUSAL) ? tt + lane < pos[a] : tt + lane <= pos[a])
                             ? acc[a] * p.score_scale
                             : ninf;
        sP[q][lane] = oct_softmax_step(sc, m[a], l[a], alpha[a]);
      }
      oct_sync();
      OCT_UNROLL for (int a = 0; a < PF_QPW; a++)
        OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] *= alpha[a];
      for (int ti = 0; ti < tn; ti++) {
        float vv[8];
        for (int i = 0; i < 4; i++) {
          const uint32_t vw = cV[ti][4 * lane + i];
          vv[2 * i] = oct_h2f((uint16_t)vw, p.dtype), vv[2 * i + 1] = oct_h2f((uint16_t)(vw >> 16), p.dtype);
        }
        OCT_UNROLL for (int a = 0; a < PF_QPW; a++) {
          const int q = w + OCT_WAVES * a;
          if (q >= nq) break;
          const float pt = sP[q][ti];
          if (pt == 0.0f) continue;
          OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] = oct_fma(pt, vv[e], o[a][e]);
        }
      }
    }

    OCT_UNROLL for (int a = 0; a < PF_QPW; a++) {
      const int q = w + OCT_WAVES * a;
      if (q >= nq) break;
      float y[8];
      for (int e = 0; e < 8; e++) y[e] = l[a] == 0.0f ? 0.0f : oct_div_rn(o[a][e], l[a]);
      oct_store8(p.out + (row0 + rows[q]) * p.o_st + (int64_t)hq * p.o_sh + 8 * lane, p.dtype, y);
    }
  }
#endif
}

hipError_t oct_launch_prefill(const OctPrefillParams& p) {
  OCT_LAUNCH(octave_prefill_fp32_kernel, ((int64_t)p.rows + PF_ROWS - 1) / PF_ROWS, p.hq, 1,
             OCT_THREADS, p);
  return oct_launch_status();
}
