// The device functions of the CUDA stand-in (cuda_runtime.h) defined inline, for `make cuda-regs`
// only: clang's CUDA front end then emits PTX without calls, and ptxas (when present) reports each
// kernel's registers, stack and spills without a GPU or the CUDA toolkit's headers. The numbers
// are clang's code generation, not nvcc's: they track nvcc's (docs/kernels.md, "Building"), they do
// not replace a measurement on the device.
#pragma once

__device__ inline float __fadd_rn(float a, float b) { return __nvvm_add_rn_f(a, b); }
__device__ inline float __fsub_rn(float a, float b) { return __nvvm_add_rn_f(a, -b); }
__device__ inline float __fmul_rn(float a, float b) { return __nvvm_mul_rn_f(a, b); }
__device__ inline float __fdiv_rn(float a, float b) { return __nvvm_div_rn_f(a, b); }
__device__ inline float __fsqrt_rn(float a) { return __nvvm_sqrt_rn_f(a); }
__device__ inline float __fmaf_rn(float a, float b, float c) { return __nvvm_fma_rn_f(a, b, c); }
__device__ inline float exp2f(float a) { return __nvvm_ex2_approx_f(a); }
__device__ inline float rintf(float a) { return __builtin_rintf(a); }
__device__ inline float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__device__ inline float fminf(float a, float b) { return __builtin_fminf(a, b); }
__device__ inline float fabsf(float a) { return __builtin_fabsf(a); }
__device__ inline unsigned __float_as_uint(float a) { return __builtin_bit_cast(unsigned, a); }
__device__ inline float __uint_as_float(unsigned a) { return __builtin_bit_cast(float, a); }
__device__ inline unsigned __shfl_xor_sync(unsigned m, unsigned v, int l, int w) {
  return (unsigned)__nvvm_shfl_sync_bfly_i32(m, (int)v, l, ((32 - w) << 8) | 0x1f);
}
__device__ inline double __shfl_xor_sync(unsigned m, double v, int l, int w) {
  const unsigned long long x = __builtin_bit_cast(unsigned long long, v);
  const unsigned lo = __shfl_xor_sync(m, (unsigned)x, l, w), hi = __shfl_xor_sync(m, (unsigned)(x >> 32), l, w);
  return __builtin_bit_cast(double, ((unsigned long long)hi << 32) | lo);
}
__device__ inline unsigned __shfl_sync(unsigned m, unsigned v, int l, int w) {
  return (unsigned)__nvvm_shfl_sync_idx_i32(m, (int)v, l, ((32 - w) << 8) | 0x1f);
}
__device__ inline int __any_sync(unsigned m, int p) { return __nvvm_vote_any_sync(m, p); }
__device__ inline long long __double_as_longlong(double a) { return __builtin_bit_cast(long long, a); }
__device__ inline int __dp4a(int a, int b, int c) {
  int r;
  asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}
__device__ inline unsigned __byte_perm(unsigned a, unsigned b, unsigned s) {
  unsigned r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(s));
  return r;
}
__device__ inline float __half2float(__half h) {
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h.x));
  return r;
}
__device__ inline __half __float2half_rn(float f) {
  __half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
  return h;
}
__device__ inline __half __ushort_as_half(unsigned short x) { return __half{x}; }
__device__ inline unsigned short __half_as_ushort(__half h) { return h.x; }
// __syncthreads is a clang builtin for CUDA (bar.sync 0).
__device__ inline void __syncwarp(unsigned m) { __nvvm_bar_warp_sync(m); }
