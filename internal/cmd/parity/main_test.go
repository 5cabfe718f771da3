package main

import (
	"regexp"
	"strings"
	"testing"
)

func stream(lines ...string) run {
	r, err := read(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		panic(err)
	}
	return r
}

// TestCompare: equal verdicts agree; a skip through the worker with its words is listed with its
// reason; a skip without them, a failure and a test missing from one run are differences.
func TestCompare(t *testing.T) {
	direct := stream(
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
		`{"Action":"pass","Package":"p","Test":"TestC"}`,
		`{"Action":"fail","Package":"p","Test":"TestD"}`,
		`{"Action":"pass","Package":"p","Test":"TestE"}`,
	)
	worker := stream(
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    x_test.go:3: through a worker (host:a.py): no context\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestB/only","Output":"through a worker: host map\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB/only"}`,
		`{"Action":"skip","Package":"p","Test":"TestC"}`,
		`{"Action":"fail","Package":"p","Test":"TestD"}`,
	)
	skips, excluded, diffs := compare(direct, worker, "through a worker", nil)
	if len(excluded) != 0 {
		t.Errorf("excluded %q without -exclude", excluded)
	}
	if len(skips) != 2 || !strings.Contains(skips[0], "p TestB: x_test.go:3: through a worker (host:a.py): no context") || !strings.Contains(skips[1], "p TestB/only") {
		t.Errorf("skips %q: expected TestB and TestB/only with their reasons", skips)
	}
	want := []string{"p TestC: pass directly, skip through the worker", "p TestD: fail directly, fail through the worker (a failure)",
		"p TestE: pass directly, absent through the worker"}
	if strings.Join(diffs, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences %q, expected %q", diffs, want)
	}
}

// TestCompareExclude: a test matching -exclude is left out and listed, and so is a parent that
// fails through the worker only because of excluded subtests; a parent with a failing subtest that
// is not excluded is still a difference.
func TestCompareExclude(t *testing.T) {
	direct := stream(
		`{"Action":"pass","Package":"p","Test":"TestErrors"}`,
		`{"Action":"pass","Package":"p","Test":"TestGrid/fp16/a"}`,
		`{"Action":"pass","Package":"p","Test":"TestGrid/bf16/a"}`,
		`{"Action":"pass","Package":"p","Test":"TestGrid/bf16"}`,
		`{"Action":"pass","Package":"p","Test":"TestGrid/fp16"}`,
		`{"Action":"pass","Package":"p","Test":"TestGrid"}`,
		`{"Action":"pass","Package":"p","Test":"TestOther/x"}`,
		`{"Action":"pass","Package":"p","Test":"TestOther/bf16"}`,
		`{"Action":"pass","Package":"p","Test":"TestOther"}`,
	)
	worker := stream(
		`{"Action":"fail","Package":"p","Test":"TestErrors"}`,
		`{"Action":"pass","Package":"p","Test":"TestGrid/fp16/a"}`,
		`{"Action":"fail","Package":"p","Test":"TestGrid/bf16/a"}`,
		`{"Action":"fail","Package":"p","Test":"TestGrid/bf16"}`,
		`{"Action":"pass","Package":"p","Test":"TestGrid/fp16"}`,
		`{"Action":"fail","Package":"p","Test":"TestGrid"}`,
		`{"Action":"fail","Package":"p","Test":"TestOther/x"}`,
		`{"Action":"fail","Package":"p","Test":"TestOther/bf16"}`,
		`{"Action":"fail","Package":"p","Test":"TestOther"}`,
	)
	_, excluded, diffs := compare(direct, worker, "through a worker", regexp.MustCompile(`^TestErrors$|^TestGrid/bf16|^TestOther/bf16`))
	wantEx := []string{"p TestErrors: pass directly, fail through the worker", "p TestGrid: pass directly, fail through the worker",
		"p TestGrid/bf16: pass directly, fail through the worker", "p TestGrid/bf16/a: pass directly, fail through the worker",
		"p TestOther/bf16: pass directly, fail through the worker"}
	if strings.Join(excluded, "\n") != strings.Join(wantEx, "\n") {
		t.Errorf("excluded %q, expected %q", excluded, wantEx)
	}
	want := []string{"p TestOther: pass directly, fail through the worker (a failure)", "p TestOther/x: pass directly, fail through the worker (a failure)"}
	if strings.Join(diffs, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences %q, expected %q", diffs, want)
	}
}

// TestCompareSkipWords: -skip-word takes several words separated by "|": a skip holding any of
// them is allowed, a skip holding none is a difference.
func TestCompareSkipWords(t *testing.T) {
	direct := stream(
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
		`{"Action":"pass","Package":"p","Test":"TestC"}`,
	)
	worker := stream(
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    g.go:1: outside declared domain: dtype bf16\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    g.go:2: through a worker: host map\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"    g.go:3: no library\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestC"}`,
	)
	skips, _, diffs := compare(direct, worker, "through a worker|outside declared domain", nil)
	if len(skips) != 2 || !strings.Contains(skips[0], "outside declared domain: dtype bf16") || !strings.Contains(skips[1], "through a worker: host map") {
		t.Errorf("skips %q: expected TestA and TestB with their reasons", skips)
	}
	if len(diffs) != 1 || !strings.HasPrefix(diffs[0], "p TestC: pass directly, skip through the worker") {
		t.Errorf("differences %q: expected TestC's skip without an allowed word", diffs)
	}
}
