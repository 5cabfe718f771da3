package kernels

import "time"

// Backend is what a [Device] runs on: the memory and the operations of one opened device. The C
// ABI through purego is one ([Lib.OpenDevice] builds a Device over it); [NewDevice] builds a
// Device over any other, such as a process that owns the device memory and runs the ops itself.
// The Device adds everything above the backend: canaries, the pool, BufferSet, struct_size, and
// the checks of its own arguments.
//
// The contract every backend keeps (the C ABI's, octave_capi.h "Execution" and "Ownership"):
//
//   - Errors. A failure the backend can name by an ABI status is an [*Error] with that Status, its
//     name ("OCTAVE_ERR_DTYPE") and a message that says what was expected and what was found; an
//     operation the backend does not have is an *Error with status [ErrUnsupported]. Other
//     failures (a broken transport) may be any error. A failing call has done nothing, as the
//     ABI's ops promise, except for runtime failures (ErrRuntime, ErrLaunch).
//   - Addresses. Alloc returns an address aligned to 256 bytes, never 0; the Device never reads
//     it, but does arithmetic inside an allocation: every address in [p, p+bytes) of an
//     outstanding allocation p is valid in copies, Memset and ops. Free takes only an address
//     Alloc returned and not yet freed (anything else: ErrInvalidArgument, nothing freed); Free(0)
//     does nothing.
//   - Order. Ops, copies and Memset run in call order. An op may return before the device has
//     run it; its runtime errors show at the next Sync or the next call that waits. CopyH2D
//     returns once src may be reused; CopyD2H returns once dst holds the bytes, after every op
//     called before it; CopyD2D may return before the copy is done; Memset returns when done.
//   - Sync waits until everything called before it has finished and reports the first
//     asynchronous error since the last Sync: after a nil Sync, CopyD2H reads what the ops wrote.
//   - Close releases the device and every allocation still outstanding; it is the last call.
//   - Concurrency. Every method may be called from several goroutines at once.
type Backend interface {
	// Info describes the device (read once, by NewDevice).
	Info() DeviceInfo
	// Tiers lists the tiers the device offers, in the backend's order.
	Tiers() ([]TierDesc, error)
	// BuildInfo describes the implementation: its runtime, targets and compiler.
	BuildInfo() string

	// Alloc allocates bytes of device memory (bytes > 0).
	Alloc(bytes uint64) (uintptr, error)
	// Free releases an allocation of Alloc.
	Free(p uintptr) error
	// CopyH2D copies src to device address dst.
	CopyH2D(dst uintptr, src []byte) error
	// CopyD2H copies len(dst) bytes from device address src to dst.
	CopyD2H(dst []byte, src uintptr) error
	// CopyD2D copies n bytes from device address src to device address dst.
	CopyD2D(dst, src uintptr, n uint64) error
	// Memset writes n bytes of value v from device address dst.
	Memset(dst uintptr, v byte, n uint64) error
	// Sync waits for the device and reports asynchronous errors.
	Sync() error

	// The ops take the ABI's argument structs, struct_size filled in by the Device; the backend
	// must not keep the pointer past the call.
	Store(a *StoreArgs) error
	Rotate(a *RotateArgs) error
	Decode(a *DecodeArgs) error
	Reduce(a *ReduceArgs) error
	Prefill(a *PrefillArgs) error
	QueryMaps(a *QueryMapsArgs) error
	// WorkspaceSize is the bytes of partials a decode of these sizes needs, or the status decode
	// would give them (octave_decode_workspace_size; 0 bytes and no error: an empty decode).
	WorkspaceSize(numQ, numQHeads, numSplits, partialStride int32) (uint64, error)

	// Close releases the device; see the contract above.
	Close() error
}

// Timer is a backend's device timer (octave_timer_start and octave_timer_stop), which the
// benchmarks use; a backend without one leaves it out, and Device.TimerStart and TimerStop then
// return an *Error with status ErrUnsupported.
type Timer interface {
	// TimerStart enqueues the start mark and returns at once.
	TimerStart() error
	// TimerStop enqueues the stop mark, waits for it, and returns the device time between the
	// marks, idle gaps included; a stop without a start since the last stop is ErrInvalidArgument.
	TimerStop() (time.Duration, error)
}

// CallTimer is a backend that counts the time its calls take, per op name (Device.CallTimes).
type CallTimer interface {
	CallTimes() map[string]time.Duration
}

// ErrUnsupported is the status of an operation a backend does not have. It is not a status of
// the C ABI (whose statuses are positive): the C library has every operation.
const ErrUnsupported Status = -1

// unsupportedName is the Name of an ErrUnsupported error.
const unsupportedName = "OCTANT_ERR_UNSUPPORTED"

// Unsupported is the error of a backend that does not have op (named as the ABI names it,
// "octave_timer_start"); what says which backend it is.
func Unsupported(op, what string) *Error {
	return &Error{Op: op, Status: ErrUnsupported, Name: unsupportedName, Message: what + " does not implement " + op}
}
