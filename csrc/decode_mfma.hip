// decode, mfma tier (docs/contract.md §3.3, profile int8rowq): split-KV attention over the packed
// cache with the CDNA3 wave64 MFMA instructions, writing split partials (§3.4 layout) that the
// tier's wave64 reduce (reduce_mfma.hip) merges. On gfx942 the instructions, on the emulator and
// CUDA builds their model (octave_mfma.h); gfx1100 gets stubs. docs/kernels.md, "The mfma tier",
// has the design.
//
// Profile int8rowq: the query rotated in float32 and quantized to int8 with one scale per row over
// its 256 dims, qmax = max(1e-8, max|x|), q = rint(x·127/qmax) clamped to ±127, scale qmax/127; per
// 64-dim K block two chained v_mfma_i32_16x16x32_i8 of the K codebook bytes (as they are) against
// the int8 query, an exact int32 dot, times the token's K block scale; the 4 blocks summed in
// order, times the query scale, times sm_scale·log2(e)/64; online softmax in base 2;
// P' = fp16(fp32(p · V scale) · 64) into v_mfma_f32_16x16x16_f16 against the V codebook values
// (fp16, exact), fp32 accumulation; the partial o is Σ P'·codebook · 2^-12, l = Σ p.
//
// Workgroup (row chunk, split, KV head), OCT_THREADS = 128 threads: two waves of 64 (on NVIDIA and
// the emulator, the model's wave64 of two warps / 64 fibers). Up to query_group consecutive query
// rows × the G query heads of the KV head; rows of the chunk with different requests are processed
// one request at a time (a "row set" of nq = rows·G ≤ 32 queries, in one or two 16-query N tiles:
// an MTP chunk of 4 rows and G = 8 takes two). Geometry: the WMMA tier's (oracle.WMMAGeometry),
// splits of a multiple of 16 tokens. Per 16-token tile:
//   1. staging (all threads, as 4 logical waves of 32): the tokens' K codebook bytes [token][dim]
//      and V codebook values as fp16 [dim][token] in shared memory, their K block scales and V
//      scale; a token past the tile's end or in a block with an id outside [0, num_blocks) is zeros
//      and never read;
//   2. scores, Sᵀ = K·Qᵀ (wave W: K blocks 2W and 2W + 1): A = the tile's K bytes (16 tokens × 32
//      dims), B = the int8 queries (32 dims × 16 queries); D[token][query] lands in lane
//      query + 16·⌊token/4⌋, register token mod 4; × the token's K block scale, to shared memory;
//   3. softmax (both waves, the same arithmetic, so the same bits): lane l holds query l mod 16 of
//      each N tile and tokens 4⌊l/16⌋..+3 — the very place of P in P·V's A operand, so P' is packed
//      in the lane that computed it. Each lane sums its tokens' 4 block scores in order and scales
//      them; the tile's max of a query is the max of its 4 lane groups' maxima (exchanged through
//      shared memory, 64-lane wave barrier); l is kept per lane (its tokens), summed over the 4
//      groups at the end;
//   4. P·V (wave W: dims 128W..128W+127, 8 column tiles per N tile): o rescaled by alpha (rows in
//      D's layout: lane dim + 16·⌊query/4⌋, register query mod 4, alpha through shared memory),
//      then one MFMA per column tile with B = V (16 tokens × 16 dims).
// At the end of the split wave W writes dims 128W..128W+127 of every query's partial row, wave 0
// its m and l.
#include "octave_lane.h"
#include "octave_mfma.h"
#include "octave_mutant.h"
#include "octave_params.h"

enum {
  MD_TOK = 16,                 // tokens per tile (the i8 MFMA's M)
  MD_QMAX = 32,                // queries per row set: two 16-query N tiles
  MD_BROW = 68,                // padded row of 256 int8 values (dwords)
  MD_WAVES = OCT_THREADS / 64  // wave64s per workgroup
};
static_assert(OCT_THREADS <= OCT_MFMA_MAX_THREADS && OCT_THREADS % 64 == 0, "MFMA workgroup: whole wave64s");

#if OCT_MFMA_BODY

