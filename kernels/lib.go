package kernels

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrNoDevice is wrapped by OpenDevice's error when the library's runtime sees no device.
var ErrNoDevice = errors.New("no device")

// Error is a failing library call: the status, its name and the library's message.
type Error struct {
	Op      string
	Status  Status
	Name    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Op, e.Name, e.Message)
}

// Is lets errors.Is(err, ErrNoDevice) match a NO_DEVICE status.
func (e *Error) Is(target error) bool { return target == ErrNoDevice && e.Status == ErrNoDeviceStatus }

// Lib is an opened kernel library.
type Lib struct {
	Path   string
	handle uintptr

	abiVersion     func() int32
	lastError      func() string
	statusName     func(int32) string
	buildInfo      func() string
	open           func(int32, *uintptr) int32
	close          func(uintptr) int32
	deviceInfo     func(uintptr, *cDeviceInfo) int32
	tiers          func(uintptr, *cTierDesc, int32, *int32) int32
	alloc          func(uintptr, uint64, *uintptr) int32
	free           func(uintptr, uintptr) int32
	copyH2D        func(uintptr, uintptr, unsafe.Pointer, uint64) int32
	copyD2H        func(uintptr, unsafe.Pointer, uintptr, uint64) int32
	copyD2D        func(uintptr, uintptr, uintptr, uint64) int32
	memset         func(uintptr, uintptr, int32, uint64) int32
	sync           func(uintptr) int32
	timerStart     func(uintptr) int32
	timerStop      func(uintptr, *float32) int32
	cacheStore     func(uintptr, *StoreArgs) int32
	rotate         func(uintptr, *RotateArgs) int32
	decode         func(uintptr, *DecodeArgs) int32
	workspaceBytes func(int32, int32, int32, int32) uint64
	workspaceSize  func(int32, int32, int32, int32, *uint64) int32
	reduce         func(uintptr, *ReduceArgs) int32
	prefill        func(uintptr, *PrefillArgs) int32
	queryMaps      func(uintptr, *QueryMapsArgs) int32

	mu   sync.Mutex               // octave_last_error is per thread: hold the OS thread between a call and its message
	held map[string]time.Duration // per op: time its calls held mu (CallTimes), under mu
}

// CallTimes returns, per op name ("decode", "copy_h2d", "sync", ...), the time the library's calls
// of that op have taken so far. Calls are serialised, so the sum is a floor under any concurrent
// caller's wall time: a throughput run logs it to show whether the library or the host bounds it.
func (l *Lib) CallTimes() map[string]time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.held)
}

// Open loads the library at path and checks its ABI version. A path without a slash names a file
// in the working directory (dlopen would search the system's library path for it instead): it is
// made absolute first, and Lib.Path is the absolute path.
func Open(path string) (*Lib, error) {
	if !strings.Contains(path, "/") && path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("kernels: library %s: %w", path, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("kernels: library %s: a name without a slash names a file in the working directory: %w", path, err)
		}
		path = abs
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("kernels: library %s: %w", path, err)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("kernels: loading %s: %w (is it a shared library built for this machine, with its GPU runtime installed?)", path, err)
	}
	l := &Lib{Path: path, handle: h}
	// The version first: a library of another ABI may lack symbols of this one, and its version is
	// the clearer error.
	if err := l.register("octave_abi_version", &l.abiVersion); err != nil {
		purego.Dlclose(h)
		return nil, err
	}
	if v := l.abiVersion(); v != ABIVersion {
		purego.Dlclose(h)
		return nil, abiMismatch(path, v)
	}
	syms := []struct {
		name string
		fn   any
	}{
		{"octave_last_error", &l.lastError}, {"octave_status_name", &l.statusName},
		{"octave_build_info", &l.buildInfo}, {"octave_open", &l.open}, {"octave_close", &l.close},
		{"octave_device_get_info", &l.deviceInfo}, {"octave_tiers", &l.tiers}, {"octave_alloc", &l.alloc},
		{"octave_free", &l.free}, {"octave_copy_h2d", &l.copyH2D}, {"octave_copy_d2h", &l.copyD2H},
		{"octave_copy_d2d", &l.copyD2D}, {"octave_memset", &l.memset}, {"octave_sync", &l.sync},
		{"octave_timer_start", &l.timerStart}, {"octave_timer_stop", &l.timerStop},
		{"octave_cache_store", &l.cacheStore}, {"octave_rotate", &l.rotate}, {"octave_decode", &l.decode},
		{"octave_decode_workspace_bytes", &l.workspaceBytes}, {"octave_decode_workspace_size", &l.workspaceSize},
		{"octave_reduce", &l.reduce}, {"octave_prefill", &l.prefill}, {"octave_query_maps", &l.queryMaps},
	}
	for _, s := range syms {
		if err := l.register(s.name, s.fn); err != nil {
			purego.Dlclose(h)
			return nil, err
		}
	}
	return l, nil
}

// register binds the library's symbol name to fn (a pointer to a func field).
func (l *Lib) register(name string, fn any) error {
	p, err := purego.Dlsym(l.handle, name)
	if err != nil || p == 0 {
		return fmt.Errorf("kernels: %s does not export %s: not an Octave kernel library of ABI %d", l.Path, name, ABIVersion)
	}
	purego.RegisterFunc(fn, p)
	return nil
}

// abiMismatch is Open's error for a library of another ABI version: both versions, what changed,
// and what to do.
func abiMismatch(path string, got int32) error {
	what := "a library built from another tree"
	if got < ABIVersion {
		what = fmt.Sprintf("an older library: %s", abiChanges)
	} else if got > ABIVersion {
		what = "a newer library than this Octant"
	}
	return fmt.Errorf("kernels: %s has ABI version %d, this Octant expects %d (%s): rebuild the library from this tree (make emu, make cuda, make hip)",
		path, got, ABIVersion, what)
}

// BuildInfo is the library's description of its runtime, targets and compiler.
func (l *Lib) BuildInfo() string { return l.buildInfo() }

// Close unloads the library. Devices opened from it must be closed first.
func (l *Lib) Close() error { return purego.Dlclose(l.handle) }

// check turns a status into an error with the library's message.
func (l *Lib) check(op string, st int32) error {
	if st == 0 {
		return nil
	}
	return &Error{Op: op, Status: Status(st), Name: l.statusName(st), Message: l.lastError()}
}

// LastError is octave_last_error: the message of the last failing call on the calling OS thread
// ("" if none failed). Successful calls leave it (errno-like). The binding's own calls read it
// right after each failing call and return it in *Error; LastError is for a caller that holds its
// goroutine on one thread (runtime.LockOSThread) across the calls it means.
func (l *Lib) LastError() string { return l.lastError() }

// call runs f (a library call) and checks its status while holding the lock, so that the message
// read by check is the one the call set on this thread.
func (l *Lib) call(op string, f func() int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	lockThread()
	defer unlockThread()
	start := time.Now()
	st := f()
	if l.held == nil {
		l.held = map[string]time.Duration{}
	}
	l.held[op] += time.Since(start)
	return l.check(op, st)
}
