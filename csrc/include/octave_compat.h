// Host runtime compatibility: the library's host code is written against the few HIP runtime calls
// below. Under nvcc (__CUDACC__ and not __HIP__) they map to the CUDA runtime; under a plain C++
// compiler (OCT_EMU) to the CPU emulator in csrc/emu/. Kernels are launched with OCT_LAUNCH.
#pragma once

#include "octave_arch.h"

#if defined(OCT_AMD)
#include <hip/hip_runtime.h>
#define OCT_RT_NAME "HIP"
#define OCT_LAUNCH(kern, gx, gy, gz, threads, arg) \
  kern<<<dim3((unsigned)(gx), (unsigned)(gy), (unsigned)(gz)), dim3((unsigned)(threads)), 0, 0>>>(arg)

#elif defined(OCT_NV)
#include <cuda_runtime.h>
#define OCT_RT_NAME "CUDA"
#define hipError_t cudaError_t
#define hipSuccess cudaSuccess
#define hipErrorNoDevice cudaErrorNoDevice
#define hipDeviceProp_t cudaDeviceProp
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemcpyKind cudaMemcpyKind
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemset cudaMemset
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipGetLastError cudaGetLastError
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipEvent_t cudaEvent_t
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define OCT_LAUNCH(kern, gx, gy, gz, threads, arg) \
  kern<<<dim3((unsigned)(gx), (unsigned)(gy), (unsigned)(gz)), dim3((unsigned)(threads)), 0, 0>>>(arg)

#else
#include "octave_emu.h"
#define OCT_RT_NAME "EMU"
#define OCT_LAUNCH(kern, gx, gy, gz, threads, arg) \
  oct_emu_launch((int)(gx), (int)(gy), (int)(gz), (int)(threads), [&]() { kern(arg); })
#endif

// The device's architecture name: "gfx1100" (AMD, target features stripped), "sm_90", "emu".
inline void oct_rt_arch(const hipDeviceProp_t& p, char* buf, int cap) {
#if defined(OCT_AMD)
  int i = 0;
  for (; i + 1 < cap && p.gcnArchName[i] && p.gcnArchName[i] != ':'; i++) buf[i] = p.gcnArchName[i];
  buf[i] = 0;
#elif defined(OCT_NV)
  int n = p.major * 10 + p.minor, i = 0;
  const char pre[] = "sm_";
  for (; pre[i] && i + 1 < cap; i++) buf[i] = pre[i];
  char d[12];
  int k = 0;
  do d[k++] = (char)('0' + n % 10), n /= 10; while (n && k < 11);
  while (k && i + 1 < cap) buf[i++] = d[--k];
  buf[i] = 0;
#else
  (void)p;
  const char e[] = "emu";
  int i = 0;
  for (; e[i] && i + 1 < cap; i++) buf[i] = e[i];
  buf[i] = 0;
#endif
}

// The targets this build has kernels for (comma-separated), set by the build.
#if !defined(OCTAVE_TARGETS)
#if defined(OCT_AMD)
#define OCTAVE_TARGETS "gfx1100,gfx942"
#elif defined(OCT_NV)
#define OCTAVE_TARGETS "sm_90"
#else
#define OCTAVE_TARGETS "emu"
#endif
#endif
