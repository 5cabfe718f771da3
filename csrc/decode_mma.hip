// decode, mma tier (sm_90; docs/contract.md §3.3, profile int8rowq, or wmma-f16q with
// OCT_DM_INT8K=0: csrc/octave_params.h): split-KV attention over the packed cache with NVIDIA's
// warp-level mma.sync (scores on m16n8k32 s8, or m16n8k16 f16; P·V on m16n8k16, fp32 accumulation),
// writing split partials (§3.4 layout) that the portable reduce merges. On CUDA builds the
// instructions, on the emulator their model (octave_mma.h); HIP builds get stubs. docs/kernels.md,
// "The mma tier: decode", has the design and its budget; in short:
//
// Workgroup (row chunk, split, KV head), NW warps (4, 12 for k3v4's V table, or 8 on small grids). The queries of a row set (the
// chunk's rows of one request × the G heads of the KV head) are taken 8 at a time (a "pass": one
// 8-column N tile); chunks of more than 8 queries (MTP rows) go to the quad kernel (dq_pass below:
// passes of up to 24, three N tiles, each tile's work split over a quad of 4 warps). When a chunk
// has more queries than one pass takes, its passes go to ⌈G·query_group / pass width⌉ workgroups
// side by side (p.wpc), not one after another. In the per-warp kernel each warp is its own pipeline over the 16-token tiles ts = 16k, 16(k + 4), ... of the
// split (tiles aligned to multiples of 16; tokens outside the split masked), with no workgroup
// barrier inside the token loop:
//   - staging: the tile's raw slots go to the warp's shared memory with cp.async, one tile ahead:
//     16-byte copies of the whole tile when its 16 slots are contiguous (block size a multiple of
//     16, token stride = slot bytes, 16-byte aligned block and head strides), else per slot in
//     units of 8 bytes (4 for compact);
//   - scores S^T = K·Q^T (the "swapped" product: M = 16 tokens, N = 8 queries, so G = 6 wastes no
//     rows): per 64-dim K block two m16n8k32 on the K codebook bytes (byte permute lookup) against
//     the int8 rotated query (one scale per query), an exact int32 dot, in the permuted dim order
//     of dec_qpos; the block's dot times the token's K block scale, summed over the blocks in
//     order, times the query's scale and sm_scale·log2(e)/64 — int8rowq's arithmetic.
//     (OCT_DM_INT8K=0: four m16n8k16 per block on the codebook bytes as fp16 — the table biased
//     by 128, spread into fp16 halves 0x64bb, then one f16x2 subtraction, all exact — against the
//     fp16 query, an fp32 dot: wmma-f16q's arithmetic);
//   - online softmax in base 2 in registers: lane (g, t) holds tokens g, g + 8 of queries 2t,
//     2t + 1; tile max and Σ p by butterflies over g; P' = fp16(fp32(p · V scale) · κ), κ = 64
//     (256 for wmma-f16q), through a 256-byte per-warp transpose into the B operand of P·V;
//   - O^T += V^T·P'^T: M = 16 dims, N = 8 queries, K = 16 tokens; lane g's V bytes are dims of V
//     lanes 4g..4g+3 (dec_vbytes), paired across tokens by byte permutes into fp16 halves; in the
//     one-N-tile kernel of 4-bit V (k3v4, 12 warps) each operand register is instead one load from a
//     256-entry table in shared memory, indexed by the two tokens' codes of a dim (OCT_DM_VTAB).
// At the end of the split the warps' (m, l, o) are merged in shared memory (each warp's rows there,
// summed in warp order by the whole workgroup) and the workgroup writes the partial rows coalesced,
// o = Σ P'·codebook / (κ·64).
#include "octave_lane.h"
#include "octave_mma.h"
#include "octave_params.h"
#include "octave_slot.h"

// Warps per workgroup (NW), each its own pipeline over the split's tiles: 4, or 8 for passes of 8
// queries when the grid has no more workgroups than the device has SMs (the latency shapes: one
// workgroup per SM; q1s100k's decode takes 26.9 µs with 8 warps, 33.8 with 4, while 8 warps
// everywhere make big 0.75 ms, not 0.57). OCT_DM_W8 = 1 takes 8 for every pass of 8: the emulator
// variants f16k and w8 (mk/kernels.mk), so that `make emu-test` runs the 8-warp kernel on the
// grids that the default build gives the others.
#ifndef OCT_DM_W8
#define OCT_DM_W8 0
#endif
// Chunks of more than 8 queries (MTP rows) on the quad kernel (1: dq_pass, passes of up to 24
// queries, each tile decoded once for all of them) or on the per-warp kernel's passes of up to 16
// (0: the emulator variants f16k and w8, which test those passes).
#ifndef OCT_DM_QUAD
#define OCT_DM_QUAD 1
#endif
enum {
  // k3v4 takes the 8-warp kernel only for splits of at most DM_W8TOK tokens; longer splits on at
  // most one workgroup per SM go to the V table's kernel (12 warps, also one per SM), whose table
  // fill pays off over their tiles.
  DM_W8TOK = 2048,
  // The quad kernel's quads per workgroup (DQ_NQ: 4·DQ_NQ warps) at one workgroup per SM: 168
  // registers and no spills; q4s100k 0.0510 ms, against 0.0528 with 4 quads (128 registers,
  // spills) and 0.068 with 2.
  DQ_NQ = 3,
};
enum {
  DM_TOK = 16,          // tokens per tile
  DM_STAGE = 16 * 248,  // bytes of one staged tile (the largest slot)
  DM_STAGES = 3,        // staged tiles per warp: two in flight while one is computed
  DM_RES = 264,         // words per merged row in the write-out
};

// 4-bit V through a table in shared memory (OCT_DM_VTAB 1; 0: dm_pv's permute lookup, the emulator
// variant f16kq). Entry e (0..255) is the P·V operand register of two tokens' codes of one dim,
// e & 15 the first token's (the low half), e >> 4 the second's: the two codebook bytes as fp16
// halves, made by the permute path's own unbias, so the operands are the same bits. 32 copies side
// by side (word 32·e + c); lane l reads copy l, each lane on a bank of its own: one wavefront per
// load. The one-N-tile kernel of 4-bit V only (DmVt), where V's decode is half the tile loop's ALU
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
template <int NT, int NW, int VT = 0>
struct DmSmem {
  alignas(16) uint8_t stage[NW][DM_STAGES][DM_STAGE];  // per warp: staged tiles (the merge reuses it)
  alignas(8) uint16_t qf[NT][16][32][4];                      // query B fragments: [N tile][k-step][lane] (INT8K: [8][32][8 bytes])
  float qs[8 * NT];                                           // INT8K: each query's scale qmax / 127
  alignas(8) uint16_t pt[NW][NT][8][DM_TOK];           // per warp: P' as [query][token]
  int64_t off[NW][DM_TOK];                             // per warp: slot offsets of the tile being staged
  float mw[NW][8 * NT], lw[NW][8 * NT];               // per warp: m and l of each query
  uint32_t vt[VT > 0 ? VT : 1];                        // the V table (DmVt), VT = 256·ROW words
};

