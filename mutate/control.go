package mutate

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// ExactRunPattern is the -test.run pattern that selects exactly the test name (a path
// "TestX/sub/…", as test events name it), its subtests with it, and no other test: each element
// of the path quoted (regexp.QuoteMeta: subtest names such as len[80000] or scale0.0625 hold
// metacharacters) and anchored at both ends, since -test.run matches each element of a test's
// path against its own element of the pattern and, unanchored, would select every sibling whose
// name contains it too. QuoteMeta leaves no unescaped '/', '|', '[' or '(', so the testing
// package splits the pattern exactly at the path's slashes.
func ExactRunPattern(name string) string {
	el := strings.Split(name, "/")
	for i, e := range el {
		el[i] = "^" + regexp.QuoteMeta(e) + "$"
	}
	return strings.Join(el, "/")
}

// Control is a mutant's kill checked on the unmutated build (the control): the killing test run
// alone, with the phase's flags, on the library without the defect. A kill counts only when that
// test passes there: a test that fails, crashes or does not pass on the unmutated build fails for
// a reason other than the defect (a broken test, an input it cannot find), so its failure on the
// mutant is no evidence of a kill.
type Control struct {
	Kill      string      `json:"kill"`           // the kill it checks: "grid: TestX/…" or "fuzz: FuzzX"
	Lib       string      `json:"lib"`            // the unmutated build's library ("" when it did not build)
	Dir       string      `json:"dir,omitempty"`  // where the test binary ran ("": the working directory)
	Args      []string    `json:"args,omitempty"` // the test binary's arguments: -test.run selects the killing test alone
	Run       *KillResult `json:"run,omitempty"`  // the run on the control; nil when none ran (the control did not build)
	Confirmed bool        `json:"confirmed"`      // the killing test passed on the control
	Detail    string      `json:"detail"`         // what the control's run found, in words
}

// controlLib is the unmutated build that confirms the kills of a run: its library (absolute), or
// why it did not build.
type controlLib struct {
	lib string
	err error
}

// confirmKill re-runs the test that killed row's library on the control ctl: for a grid kill the
// kernel test binary kt with gridArgs (the grid phase's -short and -test.count flags) and
// -test.run selecting exactly that test (ExactRunPattern), in grids/ (gridsDir); for a fuzz kill
// the fuzz test binary ft with -test.run=^FuzzX$ and no -test.fuzz, in fuzz/ (fuzzDir), which
// replays the target's seed corpus and the failing inputs the fuzzer wrote there. The control's
// reproducers go to <out>/regressions/m<id>-control. Its output goes to log after a header line.
func confirmKill(row *Row, ctl controlLib, ctlSpec, kt, ft string, gridArgs []string, out string, log io.Writer) *Control {
	c := &Control{Lib: ctl.lib}
	var bin, test string
	if row.Grid.Killed {
		test, c.Kill = row.Grid.By, "grid: "+row.Grid.By
		bin, c.Dir = gridsDir(kt)
		c.Args = append(slices.Clone(gridArgs), "-test.run="+ExactRunPattern(test))
	} else {
		// A fuzz kill names the target (a seed's failure too); its run replays all its inputs.
		test, _, _ = strings.Cut(row.Fuzz.By, "/")
		c.Kill = "fuzz: " + row.Fuzz.By
		bin, c.Dir = fuzzDir(ft)
		c.Args = []string{"-test.count=1", "-test.run=" + ExactRunPattern(test)}
	}
	if ctl.err != nil {
		c.Detail = fmt.Sprintf("%s not re-run on the unmutated build, which did not build (%v): expected it to pass there", test, ctl.err)
		return c
	}
	fmt.Fprintf(log, "\n== control: %s alone on the unmutated build %s: %s %s (in %s)\n", test, ctl.lib, bin, strings.Join(c.Args, " "), shownDir(c.Dir))
	res, passed := runTests(c.Dir, bin, c.Args, phaseEnv(ctlSpec, out, fmt.Sprintf("m%d-control", row.ID)), 0, log)
	c.Run = &res
	c.Confirmed, c.Detail = controlVerdict(test, res, passed)
	return c
}

// shownDir is dir as a log line shows it: "." for the working directory.
func shownDir(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// controlVerdict decides a control's run of test: confirmed when test itself passed and nothing
// failed or erred; otherwise what was found instead.
func controlVerdict(test string, res KillResult, passed []string) (bool, string) {
	switch {
	case res.Killed:
		what := "failed there"
		if res.By != test {
			what = res.By + " failed there"
		}
		if res.Message != "" {
			what += ": " + res.Message
		}
		return false, fmt.Sprintf("%s also fails on the unmutated build (%s): expected it to pass without the defect", test, what)
	case res.Error != "":
		return false, fmt.Sprintf("%s did not run on the unmutated build (%s): expected it to pass there", test, res.Error)
	case !slices.Contains(passed, test):
		return false, fmt.Sprintf("%s did not pass on the unmutated build: expected it to pass, found %d tests passed and %d skipped", test, res.Passed, res.Skipped)
	}
	return true, test + " passes on the unmutated build"
}
