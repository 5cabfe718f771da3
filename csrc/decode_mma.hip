// decode, mma tier: which kernel a launch takes (decode_mma.h has the design).
#include "decode_mma.h"

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
};

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
  if (quad) return oct_launch_decode_mma_quad(p, chunks);
  // 8 warps when every workgroup that has tokens gets an SM of its own (splits past the last
  // token are empty and end at once).
  const int64_t used = (p.kv_max + p.split_len - 1) / p.split_len;
  const int64_t busy = chunks * (used < p.num_splits ? used : p.num_splits) * p.hkv;
  const bool w8 = nt == 1 && (OCT_DM_W8 || (busy <= p.sms && (p.fmt != 4 || p.split_len <= DM_W8TOK)));
  return oct_launch_decode_mma_warp(p, chunks, nt, w8);
}
