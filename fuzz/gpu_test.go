package fuzz

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/internal/settings"
	"pgregory.net/rapid"
)

// The GPU targets: each property of GPUProperties as a rapid test (TestGPUX) and a fuzz target
// (FuzzX). Both skip without $OCTANT_LIB. On the GPU machine run one target at a time with
// -parallel=1 (make fuzz-gpu). TestOracleX run the same judges with the oracle alone (its
// float32 models held to the bounds every tier is held to), so CI exercises them too.

// skipWithoutLib skips tb without $OCTANT_LIB, and when the library's declaration (an adapter's)
// leaves op out: every case would be outside its declared domain. Otherwise it starts prop's count
// of cases outside the domain and logs it when tb ends (outside.go).
func skipWithoutLib(tb testing.TB, op arch.Op, prop string) {
	tb.Helper()
	l, err := harnesstest.EnvLib()
	if errors.Is(err, harnesstest.ErrNoLib) {
		tb.Skip(err)
	} else if err != nil {
		tb.Fatal(err)
	}
	if !l.Decl.Declares(op) {
		tb.Skipf("outside declared domain: %s declares no %s op", l.Path, op)
	}
	run.resetOutside(prop)
	tb.Cleanup(func() {
		if s := run.OutsideLine(prop); s != "" {
			tb.Log(s)
		}
	})
}

func TestGPUStore(t *testing.T) {
	skipWithoutLib(t, arch.Store, cases.PropNameGPUStore)
	rapid.Check(t, run.Counted(cases.PropNameGPUStore, run.PropGPUStore))
}
func TestGPURotate(t *testing.T) {
	skipWithoutLib(t, arch.Rotate, cases.PropNameGPURotate)
	rapid.Check(t, run.Counted(cases.PropNameGPURotate, run.PropGPURotate))
}

// TestGPUDecode judges -rapid.checks decode cases (GPUDecodeCases(GPUDecodeOptions())) on every
// decode tier, $OCTANT_DECODE_WORKERS of them (one per processor) at once (pipeline.go: rapid draws, a pool of
// workers builds and judges). A failing case is then judged again under rapid.Check alone from the
// seed rapid drew it with (subtest "recheck"), so rapid shrinks it and reports it as usual.
func TestGPUDecode(t *testing.T) {
	skipWithoutLib(t, arch.Decode, cases.PropNameGPUDecode)
	l, _ := harnesstest.EnvLib()
	base := rapidBaseSeed()
	before := l.Dev.CallTimes()
	start := time.Now()
	p := run.newDecodePipeline(l)
	waited := false
	defer func() {
		if !waited { // rapid.Check stopped the test: still wait for the cases in flight and name their failures
			for _, f := range p.wait() {
				t.Errorf("case %d (rapid seed %d) failed too: %v", f.index, rapidCheckSeed(base, f.index), f.failure())
			}
		}
	}()
	err := withRapidFlags(map[string]string{"seed": fmt.Sprint(base)}, func() {
		rapid.Check(t, run.Counted(cases.PropNameGPUDecode, func(rt *rapid.T) {
			p.submit(cases.GPUDecodeCases(cases.GPUDecodeOptions()).Draw(rt, "case"))
		}))
	})
	fails := p.wait()
	waited = true
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	t.Logf("%d cases judged in %v (%.0f/s), %d at once; -rapid.seed=%d", p.n, wall.Round(time.Millisecond), float64(p.n)/wall.Seconds(), run.DecodeWorkers, base)
	t.Logf("time: %v", run.Timing)
	t.Logf("library calls (serialised; total over the run): %s", callTimes(before, l.Dev.CallTimes()))
	t.Logf("the slowest cases (build and judge wall):%s", run.Slowest())
	if len(fails) == 0 {
		return
	}
	// The first failing case: its own reproducer first (whatever the recheck finds), then rapid
	// alone from the seed it drew the case with, which shrinks it.
	f := fails[0]
	if f.j.call != nil {
		f.c.Record(f.j.call) // its digest: a replay then tells a changed generator from a fixed kernel
	}
	path, werr := run.recordFailure(cases.PropNameGPUDecode, f.c, f.failure(), l)
	msg := run.failureMessage(cases.PropNameGPUDecode, f.failure(), path, werr, l)
	if werr == nil && f.j.call != nil {
		msg = withPython(msg, run.recordPython(l, f.j.call, f.j.vs, path))
	}
	seed := rapidCheckSeed(base, f.index)
	t.Errorf("%d of %d cases failed; the first, case %d (rapid seed %d):\n%s\nIt is judged again under rapid alone from that seed, which shrinks it (subtest recheck).",
		len(fails), p.n, f.index, seed, msg)
	checks := "1"
	if testing.Short() {
		checks = "5" // rapid runs a fifth of -rapid.checks under -short
	}
	passed := true
	if err := withRapidFlags(map[string]string{"seed": fmt.Sprint(seed), "checks": checks}, func() {
		passed = t.Run("recheck", func(t *testing.T) { rapid.Check(t, run.PropGPUDecode) })
	}); err != nil {
		t.Fatal(err)
	}
	if passed {
		t.Errorf("judged again from rapid seed %d, the case passed: it was not shrunk (a failure that does not reproduce, a rapid fail file replayed first, or a rapid version whose order of seeds differs: TestRapidCheckSeed)", seed)
	}
}

