package kernels

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/octant-kv/octant/arch"
)

// Device is an opened device: its Backend (a C library's octave_ctx, or another implementation)
// and what the binding adds above it, canaries, the pool and the checks of its own arguments.
type Device struct {
	be     Backend
	closed bool
	// Info is the device's description, read at open.
	Info DeviceInfo

	poolMu  sync.Mutex
	pool    map[uint64][]uintptr // size class → freed allocations kept for reuse; nil: no pooling
	pooled  uint64               // bytes held in pool
	poolMax uint64
	poolGen uint64 // the backend's generation the pooled allocations belong to (Generational)
}

// DeviceInfo describes a device.
type DeviceInfo struct {
	Name         string
	Arch         string // "gfx1100", "gfx942", "sm_90", ...
	Runtime      string // "HIP", "CUDA", ...
	WaveSize     int
	LogicalWave  int
	ComputeUnits int
	TotalMemory  uint64
}

// TierDesc is a tier the device offers and the numeric profiles of its ops.
type TierDesc struct {
	Tier           Tier
	Ops            int           // the ABI's op bits: use Offers
	Name           arch.TierName // as the library reports it (octave_tier_info)
	DecodeProfile  string
	PrefillProfile string
}

// Offers reports whether the tier implements op: decode and prefill by the tier's op bits; store,
// rotate and reduce, which are not tiered, never (a library has one implementation of each).
func (t TierDesc) Offers(op arch.Op) bool {
	switch op {
	case arch.Decode:
		return t.Ops&opBitDecode != 0
	case arch.Prefill:
		return t.Ops&opBitPrefill != 0
	}
	return false
}

// Profile is the numeric profile the tier declares for a tiered op ("" otherwise).
func (t TierDesc) Profile(op arch.Op) string {
	switch op {
	case arch.Decode:
		return t.DecodeProfile
	case arch.Prefill:
		return t.PrefillProfile
	}
	return ""
}

// NewDevice is a Device over be, described by be.Info().
func NewDevice(be Backend) (*Device, error) {
	if be == nil {
		return nil, fmt.Errorf("kernels: NewDevice: expected a Backend, got nil")
	}
	return &Device{be: be, Info: be.Info()}, nil
}

// Close frees the pooled allocations and closes the backend, which frees every allocation still
// outstanding (the C library: octave_close, after waiting for the device): a Buffer not freed
// before is freed with it, and its Free afterwards returns an error (the backend is closed). A
// second Close does nothing.
func (d *Device) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	_, perr := d.drainPool()
	err := d.be.Close()
	if err == nil {
		err = perr
	}
	return err
}

// Tiers lists the tiers available on the device.
func (d *Device) Tiers() ([]TierDesc, error) { return d.be.Tiers() }

// BuildInfo is the backend's description of its runtime, targets and compiler (the C library's
// octave_build_info).
func (d *Device) BuildInfo() string { return d.be.BuildInfo() }

// Sync waits for the device and reports asynchronous errors.
func (d *Device) Sync() error { return d.be.Sync() }

// TimerStart enqueues the start mark of the device timer (octave_timer_start) and returns at once.
// A backend without a Timer refuses it with status ErrUnsupported.
func (d *Device) TimerStart() error {
	t, err := d.timer("octave_timer_start")
	if err != nil {
		return err
	}
	return t.TimerStart()
}

// TimerStop enqueues the stop mark, waits for it and returns the device time between the start
// and stop marks (octave_timer_stop): what CUDA/HIP events measure, idle gaps included. A stop with
// no start since the last stop is an error, and so is a backend without a Timer (ErrUnsupported).
func (d *Device) TimerStop() (time.Duration, error) {
	t, err := d.timer("octave_timer_stop")
	if err != nil {
		return 0, err
	}
	return t.TimerStop()
}

