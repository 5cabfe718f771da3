// decode, mma tier: the quad kernel (decode_mma.h has the design), for chunks of more than 8
// queries (MTP rows): passes of up to 24 queries (three N tiles) by NQ quads of 4 warps, each tile
// decoded once for all of them (dq_pass).
#include "decode_mma.h"

enum {
  // The quad kernel's quads per workgroup (DQ_NQ: 4·DQ_NQ warps) at one workgroup per SM: 168
  // registers and no spills; q4s100k 0.0510 ms, against 0.0528 with 4 quads (128 registers,
  // spills) and 0.068 with 2.
  DQ_NQ = 3,
};
// The quad kernel's shared memory (dq_pass: passes of up to 24 queries by NQ quads of 4 warps):
// 146 KB for NQ 3, 76 KB of it the quads' row buffers of the write-out (dq_write_rows).
template <int NQ>
struct DqSmem {
  alignas(16) uint8_t stage[NQ][DM_STAGES][DM_STAGE];  // per quad: staged tiles (the merge reuses it)
  alignas(8) uint16_t qf[DQ_NT][16][32][4];            // query B fragments, as DmSmem's
  float qs[8 * DQ_NT];                                 // INT8K: each query's scale
  float ex[NQ][4][4 * DQ_NT][32];                      // per quad: warp b's K block b score shares [b][N tile · 4 + element][lane]
  alignas(8) uint16_t pq[NQ][DQ_NT][8][DM_TOK];        // per quad: P' as [N tile][query][token]
  float al[NQ][8 * DQ_NT];                             // per quad: each query's alpha of the step
  uint32_t msk[NQ][DM_STAGES];                         // per quad: the staged tiles' masks (a ring like stage)
  int64_t off[4 * NQ][DM_TOK];                         // per warp: slot offsets of the tile being staged
  float mw[NQ][8 * DQ_NT], lw[NQ][8 * DQ_NT];          // per quad: m and l of each query
  float rq[NQ][DQ_NT][8][DM_RES];                      // per quad: its o rows for the write-out (76 KB for NQ 3)
};

// The shared memory of a quad kernel (format FMT, NT = DQ_NT, NW = 4·NQ warps).
template <int FMT, int NT, int NW>
using DqQuadSmem = DqSmem<NW / 4>;

#if OCT_MMA_BODY

// The quad kernel's write-out, after one barrier. Per query, each quad's m and l
// (sm.mw, sm.lw) and unscaled o rows (sm.rq); a thread of four dims merges the quads' rows as
// dm_merge_ml, dm_put_rows and dm_write_rows do (the same operations in the same order, so the
// same bits): M = the quads' max of m, f_u = 2^(m_u - M) (0 when M = -inf), o = Σ_u (o_u · f_u) in
// quad order, times 1/(κ·64); the thread of dims 0..3 also writes M and L = Σ_u l_u · f_u.
template <int NQ>
OCT_DEV void dq_write_rows(const OctDecodeParams& p, const DmSet& s, const DqSmem<NQ>& sm) {
  const float ninf = -oct_inf();
  for (int i = oct_tid(); i < 64 * s.np; i += 128 * NQ) {
    const int q = i >> 6, d = 4 * (i & 63), n = q >> 3, a = (q & 7) * DM_RES + d + (d >> 5);
    float mu[NQ], f[NQ], mx = sm.mw[0][q];
    mu[0] = mx;
    OCT_UNROLL for (int u = 1; u < NQ; u++) mu[u] = sm.mw[u][q], mx = oct_fmax(mx, mu[u]);
    OCT_UNROLL for (int u = 0; u < NQ; u++) f[u] = mx == ninf ? 0.0f : oct_exp2(mu[u] - mx);
    float* dst = p.partials + dm_prow(p, s, s.qb + q);
    if (d == 0) {
      float l = 0.0f;
      OCT_UNROLL for (int u = 0; u < NQ; u++) l = oct_fma(sm.lw[u][q], f[u], l);
      dst[256] = mx, dst[257] = l;
    }
    float x[4];
    OCT_UNROLL for (int e = 0; e < 4; e++) {
      x[e] = oct_mul_rn((&sm.rq[0][n][0][0])[a + e], f[0]);
      // (mutant OCT_MUT_DECODE_MMA_MERGE_FACTOR: quad 0's factor for every quad's row)
      OCT_UNROLL for (int u = 1; u < NQ; u++)
        x[e] = oct_add_rn(x[e], oct_mul_rn((&sm.rq[u][n][0][0])[a + e], f[OCT_MUTANT(OCT_MUT_DECODE_MMA_MERGE_FACTOR) ? 0 : u]));
      x[e] = oct_mul_rn(x[e], OCT_DM_INT8K ? 0x1p-12f : 0x1p-14f);
    }
    OctU4 v;
    v.x = oct_f2u(x[0]), v.y = oct_f2u(x[1]), v.z = oct_f2u(x[2]), v.w = oct_f2u(x[3]);
    *(OctU4*)(dst + d) = v;
  }
}

