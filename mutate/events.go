package mutate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Event is one test event as `go test -json` prints it (go doc test2json): Action is run, pause,
// cont, pass, fail, skip or output; Test names the test (empty for the binary's own lines);
// Output is an output line. A kill is decided from the pass, fail and skip events alone, never
// from what a test prints.
type Event struct {
	Action  string  `json:"Action"`
	Package string  `json:"Package,omitempty"`
	Test    string  `json:"Test,omitempty"`
	Output  string  `json:"Output,omitempty"`
	Elapsed float64 `json:"Elapsed,omitempty"`
}

// ReadEvents decodes a `go test -json` stream: one JSON object per line.
func ReadEvents(r io.Reader) ([]Event, error) {
	var out []Event
	dec := json.NewDecoder(r)
	for {
		var e Event
		if err := dec.Decode(&e); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("test event %d: %w: expected one go test -json object per line", len(out)+1, err)
		}
		out = append(out, e)
	}
}

// framingMarker starts every framing line (=== RUN, --- FAIL, ...) a Go test binary prints under
// -test.v=test2json, as cmd/test2json reads it: what a test prints never carries it, so a test's
// output cannot pass for a result line.
const framingMarker = '\x16'

// framer turns the output of a test binary run with -test.v=test2json into Events, as `go test
// -json` does (cmd/test2json), without the go command: the GPU machines run prebuilt test binaries.
type framer struct {
	test string // the test the output lines belong to: the one last named by a framing line
	emit func(Event)
}

// line handles one output line (without its newline). A marker inside a line starts a new one:
// the binary writes a framing line after output that did not end in a newline.
func (f *framer) line(l string) {
	for {
		i := strings.IndexByte(l[min(1, len(l)):], framingMarker)
		if i < 0 {
			f.one(l)
			return
		}
		f.one(l[:i+1])
		l = l[i+1:]
	}
}

func (f *framer) one(l string) {
	l = strings.TrimSuffix(l, "\r")
	if !strings.HasPrefix(l, string(framingMarker)) {
		f.emit(Event{Action: "output", Test: f.test, Output: l + "\n"})
		return
	}
	frame := l[1:]
	if rest, ok := strings.CutPrefix(frame, "=== "); ok {
		action, name, _ := strings.Cut(rest, " ")
		name = strings.TrimSpace(name)
		switch action {
		case "RUN":
			f.test = name
			f.emit(Event{Action: "run", Test: name})
		case "PAUSE":
			f.emit(Event{Action: "pause", Test: name})
		case "CONT":
			f.test = name
			f.emit(Event{Action: "cont", Test: name})
		case "NAME":
			f.test = name
		}
		return
	}
	report := strings.TrimLeft(frame, " ")
	for _, r := range []struct{ prefix, action string }{{"--- PASS: ", "pass"}, {"--- FAIL: ", "fail"}, {"--- SKIP: ", "skip"}} {
		if rest, ok := strings.CutPrefix(report, r.prefix); ok {
			name, _, _ := strings.Cut(rest, " ")
			f.emit(Event{Action: r.action, Test: name})
			return
		}
	}
	// The binary's final PASS or FAIL, or a framing line this reader does not use: its exit
	// status and the per-test events say the same.
	f.emit(Event{Action: "output", Output: frame + "\n"})
}

// tally follows one test binary's events to its KillResult: the first failed test kills; tests
// that passed with no subtest are the evidence a survival rests on.
type tally struct {
	start   time.Time
	res     KillResult
	running []string            // started, not ended, in order
	parents map[string]bool     // tests with a subtest
	passed  []string            // tests that passed
	output  map[string][]string // the first output lines of each test, for the message
}

func newTally(start time.Time) *tally {
	return &tally{start: start, parents: map[string]bool{}, output: map[string][]string{}}
}

// add takes one event and reports whether it is the first failure.
func (t *tally) add(e Event) bool {
	switch e.Action {
	case "run":
		t.res.Cases++
		t.running = append(t.running, e.Test)
		if i := strings.LastIndexByte(e.Test, '/'); i > 0 {
			t.parents[e.Test[:i]] = true
		}
	case "pass", "fail", "skip":
		if e.Test == "" {
			return false // the package's result: the tests' own events decide
		}
		t.running = slices.DeleteFunc(t.running, func(n string) bool { return n == e.Test })
		switch e.Action {
		case "pass":
			t.passed = append(t.passed, e.Test)
		case "skip":
			t.res.Skipped++
		case "fail":
			if !t.res.Killed {
				t.res.Killed, t.res.By, t.res.After = true, e.Test, time.Since(t.start)
				return true
			}
		}
	case "output":
		if e.Test != "" && len(t.output[e.Test]) < 8 {
			t.output[e.Test] = append(t.output[e.Test], strings.TrimSpace(e.Output))
		}
		if m := execsLine.FindStringSubmatch(e.Output); m != nil {
			fmt.Sscan(m[1], &t.res.Cases) // the fuzzer's own count of inputs run
		}
	}
	return false
}

// finish completes the result of a binary (name) that exited with exitErr; stopped says the
// budget stopped it. A failed test is a kill. A binary that exits non-zero while a test runs
// (a crash inside it: a kernel's fault, a panic) failed that test: a kill by the innermost one
// running. A non-zero exit with no test running is an error (a setup failure: the binary or the
// library could not start), neither a kill nor a survival. Reaching the budget is not a kill.
func (t *tally) finish(name string, exitErr error, stopped bool) KillResult {
	r := t.res
	for _, p := range t.passed {
		if !t.parents[p] {
			r.Passed++
		}
	}
	if !r.Killed && exitErr != nil && !stopped {
		if n := len(t.running); n > 0 {
			inner := t.running[n-1]
			for _, x := range t.running {
				if len(x) > len(inner) {
					inner = x
				}
			}
			r.Killed, r.By, r.After = true, inner, time.Since(t.start)
			r.Message = fmt.Sprintf("%s: %v while %s ran, before its result line", name, exitErr, inner)
		} else {
			r.Error = fmt.Sprintf("%s: %v with no test failed or running (expected test results: a setup error, not a kill)", name, exitErr)
		}
	}
	if !r.Killed {
		r.After = time.Since(t.start)
	} else if r.Message == "" {
		r.Message = firstMessage(t.output[r.By])
	}
	return r
}

// firstMessage is the first line of a failed test's output that is not a nested result line.
func firstMessage(lines []string) string {
	for _, l := range lines {
		if l != "" && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "=== ") {
			if len(l) > 300 {
				l = l[:300] + "…"
			}
			return l
		}
	}
	return ""
}

// Decide is the KillResult of a finished test binary's events (a `go test -json` stream read with
// ReadEvents), its exit error and whether the budget stopped it: what RunUntilFail decides as it
// reads them.
func Decide(events []Event, name string, exitErr error, stopped bool) KillResult {
	t := newTally(time.Now())
	for _, e := range events {
		t.add(e)
	}
	return t.finish(name, exitErr, stopped)
}

// ReadFramed decodes the output of a Go test binary run with -test.v=test2json into test events,
// as `go test -json` has them (the framing lines become run, pass, fail and skip events, every
// other line an output event of the test running), for callers that run a prebuilt test binary
// and want all of its events rather than a kill.
func ReadFramed(r io.Reader) ([]Event, error) {
	var out []Event
	f := &framer{emit: func(e Event) { out = append(out, e) }}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		f.line(sc.Text())
	}
	return out, sc.Err()
}
