// Package settingstest gives a test the settings of its test binary (package settings): Get
// returns them and fails the test on a malformed value; LibOrSkip returns the kernel library's
// path and skips the test when none is named. A test reads Octant's environment only through
// it (or through harnesstest, which uses it). It imports only settings and testing, so that the
// tests of every package can use it, the internal tests of kernels included.
package settingstest

import (
	"errors"
	"testing"

	"github.com/octant-kv/octant/internal/settings"
)

// ErrNoLib is the skip of a test that needs a kernel library when settings.LibEnv names none.
var ErrNoLib = errors.New(settings.LibEnv + " not set: set it to a kernel library (make emu: build/liboctave_emu.so; make cuda; make hip) to run this test")

// Get returns the settings of the test binary's environment, failing tb when a value is malformed.
func Get(tb testing.TB) settings.Settings {
	tb.Helper()
	s, err := settings.FromEnv()
	if err != nil {
		tb.Fatalf("the test binary's settings: %v", err)
	}
	return s
}

// LibOrSkip returns the path of the kernel library settings.LibEnv names, skipping tb with
// ErrNoLib when it names none.
func LibOrSkip(tb testing.TB) string {
	tb.Helper()
	lib := Get(tb).Lib
	if lib == "" {
		tb.Skip(ErrNoLib)
	}
	return lib
}
