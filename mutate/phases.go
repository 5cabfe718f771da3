package mutate

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// FuzzTargets are the GPU fuzz targets of ./fuzz the fuzz phase runs, in this order: each op's
// property, then per-row isolation (FuzzIsolation: the slots between sibling rows' klens
// poisoned), which kills a decode that reads past a row's klen into its arithmetic where every
// output stays within its bound. TestFuzzTargetsAreTheGPUTargets checks the list against ./fuzz.
var FuzzTargets = []string{"FuzzDecode", "FuzzStore", "FuzzRotate", "FuzzReduce", "FuzzPrefill", "FuzzIsolation"}

// opTests are the kernel tests of each op: the grid runs them first for a mutant of that op (the
// order changes when a mutant dies, not whether), then the rest. Each selects longFirst too (go
// test runs the selected tests in file order, whatever the pattern's).
var opTests = map[string]string{"store": "^TestStore|" + longFirst, "rotate": "^TestRotate|" + longFirst, "decode": "^TestDecode",
	"reduce": "^TestReduce|" + longFirst, "prefill": "^TestPrefill|" + longFirst, "qmaps": "^TestQueryMaps|" + longFirst,
	"wmma": "^TestWMMA|" + longFirst, "mfma": "^TestMFMA|" + longFirst, "mma": "^TestMMA|" + longFirst}

// longFirst selects the kernel test that runs first in every kill run, whatever the mutant's op
// (grids/a_long_first_test.go, the first external test file; ^TestDecode selects it too):
// decode past 2^16 tokens on every tier, so that a defect that shows only at long context is
// caught in the first seconds. grids.TestLongFirstOrder checks that every op's first run
// selects it.
const longFirst = "^TestDecodeLongFirst$"

// inPackage says how to run a test binary of package directory pkg as go test runs a package's
// binary: in pkg, with the binary's path made absolute, when the working directory has pkg/marker
// (the repository root), since the package's tests find their inputs from there (grids: the golden
// vectors at ../corpus/golden/upstream, the test sources for TestLongFirstOrder; fuzz: the seed
// corpora). Elsewhere the binary runs as given in the working directory (dir ""). A phase's env
// must then hold absolute paths only: runOne's do.
func inPackage(bin, pkg, marker string) (path, dir string) {
	if st, err := os.Stat(filepath.Join(pkg, marker)); err == nil && st.IsDir() {
		if abs, err := filepath.Abs(bin); err == nil {
			return abs, pkg
		}
	}
	return bin, ""
}

// gridsDir is where the kernel test binary kt runs (inPackage): grids/ in the repository root.
func gridsDir(kt string) (path, dir string) { return inPackage(kt, "grids", ".") }

// fuzzDir is where the fuzz test binary ft runs (inPackage): fuzz/ when it has its seed corpora
// (fuzz/testdata/fuzz/FuzzX), so that the targets start from them.
func fuzzDir(ft string) (path, dir string) {
	return inPackage(ft, "fuzz", filepath.Join("testdata", "fuzz"))
}

// GridPhase runs the kernel grid with the test binary kt, in the grids package's directory when
// the working directory has one (gridsDir): the op's own tests first, then every other test
// except the conventional suite. The second run's counts add to the first's; it runs only while
// the first neither killed nor failed to run.
func GridPhase(kt string, args, env []string, op string, log io.Writer) KillResult {
	kt, dir := gridsDir(kt)
	re, ok := opTests[op]
	if !ok {
		return RunUntilFail(dir, kt, args, env, 0, log)
	}
	res := RunUntilFail(dir, kt, append(append([]string(nil), args...), "-test.run="+re), env, 0, log)
	if res.Killed || res.Error != "" {
		return res
	}
	res.add(RunUntilFail(dir, kt, append(append([]string(nil), args...), "-test.skip="+re+"|^TestConventional"), env, 0, log))
	return res
}

// FuzzPerTarget is each fuzz target's share of a budget: equal, and at least 15 s, because Go's
// fuzzer reports "context deadline exceeded" as a failure when -test.fuzztime ends while it still
// gathers its baseline coverage (each input a GPU case).
func FuzzPerTarget(budget time.Duration) time.Duration {
	return max(budget/time.Duration(len(FuzzTargets)), 15*time.Second)
}

// FuzzPhase runs the GPU fuzz targets of the test binary ft in turn, the budget shared equally,
// until one fails. They run in the fuzz package's directory (fuzzDir) when the working directory
// has one, so that they start from their seed corpora (fuzz/testdata/fuzz/FuzzX); the fuzzer
// writes a failing input it finds there too, where the control's run replays it.
func FuzzPhase(ft string, env []string, budget time.Duration, cache string, log io.Writer) KillResult {
	f := KillResult{}
	per := FuzzPerTarget(budget)
	ft, dir := fuzzDir(ft)
	if abs, err := filepath.Abs(cache); err == nil {
		cache = abs
	}
	for _, t := range FuzzTargets {
		f.add(RunUntilFail(dir, ft, []string{"-test.run=^$", "-test.fuzz=^" + t + "$", "-test.fuzztime=" + per.String(), "-test.fuzzminimizetime=10x",
			"-test.parallel=1", "-test.fuzzcachedir=" + cache}, env, per+30*time.Second, log))
		if f.Killed || f.Error != "" {
			return f
		}
	}
	return f
}

// DefaultKind is cuda when nvcc is on PATH, else emu, and why.
func DefaultKind() (kind, why string) {
	if _, err := exec.LookPath("nvcc"); err == nil {
		return "cuda", "nvcc is on PATH"
	}
	return "emu", "no nvcc on PATH"
}

// Build builds the library of mutant id (0: the normal build) of kind (cuda, emu) with make in the
// working directory (the repository root) and returns its path, relative to it.
func Build(kind string, id int, log io.Writer) (string, error) {
	target, lib := kind, filepath.Join("build", "liboctave_"+kind+".so")
	args := []string{target}
	if id != 0 {
		args = []string{kind + "-mutant", fmt.Sprintf("MUTANT=%d", id)}
		lib = filepath.Join("build", "mutants", fmt.Sprintf("liboctave_%s_m%d.so", kind, id))
	}
	unlock, err := lockBuild(kind, id)
	if err != nil {
		return "", err
	}
	defer unlock()
	cmd := exec.Command("make", args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("make %s: %v (log in the out directory)", strings.Join(args, " "), err)
	}
	return lib, nil
}

// EnsureTestBinaries builds the test binaries kt (./grids, the kernel tests) and ft (./fuzz, with
// its fuzz targets) with go when they are missing, saying so on progress; go's errors go to stderr.
func EnsureTestBinaries(kt, ft string, progress, stderr io.Writer) error {
	for _, b := range []struct{ path, pkg string }{{kt, "./grids"}, {ft, "./fuzz"}} {
		if _, err := os.Stat(b.path); err == nil {
			continue
		}
		if _, err := exec.LookPath("go"); err != nil {
			return fmt.Errorf("%s missing and no go to build it (make gpu-bins where Go is)", b.path)
		}
		args := []string{"test", "-c", "-o", b.path, b.pkg}
		if b.pkg == "./fuzz" {
			args = []string{"test", "-c", "-fuzz=.", "-o", b.path, b.pkg}
		}
		fmt.Fprintf(progress, "%s missing: building it (go %s)…\n", b.path, strings.Join(args, " "))
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stderr = stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
		}
	}
	return nil
}