// The barrier of quad qd's 128 threads: named barrier 1 + qd on CUDA, so that the quads of a
// workgroup need not run in step. The emulator takes the workgroup's: its quads run the same number
// of steps, so the stronger barrier cannot deadlock.
OCT_DEV void dq_sync(int qd) {
#if defined(OCT_NV)
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + qd) : "memory");
#else
  (void)qd;
  oct_sync();
#endif
}

// One pass of the quad kernel: queries qb .. qb + np - 1 of the set (np <= 24, three N tiles) over
// the split's tokens, by NQ quads of 4 warps. Quad qd walks the tiles qd, qd + NQ, ... in steps of
// three barriers of the quad (dq_sync); its warp 3 stages the tiles (two ahead, while warps 0..2
// run the softmax) and its 4 warps share each tile:
//   - warp wq computes K block wq's share of the 24 queries' scores (dm_kblock) into shared memory;
//   - warp n < 3 sums N tile n's four shares in block order (the per-warp kernel's scores, bit for
//     bit) and runs its softmax (dm_softmax), writing P' and alpha to shared memory;
//   - warp wq does P·V for the dims of V lanes 4g + wq of all 24 queries.
// So each tile's K and V is decoded once for all 24 queries (the per-warp kernel's passes of 12 on
// two workgroups decoded it twice), no softmax is computed twice, and a warp holds 4 of the 16 dim
// tiles (48 accumulator registers for 24 queries, against 128 for 16). At the end the quads'
// (m, l, o) are merged in quad order as the per-warp kernel merges its warps.
template <int FMT, int NQ>
OCT_DEV void dq_pass(const OctDecodeParams& p, const DmSet& s, DqSmem<NQ>& sm, int lane, int w) {
  typedef DmFmt<FMT> F;
  enum { NT = DQ_NT };
  const int g = lane >> 2, t = lane & 3, qd = w >> 2, wq = w & 3;
  const int sn = wq < NT ? wq : 0;  // the N tile whose softmax this warp runs (warp 3: none)

  oct_sync();  // the previous pass's shared memory is read
  const int32_t* btr = p.block_table + (int64_t)s.req * p.max_blocks;
  const bool contig = dm_contig<FMT>(p);
  const int64_t tfirst = s.t0 & ~(int64_t)(DM_TOK - 1);
  const int ntile = (int)((s.te - tfirst + DM_TOK - 1) / DM_TOK);
  // (mutant OCT_MUT_DECODE_MMA_QUAD_STEPS: ⌊ntile / NQ⌋ steps, the last tiles of a split whose tile
  // count is not a multiple of NQ dropped)
  const int steps = OCT_MUTANT(OCT_MUT_DECODE_MMA_QUAD_STEPS) ? ntile / NQ : (ntile + NQ - 1) / NQ;
  // Warp 3 stages the quad's tiles, the whole tile alone; the tile masks go through shared memory
  // (sm.msk, a ring like the stages). It loads the block ids of its first three tiles before the
  // queries, and the tile after next's one step before it is issued (bnext), so that no issue waits
  // on a block-table load.
  const bool stager = wq == 3;
  uint8_t* stage0 = sm.stage[qd][0];
  uint8_t* stage1 = sm.stage[qd][1];
  uint8_t* stage2 = sm.stage[qd][2];
  auto dq_bid = [&](int i) -> int32_t {  // the block id of tile i (dm_tile_bid's)
    return stager && i < ntile ? dm_tile_bid<FMT>(p, btr, tfirst + DM_TOK * (int64_t)i, contig) : -1;
  };
  auto dq_issue = [&](uint8_t* st, int i, int32_t bid) -> uint32_t {
    const int64_t ti = tfirst + DM_TOK * (int64_t)i;
    return dm_issue<FMT>(p, s, sm.off[w], st, btr, ti, contig, lane, bid);
  };
  const int32_t b0 = dq_bid(qd), b1 = dq_bid(qd + NQ);
  int32_t bnext = dq_bid(qd + 2 * NQ);
  auto first_tiles = [&]() {  // (while the queries load)
    if (!stager) return;
    uint32_t m0 = 0, m1 = 0;
    if (qd < ntile) m0 = dq_issue(stage0, qd, b0);
    oct_async_commit();
    if (qd + NQ < ntile) m1 = dq_issue(stage1, qd + NQ, b1);
    oct_async_commit();
    if (wq == 3 && lane == 0) sm.msk[qd][0] = m0, sm.msk[qd][1] = m1;
  };
  DmQ<NT, 4 * NQ> qx;
  dm_qload<FMT, NT, 4 * NQ>(p, s, lane, w, qx);
  first_tiles();
  dm_qput<FMT, NT, 4 * NQ>(p, s, sm.qf, sm.qs, lane, w, qx);
  int kq[1][2];
  float mrun[1][2], lrun[1][2];
  dm_rows<1>(p, s, t, sn, kq, mrun, lrun);
  OctMmaF32 o[4][NT];  // M tiles 4wq .. 4wq + 3 (the dims of V lane 4g + wq)
  OCT_UNROLL for (int mt = 0; mt < 4; mt++)
    OCT_UNROLL for (int n = 0; n < NT; n++)
      OCT_UNROLL for (int v = 0; v < 4; v++) o[mt][n].r[v] = 0.0f;
  oct_sync();  // the query fragments are written
#if OCT_DM_INT8K
  float qsc[2];
  OCT_UNROLL for (int c = 0; c < 2; c++) qsc[c] = sm.qs[8 * sn + 2 * t + c];
#endif

  for (int step = 0; step < steps; step++) {
    const int it = NQ * step + qd;
    const int64_t ts = tfirst + (int64_t)DM_TOK * it;
    const int mi = step % 3, mi2 = (step + 2) % 3;  // the rings' slots of this step's tile and of the one issued now
    oct_async_wait<1>();  // this warp's copies of this step's tile (the next one's may be in flight)
    dq_sync(qd);          // A: the quad's copies landed; its last step's reads of stage2, pq, al and msk are done
    const bool act = it < ntile;
    const uint8_t* rg = stage0 + g * F::ROW;
    const uint8_t* r8 = stage0 + (g + 8) * F::ROW;
    float vsg = 0.0f, vs8 = 0.0f;
    if (act) {  // K block wq's share of every query's scores
      float kb, k8b;
      dm_scale1<FMT>(rg, r8, wq, kb, k8b, vsg, vs8);
      // (mutant OCT_MUT_DECODE_MMA_KSCALE_TOKEN: token g's scale for token g + 8 too)
      float x[NT][4];
      dm_kblock<FMT, NT>(rg, r8, wq, t, lane, sm.qf, kb, OCT_MUTANT(OCT_MUT_DECODE_MMA_KSCALE_TOKEN) ? kb : k8b, x);
      OCT_UNROLL for (int n = 0; n < NT; n++)
        OCT_UNROLL for (int v = 0; v < 4; v++) sm.ex[qd][wq][4 * n + v][lane] = x[n][v];
    }
    dq_sync(qd);  // B: the four blocks' shares are written
    if (wq == 3) {  // warp 3 has no softmax: it stages the tile after next meanwhile
      uint32_t m2 = 0;
      if (it + 2 * NQ < ntile) m2 = dq_issue(stage2, it + 2 * NQ, bnext);
      // (mutant OCT_MUT_DECODE_MMA_STALE_BID: the block id of the tile just issued kept for the next)
      bnext = dq_bid(it + (OCT_MUTANT(OCT_MUT_DECODE_MMA_STALE_BID) ? 2 : 3) * NQ);
      oct_async_commit();
      if (lane == 0) sm.msk[qd][mi2] = m2;
    }
    if (act && wq < NT) {  // N tile sn's scores (the four shares in block order) and softmax
      float sc[1][4];
      OCT_UNROLL for (int v = 0; v < 4; v++) {
        float y = sm.ex[qd][0][4 * sn + v][lane];
        OCT_UNROLL for (int b = 1; b < 4; b++) y = oct_add_rn(y, sm.ex[qd][b][4 * sn + v][lane]);
#if OCT_DM_INT8K
        y = oct_mul_rn(y, qsc[v & 1]);  // times the query's scale
#endif
        sc[0][v] = y;
      }
      float alpha[1][2];
      dm_softmax<1>(p, sc, sm.msk[qd][mi], ts, g, t, kq, mrun, lrun, alpha, vsg, vs8, &sm.pq[qd][sn]);
      if (g == 0) sm.al[qd][8 * sn + 2 * t] = alpha[0][0], sm.al[qd][8 * sn + 2 * t + 1] = alpha[0][1];
    }
    dq_sync(qd);  // C: P' and alpha of every query are written
    if (act) {  // P·V of the dims of V lane 4g + wq for every query
      OctMmaB16 pb[NT];
      dm_pfrag<NT>(sm.pq[qd], g, t, pb);
      float alpha[NT][2];
      bool rescale = false;
      OCT_UNROLL for (int n = 0; n < NT; n++)
        OCT_UNROLL for (int c = 0; c < 2; c++) {
          alpha[n][c] = sm.al[qd][8 * n + 2 * t + c];
          rescale = rescale || alpha[n][c] != 1.0f;
        }
      if (rescale) dm_rescale<NT, 4>(o, alpha);
      dm_pv<FMT, NT>(stage0 + (2 * t) * F::ROW, g, wq, pb, o);
    }
    uint8_t* tmp = stage0;
    stage0 = stage1, stage1 = stage2, stage2 = tmp;
  }
  oct_async_wait<0>();

  // Merge the quads: warp n of a quad holds N tile n's m and l.
  if (wq < NT && g == 0)
    OCT_UNROLL for (int c = 0; c < 2; c++) sm.mw[qd][8 * sn + 2 * t + c] = mrun[0][c], sm.lw[qd][8 * sn + 2 * t + c] = lrun[0][c];
  // Each quad's o as it is, in rows of its own (sm.rq[qd], read by nothing else before this), then
  // one barrier, then the write-out scales each quad's row by its factor as dm_put_rows would have.
  OCT_UNROLL for (int n = 0; n < NT; n++) dm_put_rows<FMT, NT, false>(&sm.rq[qd][n][0][0], o, n, wq, g, t, nullptr);
  oct_sync();
  dq_write_rows<NQ>(p, s, sm);
}

