// Architecture primitives of the Octave kernels, behind one header.
//
// The kernels are written once against the small vocabulary below and compile three ways:
//
//   OCT_AMD  clang HIP (hipcc or Debian clang-19 -x hip): gfx1100 (RDNA3, wave32) and gfx942
//            (CDNA3, wave64). Device code uses clang builtins only, so it builds with -nogpulib
//            (no device library): thread ids through __builtin_amdgcn_workitem_id_x and friends.
//   OCT_NV   nvcc (__CUDACC__ and not __HIP__): sm_90. dp4a, __byte_perm, __shfl_xor_sync.
//   OCT_EMU  a plain C++ compiler: the CPU emulator of csrc/emu/ runs every thread of a workgroup
//            as a fiber, so the same kernels can be executed and tested on a machine without GPU.
//
// Logical waves are 32 lanes. Every cross-lane operation stays inside its aligned group of 32
// lanes, so the code is valid on wave32 and on wave64 hardware (two logical waves per hardware
// wave). A shuffle must be reached by all 32 lanes of its logical wave.
//
// Rounding: the kernels never rely on the compiler to fuse or not fuse. Where the format fixes the
// float32 operation order (FWHT, quantizer), they use oct_add_rn/oct_mul_rn/oct_div_rn/oct_sqrt_rn,
// which are never contracted into FMAs; where an FMA is wanted it is written as oct_fma.
#pragma once

#include <stdint.h>

#if defined(__HIP__)
#define OCT_AMD 1
#include <hip/hip_runtime.h>
#elif defined(__CUDACC__)
#define OCT_NV 1
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#else
#define OCT_EMU 1
#endif

// ---- qualifiers ---------------------------------------------------------------------------------
#if defined(__clang__) || defined(__CUDACC__)
#define OCT_UNROLL _Pragma("unroll")
#define OCT_NOUNROLL _Pragma("unroll 1")
#define OCT_UNROLL4 _Pragma("unroll 4")
#else
#define OCT_UNROLL _Pragma("GCC unroll 16")
#define OCT_NOUNROLL _Pragma("GCC unroll 1")
#define OCT_UNROLL4 _Pragma("GCC unroll 4")
#endif

#if defined(OCT_EMU)
#include "octave_emu.h"
#define OCT_DEV inline
#define OCT_KERNEL(threads) extern "C"
#define OCT_KERNEL_OCC(threads, blocks) extern "C"
#define OCT_SHARED static
#else
#if defined(OCT_NV)
#define OCT_DEV __device__ __forceinline__
#else
#define OCT_DEV __device__ inline __attribute__((always_inline))
#endif
#define OCT_KERNEL(threads) extern "C" __global__ __launch_bounds__(threads)
// OCT_KERNEL_OCC: also asks for `blocks` resident workgroups per SM (NVIDIA: the register cap
// 64K / (threads * blocks)); AMD takes only the thread bound (its second operand means waves per EU).
#if defined(OCT_NV)
#define OCT_KERNEL_OCC(threads, blocks) extern "C" __global__ __launch_bounds__(threads, blocks)
#else
#define OCT_KERNEL_OCC(threads, blocks) extern "C" __global__ __launch_bounds__(threads)
#endif
#define OCT_SHARED __shared__
#endif

// True when this compilation pass emits real kernel bodies. Device passes for architectures the
// suite does not support compile the kernels as empty stubs; the host side refuses such devices at
// octave_open, so a stub is never launched.
#if defined(OCT_EMU)
#define OCT_DEVICE_BODY 1
#elif defined(OCT_AMD) && defined(__HIP_DEVICE_COMPILE__)
#if defined(__gfx1100__) || defined(__gfx942__)
#define OCT_DEVICE_BODY 1
#endif
#elif defined(OCT_NV) && defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ == 900
#define OCT_DEVICE_BODY 1
#endif
#endif
#if !defined(OCT_DEVICE_BODY)
#define OCT_DEVICE_BODY 0
#endif

#if OCT_DEVICE_BODY

