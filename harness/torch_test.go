package harness

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// The torch tests run the worker with Debian's interpreter, which has python3-torch (CPU): make
// torch-test and CI install it. Without it they skip, saying so.
const torchPython = "/usr/bin/python3"

// requireTorch skips the test, loudly, when torchPython cannot import torch.
func requireTorch(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(torchPython, "-c", "import torch").CombinedOutput(); err != nil {
		t.Skipf("SKIPPED, NOT TESTED: %s cannot import torch (%v: %s); install python3-torch (apt-get install python3-torch) to run the torch-mode tests", torchPython, err, strings.TrimSpace(string(out)))
	}
}

// repoPath is the absolute path of a file of the repository (the tests run in harness/).
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// vllmSpec is the torch: spec of vllm_ops.py over the extension ext (a testdata file).
func vllmSpec(t *testing.T, ext, more string) string {
	return "torch:" + repoPath(t, "kernels/worker/py/octant_adapters/vllm_ops.py") + "?ext=" + repoPath(t, "kernels/worker/testdata/"+ext) + more
}

// emuOrSkip skips a test that needs build/liboctave_emu.so (make emu).
func emuOrSkip(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(repoPath(t, "build/liboctave_emu.so")); err != nil {
		t.Skipf("SKIPPED, NOT TESTED: build/liboctave_emu.so is missing (make emu): %v", err)
	}
}

func torchOptions() OpenOptions {
	return OpenOptions{Python: torchPython, Timeout: 60 * time.Second, ArenaBytes: 16 << 20}
}

