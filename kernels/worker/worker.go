package worker

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
)

// Options configure a worker. The package reads no environment: a caller passes every setting.
type Options struct {
	// Python is the interpreter that runs the worker: a path, or a name looked up in PATH
	// ("": python3).
	Python string
	// Mode is where the worker keeps the device memory: "host" (a memory map of the Python
	// process; no framework needed; the default) or "torch" (one torch.uint8 tensor on Device).
	Mode string
	// Device is torch mode's device ("cuda:0", "cpu"; "": cuda when torch sees one, else cpu).
	// Host mode ignores it.
	Device string
	// Adapter is the path of a Python source file the worker loads when it starts ("": none, and
	// every op is ErrUnsupported): an adapter (docs/adapters.md), whose callables run the ops.
	// Its load failing fails Open. A relative path is taken from the working directory.
	Adapter string
	// AdapterOptions are handed to the adapter's setup(options) when it is loaded (the k=v of a
	// spec host:ADAPTER.py?k=v).
	AdapterOptions map[string]string
	// ArenaBytes is the device memory the worker allocates when it starts, all that Alloc hands
	// out (default 256 MiB; rounded up to 256 bytes).
	ArenaBytes uint64
	// ShmBytes is the shared-memory window copies go through; a larger copy goes in pieces
	// (default 64 MiB; rounded up to 4 KiB).
	ShmBytes uint64
	// Timeout is how long the worker may take over one request before it counts as hung and is
	// killed (default 120 s).
	Timeout time.Duration
	// TempDir is where the worker's Python sources are written for its life ("": the system's
	// temporary directory).
	TempDir string

	testHooks bool // start the worker with the test flag: it then honours debug messages
}

// Defaults of Options.
const (
	DefaultPython     = "python3"
	DefaultArenaBytes = 256 << 20
	DefaultShmBytes   = 64 << 20
	DefaultTimeout    = 120 * time.Second
)

// GuardBytes is the size of the guard at each end of the arena: never handed out, filled with a
// known pattern that every Sync checks.
const GuardBytes = 64 << 10

// genShift places the generation in an address: gen<<genShift | arena offset.
const genShift = 40

// Backend is a kernels.Backend whose device memory belongs to a worker process (package doc).
type Backend struct {
	mu     sync.Mutex
	opts   Options
	dir    string // the Python sources, written at Open, removed at Close
	spec   string // ADAPTER_SPEC: mode ":" adapter
	info   kernels.DeviceInfo
	build  string
	decl   json.RawMessage // the adapter's declaration as the first worker greeted (null: no adapter)
	gen    uint64          // the generation of the worker running or to start next
	heap   *allocator      // allocations of generation gen
	p      *proc           // the running worker; nil until a request needs one after a death or hang
	closed bool

	posted, waited int // requests sent without a reply, and with one (the tests read them)
}

var _ kernels.Backend = (*Backend)(nil)

