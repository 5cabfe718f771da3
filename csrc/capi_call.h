// What every C ABI call shares: failing with a message (oct_fail; the caller reads it with
// octave_last_error) and taking the caller's args struct (oct_copy_args, octave_capi.h's
// struct_size convention).
#pragma once

#include <stddef.h>

// Sets the calling thread's message (octave_last_error) and returns status. Only failing calls
// set it; nothing clears it (errno-like, octave_capi.h).
int oct_fail(int status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Copies an args struct of the caller's struct_size into out (see octave_capi.h conventions).
int oct_copy_args(const void* a, size_t ours, void* out, const char* op);
template <class T>
int oct_args(const T* a, T& out, const char* op) {
  return oct_copy_args(a, sizeof(T), &out, op);
}
