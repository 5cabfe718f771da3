// prefill, mma tier (sm_90; docs/contract.md §3.5, profiles int8rowq for the prefix and
// prefill-chunk-f16 for the chunk, the WMMA tier's pair): attention of a chunk's query rows to their
// sequence's packed prefix and to the chunk's own tokens 0..j (causal, exact), with NVIDIA's
// warp-level mma.sync in FlashAttention-2's arrangement. On CUDA builds the instructions, on the
// emulator their model (octave_mma.h); HIP builds get stubs. docs/kernels.md, "The mma tier:
// prefill", has the design; in short:
//
// Workgroup (128 consecutive (row, head) pairs of one KV head, KV head), 8 warps of 16 pairs each
// (the A operand's M rows: pair i is query row i / G, query head h·G + i % G, so the G heads that
// share the KV head, and 128 / G rows, share every K/V tile the workgroup decodes). Pairs whose rows
// belong to different sequences are processed one sequence at a time (a "row set": a range of
// pairs); the others ride along masked. Per 32-token tile of the prefix, then of the chunk (tokens 0..the set's last row):
//   1. staging (the whole workgroup): prefix — the raw slots of the tile after next go to shared
//      memory with cp.async (16-byte copies of each 16-token half when its slots are contiguous),
//      while the next tile's raw slots are decoded (one barrier per tile: each warp multiplies
//      tile jt, then decodes its share of tile jt + 1, so the decoding and the tensor-core work
//      overlap between barriers; two decoded tiles in shared memory) to the K codebook bytes
//      (int8, in the order of dec_qpos, so that each lane's B operand is one 8-byte load), the V
//      codebook values as fp16 pairs of two columns ([dim][column pair]: the P·V B operand), the
//      K block scales and the V scale — by column: column 2p is token p of the tile, 2p + 1 token
//      p + 16 (pm_decode); a token past ctx or in a block with an id outside [0, num_blocks) is
//      masked and never read; chunk — the raw k ([token][dim pair]) and v ([dim][token pair]),
//      columns in token order;
//   2. scores (each warp, its 16 pairs × 32 tokens): prefix — per 64-dim K block two
//      mma.m16n8k32.s8 of the int8 query (one scale per row) against the codebook bytes, exact in
//      int32, times the column's K block scale, the 4 blocks summed in order (a fused multiply-add
//      per block after the first), times the row's factor fp32(query scale · sm_scale·log2(e)) ·
//      1/64; chunk — per 64-dim block a chain of four m16n8k16 of the
//      fp16 q and k, the 4 block sums added in order, times sm_scale·log2(e);
//   3. online softmax in base 2 in registers (lane (g, t) holds rows g and g + 8, columns 8n + 2t,
//      8n + 2t + 1 of each 8-column tile n; row max and Σ p by butterflies over t; exp2 is
//      ex2.approx.ftz: 2 ulps, results below 2^-126 flushed, as the bounds allow);
//      P' = fp16(p·(V scale·64)) for a prefix token, P = fp16(p) for a chunk token, exactly 0
//      for a masked one; the scores' accumulator layout is the next product's A operand, so P never
//      leaves the registers;
//   4. P·V: o (16 rows × 256 dims per warp, fp32, in registers) rescaled by alpha, then, for a
//      prefix tile on sm_90a builds and the emulator (OCT_WGMMA), one asynchronous wgmma
//      m64n256k16 per 16-column k-step and warpgroup (4 warps, 64 pairs) with P from registers and
//      V^T from shared memory in wgmma's core-matrix layout (pm_voff), waited for before the next
//      tile's barrier so that it runs beside the next tile's decode; for a chunk tile, and for a
//      prefix tile without wgmma, two m16n8k16 per 8-dim column tile.
// One online softmax covers both phases (base 2: the running max never changes units); between
// them o, which holds Σ P'·codebook = 64·64 times the V units, is multiplied by 2^-12 (exact).
// out = o / l rounded to fp16, still rotated. bf16 (an Octant extension) is served by the WMMA
// tier's kernel on the model of its instructions (oct_launch_prefill_wmma): the same profile pair,
// correct and slow; docs/kernels.md says why.
#include "octave_lane.h"
#include "octave_mma.h"
#include "octave_mutant.h"
#include "octave_params.h"
#include "octave_slot.h"
#include "octave_wgmma.h"

enum {
  PM_WARPS = OCT_PM_WARPS,    // warps per workgroup (octave_params.h)
  PM_THREADS = 32 * PM_WARPS,
  PM_M = OCT_PM_PAIRS,        // (row, head) pairs per workgroup: 16 per warp
  PM_DG = PM_THREADS / 16,    // decode and chunk-staging thread groups per token pair (16)
  PM_TOK = 32,         // tokens per tile
  PM_KROW = 288,       // bytes per decoded token of K: 8 k-steps × 4 lane groups × 8 bytes, + 32 (banks)
  PM_VROW = 20,        // words per dim row of V^T: 16 token pairs, + 4 (banks)
  PM_HROW = 132,       // words per token row of the chunk's k: 128 dim pairs, + 4 (banks)
  PM_RAW = PM_TOK * 248,  // bytes of one staged tile of raw slots (the largest slot)
  // A decoded tile's V^T as wgmma's B (OCT_WGMMA): core matrices of 8 dims × 8 columns (fp16),
  // PM_VLBO bytes apart along the columns (K) and PM_VSBO along the dims (N). The padding makes the
  // decode's stores conflict-free: a warp stores column pairs 0..15 of two dim groups 2 apart, at
  // words 36·(cp / 4) + cp % 4 (banks 0..15) + 152·group (16 banks further for group + 2).
  PM_VLBO = 144,
  PM_VSBO = 608,
  // Bytes of a decoded tile's V in either layout (the larger, [dim][column pair] rows of PM_VROW
  // words for mma.sync's B loads), so that PmSmem is one size on the host and every device pass.
  PM_VBYTES = 256 * PM_VROW * 4,
};
static_assert(32 * PM_VSBO <= PM_VBYTES && 3 * PM_VLBO + 128 <= PM_VSBO, "wgmma's V layout fits");
// The decode and chunk staging split a token pair's work among PM_DG thread groups evenly.
static_assert(PM_DG <= 16 && 16 % PM_DG == 0 && PM_THREADS % PM_TOK == 0, "PM_WARPS: 2, 4 or 8");

