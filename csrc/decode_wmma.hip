// decode, WMMA tier (docs/contract.md §3.3, profile wmma-f16q): split-KV attention over the packed
// cache with the RDNA3 wave32 WMMA instructions, writing split partials (§3.4 layout) that the
// portable reduce merges. On gfx1100 the instructions, on the emulator and CUDA builds their model
// (octave_wmma.h); gfx942 gets stubs. docs/kernels.md, "The WMMA tier and its model", has the design.
//
// Profile wmma-f16q: the query rotated in float32 and rounded to fp16; QK an f16 WMMA of the fp16
// query against the K codebook values (fp16, exact), fp32 accumulation per 64-dim block, times the
// block's K scale, the blocks summed in order, times sm_scale·log2(e)/64; online softmax in base 2;
// P' = fp16(fp32(p · V scale) · 256) into an f16 WMMA against the V codebook values, fp32
// accumulation; the partial o is Σ P'·codebook / (256·64) (an exact power of two), l = Σ p.
//
// Workgroup (row chunk, split, KV head), 4 waves, as the portable tier: up to query_group
// consecutive query rows × the G query heads of the KV head; rows of the chunk with different
// requests are processed one request at a time (a "row set" of nq = rows·G ≤ 32 queries, in one or
// two 16-query M tiles). Geometry: upstream's WMMA tier's (oracle.WMMAGeometry), splits of a
// multiple of 16 tokens, so every split is whole 16-token tiles. Per tile:
//   1. staging (all 4 waves): the 16 tokens' K and V codebook values as fp16 in shared memory
//      (K [token][dim], V [dim][token]), their K block scales and V scale; a token past the tile's
//      end or in a block with an id outside [0, num_blocks) is zeros and never read;
//   2. scores (wave w: K block w): 4 chained WMMAs (64 dims) per M tile, times the block's K scale
//      per token, into shared memory;
//   3. softmax (every wave, the same arithmetic, so the same bits): lane l holds query
//      16·mt + l mod 16 (lanes 16–31 the same queries: the replication WMMA's A operand needs),
//      sums the 4 blocks in order, masks, updates its running max and l, and packs P' straight into
//      the A fragment of P·V;
//   4. P·V (wave w: dims 64w..64w+63): o rescaled by alpha (from shared memory, rows in D's
//      layout), then 4 WMMAs per M tile.
// At the end of the split wave w writes dims 64w..64w+63 of every query's partial row, wave 0 its
// m and l.
#include "octave_lane.h"
#include "octave_params.h"
#include "octave_wmma.h"

enum { WD_TOK = 16, WD_QMAX = 32, WD_ROW = 132 };  // tokens per tile; queries per row set; padded row (dwords)

#if OCT_WMMA_BODY

struct WdSmem {
  uint32_t q[WD_QMAX][WD_ROW];     // fp16 query, rotated; dims 2i, 2i+1 in dword i; rows >= nq zero
  uint32_t k[WD_TOK][WD_ROW];      // K codebook values as fp16, [token][dim pair]
  uint32_t v[OCT_D][WD_TOK / 2];   // V codebook values as fp16, [dim][token pair]
  float s[4][WD_QMAX][WD_TOK];     // per K block: fp32 dot × K block scale, [block][query][token]
  float ks[WD_TOK][4];             // K block scales
  float vs[WD_TOK];                // V scale (the fp16 value; 0 for a token not staged)
  int ok[WD_TOK];                  // staged: inside the tile and in a valid block
  float alpha[OCT_WAVES][WD_QMAX]; // per wave: this tile's rescale factor of each query
  alignas(16) uint16_t pp[OCT_WAVES][WD_QMAX][WD_TOK];  // per wave: P' as fp16, [query][token]
};

// The score of query q and tile token t in log2 units: the 4 blocks' dot × K scale summed in
// order, times sm_scale·log2(e)/64; -inf when the token is not staged or at or past the query's
// klen (ts + t >= kq).
OCT_DEV float wd_score(const WdSmem& sm, const OctDecodeParams& p, int q, int t, int64_t ts, int kq) {
  const float s = oct_mul_rn(oct_add_rn(oct_add_rn(oct_add_rn(sm.s[0][q][t], sm.s[1][q][t]), sm.s[2][q][t]), sm.s[3][q][t]),
                             p.score_scale);
  return sm.ok[t] && ts + t < kq ? s : -oct_inf();
}

