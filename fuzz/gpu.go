package fuzz

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sync"
	"testing"

	"github.com/octant-kv/octant/kernels"
)

// LibEnv names the environment variable that holds the kernel library the GPU targets run
// (build/liboctave_cuda.so, build/liboctave_hip.so, or the CPU emulator build/liboctave_emu.so).
const LibEnv = "OCTANT_LIB"

// ErrNoLib is returned by EnvGPU when $OCTANT_LIB is not set: the GPU targets skip with it.
var ErrNoLib = errors.New(LibEnv + " not set: set it to a kernel library (make emu: build/liboctave_emu.so; make cuda; make hip) to run the GPU targets")

// GPU is an opened kernel library and its device 0: what the GPU targets and `octant replay --lib`
// run on.
type GPU struct {
	Path  string
	Lib   *kernels.Lib
	Dev   *kernels.Device
	Tiers []kernels.TierDesc
	// Observe, when set, receives each passing library result's worst |error|/bound (0 for the
	// bit-exact rotate), so callers can report error distributions (octant conform).
	Observe func(impl string, ratio float64)
}

func (g *GPU) observe(impl string, ratio float64) {
	if g != nil && g.Observe != nil {
		g.Observe(impl, ratio)
	}
}

// gpuPoolBytes is how much freed device memory a GPU keeps for reuse (kernels.Device.EnablePool):
// a case allocates and frees its buffers twice per tier, and the runtime's allocator would cost
// more than the kernels.
const gpuPoolBytes = 1 << 30

// OpenGPU opens the library at path and its device 0 (device buffers pooled) and lists its tiers.
func OpenGPU(path string) (*GPU, error) {
	l, err := kernels.Open(path)
	if err != nil {
		return nil, err
	}
	d, err := l.OpenDevice(0)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("opening device 0 of %s: %w", path, err)
	}
	tiers, err := d.Tiers()
	if err != nil {
		d.Close()
		l.Close()
		return nil, fmt.Errorf("listing the tiers of %s: %w", path, err)
	}
	d.EnablePool(gpuPoolBytes)
	return &GPU{Path: path, Lib: l, Dev: d, Tiers: tiers}, nil
}

// Close releases the device and the library.
func (g *GPU) Close() error {
	return errors.Join(g.Dev.Close(), g.Lib.Close())
}

// String names the library and the device.
func (g *GPU) String() string {
	return fmt.Sprintf("%s on %s (%s; %s)", g.Path, g.Dev.Info.Name, g.Dev.Info.Arch, g.Lib.BuildInfo())
}

var envGPU struct {
	once sync.Once
	g    *GPU
	err  error
}

// EnvGPU opens $OCTANT_LIB once per process (ErrNoLib when unset).
func EnvGPU() (*GPU, error) {
	envGPU.once.Do(func() {
		p := os.Getenv(LibEnv)
		if p == "" {
			envGPU.err = ErrNoLib
			return
		}
		envGPU.g, envGPU.err = OpenGPU(p)
	})
	return envGPU.g, envGPU.err
}

// Ops of the harness. Decode and prefill come in tiers (kernels.OpDecode, kernels.OpPrefill);
// store, rotate and reduce have one implementation per library.
const (
	OpDecode  = kernels.OpDecode
	OpPrefill = kernels.OpPrefill
	OpStore   = 1 << 8
	OpRotate  = 1 << 9
	OpReduce  = 1 << 10
)

// OpName names an op of the harness.
func OpName(op int) string {
	switch op {
	case OpDecode:
		return "decode"
	case OpPrefill:
		return "prefill"
	case OpStore:
		return "store"
	case OpRotate:
		return "rotate"
	case OpReduce:
		return "reduce"
	}
	return fmt.Sprintf("op(%d)", op)
}

// Impl is one implementation of an op the harness runs a check on: the oracle (the base, in the
// style of cryptotest.TestAllImplementations: its float32 model of the op's arithmetic, held to
// the same check as every tier, so a bound too tight for the arithmetic it describes fails without
// any GPU), or one tier of a library.
type Impl struct {
	Name   string // "oracle", or the tier's name ("portable", ...)
	Oracle bool
	Tier   kernels.TierDesc // library tiers only
}

// Impls lists the oracle followed by every implementation of op in g (g may be nil: the oracle
// alone). A library that offers no tier for a tiered op is an error: every architecture must have
// at least the portable tier.
func Impls(g *GPU, op int) ([]Impl, error) {
	out := []Impl{{Name: "oracle", Oracle: true}}
	if g == nil {
		return out, nil
	}
	if op != OpDecode && op != OpPrefill {
		return append(out, Impl{Name: "lib", Tier: kernels.TierDesc{Name: "lib"}}), nil
	}
	n := 0
	for _, t := range g.Tiers {
		if t.Ops&op != 0 {
			out = append(out, Impl{Name: t.Name, Tier: t})
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("device %q (arch %s) lists tiers %+v, none implementing %s: expected at least the portable tier",
			g.Dev.Info.Name, g.Dev.Info.Arch, g.Tiers, OpName(op))
	}
	return out, nil
}

// sameBits compares the results of two runs of one call on im, element by element: a library must
// give the same bits for the same inputs, and a difference is reported as a nondeterministic
// result (a race?) with the first differing element (what(i)) and its value after each run.
func sameBits[E uint8 | uint16](im Impl, op string, first, second []E, what func(i int) string) error {
	digits := bits.Len64(uint64(^E(0))) / 4 // hex digits of an element: 2 for bytes, 4 for fp16/bf16 bits
	for i := range first {
		if first[i] != second[i] {
			return fmt.Errorf("%s: nondeterministic %s (a race?): %s is %#0*x after one run, %#0*x after another", im.Name, op, what(i), digits, first[i], digits, second[i])
		}
	}
	return nil
}

// ForEachTier runs fn once per implementation of op, each in its own subtest named for it: the
// oracle always, then every tier of the library in $OCTANT_LIB (only the oracle, with a log line,
// when it is not set).
func ForEachTier(t *testing.T, op int, fn func(t *testing.T, impl Impl)) {
	t.Helper()
	g, err := EnvGPU()
	if errors.Is(err, ErrNoLib) {
		t.Logf("%v: running the oracle only", err)
		g, err = nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	impls, err := Impls(g, op)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range impls {
		t.Run(im.Name, func(t *testing.T) { fn(t, im) })
	}
}
