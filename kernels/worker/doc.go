// Package worker is a [kernels.Backend] whose device memory belongs to a child Python process,
// so that third-party code run there (PyTorch ops, Python callables) can fault, raise or hang and
// Octant sees an error, never a crash of its own. The ops run in an adapter, a Python module the
// worker loads (docs/adapters.md: its contract; py/octant_adapters/capi.py, the reference adapter,
// runs any Octave C library through ctypes). [kernels.NewDevice] makes a Device of a [*Backend],
// so BufferSet, canaries and the pool work over it as over the C library. docs/worker.md is the
// protocol's specification.
//
// # Process
//
// [Open] writes the Python package octant_worker (embedded, py/) to a private directory
// (removed at Close) and starts
//
//	PYTHON -X faulthandler -c BOOTSTRAP MODE:ADAPTER [--test-hooks]
//
// in a process group of its own, killed with SIGKILL when the thread that started it ends
// (Pdeathsig). The interpreter and every other setting come in [Options]: the package reads no
// environment. fd 3 is the request pipe, fd 4 the reply pipe, fd 5 the shared-memory window (a
// file in /dev/shm, or the temporary directory where there is none, unlinked as soon as the child
// holds it, and mapped by both). stdout and stderr are not the protocol: the last 64 KiB of each is
// kept, and every error about the worker's death or hang ends with them.
//
// # Frames
//
// Every message is u32 length | u16 type | u16 flags | u64 seq | payload, little-endian; a reply
// has its request's type and seq, and flag 1 when its payload is an error ({status, name, message,
// traceback}, JSON). hello, bye and tiers carry JSON; h2d, d2h, d2d and memset three u64. The
// worker handles requests one at a time, in order.
//
//	hello   {protocol, gen, arena_bytes, guard_bytes, shm_bytes, device, options}
//	        → {protocol, info, build_info, tiers, declaration}
//	h2d     dst, n, shm_off: the bytes are in the window at shm_off          (no reply)
//	d2h     src, n, shm_off → empty; the bytes are in the window at shm_off
//	d2d     dst, src, n                                                      (no reply)
//	memset  dst, n, value                                                    (no reply)
//	sync    → empty, or the first failure of a request without a reply since the last sync, and
//	        any write into the arena's guards
//	fence   → empty (the worker has read every request before it: the window may be reused)
//	op      u32 op code, u32 0, the ABI struct's bytes verbatim → empty once the adapter's
//	        callable has returned, or its error
//	workspace  num_q, num_q_heads, num_splits, partial_stride (i32) → u64 bytes (the ABI's formula)
//	tiers   → the adapter's tiers (JSON)
//	bye     → empty, then the worker exits
//
// A copy larger than the window goes in pieces. h2d pieces fill the window as a ring: when the
// next piece does not fit, a fence waits until the worker has read what is there. Any reply means
// the worker has read every request before it.
//
// # Ops
//
// An op request carries the ABI's argument struct as Go lays it out (kernels/abi.go), its
// pointers synthetic addresses; StoreArgs.SlotMappingHost, a pointer into Go's memory, goes as 0
// (NULL): the host-map variant of a store is not supported through a worker, and the adapter
// reads slot_mapping from the arena. The worker decodes the struct (abi.py, whose layouts
// TestStructLayouts checks against kernels/abi.go), checks what bounds its buffers (the op and
// tier declared, format, dtype, head_size, counts, strides, the decode workspace) with the C
// library's statuses, translates every pointer to a real address after checking that the bytes
// its counts and strides imply lie inside the arena (INVALID_ARGUMENT naming the field), and
// calls the adapter's callable. An exception is ErrRuntime with the exception and its traceback;
// an op the adapter does not declare is ErrUnsupported; a tier reported other than the one asked
// is ErrUnsupportedTier ("asked wmma, the adapter reports portable ran (silent fallback)").
//
// # Memory
//
// At hello the worker allocates one arena: the usable bytes (ArenaBytes) between two guards of
// [GuardBytes], filled with a known pattern that every sync checks ("a write past the arena", with
// the byte offset and address it hit; the guard is then restored, so it is reported once). Host
// mode keeps the arena in an anonymous memory map of the worker; torch mode in one torch.uint8
// tensor on a torch device (torch is imported in that mode alone; without it, or older than 1.12,
// Open fails naming the module). Behind the rear guard the worker keeps a guarded sidecar of its
// own, where an adapter places the sign words an op takes as device tensors; a sync reports an op
// that changed them. Go hands out the usable bytes first fit, 256-byte aligned; Alloc and Free send no
// message. An address is gen<<40 | arena offset, gen the worker's generation (1 for the first):
// copies are checked to lie inside one outstanding allocation of the running generation, and the
// worker checks the generation and the arena's bounds again.
//
// # Failures
//
// A failure of the transport ends the worker and is an [*kernels.Error] with status
// [kernels.ErrRuntime] (the C ABI's status for a runtime failure), its message followed by the
// worker's stderr and stdout:
//
//   - the reply pipe closes (the worker exited or was killed): "worker died (SIGSEGV) during
//     sync", with the signal's name or the exit status;
//   - no reply within Options.Timeout, or no room in the request pipe for that long: "worker hung:
//     no reply to sync in 2s; killed" (SIGKILL to its process group);
//   - a reply out of order or malformed: "worker broke the protocol during ...; killed".
//
// The next call that needs the worker starts a new one: a new process and arena, generation + 1.
// Every allocation of the old generation ended with it: its Free does nothing, a copy to or from
// it is INVALID_ARGUMENT naming both generations. A failure inside the worker (a request it
// refuses, a device error) is the worker's *kernels.Error and leaves it running; a request without
// a reply reports its failure at the next Sync.
//
// # Concurrency
//
// One mutex per Backend serialises every method: all are safe for concurrent use.
package worker
