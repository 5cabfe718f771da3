package kernels

// The C ABI as a foreign client sees it (octave_capi.h): the errno-like last error. These call the
// library's functions directly (raw structs and pointers), as a client of the header alone would.

import (
	"errors"
	"runtime"
	"strings"
	"testing"
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