OCT_DEV uint32_t wd_h(float x) { return oct_f32_to_f16(x); }
// Two int8 codebook bytes of w (bytes i, i + 1) as two fp16 values (exact) in one dword.
OCT_DEV uint32_t wd_h2(uint32_t w, int i) { return wd_h(oct_i8(w, i)) | (wd_h(oct_i8(w, i + 1)) << 16); }

// Writes the partial row of an empty query: o = 0, m = -inf, l = 0 (one wave, lane l dims 8l..8l+7).
OCT_DEV void wd_write_empty(float* dst, int lane) {
  OctU4 z;
  z.x = z.y = z.z = z.w = 0u;
  *(OctU4*)(dst + 8 * lane) = z;
  *(OctU4*)(dst + 8 * lane + 4) = z;
  if (lane == 0) dst[256] = -oct_inf(), dst[257] = 0.0f;
}

// Stages tokens ts..ts+15 (those below te) of KV head h: wave w takes tokens w, w + 4, ...; lane l
// dims 8l..8l+7.
template <int FMT>
OCT_DEV void wd_stage(const OctDecodeParams& p, WdSmem& sm, const int32_t* bt_row, int64_t ts, int64_t te,
                      int h, int lane, int w) {
  const OctLayout L = oct_layout(FMT);
  OCT_NOUNROLL for (int t = w; t < WD_TOK; t += OCT_WAVES) {
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
    sm.k[t][4 * lane] = wd_h2(k0, 0), sm.k[t][4 * lane + 1] = wd_h2(k0, 2);
    sm.k[t][4 * lane + 2] = wd_h2(k1, 0), sm.k[t][4 * lane + 3] = wd_h2(k1, 2);
    // V dims 8l..8l+7 of token t: half t & 1 of dword t / 2 of each dim's row.
    uint16_t* vcol = (uint16_t*)sm.v;
    for (int e = 0; e < 4; e++) {
      vcol[(8 * lane + e) * WD_TOK + t] = (uint16_t)wd_h(oct_i8(v0, e));
      vcol[(8 * lane + 4 + e) * WD_TOK + t] = (uint16_t)wd_h(oct_i8(v1, e));
    }
    if (lane < 4) sm.ks[t][lane] = kscale;
    if (lane == 0) sm.vs[t] = vscale, sm.ok[t] = slot != nullptr;
  }
}

