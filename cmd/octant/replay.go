package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
)

// runReproducer runs a loaded reproducer (a variable so that a test can make one fail).
var runReproducer = (*cases.Replayable).Run

// runReplay re-runs reproducer files (corpus/regressions/<op>/*.json) against the oracle, and GPU
// reproducers also on a library's implementations. Every file runs, whatever the ones before it
// gave; the last line counts them.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("lib", "", "kernel library to run GPU reproducers on (corpus/regressions/{store,rotate,decode,reduce,prefill}), or a worker spec host:ADAPTER.py?k=v (docs/adapters.md); without it they run against the oracle alone")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: octant replay [--lib PATH] FILE|DIR...

Rebuilds each reproducer (written by the fuzz targets under corpus/regressions/<op>/; a DIR
stands for every *.json file under it) and re-runs its property: against the oracle, and for GPU
reproducers on every implementation of its op in the library given with --lib (without --lib, on
the oracle alone). Each file gets a line:

  ok   FILE (what ran: "oracle", "oracle only: no --lib", or "oracle; tiers portable, mma on LIB")
  FAIL FILE: the failure                           (the property still fails)
  out  FILE: outside declared domain: REASONS      (an adapter's declaration excludes the case:
                                                    nothing ran, and it neither passes nor fails)

and a file that cannot be replayed (unreadable, not a reproducer, an unknown property, a case
field out of its range: the error names the field, its value and what was expected) an error line
on stderr; it does not stop the files after it. The last line counts them:
"replay: N ok, M failing, K unreadable" and, when --lib is an adapter whose declaration excludes
some, ", J outside the declared domain".

Exit status: 2 if any file is unreadable or invalid (or the library cannot be opened), else 1 if
any reproducer still fails, else 4 if any was outside the declared domain (nothing failed, but
not every reproducer ran), else 0.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "octant replay: expected reproducer files or directories of them")
		fs.Usage()
		return 2
	}
	paths, err := reproducerPaths(fs.Args(), stdout)
	if err != nil {
		fmt.Fprintf(stderr, "octant replay: %v\n", err)
		return 2
	}
	var g *harness.Lib
	if *lib != "" {
		var err error
		if g, err = openLib(*lib); err != nil {
			fmt.Fprintf(stderr, "octant replay: --lib %s: %v\n", *lib, err)
			return 2
		}
		defer g.Close()
		fmt.Fprintf(stdout, "library: %s\n", g)
	}
	var ok, failing, unreadable, outside int
	for _, p := range paths {
		x, err := cases.LoadReproducer(p)
		if err != nil {
			fmt.Fprintf(stderr, "octant replay: %v\n", err) // the error starts with the path
			unreadable++
			continue
		}
		err = runReproducer(x, g)
		if d := (*harness.DomainError)(nil); errors.As(err, &d) {
			fmt.Fprintf(stdout, "out  %s: %v (not run on %s)\n", p, d, g.Path)
			outside++
			continue
		}
		if err != nil {
			fmt.Fprintf(stdout, "FAIL %v\n", err) // the error starts with the path
			failing++
			continue
		}
		fmt.Fprintf(stdout, "ok   %s (%s)\n", p, x.Ran(g))
		ok++
	}
	counts := []string{fmt.Sprintf("%d ok", ok), fmt.Sprintf("%d failing", failing), fmt.Sprintf("%d unreadable", unreadable)}
	if outside > 0 {
		counts = append(counts, fmt.Sprintf("%d outside the declared domain", outside))
	}
	fmt.Fprintf(stdout, "replay: %s\n", strings.Join(counts, ", "))
	return replayStatus(failing, unreadable, outside)
}

// replayStatus is replay's exit status: 2 if any file is unreadable, else 1 if any reproducer
// fails, else 4 if any was outside the library's declared domain (not run), else 0.
func replayStatus(failing, unreadable, outside int) int {
	switch {
	case unreadable > 0:
		return 2
	case failing > 0:
		return 1
	case outside > 0:
		return 4
	}
	return 0
}