struct alignas(8) PmPair {  // two consecutive columns' (tokens') values
  float v[2];
};

// One decoded prefix tile, by column (column 2p: token p of the tile, 2p + 1: token p + 16; see
// pm_decode).
struct PmDec {
  alignas(16) uint8_t k[PM_TOK][PM_KROW];  // K codebook bytes: [column][chunk: k-step, lane group (pm_kchunk)][8]
  alignas(16) uint8_t v[PM_VBYTES];        // V codebook values, fp16 pairs of two columns (pm_voff)
  PmPair ks[4][PM_TOK / 2];                // K block scales: [block][column pair]
  alignas(8) float vs[PM_TOK];             // V scale · 64, by column
  PmPair okd[PM_TOK / 2];                  // the column's token is attended (1.0) or not (0.0)
};

struct PmSmem {
  int seq[PM_M];    // each pair's sequence, -1 for none
  int row[PM_M];    // each pair's query row
  float qs[PM_M];   // each pair's query scale qmax / 127 (0 outside the set)
  union {
    struct {
      alignas(16) uint32_t qa[PM_WARPS][8][32][4];   // int8 query A fragments: [warp][k-step][lane]
      alignas(16) uint8_t raw[2][PM_RAW];            // raw slots: the tile being decoded, the next
      int ok[2][PM_TOK];                             // per raw buffer: the token is attended
      PmDec dec[2];                                  // decoded tiles: the one multiplied, the next
    } pre;
    struct {
      alignas(16) uint32_t qa[PM_WARPS][16][32][4];   // fp16 query A fragments: [warp][k-step][lane]
      alignas(16) uint32_t k[PM_TOK][PM_HROW];        // raw k: [token][dim pair]
      alignas(16) uint32_t v[256][PM_VROW];           // raw v: [dim][token pair]
    } chk;
  } u;
};

#if OCT_MMA_BODY

// Token position tg's block in its table row (tg < 2^31: a prefix position): by the host's
// multiplier and shift (oct_bs_div, as the mma decode's block index), not a division of about 20
// instructions, 3 of them on the conversion unit, per copy and tile.
OCT_DEV uint32_t pm_block_of(const OctPrefillParams& p, uint32_t tg) { return oct_bs_div(tg, p.bs_mul, p.bs_sh); }

// The first slot of the 16 tokens th..th+15 of KV head offset hoff, when they lie in one block
// (block size a multiple of 16, th too) that is valid and th is below te; else nullptr.
template <int FMT>
OCT_DEV const uint8_t* pm_half(const OctPrefillParams& p, const int32_t* btr, int64_t th, int64_t te, int64_t hoff) {
  if (th >= te) return nullptr;  // (th < te <= max_blocks·block_size: the table lookup stays in its row)
  const uint32_t lb = pm_block_of(p, (uint32_t)th);
  const int32_t bid = btr[lb];
  if (bid < 0 || bid >= p.num_blocks) return nullptr;
  return p.cache + (int64_t)bid * p.c_sb + hoff + (int64_t)((uint32_t)th - lb * (uint32_t)p.block_size) * DecFmt<FMT>::SLOT;
}

// Issues the copies of prefix tile ts (tokens below te attended) into raw buffer buf.
template <int FMT>
OCT_DEV void pm_issue(const OctPrefillParams& p, PmSmem& sm, int buf, const int32_t* btr, int64_t ts, int64_t te,
                      int h, bool contig, int tid) {
  typedef SlotCopy<FMT> F;
  uint8_t* dst = sm.u.pre.raw[buf];
  const int64_t hoff = (int64_t)h * p.c_sh;
  // Token positions fit 32 bits (below ctx <= an int32 seq_len).
  if (F::CONTIG_OK && contig) {  // each 16-token half of the tile lies in one block: half the threads copy each
    const int hf = tid / (PM_THREADS / 2), r = tid % (PM_THREADS / 2);
    const uint8_t* src = pm_half<FMT>(p, btr, ts + 16 * hf, te, hoff);
    // Token 16hf + r / (PM_THREADS / 32)'s flag, from every (PM_THREADS / 32)th thread of the half
    // (its own half's pointer: no second lookup).
    if (r % (PM_THREADS / 32) == 0) {
      const int tk = 16 * hf + r / (PM_THREADS / 32);
      sm.u.pre.ok[buf][tk] = ts + tk < te && src;
    }
    // The half's F::SLOT 16-byte units, a fixed count of predicated copies per thread (nvcc compiles
    // a loop over a thread-dependent count as a general loop).
    if (src)
      OCT_UNROLL for (int i = 0; i < (F::SLOT + PM_THREADS / 2 - 1) / (PM_THREADS / 2); i++) {
        const int u = r + i * (PM_THREADS / 2);
        if (u < F::SLOT) oct_copy_g2s16(dst + 16 * F::SLOT * hf + 16 * u, src + 16 * u);
      }
    return;
  }
  enum { PARTS = PM_THREADS / PM_TOK };  // threads per token
  const int tk = tid / PARTS, part = tid % PARTS;
  const int64_t tg = ts + tk;
  const uint8_t* src = nullptr;
  if (tg < te) {
    const uint32_t lb = pm_block_of(p, (uint32_t)tg);
    const int32_t bid = btr[lb];
    if (bid >= 0 && bid < p.num_blocks)
      src = p.cache + (int64_t)bid * p.c_sb + hoff + (int64_t)((uint32_t)tg - lb * (uint32_t)p.block_size) * p.c_st;
  }
  if (part == 0) sm.u.pre.ok[buf][tk] = src != nullptr;
  if (src)
    for (int u = part; u < F::SU; u += PARTS) oct_copy_g2s<F::UB>(dst + tk * F::ROW + u * F::UB, src + u * F::UB);
}