// timer is the backend's Timer, or op's error for a backend without one.
func (d *Device) timer(op string) (Timer, error) {
	if t, ok := d.be.(Timer); ok {
		return t, nil
	}
	return nil, Unsupported(op, fmt.Sprintf("the backend of device %q (%T)", d.Info.Name, d.be))
}

// CallTimes returns, per op name ("octave_decode", "octave_sync", ...), the time the backend's
// calls of that op have taken so far, or nil when the backend does not count them (it is not a
// CallTimer). The C library serialises its calls, so the sum is a floor under any concurrent
// caller's wall time, and it counts the calls of every device of the library (Lib.CallTimes).
func (d *Device) CallTimes() map[string]time.Duration {
	if c, ok := d.be.(CallTimer); ok {
		return c.CallTimes()
	}
	return nil
}

// CanaryBytes is the size of the guard region on each side of a Buffer (a multiple of 256 keeps
// the buffer 256-byte aligned).
const CanaryBytes = 256

// canary is the guard pattern: position-dependent, so a shifted write is caught too.
func canary(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0xC5 ^ i*31)
	}
	return b
}

// Buffer is device memory with canary regions before and after it.
type Buffer struct {
	d    *Device
	base uintptr // start of the allocation (front canary)
	Ptr  uintptr // start of the usable bytes
	Len  int
	tag  poolTag // the allocation's size class and generation
	sub  bool    // part of a BufferSet's arena: Free leaves the memory to the set
}

// Alloc allocates n usable bytes between two canary regions and fills the canaries. The usable
// bytes are filled with fill (a byte value, so unwritten outputs are visible).
func (d *Device) Alloc(n int, fill byte) (*Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("kernels: Alloc(%d): negative size", n)
	}
	return d.alloc(n, fill, nil)
}

// AllocWith allocates len(data) usable bytes between two canary regions, holding data.
func (d *Device) AllocWith(data []byte) (*Buffer, error) { return d.alloc(len(data), 0, data) }

// imageBytes bounds the buffers that alloc fills, and readChecked reads, as one image of canaries
// and contents: one copy instead of three or four. Each copy is a synchronous runtime call that
// costs about as much as copying a few hundred KiB on the host, and a fuzz case's buffers are
// mostly small (a decode case makes a dozen, four times). Larger buffers are filled on the device
// (memset) and their canaries copied alone, as building their image on the host would cost more
// than the calls it saves (measured on the H200 with a 4 MiB bound: the decode target slowed).
const imageBytes = 256 << 10

