package grids_test

// The shared test environment of the kernel tests: one library and one device per test binary,
// the tiers the device offers, the numeric profile each tier declares, and how a failing case is
// named and reproduced.
//
// Every test here needs a kernel library: without OCTANT_LIB it skips. With it, e.g.
//
//	OCTANT_LIB=$PWD/build/liboctave_emu.so CGO_ENABLED=0 go test -short ./grids/   (CPU emulator)
//	OCTANT_LIB=/path/liboctave_cuda.so ./grids.test -test.count=1                   (GPU)
//
// -short selects the small grids (the CPU emulator in CI); without it the full grids run (GPU).

import (
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/internal/settings/settingstest"
	"github.com/octant-kv/octant/kernels"
)

var seedFlag = flag.Uint64("octant.seed", 1, "seed of the kernel test grids and inputs (every case derives its own seed from it and its path)")

// TestMain runs the tests and closes the shared library.
func TestMain(m *testing.M) {
	code := m.Run()
	if *gridDeadline > 0 {
		l, _ := harnesstest.EnvLib()
		msg, err := judged.deadlineVerdict(l)
		if msg != "" {
			fmt.Println(msg)
		}
		if err != nil {
			fmt.Println(err)
			code = max(code, 1)
		}
	}
	harnesstest.CloseEnvLib()
	os.Exit(code)
}

// lib returns the library named by OCTANT_LIB, opened once per test binary (device buffers not
// pooled: compute-sanitizer memcheck sees exact allocations), or skips the test when OCTANT_LIB
// is not set.
func lib(t testing.TB) *harness.Lib {
	t.Helper()
	return harnesstest.LibOrSkip(t)
}

// device is lib(t)'s device, for the tests that call the binding directly (errors, empty calls,
// device basics).
func device(t testing.TB) *kernels.Device {
	t.Helper()
	return lib(t).Dev
}

// skipThroughWorker skips t when the library is a worker (OCTANT_LIB a spec such as
// host:ADAPTER.py), saying what the test needs that a worker does not give.
func skipThroughWorker(t testing.TB, why string) {
	t.Helper()
	if l := lib(t); l.Worker != nil {
		t.Skipf("through a worker (%s): %s", l.Path, why)
	}
}

// skipNarrowed skips the tests that call the binding directly with every dtype, format, block
// size and input class of ops and compare the ABI's statuses (the error and alignment tables) when
// the library's declaration (an adapter's) narrows what those ops take (Declaration.NarrowsCalls):
// the worker refuses what is not declared before the adapter sees it, with another status than
// the case expects. A declaration that narrows other ops only leaves the test to run.
func skipNarrowed(t testing.TB, ops ...arch.Op) {
	t.Helper()
	l := lib(t)
	if n := l.Decl.NarrowsCalls(ops...); len(n) > 0 {
		t.Skipf("outside declared domain: %s narrows the calls of %s (%s); the error tables expect the ABI's statuses for every dtype, format and input", l.Path, fmt.Sprint(ops), strings.Join(n, "; "))
	}
}

// skipNoQueryMaps skips a test that calls the query maps when the library's declaration (an
// adapter's) does not declare them (vLLM's ops have none): they are no op of the judged calls, so
// the domain of Lib.Outside does not cover them.
func skipNoQueryMaps(t testing.TB) {
	t.Helper()
	if l := lib(t); l.Decl != nil && !l.Decl.QueryMaps {
		t.Skipf("outside declared domain: %s does not declare the query maps", l.Path)
	}
}

// hostMapThroughWorker is why a case of slot_mapping_host skips through a worker.
const hostMapThroughWorker = "slot_mapping_host points into this process, which a worker cannot read: the worker backend sends it as NULL (kernels/worker, Store), so the library reads the device's slot_mapping instead"

// skippedThroughWorker runs a subtest named name that skips, and reports true, when the library
// is a worker and why is not "": why says what the case needs that a worker does not give.
func skippedThroughWorker(t *testing.T, name, why string) bool {
	t.Helper()
	if why == "" || lib(t).Worker == nil {
		return false
	}
	t.Run(name, func(t *testing.T) { skipThroughWorker(t, why) })
	return true
}

// libImpl is the library's one implementation of an untiered op (store, rotate, reduce); the test
// skips when the library's declaration (an adapter's) leaves the op out.
func libImpl(t testing.TB, l *harness.Lib, op arch.Op) harness.Impl {
	t.Helper()
	if !l.Decl.Declares(op) {
		t.Skipf("outside declared domain: %s declares no %s op", l.Path, op)
	}
	impls, err := harness.Impls(l, op)
	if err != nil || len(impls) != 1 {
		t.Fatalf("%s: implementations %v, %v: expected the library's one", op, impls, err)
	}
	return impls[0]
}

// forEachTier runs fn once per tier of the library that implements op, as a subtest named after
// the tier (harnesstest.ForEachImpl), for the tests that call a tier through the binding directly:
// the error tables and the upstream-shaped conventional suite.
func forEachTier(t *testing.T, op arch.Op, fn func(t *testing.T, tier kernels.TierDesc)) {
	t.Helper()
	harnesstest.ForEachImpl(t, lib(t), op, func(t *testing.T, im harness.Impl) { fn(t, im.Tier) })
}

// report turns a harness verdict into the test's outcome: Fail fails the case (with its
// reproduction line), a QualityWarning and a Pass are logged, and a case outside the library's
// declared domain (an adapter's: NotSupported, nothing ran) skips with the reason, so that every
// list of skips (go test -v, make bridge-test's parity) names it.
func report(t testing.TB, what string, v harness.Verdict) {
	t.Helper()
	if v.Status == harness.NotSupported {
		t.Skipf("%s: %v", what, v.Err)
	}
	judged.add(v)
	switch v.Status {
	case harness.Fail:
		failf(t, "%s: %v", what, v.Err)
	case harness.QualityWarning:
		t.Logf("%s: quality warning: %v", what, v.Err)
	default:
		t.Logf("%s: %s", what, v)
	}
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
	return fmt.Sprintf("[seed %d; reproduce: OCTANT_LIB=%s go test ./grids/ -count=1 -run '^%s$'%s]",
		*seedFlag, cases.ShellWord(settingstest.Get(t).Lib), runPattern(t.Name()), args)
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
