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
	Fuzz         *KillResult `json:"fuzz,omitempty"` // run when the grid did not kill
	Conventional *KillResult `json:"conventional,omitempty"`
}

// Killed reports whether Octant's phases (the grid, then fuzzing) killed the library: by which
// phase and test, after how long from the grid's start, and after how many cases of that phase.
// The conventional suite does not count: it is the comparison.
func (r *Row) Killed() (killed bool, by string, after time.Duration, cases int) {
	if r.Grid.Killed {
		return true, "grid: " + r.Grid.By, r.Grid.After, r.Grid.Cases
	}
	if r.Fuzz != nil && r.Fuzz.Killed {
		return true, "fuzz: " + r.Fuzz.By, r.Grid.After + r.Fuzz.After, r.Fuzz.Cases
	}
	return false, "", 0, 0
}

// OK is the row's pass condition: the library built, and a mutant is killed while the unmutated
// build fails nothing (the conventional suite included).
func (r *Row) OK() bool {
	if r.Build != "ok" {
		return false
	}
	killed, _, _, _ := r.Killed()
	if r.ID == 0 {
		return !killed && (r.Conventional == nil || !r.Conventional.Killed)
	}
	return killed
}

// Verdict is the row's outcome in words: "killed by grid: TestX after 1.2s", "SURVIVED",
// "passes", "FAIL: the unmutated build fails …", "build failed: …".
func (r *Row) Verdict() string {
	killed, by, after, _ := r.Killed()
	switch {
	case r.Build != "ok":
		return "build failed: " + r.Build
	case r.ID == 0 && killed:
		return "FAIL: the unmutated build fails " + by
	case r.ID == 0 && r.Conventional != nil && r.Conventional.Killed:
		return "FAIL: the unmutated build fails conventional: " + r.Conventional.By
	case r.ID == 0:
		return "passes"
	case killed:
		return fmt.Sprintf("killed by %s after %v", by, after.Round(time.Millisecond))
	}
	return "SURVIVED"
}

// WriteKillMatrix writes kill-matrix.json and kill-matrix.md of the rows to dir.
func WriteKillMatrix(dir, kind string, rows []*Row) error {
	j, err := json.MarshalIndent(struct {
		Kind string `json:"kind"`
		Date string `json:"date"`
		Rows []*Row `json:"rows"`
	}{kind, time.Now().UTC().Format(time.RFC3339), rows}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kill-matrix.json"), append(j, '\n'), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Kill matrix (%s library, %s)\n\n", kind, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	b.WriteString("| id | mutant | Octant: killed by | time to kill | cases run | conventional suite |\n| --- | --- | --- | --- | --- | --- |\n")
	var times []time.Duration
	mutants := 0
	for _, r := range rows {
		if r.ID != 0 {
			mutants++
		}
		killed, by, after, cases := r.Killed()
		conv := "not run"
		if r.Conventional != nil {
			conv = "survives"
			if r.Conventional.Killed {
				conv = "killed by " + r.Conventional.By
			}
		}
		cell, t := "**survived**", "-"
		switch {
		case r.Build != "ok":
			cell = "build failed: " + r.Build
		case r.ID == 0 && !killed:
			cell = "passes (must)"
		case r.ID == 0:
			cell = "**FAILS: " + by + "**"
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
	return os.WriteFile(filepath.Join(dir, "kill-matrix.md"), []byte(b.String()), 0o644)
}
