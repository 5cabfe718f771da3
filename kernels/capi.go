package kernels

import (
	"runtime"
	"time"
	"unsafe"

	"github.com/octant-kv/octant/arch"
)

// capiBackend is a device of a C library (octave_ctx): every method is one call of the ABI, made
// through Lib.call, which serialises the library's calls and reads a failing call's message on
// the thread that made it.
type capiBackend struct {
	lib  *Lib
	ctx  uintptr // 0 after Close: the library then refuses every call on it
	info DeviceInfo
}

// A capiBackend is a Backend with the device timer and call times of the C library.
var (
	_ Backend   = (*capiBackend)(nil)
	_ Timer     = (*capiBackend)(nil)
	_ CallTimer = (*capiBackend)(nil)
)

// openCapi opens device index dev of l (octave_open) and reads its description.
func openCapi(l *Lib, dev int) (*capiBackend, error) {
	var ctx uintptr
	if err := l.call("octave_open", func() int32 { return l.open(int32(dev), &ctx) }); err != nil {
		return nil, err
	}
	b := &capiBackend{lib: l, ctx: ctx}
	info := cDeviceInfo{StructSize: uint64(unsafe.Sizeof(cDeviceInfo{}))}
	if err := l.call("octave_device_get_info", func() int32 { return l.deviceInfo(ctx, &info) }); err != nil {
		b.Close()
		return nil, err
	}
	b.info = DeviceInfo{Name: cString(info.Name[:]), Arch: cString(info.Arch[:]), Runtime: cString(info.Runtime[:]),
		WaveSize: int(info.WaveSize), LogicalWave: int(info.LogicalWave), ComputeUnits: int(info.ComputeUnits), TotalMemory: info.TotalMemory}
	return b, nil
}

// OpenDevice opens device index dev. With no device of the library's runtime the error wraps
// ErrNoDevice and names the runtime ("no HIP device").
func (l *Lib) OpenDevice(dev int) (*Device, error) {
	b, err := openCapi(l, dev)
	if err != nil {
		return nil, err
	}
	return NewDevice(b)
}

func (b *capiBackend) Info() DeviceInfo                    { return b.info }
func (b *capiBackend) BuildInfo() string                   { return b.lib.BuildInfo() }
func (b *capiBackend) CallTimes() map[string]time.Duration { return b.lib.CallTimes() }

// Close releases the context (octave_close: it waits for the device and frees the allocations
// still outstanding); a second Close does nothing.
func (b *capiBackend) Close() error {
	if b.ctx == 0 {
		return nil
	}
	err := b.lib.call("octave_close", func() int32 { return b.lib.close(b.ctx) })
	b.ctx = 0
	return err
}

func (b *capiBackend) Tiers() ([]TierDesc, error) {
	var n int32
	if err := b.lib.call("octave_tiers", func() int32 { return b.lib.tiers(b.ctx, nil, 0, &n) }); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	c := make([]cTierDesc, n)
	if err := b.lib.call("octave_tiers", func() int32 { return b.lib.tiers(b.ctx, &c[0], n, &n) }); err != nil {
		return nil, err
	}
	var out []TierDesc
	for _, t := range c[:n] {
		out = append(out, TierDesc{Tier: Tier(t.Tier), Ops: int(t.Ops), Name: arch.TierName(cString(t.Name[:])),
			DecodeProfile: cString(t.DecodeProfile[:]), PrefillProfile: cString(t.PrefillProfile[:])})
	}
	return out, nil
}

func (b *capiBackend) Alloc(bytes uint64) (uintptr, error) {
	var p uintptr
	err := b.lib.call("octave_alloc", func() int32 { return b.lib.alloc(b.ctx, bytes, &p) })
	return p, err
}

func (b *capiBackend) Free(p uintptr) error {
	return b.lib.call("octave_free", func() int32 { return b.lib.free(b.ctx, p) })
}

func (b *capiBackend) CopyH2D(dst uintptr, src []byte) error {
	err := b.lib.call("octave_copy_h2d", func() int32 {
		return b.lib.copyH2D(b.ctx, dst, unsafe.Pointer(unsafe.SliceData(src)), uint64(len(src)))
	})
	runtime.KeepAlive(src)
	return err
}

func (b *capiBackend) CopyD2H(dst []byte, src uintptr) error {
	err := b.lib.call("octave_copy_d2h", func() int32 {
		return b.lib.copyD2H(b.ctx, unsafe.Pointer(unsafe.SliceData(dst)), src, uint64(len(dst)))
	})
	runtime.KeepAlive(dst)
	return err
}

func (b *capiBackend) CopyD2D(dst, src uintptr, n uint64) error {
	return b.lib.call("octave_copy_d2d", func() int32 { return b.lib.copyD2D(b.ctx, dst, src, n) })
}

func (b *capiBackend) Memset(dst uintptr, v byte, n uint64) error {
	return b.lib.call("octave_memset", func() int32 { return b.lib.memset(b.ctx, dst, int32(v), n) })
}

func (b *capiBackend) Sync() error {
	return b.lib.call("octave_sync", func() int32 { return b.lib.sync(b.ctx) })
}

func (b *capiBackend) TimerStart() error {
	return b.lib.call("octave_timer_start", func() int32 { return b.lib.timerStart(b.ctx) })
}

func (b *capiBackend) TimerStop() (time.Duration, error) {
	var ms float32
	if err := b.lib.call("octave_timer_stop", func() int32 { return b.lib.timerStop(b.ctx, &ms) }); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * 1e6), nil
}

func (b *capiBackend) Store(a *StoreArgs) error {
	return b.lib.call("octave_cache_store", func() int32 { return b.lib.cacheStore(b.ctx, a) })
}

func (b *capiBackend) Rotate(a *RotateArgs) error {
	return b.lib.call("octave_rotate", func() int32 { return b.lib.rotate(b.ctx, a) })
}

func (b *capiBackend) Decode(a *DecodeArgs) error {
	return b.lib.call("octave_decode", func() int32 { return b.lib.decode(b.ctx, a) })
}

func (b *capiBackend) Reduce(a *ReduceArgs) error {
	return b.lib.call("octave_reduce", func() int32 { return b.lib.reduce(b.ctx, a) })
}

func (b *capiBackend) Prefill(a *PrefillArgs) error {
	return b.lib.call("octave_prefill", func() int32 { return b.lib.prefill(b.ctx, a) })
}

func (b *capiBackend) QueryMaps(a *QueryMapsArgs) error {
	return b.lib.call("octave_query_maps", func() int32 { return b.lib.queryMaps(b.ctx, a) })
}

func (b *capiBackend) WorkspaceSize(numQ, numQHeads, numSplits, partialStride int32) (uint64, error) {
	var n uint64
	err := b.lib.call("octave_decode_workspace_size", func() int32 {
		return b.lib.workspaceSize(numQ, numQHeads, numSplits, partialStride, &n)
	})
	return n, err
}

// workspaceBytes is octave_decode_workspace_bytes: a pure function of its arguments that writes
// no message, so it takes neither the library's lock nor a thread.
func (b *capiBackend) workspaceBytes(numQ, numQHeads, numSplits, partialStride int32) uint64 {
	return b.lib.workspaceBytes(numQ, numQHeads, numSplits, partialStride)
}