template <int FMT>
OCT_DEV void wd_body(const OctDecodeParams& p, WdSmem& sm) {
  const int lane = oct_lane(), w = oct_wave(), n = lane & 15, hh = lane >> 4;
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
      wd_write_empty(p.partials + prow * p.pstride, lane);
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
#define WD_ROWJ(q) ((rows >> (4 * ((q) / p.g))) & 15)
#define WD_PROW(q) \
  ((((int64_t)(row0 + WD_ROWJ(q)) * p.hq + (int64_t)h * p.g + (q) % p.g) * p.num_splits + split) * p.pstride)

    const int64_t te = t1 < kmax ? t1 : (int64_t)kmax;
    const int ntile = te > t0 ? (int)((te - t0 + WD_TOK - 1) / WD_TOK) : 0;
    if (ntile == 0) {  // no token of the split for this set: empty partials, nothing read
      for (int q = w; q < nq; q += OCT_WAVES) wd_write_empty(p.partials + WD_PROW(q), lane);
      continue;
    }

    // Query: rotate like K in float32, round to fp16; rows nq..16·mtiles-1 zero.
    oct_sync();
    for (int q = w; q < 16 * mtiles; q += OCT_WAVES) {
      float x[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (q < nq) {
        oct_load8(p.query + (int64_t)(row0 + WD_ROWJ(q)) * p.q_st + (int64_t)(h * p.g + q % p.g) * p.q_sh + 8 * lane,
                  p.dtype, x);
        oct_rotate(x, p.k_signs, lane, !oct_layout(FMT).compact);
      }
      for (int i = 0; i < 4; i++) sm.q[q][4 * lane + i] = wd_h(x[2 * i]) | (wd_h(x[2 * i + 1]) << 16);
    }

    // Per lane: the klen of its queries 16·mt + n (0 past nq), their running max and l; o of
    // wave w's dims for every M tile.
    int kq[2];
    float mrun[2], lrun[2];
    OctWmmaF32 o[2][4];
    OCT_UNROLL for (int mt = 0; mt < 2; mt++) {
      const int q = 16 * mt + n;
      const int j = q < nq ? WD_ROWJ(q) : 0;
      kq[mt] = q < nq ? (j == 0 ? klen[0] : j == 1 ? klen[1] : j == 2 ? klen[2] : klen[3]) : 0;
      mrun[mt] = ninf, lrun[mt] = 0.0f;
      OCT_UNROLL for (int ct = 0; ct < 4; ct++)
        OCT_UNROLL for (int v = 0; v < 8; v++) o[mt][ct].r[v] = 0.0f;
    }
    const int32_t* bt_row = p.block_table + (int64_t)r * p.max_blocks;

    for (int jt = 0; jt < ntile; jt++) {
      const int64_t ts = t0 + (int64_t)WD_TOK * jt;
      oct_sync();  // the previous tile's shared memory is read (and the queries written)
      wd_stage<FMT>(p, sm, bt_row, ts, te, h, lane, w);
      oct_sync();

      // Scores of K block w: dot over its 64 dims (4 WMMAs), times the token's K block scale.
      OCT_UNROLL for (int mt = 0; mt < 2; mt++) {  // (unrolled: o and pa stay in registers)
        if (mt >= mtiles) break;
        OctWmmaF32 acc;
        OCT_UNROLL for (int v = 0; v < 8; v++) acc.r[v] = 0.0f;
        OCT_NOUNROLL for (int kk = 0; kk < 4; kk++) {  // (not unrolled: keeps few fragments live)
          OctWmmaH16 a, b;
          OCT_UNROLL for (int i = 0; i < 8; i++) {
            a.r[i] = sm.q[16 * mt + n][32 * w + 8 * kk + i];  // query row n, dims 64w + 16kk + 0..15
            b.r[i] = sm.k[n][32 * w + 8 * kk + i];            // token column n, the same dims
          }
          acc = oct_wmma_f32_16x16x16_f16(a, b, acc);
        }
        const float ksc = sm.ks[n][w];
        OCT_UNROLL for (int v = 0; v < 8; v++) sm.s[w][16 * mt + 2 * v + hh][n] = acc.r[v] * ksc;
      }
      oct_sync();

      // Softmax of queries 16·mt + n over the tile, two passes over the scores in shared memory
      // (the second recomputes each score with the same operations, so the same bits: few live
      // registers); P' to this wave's shared memory, read back as the A operand of P·V.
      OCT_UNROLL for (int mt = 0; mt < 2; mt++) {
        if (mt >= mtiles) break;
        const int q = 16 * mt + n;
        float mx = ninf;
        OCT_NOUNROLL for (int t = 0; t < WD_TOK; t++) mx = oct_fmax(mx, wd_score(sm, p, q, t, ts, kq[mt]));
        const float mo = mrun[mt], mn = oct_fmax(mo, mx);
        float alpha = 1.0f, sum = 0.0f;
        uint16_t* pp = sm.pp[w][q];
        if (mn != ninf) {
          alpha = oct_exp2(mo - mn);
          OCT_NOUNROLL for (int t = 0; t < WD_TOK; t++) {
            const float pt = oct_exp2(wd_score(sm, p, q, t, ts, kq[mt]) - mn);
            sum = oct_add_rn(sum, pt);
            // P' = fp16(fp32(p · V scale) · 256); a masked token (p = 0) is exactly 0, whatever
            // its V scale (never read: 0, but a poisoned slot a row does not attend to may be inf).
            pp[t] = pt == 0.0f ? (uint16_t)0 : (uint16_t)wd_h(oct_mul_rn(oct_mul_rn(pt, sm.vs[t]), 256.0f));
          }
        } else {
          OCT_NOUNROLL for (int t = 0; t < WD_TOK; t++) pp[t] = 0;
        }
        lrun[mt] = oct_fma(lrun[mt], alpha, sum);
        if (OCT_MUTANT(OCT_MUT_DECODE_WMMA_L_F16)) lrun[mt] = oct_f16_to_f32((uint16_t)wd_h(lrun[mt]));  // mutant: l in fp16
        mrun[mt] = mn;
        sm.alpha[w][q] = alpha;  // lanes n and n + 16 write the same values
      }
      oct_sync_wave();

      // P·V of wave w's dims: o rescaled (rows in D's layout), then P' · V per 16-dim column tile.
      OCT_UNROLL for (int mt = 0; mt < 2; mt++) {
        if (mt >= mtiles) break;
        OctWmmaH16 pa;  // row n: query 16·mt + n, P' of tokens 0..15
        OCT_UNROLL for (int i = 0; i < 8; i++) pa.r[i] = ((const uint32_t*)sm.pp[w][16 * mt + n])[i];
        float al[8];
        OCT_UNROLL for (int v = 0; v < 8; v++) al[v] = sm.alpha[w][16 * mt + 2 * v + hh];
        OCT_UNROLL for (int ct = 0; ct < 4; ct++) {
          OctWmmaH16 b;
          OCT_UNROLL for (int i = 0; i < 8; i++) b.r[i] = sm.v[64 * w + 16 * ct + n][i];  // dim column n, tokens 0..15
          OCT_UNROLL for (int v = 0; v < 8; v++) o[mt][ct].r[v] = oct_mul_rn(o[mt][ct].r[v], al[v]);
          o[mt][ct] = oct_wmma_f32_16x16x16_f16(pa, b, o[mt][ct]);
        }
      }
    }

    // Partial rows: o = Σ P'·codebook / (256·64), m, l.
    OCT_UNROLL for (int mt = 0; mt < 2; mt++) {
      if (mt >= mtiles) break;
      OCT_UNROLL for (int v = 0; v < 8; v++) {
        const int q = 16 * mt + 2 * v + hh;
        if (q >= nq) continue;
        float* dst = p.partials + WD_PROW(q) + 64 * w + n;
        OCT_UNROLL for (int ct = 0; ct < 4; ct++) dst[16 * ct] = oct_mul_rn(o[mt][ct].r[v], 0x1p-14f);
      }
      const int q = 16 * mt + n;
      if (w == 0 && hh == 0 && q < nq) {
        float* dst = p.partials + WD_PROW(q);
        dst[256] = mrun[mt], dst[257] = lrun[mt];
        if (OCT_MUTANT(OCT_MUT_DECODE_WMMA_PARTIAL_L_F16)) dst[257] = oct_f16_to_f32((uint16_t)wd_h(lrun[mt]));  // mutant
      }
    }
#undef WD_ROWJ
#undef WD_PROW
  }
}

