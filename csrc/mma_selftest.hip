// octave_mma_selftest (csrc/include/octave_selftest.h, for tests only): one mma.sync (or one
// ldmatrix.x4, or one wgmma) per problem, raw per-lane registers in and out, so that the test encodes the
// documented register layout itself. CUDA builds run the PTX instruction, the emulator the model (octave_mma.h); HIP builds
// get a stub the host never launches.
#include "octave_lane.h"
#include "octave_mma.h"
#include "octave_params.h"
#include "octave_wgmma.h"

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

// Form 3, wgmma m64n256k16 (octave_wgmma.h): one warpgroup of 128 threads per problem. b holds,
// per problem, the header (LBO, SBO, the start's byte offset in the image) and the shared image of
// OCT_WG_IMAGE words that B is read from through the descriptor; a, c and d 4 and 128 registers
// per thread.
OCT_KERNEL(128) void octave_wgmma_selftest_kernel(OctMmaSelftestParams p) {
#if OCT_WGMMA
  OCT_SHARED OctU4 img[OCT_WG_IMAGE / 4];
  const int64_t prob = oct_bid_x(), th = prob * 128 + oct_tid();
  const uint32_t* hb = p.b + prob * (OCT_WG_HEADER + OCT_WG_IMAGE);
  for (int i = oct_tid(); i < OCT_WG_IMAGE / 4; i += 128) {
    const uint32_t* s = hb + OCT_WG_HEADER + 4 * i;
    const OctU4 x = {s[0], s[1], s[2], s[3]};
    img[i] = x;
  }
  oct_wgmma_proxy_fence();  // the image's stores, visible to wgmma's reads (the async proxy)
  oct_sync();
  OctMmaA16 a[2];  // (oct_wgmma_fence takes a k-step pair; the second is unused)
  OctMmaF32 d[32];
  for (int i = 0; i < 4; i++) a[0].r[i] = p.a[th * 4 + i], a[1].r[i] = 0;
  OCT_UNROLL for (int j = 0; j < 32; j++)
    OCT_UNROLL for (int i = 0; i < 4; i++) d[j].r[i] = oct_u2f(p.c[th * 128 + 4 * j + i]);
  const uint64_t desc = oct_wgmma_desc(img, (const uint8_t*)img + hb[2], hb[0], hb[1]);
  oct_wgmma_fence(d, a);
  oct_wgmma_m64n256k16_f32_f16(d, a[0], img, desc);
  oct_wgmma_commit();
  oct_wgmma_wait<0>(d);
  OCT_UNROLL for (int j = 0; j < 32; j++)
    OCT_UNROLL for (int i = 0; i < 4; i++) p.d[th * 128 + 4 * j + i] = oct_f2u(d[j].r[i]);
#else
  (void)p;
#endif
}

hipError_t oct_launch_mma_selftest(const OctMmaSelftestParams& p) {
  if (p.form == 3) {
    OCT_LAUNCH(octave_wgmma_selftest_kernel, p.n, 1, 1, 128, p);
  } else {
    OCT_LAUNCH(octave_mma_selftest_kernel, p.n, 1, 1, 32, p);
  }
  return oct_launch_status();
}
