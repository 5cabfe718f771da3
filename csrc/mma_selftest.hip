// octave_mma_selftest (csrc/include/octave_selftest.h, for tests only): one mma.sync (or one
// ldmatrix.x4) per problem, raw per-lane registers in and out, so that the test encodes the
// documented register layout itself. CUDA builds run the PTX instruction, the emulator the model (octave_mma.h); HIP builds
// get a stub the host never launches.
#include "octave_lane.h"
#include "octave_mma.h"
#include "octave_params.h"

// One warp of 32 lanes per problem (workgroup x).
OCT_KERNEL(32) void octave_mma_selftest_kernel(OctMmaSelftestParams p) {
#if OCT_MMA_BODY
  const int64_t lane = (int64_t)oct_bid_x() * 32 + oct_lane();
  if (p.form == 2) {  // ldmatrix.x4: a is the shared image (32 rows of 16 bytes), b[lane][0] the lane's row
    OCT_SHARED OctU4 img[32];
    const OctU4 x = {p.a[lane * 4], p.a[lane * 4 + 1], p.a[lane * 4 + 2], p.a[lane * 4 + 3]};
    img[oct_lane()] = x;
    oct_sync();
    uint32_t r[4];
    oct_ldsm_x4(oct_smem_addr(&img[p.b[lane * 2] & 31]), r);
    for (int i = 0; i < 4; i++) p.d[lane * 4 + i] = r[i];
  } else if (p.form == 0) {
    OctMmaA16 a;
    OctMmaB16 b;
    OctMmaF32 c;
    for (int i = 0; i < 4; i++) a.r[i] = p.a[lane * 4 + i], c.r[i] = oct_u2f(p.c[lane * 4 + i]);
    for (int i = 0; i < 2; i++) b.r[i] = p.b[lane * 2 + i];
    const OctMmaF32 d = oct_mma_m16n8k16_f32_f16(a, b, c);
    for (int i = 0; i < 4; i++) p.d[lane * 4 + i] = oct_f2u(d.r[i]);
  } else {
    OctMmaA8 a;
    OctMmaB8 b;
    OctMmaI32 c;
    for (int i = 0; i < 4; i++) a.r[i] = p.a[lane * 4 + i], c.r[i] = (int32_t)p.c[lane * 4 + i];
    for (int i = 0; i < 2; i++) b.r[i] = p.b[lane * 2 + i];
    const OctMmaI32 d = oct_mma_m16n8k32_s32_s8(a, b, c);
    for (int i = 0; i < 4; i++) p.d[lane * 4 + i] = (uint32_t)d.r[i];
  }
#else
  (void)p;
#endif
}

hipError_t oct_launch_mma_selftest(const OctMmaSelftestParams& p) {
  OCT_LAUNCH(octave_mma_selftest_kernel, p.n, 1, 1, 32, p);
  return oct_launch_status();
}
