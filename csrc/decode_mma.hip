// decode, mma tier (sm_90; docs/contract.md §3.3, profile wmma-f16q): split-KV attention over the
// packed cache with NVIDIA's warp-level mma.sync (m16n8k16, f16 operands, fp32 accumulation),
// writing split partials (§3.4 layout) that the portable reduce merges. On CUDA builds the
// instructions, on the emulator their model (octave_mma.h); HIP builds get stubs. The structure,
// staging and arithmetic are the WMMA tier's (csrc/decode_wmma.hip): the same profile, the same
// 16-token tiles and split geometry, so its bound and its tests carry over; only the fragments
// differ (docs/kernels.md, "The mma tier"):
//   scores  per 16-query M tile and K block w: 2 token N tiles of 8 × 4 k-steps of 16 dims;
//           lane (g, t) holds query rows g, g + 8, dims 2t.., tokens 2t..;
//   P·V     per M tile: 8 dim N tiles of 8 (wave w: dims 64w..64w+63) × one k-step of 16 tokens.
// The softmax is the WMMA tier's: lane l (and l + 16) owns query 16·mt + l mod 16, through shared
// memory, so the arithmetic (and its bits) is the same as there.
//
// Most of this file (row sets, staging, softmax) repeats decode_wmma.hip on purpose, for now: it is
// the first, correctness-only step of the tier, and docs/mma-plan.md's fast design replaces exactly
// those parts (cp.async staging, scores and softmax in registers); sharing them with the WMMA tier
// would tie two kernels that are about to part.
#include "octave_lane.h"
#include "octave_params.h"
#include "octave_mma.h"

enum { DM_TOK = 16, DM_QMAX = 32, DM_ROW = 132 };  // tokens per tile; queries per row set; padded row (dwords)

#if OCT_MMA_BODY

struct DmSmem {
  uint32_t q[DM_QMAX][DM_ROW];     // fp16 query, rotated; dims 2i, 2i+1 in dword i; rows >= nq zero
  uint32_t k[DM_TOK][DM_ROW];      // K codebook values as fp16, [token][dim pair]
  uint32_t v[OCT_D][DM_TOK / 2];   // V codebook values as fp16, [dim][token pair]
  float s[4][DM_QMAX][DM_TOK];     // per K block: fp32 dot × K block scale, [block][query][token]
  float ks[DM_TOK][4];             // K block scales
  float vs[DM_TOK];                // V scale (the fp16 value; 0 for a token not staged)
  int ok[DM_TOK];                  // staged: inside the tile and in a valid block
  float alpha[OCT_WAVES][DM_QMAX]; // per wave: this tile's rescale factor of each query
  alignas(16) uint16_t pp[OCT_WAVES][DM_QMAX][DM_TOK];  // per wave: P' as fp16, [query][token]
};

// The score of query q and tile token t in log2 units: the 4 blocks' dot × K scale summed in
// order, times sm_scale·log2(e)/64; -inf when the token is not staged or at or past the query's
// klen (ts + t >= kq).
OCT_DEV float dm_score(const DmSmem& sm, const OctDecodeParams& p, int q, int t, int64_t ts, int kq) {
  const float s = oct_mul_rn(oct_add_rn(oct_add_rn(oct_add_rn(sm.s[0][q][t], sm.s[1][q][t]), sm.s[2][q][t]), sm.s[3][q][t]),
                             p.score_scale);
  return sm.ok[t] && ts + t < kq ? s : -oct_inf();
}

OCT_DEV uint32_t dm_h(float x) { return oct_f32_to_f16(x); }
// Two int8 codebook bytes of w (bytes i, i + 1) as two fp16 values (exact) in one dword.
OCT_DEV uint32_t dm_h2(uint32_t w, int i) { return dm_h(oct_i8(w, i)) | (dm_h(oct_i8(w, i + 1)) << 16); }

