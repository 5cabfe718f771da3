package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/octant-kv/octant/conformance"
	"github.com/octant-kv/octant/internal/provenance"
	"github.com/octant-kv/octant/mutate"
)

// runMutate parses the flags, selects the mutants and runs package mutate: build each mutant
// library and the unmutated one (the control), run the grid, the fuzz targets and the
// conventional suite on each, confirm each kill on the control, write the kill matrix.
func runMutate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "library to build: cuda (needs nvcc) or emu (the CPU emulator); default cuda when nvcc is on PATH, else emu")
	all := fs.Bool("all", false, "run every mutant of --header and the unmutated build")
	only := fs.String("only", "", "run only these comma-separated mutant ids (0 = the unmutated build's own row; it is built as the control in every run)")
	budget := fs.Duration("budget-per-mutant", 75*time.Second, "fuzzing budget per mutant after the grid, shared by the GPU fuzz targets (mutate.FuzzTargets; at least 15 s each)")
	bin := fs.String("bin", "bin", "directory with grids.test and fuzz.test (make gpu-bins); built here with go when missing")
	out := fs.String("out", mutate.DefaultOut, "directory for kill-matrix.md, kill-matrix.json and the logs")
	full := fs.Bool("full", false, "run the full kernel grid instead of the -short one")
	conventional := fs.Bool("conventional", true, "also run the conventional suite (upstream-shaped tests only) on each mutant")
	header := fs.String("header", "csrc/include/octave_mutant.h", "the mutant ids")
	jobs := fs.Int("jobs", 4, "mutant libraries built at once before the runs")
	shardFlag := fs.String("shard", "", "i/n: run only part i of n of the selected mutant list (entries k with k mod n = i; the control is built in every shard); octant merge --kind matrix combines the n kill matrices")
	through := fs.String("through", "", "judge every library through this adapter spec, {lib} standing for the library's path (e.g. 'torch:/abs/vllm_ops.py?ext=/abs/ext.so&lib={lib}'; docs/adapters.md)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: octant mutate (--all | --only ID,...) [--kind cuda|emu] [--budget-per-mutant 75s] [--shard i/n] [--out DIR]

Builds each mutant library (corpus/mutants.md; make <kind>-mutant MUTANT=<id>) and the unmutated
one, runs the kernel grid and then the GPU fuzz targets until the mutant is killed or its budget
ends, and the conventional suite beside it; writes a kill matrix. Run from the repository root
(the test binaries run in grids/ and fuzz/, as go test runs them).

A full run builds every mutant (25 and more) and tests each for up to its budget, so it starts only
when asked: --all for every mutant and the unmutated build, --only for some. Without either it
prints what --all would build and run, and exits 2. It prints that plan first when it starts, too.
The output goes to `+mutate.DefaultOut+` by default, under the git-ignored build/.
A kill is a failed test in the test binaries' own results (-test.v=test2json events, as go test
-json reads them), never a matched message, and it counts only when that test, run alone on the
unmutated build (the control: built in every run, with a row of its own only with --all or
--only 0), passes there; otherwise the row is unconfirmed. A phase that could not run is an
error, and a row on which no test passed (all skipped, or none ran) has no evidence: none of
these is a kill or a pass.
--through SPEC judges every library (the control too) through an adapter instead of loading it:
SPEC is a worker spec with {lib} where the library's path goes (docs/adapters.md).
--shard i/n runs the entries k of the selected list with k mod n = i, and the control beside them;
its kill matrix is partial and names the shard, the whole list, the commit, the header's sha256 and
the flags that change verdicts; octant merge --kind matrix OUT DIR... combines the n shards.
Exit 0 when every mutant is killed and the unmutated build passes with evidence, 1 otherwise
(a survivor, an unconfirmed kill, an error, no evidence), 2 on usage errors.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "octant mutate: unexpected argument %q: mutants are chosen with --only ID,... (or --all)\n", fs.Arg(0))
		return 2
	}
	kindWhy := ""
	if *kind == "" {
		*kind, kindWhy = mutate.DefaultKind()
		kindWhy = fmt.Sprintf(" (--kind %s: %s)", *kind, kindWhy)
	}
	if *kind != "cuda" && *kind != "emu" {
		fmt.Fprintf(stderr, "octant mutate: --kind %q: expected cuda or emu\n", *kind)
		return 2
	}
	if *jobs < 1 {
		fmt.Fprintf(stderr, "octant mutate: --jobs %d: expected ≥ 1\n", *jobs)
		return 2
	}
	if *all && *only != "" {
		fmt.Fprintf(stderr, "octant mutate: --all and --only %s: expected one of them\n", *only)
		return 2
	}
	if *through != "" {
		if err := mutate.CheckThrough(*through); err != nil {
			fmt.Fprintf(stderr, "octant mutate: %v\n", err)
			return 2
		}
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
	var shard *mutate.Shard
	if *shardFlag != "" {
		s, err := conformance.ParseShard(*shardFlag)
		if err != nil {
			fmt.Fprintf(stderr, "octant mutate: %v\n", err)
			return 2
		}
		shard = &mutate.Shard{Index: s.Index, Count: s.Count}
	}
	headerSHA, err := provenance.FileSHA256(*header)
	if err != nil {
		fmt.Fprintf(stderr, "octant mutate: %v\n", err)
		return 2
	}
	cfg := mutate.Config{Kind: *kind, Budget: *budget, Bin: *bin, Out: *out, Full: *full, Conventional: *conventional, Jobs: *jobs, Through: *through}
	todo := mutate.Select(ms, sel)
	cfg.Info = &mutate.RunInfo{Commit: provenance.Revision(), Header: *header, HeaderSHA: headerSHA, List: todo, Flags: cfg.VerdictFlags(), Shard: shard}
	if shard != nil {
		todo = mutate.ShardOf(todo, *shard)
	}
	if !*all && sel == nil {
		fmt.Fprintf(stderr, "octant mutate: nothing selected. --all would build %s%s.\n", mutate.Plan(cfg, todo), kindWhy)
		fmt.Fprintf(stderr, "octant mutate: start it with --all, or choose mutants with --only ID,... (0 = the unmutated build; ids in %s)\n", *header)
		return 2
	}
	shardWhy := ""
	if shard != nil {
		shardWhy = fmt.Sprintf(" (shard %s of a %d-entry list: a partial kill matrix)", shard, len(cfg.Info.List))
	}
	fmt.Fprintf(stdout, "mutate: %s%s%s\n", mutate.Plan(cfg, todo), kindWhy, shardWhy)
	rows, err := mutate.Run(cfg, todo, stdout, stderr)
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
