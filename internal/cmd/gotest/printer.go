package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string // build-output, build-fail
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string // on a package's fail: the package whose build failed
}

// pkgState is what is known of a package that has not ended.
type pkgState struct {
	start   time.Time
	output  []string            // the package's own output (no test)
	tests   map[string][]string // output of each test that has not ended
	running []string            // tests started and not ended, in start order
	passed  int
	skipped int
	failed  int
}

// printer turns the event stream into the lines described in the command's doc.
type printer struct {
	w        io.Writer
	total    int // packages expected; 0: unknown
	start    time.Time
	pkgs     map[string]*pkgState
	done     int
	failed   int // packages failed
	noTests  int
	failures []string // failed packages

	// Over every package: the tests (subtests included) that passed and were skipped, the
	// failures (each failed test that is not the parent of another failed test, "package Test",
	// and each failed package with no failed test: a build error, a panic or timeout outside a
	// reported test), and the packages that ran tests.
	passed, skipped int
	failedTests     []string
	tested          []string
}

func newPrinter(w io.Writer, total int, start time.Time) *printer {
	return &printer{w: w, total: total, start: start, pkgs: map[string]*pkgState{}}
}

func (p *printer) totalString() string {
	switch p.total {
	case 0:
		return "packages"
	case 1:
		return "1 package"
	}
	return fmt.Sprintf("%d packages", p.total)
}

// pkg returns the state of package name, creating it.
func (p *printer) pkg(name string, now time.Time) *pkgState {
	s := p.pkgs[name]
	if s == nil {
		s = &pkgState{start: now, tests: map[string][]string{}}
		p.pkgs[name] = s
	}
	return s
}

// line handles one line of go test's output: an event, or any other text (printed as it is).
func (p *printer) line(l string, now time.Time) {
	var e event
	if !strings.HasPrefix(l, "{") || json.Unmarshal([]byte(l), &e) != nil {
		fmt.Fprintln(p.w, l)
		return
	}
	switch e.Action {
	case "build-output":
		fmt.Fprint(p.w, e.Output)
		return
	case "build-fail":
		return // the package's own fail event follows
	}
	if e.Package == "" {
		if e.Output != "" {
			fmt.Fprint(p.w, e.Output)
		}
		return
	}
	s := p.pkg(e.Package, now)
	if e.Test == "" {
		switch e.Action {
		case "output":
			s.output = append(s.output, e.Output)
		case "pass", "fail", "skip":
			p.endPackage(e, s)
		}
		return
	}
	switch e.Action {
	case "run":
		s.running = append(s.running, e.Test)
	case "output":
		s.tests[e.Test] = append(s.tests[e.Test], e.Output)
	case "pass", "skip", "fail":
		out := s.tests[e.Test]
		delete(s.tests, e.Test)
		s.running = slices.DeleteFunc(s.running, func(t string) bool { return t == e.Test })
		switch e.Action {
		case "pass":
			s.passed++
			p.passed++
		case "skip":
			s.skipped++
			p.skipped++
		case "fail":
			s.failed++
			fmt.Fprint(p.w, strings.Join(out, ""))
			name := e.Package + " " + e.Test
			if !slices.ContainsFunc(p.failedTests, func(f string) bool { return strings.HasPrefix(f, name+"/") }) {
				p.failedTests = append(p.failedTests, name)
			}
		}
	}
}

