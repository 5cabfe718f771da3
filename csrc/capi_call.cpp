// What every C ABI call shares: the calling thread's error message and the args structs' copy.
#include "capi_call.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "octave_capi.h"

namespace {
// The calling thread's message: written by failing calls only, never cleared (errno-like).
thread_local char g_msg[1024];
}

int oct_fail(int status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_msg, sizeof g_msg, fmt, ap);
  va_end(ap);
  return status;
}

int oct_copy_args(const void* a, size_t ours, void* out, const char* op) {
  if (!a) return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT, "%s: args is NULL", op);
  uint64_t n;
  memcpy(&n, a, 8);
  if (n < ours)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                    "%s: struct_size = %llu, expected %zu (octave_capi.h, ABI %d)", op,
                    (unsigned long long)n, ours, OCTAVE_ABI_VERSION);
  if (n > ours + OCTAVE_STRUCT_SIZE_SLACK)
    return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                    "%s: struct_size = %llu is implausible: this library's is %zu, and at most %d bytes more "
                    "are accepted",
                    op, (unsigned long long)n, ours, OCTAVE_STRUCT_SIZE_SLACK);
  for (uint64_t k = ours; k < n; k++)
    if (((const uint8_t*)a)[k])
      return oct_fail(OCTAVE_ERR_INVALID_ARGUMENT,
                      "%s: struct_size = %llu is larger than this library's %zu and byte %llu is not "
                      "zero: the caller sets fields that ABI %d does not have",
                      op, (unsigned long long)n, ours, (unsigned long long)k, OCTAVE_ABI_VERSION);
  memcpy(out, a, ours);
  return OCTAVE_OK;
}

extern "C" const char* octave_last_error(void) { return g_msg; }
