package mutate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultOut is where a run writes its kill matrix and logs unless told otherwise: under build/,
// which git ignores, so a run leaves the tree clean.
const DefaultOut = "build/mutate"

// Config is one run over a list of libraries.
type Config struct {
	Kind         string        // library to build: cuda (nvcc) or emu (the CPU emulator)
	Budget       time.Duration // fuzzing per library after the grid, shared by the fuzz targets; 0: no fuzzing
	Bin          string        // directory of grids.test and fuzz.test (built with go when missing)
	Out          string        // directory for kill-matrix.md, kill-matrix.json and the logs
	Full         bool          // the full kernel grid instead of the -short one
	Conventional bool          // also run the conventional suite on each library
	Jobs         int           // libraries built at once
	// Through, when set, is a worker spec in which "{lib}" stands for each built library's
	// absolute path (ThroughPlaceholder): the judges reach every mutant, and the control, through
	// that adapter (docs/adapters.md) instead of loading the library themselves.
	Through string
	// Info, when set, is written into the kill matrix (RunInfo: commit, header digest, the whole
	// list, the flags, the shard), so that shards of one run can be merged and others refused.
	Info *RunInfo
}

// kindThrough names the libraries as the kill matrix does: the kind, and the adapter spec they
// are judged through.
func (cfg Config) kindThrough() string {
	if cfg.Through == "" {
		return cfg.Kind
	}
	return cfg.Kind + " through " + cfg.Through
}

// ThroughPlaceholder is what Config.Through writes where each library's path goes.
const ThroughPlaceholder = "{lib}"

// CheckThrough says what is wrong with a Config.Through spec, or nil: it must be a worker spec
// (scheme:ADAPTER...) and name the library exactly once by ThroughPlaceholder.
func CheckThrough(spec string) error {
	if n := strings.Count(spec, ThroughPlaceholder); n != 1 {
		return fmt.Errorf("--through %q: expected the placeholder %s exactly once (where each library's path goes), found it %d times", spec, ThroughPlaceholder, n)
	}
	if !strings.HasPrefix(spec, "host:") && !strings.HasPrefix(spec, "torch:") {
		return fmt.Errorf("--through %q: expected a worker spec, host:ADAPTER.py?... or torch:ADAPTER.py?...", spec)
	}
	return nil
}

// libSpec is what the judges are given for library lib: its path, or the Through spec naming it.
func (cfg Config) libSpec(lib string) string {
	if cfg.Through == "" {
		return lib
	}
	return strings.Replace(cfg.Through, ThroughPlaceholder, lib, 1)
}

// Plan says in one line what Run does with todo: how many libraries of which kind are built (the
// unmutated build always, as the control, with a row of its own only when todo holds it), what
// runs on each, how a kill is confirmed, and where the kill matrix goes.
func Plan(cfg Config, todo []Mutant) string {
	n, unmutated := len(todo), false
	for _, m := range todo {
		if m.ID == 0 {
			n, unmutated = n-1, true
		}
	}
	libs := len(todo)
	var what []string
	if n > 0 {
		what = append(what, count(n, "mutant", "mutants"))
	}
	on := "each"
	if unmutated {
		what = append(what, "the unmutated build")
	} else {
		what = append(what, "the unmutated build as the control, without a row of its own")
		libs, on = libs+1, "each mutant"
	}
	grid := "-short"
	if cfg.Full {
		grid = "full"
	}
	steps := []string{fmt.Sprintf("the %s kernel grid (the mutant's op first)", grid)}
	if cfg.Budget > 0 {
		steps = append(steps, fmt.Sprintf("while it survives, the %d GPU fuzz targets for %v each", len(FuzzTargets), FuzzPerTarget(cfg.Budget)))
	}
	if cfg.Conventional {
		steps = append(steps, "the conventional suite")
	}
	confirm := ""
	if n > 0 {
		confirm = "; a mutant's kill counts only when the killing test, run alone on the unmutated build (the control), passes there"
	}
	if cfg.Through != "" {
		on += ", judged through " + cfg.Through + ","
	}
	return fmt.Sprintf("%s (%s), built %d at a time; then on %s %s%s; kill matrix in %s",
		count(libs, cfg.Kind+" library", cfg.Kind+" libraries"), strings.Join(what, " and "), max(1, cfg.Jobs), on,
		strings.Join(steps, ", "), confirm, filepath.Join(cfg.Out, "kill-matrix.md"))
}

