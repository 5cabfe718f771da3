package kernels

// The C ABI as a foreign client sees it (octave_capi.h): the errno-like last error, struct_size of
// input and output structs, the workspace size with a status, and what octave_free and
// octave_close do with a context's allocations. These call the library's functions directly
// (raw structs and pointers), as a client of the header alone would.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// openTestDevice opens the OCTANT_LIB library and its device 0, or skips.
func openTestDevice(t *testing.T) (*Lib, *Device) {
	t.Helper()
	l := openTestLib(t)
	d, err := l.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return l, d
}

// libOf is the library of a device that Lib.OpenDevice opened.
func libOf(d *Device) *Lib { return d.be.(*capiBackend).lib }

// wantStatus checks that err is a library error with the status and a message holding every
// one of words.
func wantStatus(t *testing.T, what string, err error, st Status, words ...string) *Error {
	t.Helper()
	var ke *Error
	if !errors.As(err, &ke) {
		t.Errorf("%s: got %v, expected status %d", what, err, st)
		return nil
	}
	if ke.Status != st {
		t.Errorf("%s: status %d (%s): %q, expected %d", what, ke.Status, ke.Name, ke.Message, st)
	}
	for _, w := range words {
		if !strings.Contains(ke.Message, w) {
			t.Errorf("%s: message %q does not say %q", what, ke.Message, w)
		}
	}
	return ke
}

