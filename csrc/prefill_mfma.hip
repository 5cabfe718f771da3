// prefill, mfma tier (docs/contract.md §3.5, profiles int8rowq for the prefix and prefill-chunk-f16
// for the chunk): attention of a chunk's query rows to their sequence's packed prefix and to the
// chunk's own tokens 0..j (causal, exact), with the CDNA3 wave64 MFMA instructions. On gfx942 the
// instructions, on the emulator and CUDA builds their model (octave_mfma.h); gfx1100 gets stubs.
// docs/kernels.md, "The mfma tier: prefill", has the design. The arithmetic is the WMMA prefill's
// (prefill_wmma.hip), instruction for instruction where the two differ only in matrix shape:
//
// Phase 1, the packed prefix (profile int8rowq): the query row (fp16, rotated) quantized to int8
// with one scale per row over its 256 dims, qmax = max(1e-8, max|x|), q = rint(x·127/qmax) (ties to
// even, clamped to ±127), query scale qmax/127; per 64-dim K block two chained int8 MFMAs
// (v_mfma_i32_16x16x32_i8, signed) of the int8 query against the K codebook bytes as they are,
// exact in int32, times the token's K block scale; the 4 blocks summed in order, times the query
// scale, sm_scale·log2(e) and 1/64; P' = fp16(fp32(p · V scale) · 64) into an f16 MFMA
// (v_mfma_f32_16x16x16_f16) against the V codebook values (fp16, exact), fp32 accumulation (so o
// holds 64·64 = 4096 times the V units).
// Phase 2, the chunk (profile prefill-chunk-f16): q·k per 64-dim block as 4 chained f16 MFMAs of the
// fp16 q and k (exact products, fp32 accumulation), the 4 blocks' partial sums added in order, times
// sm_scale·log2(e); P = fp16(p) into an f16 MFMA against the exact fp16 V.
// One online softmax in base 2 covers both phases; between them o is scaled by 2^-12 (exact), back
// to V units. The denominator l sums the unrounded p. out = o / l, rounded to the dtype, still
// rotated.
//
// bf16 (an Octant extension, as on the portable and WMMA tiers): phase 1 quantizes the bf16 query
// the same way; phase 2 runs the bf16 MFMA (v_mfma_f32_16x16x16_bf16: bf16 products are exact too),
// and P = fp16(p) is split exactly into two bf16 parts, hi (its leading 8 significant bits) and
// lo = P − hi (at most 3), each multiplied by the exact bf16 V into an accumulator of its own; the
// two are added once at the end (the WMMA prefill's split, docs/kernels.md).
//
// Workgroup (tile of 16 consecutive query rows, query head hq): OCT_THREADS = 128 threads, two
// hardware waves of 64 (wave W = threads 64W..64W+63, lane l = thread mod 64); every MFMA call is
// made by all 64 lanes of a wave, outside any branch that depends on the lane. KV head hq / G. Rows
// of the tile that belong to different sequences are processed one sequence at a time (a "row set";
// rows of no sequence are never written); the other rows ride along as zero queries with every token
// masked. MFMA orientation: S = Q·Kᵀ (A = the query tile, m = row, k = dim; B = Kᵀ, k = dim,
// n = token), so D[row][token] sits in lane token + 16·⌊row/4⌋, register row mod 4; P·V has A = P
// (m = row, k = token) and B = V (k = token, n = dim), o[row][dim] in lane dim + 16·⌊row/4⌋.
// Per 16-token tile of the prefix, then of the chunk (tokens 0..the set's last row):
//   1. staging (all 128 threads as 4 logical waves of 32): prefix — the tokens' K codebook bytes
//      [token][dim], V codebook values as fp16 [dim][token], K block scales, V scale; a token in a
//      block with an id outside [0, num_blocks) is zeros and never read; chunk — the raw k
//      [token][dim], v [dim][token];
//   2. scores (wave W: K blocks 2W and 2W + 1, dims 128W..128W+127): per block its chained MFMAs,
//      into shared memory [block][row][token] (prefix: × the token's K block scale);
//   3. softmax (threads 0..15, thread r the query row r: the reductions over a row's 16 tokens run
//      in one thread over shared memory, so they never cross the 4 lane groups of a wave): sums the
//      4 block scores in order, scales, masks, updates its running max and l, and writes the row's
//      P' (P) and rescale factor alpha to shared memory, followed by a workgroup barrier;
//   4. P·V (wave W: dims 128W..128W+127, 8 column tiles of 16): o rescaled by alpha (rows in D's
//      layout: register i holds row 4·⌊l/16⌋ + i), then one f16 MFMA per column tile.
// Output: wave W writes dims 128W..128W+127 of each row of the set.
#include "octave_lane.h"
#include "octave_mfma.h"
#include "octave_params.h"