// Open starts a worker and greets it: the worker allocates its arena, maps the shared-memory
// window, imports the adapter and describes its device. Every failure is an error that says what
// was expected: an interpreter not found, a worker that died or hung before its greeting, an
// adapter that does not import, torch mode without torch.
func Open(o Options) (*Backend, error) {
	if o.Python == "" {
		o.Python = DefaultPython
	}
	if o.Mode == "" {
		o.Mode = "host"
	}
	if o.Mode != "host" && o.Mode != "torch" {
		return nil, fmt.Errorf("worker: mode %q: expected \"host\" or \"torch\"", o.Mode)
	}
	if o.ArenaBytes == 0 {
		o.ArenaBytes = DefaultArenaBytes
	}
	o.ArenaBytes = (o.ArenaBytes + align - 1) &^ (align - 1)
	if o.ArenaBytes+2*GuardBytes > 1<<genShift {
		return nil, fmt.Errorf("worker: an arena of %d bytes: expected at most %d (addresses keep %d bits for the offset)",
			o.ArenaBytes, 1<<genShift-2*GuardBytes, genShift)
	}
	if o.ShmBytes == 0 {
		o.ShmBytes = DefaultShmBytes
	}
	o.ShmBytes = (o.ShmBytes + 4095) &^ 4095
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Adapter != "" {
		abs, err := filepath.Abs(o.Adapter)
		if err != nil {
			return nil, fmt.Errorf("worker: adapter %q: %w", o.Adapter, err)
		}
		o.Adapter = abs
	}
	dir, err := writeSources(o.TempDir)
	if err != nil {
		return nil, fmt.Errorf("worker: writing the worker's Python sources: %w", err)
	}
	b := &Backend{opts: o, dir: dir, spec: o.Mode + ":" + o.Adapter, gen: 1}
	b.heap = newAllocator(GuardBytes, o.ArenaBytes)
	h, err := b.start()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("worker: starting %q with %s: %w", b.spec, o.Python, err)
	}
	b.info, b.build, b.decl = h.Info.deviceInfo(), h.BuildInfo, h.Declaration
	return b, nil
}

func tierDescs(hs []helloTier) []kernels.TierDesc {
	var out []kernels.TierDesc
	for _, t := range hs {
		out = append(out, t.tierDesc())
	}
	return out
}

// hello is the worker's greeting (protocol.py, hello).
type hello struct {
	Protocol    int             `json:"protocol"`
	Info        helloInfo       `json:"info"`
	BuildInfo   string          `json:"build_info"`
	Declaration json.RawMessage `json:"declaration"` // the adapter's, normalised (adapter.py); null without one
}

type helloInfo struct {
	Name         string `json:"name"`
	Arch         string `json:"arch"`
	Runtime      string `json:"runtime"`
	WaveSize     int    `json:"wave_size"`
	LogicalWave  int    `json:"logical_wave"`
	ComputeUnits int    `json:"compute_units"`
	TotalMemory  uint64 `json:"total_memory"`
}

func (i helloInfo) deviceInfo() kernels.DeviceInfo {
	return kernels.DeviceInfo{Name: i.Name, Arch: i.Arch, Runtime: i.Runtime, WaveSize: i.WaveSize,
		LogicalWave: i.LogicalWave, ComputeUnits: i.ComputeUnits, TotalMemory: i.TotalMemory}
}

// helloTier is one tier of the worker's tiers reply (adapter.py, tier_list).
type helloTier struct {
	Tier           int32  `json:"tier"`
	Ops            int    `json:"ops"`
	Name           string `json:"name"`
	DecodeProfile  string `json:"decode_profile"`
	PrefillProfile string `json:"prefill_profile"`
}

func (t helloTier) tierDesc() kernels.TierDesc {
	return kernels.TierDesc{Tier: kernels.Tier(t.Tier), Ops: t.Ops, Name: arch.TierName(t.Name),
		DecodeProfile: t.DecodeProfile, PrefillProfile: t.PrefillProfile}
}

// start starts the worker of generation b.gen and greets it; on failure nothing is left running.
func (b *Backend) start() (hello, error) {
	var h hello
	p, err := spawn(b.opts.Python, b.dir, b.spec, b.opts.testHooks, b.opts.ShmBytes, b.opts.Timeout)
	if err != nil {
		return h, err
	}
	req, _ := json.Marshal(map[string]any{"protocol": protocolVersion, "gen": b.gen, "arena_bytes": b.opts.ArenaBytes,
		"guard_bytes": GuardBytes, "shm_bytes": b.opts.ShmBytes, "device": b.opts.Device, "options": b.opts.AdapterOptions})
	reply, isErr, err := p.roundTrip(msgHello, req)
	if err != nil {
		return h, errors.New(p.failure("hello", err, false))
	}
	if isErr {
		p.end(0)
		return h, replyError("hello", reply)
	}
	if err := json.Unmarshal(reply, &h); err != nil || h.Protocol != protocolVersion {
		p.end(0)
		return h, fmt.Errorf("the worker's greeting %.200q: expected JSON with protocol %d (%v)", reply, protocolVersion, err)
	}
	b.p = p
	return h, nil
}

