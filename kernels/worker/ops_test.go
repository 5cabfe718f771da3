package worker

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/octant-kv/octant/kernels"
)

// openOps is a Device over a worker running testdata/ops_adapter.py, with a timeout of 30 s (0) or
// timeout.
func openOps(t *testing.T, timeout time.Duration) (*kernels.Device, *Backend) {
	t.Helper()
	b := openTest(t, func(o *Options) {
		o.Adapter = filepath.Join("testdata", "ops_adapter.py")
		if timeout > 0 {
			o.Timeout = timeout
		}
	})
	d, err := kernels.NewDevice(b)
	if err != nil {
		t.Fatal(err)
	}
	return d, b
}

// rotateArgs rotates rows×heads rows of fp16 at x, contiguous.
func rotateArgs(x uintptr, rows, heads int) kernels.RotateArgs {
	return kernels.RotateArgs{X: x, StrideToken: int64(heads * 256), StrideHead: 256, Dtype: kernels.F16, HeadSize: 256,
		NumTokens: int32(rows), NumHds: int32(heads)}
}

// TestOpRuns: the adapter's rotate runs on the bytes of the buffer the struct points to (through
// the real address the worker gives it), and the declaration reaches Info, BuildInfo and Tiers.
func TestOpRuns(t *testing.T) {
	d, b := openOps(t, 0)
	if d.Info.Arch != "test" || d.Info.Name != "ops test adapter" {
		t.Errorf("Info %+v: expected the declaration's name and arch", d.Info)
	}
	if !bytes.Contains([]byte(b.BuildInfo()), []byte("ops_adapter.py")) {
		t.Errorf("BuildInfo %q: expected the declaration's build_info", b.BuildInfo())
	}
	tiers, err := d.Tiers()
	if err != nil || len(tiers) != 2 || tiers[0].Name != "portable" || tiers[1].Tier != kernels.TierWMMA || tiers[1].DecodeProfile != "wmma-f16q" {
		t.Errorf("Tiers %+v, %v: expected portable and wmma (id 1, wmma-f16q), in the declaration's order", tiers, err)
	}
	in := randomBytes(3*256*2, 7)
	x, err := d.AllocWith(in)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	must(t, d.Rotate(rotateArgs(x.Ptr, 3, 1)), d.Sync(), x.CheckCanaries("x"))
	got, err := x.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != ^in[i] {
			t.Fatalf("x byte %d after the adapter's rotate: %#02x, expected %#02x (inverted)", i, got[i], ^in[i])
		}
	}
}