// TestLastErrorErrnoLike: octave_last_error holds the message of the last failing call on the
// thread; successful calls after it leave it (the header's promise, errno-like); the next failing
// call replaces it. The binding reads the message only after a failing call, so its *Error always
// carries the failing call's own message.
func TestLastErrorErrnoLike(t *testing.T) {
	l, d := openTestDevice(t)
	runtime.LockOSThread() // octave_last_error is per thread: keep every call below on this one
	defer runtime.UnlockOSThread()

	err1 := d.Reduce(ReduceArgs{Dtype: 7, HeadSize: 256, NumQHeads: 1, NumSplits: 1})
	ke1 := wantStatus(t, "reduce with dtype 7", err1, ErrDtype, "dtype 7")
	if ke1 == nil {
		t.FailNow()
	}
	if got := l.LastError(); got != ke1.Message {
		t.Errorf("octave_last_error right after the failing call: %q, expected its message %q", got, ke1.Message)
	}
	// Successful calls of every kind: sync, memory, an op with nothing to do, informational calls.
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	b, err := d.Alloc(100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Tiers(); err != nil {
		t.Fatal(err)
	}
	if err := d.Rotate(RotateArgs{Dtype: F16, HeadSize: 256, NumHds: 1}); err != nil {
		t.Fatal(err)
	}
	if n, err := d.WorkspaceSize(2, 8, 3, 0); err != nil || n == 0 {
		t.Fatalf("WorkspaceSize(2, 8, 3, 0) = %d, %v", n, err)
	}
	_ = l.BuildInfo()
	if got := l.LastError(); got != ke1.Message {
		t.Errorf("octave_last_error after successful calls: %q, expected the last failing call's message %q (errno-like: only failures write it)", got, ke1.Message)
	}
	// The next failure replaces it, and the binding reports each failure's own message.
	ke2 := wantStatus(t, "decode with format 0", d.Decode(DecodeArgs{Fmt: 0}), ErrFormat, "decode: format id 0")
	if ke2 != nil && (l.LastError() != ke2.Message || ke2.Message == ke1.Message) {
		t.Errorf("after a second failure: octave_last_error %q, *Error %q, first %q", l.LastError(), ke2.Message, ke1.Message)
	}
}

// TestOutputStructSize: octave_device_get_info needs struct_size set by the caller: 0 and any
// size below the library's are refused, a size more than OCTAVE_STRUCT_SIZE_SLACK (4096) above it
// is refused as implausible; a larger plausible size gets the library's fields, zeros up to
// struct_size, bytes past struct_size untouched, and struct_size set to the library's size.
func TestOutputStructSize(t *testing.T) {
	l, d := openTestDevice(t)
	const own = 368
	words := make([]uint64, (own+4096+64)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	call := func(size uint64) error {
		for i := range buf {
			buf[i] = 0xAB
		}
		words[0] = size
		return l.call("octave_device_get_info", func() int32 {
			return l.deviceInfo(d.Context(), (*cDeviceInfo)(unsafe.Pointer(&words[0])))
		})
	}
	for _, n := range []uint64{0, 8, own - 1} {
		wantStatus(t, fmt.Sprintf("struct_size %d", n), call(n), ErrInvalidArgument,
			fmt.Sprintf("struct_size = %d", n), "expected 368", "caller sets struct_size")
	}
	for _, n := range []uint64{own + 4097, 1 << 40} {
		wantStatus(t, fmt.Sprintf("struct_size %d", n), call(n), ErrInvalidArgument,
			fmt.Sprintf("struct_size = %d is implausible", n), "4096")
	}
	for _, n := range []uint64{own, own + 8, own + 4096} {
		if err := call(n); err != nil {
			t.Fatalf("struct_size %d: %v", n, err)
		}
		if words[0] != own {
			t.Errorf("struct_size %d: the library set struct_size to %d, expected its own size 368", n, words[0])
		}
		info := (*cDeviceInfo)(unsafe.Pointer(&words[0]))
		if cString(info.Arch[:]) != d.Info.Arch || info.LogicalWave != 32 {
			t.Errorf("struct_size %d: info %+v, expected arch %s", n, info, d.Info.Arch)
		}
		for i := own; i < int(n); i++ {
			if buf[i] != 0 {
				t.Errorf("struct_size %d: byte %d past the library's struct is %#x, expected 0", n, i, buf[i])
				break
			}
		}
		for i := int(n); i < len(buf); i++ {
			if buf[i] != 0xAB {
				t.Errorf("struct_size %d: byte %d past struct_size was written (%#x)", n, i, buf[i])
				break
			}
		}
	}
}

// TestArgsStructSize: an op's args struct may be larger than the library's when the extra bytes
// are zero, up to OCTAVE_STRUCT_SIZE_SLACK bytes more; smaller, nonzero extra bytes, or
// implausibly large are refused, each with a message that says so.
func TestArgsStructSize(t *testing.T) {
	l, d := openTestDevice(t)
	own := uint64(unsafe.Sizeof(RotateArgs{})) // 88
	words := make([]uint64, (own+4096+64)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	call := func(size uint64, extra byte) error {
		clear(buf)
		a := (*RotateArgs)(unsafe.Pointer(&words[0]))
		*a = RotateArgs{Dtype: F16, HeadSize: 256, NumTokens: 0, NumHds: 1} // valid, nothing to do
		a.structSize = size
		if extra != 0 {
			buf[size-1] = extra
		}
		return l.call("octave_rotate", func() int32 { return l.rotate(d.Context(), a) })
	}
	for _, n := range []uint64{own, own + 8, own + 4096} {
		if err := call(n, 0); err != nil {
			t.Errorf("struct_size %d with zero extra bytes: %v, expected OK", n, err)
		}
	}
	wantStatus(t, "struct_size 0", call(0, 0), ErrInvalidArgument, "struct_size = 0", "expected 88")
	wantStatus(t, "struct_size 87", call(own-1, 0), ErrInvalidArgument, "struct_size = 87", "expected 88")
	wantStatus(t, "struct_size 96, byte 95 set", call(own+8, 1), ErrInvalidArgument, "byte 95 is not zero")
	wantStatus(t, "struct_size 88+4097", call(own+4097, 0), ErrInvalidArgument, "struct_size = 4185 is implausible", "4096")
}

// TestWorkspaceSize: octave_decode_workspace_size tells an empty decode (0 bytes, OK) from bad
// input (a status naming the field, and the same status octave_decode gives), including sizes
// whose product overflows 64 bits; octave_decode_workspace_bytes (no status) answers 0 for both.
func TestWorkspaceSize(t *testing.T) {
	l, d := openTestDevice(t)
	for _, c := range []struct {
		nq, hq, ns, ps int
		want           uint64
	}{
		{0, 8, 3, 0, 0}, {0, 1, 1024, 512, 0},
		{2, 6, 3, 0, 2 * 6 * 3 * 260 * 4}, {1, 1, 1, 260, 1040}, {5, 8, 1024, 264, 5 * 8 * 1024 * 264 * 4},
	} {
		got, err := d.WorkspaceSize(c.nq, c.hq, c.ns, c.ps)
		if err != nil || got != c.want {
			t.Errorf("WorkspaceSize(%d, %d, %d, %d) = %d, %v; want %d, nil", c.nq, c.hq, c.ns, c.ps, got, err, c.want)
		}
		if b := d.WorkspaceBytes(c.nq, c.hq, c.ns, c.ps); b != c.want {
			t.Errorf("WorkspaceBytes(%d, %d, %d, %d) = %d, want %d", c.nq, c.hq, c.ns, c.ps, b, c.want)
		}
	}
	for _, c := range []struct {
		nq, hq, ns, ps int
		st             Status
		word           string
	}{
		{-1, 8, 3, 0, ErrInvalidArgument, "num_q"},
		{2, 0, 3, 0, ErrInvalidArgument, "num_q_heads"},
		{2, -8, 3, 0, ErrInvalidArgument, "num_q_heads"},
		{2, 8, 0, 0, ErrNumSplits, "num_splits"},
		{2, 8, 1025, 0, ErrNumSplits, "num_splits"},
		{2, 8, 3, 257, ErrWorkspace, "partial_stride"},
		{2, 8, 3, 262, ErrWorkspace, "partial_stride"},
		{2, 8, 3, -4, ErrWorkspace, "partial_stride"},
		// 2^20 x 8 x 1024 x 2^30 x 4 = 2^65: wraps to exactly 0 in 64 bits.
		{1 << 20, 8, 1024, 1 << 30, ErrWorkspace, "overflows 64 bits"},
		{1<<31 - 1, 1<<31 - 1, 1024, 1<<31 - 4, ErrWorkspace, "overflows 64 bits"},
	} {
		got, err := d.WorkspaceSize(c.nq, c.hq, c.ns, c.ps)
		wantStatus(t, fmt.Sprintf("WorkspaceSize(%d, %d, %d, %d)", c.nq, c.hq, c.ns, c.ps), err, c.st, c.word)
		if got != 0 {
			t.Errorf("WorkspaceSize(%d, %d, %d, %d) = %d with an error, expected 0", c.nq, c.hq, c.ns, c.ps, got)
		}
		if b := d.WorkspaceBytes(c.nq, c.hq, c.ns, c.ps); b != 0 {
			t.Errorf("WorkspaceBytes(%d, %d, %d, %d) = %d on bad input, expected 0", c.nq, c.hq, c.ns, c.ps, b)
		}
	}
	if _, err := d.WorkspaceSize(1<<31, 1, 1, 0); err == nil || !strings.Contains(err.Error(), "int32") {
		t.Errorf("WorkspaceSize(2^31, ...): %v, expected an error: num_q does not fit in int32", err)
	}
	st := l.workspaceSize(1, 1, 1, 0, nil)
	if Status(st) != ErrInvalidArgument {
		t.Errorf("octave_decode_workspace_size with bytes NULL: status %d, expected INVALID_ARGUMENT", st)
	}
}

// rawAlloc allocates n bytes with octave_alloc, without canaries.
func rawAlloc(t *testing.T, d *Device, n uint64) uintptr {
	t.Helper()
	var p uintptr
	l := libOf(d)
	if err := l.call("octave_alloc", func() int32 { return l.alloc(d.Context(), n, &p) }); err != nil {
		t.Fatal(err)
	}
	return p
}

func rawFree(d *Device, p uintptr) error {
	l := libOf(d)
	return l.call("octave_free", func() int32 { return l.free(d.Context(), p) })
}

// TestFreeOwnAllocationsOnly: octave_free takes only an outstanding allocation of its own context:
// a second free, a pointer into an allocation, and another context's allocation are refused
// (INVALID_ARGUMENT, nothing freed), NULL is fine.
func TestFreeOwnAllocationsOnly(t *testing.T) {
	l, d := openTestDevice(t)
	_, d2 := openTestDevice(t)
	p1, p2 := rawAlloc(t, d, 4096), rawAlloc(t, d, 1000)
	if p1%256 != 0 || p2%256 != 0 {
		t.Errorf("octave_alloc returned %#x, %#x: expected 256-byte alignment", p1, p2)
	}
	if err := rawFree(d, p2); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "second free", rawFree(d, p2), ErrInvalidArgument, "not an allocation of this context")
	wantStatus(t, "free of an interior pointer", rawFree(d, p1+256), ErrInvalidArgument, "not an allocation of this context")
	wantStatus(t, "free on another context", rawFree(d2, p1), ErrInvalidArgument, "not an allocation of this context")
	if err := rawFree(d, 0); err != nil {
		t.Errorf("free(NULL): %v", err)
	}
	// p1 is still allocated and usable: the refused frees freed nothing.
	src := []byte("still allocated")
	if err := l.call("octave_copy_h2d", func() int32 { return l.copyH2D(d.Context(), p1, unsafe.Pointer(&src[0]), uint64(len(src))) }); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(src))
	if err := l.call("octave_copy_d2h", func() int32 { return l.copyD2H(d.Context(), unsafe.Pointer(&got[0]), p1, uint64(len(got))) }); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(src) {
		t.Errorf("read back %q after the refused frees, expected %q", got, src)
	}
	if err := rawFree(d, p1); err != nil {
		t.Errorf("free of the outstanding allocation: %v", err)
	}
}

// residentBytes is the process's resident set size (Linux), 0 when unknown.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseUint(f[1], 10, 64)
	return n * uint64(os.Getpagesize())
}