// callTimes is the time per op between two kernels.Device.CallTimes, largest first.
func callTimes(before, after map[string]time.Duration) string {
	type opTime struct {
		op string
		d  time.Duration
	}
	var ts []opTime
	var sum time.Duration
	for op, d := range after {
		ts = append(ts, opTime{op, d - before[op]})
		sum += d - before[op]
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].d > ts[j].d })
	s := fmt.Sprintf("%v in all", sum.Round(time.Millisecond))
	for _, x := range ts {
		s += fmt.Sprintf(", %s %v", x.op, x.d.Round(time.Millisecond))
	}
	return s
}
func TestGPUReduce(t *testing.T) {
	skipWithoutLib(t, arch.Reduce, cases.PropNameGPUReduce)
	rapid.Check(t, run.Counted(cases.PropNameGPUReduce, run.PropGPUReduce))
}
func TestGPUPrefill(t *testing.T) {
	skipWithoutLib(t, arch.Prefill, cases.PropNameGPUPrefill)
	rapid.Check(t, run.Counted(cases.PropNameGPUPrefill, run.PropGPUPrefill))
}

// gpuFuzz runs a GPU property as a fuzz target; a case outside the library's declared domain is
// skipped with its reason (a seed of the corpus shows as SKIP) and counted.
func gpuFuzz(f *testing.F, op arch.Op, prop string, mk func(skipOutside bool) func(*rapid.T)) {
	skipWithoutLib(f, op, prop)
	f.Fuzz(rapid.MakeFuzz(run.Counted(f.Name(), mk(true))))
}

func FuzzStore(f *testing.F)  { gpuFuzz(f, arch.Store, cases.PropNameGPUStore, run.storeProp) }
func FuzzRotate(f *testing.F) { gpuFuzz(f, arch.Rotate, cases.PropNameGPURotate, run.rotateProp) }
func FuzzDecode(f *testing.F) { gpuFuzz(f, arch.Decode, cases.PropNameGPUDecode, run.decodeProp) }
func FuzzReduce(f *testing.F) { gpuFuzz(f, arch.Reduce, cases.PropNameGPUReduce, run.reduceProp) }
func FuzzPrefill(f *testing.F) {
	gpuFuzz(f, arch.Prefill, cases.PropNameGPUPrefill, run.prefillProp)
}

// oracleOnly judges recipes of gen with no library: the oracle's side of every GPU target (its
// float32 models against the bounds, the store's oracle bytes against slot acceptance). Few cases
// by default: CI time.
func oracleOnly[C any, P interface {
	*C
	cases.Recipe
}](t *testing.T, name string, gen *rapid.Generator[P]) {
	rapid.Check(t, func(rt *rapid.T) { run.checkRecipe(rt, name, nil, gen.Draw(rt, "case"), false) })
}

func TestOracleStore(t *testing.T)  { oracleOnly(t, cases.PropNameGPUStore, cases.GPUStoreCases()) }
func TestOracleRotate(t *testing.T) { oracleOnly(t, cases.PropNameGPURotate, cases.GPURotateCases()) }
func TestOracleReduce(t *testing.T) { oracleOnly(t, cases.PropNameGPUReduce, cases.GPUReduceCases()) }
func TestOracleDecode(t *testing.T) {
	oracleOnly(t, cases.PropNameGPUDecode, cases.GPUDecodeCases(cases.GPUDecodeOptions()))
}
func TestOraclePrefill(t *testing.T) {
	oracleOnly(t, cases.PropNameGPUPrefill, cases.GPUPrefillCases())
}

