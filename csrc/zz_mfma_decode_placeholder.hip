// PLACEHOLDER on the mfma-prefill branch only (the integrator replaces it with decode_mfma.hip and
// reduce_mfma.hip): the mfma decode and reduce launchers routed to the portable ones so that the
// library links while the prefill is written. Delete this file when merging.
#include "octave_params.h"
hipError_t oct_launch_decode_mfma(const OctDecodeParams& p0) {
  OctDecodeParams p = p0;
  return oct_launch_decode(p);
}
hipError_t oct_launch_reduce_mfma(const OctReduceParams& p) { return oct_launch_reduce(p); }
