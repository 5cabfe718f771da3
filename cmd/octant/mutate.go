package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/octant-kv/octant/mutate"
)

// runMutate parses the flags, selects the mutants and runs package mutate: build each mutant
// library, run the grid, the fuzz targets and the conventional suite on it, write the kill matrix.
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
	ms, err := mutate.ReadMutants(*header)
	if err != nil {
		fmt.Fprintf(stderr, "octant mutate: %v (run from the repository root)\n", err)
		return 2
	}
	sel, err := mutate.ParseIDs(*only, ms)
	if err != nil {
		fmt.Fprintf(stderr, "octant mutate: %v\n", err)
		return 2
	}
	cfg := mutate.Config{Kind: *kind, Budget: *budget, Bin: *bin, Out: *out, Full: *full, Conventional: *conventional, Jobs: *jobs}
	rows, err := mutate.Run(cfg, mutate.Select(ms, sel), stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "octant mutate: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "kill matrix: %s\n", filepath.Join(cfg.Out, "kill-matrix.md"))
	for _, r := range rows {
		if !r.OK() {
			return 1
		}
	}
	return 0
}
