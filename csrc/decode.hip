// decode, portable dot4 tier (docs/contract.md §3.3, profile dot4-int8q): split-KV attention over the
// packed cache, writing split partials (§3.4 layout); octave_reduce_kernel merges them.
// docs/kernels.md, "Decode kernel structure", has the design and its budget.
//
// Workgroup (row chunk, split, KV head), 4 logical waves: up to query_group consecutive query rows
// x the G query heads of the KV head, i.e. up to 32 query vectors sharing every K/V read of the
// split. Rows of the chunk with different requests are processed one request at a time (a "row set").
// The waves are arranged as QG query chunks x TG = 4 / QG token groups: wave w holds query chunk
// w % QG (queries qc, qc + QG, ..., at most QPT of them, a compile-time bound) and takes the
// 32-token tiles j = tg, tg + TG, ... of the split. Each wave is its own pipeline with no
// workgroup barrier inside the token loop:
//   - the raw slot bytes of its tile are copied into its own shared-memory rows (one row per
//     token, the slot image) with 8-byte (compact: 4-byte) coalesced loads: cp.async on NVIDIA,
//     issued one phase ahead (the next tile's K codes and scales while this tile's softmax and P.V
//     run, its V codes while this tile's scores run), plain loads elsewhere;
//   - the block-table entries are loaded one tile further ahead, one per lane, with 32-bit index
//     math, into a register;
//   - scores, lane = token: K codebook bytes by byte permute straight from the row, int8 dot4
//     against every query of the chunk;
//   - online softmax in base 2 per query over the tile (running max per wave, l kept per lane);
//   - P.V, lane = dims: V codebook bytes -> float by byte permute + one exact FMA, shared by the
//     chunk's queries, accumulated with fp32 FMA in token order.
// At the end of the split the TG token groups' (m, l, o) states are merged in shared memory
// (workgroup barriers) and the wave of token group 0 writes the partial rows.
#include "octave_lane.h"
#include "octave_mutant.h"
#include "octave_params.h"
#include "octave_slot.h"

enum { DEC_TOK = 32, DEC_ROW_MAX = 248 };  // tokens per wave tile; largest staging row (k3v4)

#if OCT_DEVICE_BODY

// Writes one partial row: o, m, l. The lane's 8 values are dims run0 + 0..3 (o[0], o[2], o[4],
// o[6]) and run1 + 0..3 (o[1], o[3], o[5], o[7]): the order in which dec_vbytes decodes V.
OCT_DEV void dec_write_partial(float* dst, int lane, int run0, int run1, const float o[8], float m, float l) {
  OctU4 a, b;
  a.x = oct_f2u(o[0]), a.y = oct_f2u(o[2]), a.z = oct_f2u(o[4]), a.w = oct_f2u(o[6]);
  b.x = oct_f2u(o[1]), b.y = oct_f2u(o[3]), b.z = oct_f2u(o[5]), b.w = oct_f2u(o[7]);
  *(OctU4*)(dst + run0) = a;
  *(OctU4*)(dst + run1) = b;
  if (lane == 0) dst[256] = m, dst[257] = l;
}

// The staging geometry of each format (DecFmt, octave_slot.h). A slot is copied in units of UB bytes
// into a shared-memory row of ROW bytes (slot bytes rounded up to 8: 248, 216, 200, so rows are
// 8-byte aligned and an odd number of 8-byte words apart, which keeps the lane = token 8-byte reads
// free of bank conflicts). The K set (K codes and the scales: NK units) and the V set (V codes: NV
// units) are copied separately, SPI slots per copy step.
template <int FMT>
struct DecGeo : DecFmt<FMT> {
  typedef DecFmt<FMT> B;
  enum {
    ROW = (B::SLOT + 7) & ~7,
    SU = (B::SLOT + B::UB - 1) / B::UB,  // units per slot: 31, 27, 49
    KV = B::V_LO / B::UB,                // first V unit
    SC = B::SCALES / B::UB,              // first scale unit
    NK = KV + SU - SC,                   // K set: 15, 15, 25 units
    NV = SC - KV,                        // V set: 16, 12, 24 units
  };
  static_assert((int)ROW <= (int)DEC_ROW_MAX && B::V_LO % B::UB == 0 && B::SCALES % B::UB == 0, "staging layout");
};