// The quad kernel's shared memory (dq_pass: passes of up to 24 queries by NQ quads of 4 warps):
// 146 KB for NQ 3, 76 KB of it the quads' row buffers of the write-out (dq_write_rows).
enum { DQ_NT = 3 };
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

// The shared memory of a workgroup kind: NQ 0 the per-warp kernel's, else the quad kernel's.
template <int FMT, int NT, int NW, int NQ>
struct DmPick {
  typedef DqSmem<NQ> T;
};
template <int FMT, int NT, int NW>
struct DmPick<FMT, NT, NW, 0> {
  typedef DmSmem<NT, NW, DmVt<FMT, NT, NW>::WORDS> T;
};

#if OCT_MMA_BODY

template <int FMT>
struct DmFmt : SlotCopy<FMT> {
  static_assert(16 * SlotCopy<FMT>::ROW <= DM_STAGE, "staging layout");
  static_assert((FMT == 4) == (SlotCopy<FMT>::VBITS == 4), "DmVt: format 4 is the one of 4-bit V");
};

// Two fp16 values at p (4-byte aligned) as one register (memcpy: no type punning on the emulator).
OCT_DEV uint32_t dm_ld32(const uint16_t* p) {
  uint32_t x;
  __builtin_memcpy(&x, __builtin_assume_aligned(p, 4), 4);
  return x;
}
// Two halves (lo, hi) stored as one 4-byte word at p (4-byte aligned): the store dm_ld64's loads
// pair with.
// (nvcc's front end fails on __builtin_assume_aligned of a non-const pointer: a cast there.)
OCT_DEV void dm_st32(uint16_t* p, uint32_t v) {
#if defined(OCT_NV)
  *reinterpret_cast<uint32_t*>(p) = v;
#else
  __builtin_memcpy(__builtin_assume_aligned(p, 4), &v, 4);
#endif
}
// Four fp16 values at p (8-byte aligned) as two registers, one load.
OCT_DEV OctMmaB16 dm_ld64(const uint16_t* p) {
  OctMmaB16 x;
  __builtin_memcpy(&x.r[0], __builtin_assume_aligned(p, 8), 8);
  return x;
}

// The A-operand halves of K block b for lane group t (wmma-f16q): k-step j of the block uses
// lo[j] (columns 2t, 2t + 1) and hi[j] (columns 2t + 8, 2t + 9), word j of dm_kwords as fp16.
template <int FMT>
OCT_DEV void dm_kfrag(const uint8_t* row, int b, int t, uint32_t lo[4], uint32_t hi[4]) {
  uint32_t w[4];
  dec_kwords<FMT, true>(row, b, t, w);
  OCT_UNROLL for (int j = 0; j < 4; j++) oct_h4_codes(w[j], lo[j], hi[j]);
}

// Writes the partial row of an empty query: o = 0, m = -inf, l = 0 (one warp, lane l dims 8l..8l+7).
OCT_DEV void dm_write_empty(float* dst, int lane) {
  OctU4 z;
  z.x = z.y = z.z = z.w = 0u;
  *(OctU4*)(dst + 8 * lane) = z;
  *(OctU4*)(dst + 8 * lane + 4) = z;
  if (lane == 0) dst[256] = -oct_inf(), dst[257] = 0.0f;
}

// What a pass needs to know about the row set.
struct DmSet {
  int rows;         // 4 bits per row of the set: the chunk's row index
  int klen[4];      // per chunk row
  int req;          // the request of every row of the set
  int row0, split;  // the chunk's first query row; the split
  int qb, np;       // the pass: queries qb .. qb + np - 1 of the set (query q: row rows[q / G], head h·G + q % G)
  int64_t t0, te;   // the split's tokens for this set: [t0, te)
  int h;            // KV head
};
// Query q of a set (0 <= q < G·query_group <= 32) is head q % G of chunk row q / G: divided by a
// multiply and a shift (exact for q < 4096, g <= 8), not by an integer division by the run-time G,
// which the write-out computes for every four dims it stores.
OCT_DEV int dm_qrow(const OctDecodeParams& p, int q) { return (int)(((uint32_t)q * p.g_mul) >> 20); }
OCT_DEV int dm_qhead(const OctDecodeParams& p, int q) { return q - p.g * dm_qrow(p, q); }
OCT_DEV int dm_rowj(const OctDecodeParams& p, const DmSet& s, int q) { return (s.rows >> (4 * dm_qrow(p, q))) & 15; }
OCT_DEV int64_t dm_prow(const OctDecodeParams& p, const DmSet& s, int q) {
  return (((int64_t)(s.row0 + dm_rowj(p, s, q)) * p.hq + (int64_t)s.h * p.g + dm_qhead(p, q)) * p.num_splits + s.split) *
         p.pstride;
}

// The block index of token t (0 <= t < 2^31: a token below te, at most a klen, an int32): t /
// block_size by the host's multiplier and shift (oct_bs_div, exact for every t < 2^31 and block
// size: octave_params.h), not by a 32-bit division (about 20 instructions, two per tile).
OCT_DEV uint32_t dm_blk(const OctDecodeParams& p, uint32_t t) { return oct_bs_div(t, p.bs_mul, p.bs_sh); }

// The block id of the tile at ts on the whole-tile path (contig), or -1 (the other path reads the
// block table per token).
template <int FMT>
OCT_DEV int32_t dm_tile_bid(const OctDecodeParams& p, const int32_t* bt_row, int64_t ts, bool contig) {
  return DmFmt<FMT>::CONTIG_OK && contig ? bt_row[dm_blk(p, (uint32_t)ts)] : -1;
}

// A warp's whole-tile copy, unrolled (8 rounds for k3v4's 248 units, the last for lanes below 24),
// not a loop that checks its bound each round. Rounds K .. NK - 1 of NU 16-byte units: lane l
// copies unit l + 32k in round k, from the lane's own pair of base addresses (d, s: unit l) at the
// immediate offset 512k, so that the rounds share one address computation.
template <int K, int NK, int NU>
struct DmCopyU {
  static OCT_DEV void run(uint8_t* d, const uint8_t* s, int lane) {
    if (32 * (K + 1) <= NU || lane + 32 * K < NU) oct_copy_g2s16_at<512 * K>(d, s);
    DmCopyU<K + 1, NK, NU>::run(d, s, lane);
  }
};
template <int NK, int NU>
struct DmCopyU<NK, NK, NU> {
  static OCT_DEV void run(uint8_t*, const uint8_t*, int) {}
};