struct MdSmem {
  uint32_t q[MD_QMAX][MD_BROW];     // int8 query, rotated; dims 4i..4i+3 in dword i; rows >= nq zero
  float qs[MD_QMAX];                // query scale qmax/127 (0 for rows >= nq)
  uint32_t k[MD_TOK][MD_BROW];      // K codebook bytes (int8), [token][dim quad]
  uint32_t v[OCT_D][MD_TOK / 2];    // V codebook values as fp16, [dim][token pair]
  float s[4][MD_QMAX][MD_TOK];      // per K block: float(int32 dot) × K block scale, [block][query][token]
  float ks[MD_TOK][4];              // K block scales
  float vs[MD_TOK];                 // V scale (the fp16 value; 0 for a token not staged)
  int ok[MD_TOK];                   // staged: inside the tile and in a valid block
  float gx[MD_WAVES][2][4][16];     // per wave: a lane group's max (then its l) of each query, [N tile][group][query]
  float alpha[MD_WAVES][MD_QMAX];   // per wave: this tile's rescale factor of each query
};

OCT_DEV uint32_t md_h(float x) { return oct_f32_to_f16(x); }

// Writes the partial row of an empty query: o = 0, m = -inf, l = 0 (one logical wave of 32, lane
// l dims 8l..8l+7).
OCT_DEV void md_write_empty(float* dst, int lane) {
  OctU4 z;
  z.x = z.y = z.z = z.w = 0u;
  *(OctU4*)(dst + 8 * lane) = z;
  *(OctU4*)(dst + 8 * lane + 4) = z;
  if (lane == 0) dst[256] = -oct_inf(), dst[257] = 0.0f;
}

// Stages tokens ts..ts+15 (those below te) of KV head h: logical wave w (0..3) takes tokens w,
// w + 4, ...; lane l dims 8l..8l+7.
template <int FMT>
OCT_DEV void md_stage(const OctDecodeParams& p, MdSmem& sm, const int32_t* bt_row, int64_t ts, int64_t te, int h,
                      int lane, int w) {
  const OctLayout L = oct_layout(FMT);
  OCT_NOUNROLL for (int t = w; t < MD_TOK; t += OCT_WAVES) {
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
    sm.k[t][2 * lane] = k0, sm.k[t][2 * lane + 1] = k1;  // dims 8l..8l+7: dwords 2l, 2l + 1
    uint16_t* vcol = (uint16_t*)sm.v;
    for (int e = 0; e < 4; e++) {
      vcol[(8 * lane + e) * MD_TOK + t] = (uint16_t)md_h(oct_i8(v0, e));
      vcol[(8 * lane + 4 + e) * MD_TOK + t] = (uint16_t)md_h(oct_i8(v1, e));
    }
    if (lane < 4) sm.ks[t][lane] = kscale;
    if (lane == 0) sm.vs[t] = vscale, sm.ok[t] = slot != nullptr;
  }
}

