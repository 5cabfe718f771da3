// CPU emulator: fibers for the threads of one workgroup, lockstep points at shuffles and barriers,
// and host-memory stand-ins for the runtime calls. See octave_emu.h.
#include "octave_emu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <mutex>
#include <new>
#include <vector>

#if defined(__x86_64__)
// Minimal context switch (System V x86-64): save callee-saved registers on the current stack,
// store the stack pointer in *save, load `to` and restore the registers saved there.
extern "C" void oct_emu_swap(void** save, void* to);
asm(R"(
.text
.globl oct_emu_swap
.hidden oct_emu_swap
.type oct_emu_swap,@function
oct_emu_swap:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size oct_emu_swap,.-oct_emu_swap
)");
#else
#include <ucontext.h>
#endif

namespace {

constexpr size_t kStack = 256 * 1024;

struct Fiber {
  void* sp = nullptr;
#if !defined(__x86_64__)
  ucontext_t uc;
#endif
  char* stack = nullptr;
  int tid = 0;
  bool done = false;
  bool waiting = false;
  unsigned* wait_gen = nullptr;  // generation counter being waited on
  unsigned wait_val = 0;
  unsigned xgen = 0;  // exchanges this thread has made (oct_emu_wave_exchange's buffer parity)
  unsigned xgen64 = 0;  // the same for oct_emu_wave64_exchange
};

struct Barrier {
  int live = 0, arrived = 0;
  unsigned gen = 0;
};

struct Wave {
  Barrier bar;
  uint32_t slot[32];
  // oct_emu_wave_exchange: two buffers used alternately, so one barrier per exchange suffices (a
  // lane can write buffer k & 1 again only after every lane has reached exchange k + 1, i.e. is
  // done reading exchange k).
  uint32_t xbuf[2][32 * 16];
};

// A hardware wave of 64 lanes (threads 64w..64w+63 of the workgroup: two 32-lane waves), met by
// oct_emu_wave64_exchange only. Its two exchange buffers live in g_x64 (not zeroed per workgroup:
// every lane writes its words before any lane reads them).
struct Wave64 {
  Barrier bar;
};
constexpr int kX64Words = 8;  // words per lane of one oct_emu_wave64_exchange, at most

struct Emu {
  std::vector<Fiber> fibers;
  std::vector<Wave> waves;
  std::vector<Wave64> waves64;
  Barrier block;
  int cur = -1;
  int bid[3] = {0, 0, 0};
  const std::function<void()>* fn = nullptr;
  void* sched_sp = nullptr;
#if !defined(__x86_64__)
  ucontext_t sched_uc;
#endif
};

Emu* g_emu = nullptr;  // the running launch (launches are serialized)
std::mutex g_launch_mu;

void to_scheduler() {
  Fiber& f = g_emu->fibers[g_emu->cur];
#if defined(__x86_64__)
  oct_emu_swap(&f.sp, g_emu->sched_sp);
#else
  swapcontext(&f.uc, &g_emu->sched_uc);
#endif
}

void release_if_complete(Barrier& b) {
  if (b.live > 0 && b.arrived == b.live) {
    b.arrived = 0;
    b.gen++;
  }
}

void wait_at(Barrier& b) {
  unsigned g = b.gen;
  b.arrived++;
  release_if_complete(b);
  if (b.gen != g) return;
  Fiber& f = g_emu->fibers[g_emu->cur];
  f.waiting = true;
  f.wait_gen = &b.gen;
  f.wait_val = g;
  to_scheduler();
}

extern "C" void oct_emu_fiber_entry() {
  Emu* e = g_emu;
  (*e->fn)();
  Fiber& f = e->fibers[e->cur];
  f.done = true;
  Wave& w = e->waves[f.tid / 32];
  w.bar.live--;
  release_if_complete(w.bar);
  Wave64& w64 = e->waves64[f.tid / 64];
  w64.bar.live--;
  release_if_complete(w64.bar);
  e->block.live--;
  release_if_complete(e->block);
  to_scheduler();
  abort();  // never resumed
}

#if !defined(__x86_64__)
void uc_entry() { oct_emu_fiber_entry(); }
#endif

// The fibers' stacks, kept from one workgroup to the next (launches are serialized): a fresh
// malloc of 256 KB is an mmap, and its pages fault in again for every workgroup (the 512-thread
// reduce made the -short decode grid 35 -> 58 s that way).
std::vector<char*> g_stacks;
// oct_emu_wave64_exchange's buffers: [wave64][2][64 lanes][kX64Words], grown as needed.
std::vector<uint32_t> g_x64;

// Runs one workgroup; returns false on deadlock.
bool run_block(Emu& e, int threads) {
  while ((int)g_stacks.size() < threads) {
    char* st = (char*)malloc(kStack);
    if (!st) return false;
    g_stacks.push_back(st);
  }
  e.fibers.assign(threads, Fiber());
  e.waves.assign((threads + 31) / 32, Wave());
  e.waves64.assign((threads + 63) / 64, Wave64());
  if (g_x64.size() < e.waves64.size() * 2 * 64 * kX64Words) g_x64.resize(e.waves64.size() * 2 * 64 * kX64Words);
  e.block = Barrier();
  e.block.live = threads;
  for (int i = 0; i < threads; i++) e.waves[i / 32].bar.live++, e.waves64[i / 64].bar.live++;
  for (int i = 0; i < threads; i++) {
    Fiber& f = e.fibers[i];
    f.tid = i;
    f.stack = g_stacks[i];
#if defined(__x86_64__)
    uintptr_t top = ((uintptr_t)(f.stack + kStack)) & ~(uintptr_t)15;
    void** sp = (void**)top;
    *--sp = nullptr;                         // fake return address of the entry function
    *--sp = (void*)&oct_emu_fiber_entry;     // consumed by ret
    for (int r = 0; r < 6; r++) *--sp = nullptr;  // rbp rbx r12..r15
    f.sp = sp;
#else
    getcontext(&f.uc);
    f.uc.uc_stack.ss_sp = f.stack;
    f.uc.uc_stack.ss_size = kStack;
    f.uc.uc_link = nullptr;
    makecontext(&f.uc, uc_entry, 0);
#endif
  }
  bool ok = true;
  for (;;) {
    bool any_left = false, progress = false;
    for (int i = 0; i < threads; i++) {
      Fiber& f = e.fibers[i];
      if (f.done) continue;
      any_left = true;
      if (f.waiting) {
        if (*f.wait_gen == f.wait_val) continue;
        f.waiting = false;
      }
      e.cur = i;
      progress = true;
#if defined(__x86_64__)
      oct_emu_swap(&e.sched_sp, f.sp);
#else
      swapcontext(&e.sched_uc, &f.uc);
#endif
    }
    if (!any_left) break;
    if (!progress) {
      ok = false;  // deadlock: the waiting fibers are abandoned (their stacks are reused)
      break;
    }
  }
  return ok;
}

hipError_t g_last = hipSuccess;

}  // namespace