// Writes the partial row of an empty query: o = 0, m = -inf, l = 0 (one wave, lane l dims 8l..8l+7).
OCT_DEV void dm_write_empty(float* dst, int lane) {
  OctU4 z;
  z.x = z.y = z.z = z.w = 0u;
  *(OctU4*)(dst + 8 * lane) = z;
  *(OctU4*)(dst + 8 * lane + 4) = z;
  if (lane == 0) dst[256] = -oct_inf(), dst[257] = 0.0f;
}

// Stages tokens ts..ts+15 (those below te) of KV head h: wave w takes tokens w, w + 4, ...; lane l
// dims 8l..8l+7.
template <int FMT>
OCT_DEV void dm_stage(const OctDecodeParams& p, DmSmem& sm, const int32_t* bt_row, int64_t ts, int64_t te,
                      int h, int lane, int w) {
  const OctLayout L = oct_layout(FMT);
  OCT_NOUNROLL for (int t = w; t < DM_TOK; t += OCT_WAVES) {
    const int64_t tg = ts + t;
    const uint8_t* slot = nullptr;
    if (tg < te) {
      const int32_t bid = bt_row[tg / p.block_size];
      if (bid >= 0 && bid < p.num_blocks)
        slot = p.cache + (int64_t)bid * p.c_sb + (int64_t)h * p.c_sh + (tg % p.block_size) * p.c_st;
    }
    uint32_t k0 = 0, k1 = 0, v0 = 0, v1 = 0;
    float kscale = 0.0f, vscale = 0.0f;
    if (slot) {
      oct_slot_k(slot, L, lane, k0, k1);
      oct_slot_v(slot, L, lane, v0, v1);
      if (lane < 4) kscale = oct_slot_kscale(slot, L, lane);
      vscale = oct_slot_vscale(slot, L);
    }
    // K dims 8l..8l+7: dwords 4l..4l+3 of the token's row.
    sm.k[t][4 * lane] = dm_h2(k0, 0), sm.k[t][4 * lane + 1] = dm_h2(k0, 2);
    sm.k[t][4 * lane + 2] = dm_h2(k1, 0), sm.k[t][4 * lane + 3] = dm_h2(k1, 2);
    // V dims 8l..8l+7 of token t: half t & 1 of dword t / 2 of each dim's row.
    uint16_t* vcol = (uint16_t*)sm.v;
    for (int e = 0; e < 4; e++) {
      vcol[(8 * lane + e) * DM_TOK + t] = (uint16_t)dm_h(oct_i8(v0, e));
      vcol[(8 * lane + 4 + e) * DM_TOK + t] = (uint16_t)dm_h(oct_i8(v1, e));
    }
    if (lane < 4) sm.ks[t][lane] = kscale;
    if (lane == 0) sm.vs[t] = vscale, sm.ok[t] = slot != nullptr;
  }
}

