package worker

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/octant-kv/octant/kernels"
)

// openOps is a Device over a worker running testdata/ops_adapter.py.
func openOps(t *testing.T) (*kernels.Device, *Backend) {
	t.Helper()
	b := openTest(t, func(o *Options) { o.Adapter = filepath.Join("testdata", "ops_adapter.py") })
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
	d, b := openOps(t)
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
	d, b := openOps(t)
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
	d, _ := openOps(t)
	bufs := &kernels.BufferSet{Dev: d}
	defer bufs.Free()
	x := bufs.InOut("x", randomBytes(2*256*2, 3))
	if err := bufs.Err(); err != nil {
		t.Fatal(err)
	}
	must(t, d.Rotate(rotateArgs(x.Ptr, 1, 2)), d.Sync())
	err := bufs.Verify("rotate")
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("x")) {
		t.Errorf("Verify after a write of 16 bytes past x: %v, expected the rear canary of x reported", err)
	}
}
