package harness

import (
	"maps"
	"strings"
	"testing"
	"time"
)

// TestWorkerSpec: host: and torch: specs give the worker's mode, the adapter and its options; any
// other string is a library path; a malformed spec is an error saying what was expected.
func TestWorkerSpec(t *testing.T) {
	for _, c := range []struct {
		spec, mode, adapter string
		opts                map[string]string
		worker              bool
	}{
		{"/abs/liboctave_emu.so", "", "", nil, false},
		{"build/liboctave_emu.so", "", "", nil, false},
		{"host:/a/capi.py?lib=/b/liboctave_emu.so", "host", "/a/capi.py", map[string]string{"lib": "/b/liboctave_emu.so"}, true},
		{"torch:adapter.py", "torch", "adapter.py", map[string]string{}, true},
		{"host:x.py?lib=a%26b&device=1", "host", "x.py", map[string]string{"lib": "a&b", "device": "1"}, true},
	} {
		mode, adapter, opts, ok, err := workerSpec(c.spec)
		if err != nil || ok != c.worker || mode != c.mode || adapter != c.adapter || !maps.Equal(opts, c.opts) {
			t.Errorf("workerSpec(%q) = %q, %q, %v, %v, %v; expected %q, %q, %v, %v", c.spec, mode, adapter, opts, ok, err, c.mode, c.adapter, c.opts, c.worker)
		}
	}
	for _, c := range []struct{ spec, want string }{
		{"host:", "expected host:ADAPTER.py[?k=v&...]"},
		{"host:?lib=x", "expected host:ADAPTER.py[?k=v&...]"},
		{"host:a.py?lib=1&lib=2", `option "lib" given 2 times, expected once`},
		{"torch:a.py?x=%zz", "expected k=v pairs joined by &"},
	} {
		if _, err := OpenWith(c.spec, OpenOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenWith(%q): %v; expected an error saying %q", c.spec, err, c.want)
		}
	}
}

// TestOpenWorker: a host: spec opens a worker-backed Lib: its path is the spec verbatim, its tiers
// and device are the adapter's declaration, and Close ends the worker.
func TestOpenWorker(t *testing.T) {
	spec := "host:../kernels/worker/testdata/ops_adapter.py"
	l, err := OpenWith(spec, OpenOptions{Timeout: 30 * time.Second, ArenaBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != spec || l.Worker == nil || l.Lib != nil {
		t.Errorf("Lib %+v: expected Path %q, a Worker and no C library", l, spec)
	}
	if names := l.TierNames(); len(names) != 2 || names[0] != "portable" || names[1] != "wmma" {
		t.Errorf("tiers %v, expected the adapter's portable and wmma", names)
	}
	if s := l.String(); !strings.Contains(s, spec+" on ops test adapter (test; octant worker") || !strings.Contains(s, "ops_adapter.py") {
		t.Errorf("String %q: expected the spec, the declared device and the worker's build", s)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