// TestCloseFreesAllocations: octave_close frees the allocations its context still holds (the
// header's decision; the alternative, leaking them, would exhaust the device in a long-running
// client that tears contexts down). Each round opens a context, allocates a large buffer, fills it
// and closes without freeing it: on a GPU each buffer is 35% of the device's memory, so a leak fails
// the third round's allocation; on the CPU emulator (total_memory 0) each is 64 MiB of host memory
// and a leak shows as resident memory that grows by each round's buffer.
func TestCloseFreesAllocations(t *testing.T) {
	l := openTestLib(t)
	d0, err := l.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	size := uint64(64 << 20)
	if m := d0.Info.TotalMemory; m > 0 {
		size = m / 100 * 35
	}
	d0.Close()
	const rounds = 5
	rss0 := residentBytes()
	for i := range rounds {
		d, err := l.OpenDevice(0)
		if err != nil {
			t.Fatal(err)
		}
		p := rawAlloc(t, d, size)
		if err := l.call("octave_memset", func() int32 { return l.memset(d.Context(), p, int32(i+1), size) }); err != nil {
			t.Fatal(err)
		}
		small, err := d.Alloc(1000, 0) // a Buffer left outstanding too
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("round %d: close with outstanding allocations: %v, expected OK (they are freed)", i, err)
		}
		if err := small.Free(); err == nil {
			t.Errorf("round %d: Buffer.Free after Device.Close succeeded, expected an error (the context is gone)", i)
		}
	}
	if rss0 > 0 && l.openInfoIsEmu(t) {
		if grown := int64(residentBytes()) - int64(rss0); grown > int64(2*size) {
			t.Errorf("resident memory grew by %d MiB over %d rounds of a %d MiB allocation left to octave_close: the allocations leak", grown>>20, rounds, size>>20)
		}
	}
	if err := l.call("octave_close", func() int32 { return l.close(0) }); err != nil {
		t.Errorf("octave_close(NULL): %v, expected OK", err)
	}
}

// openInfoIsEmu reports whether the library's device is the CPU emulator (host memory).
func (l *Lib) openInfoIsEmu(t *testing.T) bool {
	d, err := l.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return d.Info.TotalMemory == 0
}