// TestOpRefusals: what the bridge and the adapter refuse comes back as a *kernels.Error with the
// status and words that say what happened.
func TestOpRefusals(t *testing.T) {
	d, b := openOps(t, 0)
	x, err := d.Alloc(2*256*2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	gen := b.Generation()
	outside := addr(gen, GuardBytes+testArena-256) // 256 bytes before the arena's end

	wantError(t, "x past the arena", d.Rotate(rotateArgs(outside, 1, 1)), kernels.ErrInvalidArgument,
		"rotate: x = ", "the counts and strides imply are not inside the arena")
	wantError(t, "x of another generation", d.Rotate(rotateArgs(addr(gen+1, GuardBytes), 1, 1)), kernels.ErrInvalidArgument,
		"rotate: x = ", "generation 2", "this worker is generation 1")
	wantError(t, "x NULL", d.Rotate(rotateArgs(0, 1, 1)), kernels.ErrInvalidArgument, "rotate: x is NULL")
	a := rotateArgs(x.Ptr, 1, 1)
	a.StrideHead = -1
	wantError(t, "a negative stride", d.Rotate(a), kernels.ErrStride, "x strides (token 256, head -1) must be >= 0")
	a = rotateArgs(x.Ptr, 1, 1)
	a.Dtype = kernels.BF16
	wantError(t, "an undeclared dtype", d.Rotate(a), kernels.ErrDtype, "dtype 2 is not supported: expected 1 (fp16)")

	wantError(t, "the adapter raises", d.Rotate(rotateArgs(x.Ptr, 1, 3)), kernels.ErrRuntime,
		"rotate: the adapter raised ValueError: rotate refuses three heads (marker 5Z)", "Traceback", "ops_adapter.py")
	wantError(t, "an op the adapter does not implement", d.Reduce(kernels.ReduceArgs{}), kernels.ErrUnsupported,
		"the adapter does not implement octave_reduce", "rotate, decode")
	wantError(t, "an op the adapter does not implement", d.QueryMaps(kernels.QueryMapsArgs{}), kernels.ErrUnsupported, "octave_query_maps")

	dec := kernels.DecodeArgs{Cache: x.Ptr, Fmt: 4, Dtype: kernels.F16, HeadSize: 256, NumQHeads: 1, NumKVHeads: 1, NumBlocks: 1, BlockSize: 1,
		NumSplits: 1, QueryGroup: 1, SMScale: 0.0625}
	must(t, d.Decode(dec))
	dec.Tier = kernels.TierWMMA
	wantError(t, "a silent fallback", d.Decode(dec), kernels.ErrUnsupportedTier, "decode: asked wmma, the adapter reports portable ran (silent fallback)")
	dec.Tier = kernels.TierMMA
	wantError(t, "an undeclared tier", d.Decode(dec), kernels.ErrUnsupportedTier, "tier 3 is not available", "portable (0), wmma (1)")
	dec.Tier, dec.Fmt = kernels.TierPortable, 3
	wantError(t, "an undeclared format", d.Decode(dec), kernels.ErrFormat, "format id 3", "declares formats [4]")
	must(t, d.Sync())
}

// TestOpCanaries: an adapter that writes past its output is caught by the BufferSet's canaries,
// as a library would be.
func TestOpCanaries(t *testing.T) {
	d, _ := openOps(t, 0)
	bufs := &kernels.BufferSet{Dev: d}
	defer bufs.Free()
	x := bufs.InOut("x", randomBytes(2*256*2, 3))
	if err := bufs.Err(); err != nil {
		t.Fatal(err)
	}
	must(t, d.Rotate(rotateArgs(x.Ptr, 1, 2)), d.Sync())
	err := bufs.Verify("rotate")
	if want := "x: canary after the buffer overwritten at byte offset 1024"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Verify after a write of 16 bytes past x: %v, expected it to say %q", err, want)
	}
}

// TestOpDeath: an adapter that crashes or hangs inside an op fails that op with the worker's
// death (its signal, the op, its stderr) or hang, and the next op runs on a new worker.
func TestOpDeath(t *testing.T) {
	d, b := openOps(t, 2*time.Second)
	x, err := d.Alloc(5*256*2, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, "an op that crashes", d.Rotate(rotateArgs(x.Ptr, 1, 4)), kernels.ErrRuntime,
		"worker died (SIGSEGV) during octave_rotate", "rotate crashes on four heads (marker 8K)")
	x, err = d.Alloc(5*256*2, 0)
	if err != nil {
		t.Fatal(err)
	}
	must(t, d.Rotate(rotateArgs(x.Ptr, 1, 1)), d.Sync())
	wantError(t, "an op that hangs", d.Rotate(rotateArgs(x.Ptr, 1, 5)), kernels.ErrRuntime,
		"worker hung: no reply to octave_rotate in 2s; killed")
	if g := b.Generation(); g != 3 {
		t.Errorf("generation %d after a death and a hang, expected 3", g)
	}
	x, err = d.Alloc(5*256*2, 0)
	if err != nil {
		t.Fatal(err)
	}
	must(t, d.Rotate(rotateArgs(x.Ptr, 1, 1)), d.Sync(), x.Free())
}

// TestRestartDeclaration: a worker started again must declare what the first declared; one
// that does not fails the call that needed it, saying both.
func TestRestartDeclaration(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	adapter := filepath.Join(dir, "counting_adapter.py")
	os.WriteFile(adapter, []byte(`import os
DECLARATION = {"ops": ["rotate"]}

def setup(options):
    p = options["count"]
    n = int(open(p).read()) + 1 if os.path.exists(p) else 1
    open(p, "w").write(str(n))
    return {"ops": ["rotate"], "build_info": "start %d" % n}

def rotate(a, mem):
    pass
`), 0o600)
	b := openTest(t, func(o *Options) { o.Adapter, o.AdapterOptions = adapter, map[string]string{"count": count} })
	if err := syscall.Kill(b.pid(t), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wantError(t, "Sync after SIGKILL", b.Sync(), kernels.ErrRuntime, "worker died (SIGKILL)")
	wantError(t, "Sync on a worker that declares otherwise", b.Sync(), kernels.ErrRuntime,
		"the restarted worker (generation 2) declares", `"build_info": "start 2"`, `expected the declaration of the first`, `"build_info": "start 1"`)
}
