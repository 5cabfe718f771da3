package kernels

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// The Device's memory paths over a Backend of host memory (membackend_test.go): no library is
// loaded, so every byte a test sees on the "device" got there through the backend, and every
// write a test makes through the backend (as a kernel would) must reach the Device's checks.

var _ Backend = (*memBackend)(nil)

// openMemDevice is a Device over a fresh memBackend of 8 MiB.
func openMemDevice(t *testing.T) (*Device, *memBackend) {
	t.Helper()
	be := newMemBackend(8 << 20)
	d, err := NewDevice(be)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, be
}

// wantErrorStatus checks that err is an *Error of status st whose text says every one of words.
func wantErrorStatus(t *testing.T, what string, err error, st Status, words ...string) {
	t.Helper()
	var ke *Error
	if !errors.As(err, &ke) || ke.Status != st {
		t.Errorf("%s: %v; expected an *Error with status %d", what, err, st)
		return
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

// TestNewDevice: a Device takes its description from the backend and refuses a nil one; what
// only the C library has is absent (no context, no call times), an op reaches the backend with
// struct_size filled in, and the backend's refusal comes back as it is.
func TestNewDevice(t *testing.T) {
	if _, err := NewDevice(nil); err == nil || !strings.Contains(err.Error(), "expected a Backend, got nil") {
		t.Errorf("NewDevice(nil): %v; expected an error saying a Backend was expected", err)
	}
	d, be := openMemDevice(t)
	if d.Info.Name != memName || d.BuildInfo() != memName {
		t.Errorf("Info %+v, BuildInfo %q: expected the backend's (%s)", d.Info, d.BuildInfo(), memName)
	}
	if d.Context() != 0 || d.CallTimes() != nil {
		t.Errorf("Context %#x, CallTimes %v: expected 0 and nil for a backend other than the C library", d.Context(), d.CallTimes())
	}
	wantErrorStatus(t, "Store", d.Store(StoreArgs{}), ErrUnsupported, "octave_cache_store", memName)
	if be.Calls("octave_cache_store") != 1 || be.lastSize != uint64(unsafe.Sizeof(StoreArgs{})) {
		t.Errorf("Store: the backend saw %d calls with struct_size %d; expected 1 with %d",
			be.Calls("octave_cache_store"), be.lastSize, unsafe.Sizeof(StoreArgs{}))
	}
	wantErrorStatus(t, "Decode", d.Decode(DecodeArgs{}), ErrUnsupported, "octave_decode")
	if be.lastSize != uint64(unsafe.Sizeof(DecodeArgs{})) {
		t.Errorf("Decode: struct_size %d reached the backend, expected %d", be.lastSize, unsafe.Sizeof(DecodeArgs{}))
	}
	if n := d.WorkspaceBytes(1, 8, 2, 0); n != 0 || be.Calls("octave_decode_workspace_size") != 1 {
		t.Errorf("WorkspaceBytes = %d after %d WorkspaceSize calls; expected 0 (the backend's error dropped) after 1", n, be.Calls("octave_decode_workspace_size"))
	}
	wantErrorStatus(t, "TimerStart", d.TimerStart(), ErrUnsupported, "octave_timer_start", "does not implement")
	_, err := d.TimerStop()
	wantErrorStatus(t, "TimerStop", err, ErrUnsupported, "octave_timer_stop")
}

// TestBackendBufferSet: a BufferSet's inputs reach the backend's memory between their canaries;
// what a kernel writes there (through the backend) comes back from ReadAll; a modified input and a
// write into a guard are reported by Verify. With and without an arena.
func TestBackendBufferSet(t *testing.T) {
	for _, arena := range []int{0, 4096} {
		t.Run("arena"+strconv.Itoa(arena), func(t *testing.T) {
			d, be := openMemDevice(t)
			s := &BufferSet{Dev: d, Arena: arena}
			defer s.Free()
			in := s.Input("key", []byte{1, 2, 3, 4})
			out := s.Output("out", 5, 0xFF)
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if got := be.At(in.Ptr, in.Len); string(got) != "\x01\x02\x03\x04" {
				t.Errorf("the input on the device: %x, expected 01020304", got)
			}
			if got := be.At(in.Ptr-CanaryBytes, CanaryBytes); string(got) != string(canary(CanaryBytes)) {
				t.Errorf("the input's front guard on the device: %x, expected the canary", got)
			}
			if got := be.At(out.Ptr, out.Len); string(got) != "\xff\xff\xff\xff\xff" {
				t.Errorf("the output on the device: %x, expected the fill ffffffffff", got)
			}
			// A kernel writes the output.
			if err := be.CopyH2D(out.Ptr, []byte("hello")); err != nil {
				t.Fatal(err)
			}
			if err := s.Verify("op"); err != nil {
				t.Fatalf("Verify after writing the output alone: %v", err)
			}
			if got, err := out.ReadAll(); err != nil || string(got) != "hello" {
				t.Errorf("out.ReadAll() = %q, %v; expected what the kernel wrote, \"hello\"", got, err)
			}
			// A kernel writes one byte past the output and modifies the input.
			if err := be.CopyH2D(out.Ptr+uintptr(out.Len), []byte{0}); err != nil {
				t.Fatal(err)
			}
			if err := be.CopyH2D(in.Ptr+2, []byte{9}); err != nil {
				t.Fatal(err)
			}
			err := s.Verify("op")
			for _, want := range []string{
				"after op: kernels: out: canary after the buffer overwritten at byte offset 5",
				"after op: input key was modified: byte 2 is 0x09, uploaded 0x03 (1 bytes differ)",
			} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Verify after the writes: %v\nexpected %q", err, want)
				}
			}
		})
	}
}

