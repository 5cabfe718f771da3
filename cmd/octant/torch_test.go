package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTorchSpecErrorsExit2: conform and replay given a worker spec that cannot open (an extension
// without the op schemas asked, an adapter whose package is not installed) exit 2 with the
// open's error, never a verdict.
func TestTorchSpecErrorsExit2(t *testing.T) {
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import torch").CombinedOutput(); err != nil {
		t.Skipf("SKIPPED, NOT TESTED: %s cannot import torch (%v: %s); install python3-torch", python, err, strings.TrimSpace(string(out)))
	}
	abs := func(rel string) string {
		p, err := filepath.Abs(filepath.Join("..", "..", rel))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("OCTANT_PYTHON", python)
	store := abs("corpus/regressions/store/gpu-store-0ee9818235bc.json")
	if _, err := os.Stat(store); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, spec, want string }{
		{"missing op", "torch:" + abs("kernels/worker/py/octant_adapters/vllm_ops.py") + "?ext=" + abs("kernels/worker/testdata/fake_vllm_missing_op.py"),
			"op torch.ops._C.octave_prefill is missing: expected _C::octave_prefill("},
		{"flydsl", "host:" + abs("kernels/worker/testdata/flydsl_adapter.py"), "pip install flydsl"},
	} {
		for _, args := range [][]string{{"conform", "--lib", c.spec, "--out", t.TempDir()}, {"replay", "--lib", c.spec, store}} {
			code, out, errs := runCLI(args...)
			if code != 2 || !strings.Contains(errs, c.want) {
				t.Errorf("%s: octant %s: exit %d, stdout %q, stderr:\n%s\nexpected exit 2 and %q", c.name, args[0], code, out, errs, c.want)
			}
		}
	}
}
