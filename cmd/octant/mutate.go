package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// mutantRow is one row of the kill matrix.
type mutantRow struct {
	mutant
	Build        string      `json:"build"` // "ok" or the error
	Grid         killResult  `json:"grid"`
	Fuzz         *killResult `json:"fuzz,omitempty"` // run when the grid did not kill
	Conventional *killResult `json:"conventional,omitempty"`
}

// killedBy is the phase and test that killed the mutant, or "".
func (r *mutantRow) killed() (bool, string, time.Duration, int) {
	if r.Grid.Killed {
		return true, "grid: " + r.Grid.By, r.Grid.After, r.Grid.Cases
	}
	if r.Fuzz != nil && r.Fuzz.Killed {
		return true, "fuzz: " + r.Fuzz.By, r.Grid.After + r.Fuzz.After, r.Fuzz.Cases
	}
	return false, "", 0, 0
}

var fuzzTargets = []string{"FuzzDecode", "FuzzStore", "FuzzRotate", "FuzzReduce", "FuzzPrefill"}

// runMutate builds each mutant library, runs the fixed grid and then the fuzz targets until it is
// killed or its budget ends, and writes the kill matrix (Markdown and JSON).
func runMutate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "library to build: cuda (needs nvcc) or emu (the CPU emulator); default cuda when nvcc is on PATH, else emu")
	only := fs.String("only", "", "comma-separated mutant ids (0 = the unmutated build); default all, and 0")
	budget := fs.Duration("budget-per-mutant", 75*time.Second, "fuzzing budget per mutant after the grid, shared by the five GPU targets (at least 15 s each)")
	bin := fs.String("bin", "bin", "directory with kernels.test and fuzz.test (make gpu-bins); built here with go when missing")
	out := fs.String("out", "mutate-out", "directory for kill-matrix.md, kill-matrix.json and the logs")
	full := fs.Bool("full", false, "run the full kernel grid instead of the -short one")
	conventional := fs.Bool("conventional", true, "also run the conventional suite (upstream-shaped tests only) on each mutant")
	header := fs.String("header", "csrc/include/octave_mutant.h", "the mutant ids")
	jobs := fs.Int("jobs", 4, "mutant libraries built at once before the runs")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: octant mutate [--kind cuda|emu] [--budget-per-mutant 60s] [--only id,...] [--out DIR]\n\nBuilds each mutant library (corpus/mutants.md; make <kind>-mutant MUTANT=<id>) and the unmutated\none, runs the kernel grid and then the GPU fuzz targets until the mutant is killed or its budget\nends, and the conventional suite beside it; writes a kill matrix. Run from the repository root.\nExit 0 when every mutant is killed and the unmutated build passes, 1 otherwise, 2 on usage errors.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *kind == "" {
		*kind = "emu"
		if _, err := exec.LookPath("nvcc"); err == nil {
			*kind = "cuda"
		}
	}
	if *kind != "cuda" && *kind != "emu" {
		fmt.Fprintf(stderr, "octant mutate: --kind %q: expected cuda or emu\n", *kind)
		return 2
	}
	ms, err := readMutants(*header)
	if err != nil {
		fmt.Fprintf(stderr, "octant mutate: %v (run from the repository root)\n", err)
		return 2
	}
	sel, err := parseIDs(*only, ms)
	if err != nil {
		fmt.Fprintf(stderr, "octant mutate: %v\n", err)
		return 2
	}
	if err := os.MkdirAll(filepath.Join(*out, "logs"), 0o755); err != nil {
		fmt.Fprintf(stderr, "octant mutate: %v\n", err)
		return 2
	}
	kt, ft := filepath.Join(*bin, "kernels.test"), filepath.Join(*bin, "fuzz.test")
	if err := ensureTestBinaries(kt, ft, stderr); err != nil {
		fmt.Fprintf(stderr, "octant mutate: %v\n", err)
		return 2
	}
	// The unmutated build runs last: a run stopped early (the matrix is written after every row)
	// still has the mutants.
	list := append(append([]mutant(nil), ms...), mutant{ID: 0, Name: "unmutated", Op: "-", Defect: "the normal build"})
	var todo []mutant
	for _, m := range list {
		if sel == nil || sel[m.ID] {
			todo = append(todo, m)
		}
	}
	// Build every library first, --jobs at a time (nvcc compiles one mutant on one core).
	fmt.Fprintf(stdout, "building %d %s libraries, %d at a time…\n", len(todo), *kind, *jobs)
	t0 := time.Now()
	libs, berrs := make([]string, len(todo)), make([]error, len(todo))
	sem := make(chan struct{}, max(1, *jobs))
	var wg sync.WaitGroup
	for i, m := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			logf, err := os.Create(filepath.Join(*out, "logs", fmt.Sprintf("m%d-build.log", m.ID)))
			if err != nil {
				berrs[i] = err
				return
			}
			defer logf.Close()
			libs[i], berrs[i] = buildMutant(*kind, m.ID, logf)
		}()
	}
	wg.Wait()
	fmt.Fprintf(stdout, "built in %v\n", time.Since(t0).Round(time.Second))
	var rows []*mutantRow
	status := 0
	for i, m := range todo {
		row := &mutantRow{mutant: m, Build: "ok"}
		rows = append(rows, row)
		fmt.Fprintf(stdout, "mutant %d (%s): ", m.ID, m.Name)
		if berrs[i] != nil {
			row.Build = berrs[i].Error()
			fmt.Fprintf(stdout, "build failed: %v\n", berrs[i])
			status = 1
			continue
		}
		logf, err := os.Create(filepath.Join(*out, "logs", fmt.Sprintf("m%d.log", m.ID)))
		if err != nil {
			fmt.Fprintf(stderr, "octant mutate: %v\n", err)
			return 2
		}
		lib := libs[i]
		lib, _ = filepath.Abs(lib)
		env := []string{"OCTANT_LIB=" + lib, "OCTANT_REGRESSIONS=" + filepath.Join(*out, "regressions", fmt.Sprintf("m%d", m.ID)),
			"OCTANT_REPLAY_CMD=bin/octant replay"}
		gridArgs := []string{"-test.count=1", "-test.v", "-test.skip=^TestConventional"}
		if !*full {
			gridArgs = append(gridArgs, "-test.short")
		}
		fmt.Fprintf(stdout, "grid… ")
		row.Grid = gridPhase(kt, gridArgs, env, m.Op, logf)
		// The fuzz phase: for a mutant until the grid or the fuzzer kills it; for the unmutated
		// build always (it must survive the whole budget).
		if (!row.Grid.Killed || m.ID == 0) && *budget > 0 {
			fmt.Fprintf(stdout, "fuzz… ")
			f := fuzzPhase(ft, env, *budget, filepath.Join(*out, "fuzzcache"), logf)
			row.Fuzz = &f
		}
		if *conventional {
			fmt.Fprintf(stdout, "conventional… ")
			c := runUntilFail(kt, []string{"-test.count=1", "-test.v", "-test.run=^TestConventional"}, env, 0, logf)
			row.Conventional = &c
		}
		logf.Close()
		killed, by, after, _ := row.killed()
		switch {
		case m.ID == 0 && (killed || (row.Conventional != nil && row.Conventional.Killed)):
			fmt.Fprintf(stdout, "FAIL: the unmutated build fails %s\n", by)
			status = 1
		case m.ID == 0:
			fmt.Fprintln(stdout, "passes")
		case killed:
			fmt.Fprintf(stdout, "killed by %s after %v\n", by, after.Round(time.Millisecond))
		default:
			fmt.Fprintln(stdout, "SURVIVED")
			status = 1
		}
		// Written after every mutant, so a run stopped early still leaves its matrix.
		if err := writeKillMatrix(*out, *kind, rows); err != nil {
			fmt.Fprintf(stderr, "octant mutate: %v\n", err)
			return 2
		}
	}
	if err := writeKillMatrix(*out, *kind, rows); err != nil {
		fmt.Fprintf(stderr, "octant mutate: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "kill matrix: %s\n", filepath.Join(*out, "kill-matrix.md"))
	return status
}

// opTests are the kernel tests of each op: the grid runs them first for a mutant of that op (the
// order changes when a mutant dies, not whether), then the rest.
var opTests = map[string]string{"store": "^TestStore", "rotate": "^TestRotate", "decode": "^TestDecode", "reduce": "^TestReduce",
	"prefill": "^TestPrefill", "qmaps": "^TestQueryMaps"}

// gridPhase runs the kernel grid: the op's own tests first, then every other test.
func gridPhase(kt string, args, env []string, op string, log io.Writer) killResult {
	re, ok := opTests[op]
	if !ok {
		return runUntilFail(kt, args, env, 0, log)
	}
	first := runUntilFail(kt, append(append([]string(nil), args...), "-test.run="+re), env, 0, log)
	if first.Killed || first.Error != "" {
		return first
	}
	rest := runUntilFail(kt, append(append([]string(nil), args...), "-test.skip="+re+"|^TestConventional"), env, 0, log)
	rest.After += first.After
	rest.Cases += first.Cases
	return rest
}

// fuzzPhase runs the GPU fuzz targets in turn, the budget shared equally, until one fails.
func fuzzPhase(ft string, env []string, budget time.Duration, cache string, log io.Writer) killResult {
	f := killResult{}
	// At least 15 s per target: Go's fuzzer reports "context deadline exceeded" as a failure when
	// -test.fuzztime ends while it still gathers its baseline coverage (each input a GPU case).
	per := max(budget/time.Duration(len(fuzzTargets)), 15*time.Second)
	for _, t := range fuzzTargets {
		r := runUntilFail(ft, []string{"-test.run=^$", "-test.fuzz=^" + t + "$", "-test.fuzztime=" + per.String(), "-test.fuzzminimizetime=10x",
			"-test.parallel=1", "-test.fuzzcachedir=" + cache}, env, per+30*time.Second, log)
		f.After += r.After
		f.Cases += r.Cases
		if r.Error != "" {
			f.Error = r.Error
			return f
		}
		if r.Killed {
			f.Killed, f.By, f.Message = true, t, r.Message
			return f
		}
	}
	return f
}

// buildMutant builds the library of mutant id (0: the normal build) and returns its path.
func buildMutant(kind string, id int, log io.Writer) (string, error) {
	target, lib := kind, filepath.Join("build", "liboctave_"+kind+".so")
	args := []string{target}
	if id != 0 {
		args = []string{kind + "-mutant", fmt.Sprintf("MUTANT=%d", id)}
		lib = filepath.Join("build", "mutants", fmt.Sprintf("liboctave_%s_m%d.so", kind, id))
	}
	cmd := exec.Command("make", args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("make %s: %v (log in the out directory)", strings.Join(args, " "), err)
	}
	return lib, nil
}

// ensureTestBinaries builds the test binaries with go when they are missing.
func ensureTestBinaries(kt, ft string, stderr io.Writer) error {
	for _, b := range []struct{ path, pkg string }{{kt, "./kernels"}, {ft, "./fuzz"}} {
		if _, err := os.Stat(b.path); err == nil {
			continue
		}
		if _, err := exec.LookPath("go"); err != nil {
			return fmt.Errorf("%s missing and no go to build it (make gpu-bins where Go is)", b.path)
		}
		args := []string{"test", "-c", "-o", b.path, b.pkg}
		if b.pkg == "./fuzz" {
			args = []string{"test", "-c", "-fuzz=.", "-o", b.path, b.pkg}
		}
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stderr = stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
		}
	}
	return nil
}

// writeKillMatrix writes kill-matrix.json and kill-matrix.md.
func writeKillMatrix(dir, kind string, rows []*mutantRow) error {
	j, err := json.MarshalIndent(struct {
		Kind string       `json:"kind"`
		Date string       `json:"date"`
		Rows []*mutantRow `json:"rows"`
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
	for _, r := range rows {
		killed, by, after, cases := r.killed()
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
		sortDurations(times)
		fmt.Fprintf(&b, "\nKilled %d of %d mutants; time to kill median %v, worst %v.\n", len(times), len(rows)-countUnmutated(rows),
			times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	}
	return os.WriteFile(filepath.Join(dir, "kill-matrix.md"), []byte(b.String()), 0o644)
}

func countUnmutated(rows []*mutantRow) int {
	n := 0
	for _, r := range rows {
		if r.ID == 0 {
			n++
		}
	}
	return n
}

func sortDurations(d []time.Duration) { slices.Sort(d) }
