// octave_mfma_selftest (csrc/include/octave_selftest.h, for tests only): one MFMA per problem on a
// wave of 64 lanes, raw per-lane registers in and out, so that the test encodes the documented
// register layout itself; and the model's 64-lane operand exchange on its own. gfx942 runs the
// instructions, the emulator and CUDA builds the model (octave_mfma.h); gfx1100 has no MFMA and
// gets a stub the host never launches.
#include "octave_mfma.h"
#include "octave_params.h"

#if OCT_MFMA_BODY
// Form 0 (i8), 1 (f16) and 3 (bf16): registers a[0..1], b[0..1] and c[0..3] of each lane in, d[0..3] out.
template <int FORM>
OCT_DEV void mst_run(const OctMfmaSelftestParams& p, int64_t base) {
  if (FORM == 0) {
    OctMfmaI8 a, b;
    OctMfmaI32 c;
    for (int i = 0; i < 2; i++) a.r[i] = p.a[base + i], b.r[i] = p.b[base + i];
    for (int i = 0; i < 4; i++) c.r[i] = (int32_t)p.c[base + i];
    const OctMfmaI32 d = oct_mfma_i32_16x16x32_i8(a, b, c);
    for (int i = 0; i < 4; i++) p.d[base + i] = (uint32_t)d.r[i];
  } else {
    OctMfmaH16 a, b;
    OctMfmaF32 c;
    for (int i = 0; i < 2; i++) a.r[i] = p.a[base + i], b.r[i] = p.b[base + i];
    for (int i = 0; i < 4; i++) c.r[i] = oct_u2f(p.c[base + i]);
    const OctMfmaF32 d = FORM == 3 ? oct_mfma_f32_16x16x16_bf16(a, b, c) : oct_mfma_f32_16x16x16_f16(a, b, c);
    for (int i = 0; i < 4; i++) p.d[base + i] = oct_f2u(d.r[i]);
  }
}

#if OCT_MFMA_MODEL
// Form 2 (the model's exchange): two exchanges in a row, of 2 and of 4 words. Lane l gives a[0..1]
// in the first and c[0..3] in the second; d[0..1] are a[0..1] of lane b[0] mod 64, d[2..3] are
// c[2..3] of lane b[1] mod 64.
OCT_DEV void mst_exchange(const OctMfmaSelftestParams& p, int64_t base) {
  const uint32_t first[2] = {p.a[base], p.a[base + 1]};
  const uint32_t second[4] = {p.c[base], p.c[base + 1], p.c[base + 2], p.c[base + 3]};
  const int s0 = (int)(p.b[base] & 63), s1 = (int)(p.b[base + 1] & 63);
  const OctMfmaExchange<2> x(first);
  const uint32_t d0 = x.get(s0, 0), d1 = x.get(s0, 1);
  x.done();
  const OctMfmaExchange<4> y(second);
  const uint32_t d2 = y.get(s1, 2), d3 = y.get(s1, 3);
  y.done();
  p.d[base] = d0, p.d[base + 1] = d1, p.d[base + 2] = d2, p.d[base + 3] = d3;
}
#endif
#endif

// One wave of 64 lanes per problem, four waves a workgroup (problem 4·x + wave), so that the
// model's exchange runs with several waves of a workgroup at once (on CUDA: each its own named
// barrier and slice of the shared buffer). The form is uniform; a wave past n returns at once.
OCT_KERNEL(256) void octave_mfma_selftest_kernel(OctMfmaSelftestParams p) {
#if OCT_MFMA_BODY
  const int64_t prob = (int64_t)oct_bid_x() * 4 + (oct_tid() >> 6);
  if (prob >= p.n) return;
  const int64_t base = (prob * 64 + oct_mfma_lane()) * 4;
  switch (p.form) {  // the host accepts these only (form 2 on the model's builds)
    case 0: mst_run<0>(p, base); break;
    case 1: mst_run<1>(p, base); break;
    case 3: mst_run<3>(p, base); break;
#if OCT_MFMA_MODEL
    case 2: mst_exchange(p, base); break;
#endif
    default: break;
  }
#else
  (void)p;
#endif
}

hipError_t oct_launch_mfma_selftest(const OctMfmaSelftestParams& p) {
  OCT_LAUNCH(octave_mfma_selftest_kernel, (p.n + 3) / 4, 1, 1, 256, p);
  return oct_launch_status();
}