template <int B>
struct DecUnit;
template <>
struct DecUnit<8> {
  typedef uint64_t T;
};
template <>
struct DecUnit<4> {
  typedef uint32_t T;
};

// One copy (K set, or V set when VSET) of the wave's tile: slot s (off[s] >= 0) -> stage row s.
// Per step a lane moves one unit of slot s0 + sub; lanes past SPI·N idle.
template <int FMT, bool VSET>
OCT_DEV void dec_copy(uint8_t* stage, const int64_t* off, const uint8_t* cache, int lane) {
  typedef DecGeo<FMT> F;
  typedef typename DecUnit<F::UB>::T T;
  enum { N = VSET ? (int)F::NV : (int)F::NK, SPI = DEC_TOK / N };
  const int sub = lane / N, idx = lane - sub * N;
  const int byte = (VSET ? F::KV + idx : idx < F::KV ? idx : F::SC + idx - F::KV) * F::UB;
  const bool on = sub < SPI;
#if OCT_ASYNC_COPY
  // Predicated copies, no branches; an idle lane reads slot s0's offset and copies nothing. The
  // sign of an offset is its high word's.
  static_assert(DEC_TOK % SPI == 0, "steps cover the tile");
  const uint32_t sdst = oct_smem_u32(stage) + byte;
  const uint8_t* src = cache + byte;
  OCT_UNROLL4 for (int s0 = 0; s0 < DEC_TOK; s0 += SPI) {
    const int s = on ? s0 + sub : s0;
    const int64_t o = off[s];
    oct_copy_g2s_if<F::UB>(sdst + s * F::ROW, src + o, on && (int32_t)((uint64_t)o >> 32) >= 0);
  }
#else
  // Synchronous backends: 8 loads in flight per lane, then their stores.
  for (int s0 = 0; s0 < DEC_TOK; s0 += 8 * SPI) {
    T r[8] = {};
    int64_t o[8];
    OCT_UNROLL for (int i = 0; i < 8; i++) {
      const int s = s0 + i * SPI + sub;
      o[i] = on && s < DEC_TOK ? off[s] : -1;
      if (o[i] >= 0) r[i] = *(const T*)(cache + o[i] + byte);
    }
    OCT_UNROLL for (int i = 0; i < 8; i++)
      if (o[i] >= 0) *(T*)(stage + (s0 + i * SPI + sub) * F::ROW + byte) = r[i];
  }
#endif
}

// Token lane of the tile starting at ts (tiles end at te): physical block id and offset in the
// block, 32-bit math (t < te <= INT32_MAX). bid = -1 past te.
OCT_DEV void dec_bid(const int32_t* bt_row, int block_size, int ts, int te, int lane, int& bid, int& tin) {
  bid = -1, tin = 0;
  if (lane < te - ts) {
    const uint32_t t = (uint32_t)(ts + lane), lb = t / (uint32_t)block_size;
    tin = (int)(t - lb * (uint32_t)block_size);
    bid = bt_row[lb];
  }
}
// Byte offset of the slot in the cache, or -1 when the block id is outside [0, num_blocks) (the
// token is skipped and its slot never read) or the token is past the tile's end.
OCT_DEV int64_t dec_off(const OctDecodeParams& p, int bid, int tin, int64_t hoff) {
  // (mutant OCT_MUT_DECODE_BID_UNCHECKED: no upper bound)
  return bid >= 0 && (OCT_MUTANT(OCT_MUT_DECODE_BID_UNCHECKED) || bid < p.num_blocks)
             ? (int64_t)bid * p.c_sb + hoff + (int64_t)tin * p.c_st
             : -1;
}

