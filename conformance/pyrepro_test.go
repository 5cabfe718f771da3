package conformance

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
)

// defectSpec is the spec of kernels/worker/testdata/defect_adapter.py over the CPU emulator with
// the given defect, or a skip when the emulator library (make emu) or python3 is missing.
func defectSpec(t *testing.T, defect string) string {
	t.Helper()
	root, err := cases.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	emu := filepath.Join(root, "build", "liboctave_emu.so")
	if _, err := os.Stat(emu); err != nil {
		t.Skipf("no emulator library %s (make emu): %v", emu, err)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("no python3 on PATH: %v", err)
	}
	return "host:" + filepath.Join(root, "kernels", "worker", "testdata", "defect_adapter.py") + "?lib=" + emu + "&defect=" + defect
}

// openDefect opens the defect adapter's worker with a small arena.
func openDefect(t *testing.T, defect string) *harness.Lib {
	t.Helper()
	l, err := harness.OpenWith(defectSpec(t, defect), harness.OpenOptions{ArenaBytes: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// runScript runs a Python reproducer with python3 and returns its exit status and output.
func runScript(t *testing.T, script string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command("python3", append([]string{script}, args...)...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("running %s: %v\n%s", script, err, out)
	return -1, ""
}

// smallDecodeSeed is a seeded decode case of the battery small enough to judge in a second
// through the worker on the emulator: the first seed whose case has at most 2048 tokens of context.
func smallDecodeSeed(t *testing.T) uint64 {
	t.Helper()
	for seed := uint64(0); seed < 200; seed++ {
		r, err := cases.SeededRecipe(arch.Decode, seed)
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.Call()
		if err != nil {
			continue
		}
		if d := c.(*harness.DecodeCall); d.In.KVMax() <= 2048 && d.In.NumQ() <= 8 {
			return seed
		}
	}
	t.Fatal("no seeded decode case of at most 2048 tokens and 8 queries in seeds 0..199")
	return 0
}

// TestPythonReproducer plants a defect in decode through an adapter (defect_adapter.py over the
// emulator), lets the conformance battery judge a case to failure, and runs the Python
// reproducer it writes beside the JSON one: it must exit 1 naming what the judge named (the
// perturbed element; the adapter's exception), and exit 0 against the clean adapter (--spec).
func TestPythonReproducer(t *testing.T) {
	seed := smallDecodeSeed(t)
	clean := defectSpec(t, "none")
	for _, tc := range []struct {
		defect string
		want   string // in the judge's message and the script's output
	}{
		{"perturb", "row 0 head 0 dim 5 = 100"},
		{"raise", "ValueError: planted defect (marker 3Q)"},
	} {
		t.Run(tc.defect, func(t *testing.T) {
			l := openDefect(t, tc.defect)
			dir := t.TempDir()
			u := Unit{Op: arch.Decode, Tier: arch.Portable}
			r := u.Run(l, seed, Options{OutDir: dir})
			if r.Status != harness.Fail {
				t.Fatalf("%s with defect %s: %s, expected Fail (%s)", r.Path, tc.defect, r.Status, r.Message)
			}
			if !strings.Contains(r.Message, tc.want) {
				t.Fatalf("the judge's message does not name %q:\n%s", tc.want, r.Message)
			}
			script, ok := strings.CutPrefix(r.Python, "python3 ")
			if !ok {
				t.Fatalf("case result's Python = %q, expected the command python3 PATH.py", r.Python)
			}
			for _, f := range []string{script, strings.TrimSuffix(script, ".py") + ".json", strings.TrimSuffix(script, ".py") + ".pydata.gz"} {
				if _, err := os.Stat(f); err != nil {
					t.Fatalf("expected %s beside the reproducer: %v", f, err)
				}
			}
			code, out := runScript(t, script)
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Fatalf("python3 %s: exit %d, expected 1 with output naming %q:\n%s", script, code, tc.want, out)
			}
			t.Logf("python3 %s:\n%s", script, out)
			code, out = runScript(t, script, "--spec", clean)
			if code != 0 || !strings.Contains(out, "does not reproduce") {
				t.Fatalf("python3 %s --spec %s: exit %d, expected 0 (the clean adapter passes):\n%s", script, clean, code, out)
			}
		})
	}
}

// TestPythonReproducerEveryOp: for a small seeded case of every op on the clean adapter, the script
// written from its recording passes (exit 0: the script's rules accept what the judge passed),
// and with the recorded expectation moved off the output by one element it fails (exit 1) naming
// that element's place: the script's checks of every op's kind of expectation can fail.
func TestPythonReproducerEveryOp(t *testing.T) {
	l := openDefect(t, "none")
	for _, op := range []arch.Op{arch.Store, arch.Rotate, arch.Reduce, arch.Prefill, arch.Decode} {
		t.Run(string(op), func(t *testing.T) {
			seed := uint64(0)
			if op == arch.Decode {
				seed = smallDecodeSeed(t)
			}
			r, err := cases.SeededRecipe(op, seed)
			if err != nil {
				t.Fatal(err)
			}
			call, err := r.Call()
			if err != nil {
				t.Fatal(err)
			}
			rec, err := harness.Record(l, call, harness.PortableImpl)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Verdict.Failed() {
				t.Fatalf("the clean adapter fails %s seed %d: %v", op, seed, rec.Verdict.Err)
			}
			dir := t.TempDir()
			script, err := cases.WritePython(filepath.Join(dir, "clean.json"), rec, l.Path, cases.PythonSourcesDir(), "none")
			if err != nil {
				t.Fatal(err)
			}
			if code, out := runScript(t, script, "-q"); code != 0 {
				t.Fatalf("%s: exit %d, expected 0 (the judge passed the call):\n%s", script, code, out)
			}
			e := &rec.Expect
			want := ""
			switch e.Kind {
			case harness.ExpectBound:
				k := 0
				for k < len(e.Bound) && (e.Judged != nil && !e.Judged[k] || math.IsInf(e.Bound[k], 0) || slices.Contains(e.ZeroRows, k/e.RowElems)) {
					k++
				}
				e.Model[k] += 4*e.Bound[k] + 1
				want = fmt.Sprintf("row %d head %d dim %d", k/e.RowElems, k/256%e.Heads, k%256)
			case harness.ExpectBits:
				e.Want[0] ^= 1
				want = "row 0 head 0 dim 0"
			case harness.ExpectSlots:
				e.WantCache[e.Slots[0].Offset] ^= 1
				want = e.Slots[0].Name + ": stored slot differs from the oracle's"
			}
			script, err = cases.WritePython(filepath.Join(dir, "moved.json"), rec, l.Path, cases.PythonSourcesDir(), "moved")
			if err != nil {
				t.Fatal(err)
			}
			if code, out := runScript(t, script, "-q"); code != 1 || !strings.Contains(out, want) {
				t.Fatalf("%s with the expectation moved: exit %d, expected 1 naming %q:\n%s", script, code, want, out)
			}
		})
	}
}