// Two tokens' biased codebook bytes, 4 dims each (a, b), as fp16 pairs (token a low, token b
// high): dims 0..3 of the words' byte order.
OCT_DEV void pm_vpairs(uint32_t a, uint32_t b, uint32_t out[4]) {
  OCT_UNROLL for (int hb = 0; hb < 2; hb++) oct_h4_codes(oct_pair_tokens(a, b, hb), out[2 * hb], out[2 * hb + 1]);
}

// Byte offset of the fp16 pair of column pair cp (columns 2cp, 2cp + 1) and dim dim in a decoded
// tile's V: wgmma's core matrices (PM_VLBO, PM_VSBO), or [dim][column pair] rows of PM_VROW words.
OCT_DEV int pm_voff(int dim, int cp) {
#if OCT_WGMMA
  return (cp >> 2) * PM_VLBO + (dim >> 3) * PM_VSBO + (dim & 7) * 16 + (cp & 3) * 4;
#else
  return (dim * PM_VROW + cp) * 4;
#endif
}

// Byte offset of 8-byte chunk c (k-step c / 4, lane group c % 4) in row r of a decoded tile's K:
// the chunk index XOR bits 2..4 of the row. With rows of 288 bytes (72 words: 8 mod 32) the
// decode's stores — 16 threads, rows 2tp (or 2tp + 1), one chunk — and the scores' B loads — rows
// 8n + g, g = 0..3, chunks 4ks .. 4ks + 3 — each reach 16 distinct bank pairs (without the XOR
// the stores are 8 rows on each of two bank pairs: 16 wavefronts each).
OCT_DEV int pm_kchunk(int r, int c) { return 8 * (c ^ ((r >> 2) & 7)); }

// Decodes raw buffer buf (32 tokens) into d: the K bytes, V pairs and scales. A decoded tile's
// column 2p holds token p, column 2p + 1 token p + 16 (the softmax and P·V treat columns alike,
// and the raw slots a half-warp reads lie one slot apart: no bank conflicts). Thread: column pair
// tp (tokens tp, tp + 16), group dg (of PM_DG): V lanes l = (32 / PM_DG)·dg .. (32 lanes, 8 dims
// each) and K units u = (16 / PM_DG)·dg .. (16 units: block u / 4, lane group u % 4).
template <int FMT>
OCT_DEV void pm_decode(PmSmem& sm, int buf, PmDec& d, int tid) {
  typedef SlotCopy<FMT> F;
  enum { KU = 16 / PM_DG, VL = 32 / PM_DG };
  const int tp = tid & 15, dg = tid >> 4;
  const uint8_t* ra = sm.u.pre.raw[buf] + tp * F::ROW;
  const uint8_t* rb = ra + 16 * F::ROW;
  OCT_UNROLL for (int tt = 0; tt < KU; tt++) {
    const int b = (KU * dg + tt) >> 2, t = (KU * dg + tt) & 3;
    uint32_t wa[4], wb[4];
    dec_kwords<FMT, false>(ra, b, t, wa);
    dec_kwords<FMT, false>(rb, b, t, wb);
    OCT_UNROLL for (int j2 = 0; j2 < 2; j2++) {
      OctU2 xa, xb;
      xa.x = wa[2 * j2], xa.y = wa[2 * j2 + 1], xb.x = wb[2 * j2], xb.y = wb[2 * j2 + 1];
      const int c = 4 * (2 * b + j2) + t;
      *(OctU2*)(d.k[2 * tp] + pm_kchunk(2 * tp, c)) = xa;
      *(OctU2*)(d.k[2 * tp + 1] + pm_kchunk(2 * tp + 1, c)) = xb;
    }
  }
  OCT_UNROLL for (int m = 0; m < VL; m++) {
    const int l = VL * dg + m;
    uint32_t a0, a1, b0, b1, pr[8];
    dec_vbytes<FMT>(ra, l, a0, a1);
    dec_vbytes<FMT>(rb, l, b0, b1);
    pm_vpairs(a0, b0, pr);
    pm_vpairs(a1, b1, pr + 4);
    int run0, run1;
    dec_runs<FMT>(l, run0, run1);
    // Byte e of (a0, a1) is dim run0 + e/2 (e even) or run1 + e/2 (e odd) (dec_vbytes).
    OCT_UNROLL for (int e = 0; e < 8; e++) *(uint32_t*)(d.v + pm_voff(((e & 1) ? run1 : run0) + (e >> 1), tp)) = pr[e];
  }
  // The columns' flags and scales, spread over the warps (the barrier after the decode waits for
  // the slowest; with every item in the first warp it carried about 60 instructions more per tile):
  // column 2tp + c (token tp + 16c), c = dg & 1, items (dg >> 1), (dg >> 1) + PM_DG / 2, .. of the
  // six — K block scales 0..3, the V scale, the flag. A warp holds the groups dg = 2w', 2w' + 1 (one
  // value of dg >> 1), so its items are uniform in it.
  const int c = dg & 1;
  for (int item = dg >> 1; item < 6; item += PM_DG / 2) {
    const bool ok = sm.u.pre.ok[buf][tp + 16 * c];  // (ok: by token; ok[buf] takes a later tile's
                                                    // flags while d is multiplied)
    const uint16_t* sc = (const uint16_t*)((c ? rb : ra) + F::SCALES);
    if (item < 4) {
      d.ks[item][tp].v[c] = ok ? oct_f16_to_f32(sc[F::COMPACT ? 0 : item]) : 0.0f;
    } else if (item == 4) {
      // The V scale times 64 (exact): P' = fp16(p · vs · 64) in one product (the same value as the
      // two products: scaling by 2^6 commutes with the rounding, and a product small enough to
      // tell them apart is 0 as fp16).
      d.vs[2 * tp + c] = ok ? oct_mul_rn(oct_f16_to_f32(sc[F::COMPACT ? 1 : 4]), 64.0f) : 0.0f;
    } else {
      d.okd[tp].v[c] = ok ? 1.0f : 0.0f;
    }
  }
  // V is read by wgmma (the async proxy): this thread's stores made visible to it before the
  // barrier that precedes the product (nothing without wgmma).
  oct_wgmma_proxy_fence();
}