// The pass of the quad kernel (dm_body); it fills nothing before its first pass.
template <int FMT, int NT, int NW, int NQ>
OCT_DEV void dm_run_pass(const OctDecodeParams& p, const DmSet& s, DqSmem<NQ>& sm, int lane, int w) {
  dq_pass<FMT, NQ>(p, s, sm, lane, w);
}
template <int FMT, int NT, int NW, int NQ>
OCT_DEV void dm_vfill(DqSmem<NQ>&) {}

#endif

// One kernel per format, one workgroup per SM.
OCT_DM_KERNEL(octave_decode_mma_k3v4_quad_kernel, 4, DQ_NT, 4 * DQ_NQ, DqQuadSmem, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3_quad_kernel, 3, DQ_NT, 4 * DQ_NQ, DqQuadSmem, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_quad_kernel, 19, DQ_NT, 4 * DQ_NQ, DqQuadSmem, 1)

hipError_t oct_launch_decode_mma_quad(const OctDecodeParams& p, int64_t chunks) {
  switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
    case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_quad_kernel, 4, DQ_NT, 4 * DQ_NQ, DqQuadSmem);
    case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_quad_kernel, 3, DQ_NT, 4 * DQ_NQ, DqQuadSmem);
    default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_quad_kernel, 19, DQ_NT, 4 * DQ_NQ, DqQuadSmem);
  }
}
