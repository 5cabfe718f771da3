// prefill, WMMA tier (docs/contract.md §3.5, profiles int8rowq for the prefix and
// prefill-chunk-f16 for the chunk): attention of a chunk's query rows to their sequence's packed
// prefix and to the chunk's own tokens 0..j (causal, exact), with the RDNA3 wave32 WMMA
// instructions. On gfx1100 the instructions, on the emulator and CUDA builds their model
// (octave_wmma.h); gfx942 gets stubs. docs/kernels.md, "The WMMA tier and its model", has the design.
//
// Phase 1, the packed prefix (profile int8rowq): the query row (fp16, rotated) quantized to
// int8 with one scale per row over its 256 dims, qmax = max(1e-8, max|x|), q = rint(x·127/qmax)
// (ties to even, clamped to ±127), query scale qmax/127; per 64-dim K block an int8 WMMA
// (v_wmma_i32_16x16x16_iu8, both operands signed) of the int8 query against the K codebook bytes,
// exact in int32, times the token's K block scale; the 4 blocks summed in order, times the query
// scale, sm_scale·log2(e) and 1/64; P' = fp16(fp32(p · V scale) · 64) into an f16 WMMA against the
// V codebook values (fp16, exact), fp32 accumulation (so o holds 64·64 = 4096 times the V units).
// Phase 2, the chunk (profile prefill-chunk-f16): q·k as an f16 WMMA of the fp16 q and k (exact
// products, fp32 accumulation), the 4 waves' 64-dim partial sums added in order, times
// sm_scale·log2(e); P = fp16(p) into an f16 WMMA against the exact fp16 V.
// One online softmax in base 2 covers both phases (the running max never changes units: no
// natural-log max, no conversion); between them o is scaled by 2^-12 (exact), back to V units.
// The denominator l sums the unrounded p. out = o / l, rounded to the dtype, still rotated.
//
// bf16 (an Octant extension, as on the portable tier): phase 1 quantizes the bf16 query the same
// way; phase 2 runs the bf16 WMMA (v_wmma_f32_16x16x16_bf16: bf16 products are exact too), and
// P = fp16(p) is split exactly into two bf16 parts, hi (its leading 8 significant bits) and
// lo = P − hi (at most 3), each multiplied by the exact bf16 V into an accumulator of its own; the
// two are added once at the end. So every product of P·V is exact and each term passes through no
// more additions than the bound allows (docs/kernels.md).
//
// Workgroup (tile of 16 consecutive query rows, query head hq), 4 waves; KV head hq / G. Rows of the
// tile that belong to different sequences are processed one sequence at a time (a "row set"; rows of
// no sequence are never written); the other rows of the tile ride along as zero queries with every
// token masked. Per 16-token tile of the prefix, then of the chunk (tokens 0..the set's last row):
//   1. staging (all 4 waves): prefix — the tokens' K codebook bytes [token][dim], V codebook values
//      as fp16 [dim][token], K block scales, V scale; a token in a block with an id outside
//      [0, num_blocks) is zeros and never read; chunk — the raw k [token][dim], v [dim][token];
//   2. scores (wave w: dims 64w..64w+63, the prefix's K block w): 4 chained WMMAs, into shared memory
//      (prefix: × the token's K block scale);
//   3. softmax (every wave, the same arithmetic, so the same bits): lane l holds query row l mod 16
//      (lanes 16–31 the same rows: the replication WMMA's A operand needs), sums the 4 partial
//      scores in order, scales, masks, updates its running max and l, and writes P' (P) to this
//      wave's shared memory, read back as the A operand of P·V;
//   4. P·V (wave w: dims 64w..64w+63): o rescaled by alpha (rows in D's layout), then 4 WMMAs.
// Output: wave w writes dims 64w..64w+63 of each row of the set.
#include "octave_lane.h"
#include "octave_mutant.h"
#include "octave_params.h"
#include "octave_wmma.h"

enum { WP_ROWS = 16, WP_TOK = 16, WP_HROW = 132, WP_BROW = 68 };  // rows and tokens per tile; padded rows (dwords)

#if OCT_WMMA_BODY

