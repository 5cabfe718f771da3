// reduce (docs/contract.md §3.4): merge split partials, inverse V rotation, 1/L, cast. One workgroup
// of RW waves per (query row, query head); lane l owns dims 8l..8l+7. The work is two memory round
// trips deep whatever the split count up to RW·RB: every thread reads the m of its splits into
// shared memory (their max is M), then wave w loads the rows of its segment of the splits at once
// and merges them in split order; wave 0 adds the segments in wave order. A fixed tree, so the
// result is deterministic. A split with m = -inf is skipped and its o never read. (4 waves reading
// the m and then the rows one after the other take 9.6 µs of q1s100k's 130 splits on the H200,
// most of it waiting on memory: 11 round trips; one wave walking them all takes 31 µs.)
#include "octave_lane.h"
#include "octave_params.h"
#include "octave_mutant.h"

// Waves per workgroup (RW) and splits a wave loads at once (RB): 16 × 9 = 144 splits in one round
// trip, at 128 registers a thread. Each thread reads ⌈1024 / (32·RW)⌉ m.
enum { RD_WAVES = 16, RD_RB = 9, RD_MLOADS = (1024 + 32 * RD_WAVES - 1) / (32 * RD_WAVES) };

OCT_KERNEL(32 * RD_WAVES) void octave_reduce_kernel(OctReduceParams p) {
#if OCT_DEVICE_BODY
  OCT_SHARED float part[RD_WAVES - 1][264];  // waves 1..RW-1: o (256) and L
  OCT_SHARED float ms[1024];                 // the splits' m (num_splits <= 1024)
  OCT_SHARED float mw[RD_WAVES];             // each wave's max of them
  const int lane = oct_lane(), w = oct_wave(), tid = oct_tid();
  oct_pdl_wait();  // launched as a dependent of the decode (CUDA): its partials complete first
  const int64_t gw = oct_bid_x();  // the (query row, query head) of this workgroup
  if (gw >= (int64_t)p.num_q * p.hq) return;
  const float* base = p.partials + gw * p.num_splits * (int64_t)p.pstride;
  const float ninf = -oct_inf();

  // M: the NaN-ignoring max of the m (a NaN m still poisons L below, as it should). The loads of
  // a thread's splits are issued together (num_splits <= 1024: RD_MLOADS per thread).
  float M = ninf, mv[RD_MLOADS];
  OCT_UNROLL for (int i = 0; i < RD_MLOADS; i++) {
    const int s = tid + i * 32 * RD_WAVES;
    mv[i] = s < p.num_splits ? base[(int64_t)s * p.pstride + 256] : ninf;
  }
  OCT_UNROLL for (int i = 0; i < RD_MLOADS; i++) {
    const int s = tid + i * 32 * RD_WAVES;
    if (s < p.num_splits) ms[s] = mv[i];
    M = oct_fmax(M, mv[i]);
  }
  M = oct_max32(M);
  if (lane == 0) mw[w] = M;
  oct_sync();
  M = mw[0];
  // (mutant OCT_MUT_REDUCE_WAVE_MAX: the waves' maxima not exchanged, wave 0's taken for all)
  if (!OCT_MUTANT(OCT_MUT_REDUCE_WAVE_MAX))
    OCT_UNROLL for (int v = 1; v < RD_WAVES; v++) M = oct_fmax(M, mw[v]);

  // Wave w merges the splits of its segment [s_lo, s_hi) in order, RB at a time: the rows of the
  // splits with m > -inf are loaded first (independent loads in flight together), then merged in
  // split order with fused multiply-adds.
  const int per = (p.num_splits + RD_WAVES - 1) / RD_WAVES;
  const int s_lo = w * per, s_hi = s_lo + per < p.num_splits ? s_lo + per : p.num_splits;
  float L = 0.0f, o[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (M != ninf) {
    for (int s0 = s_lo; s0 < s_hi; s0 += RD_RB) {
      float m[RD_RB], l[RD_RB];
      OctU4 a[RD_RB], b[RD_RB];
      OCT_UNROLL for (int i = 0; i < RD_RB; i++) {
        m[i] = s0 + i < s_hi ? ms[s0 + i] : ninf;
        if (m[i] == ninf) continue;
        const float* row = base + (int64_t)(s0 + i) * p.pstride;
        a[i] = *(const OctU4*)(row + 8 * lane), b[i] = *(const OctU4*)(row + 8 * lane + 4), l[i] = row[257];
      }
      OCT_UNROLL for (int i = 0; i < RD_RB; i++) {
        if (m[i] == ninf) continue;
        const float wt = oct_exp2(m[i] - M);
        L = oct_fma(wt, l[i], L);
        const uint32_t u[8] = {a[i].x, a[i].y, a[i].z, a[i].w, b[i].x, b[i].y, b[i].z, b[i].w};
        OCT_UNROLL for (int e = 0; e < 8; e++) o[e] = oct_fma(wt, oct_u2f(u[e]), o[e]);
      }
    }
  }
  // The segments summed in wave order by wave 0: ((q0 + q1) + q2) + ... .
  if (w > 0) {
    OCT_UNROLL for (int e = 0; e < 8; e++) part[w - 1][8 * lane + e] = o[e];
    if (lane == 0) part[w - 1][256] = L;
  }
  oct_sync();
  if (w > 0) return;
  OCT_UNROLL for (int v = 0; v < RD_WAVES - 1; v++) {
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

// CUDA: launched with programmatic stream serialization, so that its workgroups are scheduled
// while the decode before it finishes (the decode lets them once each of its workgroups has
// started; the reduce's first act is to wait for the decode's completion and memory): q1s100k
// 0.0329 ms, against 0.0344 launched plainly.
hipError_t oct_launch_reduce(const OctReduceParams& p) {
#if defined(OCT_NV)
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.gridDim = dim3((unsigned)((int64_t)p.num_q * p.hq)), cfg.blockDim = dim3(32 * RD_WAVES);
  cfg.dynamicSmemBytes = 0, cfg.stream = 0, cfg.attrs = at, cfg.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, octave_reduce_kernel, p);
  if (e != cudaSuccess) return e;
  return oct_launch_status();
#else
  OCT_LAUNCH(octave_reduce_kernel, (int64_t)p.num_q * p.hq, 1, 1, 32 * RD_WAVES, p);
  return oct_launch_status();
#endif
}
