// NVIDIA's warpgroup-level MMA (wgmma.mma_async, sm_90a) for the sm_90 tier's prefill:
// on sm_90a builds the PTX instructions, on the CPU emulator a model of them, behind one set of
// functions, as octave_mma.h does for mma.sync (docs/kernels.md, "The wgmma model").
//
//   OCT_WGMMA  1 when this pass has wgmma: nvcc for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL), or the
//              emulator (the model). sm_90 without the "a" and the AMD passes have none: the
//              kernels keep their mma.sync path there. OCT_NO_WGMMA takes that path where wgmma
//              exists: the emulator variant nowg (mk/kernels.mk), so that `make emu-test` tests
//              the mma.sync prefill of sm_90 builds.
//
// One form: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 with A from registers and B from
// shared memory through a matrix descriptor, D += A·B (scale-d 1, no negation, B not transposed).
// The warpgroup is 4 consecutive warps (warp w of the workgroup is warp w % 4 of warpgroup w / 4);
// all 128 threads execute each call. Register layout (PTX ISA, "Register Fragments and Shared
// Memory Matrix Layouts" for wgmma .m64nNk16), g = lane >> 2, t = lane & 3, W = w % 4:
//   A   4 registers, exactly the m16n8k16 A fragment of rows 16W .. 16W + 15 (octave_mma.h)
//   D   128 registers as OctMmaF32 d[32]: d[j].r[i] is row 16W + g + 8·(i >> 1), column
//       8j + 2t + (i & 1) — the m16n8 accumulator of column tile j
//   B   K × N = 16 × 256 f16 in shared memory, "K-major" (the mma .col B), no swizzle: core
//       matrices of 8 N-rows × 16 bytes (8 K-elements, 2 bytes each), each 128 contiguous bytes;
//       element (k, n) at start + (k / 8)·LBO + (n / 8)·SBO + (n % 8)·16 + (k % 8)·2.
//   descriptor (64 bits): bits 0–13 start address >> 4 (the shared window), 16–29 LBO >> 4 (the
//       byte offset between core matrices adjacent in K), 32–45 SBO >> 4 (adjacent in N), 49–51
//       base offset 0, 62–63 swizzle mode 0 (none).
// Asynchrony: wgmma.fence before the first wgmma that reads registers other instructions wrote
// (the accumulators, A), commit_group after the calls, wait_group N before the accumulators or
// the shared B are touched again. oct_wgmma_fence first pins the accumulators and A (empty asm
// that "modifies" them) so that the compiler moves no write of them below the fence, and
// oct_wgmma_wait pins the accumulators after the wait so that it moves no read of them above it.
// B is read through the async proxy: shared-memory stores of the generic proxy (st.shared) are
// made visible to it by fence.proxy.async.shared::cta in each storing thread, before the barrier
// that orders them with the wgmma (oct_wgmma_proxy_fence).
//
// The model: synchronous (the fence, commit and wait are nothing): each warp's A rows times B
// read through the descriptor, with the mma.sync model's arithmetic (octave_mma.h: exact products
// summed in float64 in k order, C added, one rounding to float32). The emulator's descriptor
// holds the start address relative to a base the caller names (the emulator's shared memory is
// host memory, not a window), so the same LBO/SBO bits are decoded as the hardware decodes them;
// an address that is not 16-byte aligned or out of the 14-bit field stops the emulator.
#pragma once

#include "octave_mma.h"

#if OCT_MMA_BODY && !defined(OCT_NO_WGMMA) && (defined(OCT_EMU) || defined(__CUDA_ARCH_FEAT_SM90_ALL))
#define OCT_WGMMA 1
#else
#define OCT_WGMMA 0
#endif

#if OCT_WGMMA
// The descriptor's fields from a shared-window address and the two byte offsets (multiples of 16
// below 2^18; the low 4 bits are dropped).
OCT_DEV uint64_t oct_wgmma_fields(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFF) << 32);
}