struct WpSmem {
  uint32_t qh[WP_ROWS][WP_HROW];  // the set's q rows, raw fp16/bf16 (dims 2i, 2i+1 in dword i); other rows zero
  uint32_t q8[WP_ROWS][WP_BROW];  // the int8 query (dims 4i..4i+3 in dword i)
  float qs[WP_ROWS];              // query scale qmax / 127
  int seq[WP_ROWS];               // each row's sequence, -1 for none
  union {
    struct {
      uint32_t k[WP_TOK][WP_BROW];           // K codebook bytes (int8), [token][dim quad]
      alignas(16) uint16_t v[OCT_D][WP_TOK];  // V codebook values as fp16, [dim][token]
      float ks[WP_TOK][4];                    // K block scales
      float vs[WP_TOK];                       // V scale (the fp16 value)
      int ok[WP_TOK];                         // staged: below ctx and in a valid block
    } pre;
    struct {
      uint32_t k[WP_TOK][WP_HROW];            // raw k, [token][dim pair]
      alignas(16) uint16_t v[OCT_D][WP_TOK];  // raw v, [dim][token]
    } chk;
  } u;
  float s[4][WP_ROWS][WP_TOK];                           // per wave: partial scores, [wave][row][token]
  float alpha[OCT_WAVES][WP_ROWS];                       // per wave: this tile's rescale factor of each row
  float lsum[OCT_WAVES][WP_ROWS];                        // per wave: each row's l at the end
  alignas(16) uint16_t pp[OCT_WAVES][WP_ROWS][WP_TOK];  // per wave: P' or P (fp16; bf16: P's high part), [row][token]
  alignas(16) uint16_t pl[OCT_WAVES][WP_ROWS][WP_TOK];  // per wave, bf16 only: P's low part
};

// Stages prefix tokens ts..ts+15 (those below te = ctx) of KV head h: wave w takes tokens w, w + 4,
// ...; lane l dims 8l..8l+7.
template <int FMT>
OCT_DEV void wp_stage_prefix(const OctPrefillParams& p, WpSmem& sm, const int32_t* bt_row, int64_t ts, int64_t te,
                             int h, int lane, int w) {
  const OctLayout L = oct_layout(FMT);
  OCT_NOUNROLL for (int t = w; t < WP_TOK; t += OCT_WAVES) {
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
    sm.u.pre.k[t][2 * lane] = k0, sm.u.pre.k[t][2 * lane + 1] = k1;
    for (int e = 0; e < 4; e++) {
      sm.u.pre.v[8 * lane + e][t] = oct_f32_to_f16(oct_i8(v0, e));
      sm.u.pre.v[8 * lane + 4 + e][t] = oct_f32_to_f16(oct_i8(v1, e));
    }
    if (lane < 4) sm.u.pre.ks[t][lane] = kscale;
    if (lane == 0) sm.u.pre.vs[t] = vscale, sm.u.pre.ok[t] = slot != nullptr;
  }
}

// Stages chunk tokens us..us+15 (those at or below umax) of KV head h, rows qstart + u of k and v.
OCT_DEV void wp_stage_chunk(const OctPrefillParams& p, WpSmem& sm, int64_t qstart, int64_t us, int64_t umax, int h,
                            int lane, int w) {
  OCT_NOUNROLL for (int t = w; t < WP_TOK; t += OCT_WAVES) {
    uint32_t ku[4] = {0, 0, 0, 0}, vu[4] = {0, 0, 0, 0};
    if (us + t <= umax) {
      const int64_t row = qstart + us + t;
      oct_load8_raw(p.k + row * p.k_st + (int64_t)h * p.k_sh + 8 * lane, ku);
      oct_load8_raw(p.v + row * p.v_st + (int64_t)h * p.v_sh + 8 * lane, vu);
    }
    for (int i = 0; i < 4; i++) {
      sm.u.chk.k[t][4 * lane + i] = ku[i];
      sm.u.chk.v[8 * lane + 2 * i][t] = (uint16_t)vu[i];
      sm.u.chk.v[8 * lane + 2 * i + 1][t] = (uint16_t)(vu[i] >> 16);
    }
  }
}

// Score of row r and tile token t in log2 units: the 4 waves' partial scores added in order, times
// scale (phase 1: the query scale, then sm_scale·log2(e), then 1/64; phase 2: sm_scale·log2(e)).
OCT_DEV float wp_sum4(const WpSmem& sm, int r, int t) {
  return oct_add_rn(oct_add_rn(oct_add_rn(sm.s[0][r][t], sm.s[1][r][t]), sm.s[2][r][t]), sm.s[3][r][t]);
}
OCT_DEV float wp_score_prefix(const WpSmem& sm, int r, int t, float qs, float sc) {
  return oct_mul_rn(oct_mul_rn(oct_mul_rn(wp_sum4(sm, r, t), qs), sc), 0.015625f);
}