// Stages chunk tokens us..us+31 (those at or below umax) of KV head h, rows qstart + u of k and v.
// Thread: token pair tp, dims D·dg .. D·dg + D − 1 (D = 256 / PM_DG).
OCT_DEV void pm_stage_chunk(const OctPrefillParams& p, PmSmem& sm, int64_t qstart, int64_t us, int64_t umax, int h,
                            int tid) {
  enum { D = 256 / PM_DG };
  const int tp = tid & 15, dg = tid >> 4;
  uint32_t kv[2][2][D / 2];  // [token][k, v][dim pair]
  OCT_UNROLL for (int c = 0; c < 2; c++) {
    const int64_t u = us + 2 * tp + c;
    const bool in = u <= umax;
    const int64_t row = qstart + u;
    OCT_UNROLL for (int i = 0; i < D / 8; i++) {
      uint32_t kr[4] = {0, 0, 0, 0}, vr[4] = {0, 0, 0, 0};
      if (in) {
        oct_load8_raw(p.k + row * p.k_st + (int64_t)h * p.k_sh + D * dg + 8 * i, kr);
        oct_load8_raw(p.v + row * p.v_st + (int64_t)h * p.v_sh + D * dg + 8 * i, vr);
      }
      OCT_UNROLL for (int j = 0; j < 4; j++) kv[c][0][4 * i + j] = kr[j], kv[c][1][4 * i + j] = vr[j];
    }
  }
  OCT_UNROLL for (int c = 0; c < 2; c++)
    OCT_UNROLL for (int j = 0; j < D / 2; j++) sm.u.chk.k[2 * tp + c][(D / 2) * dg + j] = kv[c][0][j];
  OCT_UNROLL for (int j = 0; j < D / 2; j++) {
    sm.u.chk.v[D * dg + 2 * j][tp] = oct_perm8n(kv[0][1][j], kv[1][1][j], 0x5410u);
    sm.u.chk.v[D * dg + 2 * j + 1][tp] = oct_perm8n(kv[0][1][j], kv[1][1][j], 0x7632u);
  }
}

// The per-lane state of a warp's 16 rows: lane (g, t) holds rows g (r = 0) and g + 8 (r = 1).
struct PmRows {
  bool in[2];      // the pair is in the row set
  int64_t pos[2];  // its row's position in the chunk
  float m[2], l[2];
};

// One online-softmax step over a tile of 4 column tiles whose scores s[n][e] (row g + 8(e >> 1),
// token 8n + 2t + (e & 1); -inf: masked) are given; returns the P·V A operands of the tile's two
// 16-token k-steps and alpha of each row. PHASE 1: P' = fp16(p · vs[token]), vs the V scale · 64.
template <int PHASE>
OCT_DEV void pm_softmax(const float (&s)[4][4], const float* vs, int t, PmRows& R, OctMmaA16 (&pa)[2], float (&alpha)[2]) {
  const float ninf = -oct_inf();
  float pv[4][4];
  OCT_UNROLL for (int r = 0; r < 2; r++) {
    float mx = ninf;
    OCT_UNROLL for (int n = 0; n < 4; n++) mx = oct_fmax(mx, oct_fmax(s[n][2 * r], s[n][2 * r + 1]));
    mx = oct_fmax(mx, oct_shfl_xor<1>(mx));
    mx = oct_fmax(mx, oct_shfl_xor<2>(mx));
    const float mn = oct_fmax(R.m[r], mx);
    float al = 1.0f, sum = 0.0f;
    if (mn != ninf) al = oct_exp2_ftz(R.m[r] - mn);
    OCT_UNROLL for (int n = 0; n < 4; n++)
      OCT_UNROLL for (int c = 0; c < 2; c++) {
        const float x = mn != ninf ? oct_exp2_ftz(s[n][2 * r + c] - mn) : 0.0f;
        pv[n][2 * r + c] = x;
        sum = oct_add_rn(sum, x);
      }
    sum = oct_add_rn(sum, oct_shfl_xor<1>(sum));
    sum = oct_add_rn(sum, oct_shfl_xor<2>(sum));
    R.l[r] = oct_fma(R.l[r], al, sum);
    R.m[r] = mn;
    alpha[r] = al;
  }
  uint16_t h[4][4];
  OCT_UNROLL for (int n = 0; n < 4; n++)
    OCT_UNROLL for (int e = 0; e < 4; e++) {
      const float x = pv[n][e];
      // A masked token (p = 0) is exactly 0, whatever its V scale.
      h[n][e] = PHASE == 1 ? (x == 0.0f ? (uint16_t)0 : oct_f32_to_f16(oct_mul_rn(x, vs[8 * n + 2 * t + (e & 1)])))
                           : oct_f32_to_f16(x);
    }
  // A of m16n8k16: r0 row g, tokens 2t, 2t + 1; r1 row g + 8; r2, r3 the same 8 tokens further.
  OCT_UNROLL for (int k = 0; k < 2; k++) {
    pa[k].r[0] = (uint32_t)h[2 * k][0] | ((uint32_t)h[2 * k][1] << 16);
    pa[k].r[1] = (uint32_t)h[2 * k][2] | ((uint32_t)h[2 * k][3] << 16);
    pa[k].r[2] = (uint32_t)h[2 * k + 1][0] | ((uint32_t)h[2 * k + 1][1] << 16);
    pa[k].r[3] = (uint32_t)h[2 * k + 1][2] | ((uint32_t)h[2 * k + 1][3] << 16);
  }
}