// Issues the copies of the tile at ts (a multiple of 16) into stage st and returns its mask of
// tokens to attend to (in [t0, te), in a valid block), one warp. contig: the whole-tile path (see
// the header). off: the warp's 16 slot offsets in shared memory.
// bid: the tile's block id on the whole-tile path, dm_tile_bid's (loaded apart, so that a caller can
// have it in flight early); unread on the other path. The overload without it loads it itself.
template <int FMT>
OCT_DEV uint32_t dm_issue(const OctDecodeParams& p, const DmSet& s, int64_t* off, uint8_t* st, const int32_t* bt_row,
                          int64_t ts, bool contig, int lane, int32_t bid) {
  typedef DmFmt<FMT> F;
  const int64_t hoff = (int64_t)((uint64_t)(uint32_t)s.h * (uint64_t)p.c_sh);  // (h >= 0: no sign extension)
  // (in 32 bits: token positions are below 2^31, so are their differences' magnitudes)
  const int d0 = (int)s.t0 - (int)ts, d1 = (int)s.te - (int)ts;
  const int lo = d0 > 0 ? d0 : 0, hi = d1 < DM_TOK ? d1 : DM_TOK;
  const uint32_t range = hi > lo ? ((1u << hi) - 1u) & ~((1u << lo) - 1u) : 0u;
  // Token positions fit 32 bits (a tile starts below te, at most a klen: an int32): the block
  // index in 32 bits (dm_blk), not a 64-bit division routine per tile.
  if (F::CONTIG_OK && contig) {
    const uint32_t lb = dm_blk(p, (uint32_t)ts);
    if (bid < 0 || bid >= p.num_blocks) return 0u;
    const uint8_t* src = p.cache + (int64_t)((uint64_t)(uint32_t)bid * (uint64_t)p.c_sb) + hoff +
                         (int64_t)((uint32_t)ts - lb * (uint32_t)p.block_size) * F::SLOT;
    enum { NU = DM_TOK * F::SLOT / 16 };  // 16-byte units of the tile
    DmCopyU<0, (NU + 31) / 32, NU>::run(st + 16 * lane, src + 16 * lane, lane);
    return range;
  }
  if (lane < DM_TOK) {
    int64_t o = -1;
    if ((range >> lane) & 1) {
      const uint32_t tg = (uint32_t)ts + lane, lb = dm_blk(p, tg);
      const int32_t bid = bt_row[lb];
      if (bid >= 0 && bid < p.num_blocks) o = (int64_t)bid * p.c_sb + hoff + (int64_t)(tg - lb * (uint32_t)p.block_size) * p.c_st;
    }
    off[lane] = o;
  }
  oct_sync_wave();
  uint32_t mask = 0;
  OCT_UNROLL4 for (int t = 0; t < DM_TOK; t++) {
    const int64_t o = off[t];
    if (o < 0) continue;
    mask |= 1u << t;
    for (int u = lane; u < F::SU; u += 32)
      oct_copy_g2s<F::UB>(st + t * F::ROW + u * F::UB, p.cache + o + u * F::UB);
  }
  oct_sync_wave();  // off is rewritten by the next tile's call
  return mask;
}
template <int FMT>
OCT_DEV uint32_t dm_issue(const OctDecodeParams& p, const DmSet& s, int64_t* off, uint8_t* st, const int32_t* bt_row,
                          int64_t ts, bool contig, int lane) {
  return dm_issue<FMT>(p, s, off, st, bt_row, ts, contig, lane, dm_tile_bid<FMT>(p, bt_row, ts, contig));
}

// The queries of a pass, in two parts so that the caller can stage its first tiles while the loads
// are in flight: dm_qload loads warp w's queries w, w + NWQ, ... of the NWQ warps
// (zero past np), dm_qput rotates them like K in float32 and writes their B fragments, rounded to
// fp16 at their dec_qpos places (INT8K: the int8 row, and its scale in qs).
template <int NT, int NWQ>
struct DmQ {
  enum { PER = (8 * NT + NWQ - 1) / NWQ };
  float x[PER][8];
};
template <int FMT, int NT, int NWQ>
OCT_DEV void dm_qload(const OctDecodeParams& p, const DmSet& s, int lane, int w, DmQ<NT, NWQ>& qx) {
  OCT_UNROLL for (int k = 0; k < DmQ<NT, NWQ>::PER; k++) {
    const int c = w + k * NWQ;
    OCT_UNROLL for (int i = 0; i < 8; i++) qx.x[k][i] = 0.0f;
    if (c < s.np) {
      const int q = s.qb + c;
      oct_load8(p.query + (int64_t)(s.row0 + dm_rowj(p, s, q)) * p.q_st + (int64_t)(s.h * p.g + dm_qhead(p, q)) * p.q_sh + 8 * lane,
                p.dtype, qx.x[k]);
    }
  }
}
template <int FMT, int NT, int NWQ>
OCT_DEV void dm_qput(const OctDecodeParams& p, const DmSet& s, uint16_t (*qf)[16][32][4], float* qs, int lane, int w,
                     DmQ<NT, NWQ>& qx) {
  OCT_UNROLL for (int k = 0; k < DmQ<NT, NWQ>::PER; k++) {
    const int c = w + k * NWQ;
    if (c >= 8 * NT) continue;
    float* x = qx.x[k];
    if (c < s.np) oct_rotate(x, p.k_signs, lane, !DecFmt<FMT>::COMPACT);
#if OCT_DM_INT8K
    // int8rowq: qmax = max(1e-8, max|x|) over the row, q = rint(x·127/qmax) clamped to ±127,
    // scale qmax/127; byte e of word j of lane group t of block b goes to k-step 2b + j/2, register
    // j & 1 (the m16n8k32 B operand: rows 4t.. and 16 + 4t..).
    float amax = 0.0f;
    OCT_UNROLL for (int i = 0; i < 8; i++) amax = oct_fmax(amax, oct_fabs(x[i]));
    const float qmax = oct_fmax(oct_max32(amax), 1e-8f);
    uint8_t* qb = (uint8_t*)qf[c >> 3][0][0];
    OCT_UNROLL for (int i = 0; i < 8; i++) {
      const int pos = dec_qpos<FMT>(8 * lane + i), j = (pos >> 2) & 3;
      const float y = oct_fmin(oct_fmax(oct_rint(oct_div_rn(oct_mul_rn(x[i], 127.0f), qmax)), -127.0f), 127.0f);
      qb[((2 * (pos >> 6) + (j >> 1)) * 32 + 4 * (c & 7) + ((pos >> 4) & 3)) * 8 + 4 * (j & 1) + (pos & 3)] = (uint8_t)(int8_t)(int)y;
    }
    if (lane == 0) qs[c] = c < s.np ? oct_div_rn(qmax, 127.0f) : 0.0f;
#else
    (void)qs;
    // wmma-f16q: the row as fp16 at dec_qpos's places, in 4- and 8-byte stores (not one 2-byte
    // store per dim), the places worked out per lane (dims 8·lane + i of block b = lane >> 3):
    // - a 3-bit block (compact, or b > 0): dim i goes to k-step 4b + i/2, B row 4(c & 7) + g
    //   (g = (lane & 7) >> 1), half (lane & 1) + 2(i & 1). So lanes 2u and 2u + 1 fill the four
    //   halves of one entry per pair of dims: after one exchange each lane stores one word,
    //   (its x[2m], the pair's x[2m]) from the even lane and (the pair's x[2m+1], its x[2m+1])
    //   from the odd one;
    // - the 4-bit block 0 (not compact): dim i = 4a + 2p + e goes to k-step 2(lane & 1) + p, B row
    //   4(c & 7) + ((lane & 7) >> 1), half 2e + a: two whole entries, one 8-byte store each.
    uint32_t hv[8];
    OCT_UNROLL for (int i = 0; i < 8; i++) hv[i] = oct_f32_to_f16(x[i]);
    const int odd = lane & 1, row = 4 * (c & 7) + ((lane & 7) >> 1);
    uint32_t snd[2], rcv[2];  // halves for m = 2j, 2j + 1: the odd lane sends x[2m], the even x[2m + 1]
    OCT_UNROLL for (int j = 0; j < 2; j++) {
      snd[j] = odd ? hv[4 * j] | hv[4 * j + 2] << 16 : hv[4 * j + 1] | hv[4 * j + 3] << 16;
      rcv[j] = oct_shfl_xor_u32<1>(snd[j]);
    }
    if (!DecFmt<FMT>::COMPACT && lane < 8) {
      OCT_UNROLL for (int pp = 0; pp < 2; pp++) {
        uint16_t* e = qf[c >> 3][2 * odd + pp][row];
        dm_st32(e, hv[2 * pp] | hv[4 + 2 * pp] << 16), dm_st32(e + 2, hv[2 * pp + 1] | hv[5 + 2 * pp] << 16);
      }
    } else {
      OCT_UNROLL for (int m = 0; m < 4; m++) {
        const uint32_t r = (rcv[m >> 1] >> (16 * (m & 1))) & 0xFFFFu;
        dm_st32(&qf[c >> 3][4 * (lane >> 3) + m][row][2 * odd], odd ? r | hv[2 * m + 1] << 16 : hv[2 * m] | r << 16);
      }
    }
#endif
  }
}

