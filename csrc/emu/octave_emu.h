// The CPU emulator's interface (OCT_EMU builds only). It runs each workgroup's threads as fibers on
// the calling OS thread, switching at every shuffle and barrier, so kernels execute exactly as
// written: __shared__ arrays become function statics (one workgroup runs at a time), shuffles read
// the partner lane's value at the same program point. It exists so that the kernels can be run and
// tested on machines without a GPU; it says nothing about GPU timing or memory-model behaviour.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <functional>

// ---- device side ----
int oct_emu_tid();
int oct_emu_bid(int dim);
void oct_emu_sync_block();
void oct_emu_sync_wave();
uint32_t oct_emu_shfl(uint32_t v, int src_lane);
// The 32 lanes of the caller's wave meet (like a shuffle) and exchange `words` (1..16) 32-bit words
// each: the result is [32 lanes][words], lane-major, valid until the caller's next exchange. Used
// by the WMMA model (octave_wmma.h), whose one call needs every lane's operands.
const uint32_t* oct_emu_wave_exchange(const uint32_t* mine, int words);
// The same for the 64 lanes of the caller's hardware wave of 64 (threads 64w..64w+63 of the
// workgroup, two 32-lane waves) and 1..8 words each: [64 lanes][words]. Used by the MFMA model
// (octave_mfma.h), whose instructions span a wave of 64; 32-lane waves and their shuffles and
// exchanges are unchanged by it. A workgroup whose size is not a multiple of 64 has a last wave
// of fewer lanes: the rows of its missing lanes are unspecified.
const uint32_t* oct_emu_wave64_exchange(const uint32_t* mine, int words);
float oct_emu_f16_to_f32(uint16_t h);
uint16_t oct_emu_f32_to_f16(float f);

// ---- launch ----
// Runs fn once per thread of every workgroup; returns 0, or 1 when a workgroup deadlocked (some
// threads waiting at a barrier that others never reach), which is reported as a launch error.
int oct_emu_launch(int gx, int gy, int gz, int threads, const std::function<void()>& fn);

// ---- the few runtime calls the host code uses ----
typedef enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorNoDevice = 100,
  hipErrorLaunchFailure = 719
} hipError_t;
typedef enum hipMemcpyKind {
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3
} hipMemcpyKind;
struct hipDeviceProp_t {
  char name[256];
  size_t totalGlobalMem;
  int warpSize;
  int multiProcessorCount;
  int major, minor;
};
hipError_t hipGetDeviceCount(int* n);
hipError_t hipSetDevice(int d);
hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d);
hipError_t hipMalloc(void** p, size_t n);
hipError_t hipFree(void* p);
hipError_t hipMemcpy(void* dst, const void* src, size_t n, hipMemcpyKind k);
hipError_t hipMemset(void* dst, int v, size_t n);
hipError_t hipDeviceSynchronize();
// Events: the emulator runs every launch at its call, so an event records the host clock.
typedef struct oct_emu_event* hipEvent_t;
hipError_t hipEventCreate(hipEvent_t* e);
hipError_t hipEventDestroy(hipEvent_t e);
hipError_t hipEventRecord(hipEvent_t e, int stream = 0);
hipError_t hipEventSynchronize(hipEvent_t e);
hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop);
hipError_t hipGetLastError();
const char* hipGetErrorString(hipError_t e);
const char* hipGetErrorName(hipError_t e);
