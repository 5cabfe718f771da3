// reduce (docs/contract.md §3.4): merge split partials, inverse V rotation, 1/L, cast. One logical wave
// per (query row, query head); lane l owns dims 8l..8l+7. Splits are merged in split order, so the
// result is deterministic. A split with m = -inf is skipped and its o never read.
#include "octave_lane.h"
#include "octave_params.h"
#include "octave_mutant.h"

OCT_KERNEL(OCT_THREADS) void octave_reduce_kernel(OctReduceParams p) {
#if OCT_DEVICE_BODY
  const int lane = oct_lane();
  const int64_t gw = (int64_t)oct_bid_x() * OCT_WAVES + oct_wave();
  if (gw >= (int64_t)p.num_q * p.hq) return;
  const float* base = p.partials + gw * p.num_splits * (int64_t)p.pstride;
  const float ninf = -oct_inf();

  float M = ninf;  // NaN-ignoring max; a NaN m still poisons L below, as it should
  for (int s = lane; s < p.num_splits; s += 32) M = oct_fmax(M, base[(int64_t)s * p.pstride + 256]);
  M = oct_max32(M);

  float L = 0.0f, o[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (M != ninf) {
    for (int s = 0; s < p.num_splits; s++) {
      const float* row = base + (int64_t)s * p.pstride;
      const float m = row[256];
      if (m == ninf) continue;
      const float w = oct_exp2(m - M);
      L = oct_fma(w, row[257], L);
      const OctU4 a = *(const OctU4*)(row + 8 * lane), b = *(const OctU4*)(row + 8 * lane + 4);
      const uint32_t u[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
      for (int e = 0; e < 8; e++) o[e] = oct_fma(w, oct_u2f(u[e]), o[e]);
    }
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
  const int64_t waves = (int64_t)p.num_q * p.hq;
  OCT_LAUNCH(octave_reduce_kernel, (waves + OCT_WAVES - 1) / OCT_WAVES, 1, 1, OCT_THREADS, p);
  return oct_launch_status();
}
