package mutate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Row is one row of the kill matrix: one library and what each phase did to it.
type Row struct {
	Mutant
	Build        string      `json:"build"` // "ok" or the error
	Grid         KillResult  `json:"grid"`
	Fuzz         *KillResult `json:"fuzz,omitempty"`    // run when the grid did not kill
	Control      *Control    `json:"control,omitempty"` // a mutant's kill re-run on the unmutated build
	Conventional *KillResult `json:"conventional,omitempty"`
	// NotRun, in a merged matrix, says why the row has no result: its shard was not given to the
	// merge. Such a row is neither killed nor survived, and never OK.
	NotRun string `json:"not_run,omitempty"`
}

// phaseKill reports whether a phase of Octant's (the grid, then fuzzing) failed a test on the
// library: by which phase and test, after how long from the grid's start, and after how many
// cases of that phase. For a mutant it is a kill only once the control confirms it (Killed).
func (r *Row) phaseKill() (killed bool, by string, after time.Duration, cases int) {
	if r.Grid.Killed {
		return true, "grid: " + r.Grid.By, r.Grid.After, r.Grid.Cases
	}
	if r.Fuzz != nil && r.Fuzz.Killed {
		return true, "fuzz: " + r.Fuzz.By, r.Grid.After + r.Fuzz.After, r.Fuzz.Cases
	}
	return false, "", 0, 0
}

// Killed reports whether Octant's phases (the grid, then fuzzing) killed the library: a test
// failed on it and, for a mutant, the same test alone passes on the unmutated build
// (Control.Confirmed); by which phase and test, after how long from the grid's start, and after
// how many cases of that phase. For the unmutated build it reports the failed test as it is. The
// conventional suite does not count: it is the comparison.
func (r *Row) Killed() (killed bool, by string, after time.Duration, cases int) {
	killed, by, after, cases = r.phaseKill()
	if killed && r.ID != 0 && (r.Control == nil || !r.Control.Confirmed) {
		return false, "", 0, 0
	}
	return killed, by, after, cases
}

// Outcome is what Octant's phases (the grid, then fuzzing) established about the library:
// "killed" (Killed says by what); "unconfirmed" when a test failed on a mutant but does not pass
// alone on the unmutated build (the detail names the test and what the control's run found);
// "error" when a phase could not run (the first error says which, in detail); "no evidence" when
// no test passed in any phase (every test skipped, or none ran: a survival or a pass that rests on
// nothing); else "survived".
func (r *Row) Outcome() (outcome, detail string) {
	if r.NotRun != "" {
		return "not run", r.NotRun
	}
	if killed, by, _, _ := r.Killed(); killed {
		return "killed", by
	}
	if killed, by, _, _ := r.phaseKill(); killed && r.ID != 0 {
		why := "not re-run on the unmutated build: expected it to pass there"
		if r.Control != nil {
			why = r.Control.Detail
		}
		return "unconfirmed", by + ": " + why
	}
	phases := []struct {
		name string
		k    *KillResult
	}{{"grid", &r.Grid}, {"fuzz", r.Fuzz}}
	passed, skipped := 0, 0
	for _, p := range phases {
		if p.k == nil {
			continue
		}
		if p.k.Error != "" {
			return "error", p.name + ": " + p.k.Error
		}
		passed, skipped = passed+p.k.Passed, skipped+p.k.Skipped
	}
	if passed == 0 {
		return "no evidence", fmt.Sprintf("no test passed (%d skipped)", skipped)
	}
	return "survived", fmt.Sprintf("%d tests passed", passed)
}

// OK is the row's pass condition: the library built, and a mutant is killed (the kill confirmed
// on the unmutated build) while the unmutated build is not, with evidence (some test passed), and
// fails nothing in the conventional suite either (which must run). An error, no evidence or an
// unconfirmed kill is never OK.
func (r *Row) OK() bool {
	if r.Build != "ok" || r.NotRun != "" {
		return false
	}
	outcome, _ := r.Outcome()
	if r.ID == 0 {
		return outcome == "survived" && (r.Conventional == nil || !r.Conventional.Killed && r.Conventional.Error == "")
	}
	return outcome == "killed"
}

// Verdict is the row's outcome in words: "killed by grid: TestX after 1.2s (confirmed on the
// unmutated build)", "SURVIVED", "UNCONFIRMED: …", "NO EVIDENCE: …", "ERROR: …", "passes", "FAIL:
// the unmutated build fails …", "build failed: …".
func (r *Row) Verdict() string {
	killed, by, after, _ := r.Killed()
	outcome, detail := r.Outcome()
	switch {
	case r.NotRun != "":
		return "NOT RUN: " + r.NotRun
	case r.Build != "ok":
		return "build failed: " + r.Build
	case r.ID == 0 && killed:
		return "FAIL: the unmutated build fails " + by
	case outcome == "error":
		return "ERROR: " + detail
	case outcome == "no evidence":
		return "NO EVIDENCE: " + detail
	case outcome == "unconfirmed":
		return "UNCONFIRMED: " + detail
	case r.ID == 0 && r.Conventional != nil && r.Conventional.Killed:
		return "FAIL: the unmutated build fails conventional: " + r.Conventional.By
	case r.ID == 0 && r.Conventional != nil && r.Conventional.Error != "":
		return "ERROR: conventional: " + r.Conventional.Error
	case r.ID == 0:
		return "passes"
	case killed:
		return fmt.Sprintf("killed by %s after %v (confirmed on the unmutated build)", by, after.Round(time.Millisecond))
	}
	return "SURVIVED"
}

