// decode, mma tier: the per-warp kernels (decode_mma.h has the design). Workgroup of NW warps (4;
// 12 or 6 for k3v4's V table; 8 on grids of at most one workgroup per SM), each warp its own
// pipeline over the 16-token tiles w, w + NW, ... of the split with no workgroup barrier inside the
// token loop, passes of up to 8 queries (NT 1) or 16 (NT 2). At the end of the split the warps'
// (m, l, o) are merged in shared memory (each warp's rows there, summed in warp order by the whole
// workgroup) and the workgroup writes the partial rows coalesced.
#include "decode_mma.h"

// 4-bit V through a table in shared memory (OCT_DM_VTAB 1; 0: dm_pv's permute lookup, the emulator
// variant f16kq). Entry e (0..255) is the P·V operand register of two tokens' codes of one dim,
// e & 15 the first token's (the low half), e >> 4 the second's: the two codebook bytes as fp16
// halves, made by the permute path's own unbias, so the operands are the same bits. 32 copies of
// each entry (copy c of entry e at word 64·e + c, or 32·e + c: OCT_DM_VTROW); lane l reads copy l,
// each lane on a bank of its own: one wavefront per load. The one-N-tile kernel of 4-bit V only (DmVt), where V's decode is half the tile loop's ALU
// work: with the table a tile's V costs each lane 64 loads and about 160 ALU instructions (a shift
// and a select per load, 32 to interleave the code words), not 256 ALU instructions and 64 HADD2.
#ifndef OCT_DM_VTAB
#define OCT_DM_VTAB 1
#endif
// The table's entry rows (OCT_DM_VTROW, bytes): 256, rows of 64 words, copies 0..31 in the first
// 32, so that entry e's offset e · 256 plus the lane's copy is one byte permute of the code byte
// and the copy's byte offset (dm_vt); the table is then 64 KB, and the kernel runs 12 warps, one
// workgroup per SM. Or 128 (the emulator variant vt128): entry e's copies side by side, its offset
// e · 128 made by a shift and a select per load, 32 KB (6 warps, two workgroups per SM). Rows of 256
// bytes: big 0.3655 ms against 0.3840 (both at 16 splits), 208.2 M warp instructions against 230.2 M.
#ifndef OCT_DM_VTROW
#define OCT_DM_VTROW 256
#endif
static_assert(OCT_DM_VTROW == 256 || OCT_DM_VTROW == 128, "OCT_DM_VTROW: 256 or 128");
// Not the 8-warp kernel (known by its warp count: the table kernel's is 12 or 6): it serves grids of
// at most one workgroup per SM, whose warps walk a few tiles each (q1s100k: 6), and filling the table
// costs more than it saves there (q1s100k 0.0294 ms with it, 0.0288 without).
template <int FMT, int NT, int NW>
struct DmVt {
  enum {
    R = OCT_DM_VTAB && NT == 1 && NW != 8 && FMT == 4 ? 32 : 0,  // 4: k3v4
    ROW = R ? OCT_DM_VTROW / 4 : 0,                              // words per entry row
    WORDS = 256 * ROW
  };
};

// Shared memory of a workgroup of NW warps whose passes take NT N tiles (8·NT queries) with a V
// table of VT words: 53.6 KB for NT 1 and 4 warps, 213 KB for 12 warps and the 64 KB table (111 KB
// for 6 warps and 32 KB), more than the 48 KB of static shared memory, so CUDA builds take it as
// dynamic shared memory.
template <int NT, int NW, int VT>
struct DmSmem {
  alignas(16) uint8_t stage[NW][DM_STAGES][DM_STAGE];  // per warp: staged tiles (the merge reuses it)
  alignas(8) uint16_t qf[NT][16][32][4];                      // query B fragments: [N tile][k-step][lane] (INT8K: [8][32][8 bytes])
  float qs[8 * NT];                                           // INT8K: each query's scale qmax / 127
  alignas(8) uint16_t pt[NW][NT][8][DM_TOK];           // per warp: P' as [query][token]
  int64_t off[NW][DM_TOK];                             // per warp: slot offsets of the tile being staged
  float mw[NW][8 * NT], lw[NW][8 * NT];               // per warp: m and l of each query
  uint32_t vt[VT > 0 ? VT : 1];                        // the V table (DmVt), VT = 256·ROW words
};

// The shared memory of a per-warp kernel (format FMT, NT N tiles, NW warps).
template <int FMT, int NT, int NW>
using DmWarpSmem = DmSmem<NT, NW, DmVt<FMT, NT, NW>::WORDS>;

#if OCT_MMA_BODY