enum { MP_ROWS = 16, MP_TOK = 16, MP_HROW = 132, MP_BROW = 68, MP_WAVES = OCT_THREADS / 64 };  // padded rows (dwords)
static_assert(OCT_THREADS % 64 == 0 && OCT_THREADS <= OCT_MFMA_MAX_THREADS, "whole waves of 64, within the model's bound");
static_assert(MP_WAVES == 2, "wave W holds K blocks 2W, 2W + 1 and dims 128W..128W+127");

#if OCT_MFMA_BODY

struct MpSmem {
  uint32_t qh[MP_ROWS][MP_HROW];  // the set's q rows, raw fp16/bf16 (dims 2i, 2i+1 in dword i); other rows zero
  uint32_t q8[MP_ROWS][MP_BROW];  // the int8 query (dims 4i..4i+3 in dword i)
  float qs[MP_ROWS];              // query scale qmax / 127
  int seq[MP_ROWS];               // each row's sequence, -1 for none
  union {
    struct {
      uint32_t k[MP_TOK][MP_BROW];           // K codebook bytes (int8), [token][dim quad]
      alignas(16) uint16_t v[OCT_D][MP_TOK];  // V codebook values as fp16, [dim][token]
      float ks[MP_TOK][4];                    // K block scales
      float vs[MP_TOK];                       // V scale (the fp16 value)
      int ok[MP_TOK];                         // staged: below ctx and in a valid block
    } pre;
    struct {
      uint32_t k[MP_TOK][MP_HROW];            // raw k, [token][dim pair]
      alignas(16) uint16_t v[OCT_D][MP_TOK];  // raw v, [dim][token]
    } chk;
  } u;
  float s[4][MP_ROWS][MP_TOK];               // partial scores, [K block][row][token]
  float alpha[MP_ROWS];                      // this tile's rescale factor of each row
  float lsum[MP_ROWS];                       // each row's l at the end
  alignas(16) uint16_t pp[MP_ROWS][MP_TOK];  // P' or P (fp16; bf16: P's high part), [row][token]
  alignas(16) uint16_t pl[MP_ROWS][MP_TOK];  // bf16 only: P's low part
};

