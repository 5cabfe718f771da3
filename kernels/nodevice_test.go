package kernels

import (
	"errors"
	"strings"
	"testing"

	"github.com/octant-kv/octant/internal/settings"
	"github.com/octant-kv/octant/internal/settings/settingstest"
)

// TestHIPLibraryWithoutDevice loads the HIP build (make hip) on a machine without an AMD GPU, as CI
// is: the library must load, report its ABI and build, and refuse to open a device with a clear
// "no HIP device" error rather than crash. OCTANT_HIP_LIB names the library (make test sets it).
func TestHIPLibraryWithoutDevice(t *testing.T) {
	p := settingstest.Get(t).HIPLib
	if p == "" {
		t.Skipf("%s not set: make test sets it to build/liboctave_hip.so", settings.HIPLibEnv)
	}
	l, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if bi := l.BuildInfo(); !strings.Contains(bi, "HIP") || !strings.Contains(bi, "gfx1100") || !strings.Contains(bi, "gfx942") {
		t.Errorf("build info %q: expected the HIP runtime and targets gfx1100, gfx942", bi)
	}
	d, err := l.OpenDevice(0)
	if err == nil {
		d.Close()
		t.Skip("an AMD GPU is present: this test is for machines without one")
	}
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "no HIP device") {
		t.Fatalf("OpenDevice without an AMD GPU: %v; want an error wrapping ErrNoDevice that says \"no HIP device\"", err)
	}
	t.Logf("as expected: %v", err)
}
