package kernels

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/internal/settings"
	"github.com/octant-kv/octant/internal/settings/settingstest"
)

// openTestLib opens the library named by OCTANT_LIB, or skips.
func openTestLib(t *testing.T) *Lib {
	t.Helper()
	l, err := Open(settingstest.LibOrSkip(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("/nonexistent/liboctave.so"); err == nil || !strings.Contains(err.Error(), "/nonexistent/liboctave.so") {
		t.Errorf("missing file: %v", err)
	}
	notLib := filepath.Join(t.TempDir(), "liboctave_fake.so")
	os.WriteFile(notLib, []byte("not an ELF file"), 0o644)
	if _, err := Open(notLib); err == nil || !strings.Contains(err.Error(), "loading") {
		t.Errorf("not a library: %v", err)
	}
	// A real shared library without the Octave ABI.
	for _, p := range []string{"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "does not export octave_abi_version") {
			t.Errorf("libm: %v", err)
		}
		break
	}
}

func TestErrorIsNoDevice(t *testing.T) {
	e := &Error{Op: "octave_open", Status: ErrNoDeviceStatus, Name: "OCTAVE_ERR_NO_DEVICE", Message: "no HIP device"}
	if !errors.Is(e, ErrNoDevice) || !strings.Contains(e.Error(), "no HIP device") {
		t.Errorf("%v", e)
	}
}

// A name without a slash is a file in the working directory, as for every other path, not a name
// for dlopen's search path; when it is missing, the error names the absolute path tried.
func TestOpenBareName(t *testing.T) {
	lib := settingstest.Get(t).Lib
	if lib != "" {
		abs, _ := filepath.Abs(lib)
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("%s=%s: %v (go test runs in the package's directory: give an absolute path)", settings.LibEnv, lib, err)
		}
		lib = abs
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if _, err := Open("liboctave_none.so"); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "liboctave_none.so")) ||
		!strings.Contains(err.Error(), "working directory") {
		t.Errorf("missing bare name: %v; expected the absolute path tried and the working directory", err)
	}
	os.WriteFile("liboctave_fake.so", []byte("not an ELF file"), 0o644)
	if _, err := Open("liboctave_fake.so"); err == nil || !strings.Contains(err.Error(), "loading "+filepath.Join(dir, "liboctave_fake.so")) {
		t.Errorf("bare name of a file here: %v; expected dlopen of its absolute path", err)
	}
	if lib == "" {
		t.Skipf("%s not set: the bare name of a real library is not tried", settings.LibEnv)
	}
	t.Chdir(filepath.Dir(lib))
	l, err := Open(filepath.Base(lib))
	if err != nil {
		t.Fatalf("Open(%q) in %s: %v", filepath.Base(lib), filepath.Dir(lib), err)
	}
	defer l.Close()
	if l.Path != lib {
		t.Errorf("Path %q, want %q", l.Path, lib)
	}
}

// A library of another ABI version is refused before any other symbol is looked up, with both
// versions, what changed and what to do: an ABI 2 library lacks octave_timer_start, and
// "does not export" would hide the real cause.
func TestABIMismatchError(t *testing.T) {
	for _, c := range []struct {
		got  int32
		want []string
	}{
		{ABIVersion - 1, []string{"has ABI version 2, this Octant expects 3", "older library", "octave_timer_start", "rebuild the library"}},
		{ABIVersion + 1, []string{"has ABI version 4, this Octant expects 3", "newer library", "rebuild the library"}},
	} {
		msg := abiMismatch("/x/liboctave_emu.so", c.got).Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("ABI %d: %q does not say %q", c.got, msg, w)
			}
		}
	}
}

// TestBindSelftestMissing: a test entry point the library does not export is an error naming it
// and the library, not a panic.
func TestBindSelftestMissing(t *testing.T) {
	l := openTestLib(t)
	var fn func() int32
	err := l.BindSelftest("octave_no_such_selftest", &fn)
	if err == nil || !strings.Contains(err.Error(), "octave_no_such_selftest") || !strings.Contains(err.Error(), l.Path) {
		t.Errorf("binding a missing entry point: %v", err)
	}
}