// The merged m and l of each of this lane's queries over nu units (mw, lw: [unit][query]) and the
// factor f = 2^(m_unit - m) of this unit's o (NU units; unit v's at mw[v · stride]).
template <int NT, int NU>
OCT_DEV void dm_merge_ml(const float* mw, const float* lw, int stride, int t, float mrun[NT][2], float f[NT][2],
                         float mall[NT][2], float lall[NT][2]) {
  const float ninf = -oct_inf();
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OCT_UNROLL for (int c = 0; c < 2; c++) {
      const int qc = 8 * n + 2 * t + c;
      float mx = mw[qc];
      OCT_UNROLL for (int v = 1; v < NU; v++) mx = oct_fmax(mx, mw[v * stride + qc]);
      float l = 0.0f;
      OCT_UNROLL for (int v = 0; v < NU; v++) l = oct_fma(lw[v * stride + qc], mx == ninf ? 0.0f : oct_exp2(mw[v * stride + qc] - mx), l);
      f[n][c] = mx == ninf ? 0.0f : oct_exp2(mrun[n][c] - mx);
      mall[n][c] = mx, lall[n][c] = l;
    }
  }
}

// Writes N tile n's partial rows: m and l (warp 0's lane group 0), then o = Σ over the NU units in
// unit order of the rows at rw ([unit][query][DM_RES]) / (κ·64), by all nthr threads, each thread
// four consecutive dims with one 16-byte store (a row offset per 4 dims, not per dim). The rows'
// puts are made visible by a barrier first.
template <int NT, int NU>
OCT_DEV void dm_write_rows(const OctDecodeParams& p, const DmSet& s, const float* rw, int nthr, int n, int w, int g,
                           int t, float mall[NT][2], float lall[NT][2]) {
  if (w == 0 && g == 0) {
    OCT_UNROLL for (int c = 0; c < 2; c++) {
      const int qc = 8 * n + 2 * t + c;
      if (qc < s.np) {
        float* dst = p.partials + dm_prow(p, s, s.qb + qc);
        dst[256] = mall[n][c], dst[257] = lall[n][c];
      }
    }
  }
  oct_sync();
  const int nq = s.np - 8 * n < 8 ? s.np - 8 * n : 8;
  for (int i = oct_tid(); i < 64 * nq; i += nthr) {
    const int q = i >> 6, d = 4 * (i & 63);
    float* dst = p.partials + dm_prow(p, s, s.qb + 8 * n + q);
    const int a = q * DM_RES + d + (d >> 5);  // (the 4 dims are in one run of 32)
    float x[4];
    OCT_UNROLL for (int e = 0; e < 4; e++) {
      x[e] = rw[a + e];
      OCT_UNROLL for (int u = 1; u < NU; u++) x[e] = oct_add_rn(x[e], rw[u * 8 * DM_RES + a + e]);
      x[e] = oct_mul_rn(x[e], OCT_DM_INT8K ? 0x1p-12f : 0x1p-14f);
    }
    OctU4 v;
    v.x = oct_f2u(x[0]), v.y = oct_f2u(x[1]), v.z = oct_f2u(x[2]), v.w = oct_f2u(x[3]);
    *(OctU4*)(dst + d) = v;  // (rows are 16-byte aligned: pstride % 4 == 0)
  }
}