// One online-softmax step of lane row r over a tile whose token t has score sc(t) (-inf: masked):
// writes this wave's P row (P' of the prefix, fp16(p) of the chunk; bf16: its two parts) and
// alpha, updates m and l. PHASE 1: P' = fp16(fp32(p · V scale) · 64).
template <int PHASE, bool BF16, class Score>
OCT_DEV void wp_softmax(WpSmem& sm, int w, int r, const Score& sc, float& m, float& l) {
  const float ninf = -oct_inf();
  float mx = ninf;
  OCT_NOUNROLL for (int t = 0; t < WP_TOK; t++) mx = oct_fmax(mx, sc(t));
  const float mn = oct_fmax(m, mx);
  float alpha = 1.0f, sum = 0.0f;
  uint16_t* pp = sm.pp[w][r];
  uint16_t* pl = sm.pl[w][r];
  if (mn != ninf) {
    alpha = oct_exp2(m - mn);
    OCT_NOUNROLL for (int t = 0; t < WP_TOK; t++) {
      const float pt = oct_exp2(sc(t) - mn);
      sum = oct_add_rn(sum, pt);
      if (PHASE == 1) {
        // A masked token (p = 0) is exactly 0, whatever its V scale. (mutant
        // OCT_MUT_PREFILL_WMMA_PV256: P' scaled by 256, wmma-f16q's factor, against o's 2^-12)
        const float kappa = OCT_MUTANT(OCT_MUT_PREFILL_WMMA_PV256) ? 256.0f : 64.0f;
        pp[t] = pt == 0.0f ? (uint16_t)0 : oct_f32_to_f16(oct_mul_rn(oct_mul_rn(pt, sm.u.pre.vs[t]), kappa));
      } else if (!BF16) {
        pp[t] = oct_f32_to_f16(pt);
      } else {
        // fp16(p) = hi + lo exactly: hi its leading 8 significant bits (a bf16 value), lo the rest.
        const float ph = oct_f16_to_f32(oct_f32_to_f16(pt));
        const uint32_t hb = oct_f2u(ph) & 0xFFFF0000u;
        pp[t] = (uint16_t)(hb >> 16);
        pl[t] = (uint16_t)(oct_f2u(oct_sub_rn(ph, oct_u2f(hb))) >> 16);
      }
    }
  } else {
    OCT_NOUNROLL for (int t = 0; t < WP_TOK; t++) pp[t] = 0, pl[t] = 0;
  }
  l = oct_fma(l, alpha, sum);
  m = mn;
  sm.alpha[w][r] = alpha;  // lanes r and r + 16 write the same values
}

// o rescaled by this tile's alpha (rows in D's layout: register v holds row 2v + hh).
OCT_DEV void wp_rescale(const WpSmem& sm, int w, int hh, OctWmmaF32 o[4]) {
  float al[8];
  OCT_UNROLL for (int v = 0; v < 8; v++) al[v] = sm.alpha[w][2 * v + hh];
  OCT_UNROLL for (int ct = 0; ct < 4; ct++)
    OCT_UNROLL for (int v = 0; v < 8; v++) o[ct].r[v] = oct_mul_rn(o[ct].r[v], al[v]);
}

