// prefill, mma tier: the split merge of the prefix splits' partials (prefill_mma.hip writes them
// when num_splits > 1), into the output.
#include "octave_lane.h"
#include "octave_mma.h"
#include "octave_mutant.h"
#include "octave_params.h"

#if OCT_MMA_BODY

// The split merge: thread 64·i + d of a workgroup, dims 4d..4d + 3 of pair 4·bid + i (pair = row ·
// Hq + query head); rows of no sequence are not written. M = max m_s, w_s = 2^(m_s − M) (0 for an
// empty split), L = Σ w_s l_s, O = Σ w_s o_s in split order (fused multiply-adds), out = O / L, or 0
// when L = 0: the decode's reduce without the inverse rotation (prefill's out stays rotated).
OCT_DEV void pm_merge(const OctPrefillParams& p) {
  const int tid = oct_tid(), d = tid & 63;
  const int64_t pair = (int64_t)oct_bid_x() * 4 + (tid >> 6), row = pair / p.hq, hq = pair % p.hq;
  if (row >= p.rows || oct_row_seq(p.cu_seqlens, p.num_seqs, row) < 0) return;
  const float* part = p.ws + pair * p.splits * OCT_PM_PSTRIDE;
  const float ninf = -oct_inf();
  float mx = ninf;
  for (int s = 0; s < p.splits; s++) mx = oct_fmax(mx, part[s * OCT_PM_PSTRIDE + 256]);
  float l = 0.0f, o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int s = 0; s < p.splits; s++) {
    const float* ps = part + s * OCT_PM_PSTRIDE;
    const float ms = ps[256];
    if (ms == ninf) continue;
    // (mutant OCT_MUT_PREFILL_MMA_MERGE_WEIGHT: every split weighted 1)
    const float ws = OCT_MUTANT(OCT_MUT_PREFILL_MMA_MERGE_WEIGHT) ? 1.0f : oct_exp2_ftz(ms - mx);
    l = oct_fma(ws, ps[257], l);
    const OctU4 x = *(const OctU4*)(ps + 4 * d);
    o[0] = oct_fma(ws, oct_u2f(x.x), o[0]), o[1] = oct_fma(ws, oct_u2f(x.y), o[1]);
    o[2] = oct_fma(ws, oct_u2f(x.z), o[2]), o[3] = oct_fma(ws, oct_u2f(x.w), o[3]);
  }
  uint16_t* dst = p.out + row * p.o_st + hq * p.o_sh + 4 * d;
  OCT_UNROLL for (int e = 0; e < 4; e++) dst[e] = oct_f2h(l == 0.0f ? 0.0f : oct_div_rn(o[e], l), p.dtype);
}

#define OCT_PM_MERGE_BODY pm_merge(p);
#else
#define OCT_PM_MERGE_BODY (void)p;
#endif

OCT_KERNEL(256) void octave_prefill_mma_merge_kernel(OctPrefillParams p) { OCT_PM_MERGE_BODY }

hipError_t oct_launch_prefill_mma_merge(const OctPrefillParams& p) {
  // 4 pairs per workgroup (fewer than 2^31 workgroups: the workspace of 2 or more splits was
  // allocated, so rows · Hq · 2080 bytes fit the device).
  OCT_LAUNCH(octave_prefill_mma_merge_kernel, ((int64_t)p.rows * p.hq + 3) / 4, 1, 1, 256, p);
  return oct_launch_status();
}