// Per lane, before a pass's tiles: the klen of queries 8(n0 + n) + 2t + c of N tiles n0 .. n0 + NT - 1
// (0 past np), the running max -inf and l 0.
template <int NT>
OCT_DEV void dm_rows(const OctDecodeParams& p, const DmSet& s, int t, int n0, int kq[NT][2], float mrun[NT][2], float lrun[NT][2]) {
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OCT_UNROLL for (int c = 0; c < 2; c++) {
      const int qc = 8 * (n0 + n) + 2 * t + c, j = qc < s.np ? dm_rowj(p, s, s.qb + qc) : 0;
      kq[n][c] = qc < s.np ? (j == 0 ? s.klen[0] : j == 1 ? s.klen[1] : j == 2 ? s.klen[2] : s.klen[3]) : 0;
      mrun[n][c] = -oct_inf(), lrun[n][c] = 0.0f;
    }
  }
}

// K block b's share of the scores of the staged rows rg (token g) and r8 (token g + 8): x[n][v] =
// the block's dot (fp32 over four m16n8k16 k-steps; INT8K: the exact int32 dot of two m16n8k32) ×
// the token's K block scale (ksb for token g, k8 for g + 8), for element v of N tile n (token g +
// 8(v >> 1), query 8n + 2t + (v & 1)).
template <int FMT, int NT>
OCT_DEV void dm_kblock(const uint8_t* rg, const uint8_t* r8, int b, int t, int lane, uint16_t (*qf)[16][32][4], float ksb,
                       float k8, float x[NT][4]) {
#if OCT_DM_INT8K
  uint32_t wg[4], w8[4];
  dec_kwords<FMT, false>(rg, b, t, wg);
  dec_kwords<FMT, false>(r8, b, t, w8);
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OctMmaI32 acc;
    OCT_UNROLL for (int v = 0; v < 4; v++) acc.r[v] = 0;
    OCT_UNROLL for (int j2 = 0; j2 < 2; j2++) {
      OctMmaA8 a;
      a.r[0] = wg[2 * j2], a.r[1] = w8[2 * j2], a.r[2] = wg[2 * j2 + 1], a.r[3] = w8[2 * j2 + 1];
      const OctMmaB16 qv = dm_ld64(qf[n][0][0] + 4 * ((2 * b + j2) * 32 + lane));
      OctMmaB8 bq;
      bq.r[0] = qv.r[0], bq.r[1] = qv.r[1];
      acc = oct_mma_m16n8k32_s32_s8(a, bq, acc);
    }
    OCT_UNROLL for (int v = 0; v < 4; v++) x[n][v] = oct_mul_rn((float)acc.r[v], v >> 1 ? k8 : ksb);
  }
#else
  uint32_t glo[4], ghi[4], elo[4], ehi[4];
  dm_kfrag<FMT>(rg, b, t, glo, ghi);
  dm_kfrag<FMT>(r8, b, t, elo, ehi);
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OctMmaF32 acc;
    OCT_UNROLL for (int v = 0; v < 4; v++) acc.r[v] = 0.0f;
    OCT_UNROLL for (int j = 0; j < 4; j++) {
      OctMmaA16 a;
      a.r[0] = glo[j], a.r[1] = elo[j], a.r[2] = ghi[j], a.r[3] = ehi[j];
      const OctMmaB16 bq = dm_ld64(qf[n][4 * b + j][lane]);
      acc = oct_mma_m16n8k16_f32_f16(a, bq, acc);
    }
    OCT_UNROLL for (int v = 0; v < 4; v++) x[n][v] = oct_mul_rn(acc.r[v], v >> 1 ? k8 : ksb);
  }
#endif
}

// The online softmax of one tile per query (base 2, in registers; lane (g, t) holds tokens g, g + 8
// of queries 2t, 2t + 1 of each N tile): updates mrun and lrun, returns each query's alpha and
// whether any is not 1, and writes P' = fp16(fp32(p · V scale) · κ) to the warp's transpose buffer
// pt [N tile][query][token]. sc: the tile's summed scores (before score_scale); mask: the tile's
// tokens to attend to; vsg, vs8: the V scales of tokens g and g + 8.
// The exp2 is ex2.approx.ftz, within 2 ulps with results below 2^-126 flushed to 0 (the fp32
// profiles' exp2 and ftz terms, as the mma prefill), not exp2f with its fix-ups for subnormal
// results (a compare and two predicated multiplies per call; six calls per tile and N tile).