// One pass: queries qb .. qb + np - 1 of the set (np <= 8·NT) over the split's tokens; each warp
// its own pipeline over the tiles w, w + NW, ... (the header).
template <int FMT, int NT, int NW, int VT>
OCT_DEV void dm_pass(const OctDecodeParams& p, const DmSet& s, DmSmem<NT, NW, VT>& sm, int lane, int w) {
  typedef DmFmt<FMT> F;
  const int g = lane >> 2, t = lane & 3;
  const uint32_t vlc = VT ? 4 * (lane & (DmVt<FMT, NT, NW>::R - 1)) : 0;  // the lane's copy of the V table (bytes)

  oct_sync();  // the previous pass's shared memory is read (and the V table written)
  // The set's block table row and the staging path; the warp's first two tiles are staged while
  // its queries' loads are in flight, so that the two wait on memory together.
  const int32_t* btr = p.block_table + (int64_t)s.req * p.max_blocks;
  const bool contig = dm_contig<FMT>(p);
  const int64_t tfirst = s.t0 & ~(int64_t)(DM_TOK - 1);
  const int ntile = (int)((s.te - tfirst + DM_TOK - 1) / DM_TOK);
  uint8_t* stage0 = sm.stage[w][0];
  uint8_t* stage1 = sm.stage[w][1];
  uint8_t* stage2 = sm.stage[w][2];
  uint32_t mcur = 0, mnext = 0, mlast = 0;
  auto first_tiles = [&]() {
    if (w < ntile) mcur = dm_issue<FMT>(p, s, sm.off[w], stage0, btr, tfirst + DM_TOK * w, contig, lane);
    oct_async_commit();
    if (w + NW < ntile) mnext = dm_issue<FMT>(p, s, sm.off[w], stage1, btr, tfirst + DM_TOK * (w + NW), contig, lane);
    oct_async_commit();
  };
  DmQ<NT, NW> qx;
  dm_qload<FMT, NT, NW>(p, s, lane, w, qx);
  first_tiles();
  dm_qput<FMT, NT, NW>(p, s, sm.qf, sm.qs, lane, w, qx);
  // Per lane: queries 8n + 2t + c (c = 0, 1) of each N tile: klen, running max, l; o^T fragments.
  int kq[NT][2];
  float mrun[NT][2], lrun[NT][2];
  dm_rows<NT>(p, s, t, 0, kq, mrun, lrun);
  OctMmaF32 o[16][NT];  // [dim M tile][N tile]: dims of rows g, g + 8 (dm_vdim), queries 2t, 2t + 1
  OCT_UNROLL for (int mt = 0; mt < 16; mt++)
    OCT_UNROLL for (int n = 0; n < NT; n++)
      OCT_UNROLL for (int v = 0; v < 4; v++) o[mt][n].r[v] = 0.0f;
  oct_sync();  // the query fragments are written
#if OCT_DM_INT8K
  float qsc[NT][2];
  OCT_UNROLL for (int n = 0; n < NT; n++)
    OCT_UNROLL for (int c = 0; c < 2; c++) qsc[n][c] = sm.qs[8 * n + 2 * t + c];
#endif

  // The kernels of one workgroup per SM (8 and 12 warps) load the block id of the tile an iteration
  // stages one iteration before: the compare that uses it is the loop's longest wait otherwise
  // (2.5 % of big's stall samples). q1s100k 0.0289 -> 0.0275 ms on the 8-warp kernel, big 0.3655 ->
  // 0.3561 on the 12-warp kernel; nothing on big's 6-warp kernel of two per SM (0.4110 either way).
  const bool bidpre = NW >= 8;
  int32_t bpre = bidpre && w + 2 * NW < ntile ? dm_tile_bid<FMT>(p, btr, tfirst + DM_TOK * (w + 2 * NW), contig) : -1;
  for (int it = w; it < ntile; it += NW) {
    const int64_t ts = tfirst + (int64_t)DM_TOK * it;
    if (it + 2 * NW < ntile) {
      if (bidpre) {
        const int32_t b = bpre;
        if (it + 3 * NW < ntile) bpre = dm_tile_bid<FMT>(p, btr, ts + 3 * DM_TOK * NW, contig);
        mlast = dm_issue<FMT>(p, s, sm.off[w], stage2, btr, ts + 2 * DM_TOK * NW, contig, lane, b);
      } else {
        mlast = dm_issue<FMT>(p, s, sm.off[w], stage2, btr, ts + 2 * DM_TOK * NW, contig, lane);
      }
    }
    oct_async_commit();
    oct_async_wait<2>();  // this tile's copies (the next two tiles' may still be in flight)
    oct_sync_wave();
    const uint8_t* rg = stage0 + g * F::ROW;
    const uint8_t* r8 = stage0 + (g + 8) * F::ROW;
    float ksg[4], ks8[4], vsg, vs8;
    dm_scales<FMT>(rg, r8, ksg, ks8, vsg, vs8);

    // Scores: element i of N tile n is token g + 8(i >> 1), query 8n + 2t + (i & 1); the blocks'
    // shares summed in block order.
    float sc[NT][4];
    OCT_UNROLL for (int b = 0; b < 4; b++) {
      // (mutant OCT_MUT_DECODE_MMA_KSCALE_TOKEN: token g's scale for token g + 8 too)
      const float k8 = OCT_MUTANT(OCT_MUT_DECODE_MMA_KSCALE_TOKEN) ? ksg[b] : ks8[b];
      float x[NT][4];
      dm_kblock<FMT, NT>(rg, r8, b, t, lane, sm.qf, ksg[b], k8, x);
      OCT_UNROLL for (int n = 0; n < NT; n++)
        OCT_UNROLL for (int v = 0; v < 4; v++) sc[n][v] = b == 0 ? x[n][v] : oct_add_rn(sc[n][v], x[n][v]);
    }
#if OCT_DM_INT8K
    OCT_UNROLL for (int n = 0; n < NT; n++)  // times the query's scale (then sm_scale·log2(e)/64 below)
      OCT_UNROLL for (int v = 0; v < 4; v++) sc[n][v] = oct_mul_rn(sc[n][v], qsc[n][v & 1]);
#endif

    // Online softmax per query; P' through the warp's transpose buffer; P·V.
    float alpha[NT][2];
    const bool rescale = dm_softmax<NT>(p, sc, mcur, ts, g, t, kq, mrun, lrun, alpha, vsg, vs8, sm.pt[w]);
    oct_sync_wave();
    OctMmaB16 pb[NT];
    dm_pfrag<NT>(sm.pt[w], g, t, pb);
    if (rescale) dm_rescale<NT, 16>(o, alpha);
    const uint8_t* ru0 = stage0 + (2 * t) * F::ROW;
    OCT_UNROLL for (int m = 0; m < 4; m++) dm_pv<FMT, NT, DmVt<FMT, NT, NW>::R, DmVt<FMT, NT, NW>::ROW>(ru0, g, m, pb, &o[4 * m], sm.vt, vlc);
    oct_sync_wave();  // stage0 and pt are read: the tile after next may overwrite them
    uint8_t* tmp = stage0;
    stage0 = stage1, stage1 = stage2, stage2 = tmp;
    mcur = mnext, mnext = mlast;
  }
  oct_async_wait<0>();

  // Merge the warps: m and l of each query, then o, one N tile at a time through the stage area.
  OCT_UNROLL for (int n = 0; n < NT; n++)
    OCT_UNROLL for (int c = 0; c < 2; c++)
      if (g == 0) sm.mw[w][8 * n + 2 * t + c] = mrun[n][c], sm.lw[w][8 * n + 2 * t + c] = lrun[n][c];
  oct_sync();
  float f[NT][2], mall[NT][2], lall[NT][2];
  dm_merge_ml<NT, NW>(&sm.mw[0][0], &sm.lw[0][0], 8 * NT, t, mrun, f, mall, lall);
  // Each warp's o · f as rows [warp][query][DM_RES words: dim d at d + d / 32] (the skew and the
  // row stride, 8 mod 32 words, keep a warp's stores — 8 dim groups 32 apart × 4 queries — on 32
  // banks); then the whole workgroup sums the warps in warp order, ((o0 + o1) + o2) + o3, and
  // writes the rows coalesced, consecutive threads at consecutive dims. (Warp 0 alone summing and
  // storing from its registers, one dim per lane group and query, is 32 sectors per store
  // instruction: on the H200 that end of a pass is a third of q1s100k's decode, 51.9 against
  // 34.2 µs coalesced.)
  float* rw = (float*)&sm.stage[0][0][0];
  static_assert(NW * 8 * DM_RES * 4 <= (int)sizeof(sm.stage), "merge buffer");
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OCT_UNROLL for (int m = 0; m < 4; m++) dm_put_rows<FMT, NT>(rw + w * 8 * DM_RES, &o[4 * m], n, m, g, t, f[n]);
    dm_write_rows<NT, NW>(p, s, rw, 32 * NW, n, w, g, t, mall, lall);
    if (n + 1 < NT) oct_sync();  // rw is read (the next pass starts with a barrier of its own)
  }
}

