package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// ciLast is the closing line CI recognises: "N passed, N failed" alone, after at most one word
// with a colon.
var ciLast = regexp.MustCompile(`^(\S+: )?\d+ passed, \d+ failed$`)

// lastLines is the last two lines of s.
func lastLines(t *testing.T, s string) (string, string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("fewer than two lines:\n%s", s)
	}
	return lines[len(lines)-2], lines[len(lines)-1]
}

// TestPrinterCounts: over a run the printer counts the tests passed and skipped (subtests
// included), the failures (a failed test not the parent of another failure; a failed package
// with no failed test) and the packages that ran tests (testdata/mixed.json).
func TestPrinterCounts(t *testing.T) {
	f, err := os.Open("testdata/mixed.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	t0 := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	p := newPrinter(&b, 6, t0)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p.line(sc.Text(), t0)
	}
	p.finish(t0)
	if p.passed != 4 || p.skipped != 1 {
		t.Errorf("passed %d, skipped %d; want 4 (a: 2, f: 2) and 1", p.passed, p.skipped)
	}
	wantFail := []string{
		"example.com/gt/a TestFail/sub", // not its parent TestFail too
		"example.com/gt/b TestPanic",
		"example.com/gt/c (build failed)",
		"example.com/gt/e (no test reported a failure: a panic or a timeout, output above)",
	}
	got := slices.Clone(p.failedTests)
	slices.Sort(got)
	if !slices.Equal(got, wantFail) {
		t.Errorf("failures %q\nwant %q", got, wantFail)
	}
	tested := slices.Sorted(slices.Values(p.tested))
	if want := []string{"example.com/gt/a", "example.com/gt/b", "example.com/gt/c", "example.com/gt/e", "example.com/gt/f"}; !slices.Equal(tested, want) {
		t.Errorf("packages that ran %q, want %q", tested, want)
	}
}

// TestTotal: the closing verdict over several runs. The last line is "test: N passed, M failed",
// alone, in the form CI reads; the line before it names the packages (each once), the go test
// runs and the time, or the failures. A step failing outside go test counts as a failure, so a
// failed run never ends on "0 failed".
func TestTotal(t *testing.T) {
	ok1 := record{Args: "./...", Packages: []string{"m/a", "m/b"}, Passed: 100, Skipped: 3}
	ok2 := record{Args: "-short ./b/", Packages: []string{"m/b"}, Passed: 20}
	bad := record{Args: "-short ./c/", Packages: []string{"m/c"}, Passed: 5, Failures: []string{"m/c TestX/y", "m/c (build failed)"}, Exit: 1}
	for _, c := range []struct {
		name     string
		rs       []record
		exit     int
		code     int
		pre, end string
	}{
		{"passed", []record{ok1, ok2}, 0, 0, "make test: passed (2 packages, 2 go test runs, 120 tests and subtests passed, 3 skipped, 19m32s)", "test: 120 passed, 0 failed"},
		{"go test failed", []record{ok1, bad}, 2, 2, "make test: FAILED: m/c TestX/y; m/c (build failed) (3 packages, 2 go test runs, 105 tests and subtests passed, 3 skipped, 19m32s)", "test: 105 passed, 2 failed"},
		{"vet failed", nil, 2, 2, "make test: FAILED: a step outside go test (exit 2; its output is above) (0 packages, 0 go test runs, 0 tests and subtests passed, 19m32s)", "test: 0 passed, 1 failed"},
		{"exit 0, failure recorded", []record{bad}, 0, 1, "make test: FAILED: m/c TestX/y; m/c (build failed) (1 package, 1 go test run, 5 tests and subtests passed, 19m32s)", "test: 5 passed, 2 failed"},
	} {
		var b strings.Builder
		code := total(&b, "make test", c.rs, c.exit, 19*time.Minute+32*time.Second+400*time.Millisecond)
		pre, end := lastLines(t, b.String())
		if code != c.code || pre != c.pre || end != c.end || !ciLast.MatchString(end) {
			t.Errorf("%s: exit %d, closing lines\n%s\n%s\nwant exit %d,\n%s\n%s", c.name, code, pre, end, c.code, c.pre, c.end)
		}
	}
	var many []record
	for range 12 {
		many = append(many, bad)
	}
	var b strings.Builder
	total(&b, "make emu-test", many, 1, time.Second)
	pre, end := lastLines(t, b.String())
	if !strings.Contains(pre, "; and 14 more (") || end != "emu-test: 60 passed, 24 failed" {
		t.Errorf("closing lines\n%s\n%s", pre, end)
	}
}

