package kernels_test

// The shared test environment of the kernel tests: one library and one device per test binary,
// the tiers the device offers, the numeric profile each tier declares, and how a failing case is
// named and reproduced.
//
// Every test here needs a kernel library: without OCTANT_LIB it skips. With it, e.g.
//
//	OCTANT_LIB=$PWD/build/liboctave_emu.so CGO_ENABLED=0 go test -short ./kernels/   (CPU emulator)
//	OCTANT_LIB=/path/liboctave_cuda.so ./kernels.test -test.count=1                   (GPU)
//
// -short selects the small grids (the CPU emulator in CI); without it the full grids run (GPU).

import (
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

var seedFlag = flag.Uint64("octant.seed", 1, "seed of the kernel test grids and inputs (every case derives its own seed from it and its path)")

// testEnv is the library and device shared by every test of the binary.
type testEnv struct {
	lib   *kernels.Lib
	dev   *kernels.Device
	tiers []kernels.TierDesc
	err   error
}

var (
	envOnce sync.Once
	env     testEnv
)

// TestMain runs the tests and closes the shared device.
func TestMain(m *testing.M) {
	code := m.Run()
	if env.dev != nil {
		env.dev.Close()
	}
	os.Exit(code)
}

// device returns the shared device, opening the library named by OCTANT_LIB on first use, or skips
// the test when OCTANT_LIB is not set.
func device(t testing.TB) *kernels.Device {
	t.Helper()
	p := os.Getenv("OCTANT_LIB")
	if p == "" {
		t.Skip("OCTANT_LIB not set: set it to a kernel library (make emu: build/liboctave_emu.so; make cuda; make hip) to run this test")
	}
	envOnce.Do(func() {
		l, err := kernels.Open(p)
		if err != nil {
			env.err = err
			return
		}
		d, err := l.OpenDevice(0)
		if err != nil {
			env.err = fmt.Errorf("opening device 0 of %s: %w", p, err)
			return
		}
		tiers, err := d.Tiers()
		if err != nil {
			d.Close()
			env.err = fmt.Errorf("listing the tiers of %s: %w", p, err)
			return
		}
		env.lib, env.dev, env.tiers = l, d, tiers
	})
	if env.err != nil {
		t.Fatalf("OCTANT_LIB=%s: %v", p, env.err)
	}
	return env.dev
}

// forEachTier runs fn once per tier of the device that implements op (kernels.OpDecode,
// kernels.OpPrefill), as a subtest named after the tier, in the spirit of Go's
// crypto/internal/cryptotest.TestAllImplementations: the same test body, every implementation,
// judged against one reference (the oracle). A device with no tier for op fails: the portable
// tier is required on every architecture (KERNELS.md §6).
func forEachTier(t *testing.T, op int, fn func(t *testing.T, tier kernels.TierDesc)) {
	t.Helper()
	d := device(t)
	n := 0
	for _, tier := range env.tiers {
		if tier.Ops&op == 0 {
			continue
		}
		n++
		t.Run(tier.Name, func(t *testing.T) { fn(t, tier) })
	}
	if n == 0 {
		t.Fatalf("device %q (arch %s) lists tiers %+v, none implementing op %s: expected at least the portable tier", d.Info.Name, d.Info.Arch, env.tiers, opName(op))
	}
}

func opName(op int) string {
	switch op {
	case kernels.OpDecode:
		return "decode"
	case kernels.OpPrefill:
		return "prefill"
	}
	return fmt.Sprintf("op(%d)", op)
}

// decodeProfile maps a tier's declared decode profile to the oracle's model.
func decodeProfile(t *testing.T, tier kernels.TierDesc) oracle.Profile {
	t.Helper()
	p, err := oracle.ParseProfile(tier.DecodeProfile)
	if err != nil || !p.ReadsCache() {
		t.Fatalf("tier %s declares decode profile %q: the oracle has no decode model for it (%v); expected one of %s, %s, %s",
			tier.Name, tier.DecodeProfile, err, oracle.ProfileDot4Int8Q, oracle.ProfileWMMAF16Q, oracle.ProfilePrefillInt8Row)
	}
	return p
}

// outDtype is the oracle's output dtype for an activation dtype.
func outDtype(dt kernels.Dtype) oracle.Dtype {
	if dt == kernels.BF16 {
		return oracle.DtypeBF16
	}
	return oracle.DtypeF16
}

// caseSeed derives the seed of one case from the run's seed and the case's path, so that a case
// run alone (-run 'TestX/<path>$') sees exactly the inputs it saw in the full run.
func caseSeed(path string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", *seedFlag, path)
	return h.Sum64()
}

// repro is the command line that reruns one case: appended to every failure message.
func repro(t testing.TB) string {
	args := ""
	if testing.Short() {
		args = " -short"
	}
	if *seedFlag != 1 {
		args += fmt.Sprintf(" -args -octant.seed=%d", *seedFlag)
	}
	return fmt.Sprintf("[seed %d; reproduce: OCTANT_LIB=%s go test ./kernels/ -count=1 -run '^%s$'%s]",
		*seedFlag, os.Getenv("OCTANT_LIB"), runPattern(t.Name()), args)
}

// runPattern quotes a test name for -run: each path element anchored as a whole.
func runPattern(name string) string {
	el := strings.Split(name, "/")
	for i, e := range el {
		el[i] = regexpQuote(e)
	}
	return strings.Join(el, "$/^")
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// failf reports a failure of the current case with its reproduction line.
func failf(t testing.TB, format string, a ...any) {
	t.Helper()
	t.Errorf("%s\n%s", fmt.Sprintf(format, a...), repro(t))
}

// fatalf is failf, stopping the case.
func fatalf(t testing.TB, format string, a ...any) {
	t.Helper()
	t.Fatalf("%s\n%s", fmt.Sprintf(format, a...), repro(t))
}

// must stops the case on an unexpected error (a library call that should have succeeded).
func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		fatalf(t, "%s: %v", what, err)
	}
}