// The pass of the per-warp kernels (dm_body).
template <int FMT, int NT, int NW, int VT>
OCT_DEV void dm_run_pass(const OctDecodeParams& p, const DmSet& s, DmSmem<NT, NW, VT>& sm, int lane, int w) {
  dm_pass<FMT, NT, NW>(p, s, sm, lane, w);
}

// The V table (DmVt, dm_pv): entry e, the codebook bytes of codes e & 15 and e >> 4 (oct_cb4n's
// table, its half chosen by the code's bit 3) as oct_h4_pairs makes them.
OCT_DEV uint32_t dm_ventry(uint32_t e) {
  const uint32_t a = e & 15, b = e >> 4;
  const uint32_t ba = oct_perm8n(a & 8 ? OCT_CB4B_2 : OCT_CB4B_0, a & 8 ? OCT_CB4B_3 : OCT_CB4B_1, a & 7) & 255;
  const uint32_t bb = oct_perm8n(b & 8 ? OCT_CB4B_2 : OCT_CB4B_0, b & 8 ? OCT_CB4B_3 : OCT_CB4B_1, b & 7) & 255;
  uint32_t lo, hi;
  // (mutant OCT_MUT_DECODE_MMA_VTAB_SWAP: the halves swapped)
  oct_h4_pairs(OCT_MUTANT(OCT_MUT_DECODE_MMA_VTAB_SWAP) ? bb | ba << 16 : ba | bb << 16, lo, hi);
  return lo;
}
// Fills the V table's 32 copies, before the first pass's barrier (which orders the writes before
// the reads): each thread the entry of each word it writes (21 or 22 in rows of 64 words and 12
// warps; 43 in rows of 32 and 6 warps). (Computing each entry once and broadcasting it by shuffles
// makes big 0.411 ms, not 0.393: nvcc's tile loop comes out 47 instructions longer.)
template <int FMT, int NT, int NW, int VT>
OCT_DEV void dm_vfill(DmSmem<NT, NW, VT>& sm) {
  const int r = DmVt<FMT, NT, NW>::R, row = DmVt<FMT, NT, NW>::ROW;
  if (r == 0) return;
  // (rows of 64 words: the 32 copies only; i = 32e + c to word 64e + c)
  for (int i = oct_tid(); i < 256 * r; i += 32 * NW) sm.vt[row == r ? i : i + (i & ~31)] = dm_ventry((uint32_t)i / r);
}