// TestSummaryFile: each run appends one line; -total reads them all back; no file is no run.
func TestSummaryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.jsonl")
	if rs, err := readRecords(path); err != nil || len(rs) != 0 {
		t.Fatalf("missing file: %v, %v", rs, err)
	}
	var b strings.Builder
	p := newPrinter(&b, 1, time.Now())
	for _, l := range []string{
		`{"Action":"start","Package":"m/k"}`,
		`{"Action":"run","Package":"m/k","Test":"TestA"}`,
		`{"Action":"pass","Package":"m/k","Test":"TestA"}`,
		`{"Action":"run","Package":"m/k","Test":"TestB"}`,
		`{"Action":"skip","Package":"m/k","Test":"TestB"}`,
		`{"Action":"pass","Package":"m/k","Elapsed":1.5}`,
	} {
		p.line(l, time.Now())
	}
	p.finish(time.Now())
	want := newRecord([]string{"-short", "./k/"}, p, 0, 2*time.Second)
	for range 2 {
		if err := appendRecord(path, want); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := readRecords(path)
	if err != nil || len(rs) != 2 {
		t.Fatalf("%d records, %v", len(rs), err)
	}
	if r := rs[1]; r.Args != "-short ./k/" || !slices.Equal(r.Packages, []string{"m/k"}) || r.Passed != 1 || r.Skipped != 1 || len(r.Failures) != 0 || r.Seconds != 2 {
		t.Errorf("read back %+v", r)
	}
	os.WriteFile(path, []byte("{not json\n"), 0o644)
	if _, err := readRecords(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a bad line: %v", err)
	}
}

// TestSummaryEndToEnd: gotest built and run as make test runs it, twice with -summary on a module
// of one passing and one failing package, then -total: the last line is CI's form with the counts
// of both runs, and the exit status is the failure's.
func TestSummaryEndToEnd(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not found")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gotest")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mod := filepath.Join(dir, "m")
	for path, src := range map[string]string{
		"go.mod":           "module example.com/m\n\ngo 1.22\n",
		"a/a_test.go":      "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) { t.Run(\"sub\", func(t *testing.T) {}) }\nfunc TestB(t *testing.T) { t.Skip(\"no\") }\n",
		"b/b_test.go":      "package b\n\nimport \"testing\"\n\nfunc TestBad(t *testing.T) { t.Error(\"bad\") }\nfunc TestOK(t *testing.T) {}\n",
		"c/c.go":           "package c\n",
		"a/testdata/.keep": "",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(mod, path)), 0o755)
		if err := os.WriteFile(filepath.Join(mod, path), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	summary := filepath.Join(dir, "summary.jsonl")
	gotest := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-count=1", "GOWORK=off")
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := gotest("-go", goBin, "-summary", summary, "--", "./a/", "./c/"); code != 0 {
		t.Fatalf("passing run: exit %d\n%s", code, out)
	}
	if out, code := gotest("-go", goBin, "-summary", summary, "--", "./..."); code != 1 {
		t.Fatalf("failing run: exit %d\n%s", code, out)
	}
	out, code := gotest("-total", summary, "-exit", "2", "-label", "make test")
	pre, end := lastLines(t, out)
	if code != 2 || end != "test: 5 passed, 1 failed" || !ciLast.MatchString(end) ||
		!strings.HasPrefix(pre, "make test: FAILED: example.com/m/b TestBad (2 packages, 2 go test runs, 5 tests and subtests passed, 2 skipped, ") {
		t.Errorf("-total: exit %d, output\n%s", code, out)
	}
}