int oct_emu_tid() { return g_emu->fibers[g_emu->cur].tid; }
int oct_emu_bid(int d) { return g_emu->bid[d]; }
void oct_emu_sync_block() { wait_at(g_emu->block); }
void oct_emu_sync_wave() { wait_at(g_emu->waves[oct_emu_tid() / 32].bar); }

uint32_t oct_emu_shfl(uint32_t v, int src) {
  int tid = oct_emu_tid();
  Wave& w = g_emu->waves[tid / 32];
  w.slot[tid & 31] = v;
  wait_at(w.bar);
  uint32_t r = w.slot[src & 31];
  wait_at(w.bar);
  return r;
}

const uint32_t* oct_emu_wave_exchange(const uint32_t* mine, int words) {
  if (words < 1 || words > 16) abort();  // a programming error in the caller
  int tid = oct_emu_tid();
  Fiber& f = g_emu->fibers[g_emu->cur];
  Wave& w = g_emu->waves[tid / 32];
  uint32_t* buf = w.xbuf[f.xgen++ & 1];
  memcpy(buf + (tid & 31) * words, mine, (size_t)words * 4);
  wait_at(w.bar);
  return buf;
}

const uint32_t* oct_emu_wave64_exchange(const uint32_t* mine, int words) {
  if (words < 1 || words > kX64Words) abort();  // a programming error in the caller
  int tid = oct_emu_tid();
  Fiber& f = g_emu->fibers[g_emu->cur];
  Wave64& w = g_emu->waves64[tid / 64];
  uint32_t* buf = g_x64.data() + ((size_t)(tid / 64) * 2 + (f.xgen64++ & 1)) * 64 * kX64Words;
  memcpy(buf + (tid & 63) * words, mine, (size_t)words * 4);
  wait_at(w.bar);
  return buf;
}