// K codebook words of 64-dim block b for the token of `row`, in the permuted dim order of
// oct_cb4n / oct_cb3n (dec_qpos stores the query in the same order, so word d of the query and
// word d of K hold the same 4 dims).
template <int FMT>
OCT_DEV void dec_kblock(const uint8_t* row, int b, uint32_t kw[16]) {
  typedef DecFmt<FMT> F;
  if (!F::COMPACT && b == 0) {  // rope: 4-bit, bytes [0, 32)
    OCT_UNROLL for (int i = 0; i < 4; i++) {
      const OctU2 x = *(const OctU2*)(row + 8 * i);
      oct_cb4n(x.x, OCT_CB4_0, OCT_CB4_1, OCT_CB4_2, OCT_CB4_3, kw[4 * i], kw[4 * i + 1]);
      oct_cb4n(x.y, OCT_CB4_0, OCT_CB4_1, OCT_CB4_2, OCT_CB4_3, kw[4 * i + 2], kw[4 * i + 3]);
    }
  } else {  // 3-bit: the block's 16 bytes of the 2-bit plane, 8 bytes of the 1-bit plane
    const int bb = F::COMPACT ? b : b - 1;
    const OctU2 a = *(const OctU2*)(row + F::K_LO + 16 * bb), c = *(const OctU2*)(row + F::K_LO + 16 * bb + 8);
    const OctU2 h = *(const OctU2*)(row + F::K_HI + 8 * bb);
    oct_cb3n(a.x, h.x, OCT_CB3_LO, OCT_CB3_HI, kw);
    oct_cb3n(a.y, h.x >> 4, OCT_CB3_LO, OCT_CB3_HI, kw + 4);
    oct_cb3n(c.x, h.y, OCT_CB3_LO, OCT_CB3_HI, kw + 8);
    oct_cb3n(c.y, h.y >> 4, OCT_CB3_LO, OCT_CB3_HI, kw + 12);
  }
}

// a[i] for a runtime i in 0..3 without dynamic indexing (which would put a in scratch memory).
OCT_DEV int dec_pick(const int a[4], int i) { return i == 0 ? a[0] : i == 1 ? a[1] : i == 2 ? a[2] : a[3]; }

template <int TB>
struct DecP;  // TB consecutive p values of one query, one shared-memory load
template <>
struct alignas(16) DecP<4> {
  float v[4];
};
template <>
struct alignas(8) DecP<2> {
  float v[2];
};

// Shared memory of a workgroup holding at most QPT queries per wave (4·QPT in all).
template <int QPT>
struct DecSmem {
  enum { NQ = OCT_WAVES * QPT, TB = QPT <= 6 ? 4 : 2 };  // TB: tokens per P.V step
  OctU4 q[NQ][16];  // int8 query, rotated, per 64-dim block scale in qs
  float qs[NQ][4];
  // Per wave: its tile's slot rows. After the token loop the same bytes hold the merge's o rows.
  OctU4 stage[OCT_WAVES][DEC_TOK * DEC_ROW_MAX / 16];
  int64_t off[OCT_WAVES][DEC_TOK];       // slot offsets of the tile being copied
  DecP<TB> p[OCT_WAVES][QPT][DEC_TOK / TB];  // p, [query][token]
  float vs[OCT_WAVES][DEC_TOK][2];       // per token: V scale/64/256, -32896·V scale/64
  float ml[OCT_WAVES][QPT][2];           // merge: m, l
  float m[2][OCT_WAVES][QPT];            // running max (wave-uniform): read [par], lane 0 writes [par^1]
  int k[OCT_WAVES][QPT];                 // klen of the query's row
  static_assert(sizeof(float) * 3 * QPT * 256 <= sizeof(stage), "merge rows fit the staging rows");
};