#endif

// The per-warp kernels: NT 1 (up to 8 queries per pass, G·query_group <= 8) at 3 workgroups of 4
// warps per SM (k3v4, with the V table: 1 of 12), NT 2 (16) at 2, NT 1 with 8 warps at 1 (grids of
// at most one workgroup per SM).
enum {
  DM_NW1 = 4,   // warps per workgroup of the NT 1 kernels on grids of more workgroups than SMs
  DM_OCC1 = 3,  // workgroups per SM the NT 1 kernels are compiled for (a register budget: 168)
  DM_OCC2 = 2,  // the same for the NT 2 kernels
  // The same for the NT 1 kernel of 4-bit V with the V table (DmVt): in rows of 128 bytes (32 KB)
  // three workgroups of 4 warps do not fit an SM's shared memory, two of 6 do (111 KB each); in
  // rows of 256 bytes (64 KB) one of 12 (213 KB): 12 warps per SM each way, and each warp's loads
  // of the table on 32 banks (big 0.366 ms in rows of 256 bytes at 12 warps, 0.394 in rows of 128
  // at 6). A workgroup per SM takes a split count of whole waves (bench: AutoSplitsMMA).
  DM_NW1V = OCT_DM_VTAB ? (OCT_DM_VTROW == 256 ? 12 : 6) : DM_NW1,
  DM_OCC1V = DM_NW1V == 12 ? 1 : DM_NW1V == 6 ? 2 : DM_OCC1,
};
OCT_DM_KERNEL(octave_decode_mma_k3v4_kernel, 4, 1, DM_NW1V, DmWarpSmem, DM_OCC1V)
OCT_DM_KERNEL(octave_decode_mma_k3v3_kernel, 3, 1, DM_NW1, DmWarpSmem, DM_OCC1)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_kernel, 19, 1, DM_NW1, DmWarpSmem, DM_OCC1)
OCT_DM_KERNEL(octave_decode_mma_k3v4_n2_kernel, 4, 2, 4, DmWarpSmem, DM_OCC2)
OCT_DM_KERNEL(octave_decode_mma_k3v3_n2_kernel, 3, 2, 4, DmWarpSmem, DM_OCC2)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_n2_kernel, 19, 2, 4, DmWarpSmem, DM_OCC2)
OCT_DM_KERNEL(octave_decode_mma_k3v4_w8_kernel, 4, 1, 8, DmWarpSmem, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3_w8_kernel, 3, 1, 8, DmWarpSmem, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_w8_kernel, 19, 1, 8, DmWarpSmem, 1)

hipError_t oct_launch_decode_mma_warp(const OctDecodeParams& p, int64_t chunks, int nt, bool w8) {
  if (w8) {
    switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
      case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_w8_kernel, 4, 1, 8, DmWarpSmem);
      case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_w8_kernel, 3, 1, 8, DmWarpSmem);
      default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_w8_kernel, 19, 1, 8, DmWarpSmem);
    }
  }
  if (nt == 1) {
    switch (p.fmt) {
      case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_kernel, 4, 1, DM_NW1V, DmWarpSmem);
      case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_kernel, 3, 1, DM_NW1, DmWarpSmem);
      default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_kernel, 19, 1, DM_NW1, DmWarpSmem);
    }
  }
  switch (p.fmt) {
    case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_n2_kernel, 4, 2, 4, DmWarpSmem);
    case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_n2_kernel, 3, 2, 4, DmWarpSmem);
    default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_n2_kernel, 19, 2, 4, DmWarpSmem);
  }
}