template <int FMT>
OCT_DEV void dm_body(const OctDecodeParams& p, DmSmem& sm) {
  const int lane = oct_lane(), w = oct_wave(), n = lane & 15, hh = lane >> 4;
  const int g8 = lane >> 2, t4 = lane & 3;  // mma fragments: groupID, threadID_in_group
  const int row0 = oct_bid_x() * p.qgroup, split = oct_bid_y(), h = oct_bid_z();
  const float ninf = -oct_inf();
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
  OCT_UNROLL for (int j = 0; j < 4; j++) {
    if (!((exist & ~valid) >> j & 1)) continue;
    for (int g = w; g < p.g; g += OCT_WAVES) {
      const int64_t prow = ((int64_t)(row0 + j) * p.hq + (int64_t)h * p.g + g) * p.num_splits + split;
      dm_write_empty(p.partials + prow * p.pstride, lane);
    }
  }

  int remaining = valid;
  while (remaining) {
    // The row set: remaining rows with the request of the lowest remaining row.
    int first = 0;
    while (!((remaining >> first) & 1)) first++;
    const int r = req[first == 0 ? 0 : first == 1 ? 1 : first == 2 ? 2 : 3];
    int rows = 0, nrows = 0, kmax = 0;  // rows: 4 bits per row of the set, the chunk's row index
    OCT_UNROLL for (int j = 0; j < 4; j++)
      if (((remaining >> j) & 1) && req[j] == r) {
        rows |= j << (4 * nrows++);
        kmax = klen[j] > kmax ? klen[j] : kmax;
        remaining &= ~(1 << j);
      }
    const int nq = nrows * p.g, mtiles = (nq + 15) / 16;  // query q: row rows[q / G], head h·G + q % G
#define DM_ROWJ(q) ((rows >> (4 * ((q) / p.g))) & 15)
#define DM_PROW(q) \
  ((((int64_t)(row0 + DM_ROWJ(q)) * p.hq + (int64_t)h * p.g + (q) % p.g) * p.num_splits + split) * p.pstride)

    const int64_t te = t1 < kmax && !OCT_MUTANT(OCT_MUT_DECODE_MMA_SPLIT_EDGE) ? t1 : (int64_t)kmax;  // mutant: no split end
    const int ntile = te > t0 ? (int)((te - t0 + DM_TOK - 1) / DM_TOK) : 0;
    if (ntile == 0) {  // no token of the split for this set: empty partials, nothing read
      for (int q = w; q < nq; q += OCT_WAVES) dm_write_empty(p.partials + DM_PROW(q), lane);
      continue;
    }

    // Query: rotate like K in float32, round to fp16; rows nq..16·mtiles-1 zero.
    oct_sync();
    for (int q = w; q < 16 * mtiles; q += OCT_WAVES) {
      float x[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (q < nq) {
        oct_load8(p.query + (int64_t)(row0 + DM_ROWJ(q)) * p.q_st + (int64_t)(h * p.g + q % p.g) * p.q_sh + 8 * lane,
                  p.dtype, x);
        oct_rotate(x, p.k_signs, lane, !oct_layout(FMT).compact);
      }
      for (int i = 0; i < 4; i++) sm.q[q][4 * lane + i] = dm_h(x[2 * i]) | (dm_h(x[2 * i + 1]) << 16);
    }

    // Per lane: the klen of its queries 16·mt + n (0 past nq), their running max and l; o of
    // wave w's dims for every M tile.
    int kq[2];
    float mrun[2], lrun[2];
    OctMmaF32 o[2][8];  // [M tile][dim N tile of 8]: rows g8, g8 + 8; dims 64w + 8ct + 2t4, +1
    OCT_UNROLL for (int mt = 0; mt < 2; mt++) {
      const int q = 16 * mt + n;
      const int j = q < nq ? DM_ROWJ(q) : 0;
      kq[mt] = q < nq ? (j == 0 ? klen[0] : j == 1 ? klen[1] : j == 2 ? klen[2] : klen[3]) : 0;
      mrun[mt] = ninf, lrun[mt] = 0.0f;
      OCT_UNROLL for (int ct = 0; ct < 8; ct++)
        OCT_UNROLL for (int v = 0; v < 4; v++) o[mt][ct].r[v] = 0.0f;
    }
    const int32_t* bt_row = p.block_table + (int64_t)r * p.max_blocks;

    for (int jt = 0; jt < ntile; jt++) {
      const int64_t ts = t0 + (int64_t)DM_TOK * jt;
      oct_sync();  // the previous tile's shared memory is read (and the queries written)
      dm_stage<FMT>(p, sm, bt_row, ts, te, h, lane, w);
      oct_sync();

      // Scores of K block w: dot over its 64 dims (4 k-steps of 16) for each 8-token N tile, times
      // the token's K block scale. A: query rows g8, g8 + 8, dims 16kk + 2t4 (+1) and + 8; B: token
      // 8nt + g8, the same dims.
      OCT_UNROLL for (int mt = 0; mt < 2; mt++) {  // (unrolled: o stays in registers)
        if (mt >= mtiles) break;
        OCT_UNROLL for (int nt = 0; nt < 2; nt++) {
          OctMmaF32 acc;
          OCT_UNROLL for (int v = 0; v < 4; v++) acc.r[v] = 0.0f;
          OCT_NOUNROLL for (int kk = 0; kk < 4; kk++) {  // (not unrolled: keeps few fragments live)
            const int d0 = 32 * w + 8 * kk + t4;       // dword of dims 64w + 16kk + 2t4, +1
            OctMmaA16 a;
            OctMmaB16 b;
            a.r[0] = sm.q[16 * mt + g8][d0], a.r[1] = sm.q[16 * mt + g8 + 8][d0];
            a.r[2] = sm.q[16 * mt + g8][d0 + 4], a.r[3] = sm.q[16 * mt + g8 + 8][d0 + 4];
            b.r[0] = sm.k[8 * nt + g8][d0], b.r[1] = sm.k[8 * nt + g8][d0 + 4];
            acc = oct_mma_m16n8k16_f32_f16(a, b, acc);
          }
          OCT_UNROLL for (int v = 0; v < 4; v++) {
            const int tok = 8 * nt + 2 * t4 + (v & 1);
            const int kst = OCT_MUTANT(OCT_MUT_DECODE_MMA_KSCALE_TOKEN) ? 8 * nt + g8 : tok;  // mutant: B's token
            sm.s[w][16 * mt + g8 + 8 * (v >> 1)][tok] = acc.r[v] * sm.ks[kst][w];
          }
        }
      }
      oct_sync();

      // Softmax of queries 16·mt + n over the tile, two passes over the scores in shared memory
      // (the second recomputes each score with the same operations, so the same bits: few live
      // registers); P' to this wave's shared memory, read back as the A operand of P·V.
      OCT_UNROLL for (int mt = 0; mt < 2; mt++) {
        if (mt >= mtiles) break;
        const int q = 16 * mt + n;
        float mx = ninf;
        OCT_NOUNROLL for (int t = 0; t < DM_TOK; t++) mx = oct_fmax(mx, dm_score(sm, p, q, t, ts, kq[mt]));
        const float mo = mrun[mt], mn = oct_fmax(mo, mx);
        float alpha = 1.0f, sum = 0.0f;
        uint16_t* pp = sm.pp[w][q];
        if (mn != ninf) {
          alpha = oct_exp2(mo - mn);
          OCT_NOUNROLL for (int t = 0; t < DM_TOK; t++) {
            const float pt = oct_exp2(dm_score(sm, p, q, t, ts, kq[mt]) - mn);
            sum = oct_add_rn(sum, pt);
            // P' = fp16(fp32(p · V scale) · 256); a masked token (p = 0) is exactly 0, whatever
            // its V scale (never read: 0, but a poisoned slot a row does not attend to may be inf).
            pp[t] = pt == 0.0f ? (uint16_t)0 : (uint16_t)dm_h(oct_mul_rn(oct_mul_rn(pt, sm.vs[t]), 256.0f));
          }
        } else {
          OCT_NOUNROLL for (int t = 0; t < DM_TOK; t++) pp[t] = 0;
        }
        lrun[mt] = oct_fma(lrun[mt], alpha, sum);
        if (OCT_MUTANT(OCT_MUT_DECODE_MMA_L_F16)) lrun[mt] = oct_f16_to_f32((uint16_t)dm_h(lrun[mt]));  // mutant: l in fp16
        mrun[mt] = mn;
        sm.alpha[w][q] = alpha;  // lanes n and n + 16 write the same values
      }
      oct_sync_wave();

      // P·V of wave w's dims: o rescaled (rows g8, g8 + 8 of the accumulator), then P' · V per
      // 8-dim N tile. A: P' of query rows g8, g8 + 8, tokens 2t4 (+1) and + 8; B: dim 64w + 8ct +
      // g8, the same tokens.
      OCT_UNROLL for (int mt = 0; mt < 2; mt++) {
        if (mt >= mtiles) break;
        const uint32_t* pr0 = (const uint32_t*)sm.pp[w][16 * mt + g8];
        const uint32_t* pr1 = (const uint32_t*)sm.pp[w][16 * mt + g8 + 8];
        OctMmaA16 pa;
        pa.r[0] = pr0[t4], pa.r[1] = pr1[t4], pa.r[2] = pr0[t4 + 4], pa.r[3] = pr1[t4 + 4];
        const float al0 = sm.alpha[w][16 * mt + g8];
        const float al1 = OCT_MUTANT(OCT_MUT_DECODE_MMA_ALPHA_ROW) ? al0 : sm.alpha[w][16 * mt + g8 + 8];  // mutant
        OCT_UNROLL for (int ct = 0; ct < 8; ct++) {
          OctMmaB16 b;
          b.r[0] = sm.v[64 * w + 8 * ct + g8][t4], b.r[1] = sm.v[64 * w + 8 * ct + g8][t4 + 4];
          o[mt][ct].r[0] = oct_mul_rn(o[mt][ct].r[0], al0), o[mt][ct].r[1] = oct_mul_rn(o[mt][ct].r[1], al0);
          o[mt][ct].r[2] = oct_mul_rn(o[mt][ct].r[2], al1), o[mt][ct].r[3] = oct_mul_rn(o[mt][ct].r[3], al1);
          o[mt][ct] = oct_mma_m16n8k16_f32_f16(pa, b, o[mt][ct]);
        }
      }
    }

    // Partial rows: o = Σ P'·codebook / (256·64), m, l.
    OCT_UNROLL for (int mt = 0; mt < 2; mt++) {
      if (mt >= mtiles) break;
      OCT_UNROLL for (int half = 0; half < 2; half++) {
        const int q = 16 * mt + g8 + 8 * half;
        if (q >= nq) continue;
        float* dst = p.partials + DM_PROW(q) + 64 * w + 2 * t4;
        OCT_UNROLL for (int ct = 0; ct < 8; ct++) {
          dst[8 * ct] = oct_mul_rn(o[mt][ct].r[2 * half], 0x1p-14f);
          dst[8 * ct + 1] = oct_mul_rn(o[mt][ct].r[2 * half + 1], 0x1p-14f);
        }
      }
      const int q = 16 * mt + n;
      if (w == 0 && hh == 0 && q < nq) {
        float* dst = p.partials + DM_PROW(q);
        dst[256] = mrun[mt], dst[257] = lrun[mt];
      }
    }
#undef DM_ROWJ
#undef DM_PROW
  }
}

template <int FMT>
OCT_DEV void dm_kernel(const OctDecodeParams& p) {
  OCT_SHARED DmSmem sm;
  dm_body<FMT>(p, sm);
}
#define OCT_DM_BODY(fmt) dm_kernel<fmt>(p);
#else
#define OCT_DM_BODY(fmt) (void)p;
#endif

// One kernel per format (the layout is a compile-time constant).
#define OCT_DM_KERNEL(name, fmt) \
  OCT_KERNEL(OCT_THREADS) void name(OctDecodeParams p) { OCT_DM_BODY(fmt) }
OCT_DM_KERNEL(octave_decode_mma_k3v4_kernel, 4)
OCT_DM_KERNEL(octave_decode_mma_k3v3_kernel, 3)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_kernel, 19)

#define OCT_DM_LAUNCH(name) OCT_LAUNCH(name, chunks, p.num_splits, p.hkv, OCT_THREADS, p)
hipError_t oct_launch_decode_mma(const OctDecodeParams& p) {
  const int64_t chunks = ((int64_t)p.num_q + p.qgroup - 1) / p.qgroup;
  switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
    case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_kernel); break;
    case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_kernel); break;
    default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_kernel); break;
  }
  return oct_launch_status();
}