// TestBackendCanaries: Buffer.CheckCanaries reports a write into either guard made through the
// backend, by its offset from the buffer's start, for a buffer written as one image and for one
// past imageBytes (its fill by the backend's Memset).
func TestBackendCanaries(t *testing.T) {
	for _, n := range []int{100, imageBytes + 1} {
		d, be := openMemDevice(t)
		b, err := d.Alloc(n, 0x5A)
		if err != nil {
			t.Fatal(err)
		}
		if got := be.At(b.Ptr+uintptr(n-1), 1); got[0] != 0x5A {
			t.Errorf("n=%d: the last usable byte on the device is %#x, expected the fill 0x5a", n, got[0])
		}
		if want := map[bool]int{false: 0, true: 1}[n > imageBytes]; be.Calls("octave_memset") != want {
			t.Errorf("n=%d: %d Memset calls, expected %d", n, be.Calls("octave_memset"), want)
		}
		if err := b.CheckCanaries("buf"); err != nil {
			t.Fatalf("n=%d: untouched buffer: %v", n, err)
		}
		if err := be.CopyH2D(b.Ptr+uintptr(n)+3, []byte{0}); err != nil {
			t.Fatal(err)
		}
		want := "kernels: buf: canary after the buffer overwritten at byte offset " + strconv.Itoa(n+3)
		if err := b.CheckCanaries("buf"); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("n=%d: a write 3 bytes past the end: %v; expected %q", n, err, want)
		}
		if err := be.CopyH2D(b.Ptr+uintptr(n)+3, canary(CanaryBytes)[3:4]); err != nil { // the guard restored
			t.Fatal(err)
		}
		if err := be.CopyH2D(b.Ptr-1, []byte{0}); err != nil {
			t.Fatal(err)
		}
		if err := b.CheckCanaries("buf"); err == nil || !strings.Contains(err.Error(), "canary before the buffer overwritten at byte offset -1") {
			t.Errorf("n=%d: a write 1 byte before the start: %v", n, err)
		}
	}
}

