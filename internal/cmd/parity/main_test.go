package main

import (
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
	skips, diffs := compare(direct, worker, "through a worker")
	if len(skips) != 2 || !strings.Contains(skips[0], "p TestB: x_test.go:3: through a worker (host:a.py): no context") || !strings.Contains(skips[1], "p TestB/only") {
		t.Errorf("skips %q: expected TestB and TestB/only with their reasons", skips)
	}
	want := []string{"p TestC: pass directly, skip through the worker", "p TestD: fail directly, fail through the worker (a failure)",
		"p TestE: pass directly, absent through the worker"}
	if strings.Join(diffs, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences %q, expected %q", diffs, want)
	}
}