// Stages prefix tokens ts..ts+15 (those below te = ctx) of KV head h: logical wave w takes tokens w,
// w + 4, ...; lane l dims 8l..8l+7.
template <int FMT>
OCT_DEV void mp_stage_prefix(const OctPrefillParams& p, MpSmem& sm, const int32_t* bt_row, int64_t ts, int64_t te,
                             int h, int lane, int w) {
  const OctLayout L = oct_layout(FMT);
  OCT_NOUNROLL for (int t = w; t < MP_TOK; t += OCT_WAVES) {
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
OCT_DEV void mp_stage_chunk(const OctPrefillParams& p, MpSmem& sm, int64_t qstart, int64_t us, int64_t umax, int h,
                            int lane, int w) {
  OCT_NOUNROLL for (int t = w; t < MP_TOK; t += OCT_WAVES) {
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

// Score of row r and tile token t in log2 units: the 4 blocks' partial scores added in order, times
// scale (phase 1: the query scale, then sm_scale·log2(e), then 1/64; phase 2: sm_scale·log2(e)).
OCT_DEV float mp_sum4(const MpSmem& sm, int r, int t) {
  return oct_add_rn(oct_add_rn(oct_add_rn(sm.s[0][r][t], sm.s[1][r][t]), sm.s[2][r][t]), sm.s[3][r][t]);
}
OCT_DEV float mp_score_prefix(const MpSmem& sm, int r, int t, float qs, float sc) {
  return oct_mul_rn(oct_mul_rn(oct_mul_rn(mp_sum4(sm, r, t), qs), sc), 0.015625f);
}

// One online-softmax step of row r over a tile whose token t has score sc(t) (-inf: masked): writes
// the row's P (P' of the prefix, fp16(p) of the chunk; bf16: its two parts) and alpha, updates m
// and l. PHASE 1: P' = fp16(fp32(p · V scale) · 64).
template <int PHASE, bool BF16, class Score>
OCT_DEV void mp_softmax(MpSmem& sm, int r, const Score& sc, float& m, float& l) {
  const float ninf = -oct_inf();
  float mx = ninf;
  OCT_NOUNROLL for (int t = 0; t < MP_TOK; t++) mx = oct_fmax(mx, sc(t));
  const float mn = oct_fmax(m, mx);
  float alpha = 1.0f, sum = 0.0f;
  uint16_t* pp = sm.pp[r];
  uint16_t* pl = sm.pl[r];
  if (mn != ninf) {
    alpha = oct_exp2(m - mn);
    OCT_NOUNROLL for (int t = 0; t < MP_TOK; t++) {
      const float pt = oct_exp2(sc(t) - mn);
      sum = oct_add_rn(sum, pt);
      if (PHASE == 1)  // a masked token (p = 0) is exactly 0, whatever its V scale
        pp[t] = pt == 0.0f ? (uint16_t)0 : oct_f32_to_f16(oct_mul_rn(oct_mul_rn(pt, sm.u.pre.vs[t]), 64.0f));
      else if (!BF16)
        pp[t] = oct_f32_to_f16(pt);
      else {
        // fp16(p) = hi + lo exactly: hi its leading 8 significant bits (a bf16 value), lo the rest.
        const float ph = oct_f16_to_f32(oct_f32_to_f16(pt));
        const uint32_t hb = oct_f2u(ph) & 0xFFFF0000u;
        pp[t] = (uint16_t)(hb >> 16);
        pl[t] = (uint16_t)(oct_f2u(oct_sub_rn(ph, oct_u2f(hb))) >> 16);
      }
    }
  } else {
    OCT_NOUNROLL for (int t = 0; t < MP_TOK; t++) pp[t] = 0, pl[t] = 0;
  }
  l = oct_fma(l, alpha, sum);
  m = mn;
  sm.alpha[r] = alpha;
}

// o rescaled by this tile's alpha (rows in D's layout: register i holds row 4g + i).
OCT_DEV void mp_rescale(const MpSmem& sm, int g, OctMfmaF32 o[8]) {
  float al[4];
  OCT_UNROLL for (int i = 0; i < 4; i++) al[i] = sm.alpha[4 * g + i];
  OCT_UNROLL for (int ct = 0; ct < 8; ct++)
    OCT_UNROLL for (int i = 0; i < 4; i++) o[ct].r[i] = oct_mul_rn(o[ct].r[i], al[i]);
}

// P·V of one tile: A = P (row n, tokens 4g..4g+3 of this lane), B = V [dim][token] (dim column
// 128W + 16ct + n, the same tokens); o[ct] += P·V. BF16 (the chunk of a bf16 call): the bf16 MFMA,
// P's high part into o, its low part into olo.
template <bool BF16>
OCT_DEV void mp_pv(const MpSmem& sm, const uint16_t (*v)[MP_TOK], int W, int n, int g, OctMfmaF32 o[8], OctMfmaF32 olo[8]) {
  OctMfmaH16 pa, pb;
  pa.r[0] = ((const uint32_t*)sm.pp[n])[2 * g], pa.r[1] = ((const uint32_t*)sm.pp[n])[2 * g + 1];
  if (BF16) pb.r[0] = ((const uint32_t*)sm.pl[n])[2 * g], pb.r[1] = ((const uint32_t*)sm.pl[n])[2 * g + 1];
  OCT_UNROLL for (int ct = 0; ct < 8; ct++) {
    const uint32_t* col = (const uint32_t*)v[128 * W + 16 * ct + n];
    OctMfmaH16 b;
    b.r[0] = col[2 * g], b.r[1] = col[2 * g + 1];
    if (BF16) {
      o[ct] = oct_mfma_f32_16x16x16_bf16(pa, b, o[ct]);
      olo[ct] = oct_mfma_f32_16x16x16_bf16(pb, b, olo[ct]);
    } else {
      o[ct] = oct_mfma_f32_16x16x16_f16(pa, b, o[ct]);
    }
  }
}

template <int FMT, bool BF16>
OCT_DEV void mp_body(const OctPrefillParams& p, MpSmem& sm) {
  const int tid = oct_tid(), lane = oct_lane(), w = oct_wave();        // logical waves of 32 (staging)
  const int W = tid >> 6, l64 = oct_mfma_lane(), n = l64 & 15, g = l64 >> 4;  // waves of 64 (MFMA)
  const int64_t row0 = (int64_t)oct_bid_x() * MP_ROWS;
  const int hq = oct_bid_y(), h = hq / p.g;
  const int dtype = BF16 ? 2 : 1;
  const float ninf = -oct_inf();
  const float sc = p.score_scale;  // sm_scale·log2(e)
  const bool srow = tid < MP_ROWS;  // this thread runs the softmax of row tid

  if (srow) sm.seq[tid] = row0 + tid < p.rows ? oct_row_seq(p.cu_seqlens, p.num_seqs, row0 + tid) : -1;
  oct_sync();
  int remaining = 0;
  for (int j = 0; j < MP_ROWS; j++)
    if (sm.seq[j] >= 0) remaining |= 1 << j;

  while (remaining) {
    int first = 0;
    while (!((remaining >> first) & 1)) first++;
    const int s = sm.seq[first];
    int set = 0, last = 0;
    for (int j = first; j < MP_ROWS; j++)
      if (((remaining >> j) & 1) && sm.seq[j] == s) set |= 1 << j, last = j;
    remaining &= ~set;
    const int64_t qstart = p.cu_seqlens[s], qlen = (int64_t)p.cu_seqlens[s + 1] - qstart;
    int64_t ctx = (int64_t)p.seq_lens[s] - qlen;
    ctx = ctx < 0 ? 0 : ctx > p.kv_max ? p.kv_max : ctx;
    const int64_t umax = row0 + last - qstart;     // the set's last row's position in its chunk
    const bool mine = srow && ((set >> tid) & 1);  // the softmax row tid is in the set
    const int64_t pos = row0 + tid - qstart;

    // Queries: logical wave w rows w, w + 4, ...; lane l dims 8l..8l+7. Raw 16-bit values for phase
    // 2, int8 with one scale per row for phase 1; rows outside the set are zeros (q8 0, scale 0).
    oct_sync();  // the previous set's shared memory is read
    OCT_NOUNROLL for (int r = w; r < MP_ROWS; r += OCT_WAVES) {
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

    float mrun = ninf, lrun = 0.0f;  // softmax threads: row tid
    OctMfmaF32 o[8], olo[8];         // dims 128W + 16ct + n, rows 4g..4g+3; olo: bf16's low parts of P
    OCT_UNROLL for (int ct = 0; ct < 8; ct++)
      OCT_UNROLL for (int i = 0; i < 4; i++) o[ct].r[i] = 0.0f, olo[ct].r[i] = 0.0f;

    // Phase 1: the packed prefix, tokens 0..ctx-1.
    const int32_t* bt_row = p.block_table + (int64_t)s * p.max_blocks;
    const int64_t ntp = (ctx + MP_TOK - 1) / MP_TOK;
    for (int64_t jt = 0; jt < ntp; jt++) {
      const int64_t ts = MP_TOK * jt;
      oct_sync();  // the previous tile's shared memory is read (and the queries written)
      mp_stage_prefix<FMT>(p, sm, bt_row, ts, ctx, h, lane, w);
      oct_sync();
      // K block b: the int8 dot over its 64 dims (two chained MFMAs of 32 dims, exact), times the
      // token's K block scale. A: query row n, dims 64b + 32kk + 8g..+7; B: token n, the same dims.
      OCT_UNROLL for (int bb = 0; bb < 2; bb++) {
        const int b = 2 * W + bb;
        OctMfmaI32 acc;
        OCT_UNROLL for (int i = 0; i < 4; i++) acc.r[i] = 0;
        OCT_UNROLL for (int kk = 0; kk < 2; kk++) {
          const int dq = 16 * b + 8 * kk + 2 * g;  // dword of dims 64b + 32kk + 8g
          OctMfmaI8 a, kb;
          a.r[0] = sm.q8[n][dq], a.r[1] = sm.q8[n][dq + 1];
          kb.r[0] = sm.u.pre.k[n][dq], kb.r[1] = sm.u.pre.k[n][dq + 1];
          acc = oct_mfma_i32_16x16x32_i8(a, kb, acc);
        }
        const float ksc = sm.u.pre.ks[n][b];  // D column n is token n
        OCT_UNROLL for (int i = 0; i < 4; i++) sm.s[b][4 * g + i][n] = oct_mul_rn((float)acc.r[i], ksc);
      }
      oct_sync();

      if (srow) {
        const float qs = sm.qs[tid];
        const auto score = [&](int t) { return mine && sm.u.pre.ok[t] ? mp_score_prefix(sm, tid, t, qs, sc) : ninf; };
        mp_softmax<1, BF16>(sm, tid, score, mrun, lrun);
      }
      oct_sync();
      mp_rescale(sm, g, o);
      mp_pv<false>(sm, sm.u.pre.v, W, n, g, o, olo);
    }
    // o holds Σ P'·codebook = 4096 × the V units: back to V units (exact).
    OCT_UNROLL for (int ct = 0; ct < 8; ct++)
      OCT_UNROLL for (int i = 0; i < 4; i++) o[ct].r[i] = oct_mul_rn(o[ct].r[i], 0x1p-12f);

    // Phase 2: the chunk's own tokens 0..umax, exact, causal (row at position pos sees u <= pos).
    const int64_t ntc = (umax + MP_TOK) / MP_TOK;
    for (int64_t jt = 0; jt < ntc; jt++) {
      const int64_t us = MP_TOK * jt;
      oct_sync();
      mp_stage_chunk(p, sm, qstart, us, umax, h, lane, w);
      oct_sync();
      // Block b of q·k: 4 chained f16 (bf16) MFMAs of 16 dims, fp32 accumulation. A: query row n, dims
      // 64b + 16kk + 4g..+3; B: token n, the same dims.
      OCT_UNROLL for (int bb = 0; bb < 2; bb++) {
        const int b = 2 * W + bb;
        OctMfmaF32 acc;
        OCT_UNROLL for (int i = 0; i < 4; i++) acc.r[i] = 0.0f;
        OCT_UNROLL for (int kk = 0; kk < 4; kk++) {
          const int dp = 32 * b + 8 * kk + 2 * g;  // dword of dims 64b + 16kk + 4g
          OctMfmaH16 a, kb;
          a.r[0] = sm.qh[n][dp], a.r[1] = sm.qh[n][dp + 1];
          kb.r[0] = sm.u.chk.k[n][dp], kb.r[1] = sm.u.chk.k[n][dp + 1];
          acc = BF16 ? oct_mfma_f32_16x16x16_bf16(a, kb, acc) : oct_mfma_f32_16x16x16_f16(a, kb, acc);
        }
        OCT_UNROLL for (int i = 0; i < 4; i++) sm.s[b][4 * g + i][n] = acc.r[i];
      }
      oct_sync();

      if (srow) {
        const auto score = [&](int t) {
          return mine && us + t <= pos && us + t <= umax ? oct_mul_rn(mp_sum4(sm, tid, t), sc) : ninf;
        };
        mp_softmax<2, BF16>(sm, tid, score, mrun, lrun);
      }
      oct_sync();
      mp_rescale(sm, g, o);
      if (BF16) mp_rescale(sm, g, olo);
      mp_pv<BF16>(sm, sm.u.chk.v, W, n, g, o, olo);
    }

    // out = o / l for the rows of the set (wave W: dims 128W..128W+127).
    if (srow) sm.lsum[tid] = lrun;
    oct_sync();
    OCT_UNROLL for (int i = 0; i < 4; i++) {
      const int r = 4 * g + i;
      if (!((set >> r) & 1)) continue;
      const float lr = sm.lsum[r];
      uint16_t* dst = p.out + (row0 + r) * p.o_st + (int64_t)hq * p.o_sh + 128 * W + n;
      OCT_UNROLL for (int ct = 0; ct < 8; ct++) {
        const float x = BF16 ? oct_add_rn(o[ct].r[i], olo[ct].r[i]) : o[ct].r[i];
        dst[16 * ct] = oct_f2h(lr == 0.0f ? 0.0f : oct_div_rn(x, lr), dtype);
      }
    }
  }
}

template <int FMT, bool BF16>
OCT_DEV void mp_kernel(const OctPrefillParams& p) {
  OCT_SHARED MpSmem sm;
  mp_body<FMT, BF16>(p, sm);
}
#define OCT_MP_BODY(fmt, bf) mp_kernel<fmt, bf>(p);
#else
#define OCT_MP_BODY(fmt, bf) (void)p;
#endif

// One kernel per format and dtype (the layout and the chunk's MFMA form are compile-time constants).
#define OCT_MP_KERNEL(name, fmt, bf) \
  OCT_KERNEL(OCT_THREADS) void name(OctPrefillParams p) { OCT_MP_BODY(fmt, bf) }
OCT_MP_KERNEL(octave_prefill_mfma_k3v4_kernel, 4, false)
OCT_MP_KERNEL(octave_prefill_mfma_k3v3_kernel, 3, false)
OCT_MP_KERNEL(octave_prefill_mfma_k3v3c_kernel, 19, false)
OCT_MP_KERNEL(octave_prefill_mfma_k3v4_bf16_kernel, 4, true)
OCT_MP_KERNEL(octave_prefill_mfma_k3v3_bf16_kernel, 3, true)
OCT_MP_KERNEL(octave_prefill_mfma_k3v3c_bf16_kernel, 19, true)

#define OCT_MP_LAUNCH(name) OCT_LAUNCH(name, tiles, p.hq, 1, OCT_THREADS, p)
hipError_t oct_launch_prefill_mfma(const OctPrefillParams& p) {
  const int64_t tiles = ((int64_t)p.rows + MP_ROWS - 1) / MP_ROWS;
  const bool bf = p.dtype == 2;
  switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
    case 4: if (bf) OCT_MP_LAUNCH(octave_prefill_mfma_k3v4_bf16_kernel); else OCT_MP_LAUNCH(octave_prefill_mfma_k3v4_kernel); break;
    case 3: if (bf) OCT_MP_LAUNCH(octave_prefill_mfma_k3v3_bf16_kernel); else OCT_MP_LAUNCH(octave_prefill_mfma_k3v3_kernel); break;
    default: if (bf) OCT_MP_LAUNCH(octave_prefill_mfma_k3v3c_bf16_kernel); else OCT_MP_LAUNCH(octave_prefill_mfma_k3v3c_kernel); break;
  }
  return oct_launch_status();
}