// o rescaled by alpha (rows g, g + 8) when a row's max grew.
OCT_DEV void pm_rescale(OctMmaF32 (&o)[32], const float (&alpha)[2]) {
  if (alpha[0] != 1.0f || alpha[1] != 1.0f) {
    OCT_UNROLL for (int n = 0; n < 32; n++) {
      o[n].r[0] = oct_mul_rn(o[n].r[0], alpha[0]), o[n].r[1] = oct_mul_rn(o[n].r[1], alpha[0]);
      o[n].r[2] = oct_mul_rn(o[n].r[2], alpha[1]), o[n].r[3] = oct_mul_rn(o[n].r[3], alpha[1]);
    }
  }
}
// o rescaled by alpha (rows g, g + 8), then o += P·V over the tile's 32 tokens (V^T [dim][token pair]).
// The B operands are four 32-bit loads per 8-dim column tile. (One ldmatrix.x4 per tile loads the
// same registers — matrix j the dims' token pairs 4j..4j + 3 — with 96 instructions fewer per
// tile, but nvcc then spills at the 255-register cap: 11.46 against 10.80 ms on q2ks100k-pf.)
OCT_DEV void pm_pv(OctMmaF32 (&o)[32], const OctMmaA16 (&pa)[2], const float (&alpha)[2], const uint32_t (*v)[PM_VROW],
                   int lane) {
  pm_rescale(o, alpha);
  // k-step outside: the two products into o[n] are 32 mma apart instead of back to back.
  const int g = lane >> 2, t = lane & 3;
  OCT_UNROLL for (int k = 0; k < 2; k++)
    OCT_UNROLL for (int n = 0; n < 32; n++) {
      const uint32_t* vr = v[8 * n + g] + 8 * k;  // token pairs 8k + t, 8k + 4 + t
      OctMmaB16 b;
      b.r[0] = vr[t], b.r[1] = vr[4 + t];
      o[n] = oct_mma_m16n8k16_f32_f16(pa[k], b, o[n]);
    }
}

#if OCT_WGMMA
// The same on wgmma (sm_90a): each 4-warp half of the workgroup is a warpgroup whose 64 rows are
// its warps' pairs; per 16-column k-step one m64n256k16 with P from registers and V^T (v, in
// pm_voff's core matrices) through a descriptor. Asynchronous: issued and committed here; the
// caller waits (pm_wg_wait) before o or v is touched again.
OCT_DEV void pm_pv_wg(OctMmaF32 (&o)[32], OctMmaA16 (&pa)[2], const float (&alpha)[2], const PmSmem& sm,
                      const uint8_t* v) {
  pm_rescale(o, alpha);
  oct_wgmma_fence(o, pa);
  // (mutant OCT_MUT_PREFILL_MMA_VSTEP: k-step 1 starts at 1 × PM_VLBO, one core matrix early)
  OCT_UNROLL for (int k = 0; k < 2; k++) {
    const int kc = OCT_MUTANT(OCT_MUT_PREFILL_MMA_VSTEP) ? k : 2 * k;  // the k-step's first core matrix along K
    oct_wgmma_m64n256k16_f32_f16(o, pa[k], &sm, oct_wgmma_desc(&sm, v + kc * PM_VLBO, PM_VLBO, PM_VSBO));
  }
  oct_wgmma_commit();
}
#endif
// The prefix's P·V products of this warpgroup are done (nothing without wgmma).
OCT_DEV void pm_wg_wait(OctMmaF32 (&o)[32]) {
#if OCT_WGMMA
  oct_wgmma_wait<0>(o);
#else
  (void)o;
#endif
}

// One decoded prefix tile d against warp w's 16 pairs (lane (g, t)): scores, online softmax, P·V.
OCT_DEV void pm_tile_prefix(const PmSmem& sm, const PmDec& d, const float (&qc)[2], int w, int lane, PmRows& R,
                            OctMmaF32 (&o)[32]) {
  const int g = lane >> 2, t = lane & 3;
  const float ninf = -oct_inf();
  // Scores: per K block two m16n8k32 (exact int32), times the token's K block scale and added
  // in block order (one fused multiply-add per block after the first), times the row's factor.
  // (mutant OCT_MUT_PREFILL_MMA_KSCALE_TOKEN: column 2t's scale for column 2t + 1)
  // Lane (g, t)'s B operand of column tile n, k-step ks: row 8n + g, chunk 4ks + t, at
  // pm_kchunk: with g < 8 and n < 4 that is chunk 4(ks ^ (n >> 1)) + (t ^ (g >> 2) ^ 2(n & 1)), so
  // two per-lane bases (n even, odd) and an immediate offset per load (the XOR per load costs 7 %
  // more executed instructions).
  static_assert(PM_TOK == 32, "pm_kchunk's closed form below assumes rows 0..31");
  const uint8_t* kbase[2] = {d.k[g] + 8 * (t ^ (g >> 2)), d.k[g] + 8 * (t ^ (g >> 2) ^ 2)};
  float sc[4][4];
  OCT_UNROLL for (int b = 0; b < 4; b++) {
    OctMmaI32 acc[4];
    OCT_UNROLL for (int n = 0; n < 4; n++)
      OCT_UNROLL for (int e = 0; e < 4; e++) acc[n].r[e] = 0;
    OCT_UNROLL for (int j2 = 0; j2 < 2; j2++) {
      const int ks = 2 * b + j2;
      const OctU4 qa = *(const OctU4*)sm.u.pre.qa[w][ks][lane];
      OctMmaA8 a;
      a.r[0] = qa.x, a.r[1] = qa.y, a.r[2] = qa.z, a.r[3] = qa.w;
      OCT_UNROLL for (int n = 0; n < 4; n++) {
        const OctU2 kb = *(const OctU2*)(kbase[n & 1] + 8 * n * PM_KROW + 32 * (ks ^ (n >> 1)));
        OctMmaB8 bk;
        bk.r[0] = kb.x, bk.r[1] = kb.y;
        acc[n] = oct_mma_m16n8k32_s32_s8(a, bk, acc[n]);
      }
    }
    OCT_UNROLL for (int n = 0; n < 4; n++) {
      const PmPair kp = d.ks[b][4 * n + t];  // tokens 8n + 2t, 8n + 2t + 1
      const float k0 = kp.v[0], k1 = OCT_MUTANT(OCT_MUT_PREFILL_MMA_KSCALE_TOKEN) ? k0 : kp.v[1];
      OCT_UNROLL for (int e = 0; e < 4; e++) {
        const float x = (float)acc[n].r[e], k = (e & 1) ? k1 : k0;
        sc[n][e] = b == 0 ? oct_mul_rn(x, k) : oct_fma(x, k, sc[n][e]);
      }
    }
  }
  OCT_UNROLL for (int n = 0; n < 4; n++) {
    const PmPair okp = d.okd[4 * n + t];
    OCT_UNROLL for (int e = 0; e < 4; e++) {
      const int r = e >> 1;
      const bool ok = R.in[r] && okp.v[e & 1] != 0.0f;
      sc[n][e] = ok ? oct_mul_rn(sc[n][e], qc[r]) : ninf;
    }
  }
  OctMmaA16 pa[2];
  float alpha[2];
  pm_softmax<1>(sc, d.vs, t, R, pa, alpha);
#if OCT_WGMMA
  pm_pv_wg(o, pa, alpha, sm, d.v);
#else
  pm_pv(o, pa, alpha, (const uint32_t(*)[PM_VROW])d.v, lane);
#endif
}