// endPackage prints a package's line and, when it failed, its own output and the output of the
// tests still running (cut short by a panic or a timeout).
func (p *printer) endPackage(e event, s *pkgState) {
	delete(p.pkgs, e.Package)
	p.done++
	counter := fmt.Sprintf("[%d]", p.done)
	if p.total > 0 {
		w := len(fmt.Sprint(p.total))
		counter = fmt.Sprintf("[%*d/%d]", w, p.done, p.total)
	}
	counts := fmt.Sprintf("%d passed", s.passed)
	if s.skipped > 0 {
		counts += fmt.Sprintf(", %d skipped", s.skipped)
	}
	if s.failed > 0 {
		counts += fmt.Sprintf(", %d FAILED", s.failed)
	}
	if e.FailedBuild != "" {
		counts = "build failed: " + e.FailedBuild
	}
	switch {
	case e.Action == "skip" || (e.Action == "pass" && s.passed+s.skipped == 0 && noTestFiles(s.output)):
		p.noTests++
		fmt.Fprintf(p.w, "%s ?    %s  [no test files]\n", counter, e.Package)
	case e.Action == "pass":
		p.tested = append(p.tested, e.Package)
		fmt.Fprintf(p.w, "%s ok   %s  %.1fs  %s\n", counter, e.Package, e.Elapsed, counts)
	default:
		p.failed++
		p.failures = append(p.failures, e.Package)
		p.tested = append(p.tested, e.Package)
		if s.failed == 0 {
			why := "no test reported a failure: a panic or a timeout, output above"
			if e.FailedBuild != "" {
				why = "build failed"
			}
			p.failedTests = append(p.failedTests, e.Package+" ("+why+")")
		}
		for _, t := range s.running {
			fmt.Fprint(p.w, strings.Join(s.tests[t], ""))
		}
		for _, o := range s.output {
			if t := strings.TrimSpace(o); t != "FAIL" && t != "PASS" && !strings.HasPrefix(t, "FAIL\t"+e.Package) {
				fmt.Fprint(p.w, o)
			}
		}
		fmt.Fprintf(p.w, "%s FAIL %s  %.1fs  %s\n", counter, e.Package, e.Elapsed, counts)
	}
}

// noTestFiles reports whether a package's output says it has no test files.
func noTestFiles(output []string) bool {
	for _, o := range output {
		if strings.Contains(o, "[no test files]") {
			return true
		}
	}
	return false
}

// heartbeat prints what is still running: the packages started and not ended, each with its
// time so far and its latest test still running.
func (p *printer) heartbeat(now time.Time) {
	if len(p.pkgs) == 0 {
		return
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(p.pkgs)) {
		s := p.pkgs[n]
		part := fmt.Sprintf("%s (%v", n, now.Sub(s.start).Round(time.Second))
		if leaves := leafTests(s.running); len(leaves) > 0 {
			part += ", " + leaves[len(leaves)-1]
			if len(leaves) > 1 {
				part += fmt.Sprintf(" and %d more", len(leaves)-1)
			}
		}
		parts = append(parts, part+fmt.Sprintf("; %d passed)", s.passed))
	}
	done := fmt.Sprintf("%d packages done", p.done)
	if p.total > 0 {
		done = fmt.Sprintf("%d of %d packages done", p.done, p.total)
	}
	fmt.Fprintf(p.w, "go test: %v, %s; running %s\n", now.Sub(p.start).Round(time.Second), done, strings.Join(parts, ", "))
}

// leafTests is the running tests that are not the parent of another running test, in order.
func leafTests(running []string) []string {
	var out []string
	for _, t := range running {
		if !slices.ContainsFunc(running, func(u string) bool { return strings.HasPrefix(u, t+"/") }) {
			out = append(out, t)
		}
	}
	return out
}

// finish prints the summary, and the output of packages that never ended (go test died).
func (p *printer) finish(now time.Time) {
	for n, s := range p.pkgs {
		p.failedTests = append(p.failedTests, n+" (never reported an end)")
		fmt.Fprintf(p.w, "gotest: %s never reported an end; its output:\n", n)
		for _, t := range s.running {
			fmt.Fprint(p.w, strings.Join(s.tests[t], ""))
		}
		fmt.Fprint(p.w, strings.Join(s.output, ""))
	}
	ok := p.done - p.failed - p.noTests
	line := fmt.Sprintf("go test: %d ok, %d without tests", ok, p.noTests)
	if p.failed > 0 {
		line += fmt.Sprintf(", %d FAILED (%s)", p.failed, strings.Join(slices.Sorted(slices.Values(p.failures)), ", "))
	}
	fmt.Fprintf(p.w, "%s; %v\n", line, now.Sub(p.start).Round(time.Second))
}
