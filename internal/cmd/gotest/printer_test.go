package main

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// replay feeds a recorded `go test -json` stream to a printer.
func replay(t *testing.T, path string, total int) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	t0 := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	p := newPrinter(&b, total, t0)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p.line(sc.Text(), t0)
	}
	p.finish(t0.Add(4 * time.Second))
	return b.String()
}

// TestPrinterMixed replays a run of six packages (testdata/mixed.json, recorded from
// `go test -json -timeout 3s ./...`): a failing subtest, a panic, a build error, no test files, a
// pass and a timeout. Every failure's output is printed complete; a passing test's is not.
func TestPrinterMixed(t *testing.T) {
	out := replay(t, "testdata/mixed.json", 6)
	t.Log("\n" + out)
	for _, want := range []string{
		// the failed subtest: its log lines, then its result line, before the package's line
		"=== RUN   TestFail/sub\n    a_test.go:7: some log\n    a_test.go:7: bad value 3\n--- FAIL: TestFail/sub",
		"[1/6] FAIL example.com/gt/a  0.0s  2 passed, 1 skipped, 2 FAILED\n",
		// the panic with its stack
		"panic: assignment to entry in nil map", "b_test.go:5 +0x",
		"FAIL example.com/gt/b  0.0s  0 passed, 1 FAILED\n",
		// the build error, then the package's line
		"c/c_test.go:5:32: undefined: undefined\n", "FAIL example.com/gt/c  0.0s  build failed: example.com/gt/c [example.com/gt/c.test]\n",
		"?    example.com/gt/d  [no test files]\n",
		"ok   example.com/gt/f  0.0s  2 passed\n",
		// the timeout: the test cut short never ends, its output comes with the package's failure
		"e_test.go:8: starting\npanic: test timed out after 3s",
		"[6/6] FAIL example.com/gt/e  3.0s  0 passed\n",
		"go test: 1 ok, 1 without tests, 4 FAILED (example.com/gt/a, example.com/gt/b, example.com/gt/c, example.com/gt/e); 4s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, unwanted := range []string{"=== RUN   TestOK", "=== RUN   TestFine", "FAIL\texample.com", "{\"Time\""} {
		if strings.Contains(out, unwanted) {
			t.Errorf("output has %q", unwanted)
		}
	}
	if i, j := strings.Index(out, "bad value 3"), strings.Index(out, "[1/6] FAIL example.com/gt/a"); i < 0 || j < i {
		t.Error("the failure's output does not come before its package's line")
	}
}

// The still-running line names each package running, its time, its latest test and how far the
// run is; nothing is printed when nothing runs.
func TestHeartbeat(t *testing.T) {
	var b strings.Builder
	t0 := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	p := newPrinter(&b, 3, t0)
	p.heartbeat(t0)
	if b.Len() != 0 {
		t.Errorf("nothing running, printed %q", b.String())
	}
	for _, l := range []string{
		`{"Action":"start","Package":"m/k"}`,
		`{"Action":"run","Package":"m/k","Test":"TestA"}`,
		`{"Action":"pass","Package":"m/k","Test":"TestA"}`,
		`{"Action":"run","Package":"m/k","Test":"TestDecode"}`,
		`{"Action":"run","Package":"m/k","Test":"TestDecode/k3v4"}`,
		`{"Action":"run","Package":"m/k","Test":"TestStore"}`,
		`{"Action":"run","Package":"m/k","Test":"TestStore/x"}`,
		`{"Action":"start","Package":"m/o"}`,
		`{"Action":"pass","Package":"m/o","Elapsed":1.5}`,
	} {
		p.line(l, t0.Add(5*time.Second))
	}
	p.heartbeat(t0.Add(95 * time.Second))
	want := regexp.MustCompile(`(?m)^go test: 1m35s, 1 of 3 packages done; running m/k \(1m30s, TestStore/x and 1 more; 1 passed\)$`)
	if !want.MatchString(b.String()) {
		t.Errorf("got\n%s", b.String())
	}
}

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args  []string
		goBin string
		every time.Duration
		rest  string
	}{
		{[]string{"./..."}, "go", 30 * time.Second, "./..."},
		{[]string{"-go", "/usr/local/go/bin/go", "-every=5s", "-short", "./grids/"}, "/usr/local/go/bin/go", 5 * time.Second, "-short ./grids/"},
		{[]string{"--every", "1m", "--", "-go", "x"}, "go", time.Minute, "-go x"},
		{[]string{"-count=1", "-timeout", "60m", "./grids/"}, "go", 30 * time.Second, "-count=1 -timeout 60m ./grids/"},
	} {
		o, rest, err := parseArgs(c.args)
		if err != nil || o.goBin != c.goBin || o.every != c.every || strings.Join(rest, " ") != c.rest {
			t.Errorf("parseArgs(%q) = %q, %v, %q, %v", c.args, o.goBin, o.every, rest, err)
		}
	}
	o, rest, err := parseArgs([]string{"-summary", "s.jsonl", "--", "-short", "./fuzz/"})
	if err != nil || o.summary != "s.jsonl" || o.total != "" || strings.Join(rest, " ") != "-short ./fuzz/" {
		t.Errorf("-summary: %+v, %q, %v", o, rest, err)
	}
	o, rest, err = parseArgs([]string{"-total", "s.jsonl", "-exit", "2", "-since=1700000000", "-label", "make emu-test"})
	if err != nil || o.total != "s.jsonl" || o.exit != 2 || o.since.Unix() != 1700000000 || o.label != "make emu-test" || len(rest) != 0 {
		t.Errorf("-total: %+v, %q, %v", o, rest, err)
	}
	for _, bad := range [][]string{{"-every"}, {"-every", "0s"}, {"-every=soon"}, {"-exit", "x"}, {"-since", "yesterday"}, {"-summary"}} {
		if _, _, err := parseArgs(bad); err == nil {
			t.Errorf("parseArgs(%q) accepted", bad)
		}
	}
}