// TestBackendPool: without the pool a freed buffer goes back to the backend; with it, Free keeps
// the allocation (the backend sees no Free), the next Alloc of its size class takes it (the
// backend sees no Alloc) refilled and re-guarded, and Close hands the pooled allocation back.
func TestBackendPool(t *testing.T) {
	d, be := openMemDevice(t)
	a, err := d.Alloc(5000, 0x11)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if be.Calls("octave_alloc") != 1 || be.Calls("octave_free") != 1 || be.Outstanding() != 0 {
		t.Errorf("without the pool: %d allocs, %d frees, %d outstanding; expected 1, 1, 0",
			be.Calls("octave_alloc"), be.Calls("octave_free"), be.Outstanding())
	}

	d.EnablePool(1 << 20)
	a, err = d.Alloc(5000, 0x11)
	if err != nil {
		t.Fatal(err)
	}
	base := a.base
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if be.Calls("octave_free") != 1 || be.Outstanding() != 1 {
		t.Errorf("a pooled Free: the backend saw %d frees, holds %d allocations; expected the one free before and 1 kept",
			be.Calls("octave_free"), be.Outstanding())
	}
	b, err := d.Alloc(6000, 0x22) // the same 64 KiB class
	if err != nil {
		t.Fatal(err)
	}
	if b.base != base || be.Calls("octave_alloc") != 2 {
		t.Errorf("Alloc after a pooled Free: base %#x after %d backend allocs; expected the pooled %#x and 2", b.base, be.Calls("octave_alloc"), base)
	}
	if got := be.At(b.Ptr, b.Len); strings.Trim(string(got), "\x22") != "" {
		t.Errorf("the reused allocation on the device holds bytes other than the fill 0x22")
	}
	if err := b.CheckCanaries("pooled"); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if be.Calls("octave_free") != 2 || be.Calls("octave_close") != 1 || !be.closed {
		t.Errorf("Close: the backend saw %d frees and %d closes; expected the pooled allocation freed (2 in all) and 1 close",
			be.Calls("octave_free"), be.Calls("octave_close"))
	}
	if err := d.Close(); err != nil || be.Calls("octave_close") != 1 {
		t.Errorf("a second Close: %v, %d backend closes; expected nil and still 1", err, be.Calls("octave_close"))
	}
}

// TestBackendClose: Close releases a buffer still allocated, whose Free then fails with the
// backend's error.
func TestBackendClose(t *testing.T) {
	d, be := openMemDevice(t)
	b, err := d.Alloc(1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if be.Outstanding() != 0 {
		t.Errorf("%d allocations outstanding after Close, expected 0", be.Outstanding())
	}
	wantErrorStatus(t, "Buffer.Free after Close", b.Free(), ErrInvalidArgument, "is closed")
}

// TestBackendSyncError: an asynchronous error the backend reports at Sync comes back from
// Device.Sync, Buffer.CheckCanaries and BufferSet.Verify as the backend's *Error, and the next
// check, with no new error, passes.
func TestBackendSyncError(t *testing.T) {
	d, be := openMemDevice(t)
	fault := &Error{Op: "octave_sync", Status: ErrRuntime, Name: "OCTAVE_ERR_RUNTIME", Message: "an illegal address in decode"}
	s := &BufferSet{Dev: d}
	defer s.Free()
	out := s.Output("out", 4, 0)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what  string
		check func() error
	}{
		{"Device.Sync", d.Sync},
		{"Buffer.CheckCanaries", func() error { return out.CheckCanaries("out") }},
		{"BufferSet.Verify", func() error { return s.Verify("decode") }},
	} {
		be.FailNextSync(fault)
		wantErrorStatus(t, c.what, c.check(), ErrRuntime, "an illegal address in decode")
		if err := c.check(); err != nil {
			t.Errorf("%s after the reported error: %v, expected nil", c.what, err)
		}
	}
}

// TestBackendCopyD2D: Device.CopyD2D copies between device buffers through the backend, and the
// backend's refusal of a copy that leaves an allocation comes back as its *Error.
func TestBackendCopyD2D(t *testing.T) {
	d, be := openMemDevice(t)
	src, err := d.AllocWith([]byte("device bytes"))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := d.Alloc(src.Len, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CopyD2D(dst.Ptr, src.Ptr, uint64(src.Len)); err != nil {
		t.Fatal(err)
	}
	if got, err := dst.Bytes(); err != nil || string(got) != "device bytes" || be.Calls("octave_copy_d2d") != 1 {
		t.Errorf("after CopyD2D: %q, %v, %d backend copies; expected \"device bytes\" from 1 copy", got, err, be.Calls("octave_copy_d2d"))
	}
	wantErrorStatus(t, "CopyD2D past the allocation", d.CopyD2D(dst.Ptr, src.Ptr, 1<<20), ErrInvalidArgument, "not inside an outstanding allocation")
}
