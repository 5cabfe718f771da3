package grids_test

import (
	"fmt"
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

// testOrder lists the tests of this package's test files in dir in the order go test runs them:
// the internal test files' tests, then the external ones', each set by file name and then in
// source order. found is false when dir holds no test file of this package (package grids or
// grids_test): a test binary run outside grids/ has no sources to read.
func testOrder(dir string) (order []kernelTest, found bool, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, false, err
	}
	slices.Sort(files)
	var internal, external []kernelTest
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, false, err
		}
		in := af.Name.Name == "grids"
		if !in && af.Name.Name != "grids_test" {
			continue
		}
		found = true
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
	return append(internal, external...), found, nil
}

// checkFirstExternal says what is wrong when first is not the first external test of order.
func checkFirstExternal(order []kernelTest, first string) error {
	i := slices.IndexFunc(order, func(k kernelTest) bool { return !k.internal })
	switch {
	case i < 0:
		return fmt.Errorf("no external test (package grids_test) found, expected %s first among them", first)
	case order[i].name != first:
		return fmt.Errorf("the first external test go test runs is %s, expected %s (a_long_first_test.go must sort first among the external test files, and %s come first in it)",
			order[i].name, first, first)
	}
	return nil
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
// minute of a kill run on the GPU includes a decode past 2^16 tokens on every tier. The order is
// read from the package's test files in the working directory (go test's: grids/); a test binary
// run where they are not skips, since it can neither confirm nor refute the order there.
func TestLongFirstOrder(t *testing.T) {
	const first = "TestDecodeLongFirst"
	order, found, err := testOrder(".")
	if err != nil {
		t.Fatalf("the package's test files: %v", err)
	}
	if !found {
		wd, _ := os.Getwd()
		t.Skipf("no test file of package grids in %s (a test binary run outside grids/): the order go test runs the tests in is read from them", wd)
	}
	if err := checkFirstExternal(order, first); err != nil {
		t.Fatal(err)
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

// TestLongFirstOrderWithoutSources: TestLongFirstOrder skips, not fails, in a directory without
// the package's test files (where a copied test binary runs), also beside another package's test
// files; where they are, a wrong order is still found.
func TestLongFirstOrderWithoutSources(t *testing.T) {
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "x_test.go"), []byte("package fuzz\n\nfunc TestDecodeLongFirst() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"empty": t.TempDir(), "another package": other} {
		skipped := false
		t.Run(name, func(t *testing.T) {
			t.Chdir(dir)
			defer func() { skipped = t.Skipped() }()
			TestLongFirstOrder(t)
		})
		if !skipped {
			t.Errorf("%s: TestLongFirstOrder did not skip in a directory without the package's test files", name)
		}
	}

	wrong := t.TempDir()
	for f, src := range map[string]string{
		"a_test.go":   "package grids_test\n\nfunc TestStoreFirst(t *testing.T) {}\n",
		"b_test.go":   "package grids_test\n\nfunc TestDecodeLongFirst(t *testing.T) {}\n",
		"int_test.go": "package grids\n\nfunc TestModel(t *testing.T) {}\n",
	} {
		if err := os.WriteFile(filepath.Join(wrong, f), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	order, found, err := testOrder(wrong)
	if err != nil || !found {
		t.Fatalf("testOrder: found %v, %v", found, err)
	}
	if want := []kernelTest{{"TestModel", true}, {"TestStoreFirst", false}, {"TestDecodeLongFirst", false}}; !slices.Equal(order, want) {
		t.Errorf("order %v, expected %v", order, want)
	}
	if err := checkFirstExternal(order, "TestDecodeLongFirst"); err == nil || !strings.Contains(err.Error(), "TestStoreFirst") {
		t.Errorf("a wrong order: %v, expected an error naming TestStoreFirst", err)
	}
	if order, found, err := testOrder("."); err != nil || !found || checkFirstExternal(order, "TestDecodeLongFirst") != nil {
		t.Errorf("this package's own order: found %v, %v, %v", found, err, checkFirstExternal(order, "TestDecodeLongFirst"))
	}
}
