// rotate (docs/contract.md §3.2): in place, one logical wave per (token, head) row of 256.
// Forward: signs, then the normalized FWHT (64-dim blocks or 256). Inverse: transform, then signs.
#include "octave_lane.h"
#include "octave_mutant.h"
#include "octave_params.h"

OCT_KERNEL(OCT_THREADS) void octave_rotate_kernel(OctRotateParams p) {
#if OCT_DEVICE_BODY
  const int lane = oct_lane();
  const int64_t gw = (int64_t)oct_bid_x() * OCT_WAVES + oct_wave();
  if (gw >= (int64_t)p.rows * p.heads) return;
  uint16_t* row = p.x + (gw / p.heads) * p.st + (gw % p.heads) * p.sh + 8 * lane;
  float v[8];
  oct_load8(row, p.dtype, v);
  if (p.inverse && OCT_MUTANT(OCT_MUT_ROTATE_INV_ORDER)) oct_rotate(v, p.signs, lane, p.block64 != 0);  // mutant
  else if (p.inverse) oct_unrotate(v, p.signs, lane, p.block64 != 0);
  else oct_rotate(v, p.signs, lane, p.block64 != 0);
  oct_store8(row, p.dtype, v);
#endif
}

hipError_t oct_launch_rotate(const OctRotateParams& p) {
  const int64_t waves = (int64_t)p.rows * p.heads;
  OCT_LAUNCH(octave_rotate_kernel, (waves + OCT_WAVES - 1) / OCT_WAVES, 1, 1, OCT_THREADS, p);
  return oct_launch_status();
}