// Matrix is what kill-matrix.json holds: the libraries' kind (and the adapter they are judged
// through), the date, the run (RunInfo: commit, header digest, list, flags, shard; absent in a
// matrix written without one) and the rows.
type Matrix struct {
	Kind string   `json:"kind"`
	Date string   `json:"date"`
	Run  *RunInfo `json:"run,omitempty"`
	Rows []*Row   `json:"rows"`
}

// WriteKillMatrix writes kill-matrix.json and kill-matrix.md of m to dir, m.Date set to the time
// of writing. A shard's matrix says in kill-matrix.md that it is partial.
func WriteKillMatrix(dir string, m *Matrix) error {
	m.Date = time.Now().UTC().Format(time.RFC3339)
	j, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kill-matrix.json"), append(j, '\n'), 0o644); err != nil {
		return err
	}
	kind, rows := m.Kind, m.Rows
	var b strings.Builder
	fmt.Fprintf(&b, "# Kill matrix (%s library, %s)\n\n", kind, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	if r := m.Run; r != nil && r.Shard != nil {
		fmt.Fprintf(&b, "**Partial: shard %s of a %d-entry mutant list** (its %d rows; `octant merge --kind matrix OUT DIR...` combines the %d shards into the matrix of the whole run).\n\n",
			r.Shard, len(r.List), len(rows), r.Shard.Count)
	}
	if r := m.Run; r != nil && len(r.ShardsNotRun) > 0 {
		fmt.Fprintf(&b, "**Shards not run: %s**: their rows are not run (neither killed nor survived), and the matrix does not pass.\n\n", strings.Join(r.ShardsNotRun, ", "))
	}
	b.WriteString("Kills are failed tests (test2json events of the test binaries), never matched text, and each is confirmed on the unmutated build: " +
		"the killing test, run alone on it, passes there. A row whose killing test does not pass on the unmutated build is unconfirmed, " +
		"one where a phase could not run is an error, one where no test passed has no evidence.\n\n")
	b.WriteString("| id | mutant | Octant: killed by | time to kill | cases run | conventional suite |\n| --- | --- | --- | --- | --- | --- |\n")
	var times []time.Duration
	mutants, errs, noEvidence, unconfirmed, notRun := 0, 0, 0, 0, 0
	for _, r := range rows {
		if r.ID != 0 {
			mutants++
		}
		killed, by, after, _ := r.Killed()
		_, _, _, cases := r.phaseKill()
		conv := "not run"
		if c := r.Conventional; c != nil {
			switch c.Outcome() {
			case "killed":
				conv = "killed by " + c.By
			case "error":
				conv = "error: " + c.Error
			case "no evidence":
				conv = "no evidence (nothing passed)"
			default:
				conv = "survives"
			}
		}
		outcome, detail := r.Outcome()
		cell, t := "**survived**", "-"
		switch {
		case r.NotRun != "":
			cell = "**not run** (" + r.NotRun + ")"
			notRun++
		case r.Build != "ok":
			cell = "build failed: " + r.Build
		case r.ID == 0 && killed:
			cell = "**FAILS: " + by + "**"
		case outcome == "error":
			cell = "**error** (" + detail + ")"
			errs++
		case outcome == "no evidence":
			cell = "**no evidence** (" + detail + ")"
			noEvidence++
		case outcome == "unconfirmed":
			cell = "**unconfirmed** (" + detail + ")"
			unconfirmed++
		case r.ID == 0:
			cell = "passes (must)"
		case killed:
			cell, t = by, after.Round(time.Millisecond).String()
			times = append(times, after)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %d | %s |\n", r.ID, r.Name, cell, t, cases, conv)
	}
	if len(times) > 0 {
		slices.Sort(times)
		fmt.Fprintf(&b, "\nKilled %d of %d mutants; time to kill median %v, worst %v.\n", len(times), mutants,
			times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	}
	if errs+noEvidence+unconfirmed+notRun > 0 {
		fmt.Fprintf(&b, "\nNeither killed nor survived: %d with an error (a phase could not run), %d with no evidence (no test passed), "+
			"%d unconfirmed (the killing test does not pass on the unmutated build), %d not run (their shard not merged).\n", errs, noEvidence, unconfirmed, notRun)
	}
	return os.WriteFile(filepath.Join(dir, "kill-matrix.md"), []byte(b.String()), 0o644)
}