// alloc allocates n usable bytes and fills them with data (len(data) == n) or, when data is nil,
// with fill; the canaries around them are written in the same copy when the buffer is small.
func (d *Device) alloc(n int, fill byte, data []byte) (*Buffer, error) {
	p, tag, err := d.rawAlloc(uint64(n + 2*CanaryBytes))
	if err != nil {
		return nil, err
	}
	b := &Buffer{d: d, base: p, Ptr: p + CanaryBytes, Len: n, tag: tag}
	c := canary(CanaryBytes)
	if n <= imageBytes {
		img := make([]byte, n+2*CanaryBytes)
		copy(img, c)
		body := img[CanaryBytes : CanaryBytes+n]
		if data != nil {
			copy(body, data)
		} else if fill != 0 && n > 0 {
			body[0] = fill
			for i := 1; i < n; i *= 2 {
				copy(body[i:], body[:i])
			}
		}
		copy(img[CanaryBytes+n:], c)
		if err := b.writeRaw(0, img); err != nil {
			b.Free()
			return nil, err
		}
		return b, nil
	}
	err = b.writeRaw(0, c)
	if err == nil {
		err = b.writeRaw(CanaryBytes+n, c)
	}
	if err == nil && data != nil {
		err = b.writeRaw(CanaryBytes, data)
	} else if err == nil {
		err = d.be.Memset(b.Ptr, fill, uint64(n))
	}
	if err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// Free releases the buffer (a buffer of a BufferSet's arena: the set frees the arena).
func (b *Buffer) Free() error {
	if b.base == 0 {
		return nil
	}
	var err error
	if !b.sub {
		err = b.d.rawFree(b.base, b.tag)
	}
	b.base, b.Ptr = 0, 0
	return err
}

func (b *Buffer) writeRaw(off int, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return b.d.be.CopyH2D(b.base+uintptr(off), src)
}

func (b *Buffer) readRaw(off int, dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	return b.d.be.CopyD2H(dst, b.base+uintptr(off))
}

// Write copies src into the buffer at byte offset off.
func (b *Buffer) Write(off int, src []byte) error {
	if off < 0 || off+len(src) > b.Len {
		return fmt.Errorf("kernels: Write of %d bytes at %d into a %d-byte buffer", len(src), off, b.Len)
	}
	return b.writeRaw(CanaryBytes+off, src)
}

// Read copies the buffer's bytes [off, off+len(dst)) into dst.
func (b *Buffer) Read(off int, dst []byte) error {
	if off < 0 || off+len(dst) > b.Len {
		return fmt.Errorf("kernels: Read of %d bytes at %d from a %d-byte buffer", len(dst), off, b.Len)
	}
	return b.readRaw(CanaryBytes+off, dst)
}

// Bytes returns a copy of the whole buffer.
func (b *Buffer) Bytes() ([]byte, error) {
	out := make([]byte, b.Len)
	return out, b.Read(0, out)
}

// CheckCanaries reports an error naming the first corrupted guard byte, if any (the device is
// synchronised first, so writes of earlier launches are seen).
func (b *Buffer) CheckCanaries(name string) error {
	if err := b.d.Sync(); err != nil {
		return err
	}
	_, err := b.readChecked(name, false)
	return err
}

// readChecked reads the buffer's canaries, and its contents when withBody is set or the buffer is
// small enough to read as one image (imageBytes), without synchronising first; it reports the
// first corrupted guard byte, and returns the contents it read (nil when it read none).
func (b *Buffer) readChecked(name string, withBody bool) (body []byte, err error) {
	var front, rear []byte
	if withBody || b.Len <= imageBytes {
		img := make([]byte, b.Len+2*CanaryBytes)
		if err := b.readRaw(0, img); err != nil {
			return nil, err
		}
		front, body, rear = img[:CanaryBytes], img[CanaryBytes:CanaryBytes+b.Len], img[CanaryBytes+b.Len:]
	} else {
		front, rear = make([]byte, CanaryBytes), make([]byte, CanaryBytes)
		if err := b.readRaw(0, front); err != nil {
			return nil, err
		}
		if err := b.readRaw(CanaryBytes+b.Len, rear); err != nil {
			return nil, err
		}
	}
	return body, checkGuards(name, front, rear, b.Len)
}

// checkGuards reports the first corrupted byte of a buffer's canaries front and rear (n usable
// bytes between them), by its offset relative to the buffer's start.
func checkGuards(name string, front, rear []byte, n int) error {
	want := canary(CanaryBytes)
	for _, side := range []struct {
		what string
		got  []byte
	}{{"before", front}, {"after", rear}} {
		if bytes.Equal(side.got, want) {
			continue
		}
		for i := range side.got {
			if side.got[i] != want[i] {
				pos := i - CanaryBytes // relative to the buffer start
				if side.what == "after" {
					pos = n + i
				}
				return fmt.Errorf("kernels: %s: canary %s the buffer overwritten at byte offset %d (0x%02x, expected 0x%02x)", name, side.what, pos, side.got[i], want[i])
			}
		}
	}
	return nil
}

// CopyD2D copies n bytes from device address src to device address dst (octave_copy_d2d). The
// runtime may return before the device has finished the copy (cudaMemcpy between device buffers
// does); Sync waits for it.
func (d *Device) CopyD2D(dst, src uintptr, n uint64) error {
	return d.be.CopyD2D(dst, src, n)
}
