package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mutantHeader = "../../csrc/include/octave_mutant.h"

// TestMutateNeedsSelection: with no --all or --only, mutate builds nothing, says what --all would
// build and run, and how to start it; bad selections are usage errors that say what was expected.
func TestMutateNeedsSelection(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no nvcc, no make: nothing can start
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"mutate", "--header", mutantHeader}, []string{"nothing selected", "--all would build", "emu libraries",
			"mutants and the unmutated build", "build/mutate/kill-matrix.md", "--kind emu: no nvcc on PATH", "start it with --all, or choose mutants with --only"}},
		{[]string{"mutate", "--header", mutantHeader, "3"}, []string{`unexpected argument "3"`, "--only"}},
		{[]string{"mutate", "--header", mutantHeader, "--all", "--only", "3"}, []string{"--all and --only 3: expected one of them"}},
		{[]string{"mutate", "--header", mutantHeader, "--only", "999"}, []string{"not a mutant id"}},
		{[]string{"mutate", "--header", mutantHeader, "--all", "--jobs", "0"}, []string{"--jobs 0: expected ≥ 1"}},
		{[]string{"mutate", "--all"}, []string{"run from the repository root"}},
	} {
		code, out, errs := runCLI(c.args...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want exit 2 and nothing on stdout", c.args, code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errs)
			}
		}
	}
	if code, _, errs := runCLI("mutate", "-h"); code != 0 || !strings.Contains(errs, "--all") || !strings.Contains(errs, "build/mutate") ||
		!strings.Contains(errs, "run alone on the\nunmutated build (the control") || !strings.Contains(errs, "unconfirmed") {
		t.Errorf("mutate -h: exit %d\n%s", code, errs)
	}
}

// TestMutateOnlyStartsWithPlan: a selected run says its plan first, then builds and runs (here
// with a fake make and fake test binaries, which print as Go test binaries do under
// -test.v=test2json: the unmutated build passes).
func TestMutateOnlyStartsWithPlan(t *testing.T) {
	dir := fakeMutateTools(t, `printf '\026=== RUN   TestA\n\026--- PASS: TestA (0.00s)\n\026PASS\n'`)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI("mutate", "--header", mutantHeader, "--kind", "emu", "--only", "0", "--bin", dir, "--out", out, "--budget-per-mutant", "0s")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if !strings.HasPrefix(first, "mutate: 1 emu library (the unmutated build)") || !strings.Contains(first, filepath.Join(out, "kill-matrix.md")) {
		t.Errorf("first line %q: expected the plan", first)
	}
	if !strings.Contains(stdout, "mutant 0 (unmutated): grid… conventional… passes") {
		t.Errorf("stdout:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "kill-matrix.json")); err != nil {
		t.Error(err)
	}
}

// TestMutateNoEvidence: an unmutated build on which every test skips has not passed anything:
// the row says NO EVIDENCE and the command exits 1, whatever the tests print.
func TestMutateNoEvidence(t *testing.T) {
	dir := fakeMutateTools(t, `printf '\026=== RUN   TestA\n    OCTANT_LIB not set\n\026--- SKIP: TestA (0.00s)\n\026PASS\n'`)
	code, stdout, stderr := runCLI("mutate", "--header", mutantHeader, "--kind", "emu", "--only", "0", "--bin", dir, "--out", filepath.Join(dir, "out"), "--budget-per-mutant", "0s")
	if code != 1 || !strings.Contains(stdout, "mutant 0 (unmutated): grid… conventional… NO EVIDENCE: no test passed") {
		t.Errorf("exit %d, expected 1 and NO EVIDENCE\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// fakeMutateTools writes a fake make, fuzz.test and grids.test (with the given shell body) to a
// temporary directory put first on PATH, and returns it.
func fakeMutateTools(t *testing.T, gridsTest string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"make": `echo "make $*"`, "grids.test": gridsTest, "fuzz.test": `printf '\026PASS\n'`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}
