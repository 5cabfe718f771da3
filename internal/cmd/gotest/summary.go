package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
)

// record is what one gotest run appends to its -summary file: one JSON object a line, so that
// the runs of one `make test` (several go test invocations, some in sub-makes) add up to one
// closing verdict (-total).
type record struct {
	Args     string   `json:"args"`     // go test's arguments
	Packages []string `json:"packages"` // packages that ran tests
	NoTests  int      `json:"no_tests"` // packages without test files
	Passed   int      `json:"passed"`   // tests and subtests
	Skipped  int      `json:"skipped"`
	Failures []string `json:"failures"` // printer.failedTests
	Exit     int      `json:"exit"`     // gotest's exit status
	Seconds  float64  `json:"seconds"`
}

// newRecord is the record of a finished run.
func newRecord(args []string, p *printer, exit int, wall time.Duration) record {
	return record{
		Args: strings.Join(args, " "), Packages: p.tested, NoTests: p.noTests, Passed: p.passed,
		Skipped: p.skipped, Failures: p.failedTests, Exit: exit, Seconds: wall.Seconds(),
	}
}

// appendRecord adds r to the file at path as one line.
func appendRecord(path string, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readRecords reads a -summary file; a missing file is no run (a step before the first go test
// failed).
func readRecords(path string) ([]record, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rs []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", path, n, err)
		}
		rs = append(rs, r)
	}
	return rs, sc.Err()
}

// maxListed is how many failures the closing verdict names; the rest are counted.
const maxListed = 10

// total prints the closing verdict of a run made of several gotest runs (rs) and other steps,
// which exited with status exit after wall: a line with the label, the packages, the go test runs
// and the time, then, alone on the last line, "WORD: N passed, M failed" (WORD the label's last
// word), the form CI reads. A step that failed outside go test (exit ≠ 0 with no go test failure:
// gofmt, vet, a build, a check) counts as one failure, so that the last line never says
// "0 failed" for a run that failed. It returns the exit status for the run: 0 when it passed,
// else exit, or 1.
func total(w io.Writer, label string, rs []record, exit int, wall time.Duration) int {
	pkgs := map[string]bool{}
	var passed, skipped int
	var failures, failedRuns []string
	for _, r := range rs {
		for _, p := range r.Packages {
			pkgs[p] = true
		}
		passed += r.Passed
		skipped += r.Skipped
		failures = append(failures, r.Failures...)
		if r.Exit != 0 {
			failedRuns = append(failedRuns, "go test "+r.Args)
			if len(r.Failures) == 0 {
				failures = append(failures, fmt.Sprintf("go test %s (exit %d)", r.Args, r.Exit))
			}
		}
	}
	if exit != 0 && len(failedRuns) == 0 {
		failures = append(failures, fmt.Sprintf("a step outside go test (exit %d; its output is above)", exit))
	}
	tests := fmt.Sprintf("%d tests and subtests passed", passed)
	if skipped > 0 {
		tests += fmt.Sprintf(", %d skipped", skipped)
	}
	facts := fmt.Sprintf("%s, %s, %s, %v", plural(len(pkgs), "package"), plural(len(rs), "go test run"), tests, wall.Round(time.Second))
	word := label
	if i := strings.LastIndexByte(label, ' '); i >= 0 {
		word = label[i+1:]
	}
	if len(failures) == 0 {
		fmt.Fprintf(w, "%s: passed (%s)\n", label, facts)
		fmt.Fprintf(w, "%s: %d passed, 0 failed\n", word, passed)
		return 0
	}
	listed := slices.Clone(failures)
	if len(listed) > maxListed {
		listed = append(listed[:maxListed], fmt.Sprintf("and %d more", len(failures)-maxListed))
	}
	fmt.Fprintf(w, "%s: FAILED: %s (%s)\n", label, strings.Join(listed, "; "), facts)
	fmt.Fprintf(w, "%s: %d passed, %d failed\n", word, passed, len(failures))
	if exit != 0 {
		return exit
	}
	return 1
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
