// Stand-in for the CUDA toolkit's headers, only for `make cuda-syntax`: lets clang's CUDA front end
// parse the NVIDIA path of the kernels (host and sm_90 device passes) on a machine without the
// CUDA toolkit. Declarations only, with the toolkit's names and signatures; never linked.
#pragma once
#include <stddef.h>

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#include <__clang_cuda_builtin_vars.h>

struct dim3 {
  unsigned x, y, z;
  __host__ __device__ dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
enum cudaError { cudaSuccess = 0, cudaErrorNoDevice = 100 };
typedef enum cudaError cudaError_t;
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8, cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int warpSize, multiProcessorCount, major, minor;
};
extern "C" {
cudaError_t cudaGetDeviceCount(int*);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp*, int);
cudaError_t cudaMalloc(void**, size_t);
cudaError_t cudaFree(void*);
cudaError_t cudaMemcpy(void*, const void*, size_t, cudaMemcpyKind);
cudaError_t cudaMemset(void*, int, size_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaEventCreate(cudaEvent_t*);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t);
const char* cudaGetErrorString(cudaError_t);
const char* cudaGetErrorName(cudaError_t);
unsigned __cudaPushCallConfiguration(dim3, dim3, size_t = 0, cudaStream_t = 0);
cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int);
}
enum cudaLaunchAttributeID { cudaLaunchAttributeProgrammaticStreamSerialization = 5 };
union cudaLaunchAttributeValue { int programmaticStreamSerializationAllowed; char pad[64]; };
struct cudaLaunchAttribute { cudaLaunchAttributeID id; cudaLaunchAttributeValue val; };
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned numAttrs;
};
extern "C" cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t*, const void*, void**);
template <class... A, class... P>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* c, void (*k)(A...), P&&... args) {
  void* pv[] = {(void*)&args...};
  return cudaLaunchKernelExC(c, (const void*)k, pv);
}
template <class T>
cudaError_t cudaFuncSetAttribute(T* f, cudaFuncAttribute a, int v) {
  return cudaFuncSetAttribute((const void*)f, a, v);
}

struct __half { unsigned short x; };
#if !defined(OCT_STANDIN_INLINE)
__device__ float __fadd_rn(float, float);
__device__ float __fsub_rn(float, float);
__device__ float __fmul_rn(float, float);
__device__ float __fdiv_rn(float, float);
__device__ float __fsqrt_rn(float);
__device__ float __fmaf_rn(float, float, float);
__device__ float exp2f(float);
__device__ float rintf(float);
__device__ float fmaxf(float, float);
__device__ float fminf(float, float);
__device__ float fabsf(float);
__device__ unsigned __float_as_uint(float);
__device__ float __uint_as_float(unsigned);
__device__ unsigned __shfl_xor_sync(unsigned, unsigned, int, int);
__device__ double __shfl_xor_sync(unsigned, double, int, int);
__device__ unsigned __shfl_sync(unsigned, unsigned, int, int);
__device__ int __any_sync(unsigned, int);
__device__ long long __double_as_longlong(double);
__device__ int __dp4a(int, int, int);
__device__ unsigned __byte_perm(unsigned, unsigned, unsigned);
__device__ float __half2float(__half);
__device__ __half __float2half_rn(float);
__device__ __half __ushort_as_half(unsigned short);
__device__ unsigned short __half_as_ushort(__half);
__device__ void __syncthreads(void);
__device__ void __syncwarp(unsigned);
#else
// Definitions through clang's NVPTX builtins and inline PTX, so that the device code compiles to
// PTX without calls (make cuda-regs: ptxas then reports registers and spills).
#include "cuda_device_inline.h"
#endif
