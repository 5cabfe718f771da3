package kernels

import (
	"fmt"
	"sync"
)

// memBackend is a Backend whose device memory is host memory: one arena of bytes at a made-up
// base address, handed out first fit in 256-byte units. It has no ops and no timer, and counts
// the calls of each method, so that a test sees what a Device asked of its backend.
type memBackend struct {
	mu      sync.Mutex
	mem     []byte
	top     uint64             // bytes of mem handed out at least once, from its start
	allocs  map[uintptr]uint64 // outstanding allocations: address → bytes (a multiple of 256)
	spans   map[uintptr]uint64 // freed allocations, reused first fit: address → bytes
	calls   map[string]int     // per method name: calls made
	syncErr error              // the asynchronous error the next Sync reports
	closed  bool
	// lastSize is the struct_size of the last op's arguments.
	lastSize uint64
}

// memBase is the device address of the arena's first byte (256-byte aligned, never 0).
const memBase uintptr = 0x7e00_0000_0000

// memName is the test backend's name in its Info and its errors.
const memName = "the in-memory test backend"

func newMemBackend(bytes int) *memBackend {
	return &memBackend{mem: make([]byte, bytes), allocs: map[uintptr]uint64{}, spans: map[uintptr]uint64{}, calls: map[string]int{}}
}

// count records a call of method and returns an error when the backend is closed.
func (m *memBackend) count(method string) error {
	m.calls[method]++
	if m.closed {
		return &Error{Op: method, Status: ErrInvalidArgument, Name: "OCTAVE_ERR_INVALID_ARGUMENT", Message: memName + " is closed"}
	}
	return nil
}

// Calls is how many times method was called.
func (m *memBackend) Calls(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[method]
}

// Outstanding is how many allocations have not been freed.
func (m *memBackend) Outstanding() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.allocs)
}

// region is the memory of [p, p+n), which must lie inside one outstanding allocation.
func (m *memBackend) region(op string, p uintptr, n uint64) ([]byte, error) {
	for a, size := range m.allocs {
		if p >= a && p+uintptr(n) <= a+uintptr(size) {
			off := p - memBase
			return m.mem[off : off+uintptr(n)], nil
		}
	}
	return nil, &Error{Op: op, Status: ErrInvalidArgument, Name: "OCTAVE_ERR_INVALID_ARGUMENT",
		Message: fmt.Sprintf("%s: [%#x, +%d) is not inside an outstanding allocation", op, p, n)}
}

// At is a copy of the device bytes [p, p+n), read as a kernel would, past any canary.
func (m *memBackend) At(p uintptr, n int) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	off := p - memBase
	return append([]byte(nil), m.mem[off:off+uintptr(n)]...)
}

func (m *memBackend) Info() DeviceInfo {
	return DeviceInfo{Name: memName, Arch: "host", Runtime: "Go", WaveSize: 32, LogicalWave: 32}
}
func (m *memBackend) Tiers() ([]TierDesc, error) { return nil, nil }
func (m *memBackend) BuildInfo() string          { return memName }

func (m *memBackend) Alloc(bytes uint64) (uintptr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.count("octave_alloc"); err != nil {
		return 0, err
	}
	need := (bytes + 255) &^ 255
	for p, size := range m.spans {
		if size >= need {
			delete(m.spans, p)
			m.allocs[p] = size
			return p, nil
		}
	}
	if m.top+need > uint64(len(m.mem)) {
		return 0, &Error{Op: "octave_alloc", Status: ErrRuntime, Name: "OCTAVE_ERR_RUNTIME",
			Message: fmt.Sprintf("octave_alloc: %d bytes asked, %d of %d left", bytes, uint64(len(m.mem))-m.top, len(m.mem))}
	}
	p := memBase + uintptr(m.top)
	m.top += need
	m.allocs[p] = need
	return p, nil
}

func (m *memBackend) Free(p uintptr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.count("octave_free"); err != nil || p == 0 {
		return err
	}
	size, ok := m.allocs[p]
	if !ok {
		return &Error{Op: "octave_free", Status: ErrInvalidArgument, Name: "OCTAVE_ERR_INVALID_ARGUMENT",
			Message: fmt.Sprintf("free: %#x is not an outstanding allocation", p)}
	}
	delete(m.allocs, p)
	m.spans[p] = size
	return nil
}

// access counts a call of method and runs f on the memory [p, p+n), which must lie inside one
// outstanding allocation.
func (m *memBackend) access(method string, p uintptr, n uint64, f func(r []byte)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.count(method); err != nil {
		return err
	}
	r, err := m.region(method, p, n)
	if err == nil {
		f(r)
	}
	return err
}

func (m *memBackend) CopyH2D(dst uintptr, src []byte) error {
	return m.access("octave_copy_h2d", dst, uint64(len(src)), func(r []byte) { copy(r, src) })
}

func (m *memBackend) CopyD2H(dst []byte, src uintptr) error {
	return m.access("octave_copy_d2h", src, uint64(len(dst)), func(r []byte) { copy(dst, r) })
}

func (m *memBackend) Memset(dst uintptr, v byte, n uint64) error {
	return m.access("octave_memset", dst, n, func(r []byte) {
		for i := range r {
			r[i] = v
		}
	})
}

func (m *memBackend) CopyD2D(dst, src uintptr, n uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.count("octave_copy_d2d"); err != nil {
		return err
	}
	s, err := m.region("octave_copy_d2d", src, n)
	if err != nil {
		return err
	}
	d, err := m.region("octave_copy_d2d", dst, n)
	if err == nil {
		copy(d, s)
	}
	return err
}

// Sync reports the asynchronous error set in syncErr, once.
func (m *memBackend) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.count("octave_sync"); err != nil {
		return err
	}
	err := m.syncErr
	m.syncErr = nil
	return err
}

// FailNextSync makes the next Sync report err, as a device reports a kernel's fault.
func (m *memBackend) FailNextSync(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncErr = err
}

// op records an op's call and its struct_size (0: not an op with a struct), and refuses it: the
// backend has no ops.
func (m *memBackend) op(name string, structSize uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.count(name); err != nil {
		return err
	}
	m.lastSize = structSize
	return Unsupported(name, memName)
}

func (m *memBackend) Store(a *StoreArgs) error   { return m.op("octave_cache_store", a.structSize) }
func (m *memBackend) Rotate(a *RotateArgs) error { return m.op("octave_rotate", a.structSize) }
func (m *memBackend) Decode(a *DecodeArgs) error { return m.op("octave_decode", a.structSize) }
func (m *memBackend) Reduce(a *ReduceArgs) error { return m.op("octave_reduce", a.structSize) }
func (m *memBackend) Prefill(a *PrefillArgs) error {
	return m.op("octave_prefill", a.structSize)
}
func (m *memBackend) QueryMaps(a *QueryMapsArgs) error {
	return m.op("octave_query_maps", a.structSize)
}
func (m *memBackend) WorkspaceSize(numQ, numQHeads, numSplits, partialStride int32) (uint64, error) {
	return 0, m.op("octave_decode_workspace_size", 0)
}

// Close frees every allocation still outstanding; later calls fail.
func (m *memBackend) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.count("octave_close"); err != nil {
		return err
	}
	m.closed = true
	clear(m.allocs)
	return nil
}