// oct_wgmma_desc: the descriptor of a no-swizzle B at p with byte offsets lbo (along K) and sbo
// (along N); base is the shared memory block p lies in (the emulator's reference point).
#if defined(OCT_NV)
OCT_DEV uint64_t oct_wgmma_desc(const void* base, const void* p, uint32_t lbo, uint32_t sbo) {
  (void)base;
  return oct_wgmma_fields(oct_smem_u32(p), lbo, sbo);
}
OCT_DEV void oct_wgmma_fence(OctMmaF32 (&d)[32], OctMmaA16 (&a)[2]) {
  OCT_UNROLL for (int j = 0; j < 32; j++)
    OCT_UNROLL for (int i = 0; i < 4; i++) asm volatile("" : "+f"(d[j].r[i])::"memory");
  OCT_UNROLL for (int k = 0; k < 2; k++)
    OCT_UNROLL for (int i = 0; i < 4; i++) asm volatile("" : "+r"(a[k].r[i])::"memory");
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
OCT_DEV void oct_wgmma_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
OCT_DEV void oct_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed groups are pending, then fences the accumulators d.
template <int N>
OCT_DEV void oct_wgmma_wait(OctMmaF32 (&d)[32]) {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
  OCT_UNROLL for (int j = 0; j < 32; j++)
    OCT_UNROLL for (int i = 0; i < 4; i++) asm volatile("" : "+f"(d[j].r[i])::"memory");
}
// d += A·B (B through desc; base unused on the hardware).
OCT_DEV void oct_wgmma_m64n256k16_f32_f16(OctMmaF32 (&d)[32], const OctMmaA16& a, const void* base, uint64_t desc) {
  (void)base;
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %133, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, {%128, %129, %130, %131}, %132, p, 1, 1, 0;\n\t}\n"
      : "+f"(d[0].r[0]), "+f"(d[0].r[1]), "+f"(d[0].r[2]), "+f"(d[0].r[3]),
        "+f"(d[1].r[0]), "+f"(d[1].r[1]), "+f"(d[1].r[2]), "+f"(d[1].r[3]),
        "+f"(d[2].r[0]), "+f"(d[2].r[1]), "+f"(d[2].r[2]), "+f"(d[2].r[3]),
        "+f"(d[3].r[0]), "+f"(d[3].r[1]), "+f"(d[3].r[2]), "+f"(d[3].r[3]),
        "+f"(d[4].r[0]), "+f"(d[4].r[1]), "+f"(d[4].r[2]), "+f"(d[4].r[3]),
        "+f"(d[5].r[0]), "+f"(d[5].r[1]), "+f"(d[5].r[2]), "+f"(d[5].r[3]),
        "+f"(d[6].r[0]), "+f"(d[6].r[1]), "+f"(d[6].r[2]), "+f"(d[6].r[3]),
        "+f"(d[7].r[0]), "+f"(d[7].r[1]), "+f"(d[7].r[2]), "+f"(d[7].r[3]),
        "+f"(d[8].r[0]), "+f"(d[8].r[1]), "+f"(d[8].r[2]), "+f"(d[8].r[3]),
        "+f"(d[9].r[0]), "+f"(d[9].r[1]), "+f"(d[9].r[2]), "+f"(d[9].r[3]),
        "+f"(d[10].r[0]), "+f"(d[10].r[1]), "+f"(d[10].r[2]), "+f"(d[10].r[3]),
        "+f"(d[11].r[0]), "+f"(d[11].r[1]), "+f"(d[11].r[2]), "+f"(d[11].r[3]),
        "+f"(d[12].r[0]), "+f"(d[12].r[1]), "+f"(d[12].r[2]), "+f"(d[12].r[3]),
        "+f"(d[13].r[0]), "+f"(d[13].r[1]), "+f"(d[13].r[2]), "+f"(d[13].r[3]),
        "+f"(d[14].r[0]), "+f"(d[14].r[1]), "+f"(d[14].r[2]), "+f"(d[14].r[3]),
        "+f"(d[15].r[0]), "+f"(d[15].r[1]), "+f"(d[15].r[2]), "+f"(d[15].r[3]),
        "+f"(d[16].r[0]), "+f"(d[16].r[1]), "+f"(d[16].r[2]), "+f"(d[16].r[3]),
        "+f"(d[17].r[0]), "+f"(d[17].r[1]), "+f"(d[17].r[2]), "+f"(d[17].r[3]),
        "+f"(d[18].r[0]), "+f"(d[18].r[1]), "+f"(d[18].r[2]), "+f"(d[18].r[3]),
        "+f"(d[19].r[0]), "+f"(d[19].r[1]), "+f"(d[19].r[2]), "+f"(d[19].r[3]),
        "+f"(d[20].r[0]), "+f"(d[20].r[1]), "+f"(d[20].r[2]), "+f"(d[20].r[3]),
        "+f"(d[21].r[0]), "+f"(d[21].r[1]), "+f"(d[21].r[2]), "+f"(d[21].r[3]),
        "+f"(d[22].r[0]), "+f"(d[22].r[1]), "+f"(d[22].r[2]), "+f"(d[22].r[3]),
        "+f"(d[23].r[0]), "+f"(d[23].r[1]), "+f"(d[23].r[2]), "+f"(d[23].r[3]),
        "+f"(d[24].r[0]), "+f"(d[24].r[1]), "+f"(d[24].r[2]), "+f"(d[24].r[3]),
        "+f"(d[25].r[0]), "+f"(d[25].r[1]), "+f"(d[25].r[2]), "+f"(d[25].r[3]),
        "+f"(d[26].r[0]), "+f"(d[26].r[1]), "+f"(d[26].r[2]), "+f"(d[26].r[3]),
        "+f"(d[27].r[0]), "+f"(d[27].r[1]), "+f"(d[27].r[2]), "+f"(d[27].r[3]),
        "+f"(d[28].r[0]), "+f"(d[28].r[1]), "+f"(d[28].r[2]), "+f"(d[28].r[3]),
        "+f"(d[29].r[0]), "+f"(d[29].r[1]), "+f"(d[29].r[2]), "+f"(d[29].r[3]),
        "+f"(d[30].r[0]), "+f"(d[30].r[1]), "+f"(d[30].r[2]), "+f"(d[30].r[3]),
        "+f"(d[31].r[0]), "+f"(d[31].r[1]), "+f"(d[31].r[2]), "+f"(d[31].r[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "l"(desc), "r"(1));
}
#else
// ---- the emulator: the model -------------------------------------------------------------------
OCT_DEV uint64_t oct_wgmma_desc(const void* base, const void* p, uint32_t lbo, uint32_t sbo) {
  const uintptr_t off = (uintptr_t)p - (uintptr_t)base;
  if ((off & 15) || off >= (1u << 18) || (lbo & 15) || (sbo & 15) || lbo >= (1u << 18) || sbo >= (1u << 18))
    __builtin_trap();
  return oct_wgmma_fields((uint32_t)off, lbo, sbo);
}
OCT_DEV void oct_wgmma_fence(OctMmaF32 (&d)[32], OctMmaA16 (&a)[2]) {
  (void)d, (void)a;
}
OCT_DEV void oct_wgmma_proxy_fence() {}
OCT_DEV void oct_wgmma_commit() {}
template <int N>
OCT_DEV void oct_wgmma_wait(OctMmaF32 (&d)[32]) {
  (void)d;
}
OCT_DEV void oct_wgmma_m64n256k16_f32_f16(OctMmaF32 (&d)[32], const OctMmaA16& a, const void* base, uint64_t desc) {
  if ((desc >> 46) != 0) __builtin_trap();  // base offset and swizzle: the model has neither
  const uint8_t* b = (const uint8_t*)base + ((desc & 0x3FFF) << 4);
  const uint32_t lbo = (uint32_t)((desc >> 16) & 0x3FFF) << 4, sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4;
  const uint32_t none[2] = {0, 0};
  const OctMmaWarp w(a.r, none);
  const int lane = oct_lane();
  OCT_UNROLL for (int j = 0; j < 32; j++)
    for (int i = 0; i < 4; i++) {
      const int m = oct_mma_acc_row(i, lane), n = 8 * j + oct_mma_acc_col(i, lane);
      double s = 0.0;
      for (int k = 0; k < 16; k++) {
        uint16_t x;
        __builtin_memcpy(&x, b + (k >> 3) * lbo + (n >> 3) * sbo + (n & 7) * 16 + (k & 7) * 2, 2);
        s += oct_mma_a16(w, m, k) * (double)oct_f16_to_f32(x);
      }
      d[j].r[i] = (float)(s + (double)d[j].r[i]);
    }
}
#endif  // OCT_NV
#endif  // OCT_WGMMA

#if OCT_MMA_BODY && !OCT_WGMMA
OCT_DEV void oct_wgmma_proxy_fence() {}  // no wgmma: nothing reads shared memory through the async proxy
#endif
