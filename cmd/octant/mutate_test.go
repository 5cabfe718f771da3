package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadMutants(t *testing.T) {
	ms, err := readMutants("../../csrc/include/octave_mutant.h")
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].ID != 1 || ms[0].Name != "OCT_MUT_REDUCE_PAD_UNWRITTEN" || ms[0].Op != "reduce" || ms[0].Defect == "" {
		t.Errorf("first mutant %+v, expected id 1 OCT_MUT_REDUCE_PAD_UNWRITTEN (reduce) with its comment", ms[0])
	}
	dir := t.TempDir()
	dup := filepath.Join(dir, "dup.h")
	os.WriteFile(dup, []byte("#define OCT_MUT_A_B 3  // x\n#define OCT_MUT_C_D 3\n"), 0o644)
	if _, err := readMutants(dup); err == nil || !strings.Contains(err.Error(), "id 3 used by") {
		t.Errorf("duplicate ids: %v", err)
	}
	if _, err := parseIDs("1,99", ms); err == nil {
		t.Error("--only 99 accepted")
	}
	if sel, err := parseIDs("0, 1", ms); err != nil || !sel[0] || !sel[1] {
		t.Errorf("--only 0,1: %v %v", sel, err)
	}
}

// runUntilFail stops at the first failure, names the failing subtest (its parent's line comes
// first), counts started tests, and lets a passing run finish.
func TestRunUntilFail(t *testing.T) {
	script := `echo "=== RUN   TestA"; echo "=== RUN   TestA/b"; echo "--- FAIL: TestA (0.01s)"; echo "    --- FAIL: TestA/b (0.00s)"; sleep 20`
	t0 := time.Now()
	r := runUntilFail("sh", []string{"-c", script}, nil, 0, io.Discard)
	if !r.Killed || r.By != "TestA/b" || r.Cases != 2 || time.Since(t0) > 10*time.Second {
		t.Errorf("failing run: %+v after %v, expected killed by TestA/b, 2 cases, well before the 20 s sleep", r, time.Since(t0))
	}
	r = runUntilFail("sh", []string{"-c", `echo "=== RUN   TestA"; echo "--- PASS: TestA"; echo "fuzz: elapsed: 1s, execs: 42 (42/sec)"`}, nil, 0, io.Discard)
	if r.Killed || r.Cases != 42 {
		t.Errorf("passing run: %+v, expected not killed and 42 cases (the fuzzer's execs)", r)
	}
	// A parallel subtest's failure message streams first: killed then, named by the last
	// test continued, long before the parent's "--- FAIL" lines.
	t0 = time.Now()
	r = runUntilFail("sh", []string{"-c", `echo "=== RUN   TestB"; echo "=== CONT  TestB/x"; echo "    f.go:1: bad value"; echo "        [seed 1; reproduce: go test …]"; sleep 20; echo "--- FAIL: TestB"`}, nil, 0, io.Discard)
	if !r.Killed || r.By != "TestB/x" || time.Since(t0) > 10*time.Second {
		t.Errorf("streamed failure: %+v after %v, expected killed by TestB/x at once", r, time.Since(t0))
	}
	r = runUntilFail("sh", []string{"-c", "sleep 20"}, nil, 200*time.Millisecond, io.Discard)
	if r.Killed || r.After > 10*time.Second {
		t.Errorf("budget: %+v, expected stopped at the budget and not counted as a kill", r)
	}
}