// The kernel body for at most QPT queries per wave and format FMT.
template <int QPT, int FMT>
OCT_DEV void dec_body(const OctDecodeParams& p, DecSmem<QPT>& sm) {
  typedef DecGeo<FMT> F;
  enum { TB = DecSmem<QPT>::TB };
  const int lane = oct_lane(), w = oct_wave();
  const int row0 = oct_bid_x() * p.qgroup, split = oct_bid_y(), h = oct_bid_z();
  const float ninf = -oct_inf();
  const int nqmax = p.qgroup * p.g;  // <= 32 <= 4·QPT (the launch picks QPT)
  const int QG = nqmax <= QPT ? 1 : nqmax <= 2 * QPT ? 2 : 4, TG = OCT_WAVES / QG;
  const int qc = w % QG, tg = w / QG;
  const int64_t t0 = (int64_t)split * p.split_len;
  const int64_t t1 = t0 + p.split_len < p.kv_max ? t0 + p.split_len : p.kv_max;
  uint8_t* const stage = (uint8_t*)sm.stage[w];
  int64_t* const off = sm.off[w];
  const int64_t hoff = (int64_t)h * p.c_sh;

  // Rows of the chunk: request and clamped klen. Invalid request or klen <= 0: empty row. (Small
  // arrays are only indexed by unrolled loop counters; dynamic picks go through dec_pick.)
  int req[4], klen[4], exist = 0, valid = 0;
  OCT_UNROLL for (int j = 0; j < 4; j++) {
    req[j] = -1, klen[j] = 0;
    const int i = row0 + j;
    if (j >= p.qgroup || i >= p.num_q) continue;
    exist |= 1 << j;
    const int r = p.q_to_req[i];
    int64_t k = p.q_to_klen[i];
    k = k < p.kv_max ? k : p.kv_max;
    const bool rok = OCT_MUTANT(OCT_MUT_DECODE_REQ_UNCHECKED) || (r >= 0 && r < p.num_reqs);  // mutant: any r
    if (rok && k > 0) req[j] = r, klen[j] = (int)k, valid |= 1 << j;
  }

  // Empty rows: o = 0, m = -inf, l = 0 for every query head; nothing is read.
  OCT_UNROLL for (int j = 0; j < 4; j++) {
    if (!((exist & ~valid) >> j & 1) || OCT_MUTANT(OCT_MUT_DECODE_PAD_UNWRITTEN)) continue;  // mutant: not written
    for (int g = w; g < p.g; g += OCT_WAVES) {
      const float z[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      const int64_t prow = ((int64_t)(row0 + j) * p.hq + (int64_t)h * p.g + g) * p.num_splits + split;
      dec_write_partial(p.partials + prow * p.pstride, lane, 8 * lane, 8 * lane + 4, z, ninf, 0.0f);
    }
  }

  int remaining = valid;
  while (remaining) {
    // The row set: remaining rows with the request of the lowest remaining row.
    int first = 0;
    while (!((remaining >> first) & 1)) first++;
    const int r = dec_pick(req, first);
    int rows = 0, nrows = 0, kmax = 0;  // rows: 4 bits per row of the set, the chunk's row index
    OCT_UNROLL for (int j = 0; j < 4; j++)
      if (((remaining >> j) & 1) && req[j] == r) {
        rows |= j << (4 * nrows++);
        kmax = klen[j] > kmax ? klen[j] : kmax;
        remaining &= ~(1 << j);
      }
    const int nq = nrows * p.g;  // query q = (row rows[q / G], head h*G + q % G)
#define DEC_ROW(q) ((rows >> (4 * ((q) / p.g))) & 15)
    // Query head of query q; mutant OCT_MUT_DECODE_GQA_MOD: the heads hq with hq % Hkv = h.
#define DEC_HQ(q) (OCT_MUTANT(OCT_MUT_DECODE_GQA_MOD) ? ((q) % p.g) * p.hkv + h : h * p.g + (q) % p.g)

    // The set's tiles: 32-token tiles of [t0, te), te = min(t1, kmax); tile j starts at ts0 + 32j.
    const int64_t te64 = t1 < kmax ? t1 : (int64_t)kmax;
    const int ntile = te64 > t0 ? (int)((te64 - t0 + DEC_TOK - 1) / DEC_TOK) : 0;
    if (ntile == 0) {
      // No token of the split for this set (workgroup-uniform): the empty partial o = 0, m = -inf,
      // l = 0, without preparing the queries (an over-split launch has many such workgroups).
      // (mutant OCT_MUT_DECODE_EMPTY_SPLIT: nothing written)
      if (!OCT_MUTANT(OCT_MUT_DECODE_EMPTY_SPLIT))
        for (int q = w; q < nq; q += OCT_WAVES) {
          const float z[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          const int64_t prow = ((int64_t)(row0 + DEC_ROW(q)) * p.hq + DEC_HQ(q)) * p.num_splits + split;
          dec_write_partial(p.partials + prow * p.pstride, lane, 8 * lane, 8 * lane + 4, z, ninf, 0.0f);
        }
      continue;
    }

    // Query: rotate like K, quantize to int8 per 64-dim block.
    oct_sync();
    for (int q = w; q < nq; q += OCT_WAVES) {
      const int i = row0 + DEC_ROW(q), hq = DEC_HQ(q);
      float x[8];
      oct_load8(p.query + (int64_t)i * p.q_st + (int64_t)hq * p.q_sh + 8 * lane, p.dtype, x);
      oct_rotate(x, p.k_signs, lane, !F::COMPACT);
      float amax = 0.0f;
      for (int e = 0; e < 8; e++) amax = oct_fmax(amax, oct_fabs(x[e]));
      amax = OCT_MUTANT(OCT_MUT_DECODE_QSCALE_ROW) ? oct_max32(amax) : oct_max8(amax);  // mutant: per row
      const float s = oct_div_rn(oct_fmax(amax, 1e-20f), 127.0f);
      uint8_t* qrow = (uint8_t*)sm.q[q];
      for (int e = 0; e < 8; e++) {
        const float v = oct_fmin(oct_fmax(oct_rint(oct_div_rn(x[e], s)), -127.0f), 127.0f);
        qrow[dec_qpos<FMT>(8 * lane + e)] = (uint8_t)((int)v & 0xFF);
      }
      if ((lane & 7) == 0) sm.qs[q][lane >> 3] = s;
    }
    oct_sync();

    // This wave's queries qc + QG·a: running o (lane's dims) and l (per lane: the lane's tokens;
    // summed over the wave at the end) in registers; m (wave-uniform) and klen in sm.m, sm.k.
    float o[QPT][8], ll[QPT];
    OCT_UNROLL for (int a = 0; a < QPT; a++) {
      const int q = qc + QG * a;
      // (mutant OCT_MUT_DECODE_MTP_LEADER_KLEN: every row takes the klen of the set's first row)
      if (lane == 0)
        sm.m[0][w][a] = ninf,
        sm.k[w][a] = q < nq ? dec_pick(klen, OCT_MUTANT(OCT_MUT_DECODE_MTP_LEADER_KLEN) ? first : DEC_ROW(q)) : 0;
      ll[a] = 0.0f;
      OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] = 0.0f;
    }

    // The wave's tiles: j = tg, tg + TG, ... of the set's ntile > 0 tiles.
    const int32_t* bt_row =
        p.block_table + (int64_t)r * (OCT_MUTANT(OCT_MUT_DECODE_BT_STRIDE) ? p.max_blocks - 1 : p.max_blocks);
    const int ts0 = (int)t0, te = (int)te64;

    int j = tg, bidn = -1, tinn = 0, par = 0;  // par: which sm.m holds the running max
    if (j < ntile) {
      int bid, tin;
      dec_bid(bt_row, p.block_size, ts0 + DEC_TOK * j, te, lane, bid, tin);
      off[lane] = dec_off(p, bid, tin, hoff);
      oct_sync_wave();
      dec_copy<FMT, false>(stage, off, p.cache, lane);
      oct_async_commit();
      dec_copy<FMT, true>(stage, off, p.cache, lane);
      oct_async_commit();
      if (j + TG < ntile) dec_bid(bt_row, p.block_size, ts0 + DEC_TOK * (j + TG), te, lane, bidn, tinn);
    }
    for (; j < ntile; j += TG) {
      const int ts = ts0 + DEC_TOK * j, tn = te - ts < DEC_TOK ? te - ts : DEC_TOK;
      oct_async_wait<1>();  // this tile's K set (its V set may still be in flight)
      oct_sync_wave();

      // Scores, lane = token: Σ_b qs_b·ks_b·dot_b, times sm_scale·log2(e)/64.
      const uint8_t* krow = stage + lane * F::ROW;
      const bool ok = off[lane] >= 0;  // copied: in the tile and a valid block id
      const uint16_t* scl = (const uint16_t*)(krow + F::SCALES);
      {
        const float vs = ok ? oct_f16_to_f32(scl[F::COMPACT ? 1 : 4]) * 0.015625f : 0.0f;  // V scale / 64
        sm.vs[w][lane][0] = vs * 0.00390625f;
        sm.vs[w][lane][1] = vs * -32896.0f;
      }
      float sc[QPT];
      OCT_UNROLL for (int a = 0; a < QPT; a++) sc[a] = 0.0f;
      OCT_NOUNROLL for (int b = 0; b < 4; b++) {
        uint32_t kw[16];
        dec_kblock<FMT>(krow, b, kw);
        const float ksb = oct_f16_to_f32(scl[F::COMPACT ? 0 : b]);
        OCT_UNROLL for (int a = 0; a < QPT; a++) {
          const int q = qc + QG * a;
          if (q >= nq) break;
          int acc = 0;
          OCT_UNROLL for (int i = 0; i < 4; i++) {
            const OctU4 x = sm.q[q][4 * b + i];
            acc = oct_dot4(x.x, kw[4 * i], acc);
            acc = oct_dot4(x.y, kw[4 * i + 1], acc);
            acc = oct_dot4(x.z, kw[4 * i + 2], acc);
            acc = oct_dot4(x.w, kw[4 * i + 3], acc);
          }
          sc[a] += (float)acc * (sm.qs[q][b] * ksb);
        }
      }
      oct_sync_wave();  // rows' K sets and off[] read: the next tile's K set may land

      const int jn = j + TG;
      if (jn < ntile) {
        off[lane] = dec_off(p, bidn, tinn, hoff);
        oct_sync_wave();
        dec_copy<FMT, false>(stage, off, p.cache, lane);
      }
      oct_async_commit();
      if (jn + TG < ntile) dec_bid(bt_row, p.block_size, ts0 + DEC_TOK * (jn + TG), te, lane, bidn, tinn);

      // Online softmax in base 2 per query over the tile; o rescaled when the max moves.
      OCT_UNROLL for (int a = 0; a < QPT; a++) {
        const int q = qc + QG * a;
        if (q >= nq) break;
        // (mutant OCT_MUT_DECODE_KLEN_PLUS1: t <= klen)
        const float s = ok && (OCT_MUTANT(OCT_MUT_DECODE_KLEN_PLUS1) ? lane <= sm.k[w][a] - ts : lane < sm.k[w][a] - ts)
                            ? sc[a] * p.score_scale
                            : ninf;
        const float mo = sm.m[par][w][a], mn = oct_fmax(mo, oct_max32(s));
        float pt = 0.0f, alpha = 1.0f;
        if (mn != ninf) {
          pt = oct_exp2(s - mn);
          alpha = oct_exp2(mo - mn);
        }
        ll[a] = oct_fma(ll[a], alpha, pt);
        if (lane == 0) sm.m[par ^ 1][w][a] = mn;  // read back after the next barriers
        sm.p[w][a][lane / TB].v[lane % TB] = pt;
        if (alpha != 1.0f)
          OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] *= alpha;
      }
      oct_async_wait<1>();  // this tile's V set (the next tile's K set may still be in flight)
      oct_sync_wave();

      // P.V, lane = dims: o += p_t · v_t, v_t = codebook_t × V scale_t / 64 (exact), in token order.
      // Tokens past tn or not copied have V scale 0 and p = 0 (o unchanged). A token with a
      // non-finite V scale takes the slow path, which skips p = 0 for each query, so a masked slot
      // never contributes, even a poisoned one.
      const int tnb = (tn + TB - 1) / TB * TB;
      for (int t4 = 0; t4 < tnb; t4 += TB) {
        float v[TB][8];
        bool fin = true;
        OCT_UNROLL for (int k = 0; k < TB; k++) {
          uint32_t u0, u1;
          dec_vbytes<FMT>(stage + (t4 + k) * F::ROW, lane, u0, u1);
          const float x = sm.vs[w][t4 + k][0], y = sm.vs[w][t4 + k][1];
          fin = fin && oct_isfinite(y);
          OCT_UNROLL for (int e = 0; e < 4; e++) {
            v[k][e] = oct_fma(oct_b128_f32(u0, e), x, y);
            v[k][4 + e] = oct_fma(oct_b128_f32(u1, e), x, y);
          }
        }
        if (fin) {
          OCT_UNROLL for (int a = 0; a < QPT; a++) {
            if (qc + QG * a >= nq) break;
            const DecP<TB> pp = sm.p[w][a][t4 / TB];
            OCT_UNROLL for (int k = 0; k < TB; k++)
              OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] = oct_fma(pp.v[k], v[k][e], o[a][e]);
          }
        } else {
          for (int k = 0; k < TB; k++) {
            uint32_t u0, u1;
            dec_vbytes<FMT>(stage + (t4 + k) * F::ROW, lane, u0, u1);
            const float vs64 = sm.vs[w][t4 + k][0] * 256.0f;
            float vv[8];
            OCT_UNROLL for (int e = 0; e < 4; e++) {  // c = f/256 - 32896 exactly, then c × V scale / 64
              vv[e] = oct_fma(oct_b128_f32(u0, e), 0.00390625f, -32896.0f) * vs64;
              vv[4 + e] = oct_fma(oct_b128_f32(u1, e), 0.00390625f, -32896.0f) * vs64;
            }
            OCT_UNROLL for (int a = 0; a < QPT; a++) {
              if (qc + QG * a >= nq) break;
              const float pt = sm.p[w][a][t4 / TB].v[k];
              if (pt == 0.0f) continue;
              OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] = oct_fma(pt, vv[e], o[a][e]);
            }
          }
        }
      }
      oct_sync_wave();  // rows' V sets read: the next tile's V set may land

      if (jn < ntile) dec_copy<FMT, true>(stage, off, p.cache, lane);
      oct_async_commit();
      par ^= 1;
    }
    oct_async_wait<0>();
    oct_sync_wave();

    // Merge the token groups of each query chunk: m = max, weights 2^(m_g - m), o and l summed in
    // token-group order; the wave of token group 0 writes the partial rows.
    float m[QPT], lt[QPT];
    OCT_UNROLL for (int a = 0; a < QPT; a++) m[a] = sm.m[par][w][a], lt[a] = oct_sum32(ll[a]);
    if (TG > 1) {
      float* sO = (float*)sm.stage;  // [(TG - 1)·QG][QPT][256]
      oct_sync();
      if (tg > 0) {
        const int slot = (tg - 1) * QG + qc;
        OCT_UNROLL for (int a = 0; a < QPT; a++) {
          if (qc + QG * a >= nq) break;
          OctU4 x, y;
          x.x = oct_f2u(o[a][0]), x.y = oct_f2u(o[a][1]), x.z = oct_f2u(o[a][2]), x.w = oct_f2u(o[a][3]);
          y.x = oct_f2u(o[a][4]), y.y = oct_f2u(o[a][5]), y.z = oct_f2u(o[a][6]), y.w = oct_f2u(o[a][7]);
          float* dst = sO + (slot * QPT + a) * 256 + 8 * lane;
          *(OctU4*)dst = x;
          *(OctU4*)(dst + 4) = y;
          if (lane == 0) sm.ml[w][a][0] = m[a], sm.ml[w][a][1] = lt[a];
        }
      }
      oct_sync();
      if (tg == 0) {
        OCT_UNROLL for (int a = 0; a < QPT; a++) {
          if (qc + QG * a >= nq) break;
          float M = m[a];
          for (int g2 = 1; g2 < TG; g2++) M = oct_fmax(M, sm.ml[qc + QG * g2][a][0]);
          float O[8], Ls = 0.0f;
          OCT_UNROLL for (int e = 0; e < 8; e++) O[e] = 0.0f;
          if (M != ninf) {
            const float w0 = m[a] == ninf ? 0.0f : oct_exp2(m[a] - M);
            if (w0 != 0.0f) {
              Ls = lt[a] * w0;
              OCT_UNROLL for (int e = 0; e < 8; e++) O[e] = o[a][e] * w0;
            }
            for (int g2 = 1; g2 < TG; g2++) {
              const float mo = sm.ml[qc + QG * g2][a][0];
              const float wg = mo == ninf ? 0.0f : oct_exp2(mo - M);
              if (wg == 0.0f) continue;
              const float* src = sO + (((g2 - 1) * QG + qc) * QPT + a) * 256 + 8 * lane;
              const OctU4 x = *(const OctU4*)src, y = *(const OctU4*)(src + 4);
              Ls = oct_fma(wg, sm.ml[qc + QG * g2][a][1], Ls);
              O[0] = oct_fma(wg, oct_u2f(x.x), O[0]), O[1] = oct_fma(wg, oct_u2f(x.y), O[1]);
              O[2] = oct_fma(wg, oct_u2f(x.z), O[2]), O[3] = oct_fma(wg, oct_u2f(x.w), O[3]);
              O[4] = oct_fma(wg, oct_u2f(y.x), O[4]), O[5] = oct_fma(wg, oct_u2f(y.y), O[5]);
              O[6] = oct_fma(wg, oct_u2f(y.z), O[6]), O[7] = oct_fma(wg, oct_u2f(y.w), O[7]);
            }
          }
          OCT_UNROLL for (int e = 0; e < 8; e++) o[a][e] = O[e];
          m[a] = M, lt[a] = Ls;
        }
      }
    }
    if (tg == 0) {
      OCT_UNROLL for (int a = 0; a < QPT; a++) {
        const int q = qc + QG * a;
        if (q >= nq) break;
        const int i = row0 + DEC_ROW(q), hq = DEC_HQ(q);
        const int64_t prow = ((int64_t)i * p.hq + hq) * p.num_splits + split;
        int run0, run1;
        dec_runs<FMT>(lane, run0, run1);
        dec_write_partial(p.partials + prow * p.pstride, lane, run0, run1, o[a], m[a], lt[a]);
      }
    }