// count is "1 one" or "n many".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Run builds every library of todo (cfg.Jobs at a time) and the unmutated build, the control
// (todo's own row 0 when it holds one; else built beside the mutants, with no row of its own), then
// runs each library of todo through the grid, the fuzz phase while it survives (the unmutated
// build: always, it must survive the whole budget) and the conventional suite. A mutant's kill
// by the grid or the fuzz phase is then confirmed on the control ([Control]): the killing test
// alone must pass on the unmutated build, else the row is unconfirmed, not killed; a control that
// did not build confirms nothing. The kill matrix is written after every row, so that a run
// stopped early still leaves one. Progress goes to stdout, go's errors (building a missing test
// binary) to stderr. The error is for what stops the run (the out directory, a test binary, a
// log file); the rows say how each library fared (Row.OK).
func Run(cfg Config, todo []Mutant, stdout, stderr io.Writer) ([]*Row, error) {
	if err := os.MkdirAll(filepath.Join(cfg.Out, "logs"), 0o755); err != nil {
		return nil, err
	}
	kt, ft := filepath.Join(cfg.Bin, "grids.test"), filepath.Join(cfg.Bin, "fuzz.test")
	if err := EnsureTestBinaries(kt, ft, stdout, stderr); err != nil {
		return nil, err
	}
	builds := todo
	c := slices.IndexFunc(todo, func(m Mutant) bool { return m.ID == 0 })
	if c < 0 {
		builds, c = append(slices.Clone(todo), Unmutated), len(todo)
	}
	libs, berrs := buildAll(cfg, builds, stdout)
	ctl := controlLib{err: berrs[c]}
	if ctl.err == nil {
		ctl.lib, _ = filepath.Abs(libs[c])
	}
	var rows []*Row
	for i, m := range todo {
		row := &Row{Mutant: m, Build: "ok"}
		rows = append(rows, row)
		fmt.Fprintf(stdout, "mutant %d (%s): ", m.ID, m.Name)
		if berrs[i] != nil {
			row.Build = berrs[i].Error()
			fmt.Fprintln(stdout, row.Verdict())
			continue
		}
		if err := runOne(cfg, row, libs[i], kt, ft, ctl, stdout); err != nil {
			return rows, err
		}
		fmt.Fprintln(stdout, row.Verdict())
		// Written after every mutant, so a run stopped early still leaves its matrix.
		if err := WriteKillMatrix(cfg.Out, &Matrix{Kind: cfg.kindThrough(), Run: cfg.Info, Rows: rows}); err != nil {
			return rows, err
		}
	}
	return rows, WriteKillMatrix(cfg.Out, &Matrix{Kind: cfg.kindThrough(), Run: cfg.Info, Rows: rows})
}

// buildAll builds the libraries of todo, cfg.Jobs at a time (nvcc compiles one mutant on one
// core), each with its log under Out/logs, and says as each one is done.
func buildAll(cfg Config, todo []Mutant, stdout io.Writer) ([]string, []error) {
	fmt.Fprintf(stdout, "building %d %s libraries, %d at a time…\n", len(todo), cfg.Kind, cfg.Jobs)
	t0 := time.Now()
	libs, berrs := make([]string, len(todo)), make([]error, len(todo))
	sem := make(chan struct{}, max(1, cfg.Jobs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, m := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			berrs[i] = func() error {
				logf, err := os.Create(filepath.Join(cfg.Out, "logs", fmt.Sprintf("m%d-build.log", m.ID)))
				if err != nil {
					return err
				}
				defer logf.Close()
				libs[i], err = Build(cfg.Kind, m.ID, logf)
				return err
			}()
			mu.Lock()
			defer mu.Unlock()
			done++
			status := "built"
			if berrs[i] != nil {
				status = "FAILED to build"
			}
			name := fmt.Sprintf("mutant %d (%s)", m.ID, m.Name)
			if m.ID == 0 {
				name = fmt.Sprintf("mutant %d (%s, the control)", m.ID, m.Name)
			}
			fmt.Fprintf(stdout, "  [%d/%d] %s %s, %v\n", done, len(todo), name, status, time.Since(t0).Round(time.Second))
		}()
	}
	wg.Wait()
	fmt.Fprintf(stdout, "built in %v\n", time.Since(t0).Round(time.Second))
	return libs, berrs
}

// phaseEnv is the environment of a phase's test binaries on library lib (an absolute path, or a
// worker spec naming one: Config.libSpec): OCTANT_LIB,
// the reproducers' directory <out>/regressions/<name> (out absolute: the binaries run in their
// package's directory), and the replay command their failure messages end with, which names the
// command for a person at the repository root, not a file the binaries open.
func phaseEnv(lib, out, name string) []string {
	return []string{"OCTANT_LIB=" + lib, "OCTANT_REGRESSIONS=" + filepath.Join(out, "regressions", name),
		"OCTANT_REPLAY_CMD=bin/octant replay"}
}

// runOne runs the phases on one built library, then confirms a mutant's kill on the control ctl
// (confirmKill), its output logged to Out/logs/m<id>.log.
func runOne(cfg Config, row *Row, lib, kt, ft string, ctl controlLib, stdout io.Writer) error {
	logf, err := os.Create(filepath.Join(cfg.Out, "logs", fmt.Sprintf("m%d.log", row.ID)))
	if err != nil {
		return err
	}
	defer logf.Close()
	out, err := filepath.Abs(cfg.Out)
	if err != nil {
		return err
	}
	lib, _ = filepath.Abs(lib)
	env := phaseEnv(cfg.libSpec(lib), out, fmt.Sprintf("m%d", row.ID))
	gridArgs := []string{"-test.count=1", "-test.skip=^TestConventional"}
	if !cfg.Full {
		gridArgs = append(gridArgs, "-test.short")
	}
	fmt.Fprintf(stdout, "grid… ")
	row.Grid = GridPhase(kt, gridArgs, env, row.Op, logf)
	// The fuzz phase: for a mutant until the grid or the fuzzer kills it; for the unmutated
	// build always (it must survive the whole budget); never after a grid that could not run
	// (the row is an error).
	if (!row.Grid.Killed || row.ID == 0) && row.Grid.Error == "" && cfg.Budget > 0 {
		fmt.Fprintf(stdout, "fuzz… ")
		f := FuzzPhase(ft, env, cfg.Budget, filepath.Join(out, "fuzzcache"), logf)
		row.Fuzz = &f
	}
	// A mutant's kill counts only once the killing test passes on the unmutated build.
	if killed, _, _, _ := row.phaseKill(); killed && row.ID != 0 {
		fmt.Fprintf(stdout, "control… ")
		row.Control = confirmKill(row, ctl, cfg.libSpec(ctl.lib), kt, ft, gridArgs, out, logf)
	}
	if cfg.Conventional {
		fmt.Fprintf(stdout, "conventional… ")
		bin, dir := gridsDir(kt)
		c := RunUntilFail(dir, bin, []string{"-test.count=1", "-test.run=^TestConventional"}, env, 0, logf)
		row.Conventional = &c
	}
	return nil
}