template <int FMT>
OCT_DEV void pm_body(const OctPrefillParams& p, PmSmem& sm) {
  const int tid = oct_tid(), lane = oct_lane(), w = oct_wave(), g = lane >> 2, t = lane & 3;
  const int h = oct_bid_y(), z = oct_bid_z();  // KV head, prefix split
  const int64_t pair0 = (int64_t)oct_bid_x() * PM_M;
  const float ninf = -oct_inf();
  const float csc = p.score_scale;  // sm_scale·log2(e)

  if (tid < PM_M) {
    const int64_t i = pair0 + tid, row = i / p.g;
    sm.row[tid] = (int)(row < p.rows ? row : 0);
    sm.seq[tid] = row < p.rows ? oct_row_seq(p.cu_seqlens, p.num_seqs, row) : -1;
  }
  oct_sync();
  const bool contig = p.c_st == DecFmt<FMT>::SLOT && p.block_size % 16 == 0 && (p.c_sb & 15) == 0 &&
                      (p.c_sh & 15) == 0 && ((uintptr_t)p.cache & 15) == 0;

  // Pair i's row is pair0 + i / G and rows are grouped by sequence, so each row set is a range
  // of pairs [first, end); pairs of rows in no sequence (seq -1: before the first sequence's
  // rows, past the last) are skipped.
  for (int first = 0, end; first < PM_M; first = end) {
    const int s = sm.seq[first];
    end = first + 1;
    while (end < PM_M && sm.seq[end] == s) end++;
    if (s < 0) continue;
    const int last = sm.row[end - 1];
    const int64_t qstart = p.cu_seqlens[s], qlen = (int64_t)p.cu_seqlens[s + 1] - qstart;
    int64_t ctx = (int64_t)p.seq_lens[s] - qlen;
    ctx = ctx < 0 ? 0 : ctx > p.kv_max ? p.kv_max : ctx;
    const int64_t umax = last - qstart;  // the set's last row's position in its chunk

    PmRows R;
    OCT_UNROLL for (int r = 0; r < 2; r++) {
      const int m = 16 * w + g + 8 * r;
      R.in[r] = m >= first && m < end;
      R.pos[r] = sm.row[m] - qstart;
      R.m[r] = ninf, R.l[r] = 0.0f;
    }

    // The int8 query A fragments (int8rowq): warp w's pairs, lane l dims 8l..8l+7; one scale
    // per row, qmax = max(1e-8, max|x|), q = rint(x·127/qmax) clamped to ±127, at the dec_qpos
    // places; pairs outside the set zeros (scale 0).
    oct_sync();  // the previous set's shared memory is read
    OCT_NOUNROLL for (int m = 0; m < 16; m++) {
      const int pm = 16 * w + m;
      const bool in = pm >= first && pm < end;
      uint32_t raw[4] = {0, 0, 0, 0};
      if (in) {
        const int64_t hq = (int64_t)h * p.g + (pair0 + pm) % p.g;
        oct_load8_raw(p.q + (int64_t)sm.row[pm] * p.q_st + hq * p.q_sh + 8 * lane, raw);
      }
      float x[8], amax = 0.0f;
      OCT_UNROLL for (int i = 0; i < 4; i++)
        x[2 * i] = oct_h2f((uint16_t)raw[i], p.dtype), x[2 * i + 1] = oct_h2f((uint16_t)(raw[i] >> 16), p.dtype);
      OCT_UNROLL for (int e = 0; e < 8; e++) amax = oct_fmax(amax, oct_fabs(x[e]));
      const float qmax = oct_fmax(oct_max32(amax), 1e-8f);
      uint8_t* qb = (uint8_t*)sm.u.pre.qa[w];
      OCT_UNROLL for (int e = 0; e < 8; e++) {
        const float y = oct_fmin(oct_fmax(oct_rint(oct_div_rn(oct_mul_rn(x[e], 127.0f), qmax)), -127.0f), 127.0f);
        const int pos = dec_qpos<FMT>(8 * lane + e), j = (pos >> 2) & 3;
        const int ks = 2 * (pos >> 6) + (j >> 1), ln = 4 * (m & 7) + ((pos >> 4) & 3), reg = 2 * (j & 1) + (m >> 3);
        qb[((ks * 32 + ln) * 4 + reg) * 4 + (pos & 3)] = (uint8_t)(int8_t)(int)y;
      }
      if (lane == 0) sm.qs[pm] = in ? oct_div_rn(qmax, 127.0f) : 0.0f;
    }

    OctMmaF32 o[32];  // dims 8n + 2t + (e & 1) of rows g (e < 2), g + 8
    OCT_UNROLL for (int n = 0; n < 32; n++)
      OCT_UNROLL for (int e = 0; e < 4; e++) o[n].r[e] = 0.0f;

    // Phase 1: the packed prefix, tokens 0..ctx-1 — with splits, split z's tiles t0..t1-1 of them
    // (the tiles shared out evenly) — two tiles of raw slots in flight.
    const int32_t* btr = p.block_table + (int64_t)s * p.max_blocks;
    const int64_t ntt = (ctx + PM_TOK - 1) / PM_TOK, t0 = ntt * z / p.splits;
    int64_t t1 = ntt * (z + 1) / p.splits;
    // (mutant OCT_MUT_PREFILL_MMA_SPLIT_EDGE: a split before the last stops one tile short)
    if (OCT_MUTANT(OCT_MUT_PREFILL_MMA_SPLIT_EDGE) && z + 1 < p.splits && t1 > t0) t1--;
    if (t0 < t1) pm_issue<FMT>(p, sm, 0, btr, PM_TOK * t0, ctx, h, contig, tid);
    oct_async_commit();
    if (t0 + 1 < t1) pm_issue<FMT>(p, sm, 1, btr, PM_TOK * (t0 + 1), ctx, h, contig, tid);
    oct_async_commit();
    oct_async_wait<1>();  // tile t0's copies
    oct_sync();           // (and the query fragments are written)
    if (t0 < t1) pm_decode<FMT>(sm, 0, sm.u.pre.dec[0], tid);
    // Each row's score factor: query scale · sm_scale·log2(e), then · 1/64 (exact).
    float qc[2];
    OCT_UNROLL for (int r = 0; r < 2; r++) qc[r] = oct_mul_rn(oct_mul_rn(sm.qs[16 * w + g + 8 * r], csc), 0.015625f);
    // Per tile one barrier: after it, tile jt is decoded (dec[buf]), tile jt + 1's raw slots have
    // landed, and every warp is done with tile jt − 1; then the copies of tile jt + 2 go into the
    // raw buffer tile jt was decoded from, tile jt is multiplied, and tile jt + 1 is decoded into
    // the buffer tile jt − 1 was multiplied from — the tensor-core work and the decoding of the
    // workgroup's warps overlap between barriers (decoding first is slower: 10.13 against 9.59 ms
    // on q2ks100k-pf).
    for (int64_t jt = t0; jt < t1; jt++) {
      const int buf = (int)((jt - t0) & 1);
      oct_async_wait<0>();  // tile jt + 1's copies (this thread's)
      pm_wg_wait(o);        // tile jt − 1's P·V, which reads the buffer tile jt + 1 is decoded into
      oct_sync();
      if (jt + 2 < t1) pm_issue<FMT>(p, sm, buf, btr, PM_TOK * (jt + 2), ctx, h, contig, tid);
      oct_async_commit();
      pm_tile_prefix(sm, sm.u.pre.dec[buf], qc, w, lane, R, o);
      if (jt + 1 < t1) pm_decode<FMT>(sm, buf ^ 1, sm.u.pre.dec[buf ^ 1], tid);
    }
    oct_async_wait<0>();
    pm_wg_wait(o);
    // o holds Σ P'·codebook = 4096 × the V units: back to V units (exact).
    OCT_UNROLL for (int n = 0; n < 32; n++)
      OCT_UNROLL for (int e = 0; e < 4; e++) o[n].r[e] = oct_mul_rn(o[n].r[e], 0x1p-12f);

    // Phase 2: the chunk's own tokens 0..umax, exact, causal (a row at position pos sees u <= pos).
    // The fp16 query A fragments: k-step ks (dims 16ks..16ks+15), r0/r1 rows g/g + 8 dims 2t, 2t+1,
    // r2/r3 dims 2t + 8, 2t + 9.
    oct_sync();  // phase 1's shared memory is read
    OCT_NOUNROLL for (int m = 0; m < 16; m++) {
      const int pm = 16 * w + m;
      uint32_t raw[4] = {0, 0, 0, 0};
      if (pm >= first && pm < end) {
        const int64_t hq = (int64_t)h * p.g + (pair0 + pm) % p.g;
        oct_load8_raw(p.q + (int64_t)sm.row[pm] * p.q_st + hq * p.q_sh + 8 * lane, raw);
      }
      OCT_UNROLL for (int i = 0; i < 4; i++) {
        const int pi = 4 * (lane & 1) + i;  // dim pair 4·lane + i is pair pi of k-step lane / 2
        sm.u.chk.qa[w][lane >> 1][4 * (m & 7) + (pi & 3)][2 * (pi >> 2) + (m >> 3)] = raw[i];
      }
    }
    // The chunk goes with split 0, the first launched, so that the tail of the grid is prefix work
    // (7.35 ms on q2ks100k-pf, against 7.40 with the last split).
    const int64_t ntc = z == 0 ? (umax + PM_TOK) / PM_TOK : 0;
    for (int64_t jt = 0; jt < ntc; jt++) {
      const int64_t us = PM_TOK * jt;
      oct_sync();  // the previous tile is read (and the query fragments written)
      pm_stage_chunk(p, sm, qstart, us, umax, h, tid);
      oct_sync();
      // Per 64-dim block a chain of four m16n8k16, the 4 block sums added in order.
      float sc[4][4];
      OCT_UNROLL for (int n = 0; n < 4; n++) {
        const uint32_t* kr = sm.u.chk.k[8 * n + g];
        OCT_UNROLL for (int b = 0; b < 4; b++) {
          OctMmaF32 acc;
          OCT_UNROLL for (int e = 0; e < 4; e++) acc.r[e] = 0.0f;
          OCT_UNROLL for (int j = 0; j < 4; j++) {
            const int ks = 4 * b + j;
            const OctU4 qa = *(const OctU4*)sm.u.chk.qa[w][ks][lane];
            OctMmaA16 a;
            a.r[0] = qa.x, a.r[1] = qa.y, a.r[2] = qa.z, a.r[3] = qa.w;
            OctMmaB16 bk;
            bk.r[0] = kr[8 * ks + t], bk.r[1] = kr[8 * ks + 4 + t];
            acc = oct_mma_m16n8k16_f32_f16(a, bk, acc);
          }
          OCT_UNROLL for (int e = 0; e < 4; e++) sc[n][e] = b == 0 ? acc.r[e] : oct_add_rn(sc[n][e], acc.r[e]);
        }
      }
      OCT_UNROLL for (int n = 0; n < 4; n++)
        OCT_UNROLL for (int e = 0; e < 4; e++) {
          const int r = e >> 1;
          const int64_t u = us + 8 * n + 2 * t + (e & 1);
          // (mutant OCT_MUT_PREFILL_MMA_CAUSAL: u <= pos + 1, a row sees the next row's token)
          const int64_t lim = R.pos[r] + (OCT_MUTANT(OCT_MUT_PREFILL_MMA_CAUSAL) ? 1 : 0);
          sc[n][e] = R.in[r] && u <= lim && u <= umax ? oct_mul_rn(sc[n][e], csc) : ninf;
        }
      OctMmaA16 pa[2];
      float alpha[2];
      pm_softmax<2>(sc, nullptr, t, R, pa, alpha);
      pm_pv(o, pa, alpha, sm.u.chk.v, lane);
    }

    // out = o / l for the pairs of the set (dims 8n + 2t, 8n + 2t + 1 of rows g, g + 8); with
    // splits, the partial (o, m, l) instead, for the merge.
    OCT_UNROLL for (int r = 0; r < 2; r++) {
      if (!R.in[r]) continue;
      const int pm = 16 * w + g + 8 * r;
      const int64_t hq = (int64_t)h * p.g + (pair0 + pm) % p.g;
      if (p.splits > 1) {
        float* part = p.ws + (((int64_t)sm.row[pm] * p.hq + hq) * p.splits + z) * OCT_PM_PSTRIDE;
        OCT_UNROLL for (int n = 0; n < 32; n++) {
          PmPair x;
          x.v[0] = o[n].r[2 * r], x.v[1] = o[n].r[2 * r + 1];
          *(PmPair*)(part + 8 * n + 2 * t) = x;
        }
        if (t == 0) part[256] = R.m[r], part[257] = R.l[r];
        continue;
      }
      uint16_t* dst = p.out + (int64_t)sm.row[pm] * p.o_st + hq * p.o_sh + 2 * t;
      const float lr = R.l[r];
      OCT_UNROLL for (int n = 0; n < 32; n++)
        OCT_UNROLL for (int c = 0; c < 2; c++)
          dst[8 * n + c] = oct_f2h(lr == 0.0f ? 0.0f : oct_div_rn(o[n].r[2 * r + c], lr), p.dtype);
    }
  }
}