// ---- thread and block ids -----------------------------------------------------------------------
#if defined(OCT_AMD)
OCT_DEV int oct_tid() { return (int)__builtin_amdgcn_workitem_id_x(); }
OCT_DEV int oct_bid_x() { return (int)__builtin_amdgcn_workgroup_id_x(); }
OCT_DEV int oct_bid_y() { return (int)__builtin_amdgcn_workgroup_id_y(); }
OCT_DEV int oct_bid_z() { return (int)__builtin_amdgcn_workgroup_id_z(); }
OCT_DEV void oct_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#elif defined(OCT_NV)
OCT_DEV int oct_tid() { return (int)threadIdx.x; }
OCT_DEV int oct_bid_x() { return (int)blockIdx.x; }
OCT_DEV int oct_bid_y() { return (int)blockIdx.y; }
OCT_DEV int oct_bid_z() { return (int)blockIdx.z; }
OCT_DEV void oct_sync() { __syncthreads(); }
#else
OCT_DEV int oct_tid() { return oct_emu_tid(); }
OCT_DEV int oct_bid_x() { return oct_emu_bid(0); }
OCT_DEV int oct_bid_y() { return oct_emu_bid(1); }
OCT_DEV int oct_bid_z() { return oct_emu_bid(2); }
OCT_DEV void oct_sync() { oct_emu_sync_block(); }
#endif

// Programmatic dependent launch (sm_90): a kernel launched after another with the PDL attribute
// (the reduce after the decode, CUDA builds) may start while the first still runs.
// oct_pdl_wait() blocks until the grids it depends on have completed and their memory is
// visible (a no-op when there are none); oct_pdl_trigger() lets the dependent grid launch once
// every workgroup of this grid has called it or exited. Both are no-ops on other targets.
#if defined(OCT_NV) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
OCT_DEV void oct_pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
OCT_DEV void oct_pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
#else
OCT_DEV void oct_pdl_wait() {}
OCT_DEV void oct_pdl_trigger() {}
#endif

// A hint to bring the 128-byte line at a global address into the L2 (CUDA: prefetch.global.L2);
// it reads nothing into registers, faults on nothing and is a no-op on other targets.
#if defined(OCT_NV) && defined(__CUDA_ARCH__)
OCT_DEV void oct_prefetch_l2(const void* a) { asm volatile("prefetch.global.L2 [%0];" ::"l"(a)); }
#else
OCT_DEV void oct_prefetch_l2(const void* a) { (void)a; }
#endif

// Barrier and shared-memory fence for the 32 lanes of the calling logical wave: every lane's
// shared-memory writes before it are visible to the wave's lanes after it. All 32 lanes must reach
// it. (wave64 gfx942: the two logical waves of a hardware wave run in lockstep; the fences keep the
// compiler from moving shared-memory accesses across it.)
#if defined(OCT_AMD)
OCT_DEV void oct_sync_wave() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#elif defined(OCT_NV)
OCT_DEV void oct_sync_wave() { __syncwarp(0xffffffffu); }
#else
OCT_DEV void oct_sync_wave() { oct_emu_sync_wave(); }
#endif

// Logical lane (0..31) and logical wave of the calling thread.
OCT_DEV int oct_lane() { return oct_tid() & 31; }
OCT_DEV int oct_wave() { return oct_tid() >> 5; }

// ---- bit casts ----------------------------------------------------------------------------------
#if defined(OCT_NV)
OCT_DEV uint32_t oct_f2u(float f) { return __float_as_uint(f); }
OCT_DEV float oct_u2f(uint32_t u) { return __uint_as_float(u); }
#else
OCT_DEV uint32_t oct_f2u(float f) { return __builtin_bit_cast(uint32_t, f); }
OCT_DEV float oct_u2f(uint32_t u) { return __builtin_bit_cast(float, u); }
#endif

// ---- 32-lane shuffles ---------------------------------------------------------------------------
// oct_shfl_xor<M>(v): the value of lane (lane ^ M), M < 32.
#if defined(OCT_AMD)
template <int M>
OCT_DEV uint32_t oct_shfl_xor_u32(uint32_t v) {
  static_assert(M > 0 && M < 32, "xor mask inside 32 lanes");
  // ds_swizzle bit mode: and_mask 0x1f, or_mask 0, xor_mask M; acts within groups of 32 lanes.
  return (uint32_t)__builtin_amdgcn_ds_swizzle((int)v, 0x1F | (M << 10));
}
#elif defined(OCT_NV)
template <int M>
OCT_DEV uint32_t oct_shfl_xor_u32(uint32_t v) {
  static_assert(M > 0 && M < 32, "xor mask inside 32 lanes");
  return __shfl_xor_sync(0xffffffffu, v, M, 32);
}
#else
template <int M>
OCT_DEV uint32_t oct_shfl_xor_u32(uint32_t v) {
  static_assert(M > 0 && M < 32, "xor mask inside 32 lanes");
  return oct_emu_shfl(v, oct_lane() ^ M);
}
#endif

