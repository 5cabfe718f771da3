package conformance_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/conformance"
	"github.com/octant-kv/octant/harness"
)

// torchPython is the interpreter of the torch-mode cases: Debian's, whose python3-torch CI installs.
const torchPython = "/usr/bin/python3"

// isolationLib opens the emulator library through testdata/faulty_adapter.py with one planted
// fault in a worker of the given mode (host, or torch on the CPU), or skips when the emulator
// library (make emu) or the interpreter (python3; torchPython with torch) is missing.
func isolationLib(t *testing.T, mode, fault string, timeout time.Duration) *harness.Lib {
	t.Helper()
	emu, err := filepath.Abs("../build/liboctave_emu.so")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(emu); err != nil {
		t.Skipf("no emulator library (make emu): %v", err)
	}
	python, device := "python3", ""
	if mode == "torch" {
		python, device = torchPython, "&device=cpu"
		if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
			t.Skipf("torch mode needs %s with torch (apt-get install python3-torch): %v", python, err)
		}
	} else if _, err := exec.LookPath(python); err != nil {
		t.Skipf("the worker needs python3: %v", err)
	}
	adapter, err := filepath.Abs("testdata/faulty_adapter.py")
	if err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "fired")
	spec := mode + ":" + adapter + "?lib=" + emu + "&fault=" + fault + "&mark=" + mark + device
	l, err := harness.OpenWith(spec, harness.OpenOptions{Python: python, Timeout: timeout, ArenaBytes: 1 << 30})
	if err != nil {
		t.Fatalf("opening %s: %v", spec, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestImplementationFaults: whatever an implementation run through an adapter does wrong inside a
// call (dies, hangs, raises, writes past its output or its arena, changes an input, reports
// another tier than the one asked, gives other bits on a second run), the conformance unit's
// case fails naming it, writes a reproducer whose replay command names the adapter's spec, and
// the next case on the same library is judged as usual (the worker restarted where it had to).
// An implementation that only prints passes. The faults that need no host view of the arena run
// in torch mode too (on the CPU), where the arena is a torch tensor: canaries and guards see a
// write past a buffer there as well.
func TestImplementationFaults(t *testing.T) {
	for _, c := range []struct {
		fault string
		want  string // in the failing case's message; "" for a fault that must not fail
		torch bool   // also in torch mode
	}{
		{"segv", "worker died (SIGSEGV)", true},
		{"exit", "worker died", false},
		{"hang", "worker hung", false},
		{"raise", "the adapter raised ValueError: planted", true},
		{"past-out", "canary", true},
		{"past-arena", "a write past the arena", true},
		{"modify-input", "input query", false},
		{"wrong-tier", "silent fallback", true},
		{"nondeterministic", "nondeterministic decode", false},
		{"noisy", "", true},
	} {
		for _, mode := range []string{"host", "torch"} {
			if mode == "torch" && !c.torch {
				continue
			}
			c, mode := c, mode
			t.Run(mode+"/"+c.fault, func(t *testing.T) {
				t.Parallel()
				// A hang is declared after the worker's timeout: long enough for any case's decode
				// on the emulator to end, short for the test.
				timeout := 2 * time.Minute
				if c.fault == "hang" {
					timeout = 20 * time.Second
				}
				l := isolationLib(t, mode, c.fault, timeout)
				dir := t.TempDir()
				u := conformance.Unit{Op: arch.Decode, Tier: arch.Portable}
				first := u.Run(l, 0, conformance.Options{OutDir: dir})
				if c.want == "" {
					if first.Status != harness.Pass {
						t.Fatalf("%s: %v %s; expected a pass (printing is not a fault)", first.Path, first.Status, first.Message)
					}
				} else {
					if first.Status != harness.Fail || !strings.Contains(first.Message, c.want) {
						t.Fatalf("%s: %v %q; expected a Fail naming %q", first.Path, first.Status, first.Message, c.want)
					}
					if !strings.Contains(first.Replay, "octant replay --lib '"+mode+":") || !strings.Contains(first.Replay, "regressions") {
						t.Errorf("%s: replay command %q; expected octant replay --lib '<spec>' and a reproducer under regressions/", first.Path, first.Replay)
					}
					files, _ := filepath.Glob(filepath.Join(dir, "regressions", "*"))
					if len(files) == 0 {
						t.Errorf("%s: no reproducer written under %s/regressions", first.Path, dir)
					}
				}
				if c.fault == "nondeterministic" {
					return // it stays nondeterministic: there is no clean next case
				}
				next := u.Run(l, 1, conformance.Options{OutDir: dir})
				if next.Status != harness.Pass {
					t.Errorf("the case after the fault, %s: %v %s; expected a pass", next.Path, next.Status, next.Message)
				}
			})
		}
	}
}