#if defined(OCT_NV)
extern __shared__ OctU4 pm_dyn[];  // (16-byte aligned)
#endif
template <int FMT>
OCT_DEV void pm_kernel(const OctPrefillParams& p) {
#if defined(OCT_NV)
  pm_body<FMT>(p, *reinterpret_cast<PmSmem*>(pm_dyn));
#else
  OCT_SHARED PmSmem sm;
  pm_body<FMT>(p, sm);
#endif
}
#define OCT_PM_BODY(fmt) pm_kernel<fmt>(p);
#else
#define OCT_PM_BODY(fmt) (void)p;
#endif

// One kernel per format (the layout is a compile-time constant), one workgroup of 8 warps per SM
// (255 registers each).
#define OCT_PM_KERNEL(name, fmt) \
  OCT_KERNEL_OCC(PM_THREADS, 8 / PM_WARPS) void name(OctPrefillParams p) { OCT_PM_BODY(fmt) }
OCT_PM_KERNEL(octave_prefill_mma_k3v4_kernel, 4)
OCT_PM_KERNEL(octave_prefill_mma_k3v3_kernel, 3)
OCT_PM_KERNEL(octave_prefill_mma_k3v3c_kernel, 19)

// CUDA: the shared memory is dynamic (more than 48 KB): the kernel's limit is raised before each
// launch (the status is checked).
#if defined(OCT_NV)
static hipError_t pm_launch(void (*kern)(OctPrefillParams), const OctPrefillParams& p, int64_t tiles) {
  const int bytes = (int)sizeof(PmSmem);
  const cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  kern<<<dim3((unsigned)tiles, (unsigned)p.hkv, (unsigned)p.splits), dim3(PM_THREADS), bytes, 0>>>(p);
  return oct_launch_status();
}
#define OCT_PM_LAUNCH(name) pm_launch(name, p, tiles)
#else
#define OCT_PM_LAUNCH(name) (OCT_LAUNCH(name, tiles, p.hkv, p.splits, PM_THREADS, p), oct_launch_status())
#endif
hipError_t oct_launch_prefill_mma(const OctPrefillParams& p) {
  if (p.dtype == 2) return oct_launch_prefill_wmma(p);  // bf16: the WMMA tier's kernel on its model
  const int64_t tiles = ((int64_t)p.rows * p.g + PM_M - 1) / PM_M;  // below 2^31: the host checks
  hipError_t e;
  switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
    case 4: e = OCT_PM_LAUNCH(octave_prefill_mma_k3v4_kernel); break;
    case 3: e = OCT_PM_LAUNCH(octave_prefill_mma_k3v3_kernel); break;
    default: e = OCT_PM_LAUNCH(octave_prefill_mma_k3v3c_kernel); break;
  }
  if (e != hipSuccess || p.splits <= 1) return e;
  return oct_launch_prefill_mma_merge(p);
}
