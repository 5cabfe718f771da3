package grids_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/octant-kv/octant/mutate"
)

// kernelTest is a top-level test of this package and whether it is in an internal test file
// (package grids) or an external one (package grids_test).
type kernelTest struct {
	name     string
	internal bool
}

// testOrder lists the package's tests in the order go test runs them: the internal test files'
// tests, then the external ones', each set by file name and then in source order.
func testOrder(t *testing.T) []kernelTest {
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("the package's test files: %v, %v", files, err)
	}
	slices.Sort(files)
	var internal, external []kernelTest
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		in := af.Name.Name == "grids"
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || fd.Name.Name == "TestMain" {
				continue
			}
			if in {
				internal = append(internal, kernelTest{fd.Name.Name, true})
			} else {
				external = append(external, kernelTest{fd.Name.Name, false})
			}
		}
	}
	return append(internal, external...)
}

// firstRunPattern is the -test.run pattern of the first kernel-test run of a kill run of a mutant
// of op (mutate.GridPhase, given a stand-in test binary that records its arguments); "" when the
// first run has none (the whole grid).
func firstRunPattern(t *testing.T, op string) string {
	dir := t.TempDir()
	bin, args := filepath.Join(dir, "grids.test"), filepath.Join(dir, "args")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$OCTANT_ARGS_FILE\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	mutate.GridPhase(bin, []string{"-test.short"}, []string{"OCTANT_ARGS_FILE=" + args}, op, &strings.Builder{})
	b, err := os.ReadFile(args)
	if err != nil {
		t.Fatalf("op %s: the grid phase did not run the test binary: %v", op, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	for _, a := range strings.Fields(first) {
		if p, ok := strings.CutPrefix(a, "-test.run="); ok {
			return p
		}
	}
	return ""
}

// TestLongFirstOrder: TestDecodeLongFirst is the first external test go test runs in this package,
// and the first run of every kill run (each op of the mutant catalogue, and the unmutated build)
// selects it with only internal tests (the model tests, without long cases) before it: the first
// minute of a kill run on the GPU includes a decode past 2^16 tokens on every tier.
func TestLongFirstOrder(t *testing.T) {
	const first = "TestDecodeLongFirst"
	order := testOrder(t)
	i := slices.IndexFunc(order, func(k kernelTest) bool { return !k.internal })
	if i < 0 || order[i].name != first {
		t.Fatalf("the first external test go test runs is %v, expected %s (a_long_first_test.go must sort first among the external test files, and %s come first in it)", order[i:min(i+1, len(order))], first, first)
	}
	ms, err := mutate.ReadMutants(filepath.Join("..", "csrc", "include", "octave_mutant.h"))
	if err != nil {
		t.Fatal(err)
	}
	ops := []string{mutate.Unmutated.Op}
	for _, m := range ms {
		if !slices.Contains(ops, m.Op) {
			ops = append(ops, m.Op)
		}
	}
	for _, op := range ops {
		p := firstRunPattern(t, op)
		var before []string
		found := false
		for _, k := range order {
			if p != "" && !regexp.MustCompile(p).MatchString(k.name) {
				continue
			}
			if k.name == first {
				found = true
				break
			}
			if !k.internal {
				before = append(before, k.name)
			}
		}
		switch {
		case !found:
			t.Errorf("op %s: the kill run's first run (-test.run=%q) does not select %s", op, p, first)
		case len(before) > 0:
			t.Errorf("op %s: the kill run's first run (-test.run=%q) runs %v before %s", op, p, before, first)
		}
	}
	t.Logf("%s first among the external tests and in the first run of the kill runs of ops %v", first, ops)
}