template <int NT>
OCT_DEV bool dm_softmax(const OctDecodeParams& p, float sc[NT][4], uint32_t mask, int64_t ts, int g, int t, int kq[NT][2],
                        float mrun[NT][2], float lrun[NT][2], float alpha[NT][2], float vsg, float vs8,
                        uint16_t (*pt)[8][DM_TOK]) {
  const float ninf = -oct_inf();
  const bool okg = (mask >> g) & 1, ok8 = (mask >> (g + 8)) & 1;
  const int tgg = (int)ts + g, tg8 = (int)ts + g + 8;  // (token positions are below 2^31)
  bool rescale = false;
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    OCT_UNROLL for (int c = 0; c < 2; c++) {
      // (mutant OCT_MUT_DECODE_MMA_KLEN_EDGE: the token at klen attended too)
      const int kqe = kq[n][c] + (OCT_MUTANT(OCT_MUT_DECODE_MMA_KLEN_EDGE) && kq[n][c] > 0 ? 1 : 0);
      const float sg = okg && tgg < kqe ? oct_mul_rn(sc[n][c], p.score_scale) : ninf;
      const float s8 = ok8 && tg8 < kqe ? oct_mul_rn(sc[n][2 + c], p.score_scale) : ninf;
      float mx = oct_fmax(sg, s8);
      mx = oct_fmax(mx, oct_shfl_xor<4>(mx));
      mx = oct_fmax(mx, oct_shfl_xor<8>(mx));
      mx = oct_fmax(mx, oct_shfl_xor<16>(mx));
      const float mo = mrun[n][c], mn = oct_fmax(mo, mx);
      float al = 1.0f, pg = 0.0f, p8 = 0.0f;
      if (mn != ninf) al = oct_exp2_ftz(mo - mn), pg = oct_exp2_ftz(sg - mn), p8 = oct_exp2_ftz(s8 - mn);
      float sum = oct_add_rn(pg, p8);
      sum = oct_add_rn(sum, oct_shfl_xor<4>(sum));
      sum = oct_add_rn(sum, oct_shfl_xor<8>(sum));
      sum = oct_add_rn(sum, oct_shfl_xor<16>(sum));
      lrun[n][c] = oct_fma(lrun[n][c], al, sum);
      if (OCT_MUTANT(OCT_MUT_DECODE_MMA_L_F16)) lrun[n][c] = oct_f16_to_f32(oct_f32_to_f16(lrun[n][c]));  // mutant
      mrun[n][c] = mn;
      alpha[n][c] = al;
      rescale = rescale || al != 1.0f;
      // P' = fp16(fp32(p · V scale) · 256); a masked token (p = 0) is exactly 0, whatever its V
      // scale (a poisoned slot a query does not attend to may hold inf).
      const int qc = 2 * t + c;
      const float kap = OCT_DM_INT8K ? 64.0f : 256.0f;  // int8rowq's factor, wmma-f16q's
      pt[n][qc][g] = pg == 0.0f ? (uint16_t)0 : oct_f32_to_f16(oct_mul_rn(oct_mul_rn(pg, vsg), kap));
      pt[n][qc][g + 8] = p8 == 0.0f ? (uint16_t)0 : oct_f32_to_f16(oct_mul_rn(oct_mul_rn(p8, vs8), kap));
    }
  }
  return rescale;
}

// P's B fragments of P·V from the warp's transpose buffer (after oct_sync_wave).
template <int NT>
OCT_DEV void dm_pfrag(uint16_t (*pt)[8][DM_TOK], int g, int t, OctMmaB16 pb[NT]) {
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    pb[n].r[0] = dm_ld32(&pt[n][g][2 * t]);
    pb[n].r[1] = dm_ld32(&pt[n][g][2 * t + 8]);
  }
}

// o (MT dim tiles) times each query's alpha.
template <int NT, int MT>
OCT_DEV void dm_rescale(OctMmaF32 (*o)[NT], float alpha[NT][2]) {
  OCT_UNROLL for (int n = 0; n < NT; n++) {
    // (mutant OCT_MUT_DECODE_MMA_ALPHA_ROW: query 2t's factor for query 2t + 1 too)
    const float a1 = OCT_MUTANT(OCT_MUT_DECODE_MMA_ALPHA_ROW) ? alpha[n][0] : alpha[n][1];
    OCT_UNROLL for (int mt = 0; mt < MT; mt++) {
      o[mt][n].r[0] = oct_mul_rn(o[mt][n].r[0], alpha[n][0]), o[mt][n].r[2] = oct_mul_rn(o[mt][n].r[2], alpha[n][0]);
      o[mt][n].r[1] = oct_mul_rn(o[mt][n].r[1], a1), o[mt][n].r[3] = oct_mul_rn(o[mt][n].r[3], a1);
    }
  }
}