// The must-not-matter properties (mustnotmatter.go), each through mustNotMatterTest: on every tier
// of $OCTANT_LIB when it is set, else on the oracle alone (its models read only what the contract
// lets them), saying so.
func TestMustNotMatterDecode(t *testing.T) {
	mustNotMatterTest(t, cases.PropNameMNMDecode, run.PropMustNotMatterDecode)
}
func TestMustNotMatterPrefill(t *testing.T) {
	mustNotMatterTest(t, cases.PropNameMNMPrefill, run.PropMustNotMatterPrefill)
}
func TestMustNotMatterStore(t *testing.T) {
	mustNotMatterTest(t, cases.PropNameMNMStore, run.PropMustNotMatterStore)
}
func TestMustNotMatterReduce(t *testing.T) {
	mustNotMatterTest(t, cases.PropNameMNMReduce, run.PropMustNotMatterReduce)
}

// mustNotMatterTest runs a must-not-matter property as subtest "library" on every tier of
// $OCTANT_LIB that implements its op, logging the library and its tiers; without $OCTANT_LIB, as
// subtest "oracle" on the oracle alone, logging that no kernel was judged, and subtest "library"
// skipped: a run without a library counts a skip, so that its pass never reads as a kernel's.
func mustNotMatterTest(t *testing.T, name string, prop func(*rapid.T)) {
	l, err := harnesstest.EnvLib()
	switch {
	case errors.Is(err, harnesstest.ErrNoLib):
		t.Logf("%s: %s is not set: judged on the oracle alone (subtest oracle); no kernel library is judged (make emu-test runs it on every tier of build/liboctave_emu.so)", name, settings.LibEnv)
		t.Run("oracle", func(t *testing.T) { rapid.Check(t, run.Counted(name, prop)) })
		t.Run("library", func(t *testing.T) {
			t.Skipf("%s is not set: no kernel library to judge (only the oracle ran)", settings.LibEnv)
		})
	case err != nil:
		t.Fatal(err)
	default:
		t.Logf("%s: judged on every tier of %s that implements the op (the library lists %s)", name, l.Path, arch.JoinTiers(l.TierNames()))
		t.Run("library", func(t *testing.T) { rapid.Check(t, run.Counted(name, prop)) })
	}
}

// childFlag marks the run of this test binary that TestMustNotMatterSaysOracleAlone starts: a
// flag of the test binary, not an environment variable, since it is the test's own protocol and
// no setting (package settings reads the environment). It is registered here, before TestMain's
// flag.Parse.
var childFlag = flag.Bool("octant.child", false, "this run is the child TestMustNotMatterSaysOracleAlone starts (OCTANT_LIB unset); that test skips in it")

// TestMustNotMatterSaysOracleAlone: without $OCTANT_LIB a must-not-matter test says it judged the
// oracle alone and reports its library part as skipped (this test binary, run again with
// OCTANT_LIB unset and -octant.child, on TestMustNotMatterReduce, the quickest).
func TestMustNotMatterSaysOracleAlone(t *testing.T) {
	if *childFlag {
		t.Skip("in the child run (-octant.child)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestMustNotMatterReduce$", "-test.v", "-test.count=1", "-rapid.checks=5", "-octant.child")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, settings.LibEnv+"=") })
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"is not set: judged on the oracle alone",
		"--- PASS: TestMustNotMatterReduce/oracle",
		"--- SKIP: TestMustNotMatterReduce/library",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("without %s the output lacks %q:\n%s", settings.LibEnv, want, out)
		}
	}
}

// TestRapidCheckSeed: rapidCheckSeed(base, i) is the seed rapid draws check i of a run with, so
// that rapid alone started from it draws the same case (what TestGPUDecode's recheck relies on).
func TestRapidCheckSeed(t *testing.T) {
	const base, n = 12345, 20
	draw := func(rt *rapid.T) uint64 { return rapid.Uint64().Draw(rt, "x") }
	var run []uint64
	if err := withRapidFlags(map[string]string{"seed": fmt.Sprint(base), "checks": fmt.Sprint(5 * n)}, func() {
		t.Run("run", func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { run = append(run, draw(rt)) })
		})
	}); err != nil {
		t.Fatal(err)
	}
	if len(run) < n {
		t.Fatalf("rapid ran %d checks, expected at least %d", len(run), n)
	}
	for i, want := range run {
		var got []uint64
		if err := withRapidFlags(map[string]string{"seed": fmt.Sprint(rapidCheckSeed(base, i)), "checks": "5"}, func() {
			t.Run("alone", func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) { got = append(got, draw(rt)) })
			})
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || got[0] != want {
			t.Fatalf("check %d of a run from seed %d drew %#x; rapid alone from rapidCheckSeed = %d drew %v", i, base, want, rapidCheckSeed(base, i), got)
		}
	}
}
