// octave_wmma_selftest (csrc/include/octave_selftest.h, for tests only): one WMMA per problem, raw
// per-lane registers in and out, so that the test encodes the documented register layout itself.
// gfx1100 runs the instruction, the emulator and CUDA builds the model (octave_wmma.h); gfx942 has
// no WMMA and gets a stub the host never launches.
#include "octave_params.h"
#include "octave_wmma.h"

#if OCT_WMMA_BODY
template <int FORM, int FLAGS>
OCT_DEV void wst_run(const OctWmmaSelftestParams& p, int64_t base) {
  OctWmmaH16 a, b;
  for (int i = 0; i < 8; i++) a.r[i] = p.a[base + i], b.r[i] = p.b[base + i];
  if (FORM == 0 || FORM == 3) {
    OctWmmaF32 c;
    for (int i = 0; i < 8; i++) c.r[i] = oct_u2f(p.c[base + i]);
    const OctWmmaF32 d = FORM == 0 ? oct_wmma_f32_16x16x16_f16(a, b, c) : oct_wmma_f32_16x16x16_bf16(a, b, c);
    for (int i = 0; i < 8; i++) p.d[base + i] = oct_f2u(d.r[i]);
  } else if (FORM == 1) {
    OctWmmaH16 c;
    for (int i = 0; i < 8; i++) c.r[i] = p.c[base + i];
    const OctWmmaH16 d = oct_wmma_f16_16x16x16_f16<(FLAGS & 1) != 0>(a, b, c);
    for (int i = 0; i < 8; i++) p.d[base + i] = d.r[i];
  } else {
    OctWmmaI8 ai, bi;
    OctWmmaI32 c;
    for (int i = 0; i < 4; i++) ai.r[i] = a.r[i], bi.r[i] = b.r[i];
    for (int i = 0; i < 8; i++) c.r[i] = (int32_t)p.c[base + i];
    const OctWmmaI32 d = oct_wmma_i32_16x16x16_iu8<(FLAGS & 2) != 0, (FLAGS & 4) != 0, (FLAGS & 8) != 0>(ai, bi, c);
    for (int i = 0; i < 8; i++) p.d[base + i] = (uint32_t)d.r[i];
  }
}
#endif

// One wave of 32 lanes per problem (workgroup x). The form and flags are immediates of the
// instructions: one instantiation each, picked by a wave-uniform switch.
OCT_KERNEL(32) void octave_wmma_selftest_kernel(OctWmmaSelftestParams p) {
#if OCT_WMMA_BODY
  const int64_t base = ((int64_t)oct_bid_x() * 32 + oct_lane()) * 8;
  switch (p.form * 16 + p.flags) {  // the host accepts these combinations only
    case 0: wst_run<0, 0>(p, base); break;
    case 16: wst_run<1, 0>(p, base); break;
    case 17: wst_run<1, 1>(p, base); break;
    case 32: wst_run<2, 0>(p, base); break;
    case 34: wst_run<2, 2>(p, base); break;
    case 36: wst_run<2, 4>(p, base); break;
    case 38: wst_run<2, 6>(p, base); break;
    case 40: wst_run<2, 8>(p, base); break;
    case 42: wst_run<2, 10>(p, base); break;
    case 44: wst_run<2, 12>(p, base); break;
    case 46: wst_run<2, 14>(p, base); break;
    case 48: wst_run<3, 0>(p, base); break;
    default: break;
  }
#else
  (void)p;
#endif
}

hipError_t oct_launch_wmma_selftest(const OctWmmaSelftestParams& p) {
  OCT_LAUNCH(octave_wmma_selftest_kernel, p.n, 1, 1, 32, p);
  return oct_launch_status();
}