// P·V of the dims of V lane 4g + m (M tiles 4m .. 4m + 3, om[0..3]) over the staged tile at ru0 =
// the row of token 2t: tokens 2t, 2t + 1, 2t + 8, 2t + 9 paired by byte permutes into fp16 halves.
// 4-bit V in the kernels of one N tile: the tokens are paired on their code bytes before the lookup
// (one byte permute per 8 codes, not one per 4 codebook bytes): byte j of a lane's code word holds
// dims j and j + 4 (nibbles 2j, 2j + 1), so the pair (a.b0, b.b0, a.b1, b.b1) looks up to the
// codebook bytes (a0, a4, b0, b4 | a1, a5, b1, b5), and oct_h4_pairs takes (a0, b0) and (a4, b4)
// from each word: the operands of the unpaired path, bit for bit (big 0.5109 ms against 0.5158).
// The quad kernel (three N tiles share each decoded tile) pairs after the lookup: the pairing
// gains it nothing on q4s100k.
// Entry (byte i of x) of copy lc (times 4: its byte offset) of the V table at vt. Rows of 32 words
// (VW, OCT_DM_VTROW 128): the byte's offset e · 128 computed as one shift and one select that also
// takes in the copy (its bits below the entry's), so the load's address is that register plus the
// table's (warp-uniform) base. Rows of 64 words (OCT_DM_VTROW 256): the offset e · 256 + lc is one
// byte permute, byte i of x above lc's low byte.
template <int VW>
OCT_DEV uint32_t dm_vt(const uint32_t* vt, uint32_t x, int i, uint32_t lc) {
  if (VW == 64) return *(const uint32_t*)((const uint8_t*)vt + oct_perm8n(x, lc, 0x5504u | (uint32_t)i << 4));
  enum { SH = 7 };
  const uint32_t e = 8 * i < SH ? x << (SH - 8 * i) : x >> (8 * i - SH);
  return *(const uint32_t*)((const uint8_t*)vt + oct_and_or<255u << SH>(e, lc));
}
// The V table (VR > 0, NT 1): vt is the table (DmVt), lc the lane's copy times 4. The code words of
// tokens a, b (and c, d) are interleaved by nibble, so that byte j of one word is (a, b)'s codes of
// dim j and byte j of the other of dim j + 4; each byte is an entry: the operand register itself.
template <int FMT, int NT, int VR = 0, int VW = VR>
OCT_DEV void dm_pv(const uint8_t* ru0, int g, int m, const OctMmaB16 pb[NT], OctMmaF32 (*om)[NT],
                   const uint32_t* vtl = nullptr, uint32_t lc = 0) {
  typedef DmFmt<FMT> F;
  if (VR > 0) {
    static_assert(VR == 0 || (VR == 32 && F::VBITS == 4 && NT == 1), "the V table: 32 copies, 4-bit V, one N tile");
    const int vo = F::V_LO + 4 * (4 * g + m);
    const uint32_t xa = *(const uint32_t*)(ru0 + vo), xb = *(const uint32_t*)(ru0 + F::ROW + vo);
    const uint32_t xc = *(const uint32_t*)(ru0 + 8 * F::ROW + vo), xd = *(const uint32_t*)(ru0 + 9 * F::ROW + vo);
    const uint32_t lab = (xa & 0x0F0F0F0Fu) | ((xb << 4) & 0xF0F0F0F0u), hab = ((xa >> 4) & 0x0F0F0F0Fu) | (xb & 0xF0F0F0F0u);
    const uint32_t lcd = (xc & 0x0F0F0F0Fu) | ((xd << 4) & 0xF0F0F0F0u), hcd = ((xc >> 4) & 0x0F0F0F0Fu) | (xd & 0xF0F0F0F0u);
    OCT_UNROLL for (int i = 0; i < 4; i++) {  // om[i]: dims i (rows g) and i + 4 (rows g + 8) of the word
      OctMmaA16 a;
      a.r[0] = dm_vt<VW>(vtl, lab, i, lc), a.r[1] = dm_vt<VW>(vtl, hab, i, lc);
      a.r[2] = dm_vt<VW>(vtl, lcd, i, lc), a.r[3] = dm_vt<VW>(vtl, hcd, i, lc);
      OCT_UNROLL for (int n = 0; n < NT; n++) om[i][n] = oct_mma_m16n8k16_f32_f16(a, pb[n], om[i][n]);
    }
    return;
  }
  if (F::VBITS == 4 && NT == 1) {
    const int vo = F::V_LO + 4 * (4 * g + m);
    const uint32_t xa = *(const uint32_t*)(ru0 + vo), xb = *(const uint32_t*)(ru0 + F::ROW + vo);
    const uint32_t xc = *(const uint32_t*)(ru0 + 8 * F::ROW + vo), xd = *(const uint32_t*)(ru0 + 9 * F::ROW + vo);
    OCT_UNROLL for (int k = 0; k < 2; k++) {
      uint32_t ab[2], cd[2];
      oct_cb4n(oct_perm8n(xa, xb, k ? 0x7362u : 0x5140u), OCT_CB4B_0, OCT_CB4B_1, OCT_CB4B_2, OCT_CB4B_3, ab[0], ab[1]);
      oct_cb4n(oct_perm8n(xc, xd, k ? 0x7362u : 0x5140u), OCT_CB4B_0, OCT_CB4B_1, OCT_CB4B_2, OCT_CB4B_3, cd[0], cd[1]);
      OCT_UNROLL for (int hb = 0; hb < 2; hb++) {
        OctMmaA16 a;
        oct_h4_pairs(ab[hb], a.r[0], a.r[1]);
        oct_h4_pairs(cd[hb], a.r[2], a.r[3]);
        OCT_UNROLL for (int n = 0; n < NT; n++) om[2 * k + hb][n] = oct_mma_m16n8k16_f32_f16(a, pb[n], om[2 * k + hb][n]);
      }
    }
    return;
  }
  uint32_t wa[2], wb[2], wc[2], wd[2];
  dec_vbytes<FMT>(ru0, 4 * g + m, wa[0], wa[1]);
  dec_vbytes<FMT>(ru0 + F::ROW, 4 * g + m, wb[0], wb[1]);
  dec_vbytes<FMT>(ru0 + 8 * F::ROW, 4 * g + m, wc[0], wc[1]);
  dec_vbytes<FMT>(ru0 + 9 * F::ROW, 4 * g + m, wd[0], wd[1]);
  OCT_UNROLL for (int k = 0; k < 2; k++) {
    OCT_UNROLL for (int hb = 0; hb < 2; hb++) {
      OctMmaA16 a;
      oct_h4_codes(oct_pair_tokens(wa[k], wb[k], hb), a.r[0], a.r[1]);
      oct_h4_codes(oct_pair_tokens(wc[k], wd[k], hb), a.r[2], a.r[3]);
      OCT_UNROLL for (int n = 0; n < NT; n++) om[2 * k + hb][n] = oct_mma_m16n8k16_f32_f16(a, pb[n], om[2 * k + hb][n]);
    }
  }
}

// Scale i of a staged row (fp16 after its codes: the K block scales, then the V scale) and where
// K block b's and the V scale are (the compact format: one K scale, then V).
template <int FMT>
OCT_DEV float dm_sc(const uint8_t* row, int i) {
  return oct_f16_to_f32(((const uint16_t*)(row + DmFmt<FMT>::SCALES))[i]);
}
template <int FMT>
OCT_DEV int dm_kix(int b) { return DmFmt<FMT>::COMPACT ? 0 : b; }
template <int FMT>
OCT_DEV int dm_vix() { return DmFmt<FMT>::COMPACT ? 1 : 4; }

// The K block scale of block b of the staged rows rg and r8 (tokens g, g + 8) and their V scales
// (the quad kernel: a warp scores one K block, so it reads one scale per row, not four).
template <int FMT>
OCT_DEV void dm_scale1(const uint8_t* rg, const uint8_t* r8, int b, float& kg, float& k8, float& vsg, float& vs8) {
  kg = dm_sc<FMT>(rg, dm_kix<FMT>(b)), k8 = dm_sc<FMT>(r8, dm_kix<FMT>(b));
  vsg = dm_sc<FMT>(rg, dm_vix<FMT>()), vs8 = dm_sc<FMT>(r8, dm_vix<FMT>());
}