// roundTrip sends a request and reads its reply; err is a transport failure (for failure).
func (p *proc) roundTrip(typ uint16, payload []byte) (reply []byte, isErr bool, err error) {
	if err := p.send(typ, payload); err != nil {
		return nil, false, &sendError{err}
	}
	return p.recv(typ)
}

// sendError is a failure to write a request (as opposed to reading its reply).
type sendError struct{ error }

func (e *sendError) Unwrap() error { return e.error }

// errorReply is a worker's error (protocol.py, error_reply).
type errorReply struct {
	Status    int32  `json:"status"`
	Name      string `json:"name"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
}

// replyError is the *kernels.Error of an error reply to op.
func replyError(op string, payload []byte) *kernels.Error {
	var r errorReply
	if err := json.Unmarshal(payload, &r); err != nil || r.Name == "" {
		return &kernels.Error{Op: op, Status: kernels.ErrRuntime, Name: "OCTAVE_ERR_RUNTIME",
			Message: fmt.Sprintf("the worker's error reply %.200q is not the expected JSON (%v)", payload, err)}
	}
	msg := r.Message
	if r.Traceback != "" {
		msg += "\n" + r.Traceback
	}
	return &kernels.Error{Op: op, Status: kernels.Status(r.Status), Name: r.Name, Message: msg}
}

// running is the running worker, started (generation b.gen) when there is none.
func (b *Backend) running(op string) (*proc, error) {
	if b.closed {
		return nil, closedError(op)
	}
	if b.p != nil {
		return b.p, nil
	}
	h, err := b.start()
	if err != nil {
		return nil, runtimeError(op, fmt.Sprintf("restarting the worker (generation %d): %v", b.gen, err))
	}
	if !bytes.Equal(h.Declaration, b.decl) {
		b.p.kill()
		b.p.end(0)
		b.p = nil
		return nil, runtimeError(op, fmt.Sprintf("the restarted worker (generation %d) declares %.300s; expected the declaration of the first, %.300s",
			b.gen, h.Declaration, b.decl))
	}
	return b.p, nil
}

// lost ends the running worker after a transport failure of request what, and starts the next
// generation: a new arena, every allocation of the old one void. The error says what happened.
func (b *Backend) lost(op, what string, cause error) error {
	var se *sendError
	msg := b.p.failure(what, cause, errors.As(cause, &se))
	b.p = nil
	b.gen++
	b.heap = newAllocator(GuardBytes, b.opts.ArenaBytes)
	return runtimeError(op, msg)
}

// post sends a request that has no reply (h2d, d2d, memset): its failure shows at the next sync.
func (b *Backend) post(op, what string, typ uint16, payload []byte) error {
	p, err := b.running(op)
	if err != nil {
		return err
	}
	if err := p.send(typ, payload); err != nil {
		return b.lost(op, what, &sendError{err})
	}
	b.posted++
	return nil
}

// call sends a request and waits for its reply.
func (b *Backend) call(op, what string, typ uint16, payload []byte) ([]byte, error) {
	p, err := b.running(op)
	if err != nil {
		return nil, err
	}
	reply, isErr, err := p.roundTrip(typ, payload)
	if err != nil {
		return nil, b.lost(op, what, err)
	}
	b.waited++
	if isErr {
		return nil, replyError(op, reply)
	}
	return reply, nil
}

func runtimeError(op, msg string) *kernels.Error {
	return &kernels.Error{Op: op, Status: kernels.ErrRuntime, Name: "OCTAVE_ERR_RUNTIME", Message: msg}
}

func invalid(op, msg string) *kernels.Error {
	return &kernels.Error{Op: op, Status: kernels.ErrInvalidArgument, Name: "OCTAVE_ERR_INVALID_ARGUMENT", Message: msg}
}

func closedError(op string) *kernels.Error { return invalid(op, "the worker backend is closed") }

// addr is the address of arena offset off in generation gen.
func addr(gen, off uint64) uintptr { return uintptr(gen<<genShift | off) }

// split is an address's generation and arena offset.
func split(p uintptr) (gen, off uint64) { return uint64(p) >> genShift, uint64(p) & (1<<genShift - 1) }

// region checks that [p, p+n) lies inside one outstanding allocation of the running generation.
func (b *Backend) region(op string, p uintptr, n uint64) error {
	gen, off := split(p)
	if gen != b.gen {
		return b.foreign(op, p, gen)
	}
	if !b.heap.contains(off, n) {
		return invalid(op, fmt.Sprintf("[%#x, +%d) is not inside an outstanding allocation", p, n))
	}
	return nil
}

// foreign is the error of an address not of the running generation.
func (b *Backend) foreign(op string, p uintptr, gen uint64) error {
	if gen >= 1 && gen < b.gen {
		return invalid(op, fmt.Sprintf("%#x belongs to worker generation %d, which ended; the running worker is generation %d and has none of its allocations", p, gen, b.gen))
	}
	return invalid(op, fmt.Sprintf("%#x is not an address of this worker (generation %d)", p, b.gen))
}

// Info describes the worker's device, as its first greeting said.
func (b *Backend) Info() kernels.DeviceInfo { return b.info }

// BuildInfo is the worker's description of itself: protocol, Python, arena, adapter.
func (b *Backend) BuildInfo() string { return b.build }

// Declaration is the adapter's declaration as the worker normalised it (adapter.py, normalise:
// JSON with every key and its default), the same for every generation; null without an adapter.
// Package harness reads what the adapter supports and its input domain from it.
func (b *Backend) Declaration() json.RawMessage { return b.decl }

// Generation is the generation of the running worker (1 for the first; each restart adds 1).
func (b *Backend) Generation() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gen
}

// Alloc takes bytes from the arena (first fit, 256-byte aligned); no message goes to the worker.
func (b *Backend) Alloc(bytes uint64) (uintptr, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	const op = "octave_alloc"
	if b.closed {
		return 0, closedError(op)
	}
	if bytes == 0 {
		return 0, invalid(op, "0 bytes asked, expected at least 1")
	}
	off, ok := b.heap.alloc(bytes)
	if !ok {
		return 0, runtimeError(op, fmt.Sprintf("%d bytes asked; the worker's arena of %d bytes has no free span that large (the largest is %d bytes; Options.ArenaBytes)",
			bytes, b.opts.ArenaBytes, b.heap.largest()))
	}
	return addr(b.gen, off), nil
}

// Free returns an allocation to the arena; no message goes to the worker. An allocation of a
// generation that ended is void already: its Free does nothing.
func (b *Backend) Free(p uintptr) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	const op = "octave_free"
	if b.closed {
		return closedError(op)
	}
	if p == 0 {
		return nil
	}
	gen, off := split(p)
	if gen >= 1 && gen < b.gen {
		return nil
	}
	if gen != b.gen {
		return b.foreign(op, p, gen)
	}
	if !b.heap.release(off) {
		return invalid(op, fmt.Sprintf("%#x is not an outstanding allocation", p))
	}
	return nil
}

// copyArgs is the binary payload of h2d, d2h, d2d and memset: three little-endian u64.
func copyArgs(a, b, c uint64) []byte {
	buf := make([]byte, 24)
	binary.LittleEndian.PutUint64(buf[0:], a)
	binary.LittleEndian.PutUint64(buf[8:], b)
	binary.LittleEndian.PutUint64(buf[16:], c)
	return buf
}

// access runs f under the lock after the checks every copy and memset make: the backend is
// open, there are bytes to move (n = 0 does nothing), and [p, p+n) lies inside one outstanding
// allocation of the running generation for each p of ptrs.
func (b *Backend) access(op string, n uint64, f func() error, ptrs ...uintptr) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return closedError(op)
	}
	if n == 0 {
		return nil
	}
	for _, p := range ptrs {
		if err := b.region(op, p, n); err != nil {
			return err
		}
	}
	return f()
}

// pieces runs f on the running worker for each window's worth [i, i+c) of n bytes.
func (b *Backend) pieces(op string, n uint64, f func(p *proc, i, c uint64) error) error {
	for i := uint64(0); i < n; {
		p, err := b.running(op)
		if err != nil {
			return err
		}
		c := min(n-i, uint64(len(p.shm)))
		if err := f(p, i, c); err != nil {
			return err
		}
		i += c
	}
	return nil
}

// CopyH2D puts src in the shared-memory window, a window's worth at a time, and posts an h2d for
// each piece (no reply). When the window has no room for a piece, a fence waits until the worker
// has read what is there.
func (b *Backend) CopyH2D(dst uintptr, src []byte) error {
	const op = "octave_copy_h2d"
	n := uint64(len(src))
	return b.access(op, n, func() error {
		return b.pieces(op, n, func(p *proc, i, c uint64) error {
			if p.ring+c > uint64(len(p.shm)) {
				if _, err := b.call(op, "h2d", msgFence, nil); err != nil {
					return err
				}
			}
			copy(p.shm[p.ring:], src[i:i+c])
			if err := b.post(op, "h2d", msgH2D, copyArgs(uint64(dst)+i, c, p.ring)); err != nil {
				return err
			}
			p.ring += c
			return nil
		})
	}, dst)
}

// CopyD2H asks for src a window's worth at a time; each reply comes once the piece is in the
// window (after every request before it).
func (b *Backend) CopyD2H(dst []byte, src uintptr) error {
	const op = "octave_copy_d2h"
	n := uint64(len(dst))
	return b.access(op, n, func() error {
		return b.pieces(op, n, func(p *proc, i, c uint64) error {
			if _, err := b.call(op, "d2h", msgD2H, copyArgs(uint64(src)+i, c, 0)); err != nil {
				return err
			}
			copy(dst[i:i+c], p.shm[:c])
			return nil
		})
	}, src)
}

// CopyD2D posts a copy inside the arena (no reply).
func (b *Backend) CopyD2D(dst, src uintptr, n uint64) error {
	const op = "octave_copy_d2d"
	return b.access(op, n, func() error {
		return b.post(op, "d2d", msgD2D, copyArgs(uint64(dst), uint64(src), n))
	}, src, dst)
}

// Memset posts a fill (no reply): later requests see it, as they see a finished memset.
func (b *Backend) Memset(dst uintptr, v byte, n uint64) error {
	const op = "octave_memset"
	return b.access(op, n, func() error {
		return b.post(op, "memset", msgMemset, copyArgs(uint64(dst), n, uint64(v)))
	}, dst)
}

// Sync waits for the worker to finish every request before it, then reports the first failure of
// a request without a reply since the last Sync, and a write past the arena (its guards).
func (b *Backend) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, err := b.call("octave_sync", "sync", msgSync, nil)
	return err
}

// closeGrace is how long Close waits for the worker to answer bye and exit before it kills it.
const closeGrace = 2 * time.Second

// Close says bye to the worker, waits closeGrace for it to exit, kills it if it has not, and
// removes its sources; every allocation ends with it. A second Close does nothing.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if p := b.p; p != nil {
		p.timeout = closeGrace
		if _, isErr, err := p.roundTrip(msgBye, nil); err != nil || isErr {
			p.kill()
		}
		p.end(closeGrace)
		b.p = nil
	}
	if err := os.RemoveAll(b.dir); err != nil {
		return fmt.Errorf("worker: removing the worker's sources: %w", err)
	}
	return nil
}