template <int FMT, bool BF16>
OCT_DEV void wp_body(const OctPrefillParams& p, WpSmem& sm) {
  const int lane = oct_lane(), w = oct_wave(), n = lane & 15, hh = lane >> 4;
  const int64_t row0 = (int64_t)oct_bid_x() * WP_ROWS;
  const int hq = oct_bid_y(), h = hq / p.g;
  const int dtype = BF16 ? 2 : 1;
  const float ninf = -oct_inf();
  const float sc = p.score_scale;  // sm_scale·log2(e)

  if (w == 0 && hh == 0) sm.seq[n] = row0 + n < p.rows ? oct_row_seq(p.cu_seqlens, p.num_seqs, row0 + n) : -1;
  oct_sync();
  int remaining = 0;
  for (int j = 0; j < WP_ROWS; j++)
    if (sm.seq[j] >= 0) remaining |= 1 << j;

  while (remaining) {
    int first = 0;
    while (!((remaining >> first) & 1)) first++;
    const int s = sm.seq[first];
    int set = 0, last = 0;
    for (int j = first; j < WP_ROWS; j++)
      if (((remaining >> j) & 1) && sm.seq[j] == s) set |= 1 << j, last = j;
    remaining &= ~set;
    const int64_t qstart = p.cu_seqlens[s], qlen = (int64_t)p.cu_seqlens[s + 1] - qstart;
    int64_t ctx = (int64_t)p.seq_lens[s] - qlen;
    ctx = ctx < 0 ? 0 : ctx > p.kv_max ? p.kv_max : ctx;
    const int64_t umax = row0 + last - qstart;  // the set's last row's position in its chunk
    const bool mine = (set >> n) & 1;           // this lane's softmax row n is in the set
    const int64_t pos = row0 + n - qstart;

    // Queries: wave w rows w, w + 4, ...; lane l dims 8l..8l+7. Raw 16-bit values for phase 2, int8
    // with one scale per row for phase 1; rows outside the set are zeros (q8 0, scale 0).
    oct_sync();  // the previous set's shared memory is read
    OCT_NOUNROLL for (int r = w; r < WP_ROWS; r += OCT_WAVES) {
      uint32_t raw[4] = {0, 0, 0, 0};
      const bool in = (set >> r) & 1;
      if (in) oct_load8_raw(p.q + (row0 + r) * p.q_st + (int64_t)hq * p.q_sh + 8 * lane, raw);
      float x[8], amax = 0.0f;
      for (int i = 0; i < 4; i++) {
        sm.qh[r][4 * lane + i] = raw[i];
        x[2 * i] = oct_h2f((uint16_t)raw[i], dtype), x[2 * i + 1] = oct_h2f((uint16_t)(raw[i] >> 16), dtype);
      }
      for (int e = 0; e < 8; e++) amax = oct_fmax(amax, oct_fabs(x[e]));
      const float qmax = oct_fmax(oct_max32(amax), 1e-8f);
      uint32_t q8[2] = {0, 0};
      for (int e = 0; e < 8; e++) {
        const float y = oct_fmin(oct_fmax(oct_rint(oct_div_rn(oct_mul_rn(x[e], 127.0f), qmax)), -127.0f), 127.0f);
        q8[e >> 2] |= ((uint32_t)(int)y & 0xFFu) << (8 * (e & 3));
      }
      sm.q8[r][2 * lane] = q8[0], sm.q8[r][2 * lane + 1] = q8[1];
      if (lane == 0) sm.qs[r] = in ? oct_div_rn(qmax, 127.0f) : 0.0f;
    }

    float mrun = ninf, lrun = 0.0f;  // lane row n
    OctWmmaF32 o[4], olo[4];         // dims 64w + 16ct + n; olo: bf16's low parts of P
    OCT_UNROLL for (int ct = 0; ct < 4; ct++)
      OCT_UNROLL for (int v = 0; v < 8; v++) o[ct].r[v] = 0.0f, olo[ct].r[v] = 0.0f;

    // Phase 1: the packed prefix, tokens 0..ctx-1.
    const int32_t* bt_row = p.block_table + (int64_t)s * p.max_blocks;
    const int64_t ntp = (ctx + WP_TOK - 1) / WP_TOK;
    for (int64_t jt = 0; jt < ntp; jt++) {
      const int64_t ts = WP_TOK * jt;
      oct_sync();  // the previous tile's shared memory is read (and the queries written)
      wp_stage_prefix<FMT>(p, sm, bt_row, ts, ctx, h, lane, w);
      oct_sync();
      // K block w: the int8 dot over its 64 dims (4 iu8 WMMAs, exact), times the token's K block
      // scale. (mutant OCT_MUT_PREFILL_WMMA_KSCALE: the K block scale not applied; mutant
      // OCT_MUT_PREFILL_WMMA_UNSIGNED_K: the codebook bytes taken as unsigned)
      OctWmmaI32 acc;
      OCT_UNROLL for (int v = 0; v < 8; v++) acc.r[v] = 0;
      OCT_NOUNROLL for (int kk = 0; kk < 4; kk++) {
        OctWmmaI8 a, b;
        OCT_UNROLL for (int i = 0; i < 4; i++) {
          a.r[i] = sm.q8[n][16 * w + 4 * kk + i];      // query row n, dims 64w + 16kk + 0..15
          b.r[i] = sm.u.pre.k[n][16 * w + 4 * kk + i];  // token column n, the same dims
        }
        acc = oct_wmma_i32_16x16x16_iu8<true, !OCT_MUTANT(OCT_MUT_PREFILL_WMMA_UNSIGNED_K), false>(a, b, acc);
      }
      const float ksc = OCT_MUTANT(OCT_MUT_PREFILL_WMMA_KSCALE) ? 1.0f : sm.u.pre.ks[n][w];
      OCT_UNROLL for (int v = 0; v < 8; v++) sm.s[w][2 * v + hh][n] = oct_mul_rn((float)acc.r[v], ksc);
      oct_sync();

      const float qs = sm.qs[n];
      const auto score = [&](int t) {
        return mine && sm.u.pre.ok[t] ? wp_score_prefix(sm, n, t, qs, sc) : ninf;
      };
      wp_softmax<1, BF16>(sm, w, n, score, mrun, lrun);
      oct_sync_wave();

      OctWmmaH16 pa;  // row n: P' of tokens 0..15
      OCT_UNROLL for (int i = 0; i < 8; i++) pa.r[i] = ((const uint32_t*)sm.pp[w][n])[i];
      wp_rescale(sm, w, hh, o);
      OCT_UNROLL for (int ct = 0; ct < 4; ct++) {
        OctWmmaH16 b;  // dim column 64w + 16ct + n, tokens 0..15
        OCT_UNROLL for (int i = 0; i < 8; i++) b.r[i] = ((const uint32_t*)sm.u.pre.v[64 * w + 16 * ct + n])[i];
        o[ct] = oct_wmma_f32_16x16x16_f16(pa, b, o[ct]);
      }
    }
    // o holds Σ P'·codebook = 4096 × the V units: back to V units (exact).
    OCT_UNROLL for (int ct = 0; ct < 4; ct++)
      OCT_UNROLL for (int v = 0; v < 8; v++) o[ct].r[v] = oct_mul_rn(o[ct].r[v], 0x1p-12f);

    // Phase 2: the chunk's own tokens 0..umax, exact, causal (row at position pos sees u <= pos).
    const int64_t ntc = (umax + WP_TOK) / WP_TOK;
    for (int64_t jt = 0; jt < ntc; jt++) {
      const int64_t us = WP_TOK * jt;
      oct_sync();
      wp_stage_chunk(p, sm, qstart, us, umax, h, lane, w);
      oct_sync();
      // Dims 64w..64w+63 of q·k: 4 chained WMMAs (f16 or bf16), fp32 accumulation.
      OctWmmaF32 acc;
      OCT_UNROLL for (int v = 0; v < 8; v++) acc.r[v] = 0.0f;
      OCT_NOUNROLL for (int kk = 0; kk < 4; kk++) {
        OctWmmaH16 a, b;
        OCT_UNROLL for (int i = 0; i < 8; i++) {
          a.r[i] = sm.qh[n][32 * w + 8 * kk + i];
          b.r[i] = sm.u.chk.k[n][32 * w + 8 * kk + i];
        }
        acc = BF16 ? oct_wmma_f32_16x16x16_bf16(a, b, acc) : oct_wmma_f32_16x16x16_f16(a, b, acc);
      }
      OCT_UNROLL for (int v = 0; v < 8; v++) sm.s[w][2 * v + hh][n] = acc.r[v];
      oct_sync();

      // (mutant OCT_MUT_PREFILL_WMMA_CAUSAL: u <= pos + 1, a row sees the next row's token)
      const int64_t lim = OCT_MUTANT(OCT_MUT_PREFILL_WMMA_CAUSAL) ? pos + 1 : pos;
      const auto score = [&](int t) { return mine && us + t <= lim && us + t <= umax ? oct_mul_rn(wp_sum4(sm, n, t), sc) : ninf; };
      wp_softmax<2, BF16>(sm, w, n, score, mrun, lrun);
      oct_sync_wave();

      OctWmmaH16 pa, pb;
      OCT_UNROLL for (int i = 0; i < 8; i++) {
        pa.r[i] = ((const uint32_t*)sm.pp[w][n])[i];
        pb.r[i] = ((const uint32_t*)sm.pl[w][n])[i];
      }
      // (mutant OCT_MUT_PREFILL_WMMA_MERGE: the first chunk tile does not rescale o, the prefix's
      // sum, when the chunk raises the running max)
      if (!(OCT_MUTANT(OCT_MUT_PREFILL_WMMA_MERGE) && jt == 0)) wp_rescale(sm, w, hh, o);
      if (BF16) wp_rescale(sm, w, hh, olo);
      OCT_UNROLL for (int ct = 0; ct < 4; ct++) {
        OctWmmaH16 b;  // dim column 64w + 16ct + n, tokens 0..15
        OCT_UNROLL for (int i = 0; i < 8; i++) b.r[i] = ((const uint32_t*)sm.u.chk.v[64 * w + 16 * ct + n])[i];
        if (BF16) {
          o[ct] = oct_wmma_f32_16x16x16_bf16(pa, b, o[ct]);
          olo[ct] = oct_wmma_f32_16x16x16_bf16(pb, b, olo[ct]);
        } else {
          o[ct] = oct_wmma_f32_16x16x16_f16(pa, b, o[ct]);
        }
      }
    }

    // out = o / l for the rows of the set (wave w: dims 64w..64w+63).
    sm.lsum[w][n] = lrun;
    oct_sync_wave();
    OCT_UNROLL for (int v = 0; v < 8; v++) {
      const int r = 2 * v + hh;
      if (!((set >> r) & 1)) continue;
      const float lr = sm.lsum[w][r];
      uint16_t* dst = p.out + (row0 + r) * p.o_st + (int64_t)hq * p.o_sh + 64 * w + n;
      OCT_UNROLL for (int ct = 0; ct < 4; ct++) {
        const float x = BF16 ? oct_add_rn(o[ct].r[v], olo[ct].r[v]) : o[ct].r[v];
        dst[16 * ct] = oct_f2h(lr == 0.0f ? 0.0f : oct_div_rn(x, lr), dtype);
      }
    }
  }
}

