package mutate

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeScript writes an executable shell script.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestRunWithFakes runs the whole orchestration with a fake make and fake test binaries (which
// print as Go test binaries do under -test.v=test2json: result lines marked with ^V): mutant 1
// (reduce) dies in its op's tests; mutant 2 survives the grid and the fuzzer; mutant 3 does not
// build; on mutant 4 every test skips (no evidence, not a survival); mutant 5's test binary exits
// before any test (an error, not a kill); and the unmutated build passes.
func TestRunWithFakes(t *testing.T) {
	dir := t.TempDir()
	bin, out := filepath.Join(dir, "bin"), filepath.Join(dir, "out")
	os.Mkdir(bin, 0o755)
	writeScript(t, filepath.Join(bin, "make"), `case "$*" in *MUTANT=3*) echo "error: no such mutant" >&2; exit 2;; esac; echo "make $*"`)
	writeScript(t, filepath.Join(bin, "grids.test"), `case "$OCTANT_LIB $*" in
*_m1.so*-test.run=^TestReduce*) printf '\026=== RUN   TestReduce\n\026=== RUN   TestReduce/pad\n    reduce_test.go:9: padding row written\n\026--- FAIL: TestReduce/pad (0.00s)\n\026--- FAIL: TestReduce (0.00s)\n\026FAIL\n'; exit 1;;
*_m4.so*) printf '\026=== RUN   TestA\n\026--- SKIP: TestA (0.00s)\n\026PASS\n'; exit 0;;
*_m5.so*) echo "cannot open the library"; exit 1;;
esac
printf '\026=== RUN   TestA\n--- FAIL: TestPrinted (0.00s)\n\026--- PASS: TestA (0.00s)\n\026PASS\n'`)
	writeScript(t, filepath.Join(bin, "fuzz.test"), `case "$OCTANT_LIB" in *_m4.so) printf '\026=== RUN   FuzzX\n\026--- SKIP: FuzzX (0.00s)\n'; exit 0;; esac
printf '\026=== RUN   FuzzX\nfuzz: elapsed: 0s, execs: 7 (7/sec)\n\026--- PASS: FuzzX (1.00s)\n\026PASS\n'`)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	ms := []Mutant{{ID: 1, Name: "OCT_MUT_REDUCE_PAD", Op: "reduce"}, {ID: 2, Name: "OCT_MUT_DECODE_X", Op: "decode"}, {ID: 3, Name: "OCT_MUT_STORE_Y", Op: "store"},
		{ID: 4, Name: "OCT_MUT_DECODE_SKIPPED", Op: "decode"}, {ID: 5, Name: "OCT_MUT_DECODE_NOSTART", Op: "decode"}}
	cfg := Config{Kind: "emu", Budget: time.Second, Bin: bin, Out: out, Conventional: true, Jobs: 2}
	var stdout, stderr strings.Builder
	rows, err := Run(cfg, Select(ms, nil), &stdout, &stderr)
	if err != nil {
		t.Fatalf("Run: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	t.Log("\n" + stdout.String())
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6", len(rows))
	}
	for i, want := range []struct {
		ok      bool
		verdict string
	}{
		{true, "killed by grid: TestReduce/pad"},
		{false, "SURVIVED"},
		{false, "build failed: make emu-mutant MUTANT=3"},
		{false, "NO EVIDENCE: no test passed (8 skipped)"},
		{false, "ERROR: grid: "},
		{true, "passes"},
	} {
		if r := rows[i]; r.OK() != want.ok || !strings.HasPrefix(r.Verdict(), want.verdict) {
			t.Errorf("row %d (mutant %d): OK %v, verdict %q; want %v, %q", i, r.ID, r.OK(), r.Verdict(), want.ok, want.verdict)
		}
	}
	if rows[0].Fuzz != nil || rows[1].Fuzz == nil || rows[1].Fuzz.Cases != 6*7 || rows[5].Fuzz == nil {
		t.Errorf("fuzz phase: killed mutant %+v, survivor %+v, unmutated %+v; want none, 7 execs for each of the 6 targets, run", rows[0].Fuzz, rows[1].Fuzz, rows[5].Fuzz)
	}
	if rows[0].Grid.Message != "reduce_test.go:9: padding row written" {
		t.Errorf("the kill's message: %q", rows[0].Grid.Message)
	}
	for _, want := range []string{"building 6 emu libraries, 2 at a time", "[6/6] mutant", "FAILED to build",
		"mutant 2 (OCT_MUT_DECODE_X): grid… fuzz… conventional… SURVIVED", "mutant 5 (OCT_MUT_DECODE_NOSTART): grid… conventional… ERROR: grid: ", "mutant 0 (unmutated): grid… fuzz… conventional… passes"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "kill-matrix.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 1 | OCT_MUT_REDUCE_PAD | grid: TestReduce/pad |", "| 2 | OCT_MUT_DECODE_X | **survived** |", "| 0 | unmutated | passes (must) |",
		"| 4 | OCT_MUT_DECODE_SKIPPED | **no evidence** (no test passed (8 skipped)) |", "| 5 | OCT_MUT_DECODE_NOSTART | **error** (grid: ",
		"Killed 1 of 5 mutants", "1 with an error (a phase could not run), 1 with no evidence (no test passed)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("kill-matrix.md lacks %q:\n%s", want, md)
		}
	}
	if log, err := os.ReadFile(filepath.Join(out, "logs", "m3-build.log")); err != nil || !strings.Contains(string(log), "no such mutant") {
		t.Errorf("build log of mutant 3: %q, %v", log, err)
	}
}

func TestPlan(t *testing.T) {
	ms := []Mutant{{ID: 1}, {ID: 2}}
	cfg := Config{Kind: "emu", Budget: 75 * time.Second, Out: "build/mutate", Conventional: true, Jobs: 4}
	got := Plan(cfg, Select(ms, nil))
	for _, want := range []string{"3 emu libraries (2 mutants and the unmutated build), built 4 at a time",
		"the -short kernel grid", "the 6 GPU fuzz targets for 15s each", "the conventional suite", "build/mutate/kill-matrix.md"} {
		if !strings.Contains(got, want) {
			t.Errorf("plan %q lacks %q", got, want)
		}
	}
	cfg.Budget, cfg.Conventional, cfg.Full = 0, false, true
	if got := Plan(cfg, Select(ms, map[int]bool{2: true})); strings.Contains(got, "fuzz") || strings.Contains(got, "conventional") ||
		!strings.Contains(got, "1 emu library (1 mutant), built 4") || !strings.Contains(got, "the full kernel grid") {
		t.Errorf("plan without fuzzing and the conventional suite: %q", got)
	}
}

// The unmutated build fails when the conventional suite fails on it, and the verdict says which
// test, not an empty name.
func TestVerdictUnmutatedConventional(t *testing.T) {
	r := &Row{Mutant: Unmutated, Build: "ok", Grid: KillResult{Passed: 3}, Conventional: &KillResult{Killed: true, By: "TestConventionalDecode"}}
	if r.OK() || r.Verdict() != "FAIL: the unmutated build fails conventional: TestConventionalDecode" {
		t.Errorf("OK %v, verdict %q", r.OK(), r.Verdict())
	}
}

// TestFuzzTargetsAreTheGPUTargets: FuzzTargets names every GPU fuzz target of ./fuzz (a Fuzz
// function whose body is gpuFuzz: it runs on $OCTANT_LIB), the isolation property's FuzzIsolation
// among them, and nothing else, each once.
func TestFuzzTargetsAreTheGPUTargets(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "fuzz", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files of ../fuzz: %v", err)
	}
	gpu := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)\s*\{\s*gpuFuzz\(`)
	var found []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range gpu.FindAllStringSubmatch(string(b), -1) {
			found = append(found, m[1])
		}
	}
	if !slices.Contains(found, "FuzzIsolation") {
		t.Errorf("../fuzz has no GPU fuzz target FuzzIsolation (found %v): the pattern no longer reads its test files", found)
	}
	got := slices.Clone(FuzzTargets)
	slices.Sort(got)
	slices.Sort(found)
	if !slices.Equal(got, found) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("FuzzTargets %v, expected the GPU fuzz targets of ../fuzz, each once: %v", FuzzTargets, found)
	}
}

// TestPhasesRunInPackageDir: from a repository root (grids/ and fuzz/testdata/fuzz/ present), the
// grid phase runs the kernel test binary in grids/ and the fuzz phase the fuzz binary in fuzz/,
// each given by a path relative to the root, as go test runs a package's binary.
func TestPhasesRunInPackageDir(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for _, d := range []string{filepath.Join(root, "grids"), filepath.Join(root, "fuzz", "testdata", "fuzz"), filepath.Join(root, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"grids.test", "fuzz.test"} {
		writeScript(t, filepath.Join(root, "bin", b), `pwd -P > "`+filepath.Join(dir, b)+`.wd"; printf '\026=== RUN   TestA\n\026--- PASS: TestA (0.00s)\n\026PASS\n'`)
	}
	t.Chdir(root)
	if r := GridPhase(filepath.Join("bin", "grids.test"), nil, nil, "reduce", io.Discard); r.Outcome() != "survived" {
		t.Fatalf("grid phase: %+v", r)
	}
	if r := FuzzPhase(filepath.Join("bin", "fuzz.test"), nil, time.Second, "cache", io.Discard); r.Outcome() != "survived" {
		t.Fatalf("fuzz phase: %+v", r)
	}
	phys, _ := filepath.EvalSymlinks(root)
	for b, want := range map[string]string{"grids.test": "grids", "fuzz.test": "fuzz"} {
		got, err := os.ReadFile(filepath.Join(dir, b+".wd"))
		if err != nil || strings.TrimSpace(string(got)) != filepath.Join(phys, want) {
			t.Errorf("%s ran in %q (%v), expected %s", b, got, err, filepath.Join(phys, want))
		}
	}
}