// The K block scales of the staged rows rg and r8 (tokens g, g + 8) and their V scales.
template <int FMT>
OCT_DEV void dm_scales(const uint8_t* rg, const uint8_t* r8, float ksg[4], float ks8[4], float& vsg, float& vs8) {
  OCT_UNROLL for (int b = 0; b < 4; b++) ksg[b] = dm_sc<FMT>(rg, dm_kix<FMT>(b)), ks8[b] = dm_sc<FMT>(r8, dm_kix<FMT>(b));
  vsg = dm_sc<FMT>(rg, dm_vix<FMT>()), vs8 = dm_sc<FMT>(r8, dm_vix<FMT>());
}

// The staging path of a pass: whole 16-byte tiles when the slots of a tile are contiguous.
template <int FMT>
OCT_DEV bool dm_contig(const OctDecodeParams& p) {
  return p.c_st == DecFmt<FMT>::SLOT && p.block_size % DM_TOK == 0 && (p.c_sb & 15) == 0 && (p.c_sh & 15) == 0 &&
         ((uintptr_t)p.cache & 15) == 0;
}

// One unit's (a warp's, or a quad's) o · f of the dims of V lane 4g + m (om: its four M tiles) for N
// tile n into rows [query 0..7][DM_RES words: dim d at d + d / 32] at rw.
template <int FMT, int NT, bool SCALE = true>
OCT_DEV void dm_put_rows(float* rw, OctMmaF32 (*om)[NT], int n, int m, int g, int t, const float* f) {
  int run0, run1;
  dec_runs<FMT>(4 * g + m, run0, run1);
  OCT_UNROLL for (int k = 0; k < 2; k++)
    OCT_UNROLL for (int hb = 0; hb < 2; hb++)
      OCT_UNROLL for (int v = 0; v < 4; v++) {
        const int e = 2 * hb + (v >> 1), d = (e & 1 ? run1 : run0) + 2 * k + (e >> 1);
        rw[(2 * t + (v & 1)) * DM_RES + d + (d >> 5)] = SCALE ? oct_mul_rn(om[2 * k + hb][n].r[v], f[v & 1]) : om[2 * k + hb][n].r[v];
      }
}

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

// The pass of each workgroup kind.
template <int FMT, int NT, int NW, int VT>
OCT_DEV void dm_run_pass(const OctDecodeParams& p, const DmSet& s, DmSmem<NT, NW, VT>& sm, int lane, int w) {
  dm_pass<FMT, NT, NW>(p, s, sm, lane, w);
}
template <int FMT, int NT, int NW, int NQ>
OCT_DEV void dm_run_pass(const OctDecodeParams& p, const DmSet& s, DqSmem<NQ>& sm, int lane, int w) {
  dq_pass<FMT, NQ>(p, s, sm, lane, w);
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
template <int FMT, int NT, int NW, int NQ>
OCT_DEV void dm_vfill(DqSmem<NQ>&) {}

template <int FMT, int NT, int NW, class SM>
OCT_DEV void dm_body(const OctDecodeParams& p, SM& sm) {
  const int lane = oct_lane(), w = oct_wave();
  oct_pdl_trigger();  // the reduce may be scheduled once every workgroup has started (it waits for our end)
  dm_vfill<FMT, NT, NW>(sm);
  // Workgroup x = chunk · wpc + pi: the wpc workgroups of a row chunk share its passes, pass k
  // (counted over the chunk's row sets in order) going to pi = k % wpc.
  const int wpc = p.wpc > 1 ? p.wpc : 1, pi = oct_bid_x() % wpc;
  // (mutant OCT_MUT_DECODE_MMA_PASS_GRID: the pass index left in the chunk's row)
  const int row0 = OCT_MUTANT(OCT_MUT_DECODE_MMA_PASS_GRID) ? oct_bid_x() * p.qgroup / wpc : oct_bid_x() / wpc * p.qgroup;
  const int split = oct_bid_y(), h = oct_bid_z();
  {  // the chunk's query rows (its G heads of KV head h) asked of the L2 while the maps load:
    // query q = i / 4 of the chunk (row dm_qrow, head dm_qhead), 128-byte line i % 4 of its 512 bytes
    const int nrow = p.num_q - row0 < p.qgroup ? p.num_q - row0 : p.qgroup, nl = nrow * p.g * 4;
    for (int i = oct_tid(); i < nl; i += 32 * NW)
      oct_prefetch_l2(p.query + (int64_t)(row0 + dm_qrow(p, i >> 2)) * p.q_st + (int64_t)(h * p.g + dm_qhead(p, i >> 2)) * p.q_sh +
                      64 * (i & 3));
  }
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
  if (pi == 0) {
    OCT_UNROLL for (int j = 0; j < 4; j++) {
      if (!((exist & ~valid) >> j & 1)) continue;
      for (int q = w; q < p.g; q += NW) {
        const int64_t prow = ((int64_t)(row0 + j) * p.hq + (int64_t)h * p.g + q) * p.num_splits + split;
        dm_write_empty(p.partials + prow * p.pstride, lane);
      }
    }
  }

  int remaining = valid, k = 0;
  while (remaining) {
    // The row set: remaining rows with the request of the lowest remaining row.
    int first = 0;
    while (!((remaining >> first) & 1)) first++;
    const int r = req[first == 0 ? 0 : first == 1 ? 1 : first == 2 ? 2 : 3];
    DmSet s;
    s.rows = 0, s.req = r, s.row0 = row0, s.split = split, s.h = h;
    int nrows = 0, kmax = 0;
    OCT_UNROLL for (int j = 0; j < 4; j++) {
      s.klen[j] = klen[j];
      if (((remaining >> j) & 1) && req[j] == r) {
        s.rows |= j << (4 * nrows++);
        kmax = klen[j] > kmax ? klen[j] : kmax;
        remaining &= ~(1 << j);
      }
    }
    const int nq = nrows * p.g;
    // (mutant OCT_MUT_DECODE_MMA_SPLIT_EDGE: the split does not end at t1)
    s.t0 = t0, s.te = t1 < kmax && !OCT_MUTANT(OCT_MUT_DECODE_MMA_SPLIT_EDGE) ? t1 : (int64_t)kmax;
    if (s.te <= s.t0) {  // no token of the split for this set: empty partials, nothing read (one pass)
      if (k++ % wpc == pi) {
        s.qb = 0, s.np = nq;
        for (int q = w; q < nq; q += NW) dm_write_empty(p.partials + dm_prow(p, s, q), lane);
      }
      continue;
    }
    // Passes of equal width (24 queries in two passes: 12 + 12, not 16 + 8).
    const int npass = (nq + 8 * NT - 1) / (8 * NT), width = (nq + npass - 1) / npass;
    for (int qb = 0; qb < nq; qb += width) {
      if (k++ % wpc != pi) continue;
      s.qb = qb, s.np = nq - qb < width ? nq - qb : width;
      dm_run_pass<FMT, NT, NW>(p, s, sm, lane, w);
    }
  }
}

#if defined(OCT_NV)
extern __shared__ OctU4 dm_dyn[];  // (16-byte aligned)
#endif
template <int FMT, int NT, int NW, int NQ>
OCT_DEV void dm_kernel(const OctDecodeParams& p) {
  typedef typename DmPick<FMT, NT, NW, NQ>::T SM;
#if defined(OCT_NV)
  dm_body<FMT, NT, NW>(p, *reinterpret_cast<SM*>(dm_dyn));
#else
  OCT_SHARED SM sm;
  dm_body<FMT, NT, NW>(p, sm);
#endif
}
#define OCT_DM_BODY(fmt, nt, nw, nq) dm_kernel<fmt, nt, nw, nq>(p);
#else
#define OCT_DM_BODY(fmt, nt, nw, nq) (void)p;
#endif

// One kernel per format (the layout is a compile-time constant), pass width and warp count: NT 1
// (up to 8 queries per pass, G·query_group <= 8) at 3 workgroups of 4 warps per SM (k3v4, with the
// V table: 1 of 12), NT 2 (16) at 2, NT 1 with 8 warps at 1 (grids of at most one workgroup per
// SM), and the quad kernel (passes of up to 24 queries, NQ quads of 4 warps, dq_pass) for chunks
// of more than 8 queries.
#define OCT_DM_KERNEL(name, fmt, nt, nw, nq, occ) \
  OCT_KERNEL_OCC(32 * nw, occ) void name(OctDecodeParams p) { OCT_DM_BODY(fmt, nt, nw, nq) }
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
OCT_DM_KERNEL(octave_decode_mma_k3v4_kernel, 4, 1, DM_NW1V, 0, DM_OCC1V)
OCT_DM_KERNEL(octave_decode_mma_k3v3_kernel, 3, 1, DM_NW1, 0, DM_OCC1)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_kernel, 19, 1, DM_NW1, 0, DM_OCC1)
OCT_DM_KERNEL(octave_decode_mma_k3v4_n2_kernel, 4, 2, 4, 0, DM_OCC2)
OCT_DM_KERNEL(octave_decode_mma_k3v3_n2_kernel, 3, 2, 4, 0, DM_OCC2)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_n2_kernel, 19, 2, 4, 0, DM_OCC2)
OCT_DM_KERNEL(octave_decode_mma_k3v4_w8_kernel, 4, 1, 8, 0, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3_w8_kernel, 3, 1, 8, 0, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_w8_kernel, 19, 1, 8, 0, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v4_quad_kernel, 4, DQ_NT, 4 * DQ_NQ, DQ_NQ, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3_quad_kernel, 3, DQ_NT, 4 * DQ_NQ, DQ_NQ, 1)
OCT_DM_KERNEL(octave_decode_mma_k3v3c_quad_kernel, 19, DQ_NT, 4 * DQ_NQ, DQ_NQ, 1)

