// decode, portable dot4 tier (KERNELS.md §3.3, profile dot4-int8q): split-KV attention over the
// packed cache, writing split partials (§3.4 layout); octave_reduce_kernel merges them.
//
// Workgroup (row chunk, split, KV head): up to query_group consecutive query rows x the G query
// heads of the KV head, i.e. up to 32 query vectors sharing every K/V read of the split. Rows of
// the chunk with different requests are processed one request at a time (a "row set").
// Per 32-token tile: the slots are decoded once into shared memory (codebook bytes by byte
// permute); lane = token computes the int8 dot4 scores of the wave's queries; an online softmax in
// base 2 per query; then lane = dims accumulates P.V in float32. Wave w owns queries w, w+4, ...
#include "octave_lane.h"
#include "octave_params.h"
#include "octave_tile.h"

enum { DEC_MAXQ = 32, DEC_QPW = DEC_MAXQ / OCT_WAVES };

#if OCT_DEVICE_BODY

// Writes one partial row: o (lane's 8 dims), m, l.
OCT_DEV void oct_write_partial(float* dst, int lane, const float o[8], float m, float l) {
  OctU4 a, b;
  a.x = oct_f2u(o[0]), a.y = oct_f2u(o[1]), a.z = oct_f2u(o[2]), a.w = oct_f2u(o[3]);
  b.x = oct_f2u(o[4]), b.y = oct_f2u(o[5]), b.z = oct_f2u(o[6]), b.w = oct_f2u(o[7]);
  *(OctU4*)(dst + 8 * lane) = a;
  *(OctU4*)(dst + 8 * lane + 4) = b;
  if (lane == 0) dst[256] = m, dst[257] = l;
}
#endif