template <int M>
OCT_DEV float oct_shfl_xor(float v) { return oct_u2f(oct_shfl_xor_u32<M>(oct_f2u(v))); }
template <int M>
OCT_DEV int oct_shfl_xor_i(int v) { return (int)oct_shfl_xor_u32<M>((uint32_t)v); }
template <int M>
OCT_DEV double oct_shfl_xor_d(double v) {
#if defined(OCT_NV)
  return __shfl_xor_sync(0xffffffffu, v, M, 32);
#else
  uint64_t b = __builtin_bit_cast(uint64_t, v);
  uint32_t lo = oct_shfl_xor_u32<M>((uint32_t)b), hi = oct_shfl_xor_u32<M>((uint32_t)(b >> 32));
  return __builtin_bit_cast(double, ((uint64_t)hi << 32) | lo);
#endif
}

// ---- int8 dot4 ----------------------------------------------------------------------------------
// oct_dot4(a, b, c) = c + Σ_{i<4} int8(a.byte i) · int8(b.byte i), both operands signed.
#if defined(OCT_AMD)
OCT_DEV int oct_dot4(uint32_t a, uint32_t b, int c) {
#if defined(__gfx1100__)
  return __builtin_amdgcn_sudot4(true, (int)a, true, (int)b, c, false);  // v_dot4_i32_iu8
#else
  return __builtin_amdgcn_sdot4((int)a, (int)b, c, false);  // v_dot4_i32_i8 / v_dot4c_i32_i8
#endif
}
#elif defined(OCT_NV)
OCT_DEV int oct_dot4(uint32_t a, uint32_t b, int c) { return __dp4a((int)a, (int)b, c); }  // IDP.4A
#else
OCT_DEV int oct_dot4(uint32_t a, uint32_t b, int c) {
  for (int i = 0; i < 4; i++) c += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
  return c;
}
#endif

