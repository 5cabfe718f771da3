package mutate

import (
	"io"
	"testing"
	"time"
)

// RunUntilFail stops at the first failure, names the failing subtest (its parent's line comes
// first), counts started tests, and lets a passing run finish.
func TestRunUntilFail(t *testing.T) {
	script := `echo "=== RUN   TestA"; echo "=== RUN   TestA/b"; echo "--- FAIL: TestA (0.01s)"; echo "    --- FAIL: TestA/b (0.00s)"; sleep 20`
	t0 := time.Now()
	r := RunUntilFail("", "sh", []string{"-c", script}, nil, 0, io.Discard)
	if !r.Killed || r.By != "TestA/b" || r.Cases != 2 || time.Since(t0) > 10*time.Second {
		t.Errorf("failing run: %+v after %v, expected killed by TestA/b, 2 cases, well before the 20 s sleep", r, time.Since(t0))
	}
	r = RunUntilFail("", "sh", []string{"-c", `echo "=== RUN   TestA"; echo "--- PASS: TestA"; echo "fuzz: elapsed: 1s, execs: 42 (42/sec)"`}, nil, 0, io.Discard)
	if r.Killed || r.Cases != 42 {
		t.Errorf("passing run: %+v, expected not killed and 42 cases (the fuzzer's execs)", r)
	}
	// A parallel subtest's failure message streams first: killed then, named by the last
	// test continued, long before the parent's "--- FAIL" lines.
	t0 = time.Now()
	r = RunUntilFail("", "sh", []string{"-c", `echo "=== RUN   TestB"; echo "=== CONT  TestB/x"; echo "    f.go:1: bad value"; echo "        [seed 1; reproduce: go test …]"; sleep 20; echo "--- FAIL: TestB"`}, nil, 0, io.Discard)
	if !r.Killed || r.By != "TestB/x" || time.Since(t0) > 10*time.Second {
		t.Errorf("streamed failure: %+v after %v, expected killed by TestB/x at once", r, time.Since(t0))
	}
	// When the "--- FAIL" lines follow within the grace, they name the failing subtest, not the
	// parallel sibling that happened to continue last (mutant 34's row named a portable subtest).
	r = RunUntilFail("", "sh", []string{"-c", `echo "=== RUN   TestC"; echo "=== CONT  TestC/y/wmma"; echo "=== CONT  TestC/z/portable"; echo "        [seed 1; reproduce: go test …]"; echo "--- FAIL: TestC"; echo "    --- FAIL: TestC/y"; echo "        --- FAIL: TestC/y/wmma"; sleep 20`}, nil, 0, io.Discard)
	if !r.Killed || r.By != "TestC/y/wmma" {
		t.Errorf("streamed failure, then its FAIL lines: %+v, expected killed by TestC/y/wmma", r)
	}
	// Interleaved parallel output: "=== NAME" names whose lines follow (mutant 39's row on the
	// H200 named a wmma-model subtest that had only started, before this).
	r = RunUntilFail("", "sh", []string{"-c", `echo "=== RUN   TestD"; echo "=== NAME  TestD/y/mma"; echo "=== RUN   TestD/z/wmma-model"; echo "=== NAME  TestD/y/mma"; echo "    f.go:1: bad value"; echo "        [seed 1; reproduce: go test …]"; sleep 20`}, nil, 0, io.Discard)
	if !r.Killed || r.By != "TestD/y/mma" {
		t.Errorf("streamed failure after a NAME line: %+v, expected killed by TestD/y/mma", r)
	}
	r = RunUntilFail("", "sh", []string{"-c", "sleep 20"}, nil, 200*time.Millisecond, io.Discard)
	if r.Killed || r.After > 10*time.Second {
		t.Errorf("budget: %+v, expected stopped at the budget and not counted as a kill", r)
	}
}