template <int FMT, bool BF16>
OCT_DEV void wp_kernel(const OctPrefillParams& p) {
  OCT_SHARED WpSmem sm;
  wp_body<FMT, BF16>(p, sm);
}
#define OCT_WP_BODY(fmt, bf) wp_kernel<fmt, bf>(p);
#else
#define OCT_WP_BODY(fmt, bf) (void)p;
#endif

// One kernel per format and dtype (the layout and the chunk's WMMA form are compile-time constants).
#define OCT_WP_KERNEL(name, fmt, bf) \
  OCT_KERNEL(OCT_THREADS) void name(OctPrefillParams p) { OCT_WP_BODY(fmt, bf) }
OCT_WP_KERNEL(octave_prefill_wmma_k3v4_kernel, 4, false)
OCT_WP_KERNEL(octave_prefill_wmma_k3v3_kernel, 3, false)
OCT_WP_KERNEL(octave_prefill_wmma_k3v3c_kernel, 19, false)
OCT_WP_KERNEL(octave_prefill_wmma_k3v4_bf16_kernel, 4, true)
OCT_WP_KERNEL(octave_prefill_wmma_k3v3_bf16_kernel, 3, true)
OCT_WP_KERNEL(octave_prefill_wmma_k3v3c_bf16_kernel, 19, true)

#define OCT_WP_LAUNCH(name) OCT_LAUNCH(name, tiles, p.hq, 1, OCT_THREADS, p)
hipError_t oct_launch_prefill_wmma(const OctPrefillParams& p) {
  const int64_t tiles = ((int64_t)p.rows + WP_ROWS - 1) / WP_ROWS;
  const bool bf = p.dtype == 2;
  switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
    case 4: if (bf) OCT_WP_LAUNCH(octave_prefill_wmma_k3v4_bf16_kernel); else OCT_WP_LAUNCH(octave_prefill_wmma_k3v4_kernel); break;
    case 3: if (bf) OCT_WP_LAUNCH(octave_prefill_wmma_k3v3_bf16_kernel); else OCT_WP_LAUNCH(octave_prefill_wmma_k3v3_kernel); break;
    default: if (bf) OCT_WP_LAUNCH(octave_prefill_wmma_k3v3c_bf16_kernel); else OCT_WP_LAUNCH(octave_prefill_wmma_k3v3c_kernel); break;
  }
  return oct_launch_status();
}