// ---- byte permute: codebook lookup --------------------------------------------------------------
// oct_perm8(lo, hi, sel): byte i of the result is byte (sel.byte i) of the 8-byte table hi:lo
// (lo holds bytes 0..3). Every selector byte must be in 0..7.
#if defined(OCT_AMD)
OCT_DEV uint32_t oct_perm8(uint32_t lo, uint32_t hi, uint32_t sel) {
  return __builtin_amdgcn_perm(hi, lo, sel);  // v_perm_b32
}
#elif defined(OCT_NV)
OCT_DEV uint32_t oct_perm8(uint32_t lo, uint32_t hi, uint32_t sel) {
  // PRMT takes one selector nibble per result byte.
  uint32_t t = sel | (sel >> 4);
  uint32_t nib = (t & 0xFFu) | ((t >> 8) & 0xFF00u);
  return __byte_perm(lo, hi, nib);
}
#else
OCT_DEV uint32_t oct_perm8(uint32_t lo, uint32_t hi, uint32_t sel) {
  uint64_t tab = ((uint64_t)hi << 32) | lo;
  uint32_t r = 0;
  for (int i = 0; i < 4; i++) r |= (uint32_t)((tab >> (8 * ((sel >> (8 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
}
#endif

// ---- global -> shared copies --------------------------------------------------------------------
// oct_copy_g2s<B>(dst, src) copies B = 4 or 8 bytes from global src to shared dst, both B-aligned.
// NVIDIA (OCT_ASYNC_COPY 1): cp.async, asynchronous; oct_async_commit closes a group of copies and
// oct_async_wait<N> waits until at most the N most recent groups are pending; the bytes are then
// visible to the copying lane, and to the other lanes after oct_sync_wave / oct_sync. Elsewhere
// (OCT_ASYNC_COPY 0) the copy is a plain load and store, done when the call returns, and the group
// calls do nothing; callers batch loads before stores themselves (see decode.hip).
#if defined(OCT_NV)
#define OCT_ASYNC_COPY 1
OCT_DEV uint32_t oct_smem_u32(const void* p) {  // shared-window address of a shared pointer
  uint32_t a;
  asm("{\n\t.reg .u64 t;\n\tcvta.to.shared.u64 t, %1;\n\tcvt.u32.u64 %0, t;\n\t}" : "=r"(a) : "l"(p));
  return a;
}
template <int B>
OCT_DEV void oct_copy_g2s(void* dst, const void* src) {
  static_assert(B == 4 || B == 8, "cp.async of 4 or 8 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(oct_smem_u32(dst)), "l"(src), "n"(B) : "memory");
}
// The same to the shared-window address sdst (oct_smem_u32), done only when pred (a predicated
// instruction, no branch).
template <int B>
OCT_DEV void oct_copy_g2s_if(uint32_t sdst, const void* src, bool pred) {
  static_assert(B == 4 || B == 8, "cp.async of 4 or 8 bytes");
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p cp.async.ca.shared.global [%0], [%1], %3;\n\t}\n" ::"r"(
          sdst),
      "l"(src), "r"((int)pred), "n"(B)
      : "memory");
}
// 16 bytes, bypassing L1 (cp.async.cg): dst and src 16-byte aligned.
OCT_DEV void oct_copy_g2s16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(oct_smem_u32(dst)), "l"(src) : "memory");
}
// The same at dst + OFF and src + OFF, the offset an immediate of both addresses: copies from one
// pair of base addresses need no address arithmetic of their own.
template <int OFF>
OCT_DEV void oct_copy_g2s16_at(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0+%2], [%1+%2], 16;\n" ::"r"(oct_smem_u32(dst)), "l"(src), "n"(OFF) : "memory");
}
OCT_DEV void oct_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
OCT_DEV void oct_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
#else
#define OCT_ASYNC_COPY 0
template <int B>
OCT_DEV void oct_copy_g2s(void* dst, const void* src) {
  static_assert(B == 4 || B == 8, "copy of 4 or 8 bytes");
  __builtin_memcpy(__builtin_assume_aligned(dst, B), __builtin_assume_aligned(src, B), B);
}
OCT_DEV void oct_copy_g2s16(void* dst, const void* src) {
  __builtin_memcpy(__builtin_assume_aligned(dst, 16), __builtin_assume_aligned(src, 16), 16);
}
template <int OFF>
OCT_DEV void oct_copy_g2s16_at(void* dst, const void* src) {
  oct_copy_g2s16((uint8_t*)dst + OFF, (const uint8_t*)src + OFF);
}
OCT_DEV void oct_async_commit() {}
template <int N>
OCT_DEV void oct_async_wait() {}
#endif

// oct_perm8n(lo, hi, sel): the same lookup with nibble selectors: byte i of the result is byte
// (nibble i of sel) of hi:lo, for nibbles 0..3 (bits 0..15 of sel; the upper half is ignored), each
// in 0..7. NVIDIA: one PRMT. AMD: the nibbles are spread to bytes for v_perm_b32.
#if defined(OCT_AMD)
OCT_DEV uint32_t oct_perm8n(uint32_t lo, uint32_t hi, uint32_t sel) {
  uint32_t t = (sel & 0xFFu) | ((sel & 0xFF00u) << 8);       // bytes n1n0, 0, n3n2, 0
  t = (t & 0x000F000Fu) | ((t & 0x00F000F0u) << 4);          // bytes n0, n1, n2, n3
  return __builtin_amdgcn_perm(hi, lo, t);
}
#elif defined(OCT_NV)
OCT_DEV uint32_t oct_perm8n(uint32_t lo, uint32_t hi, uint32_t sel) {
  // prmt.b32 in its default mode (not __byte_perm, which masks the selector to 3 bits per nibble
  // with an extra instruction): nibble bit 3 would replicate the sign; callers keep it 0.
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(sel));
  return r;
}
#else
OCT_DEV uint32_t oct_perm8n(uint32_t lo, uint32_t hi, uint32_t sel) {
  uint64_t tab = ((uint64_t)hi << 32) | lo;
  uint32_t r = 0;
  for (int i = 0; i < 4; i++) r |= (uint32_t)((tab >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
}
#endif

// oct_nibmask(x, hi): byte i is 0xFF where bit 3 of nibble 4·hi + i of x is set, else 0 (hi: 0, 1).
// NVIDIA: one PRMT in its sign-replicating mode (selector nibble 8 + k: the sign of byte k,
// replicated) over x << 4 (bytes 0..3: the even nibbles' bit 3 at each byte's top) and x (the odd
// nibbles'). Elsewhere the same bits one by one.
#if defined(OCT_NV)
OCT_DEV uint32_t oct_nibmask(uint32_t x, int hi) {
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x << 4), "r"(x), "r"(hi ? 0xFBEAu : 0xD9C8u));
  return r;
}
#else
OCT_DEV uint32_t oct_nibmask(uint32_t x, int hi) {
  const uint32_t n = hi ? x >> 16 : x;
  uint32_t r = 0;
  for (int i = 0; i < 4; i++) r |= ((n >> (4 * i + 3)) & 1u) * (0xFFu << (8 * i));
  return r;
}
#endif

// (a & M) | c as one instruction (NVIDIA: lop3 in inline PTX, so that the compiler does not split
// it, re-deriving c from the value it came from at each use); M an immediate. Elsewhere the same.
#if defined(OCT_NV)
template <uint32_t M>
OCT_DEV uint32_t oct_and_or(uint32_t a, uint32_t c) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(a), "n"(M), "r"(c));
  return r;
}
#else
template <uint32_t M>
OCT_DEV uint32_t oct_and_or(uint32_t a, uint32_t c) { return (a & M) | c; }
#endif