// TestTorchVLLMOpen: the vLLM-schema adapter over the fake extension declares what vLLM's ops
// offer (the decode tiers asked, prefill's one tier, no reduce or query maps), on the torch
// device asked, and a rotate through it is the emulator's.
func TestTorchVLLMOpen(t *testing.T) {
	requireTorch(t)
	emuOrSkip(t)
	spec := vllmSpec(t, "fake_vllm_ext.py", "&tiers=portable,wmma-model&prefill=wmma-model&device=cpu")
	l, err := OpenWith(spec, torchOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if names := l.TierNames(); len(names) != 2 || names[0] != "portable" || names[1] != "wmma-model" {
		t.Errorf("tiers %v, expected portable and wmma-model", names)
	}
	for _, tr := range l.Tiers {
		want := map[string]string{"portable": "dot4-int8q", "wmma-model": "wmma-f16q"}[string(tr.Name)]
		if tr.DecodeProfile != want {
			t.Errorf("tier %s: decode profile %q, expected %q", tr.Name, tr.DecodeProfile, want)
		}
	}
	if l.Dev.Info.Arch != "cpu" || !strings.Contains(l.Dev.BuildInfo(), "arena of 16777216 bytes on cpu") ||
		!strings.Contains(l.Dev.BuildInfo(), "vLLM Octave ops torch.ops._C from") {
		t.Errorf("device %+v, build %q: expected torch's cpu device and the vLLM ops named", l.Dev.Info, l.Dev.BuildInfo())
	}
	var ke *kernels.Error
	if err := l.Dev.Reduce(kernels.ReduceArgs{}); !errors.As(err, &ke) || ke.Status != kernels.ErrUnsupported {
		t.Errorf("Reduce: %v; expected ErrUnsupported (vLLM's reduce is inside its decode)", err)
	}
}

// rotateOnce runs a rotate of tokens tokens and one head on l, and returns the sync's error.
func rotateOnce(t *testing.T, l *Lib, tokens int) error {
	t.Helper()
	bufs := &kernels.BufferSet{Dev: l.Dev}
	defer bufs.Free()
	x := bufs.InOut("x", make([]byte, tokens*256*2))
	if err := bufs.Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Dev.Rotate(kernels.RotateArgs{X: x.Ptr, StrideToken: 256, StrideHead: 256, Dtype: kernels.F16, HeadSize: 256,
		NumTokens: int32(tokens), NumHds: 1, Signs: [8]uint32{0x80000001, 0, 0, 0, 0, 0, 0, 0xFFFFFFFF}}); err != nil {
		t.Fatalf("Rotate of %d tokens: %v", tokens, err)
	}
	return l.Dev.Sync()
}

// TestTorchSidecar: a sign tensor lives in the worker's sidecar; an op that changes it, or writes
// past it, fails at the next sync, naming the input; an op that leaves it alone passes.
func TestTorchSidecar(t *testing.T) {
	requireTorch(t)
	spec := "torch:" + repoPath(t, "kernels/worker/py/octant_adapters/callables.py") + "?module=" + repoPath(t, "kernels/worker/testdata/signs_callables.py")
	l, err := OpenWith(spec, torchOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := rotateOnce(t, l, 1); err == nil || !strings.Contains(err.Error(), "rotate: input signs (int32[8] in the worker's sidecar) was modified") {
		t.Errorf("an op that changes signs: %v; expected the sync to name input signs", err)
	}
	if err := rotateOnce(t, l, 2); err == nil || !strings.Contains(err.Error(), "rotate: a write past a sign tensor: sidecar byte 96 of 256") {
		t.Errorf("an op that writes past signs: %v; expected the sync to report the sidecar byte it hit", err)
	}
	if err := rotateOnce(t, l, 3); err != nil {
		t.Errorf("an op that leaves signs alone: %v", err)
	}
}

// pythonWrapper writes an executable that runs torchPython with the environment lines env
// prepended, and returns its path: an interpreter as a test needs it (OpenOptions.Python).
func pythonWrapper(t *testing.T, name, env, flags string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+env+"exec "+torchPython+" "+flags+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeOldTorch is a directory holding a module torch of version 1.9.0, for PYTHONPATH.
func fakeOldTorch(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "torch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "torch", "__init__.py"), []byte("__version__ = \"1.9.0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openError is a spec whose open must fail: the interpreter, what the error must say and what it
// must not (an op the extension registers as expected).
type openError struct {
	Name, Spec, Python string
	Want, NotWant      []string
}

// torchOpenErrors lists the specs whose open must fail, with the interpreter to run and what
// the error must say: no torch, torch too old, a missing op, a wrong schema, an adapter whose
// package is not installed.
func torchOpenErrors(t *testing.T) []openError {
	noTorch := pythonWrapper(t, "python-no-site", "", "-S") // no site-packages: no torch
	old := pythonWrapper(t, "python-old-torch", "PYTHONPATH="+fakeOldTorch(t)+" ", "")
	emu := "&tiers=portable,wmma-model&prefill=wmma-model"
	return []openError{
		{"no torch", vllmSpec(t, "fake_vllm_ext.py", emu), noTorch,
			[]string{"torch mode needs the Python module torch", "No module named 'torch'", "pip install torch", "OCTANT_PYTHON"}, nil},
		{"torch too old", vllmSpec(t, "fake_vllm_ext.py", emu), old,
			[]string{"torch mode needs torch 1.12 or later", "imports torch 1.9.0 from", "pip install 'torch>=1.12'"}, nil},
		{"missing op", vllmSpec(t, "fake_vllm_missing_op.py", ""), torchPython,
			[]string{"does not register vLLM's Octave ops as expected", "op torch.ops._C.octave_prefill is missing: expected _C::octave_prefill(Tensor! out, Tensor q, Tensor k, Tensor v, Tensor cache, Tensor block_table, Tensor cu_seqlens_q, Tensor seq_lens, int max_query_len, float sm_scale, int fmt) -> ()"},
			[]string{"octave_decode", "octave_rotate", "octave_cache_store"}},
		{"wrong schema", vllmSpec(t, "fake_vllm_wrong_schema.py", ""), torchPython,
			[]string{"op torch.ops._C.octave_decode has the wrong schema: expected _C::octave_decode(", "int query_group, bool use_wmma) -> (), found _C::octave_decode(",
				"int query_group) -> ()", "op torch.ops._C.octave_rotate has the wrong schema: expected _C::octave_rotate(Tensor! x, Tensor signs, bool k_layout, bool inverse) -> (), found _C::octave_rotate(Tensor x, "},
			[]string{"octave_prefill", "octave_cache_store", "is missing"}},
		{"missing ext", vllmSpec(t, "no_such_ext.so", ""), torchPython,
			[]string{"no_such_ext.so: no such file; expected the vLLM extension that registers the Octave ops"}, nil},
		{"flydsl", "host:" + repoPath(t, "kernels/worker/testdata/flydsl_adapter.py"), torchPython,
			[]string{"No module named 'flydsl'", "the Python module 'flydsl' is not installed for", "pip install flydsl"}, nil},
		{"bad device", vllmSpec(t, "fake_vllm_ext.py", "&device=gpu0"), torchPython,
			[]string{`device="gpu0": expected cpu, cuda or cuda:N`}, nil},
	}
}

// TestTorchOpenErrors: each failure to open a torch spec is an error saying what is missing or
// wrong and how to get it.
func TestTorchOpenErrors(t *testing.T) {
	requireTorch(t)
	emuOrSkip(t)
	for _, c := range torchOpenErrors(t) {
		t.Run(c.Name, func(t *testing.T) {
			o := torchOptions()
			o.Python = c.Python
			l, err := OpenWith(c.Spec, o)
			if err == nil {
				l.Close()
				t.Fatalf("OpenWith(%q) opened; expected an error", c.Spec)
			}
			msg, _, _ := strings.Cut(err.Error(), "Traceback")
			for _, w := range c.Want {
				if !strings.Contains(msg, w) {
					t.Errorf("OpenWith(%q): %v\nexpected it to say %q", c.Spec, err, w)
				}
			}
			for _, w := range c.NotWant {
				if strings.Contains(msg, w) {
					t.Errorf("OpenWith(%q): %v\nexpected it not to name %q (an op it registers as expected)", c.Spec, err, w)
				}
			}
		})
	}
}

// TestCallablesExample: the worked example of docs/adapters.md, "Plain Python callables", rotates
// fp16 rows bit for bit as the oracle does, forward and inverse, in 64-dim blocks and over 256.
func TestCallablesExample(t *testing.T) {
	requireTorch(t)
	spec := "torch:" + repoPath(t, "kernels/worker/py/octant_adapters/callables.py") + "?module=" + repoPath(t, "kernels/worker/testdata/rotate_callables.py")
	l, err := OpenWith(spec, torchOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const rows = 6 // 3 tokens x 2 heads, contiguous
	rng := rand.New(rand.NewPCG(7, 39))
	in := make([]uint16, rows*256)
	for i := range in {
		in[i] = oracle.F32ToF16(float32(rng.NormFloat64() * 3))
	}
	signs := make(oracle.Signs, 256)
	for i := range signs {
		signs[i] = rng.IntN(2) == 1
	}
	for _, c := range []struct{ kLayout, inverse int32 }{{1, 0}, {0, 0}, {1, 1}, {0, 1}} {
		bufs := &kernels.BufferSet{Dev: l.Dev}
		x := bufs.InOut("x", kernels.Uint16Bytes(in))
		if err := bufs.Err(); err != nil {
			t.Fatal(err)
		}
		err := l.Dev.Rotate(kernels.RotateArgs{X: x.Ptr, StrideToken: 512, StrideHead: 256, Dtype: kernels.F16, HeadSize: 256,
			NumTokens: 3, NumHds: 2, KLayout: c.kLayout, Inverse: c.inverse, Signs: kernels.SignWords(signs.Words())})
		if err == nil {
			err = l.Dev.Sync()
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := x.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		got := kernels.BytesUint16(b)
		block := map[int32]int{1: 64, 0: 256}[c.kLayout]
		bad := 0
		for r := 0; r < rows; r++ {
			row := make([]float32, 256)
			for i := range row {
				row[i] = oracle.F16ToF32(in[r*256+i])
			}
			want := oracle.Rotate(row, signs, block)
			if c.inverse != 0 {
				want = oracle.Unrotate(row, signs, block)
			}
			for i, w := range want {
				if g := got[r*256+i]; g != oracle.F32ToF16(w) && bad < 5 {
					bad++
					t.Errorf("k_layout %d, inverse %d: row %d, dim %d: %#04x, expected %#04x", c.kLayout, c.inverse, r, i, g, oracle.F32ToF16(w))
				}
			}
		}
		bufs.Free()
	}
}
