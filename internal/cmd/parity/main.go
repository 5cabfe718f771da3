// Command parity compares the verdicts of two `go test -json` runs of the same tests: one on a
// kernel library directly, one through a worker (OCTANT_LIB=host:...capi.py?lib=...), as `make
// bridge-test` runs them. Every test and subtest must end the same way in both (pass, fail or
// skip), with one exception: a test that skips through the worker only, with a message that says
// so (a skip word: "through a worker"; -skip-word takes several, separated by "|", such as
// "through a worker|outside declared domain" for an adapter whose declaration narrows the
// contract), is listed with its reason and allowed. Any failure in either run is a difference too.
//
//	parity [-skip-word "through a worker"] [-exclude REGEXP] DIRECT.json WORKER.json
//
// -exclude leaves out the tests whose names match it (cases outside the implementation's
// domain: make torch-test's vLLM ops do not validate what the error grids ask), and a parent that
// fails through the worker only because of such subtests; they are listed.
//
// It prints both runs' counts, the tests skipped through the worker only with their reasons,
// and every difference. Exit status: 0 when the verdicts agree, 1 when they do not, 2 when a file
// cannot be read.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of go test -json.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// result is how one test ended and what it printed.
type result struct {
	action string // pass, fail or skip
	output []string
}

// run is the results of one go test -json stream, by package and test name.
type run map[string]*result

// read reads a go test -json stream.
func read(r io.Reader) (run, error) {
	out := run{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // go test's own lines (a build failure) are not events
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("line %d: %v; expected a go test -json event", n, err)
		}
		if e.Test == "" {
			continue
		}
		key := e.Package + " " + e.Test
		res := out[key]
		if res == nil {
			res = &result{}
			out[key] = res
		}
		switch e.Action {
		case "output":
			res.output = append(res.output, strings.TrimRight(e.Output, "\n"))
		case "pass", "fail", "skip":
			res.action = e.Action
		}
	}
	return out, sc.Err()
}

// counts are a run's passes, failures and skips.
func (r run) counts() (pass, fail, skip int) {
	for _, res := range r {
		switch res.action {
		case "pass":
			pass++
		case "fail":
			fail++
		case "skip":
			skip++
		}
	}
	return
}

// reason is the line of a skip's output that holds one of words ("|"-separated), trimmed, or "".
func (res *result) reason(words string) string {
	for _, l := range res.output {
		for _, w := range strings.Split(words, "|") {
			if w != "" && strings.Contains(l, w) {
				return strings.TrimSpace(l)
			}
		}
	}
	return ""
}

// excludedFailure reports whether the worker's failure of k comes from excluded subtests only:
// some failing subtest of k is excluded, and none that is not. (A test's own error beside them
// is then not told apart: the exclusion is for cases outside an implementation's domain.)
func excludedFailure(k string, worker run, exclude *regexp.Regexp) bool {
	some := false
	for name, res := range worker {
		if !strings.HasPrefix(name, k+"/") || res.action != "fail" {
			continue
		}
		if !exclude.MatchString(testName(name)) {
			if !excludedFailure(name, worker, exclude) {
				return false
			}
		}
		some = true
	}
	return some
}

// testName is the test part of a run's key ("package Test/sub").
func testName(k string) string {
	_, t, _ := strings.Cut(k, " ")
	return t
}

// compare returns the tests that skip through the worker only (name: reason), the tests left out
// by exclude (nil: none) whose verdicts differ, and every other difference between the runs, each
// a line. An excluded test is compared with nothing; neither is a parent whose failure through
// the worker comes from excluded subtests only.
func compare(direct, worker run, word string, exclude *regexp.Regexp) (skips, excluded, diffs []string) {
	names := map[string]bool{}
	for k := range direct {
		names[k] = true
	}
	for k := range worker {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		d, w := direct[k], worker[k]
		da, wa := "absent", "absent"
		if d != nil {
			da = d.action
		}
		if w != nil {
			wa = w.action
		}
		if exclude != nil && da != wa && (exclude.MatchString(testName(k)) || (wa == "fail" && excludedFailure(k, worker, exclude))) {
			excluded = append(excluded, fmt.Sprintf("%s: %s directly, %s through the worker", k, da, wa))
			continue
		}
		switch {
		case da == "fail" || wa == "fail":
			diffs = append(diffs, fmt.Sprintf("%s: %s directly, %s through the worker (a failure)", k, da, wa))
		case da == wa:
		case wa == "skip" && (da == "pass" || da == "absent") && w.reason(word) != "":
			skips = append(skips, fmt.Sprintf("%s: %s", k, w.reason(word)))
		default:
			diffs = append(diffs, fmt.Sprintf("%s: %s directly, %s through the worker", k, da, wa))
		}
	}
	return skips, excluded, diffs
}

func load(path string) (run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

func realMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("parity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	word := fs.String("skip-word", "through a worker", "the words of a skip message that allow a test to skip through the worker only (several separated by |)")
	excl := fs.String("exclude", "", "a regular expression of test names (Test/sub/...) left out of the comparison: cases outside the implementation's domain")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "usage: parity [-skip-word WORDS] [-exclude REGEXP] DIRECT.json WORKER.json")
		return 2
	}
	var exclude *regexp.Regexp
	if *excl != "" {
		var err error
		if exclude, err = regexp.Compile(*excl); err != nil {
			fmt.Fprintf(stderr, "parity: -exclude %q: %v; expected a regular expression of test names\n", *excl, err)
			return 2
		}
	}
	direct, err := load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "parity: %v\n", err)
		return 2
	}
	worker, err := load(fs.Arg(1))
	if err != nil {
		fmt.Fprintf(stderr, "parity: %v\n", err)
		return 2
	}
	dp, df, ds := direct.counts()
	wp, wf, ws := worker.counts()
	fmt.Fprintf(stdout, "parity: directly %d passed, %d failed, %d skipped; through the worker %d passed, %d failed, %d skipped (tests and subtests)\n",
		dp, df, ds, wp, wf, ws)
	skips, excluded, diffs := compare(direct, worker, *word, exclude)
	if len(skips) > 0 {
		fmt.Fprintf(stdout, "parity: %d skipped through the worker only:\n", len(skips))
		for _, s := range skips {
			fmt.Fprintf(stdout, "  %s\n", s)
		}
	}
	if len(excluded) > 0 {
		fmt.Fprintf(stdout, "parity: %d verdicts that differ left out by -exclude %q (outside the implementation's domain):\n", len(excluded), *excl)
		for _, s := range excluded {
			fmt.Fprintf(stdout, "  %s\n", s)
		}
	}
	if len(direct) == 0 || len(worker) == 0 {
		fmt.Fprintln(stdout, "parity: FAILED: a run has no tests")
		return 1
	}
	if len(diffs) > 0 {
		fmt.Fprintf(stdout, "parity: FAILED: %d differences:\n", len(diffs))
		for _, d := range diffs {
			fmt.Fprintf(stdout, "  %s\n", d)
		}
		return 1
	}
	fmt.Fprintln(stdout, "parity: the same verdicts")
	return 0
}