#undef DEC_ROW
#undef DEC_HQ
  }
}

template <int QPT, int FMT>
OCT_DEV void dec_kernel(const OctDecodeParams& p) {
  OCT_SHARED DecSmem<QPT> sm;
  dec_body<QPT, FMT>(p, sm);
}
#endif

// One kernel per format and bound QPT on the queries a wave holds (o is QPT x 8 floats per lane):
// a kernel specialised to both keeps the register file small (a format switch inside one kernel
// costs ptxas about 40 registers). The launch picks the smallest QPT that fits query_group x G.
// QPT 4 and 6 ask for 4 workgroups (16 warps) per SM, i.e. at most 128 registers; QPT 8 for 3.
#if OCT_DEVICE_BODY
#define OCT_DECODE_BODY(fmt, qpt) dec_kernel<qpt, fmt>(p);
#else
#define OCT_DECODE_BODY(fmt, qpt) (void)p;
#endif
#define OCT_DECODE_KERNEL(name, fmt, qpt, blocks)                    \
  OCT_KERNEL_OCC(OCT_THREADS, blocks) void name(OctDecodeParams p) { \
    OCT_DECODE_BODY(fmt, qpt)                                        \
  }
OCT_DECODE_KERNEL(octave_decode_dot4_k3v4_q4_kernel, 4, 4, 4)
OCT_DECODE_KERNEL(octave_decode_dot4_k3v4_q6_kernel, 4, 6, 4)
OCT_DECODE_KERNEL(octave_decode_dot4_k3v4_q8_kernel, 4, 8, 3)
OCT_DECODE_KERNEL(octave_decode_dot4_k3v3_q4_kernel, 3, 4, 4)
OCT_DECODE_KERNEL(octave_decode_dot4_k3v3_q6_kernel, 3, 6, 4)
OCT_DECODE_KERNEL(octave_decode_dot4_k3v3_q8_kernel, 3, 8, 3)
OCT_DECODE_KERNEL(octave_decode_dot4_k3v3c_q4_kernel, 19, 4, 4)
OCT_DECODE_KERNEL(octave_decode_dot4_k3v3c_q6_kernel, 19, 6, 4)
OCT_DECODE_KERNEL(octave_decode_dot4_k3v3c_q8_kernel, 19, 8, 3)