template <int FMT>
OCT_DEV void wd_kernel(const OctDecodeParams& p) {
  OCT_SHARED WdSmem sm;
  wd_body<FMT>(p, sm);
}
#define OCT_WD_BODY(fmt) wd_kernel<fmt>(p);
#else
#define OCT_WD_BODY(fmt) (void)p;
#endif

// One kernel per format (the layout is a compile-time constant).
#define OCT_WD_KERNEL(name, fmt) \
  OCT_KERNEL(OCT_THREADS) void name(OctDecodeParams p) { OCT_WD_BODY(fmt) }
OCT_WD_KERNEL(octave_decode_wmma_k3v4_kernel, 4)
OCT_WD_KERNEL(octave_decode_wmma_k3v3_kernel, 3)
OCT_WD_KERNEL(octave_decode_wmma_k3v3c_kernel, 19)

#define OCT_WD_LAUNCH(name) OCT_LAUNCH(name, chunks, p.num_splits, p.hkv, OCT_THREADS, p)
hipError_t oct_launch_decode_wmma(const OctDecodeParams& p) {
  const int64_t chunks = ((int64_t)p.num_q + p.qgroup - 1) / p.qgroup;
  switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
    case 4: OCT_WD_LAUNCH(octave_decode_wmma_k3v4_kernel); break;
    case 3: OCT_WD_LAUNCH(octave_decode_wmma_k3v3_kernel); break;
    default: OCT_WD_LAUNCH(octave_decode_wmma_k3v3c_kernel); break;
  }
  return oct_launch_status();
}