// ---- float32 operations with a fixed rounding -----------------------------------------------------
#if defined(OCT_NV)
OCT_DEV float oct_add_rn(float a, float b) { return __fadd_rn(a, b); }
OCT_DEV float oct_sub_rn(float a, float b) { return __fsub_rn(a, b); }
OCT_DEV float oct_mul_rn(float a, float b) { return __fmul_rn(a, b); }
OCT_DEV float oct_div_rn(float a, float b) { return __fdiv_rn(a, b); }
OCT_DEV float oct_sqrt_rn(float a) { return __fsqrt_rn(a); }
OCT_DEV float oct_fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
OCT_DEV float oct_exp2(float a) { return exp2f(a); }
// exp2 with results below 2^-126 flushed to zero (the profiles' bounds allow it: docs/bounds.md, the
// ftz term) and within 2 ulps otherwise: ex2.approx.ftz.f32, the instruction exp2f itself uses for
// normal results, without exp2f's fix-ups for subnormal ones (five instructions fewer).
OCT_DEV float oct_exp2_ftz(float a) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}
OCT_DEV float oct_rint(float a) { return rintf(a); }
OCT_DEV bool oct_isfinite(float a) { return (__float_as_uint(a) & 0x7F800000u) != 0x7F800000u; }
OCT_DEV float oct_fmax(float a, float b) { return fmaxf(a, b); }
OCT_DEV float oct_fmin(float a, float b) { return fminf(a, b); }
OCT_DEV float oct_fabs(float a) { return fabsf(a); }
#else
// clang: the contract pragma leaves these products and sums without the 'contract' flag, so the
// backend never fuses them, whatever -ffp-contract says. Division and sqrt are correctly rounded
// (HIP's default -fhip-fp32-correctly-rounded-divide-sqrt; the build passes it explicitly).
OCT_DEV float oct_add_rn(float a, float b) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  return a + b;
}
OCT_DEV float oct_sub_rn(float a, float b) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  return a - b;
}
OCT_DEV float oct_mul_rn(float a, float b) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  return a * b;
}
OCT_DEV float oct_div_rn(float a, float b) { return a / b; }
OCT_DEV float oct_sqrt_rn(float a) { return __builtin_sqrtf(a); }
OCT_DEV float oct_fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
OCT_DEV float oct_exp2(float a) { return __builtin_exp2f(a); }
OCT_DEV float oct_exp2_ftz(float a) {  // NVIDIA's ex2.approx.ftz.f32 as far as the bounds see it
  const float r = __builtin_exp2f(a);
  return r < 0x1p-126f ? 0.0f : r;
}
OCT_DEV float oct_rint(float a) { return __builtin_rintf(a); }
OCT_DEV bool oct_isfinite(float a) { return __builtin_isfinite(a); }
OCT_DEV float oct_fmax(float a, float b) { return __builtin_fmaxf(a, b); }  // NaN-ignoring
OCT_DEV float oct_fmin(float a, float b) { return __builtin_fminf(a, b); }
OCT_DEV float oct_fabs(float a) { return __builtin_fabsf(a); }
#endif

OCT_DEV float oct_inf() { return oct_u2f(0x7F800000u); }

// ---- half types (raw 16-bit storage) ------------------------------------------------------------
#if defined(OCT_AMD)
OCT_DEV float oct_f16_to_f32(uint16_t h) { return (float)__builtin_bit_cast(_Float16, h); }
OCT_DEV uint16_t oct_f32_to_f16(float f) {  // round to nearest even (v_cvt_f16_f32)
  return __builtin_bit_cast(uint16_t, (_Float16)f);
}
#elif defined(OCT_NV)
OCT_DEV float oct_f16_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
OCT_DEV uint16_t oct_f32_to_f16(float f) { return __half_as_ushort(__float2half_rn(f)); }
#else
OCT_DEV float oct_f16_to_f32(uint16_t h) { return oct_emu_f16_to_f32(h); }
OCT_DEV uint16_t oct_f32_to_f16(float f) { return oct_emu_f32_to_f16(f); }
#endif

OCT_DEV float oct_bf16_to_f32(uint16_t h) { return oct_u2f((uint32_t)h << 16); }
OCT_DEV uint16_t oct_f32_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t b = oct_f2u(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((b >> 16) | 0x40u);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return (uint16_t)(b >> 16);
}

#endif  // OCT_DEVICE_BODY