float oct_emu_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, b;
  if (e == 0) {
    float f = ldexpf((float)m, -24);
    return (h & 0x8000u) ? -f : f;
  }
  if (e == 31) b = sign | 0x7F800000u | (m << 13);
  else b = sign | ((e + 112) << 23) | (m << 13);
  float f;
  memcpy(&f, &b, 4);
  return f;
}

uint16_t oct_emu_f32_to_f16(float f) {  // round to nearest even, overflow to inf
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);
  if (ax < 0x38800000u) {  // half subnormal range (or zero)
    float a;
    memcpy(&a, &ax, 4);
    return (uint16_t)(sign | (uint32_t)rintf(ldexpf(a, 24)));
  }
  uint32_t h = ax - 0x38000000u;
  h = (h + 0xFFFu + ((h >> 13) & 1u)) >> 13;
  return (uint16_t)(sign | h);
}

int oct_emu_launch(int gx, int gy, int gz, int threads, const std::function<void()>& fn) {
  std::lock_guard<std::mutex> lock(g_launch_mu);
  Emu e;
  e.fn = &fn;
  Emu* prev = g_emu;
  g_emu = &e;
  int rc = 0;
  for (int z = 0; z < gz && !rc; z++)
    for (int y = 0; y < gy && !rc; y++)
      for (int x = 0; x < gx && !rc; x++) {
        e.bid[0] = x, e.bid[1] = y, e.bid[2] = z;
        if (!run_block(e, threads)) rc = 1;
      }
  g_emu = prev;
  if (rc) g_last = hipErrorLaunchFailure;
  return rc;
}

hipError_t hipGetDeviceCount(int* n) {
  *n = 1;
  return hipSuccess;
}
hipError_t hipSetDevice(int d) { return d == 0 ? hipSuccess : hipErrorInvalidValue; }
hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) {
  if (d != 0) return hipErrorInvalidValue;
  memset(p, 0, sizeof *p);
  strcpy(p->name, "Octave CPU emulator");
  p->warpSize = 32;
  p->multiProcessorCount = 1;
  return hipSuccess;
}
hipError_t hipMalloc(void** p, size_t n) {
  *p = aligned_alloc(256, (n + 255) & ~(size_t)255);
  return *p ? hipSuccess : hipErrorOutOfMemory;
}
hipError_t hipFree(void* p) {
  free(p);
  return hipSuccess;
}
hipError_t hipMemcpy(void* dst, const void* src, size_t n, hipMemcpyKind) {
  if (n) memmove(dst, src, n);
  return hipSuccess;
}
hipError_t hipMemset(void* dst, int v, size_t n) {
  if (n) memset(dst, v, n);
  return hipSuccess;
}
hipError_t hipDeviceSynchronize() { return hipSuccess; }
struct oct_emu_event {
  std::chrono::steady_clock::time_point t;
  bool recorded = false;
};
hipError_t hipEventCreate(hipEvent_t* e) {
  *e = new (std::nothrow) oct_emu_event;
  return *e ? hipSuccess : hipErrorOutOfMemory;
}
hipError_t hipEventDestroy(hipEvent_t e) {
  delete e;
  return hipSuccess;
}
hipError_t hipEventRecord(hipEvent_t e, int) {
  if (!e) return hipErrorInvalidValue;
  e->t = std::chrono::steady_clock::now(), e->recorded = true;
  return hipSuccess;
}
hipError_t hipEventSynchronize(hipEvent_t e) { return e ? hipSuccess : hipErrorInvalidValue; }
hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) {
  if (!ms || !a || !b || !a->recorded || !b->recorded) return hipErrorInvalidValue;
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return hipSuccess;
}
hipError_t hipGetLastError() {
  hipError_t e = g_last;
  g_last = hipSuccess;
  return e;
}
const char* hipGetErrorString(hipError_t e) {
  switch (e) {
    case hipSuccess: return "no error";
    case hipErrorInvalidValue: return "invalid argument";
    case hipErrorOutOfMemory: return "out of memory";
    case hipErrorNoDevice: return "no device";
    case hipErrorLaunchFailure: return "launch failed: a workgroup deadlocked at a barrier";
  }
  return "unknown error";
}
const char* hipGetErrorName(hipError_t e) {
  switch (e) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorNoDevice: return "hipErrorNoDevice";
    case hipErrorLaunchFailure: return "hipErrorLaunchFailure";
  }
  return "hipErrorUnknown";
}