template <int FMT>
OCT_DEV void md_body(const OctDecodeParams& p, MdSmem& sm) {
  const int lane = oct_lane(), w = oct_wave();  // logical wave of 32: staging and write-out
  // The wave64: its lane (the MFMA operands' lane), column n = l mod 16 and lane group g = l / 16.
  // (mutant OCT_MUT_DECODE_MFMA_LANE32: the wave32 lane taken for the wave64's)
  const int ml = OCT_MUTANT(OCT_MUT_DECODE_MFMA_LANE32) ? oct_lane() : oct_mfma_lane();
  const int W = oct_tid() >> 6, n = ml & 15, g = ml >> 4;
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
    for (int gq = w; gq < p.g; gq += OCT_WAVES) {
      const int64_t prow = ((int64_t)(row0 + j) * p.hq + (int64_t)h * p.g + gq) * p.num_splits + split;
      md_write_empty(p.partials + prow * p.pstride, lane);
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
    const int nq = nrows * p.g, ntl = (nq + 15) / 16;  // query q: row rows[q / G], head h·G + q % G
#define MD_ROWJ(q) ((rows >> (4 * ((q) / p.g))) & 15)
#define MD_PROW(q) \
  ((((int64_t)(row0 + MD_ROWJ(q)) * p.hq + (int64_t)h * p.g + (q) % p.g) * p.num_splits + split) * p.pstride)

    const int64_t te = t1 < kmax ? t1 : (int64_t)kmax;
    const int ntile = te > t0 ? (int)((te - t0 + MD_TOK - 1) / MD_TOK) : 0;
    if (ntile == 0) {  // no token of the split for this set: empty partials, nothing read
      for (int q = w; q < nq; q += OCT_WAVES) md_write_empty(p.partials + MD_PROW(q), lane);
      continue;
    }

    // Query (logical wave w: queries w, w + 4, ...): rotate like K in float32, quantize to int8
    // with one scale per row; rows nq..16·ntl-1 zero with scale 0.
    oct_sync();
    for (int q = w; q < 16 * ntl; q += OCT_WAVES) {
      float x[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (q < nq) {
        oct_load8(p.query + (int64_t)(row0 + MD_ROWJ(q)) * p.q_st + (int64_t)(h * p.g + q % p.g) * p.q_sh + 8 * lane,
                  p.dtype, x);
        oct_rotate(x, p.k_signs, lane, !oct_layout(FMT).compact);
      }
      float amax = 0.0f;
      OCT_UNROLL for (int i = 0; i < 8; i++) amax = oct_fmax(amax, oct_fabs(x[i]));
      const float qmax = oct_fmax(oct_max32(amax), 1e-8f);
      uint32_t b[2] = {0u, 0u};
      OCT_UNROLL for (int i = 0; i < 8; i++) {
        const float y = oct_fmin(oct_fmax(oct_rint(oct_div_rn(oct_mul_rn(x[i], 127.0f), qmax)), -127.0f), 127.0f);
        b[i >> 2] |= (uint32_t)(uint8_t)(int8_t)(int)y << (8 * (i & 3));
      }
      sm.q[q][2 * lane] = b[0], sm.q[q][2 * lane + 1] = b[1];
      if (lane == 0) sm.qs[q] = q < nq ? oct_div_rn(qmax, 127.0f) : 0.0f;
    }

    // Per lane: the klen of its queries 16·nt + n (0 past nq), their running max and l (this
    // lane's tokens); o of wave W's dims for every N tile.
    int kq[2];
    float mrun[2], lrun[2];
    OctMfmaF32 o[2][8];
    OCT_UNROLL for (int nt = 0; nt < 2; nt++) {
      // (mutant OCT_MUT_DECODE_MFMA_NTILE_KLEN: the N tile's offset dropped from the query's index)
      const int q = (OCT_MUTANT(OCT_MUT_DECODE_MFMA_NTILE_KLEN) ? 0 : 16 * nt) + n;
      const int j = q < nq ? MD_ROWJ(q) : 0;
      kq[nt] = 16 * nt + n < nq ? (j == 0 ? klen[0] : j == 1 ? klen[1] : j == 2 ? klen[2] : klen[3]) : 0;
      mrun[nt] = ninf, lrun[nt] = 0.0f;
      OCT_UNROLL for (int ct = 0; ct < 8; ct++)
        OCT_UNROLL for (int i = 0; i < 4; i++) o[nt][ct].r[i] = 0.0f;
    }
    const int32_t* bt_row = p.block_table + (int64_t)r * p.max_blocks;

    for (int jt = 0; jt < ntile; jt++) {
      const int64_t ts = t0 + (int64_t)MD_TOK * jt;
      oct_sync();  // the previous tile's shared memory is read (and the queries written)
      md_stage<FMT>(p, sm, bt_row, ts, te, h, lane, w);
      oct_sync();

      // Scores of K blocks 2W, 2W + 1: per block two chained i8 MFMAs (dims 32 at a time), an
      // exact int32 dot, times the token's K block scale. A: token n, dims 8g..8g+7 of the 32;
      // B: query 16·nt + n, the same dims; D: tokens 4g + i of query 16·nt + n.
      OCT_UNROLL for (int nt = 0; nt < 2; nt++) {
        if (nt >= ntl) break;
        OCT_UNROLL for (int bb = 0; bb < 2; bb++) {
          const int b = 2 * W + bb;
          OctMfmaI32 acc;
          OCT_UNROLL for (int i = 0; i < 4; i++) acc.r[i] = 0;
          OCT_UNROLL for (int j = 0; j < 2; j++) {
            const int d = 16 * b + 8 * j + 2 * g;  // dword of dims 64b + 32j + 8g
            OctMfmaI8 a, bq;
            a.r[0] = sm.k[n][d], a.r[1] = sm.k[n][d + 1];
            bq.r[0] = sm.q[16 * nt + n][d], bq.r[1] = sm.q[16 * nt + n][d + 1];
            acc = oct_mfma_i32_16x16x32_i8(a, bq, acc);
          }
          // (mutant OCT_MUT_DECODE_MFMA_KSCALE_ROW: block 0's K scale for every block)
          const int kb = OCT_MUTANT(OCT_MUT_DECODE_MFMA_KSCALE_ROW) ? 0 : b;
          OCT_UNROLL for (int i = 0; i < 4; i++) sm.s[b][16 * nt + n][4 * g + i] = oct_mul_rn((float)acc.r[i], sm.ks[4 * g + i][kb]);
        }
      }
      oct_sync();

      // Softmax of query 16·nt + n over the tile (tokens 4g..4g+3 in this lane): scores, this
      // group's max, the tile's max over the 4 groups, alpha, p, P' packed as P·V's A operand.
      OctMfmaH16 pa[2];
      float sc[2][4];
      OCT_UNROLL for (int nt = 0; nt < 2; nt++) {
        if (nt >= ntl) break;
        const int q = 16 * nt + n;
        float mx = ninf;
        OCT_UNROLL for (int i = 0; i < 4; i++) {
          const int t = 4 * g + i;
          const float s = oct_mul_rn(
              oct_mul_rn(oct_add_rn(oct_add_rn(oct_add_rn(sm.s[0][q][t], sm.s[1][q][t]), sm.s[2][q][t]), sm.s[3][q][t]),
                         sm.qs[q]),
              p.score_scale);
          sc[nt][i] = sm.ok[t] && ts + t < kq[nt] ? s : ninf;
          mx = oct_fmax(mx, sc[nt][i]);
        }
        sm.gx[W][nt][g][n] = mx;
      }
      oct_mfma_sync_wave();
      OCT_UNROLL for (int nt = 0; nt < 2; nt++) {
        if (nt >= ntl) break;
        const float mx = oct_fmax(oct_fmax(sm.gx[W][nt][0][n], sm.gx[W][nt][1][n]), oct_fmax(sm.gx[W][nt][2][n], sm.gx[W][nt][3][n]));
        const float mo = mrun[nt], mn = oct_fmax(mo, mx);
        float alpha = 1.0f, sum = 0.0f;
        uint32_t ph[4] = {0u, 0u, 0u, 0u};
        if (mn != ninf) {
          alpha = oct_exp2(mo - mn);
          OCT_UNROLL for (int i = 0; i < 4; i++) {
            const float pt = oct_exp2(sc[nt][i] - mn);
            sum = oct_add_rn(sum, pt);
            // P' = fp16(fp32(p · V scale) · 64); a masked token (p = 0) is exactly 0, whatever
            // its V scale (a poisoned slot a row does not attend to may hold inf).
            ph[i] = pt == 0.0f ? 0u : md_h(oct_mul_rn(oct_mul_rn(pt, sm.vs[4 * g + i]), 64.0f));
          }
        }
        pa[nt].r[0] = ph[0] | ph[1] << 16, pa[nt].r[1] = ph[2] | ph[3] << 16;
        lrun[nt] = oct_fma(lrun[nt], alpha, sum);
        if (OCT_MUTANT(OCT_MUT_DECODE_MFMA_L_F16)) lrun[nt] = oct_f16_to_f32((uint16_t)md_h(lrun[nt]));  // mutant: l in fp16
        mrun[nt] = mn;
        if (g == 0) sm.alpha[W][16 * nt + n] = alpha;
      }
      oct_mfma_sync_wave();  // the alphas are written; gx is read (the next tile writes it after oct_sync)

      // P·V of wave W's dims: o rescaled (rows in D's layout: queries 4g + i), then P' · V per
      // 16-dim column tile (B: dim 128W + 16ct + n, tokens 4g..4g+3).
      OCT_UNROLL for (int nt = 0; nt < 2; nt++) {
        if (nt >= ntl) break;
        float al[4];
        OCT_UNROLL for (int i = 0; i < 4; i++) al[i] = sm.alpha[W][16 * nt + 4 * g + i];
        OCT_UNROLL for (int ct = 0; ct < 8; ct++) {
          const int dim = 128 * W + 16 * ct + n;
          OctMfmaH16 bv;
          // (mutant OCT_MUT_DECODE_MFMA_PV_KORDER: V's two registers in the wrong order, tokens
          // 4g + 2, 4g + 3 against P's 4g, 4g + 1)
          const int sw = OCT_MUTANT(OCT_MUT_DECODE_MFMA_PV_KORDER) ? 1 : 0;
          bv.r[0] = sm.v[dim][2 * g + sw], bv.r[1] = sm.v[dim][2 * g + 1 - sw];
          OCT_UNROLL for (int i = 0; i < 4; i++) o[nt][ct].r[i] = oct_mul_rn(o[nt][ct].r[i], al[i]);
          o[nt][ct] = oct_mfma_f32_16x16x16_f16(pa[nt], bv, o[nt][ct]);
        }
      }
    }

    // Partial rows: o = Σ P'·codebook · 2^-12 (wave W's dims), m, and l summed over the 4 lane
    // groups in group order (through shared memory).
    OCT_UNROLL for (int nt = 0; nt < 2; nt++) {
      if (nt >= ntl) break;
      OCT_UNROLL for (int i = 0; i < 4; i++) {
        const int q = 16 * nt + 4 * g + i;
        if (q >= nq) continue;
        float* dst = p.partials + MD_PROW(q) + 128 * W + n;
        OCT_UNROLL for (int ct = 0; ct < 8; ct++) dst[16 * ct] = oct_mul_rn(o[nt][ct].r[i], 0x1p-12f);
      }
    }
    oct_sync();  // every wave is past the tile loop's reads of gx
    OCT_UNROLL for (int nt = 0; nt < 2; nt++)
      if (nt < ntl) sm.gx[W][nt][g][n] = lrun[nt];
    oct_mfma_sync_wave();
    OCT_UNROLL for (int nt = 0; nt < 2; nt++) {
      const int q = 16 * nt + n;
      if (nt >= ntl || W != 0 || g != 0 || q >= nq) continue;
      float* dst = p.partials + MD_PROW(q);
      dst[256] = mrun[nt];
      dst[257] = oct_add_rn(oct_add_rn(oct_add_rn(sm.gx[0][nt][0][n], sm.gx[0][nt][1][n]), sm.gx[0][nt][2][n]), sm.gx[0][nt][3][n]);
    }
#undef MD_ROWJ
#undef MD_PROW
  }
}

template <int FMT>
OCT_DEV void md_kernel(const OctDecodeParams& p) {
  OCT_SHARED MdSmem sm;
  md_body<FMT>(p, sm);
}
#define OCT_MD_BODY(fmt) md_kernel<fmt>(p);
#else
#define OCT_MD_BODY(fmt) (void)p;
#endif

// One kernel per format (the layout is a compile-time constant).
#define OCT_MD_KERNEL(name, fmt) \
  OCT_KERNEL(OCT_THREADS) void name(OctDecodeParams p) { OCT_MD_BODY(fmt) }
OCT_MD_KERNEL(octave_decode_mfma_k3v4_kernel, 4)
OCT_MD_KERNEL(octave_decode_mfma_k3v3_kernel, 3)
OCT_MD_KERNEL(octave_decode_mfma_k3v3c_kernel, 19)

#define OCT_MD_LAUNCH(name) OCT_LAUNCH(name, chunks, p.num_splits, p.hkv, OCT_THREADS, p)
hipError_t oct_launch_decode_mfma(const OctDecodeParams& p) {
  const int64_t chunks = ((int64_t)p.num_q + p.qgroup - 1) / p.qgroup;
  switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
    case 4: OCT_MD_LAUNCH(octave_decode_mfma_k3v4_kernel); break;
    case 3: OCT_MD_LAUNCH(octave_decode_mfma_k3v3_kernel); break;
    default: OCT_MD_LAUNCH(octave_decode_mfma_k3v3c_kernel); break;
  }
  return oct_launch_status();
}
