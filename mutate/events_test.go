package mutate

import (
	"bufio"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// results keeps the events that decide (run, pass, fail, skip of a test), as "action test".
func results(es []Event) []string {
	var out []string
	for _, e := range es {
		if e.Test != "" && slices.Contains([]string{"run", "pass", "fail", "skip"}, e.Action) {
			out = append(out, e.Action+" "+e.Test)
		}
	}
	return out
}

// TestFramerMatchesTest2json: the events framer reads from a test binary's -test.v=test2json
// output are those `go tool test2json` writes for the same bytes (testdata: a Go test binary's
// output, testdata/test2json-source.go.txt its source: a passing test that prints a "--- FAIL:"
// line, a skip, parallel subtests of which one fails with a reproduce line, output without a
// newline before a subtest).
func TestFramerMatchesTest2json(t *testing.T) {
	raw, err := os.Open("testdata/test2json-raw.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var got []Event
	f := &framer{emit: func(e Event) { got = append(got, e) }}
	sc := bufio.NewScanner(raw)
	for sc.Scan() {
		f.line(sc.Text())
	}
	js, err := os.Open("testdata/test2json-events.json")
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	want, err := ReadEvents(js)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := results(got), results(want); !slices.Equal(g, w) {
		t.Errorf("framer's results:\n%s\ntest2json's:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	for _, e := range got {
		if e.Action == "output" && e.Test == "TestPar/b" && strings.Contains(e.Output, "bad value") {
			return
		}
	}
	t.Error("the failing subtest's message is not attributed to it")
}

// stream is a `go test -json` stream of the given lines.
func stream(t *testing.T, lines ...string) []Event {
	t.Helper()
	es, err := ReadEvents(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestDecideIgnoresMessages: the kill decision rests on the events' actions alone. A failing
// test is a kill by it whatever its message says (a reproduce line renamed, or none); a passing
// test's output that looks like a failure ("--- FAIL:", "[rapid] failed", a reproduce line) is
// not a kill.
func TestDecideIgnoresMessages(t *testing.T) {
	failing := func(msg string) []Event {
		return stream(t,
			`{"Action":"run","Test":"TestDecodeGrid"}`,
			`{"Action":"run","Test":"TestDecodeGrid/k3v4/mma"}`,
			`{"Action":"output","Test":"TestDecodeGrid/k3v4/mma","Output":"    decode_test.go:88: decode mma: Fail: row 0 head 1 dim 3\n"}`,
			`{"Action":"output","Test":"TestDecodeGrid/k3v4/mma","Output":"`+msg+`\n"}`,
			`{"Action":"fail","Test":"TestDecodeGrid/k3v4/mma","Elapsed":0.1}`,
			`{"Action":"fail","Test":"TestDecodeGrid","Elapsed":0.2}`,
			`{"Action":"fail"}`)
	}
	for _, msg := range []string{"        [seed 7; reproduce: go test -run TestDecodeGrid]", "        (seed 7) to reproduce: go test -run TestDecodeGrid", ""} {
		r := Decide(failing(msg), "grids.test", errors.New("exit status 1"), false)
		if !r.Killed || r.By != "TestDecodeGrid/k3v4/mma" || r.Outcome() != "killed" || !strings.Contains(r.Message, "decode mma: Fail") {
			t.Errorf("message %q: %+v: expected killed by TestDecodeGrid/k3v4/mma, the first output line as the message", msg, r)
		}
	}
	passing := stream(t,
		`{"Action":"run","Test":"TestReplay"}`,
		`{"Action":"output","Test":"TestReplay","Output":"--- FAIL: TestChild (0.00s)\n"}`,
		`{"Action":"output","Test":"TestReplay","Output":"[rapid] failed after 3 tests\n"}`,
		`{"Action":"output","Test":"TestReplay","Output":"    [seed 1; reproduce: go test]\n"}`,
		`{"Action":"pass","Test":"TestReplay","Elapsed":0.1}`,
		`{"Action":"pass"}`)
	if r := Decide(passing, "grids.test", nil, false); r.Killed || r.Outcome() != "survived" || r.Passed != 1 {
		t.Errorf("a passing test that prints failure-like lines: %+v: expected survived, 1 test passed", r)
	}
}

// TestDecideNoEvidence: a run where every test skipped, where none ran, or where a parent passed
// with all its subtests skipped, is no evidence: neither a kill nor a survival.
func TestDecideNoEvidence(t *testing.T) {
	for name, es := range map[string][]Event{
		"only skips": stream(t,
			`{"Action":"run","Test":"TestDecodeGrid"}`,
			`{"Action":"output","Test":"TestDecodeGrid","Output":"    env_test.go:20: OCTANT_LIB not set\n"}`,
			`{"Action":"skip","Test":"TestDecodeGrid"}`,
			`{"Action":"run","Test":"TestStoreGrid"}`,
			`{"Action":"skip","Test":"TestStoreGrid"}`,
			`{"Action":"pass"}`),
		"none ran": stream(t, `{"Action":"output","Output":"testing: warning: no tests to run\n"}`, `{"Action":"pass"}`),
		"subtests skipped": stream(t,
			`{"Action":"run","Test":"TestWMMAModel"}`,
			`{"Action":"run","Test":"TestWMMAModel/k3v4"}`,
			`{"Action":"skip","Test":"TestWMMAModel/k3v4"}`,
			`{"Action":"pass","Test":"TestWMMAModel"}`,
			`{"Action":"pass"}`),
	} {
		if r := Decide(es, "grids.test", nil, false); r.Killed || r.Error != "" || r.Outcome() != "no evidence" {
			t.Errorf("%s: %+v, outcome %q: expected no evidence", name, r, r.Outcome())
		}
	}
}

// TestDecideExitWithoutResult: a non-zero exit while a test runs (a crash in the library) fails
// that test, the innermost one running; with no test running it is an error (the binary or its
// library could not start), not a kill; stopped at the budget, it is neither.
func TestDecideExitWithoutResult(t *testing.T) {
	crash := stream(t,
		`{"Action":"run","Test":"TestPrefillGrid"}`,
		`{"Action":"run","Test":"TestPrefillGrid/k3v3/portable"}`,
		`{"Action":"output","Test":"TestPrefillGrid/k3v3/portable","Output":"SIGSEGV: segmentation violation\n"}`)
	if r := Decide(crash, "grids.test", errors.New("exit status 2"), false); !r.Killed || r.By != "TestPrefillGrid/k3v3/portable" {
		t.Errorf("crash while a test runs: %+v: expected killed by TestPrefillGrid/k3v3/portable", r)
	}
	setup := stream(t, `{"Action":"output","Output":"cannot open build/liboctave_cuda_m3.so: no such file\n"}`)
	if r := Decide(setup, "grids.test", errors.New("exit status 1"), false); r.Killed || r.Outcome() != "error" || !strings.Contains(r.Error, "exit status 1 with no test failed or running") {
		t.Errorf("exit before any test: %+v: expected an error, not a kill", r)
	}
	if r := Decide(crash, "fuzz.test", errors.New("signal: killed"), true); r.Killed || r.Error != "" {
		t.Errorf("stopped at the budget: %+v: expected neither a kill nor an error", r)
	}
}

// TestReadEventsRejectsText: a stream that is not go test -json is an error, not an empty run.
func TestReadEventsRejectsText(t *testing.T) {
	if _, err := ReadEvents(strings.NewReader("--- FAIL: TestX (0.00s)\n")); err == nil || !strings.Contains(err.Error(), "expected one go test -json object per line") {
		t.Errorf("plain text: %v", err)
	}
}

// TestRunUntilFailStructured runs fake test binaries that print as a Go test binary does under
// -test.v=test2json (framing lines marked with ^V): only the marked result lines decide. A passing
// test that prints "--- FAIL:" and a reproduce line is not a kill; a failure whose message has
// no reproduce line kills at its result line; a run of skips is no evidence; a non-zero exit
// before any test is an error.
func TestRunUntilFailStructured(t *testing.T) {
	run := func(script string, budget time.Duration) KillResult {
		return RunUntilFail("", "sh", []string{"-c", strings.ReplaceAll(script, "^V", `\026`)}, nil, budget, io.Discard)
	}
	r := run(`printf '^V=== RUN   TestA\n--- FAIL: TestPrinted (0.00s)\n    [seed 1; reproduce: go test]\n[rapid] failed\n^V--- PASS: TestA (0.00s)\n^VPASS\n'`, 0)
	if r.Killed || r.Outcome() != "survived" || r.Passed != 1 {
		t.Errorf("a passing test printing failure-like lines: %+v: expected survived, 1 test passed", r)
	}
	t0 := time.Now()
	r = run(`printf '^V=== RUN   TestB\n^V=== RUN   TestB/x\n    f.go:1: the values differ\n^V--- FAIL: TestB/x (0.00s)\n'; sleep 20; printf '^V--- FAIL: TestB (20.00s)\n'`, 0)
	if !r.Killed || r.By != "TestB/x" || r.Message != "f.go:1: the values differ" || time.Since(t0) > 10*time.Second {
		t.Errorf("a failing subtest: %+v after %v: expected killed by TestB/x at its result line", r, time.Since(t0))
	}
	r = run(`printf '^V=== RUN   TestC\n    env_test.go:1: OCTANT_LIB not set\n^V--- SKIP: TestC (0.00s)\n^VPASS\n'`, 0)
	if r.Killed || r.Outcome() != "no evidence" || r.Skipped != 1 {
		t.Errorf("only skips: %+v: expected no evidence", r)
	}
	r = run(`echo "cannot load the library"; exit 3`, 0)
	if r.Killed || r.Outcome() != "error" {
		t.Errorf("exit 3 before any test: %+v: expected an error", r)
	}
	r = run(`printf '^V=== RUN   TestD\n'; sleep 20`, 200*time.Millisecond)
	if r.Killed || r.Error != "" || r.After > 10*time.Second {
		t.Errorf("budget: %+v: expected stopped at the budget, neither a kill nor an error", r)
	}
}

// TestReadFramed: a test binary's -test.v=test2json output read into events: framing lines
// become run, pass, fail and skip events of their tests, other lines output of the test running
// (text that looks like a result but carries no marker stays output).
func TestReadFramed(t *testing.T) {
	in := "\x16=== RUN   TestA\n    a_test.go:3: --- FAIL: TestFake\n\x16--- PASS: TestA (0.00s)\n\x16=== RUN   TestB\n\x16=== RUN   TestB/x\n    -rapid.seed=5\n\x16    --- FAIL: TestB/x (0.00s)\n\x16--- FAIL: TestB (0.00s)\n\x16=== RUN   TestC\n\x16--- SKIP: TestC (0.00s)\n\x16FAIL\n"
	events, err := ReadFramed(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if e.Action == "output" {
			got = append(got, e.Test+":"+strings.TrimSpace(e.Output))
			continue
		}
		got = append(got, e.Action+" "+e.Test)
	}
	want := []string{"run TestA", "TestA:a_test.go:3: --- FAIL: TestFake", "pass TestA", "run TestB", "run TestB/x", "TestB/x:-rapid.seed=5",
		"fail TestB/x", "fail TestB", "run TestC", "skip TestC", ":FAIL"}
	if !slices.Equal(got, want) {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
}
