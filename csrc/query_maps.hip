// query maps (docs/contract.md §4): query_start_loc + seq_lens -> q_to_req, q_to_klen, on the device.
// One thread per query token; req by binary search (searchsorted right over qsl[1..num_reqs]).
#include "octave_mutant.h"
#include "octave_params.h"

OCT_KERNEL(OCT_THREADS) void octave_query_maps_kernel(OctQueryMapsParams p) {
#if OCT_DEVICE_BODY
  const int64_t t = (int64_t)oct_bid_x() * OCT_THREADS + oct_tid();
  if (t >= p.num_q) return;
  // req = #{ j in 1..R : qsl[j] <= t }; mutant OCT_MUT_QMAPS_PAD_LAST_REQ searches 0..R-1 only
  int lo = 0, hi = OCT_MUTANT(OCT_MUT_QMAPS_PAD_LAST_REQ) ? p.num_reqs - 1 : p.num_reqs;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if ((int64_t)p.qsl[mid + 1] <= t) lo = mid + 1;
    else hi = mid;
  }
  int32_t klen = 0;
  if (lo < p.num_reqs) {
    const int64_t start = p.qsl[lo], qlen = (int64_t)p.qsl[lo + 1] - start;
    klen = (int32_t)(uint32_t)(uint64_t)((int64_t)p.seq_lens[lo] - qlen + (t - start) + 1);
  }
  p.q_to_req[t] = lo;
  p.q_to_klen[t] = klen;
#endif
}

hipError_t oct_launch_query_maps(const OctQueryMapsParams& p) {
  OCT_LAUNCH(octave_query_maps_kernel, ((int64_t)p.num_q + OCT_THREADS - 1) / OCT_THREADS, 1, 1,
             OCT_THREADS, p);
  return oct_launch_status();
}
