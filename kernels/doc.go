// Package kernels loads a compiled Octave kernel library (liboctave_cuda.so, liboctave_hip.so,
// or any library exporting the C ABI of csrc/include/octave_capi.h) and runs its operations from
// Go, without cgo: the library is opened with purego, so test binaries built with CGO_ENABLED=0
// run on any x86-64 Linux machine that has the library and its GPU runtime.
//
// # Contract
//
//   - [Open] checks the library's ABI version against [ABIVersion] and fails with an error that
//     names the path and both versions; a missing file, a file that is not a library, or a missing
//     symbol is an error, never a panic. A path without a slash ("liboctave_emu.so") names a file in
//     the working directory, not a name for dlopen's search path.
//   - [Lib.OpenDevice] opens a device; with no device of the library's runtime it returns an
//     error wrapping [ErrNoDevice] ("no HIP device", "no CUDA device").
//   - Every operation takes its arguments as a Go struct mirroring the C struct (struct_size is
//     filled in), returns the library's status as an [*Error] carrying the status name and the
//     library's message (read on the calling OS thread right after the failing call: the library's
//     message is errno-like, see [Lib.LastError]), and never aborts the process.
//   - [Device.WorkspaceSize] is the decode workspace with a status (0 bytes and no error: an empty
//     decode); [Device.Close] frees every buffer of the device still allocated.
//   - [Device.Alloc] returns buffers surrounded by canary bytes; [Buffer.CheckCanaries] reports
//     any byte written outside the buffer; a [BufferSet] holds the buffers of one call, remembers
//     the bytes uploaded to its inputs, and [BufferSet.Verify] reports every overwritten canary and
//     every modified input after the call. [Device.EnablePool] reuses freed allocations by size
//     class (off by default, so that compute-sanitizer memcheck sees exact allocations; the fuzz
//     harness and the conformance runner turn it on).
//
// # Backends
//
// A [Device] runs on a [Backend]: its memory (Alloc, Free, the copies, Memset, Sync), its ops and
// its description. [Lib.OpenDevice] builds one over the C library's octave_ctx (capi.go); [NewDevice]
// builds one over any other implementation, such as a process that owns the device memory. The
// Device keeps everything above the backend for every backend alike: canaries, BufferSet, the pool,
// struct_size, the int32 checks of WorkspaceSize. Backend's comment states the contract a backend
// keeps (errors, addresses, order, Sync). What only the C ABI has behaves so on another backend:
//
//   - [Device.TimerStart] and [Device.TimerStop] need a backend that is a [Timer]; without one
//     they return an [*Error] with status [ErrUnsupported] (not a status of the C ABI).
//   - [Device.CallTimes] is nil unless the backend is a [CallTimer] (the C library counts its calls).
//   - [Device.Context] is 0; a test entry point given 0 refuses it with INVALID_ARGUMENT ("ctx is
//     NULL"). [Lib.BindSelftest] and [Lib.CallSelftest] belong to a C library, so only the devices
//     a Lib opened reach its test entry points.
//   - [Device.WorkspaceBytes] is the backend's WorkspaceSize with its error dropped (the C
//     library answers octave_decode_workspace_bytes itself, without its lock).
//
// The package's tests are the binding's own; those that need a library skip when OCTANT_LIB is not
// set (openTestLib), and the Device's memory paths are tested without one too, over a backend of
// host memory (membackend_test.go). The kernel tests, every op and tier of a library judged against the oracle,
// are package grids. [Lib.BindSelftest] and [Lib.CallSelftest] reach the library's test entry
// points (csrc/include/octave_selftest.h, not part of the C ABI) for its model tests.
package kernels
