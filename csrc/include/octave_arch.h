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
#else
#define OCT_UNROLL _Pragma("GCC unroll 16")
#endif

#if defined(OCT_EMU)
#include "octave_emu.h"
#define OCT_DEV inline
#define OCT_KERNEL(threads) extern "C"
#define OCT_SHARED static
#else
#if defined(OCT_NV)
#define OCT_DEV __device__ __forceinline__
#else
#define OCT_DEV __device__ inline __attribute__((always_inline))
#endif
#define OCT_KERNEL(threads) extern "C" __global__ __launch_bounds__(threads)
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

// ---- float32 operations with a fixed rounding -----------------------------------------------------
#if defined(OCT_NV)
OCT_DEV float oct_add_rn(float a, float b) { return __fadd_rn(a, b); }
OCT_DEV float oct_sub_rn(float a, float b) { return __fsub_rn(a, b); }
OCT_DEV float oct_mul_rn(float a, float b) { return __fmul_rn(a, b); }
OCT_DEV float oct_div_rn(float a, float b) { return __fdiv_rn(a, b); }
OCT_DEV float oct_sqrt_rn(float a) { return __fsqrt_rn(a); }
OCT_DEV float oct_fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
OCT_DEV float oct_exp2(float a) { return exp2f(a); }
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
