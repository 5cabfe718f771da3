// reduce (docs/contract.md §3.4): merge split partials, inverse V rotation, 1/L, cast. One workgroup
// per (query row, query head); lane l owns dims 8l..8l+7. Each of the 4 waves merges a quarter of
// the splits in split order, then wave 0 adds the quarters in wave order: a fixed tree, so the
// result is deterministic. (One wave walking all splits waited on memory once per batch: 31 µs of
// q1s100k's 130 splits on the H200.) A split with m = -inf is skipped and its o never read.
#include "octave_lane.h"
#include "octave_params.h"
#include "octave_mutant.h"

OCT_KERNEL(OCT_THREADS) void octave_reduce_kernel(OctReduceParams p) {
#if OCT_DEVICE_BODY
  OCT_SHARED float part[OCT_WAVES - 1][264];  // waves 1..3: o (256) and L
  const int lane = oct_lane(), w = oct_wave();
  const int64_t gw = oct_bid_x();  // the (query row, query head) of this workgroup
  if (gw >= (int64_t)p.num_q * p.hq) return;
  const float* base = p.partials + gw * p.num_splits * (int64_t)p.pstride;
  const float ninf = -oct_inf();

  float M = ninf;  // NaN-ignoring max; a NaN m still poisons L below, as it should
  for (int s = lane; s < p.num_splits; s += 32) M = oct_fmax(M, base[(int64_t)s * p.pstride + 256]);
  M = oct_max32(M);

  // Wave w merges the splits of its quarter [s_lo, s_hi) in order, RB at a time: the batch's m, l
  // and o rows are loaded first (independent loads in flight together), then merged in split
  // order with fused multiply-adds. A split with m = -inf is skipped (its o never read).
  enum { RB = 8 };
  const int per = (p.num_splits + OCT_WAVES - 1) / OCT_WAVES;
  const int s_lo = w * per, s_hi = s_lo + per < p.num_splits ? s_lo + per : p.num_splits;
  float L = 0.0f, o[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (M != ninf) {
    for (int s0 = s_lo; s0 < s_hi; s0 += RB) {
      float m[RB], l[RB];
      OctU4 a[RB], b[RB];
      OCT_UNROLL for (int i = 0; i < RB; i++) {
        m[i] = ninf;
        if (s0 + i < s_hi) m[i] = base[(int64_t)(s0 + i) * p.pstride + 256];
      }
      OCT_UNROLL for (int i = 0; i < RB; i++) {
        if (m[i] == ninf) continue;
        const float* row = base + (int64_t)(s0 + i) * p.pstride;
        a[i] = *(const OctU4*)(row + 8 * lane), b[i] = *(const OctU4*)(row + 8 * lane + 4), l[i] = row[257];
      }
      OCT_UNROLL for (int i = 0; i < RB; i++) {
        if (m[i] == ninf) continue;
        const float wt = oct_exp2(m[i] - M);
        L = oct_fma(wt, l[i], L);
        const uint32_t u[8] = {a[i].x, a[i].y, a[i].z, a[i].w, b[i].x, b[i].y, b[i].z, b[i].w};
        OCT_UNROLL for (int e = 0; e < 8; e++) o[e] = oct_fma(wt, oct_u2f(u[e]), o[e]);
      }
    }
  }
  // The quarters summed in wave order by wave 0: ((q0 + q1) + q2) + q3.
  if (w > 0) {
    OCT_UNROLL for (int e = 0; e < 8; e++) part[w - 1][8 * lane + e] = o[e];
    if (lane == 0) part[w - 1][256] = L;
  }
  oct_sync();
  if (w > 0) return;
  OCT_UNROLL for (int v = 0; v < OCT_WAVES - 1; v++) {
    OCT_UNROLL for (int e = 0; e < 8; e++) o[e] = oct_add_rn(o[e], part[v][8 * lane + e]);
    L = oct_add_rn(L, part[v][256]);
  }
  if (OCT_MUTANT(OCT_MUT_REDUCE_PAD_UNWRITTEN) && M == ninf) return;  // mutant: padding rows left as they were
  if (OCT_MUTANT(OCT_MUT_REDUCE_NO_SIGNS)) oct_fwht(o, lane, false);  // mutant: the signs not applied
  else oct_unrotate(o, p.v_signs, lane, false);
  const bool zero_l = !OCT_MUTANT(OCT_MUT_REDUCE_DIV_ZERO) && L == 0.0f;  // mutant: O / 0 = NaN
  for (int e = 0; e < 8; e++) o[e] = zero_l ? 0.0f : oct_div_rn(o[e], L);
  oct_store8(p.out + (gw / p.hq) * p.o_st + (gw % p.hq) * p.o_sh + 8 * lane, p.dtype, o);
#endif
}

hipError_t oct_launch_reduce(const OctReduceParams& p) {
  OCT_LAUNCH(octave_reduce_kernel, (int64_t)p.num_q * p.hq, 1, 1, OCT_THREADS, p);
  return oct_launch_status();
}