// CUDA: the shared memory is dynamic (more than 48 KB): the kernel's limit is raised before each
// launch (cheap; the status is checked), then it is launched with that many bytes.
#if defined(OCT_NV)
template <int FMT, int NT, int NW, int NQ>
static hipError_t dm_launch(void (*kern)(OctDecodeParams), const OctDecodeParams& p, int64_t chunks) {
  const int bytes = (int)sizeof(typename DmPick<FMT, NT, NW, NQ>::T);
  cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess)  // the largest shared-memory carve-out, so that 4 workgroups fit an SM
    e = cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  if (e != cudaSuccess) return e;
  kern<<<dim3((unsigned)chunks, (unsigned)p.num_splits, (unsigned)p.hkv), dim3(32 * NW), bytes, 0>>>(p);
  return oct_launch_status();
}
#define OCT_DM_LAUNCH(name, fmt, nt, nw, nq) return dm_launch<fmt, nt, nw, nq>(name, p, chunks)
#else
#define OCT_DM_LAUNCH(name, fmt, nt, nw, nq) \
  OCT_LAUNCH(name, chunks, p.num_splits, p.hkv, 32 * nw, p); \
  return oct_launch_status()
#endif
hipError_t oct_launch_decode_mma(const OctDecodeParams& p0) {
  // The chunk's passes (G · query_group queries; 8 per pass, or 24 on the quad kernel when a chunk
  // has more than 8, or 16 with OCT_DM_QUAD 0) go to as many workgroups, so that MTP rows cost one
  // pass's latency, not several in a row.
  OctDecodeParams p = p0;
  const int nq = p.g * p.qgroup;
  const bool quad = nq > 8 && OCT_DM_QUAD;
  const int nt = quad ? DQ_NT : nq <= 8 ? 1 : 2;
  p.wpc = (nq + 8 * nt - 1) / (8 * nt);
  const int64_t chunks = ((int64_t)p.num_q + p.qgroup - 1) / p.qgroup * p.wpc;
  if (quad) {
    switch (p.fmt) {  // the host accepts formats 3, 4 and 19 only
      case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_quad_kernel, 4, DQ_NT, 4 * DQ_NQ, DQ_NQ);
      case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_quad_kernel, 3, DQ_NT, 4 * DQ_NQ, DQ_NQ);
      default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_quad_kernel, 19, DQ_NT, 4 * DQ_NQ, DQ_NQ);
    }
  }
  // 8 warps when every workgroup that has tokens gets an SM of its own (splits past the last
  // token are empty and end at once).
  const int64_t used = (p.kv_max + p.split_len - 1) / p.split_len;
  const int64_t busy = chunks * (used < p.num_splits ? used : p.num_splits) * p.hkv;
  const bool w8 = nt == 1 && (OCT_DM_W8 || (busy <= p.sms && (p.fmt != 4 || p.split_len <= DM_W8TOK)));
  if (w8) {
    switch (p.fmt) {
      case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_w8_kernel, 4, 1, 8, 0);
      case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_w8_kernel, 3, 1, 8, 0);
      default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_w8_kernel, 19, 1, 8, 0);
    }
  }
  if (nt == 1) {
    switch (p.fmt) {
      case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_kernel, 4, 1, DM_NW1V, 0);
      case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_kernel, 3, 1, DM_NW1, 0);
      default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_kernel, 19, 1, DM_NW1, 0);
    }
  }
  switch (p.fmt) {
    case 4: OCT_DM_LAUNCH(octave_decode_mma_k3v4_n2_kernel, 4, 2, 4, 0);
    case 3: OCT_DM_LAUNCH(octave_decode_mma_k3v3_n2_kernel, 3, 2, 4, 0);
    default: OCT_DM_LAUNCH(octave_decode_mma_k3v3c_n2_kernel, 19, 2, 4, 0);
  }
}