OCT_KERNEL(OCT_THREADS) void octave_decode_dot4_kernel(OctDecodeParams p) {
#if OCT_DEVICE_BODY
  OCT_SHARED uint32_t sK[OCT_TILE][65];
  OCT_SHARED uint32_t sV[OCT_TILE][64];
  OCT_SHARED float sKs[OCT_TILE][4];
  OCT_SHARED float sVs[OCT_TILE];
  OCT_SHARED int sOK[OCT_TILE];
  OCT_SHARED uint32_t sQ[DEC_MAXQ][64];  // int8 query, rotated, per 64-dim block scale in sQs
  OCT_SHARED float sQs[DEC_MAXQ][4];
  OCT_SHARED float sP[DEC_MAXQ][OCT_TILE];
  const OctTileSmem tile = {sK, sV, sKs, sVs, sOK};

  const int lane = oct_lane(), w = oct_wave();
  const int row0 = oct_bid_x() * p.qgroup, split = oct_bid_y(), h = oct_bid_z();
  const OctLayout L = oct_layout(p.fmt);
  const float ninf = -oct_inf();
  const int64_t t0 = (int64_t)split * p.split_len;
  const int64_t t1 = t0 + p.split_len < p.kv_max ? t0 + p.split_len : p.kv_max;

  // Rows of the chunk: request and clamped klen. Invalid request or klen <= 0: empty row.
  int req[4], exist = 0, valid = 0;
  int64_t klen[4];
  for (int j = 0; j < 4; j++) {
    req[j] = -1, klen[j] = 0;
    const int i = row0 + j;
    if (j >= p.qgroup || i >= p.num_q) continue;
    exist |= 1 << j;
    const int r = p.q_to_req[i];
    int64_t k = p.q_to_klen[i];
    k = k < p.kv_max ? k : p.kv_max;
    if (r >= 0 && r < p.num_reqs && k > 0) req[j] = r, klen[j] = k, valid |= 1 << j;
  }

  // Empty rows: o = 0, m = -inf, l = 0 for every query head; nothing is read.
  for (int j = 0; j < 4; j++) {
    if (!((exist & ~valid) >> j & 1)) continue;
    for (int g = w; g < p.g; g += OCT_WAVES) {
      const float z[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      const int64_t prow = ((int64_t)(row0 + j) * p.hq + (int64_t)h * p.g + g) * p.num_splits + split;
      oct_write_partial(p.partials + prow * p.pstride, lane, z, ninf, 0.0f);
    }
  }

  int remaining = valid;
  while (remaining) {
    // The row set: remaining rows with the request of the lowest remaining row.
    int first = 0;
    while (!((remaining >> first) & 1)) first++;
    const int r = req[first];
    int rows[4], nrows = 0;
    int64_t kmax = 0;
    for (int j = 0; j < 4; j++)
      if (((remaining >> j) & 1) && req[j] == r) {
        rows[nrows++] = j;
        kmax = klen[j] > kmax ? klen[j] : kmax;
        remaining &= ~(1 << j);
      }
    const int nq = nrows * p.g;  // query q = (row rows[q / G], head h*G + q % G)

    // Query: rotate like K, quantize to int8 per 64-dim block.
    oct_sync();
    for (int q = w; q < nq; q += OCT_WAVES) {
      const int i = row0 + rows[q / p.g], hq = h * p.g + q % p.g;
      float x[8];
      oct_load8(p.query + (int64_t)i * p.q_st + (int64_t)hq * p.q_sh + 8 * lane, p.dtype, x);
      oct_rotate(x, p.k_signs, lane, !L.compact);
      float amax = 0.0f;
      for (int e = 0; e < 8; e++) amax = oct_fmax(amax, oct_fabs(x[e]));
      amax = oct_max8(amax);
      const float s = oct_div_rn(oct_fmax(amax, 1e-20f), 127.0f);
      uint32_t qw[2] = {0, 0};
      for (int e = 0; e < 8; e++) {
        const float v = oct_fmin(oct_fmax(oct_rint(oct_div_rn(x[e], s)), -127.0f), 127.0f);
        qw[e >> 2] |= ((uint32_t)(int)v & 0xFFu) << (8 * (e & 3));
      }
      sQ[q][2 * lane] = qw[0];
      sQ[q][2 * lane + 1] = qw[1];
      if ((lane & 7) == 0) sQs[q][lane >> 3] = s;
    }

    // This wave's queries: running o (lane's dims), m, l.
    float o[DEC_QPW][8], m[DEC_QPW], l[DEC_QPW], alpha[DEC_QPW];
    int64_t qk[DEC_QPW];
    OCT_UNROLL for (int a = 0; a < DEC_QPW; a++) {
      m[a] = ninf, l[a] = 0.0f, alpha[a] = 1.0f;
      const int q = w + OCT_WAVES * a;
      qk[a] = q < nq ? klen[rows[q / p.g]] : 0;
      OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] = 0.0f;
    }

    const OctCacheView cv = {p.cache, p.block_table + (int64_t)r * p.max_blocks, p.c_sb, p.c_sh, p.c_st,
                             (int64_t)h, p.block_size, p.num_blocks};
    const int64_t te = t1 < kmax ? t1 : kmax;
    for (int64_t tt = t0; tt < te; tt += OCT_TILE) {
      const int tn = (int)(te - tt < OCT_TILE ? te - tt : (int64_t)OCT_TILE);
      oct_sync();
      oct_tile_load(cv, L, tt, tn, tile);
      oct_sync();

      // Scores, lane = token: Σ_b qs_b·ks_b·dot_b, times sm_scale·log2(e)/64.
      const bool tok_ok = lane < tn && sOK[lane];
      float sc[DEC_QPW];
      OCT_UNROLL for (int a = 0; a < DEC_QPW; a++) sc[a] = 0.0f;
      OCT_UNROLL for (int b = 0; b < 4; b++) {
        uint32_t kr[16];
        OCT_UNROLL for (int d = 0; d < 16; d++) kr[d] = sK[lane][16 * b + d];
        const float ksb = sKs[lane][b];
        OCT_UNROLL for (int a = 0; a < DEC_QPW; a++) {
          const int q = w + OCT_WAVES * a;
          if (q >= nq) break;
          int acc = 0;
          OCT_UNROLL for (int d = 0; d < 16; d++) acc = oct_dot4(sQ[q][16 * b + d], kr[d], acc);
          sc[a] += (float)acc * (sQs[q][b] * ksb);
        }
      }
      OCT_UNROLL for (int a = 0; a < DEC_QPW; a++) {
        const int q = w + OCT_WAVES * a;
        if (q >= nq) break;
        const float s = tok_ok && tt + lane < qk[a] ? sc[a] * p.score_scale : ninf;
        sP[q][lane] = oct_softmax_step(s, m[a], l[a], alpha[a]);
      }
      oct_sync();

      // P.V, lane = dims: o = o·alpha + Σ_t p_t · (codebook_t × V scale_t / 64). p = 0 tokens
      // (masked) are skipped, so a masked slot never contributes, even a poisoned one.
      OCT_UNROLL for (int a = 0; a < DEC_QPW; a++)
        OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] *= alpha[a];
      for (int ti = 0; ti < tn; ti++) {
        const uint32_t v0 = sV[ti][2 * lane], v1 = sV[ti][2 * lane + 1];
        const float vs = sVs[ti];
        float vv[8];
        for (int e = 0; e < 4; e++) vv[e] = oct_i8(v0, e) * vs, vv[4 + e] = oct_i8(v1, e) * vs;
        OCT_UNROLL for (int a = 0; a < DEC_QPW; a++) {
          const int q = w + OCT_WAVES * a;
          if (q >= nq) break;
          const float pt = sP[q][ti];
          if (pt == 0.0f) continue;
          OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] = oct_fma(pt, vv[e], o[a][e]);
        }
      }
    }

    OCT_UNROLL for (int a = 0; a < DEC_QPW; a++) {
      const int q = w + OCT_WAVES * a;
      if (q >= nq) break;
      const int i = row0 + rows[q / p.g], hq = h * p.g + q % p.g;
      const int64_t prow = ((int64_t)i * p.hq + hq) * p.num_splits + split;
      oct_write_partial(p.partials + prow * p.pstride, lane, o[a], m[a], l[a]);
    }
  }
#endif
}

hipError_t oct_launch_decode(const OctDecodeParams& p) {
  const int64_t chunks = ((int64_t)p.num_q + p.qgroup - 1) / p.qgroup;
  OCT_LAUNCH(octave_decode_dot4_kernel, chunks, p.num_splits, p.hkv, OCT_THREADS, p);
  return oct_launch_status();
}
