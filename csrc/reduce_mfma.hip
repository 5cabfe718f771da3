// reduce, mfma tier (docs/contract.md §3.4): the gfx942 decode's own merge of its split partials,
// launched by octave_decode on the mfma tier (the ABI's octave_reduce stays the portable reduce on
// every tier). The same arithmetic as the portable reduce — the max M of the splits' m, each
// split's o and l weighted by 2^(m_s − M) with fused multiply-adds in split order within a
// segment, the segments added in order, inverse V rotation, y / L, the dtype — laid out for a
// wave64: one workgroup of RM waves of 64 per (query row, query head), lane l of a wave owning dims
// 4l..4l+3, so that one 16-byte load per lane reads a whole 1 KB partial row (the portable reduce's
// 32-lane logical waves take two). A split with m = -inf is skipped and its o never read. The
// fixed tree makes the result deterministic.
#include "octave_lane.h"
#include "octave_mfma.h"
#include "octave_mutant.h"
#include "octave_params.h"

// Waves of 64 per workgroup (RM) and splits a wave loads at once (RB): 4 × 8 = 32 splits per round
// trip; each thread reads ⌈1024 / (64·RM)⌉ of the m.
enum { RM_WAVES = 4, RM_RB = 8, RM_MLOADS = (1024 + 64 * RM_WAVES - 1) / (64 * RM_WAVES) };
static_assert(64 * RM_WAVES <= OCT_MFMA_MAX_THREADS, "the reduce's workgroup");

OCT_KERNEL(64 * RM_WAVES) void octave_reduce_mfma_kernel(OctReduceParams p) {
#if OCT_MFMA_BODY
  OCT_SHARED float part[RM_WAVES][260];  // each wave's merged segment: o (256) and L
  OCT_SHARED float ms[1024];              // the splits' m (num_splits <= 1024)
  OCT_SHARED float mw[2 * RM_WAVES];      // each logical wave's max of them
  const int tid = oct_tid(), W = tid >> 6, l = oct_mfma_lane();
  const int64_t gw = oct_bid_x();  // the (query row, query head) of this workgroup
  if (gw >= (int64_t)p.num_q * p.hq) return;
  const float* base = p.partials + gw * p.num_splits * (int64_t)p.pstride;
  const float ninf = -oct_inf();

  // M: the NaN-ignoring max of the m (a NaN m still poisons L below, as it should).
  float M = ninf, mv[RM_MLOADS];
  OCT_UNROLL for (int i = 0; i < RM_MLOADS; i++) {
    const int s = tid + i * 64 * RM_WAVES;
    mv[i] = s < p.num_splits ? base[(int64_t)s * p.pstride + 256] : ninf;
  }
  OCT_UNROLL for (int i = 0; i < RM_MLOADS; i++) {
    const int s = tid + i * 64 * RM_WAVES;
    if (s < p.num_splits) ms[s] = mv[i];
    M = oct_fmax(M, mv[i]);
  }
  M = oct_max32(M);  // (within each 32-lane half of the wave; the halves meet through mw)
  if (oct_lane() == 0) mw[oct_wave()] = M;
  oct_sync();
  M = mw[0];
  OCT_UNROLL for (int v = 1; v < 2 * RM_WAVES; v++) M = oct_fmax(M, mw[v]);

  // Wave W merges the splits of its segment [s_lo, s_hi) in order, RB at a time: the rows of the
  // splits with m > -inf loaded first (independent loads in flight together), then merged.
  const int per = (p.num_splits + RM_WAVES - 1) / RM_WAVES;
  const int s_lo = W * per, s_hi = s_lo + per < p.num_splits ? s_lo + per : p.num_splits;
  float L = 0.0f, o[4] = {0, 0, 0, 0};
  if (M != ninf) {
    for (int s0 = s_lo; s0 < s_hi; s0 += RM_RB) {
      float m[RM_RB], ls[RM_RB];
      OctU4 a[RM_RB];
      OCT_UNROLL for (int i = 0; i < RM_RB; i++) {
        m[i] = s0 + i < s_hi ? ms[s0 + i] : ninf;
        if (m[i] == ninf) continue;
        const float* row = base + (int64_t)(s0 + i) * p.pstride;
        a[i] = *(const OctU4*)(row + 4 * l), ls[i] = row[257];
      }
      OCT_UNROLL for (int i = 0; i < RM_RB; i++) {
        if (m[i] == ninf) continue;
        const float wt = oct_exp2(m[i] - M);
        // (mutant OCT_MUT_REDUCE_MFMA_MERGE: L sums the l without their weights)
        L = OCT_MUTANT(OCT_MUT_REDUCE_MFMA_MERGE) ? oct_add_rn(L, ls[i]) : oct_fma(wt, ls[i], L);
        const uint32_t u[4] = {a[i].x, a[i].y, a[i].z, a[i].w};
        OCT_UNROLL for (int e = 0; e < 4; e++) o[e] = oct_fma(wt, oct_u2f(u[e]), o[e]);
      }
    }
  }
  OCT_UNROLL for (int e = 0; e < 4; e++) part[W][4 * l + e] = o[e];
  if (l == 0) part[W][256] = L;
  oct_sync();
  // The segments summed in wave order, ((q0 + q1) + q2) + q3, then the portable finish (inverse V
  // rotation over the 32-lane logical wave 0, lane dims 8·lane..+7, y / L, the dtype).
  if (tid >= 32) return;
  const int lane = oct_lane();
  float y[8];
  OCT_UNROLL for (int e = 0; e < 8; e++) {
    y[e] = part[0][8 * lane + e];
    OCT_UNROLL for (int v = 1; v < RM_WAVES; v++) y[e] = oct_add_rn(y[e], part[v][8 * lane + e]);
  }
  L = part[0][256];
  OCT_UNROLL for (int v = 1; v < RM_WAVES; v++) L = oct_add_rn(L, part[v][256]);
  oct_unrotate(y, p.v_signs, lane, false);
  const bool zero_l = L == 0.0f;
  for (int e = 0; e < 8; e++) y[e] = zero_l ? 0.0f : oct_div_rn(y[e], L);
  oct_store8(p.out + (gw / p.hq) * p.o_st + (gw % p.hq) * p.o_sh + 8 * lane, p.dtype, y);
#else
  (void)p;
#endif
}

hipError_t oct_launch_reduce_mfma(const OctReduceParams& p) {
  OCT_LAUNCH(octave_reduce_mfma_kernel, (int64_t)p.num_q * p.hq, 1, 1, 64 * RM_WAVES, p);
  return oct_launch_status();
}