#define OCT_DECODE_LAUNCH(name) OCT_LAUNCH(name, chunks, p.num_splits, p.hkv, OCT_THREADS, p)
hipError_t oct_launch_decode(const OctDecodeParams& p) {
  const int64_t chunks = ((int64_t)p.num_q + p.qgroup - 1) / p.qgroup;
  // Queries per wave: query_group x G spread over QG = 1, 2 or 4 query chunks (dec_body's rule).
  const int nqmax = p.qgroup * p.g, qg = nqmax <= 8 ? 1 : nqmax <= 16 ? 2 : 4, need = (nqmax + qg - 1) / qg;
  const int qpt = need <= 4 ? 4 : need <= 6 ? 6 : 8;
  switch (p.fmt * 16 + qpt) {  // the host accepts formats 3, 4 and 19 only
    case 4 * 16 + 4: OCT_DECODE_LAUNCH(octave_decode_dot4_k3v4_q4_kernel); break;
    case 4 * 16 + 6: OCT_DECODE_LAUNCH(octave_decode_dot4_k3v4_q6_kernel); break;
    case 4 * 16 + 8: OCT_DECODE_LAUNCH(octave_decode_dot4_k3v4_q8_kernel); break;
    case 3 * 16 + 4: OCT_DECODE_LAUNCH(octave_decode_dot4_k3v3_q4_kernel); break;
    case 3 * 16 + 6: OCT_DECODE_LAUNCH(octave_decode_dot4_k3v3_q6_kernel); break;
    case 3 * 16 + 8: OCT_DECODE_LAUNCH(octave_decode_dot4_k3v3_q8_kernel); break;
    case 19 * 16 + 4: OCT_DECODE_LAUNCH(octave_decode_dot4_k3v3c_q4_kernel); break;
    case 19 * 16 + 6: OCT_DECODE_LAUNCH(octave_decode_dot4_k3v3c_q6_kernel); break;
    default: OCT_DECODE_LAUNCH(octave_decode_dot4_k3v3c_q8_kernel); break;
  }
  return oct_launch_status();
}
