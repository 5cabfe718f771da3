package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/octant-kv/octant/fuzz"
	"github.com/octant-kv/octant/harness"
)

// runReplay re-runs reproducer files (corpus/regressions/<op>/*.json) against the oracle.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("lib", "", "kernel library to run GPU reproducers on (corpus/regressions/{store,rotate,decode,reduce,prefill}); without it they run against the oracle alone")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: octant replay [--lib PATH] FILE|DIR...\n\nRebuilds each reproducer (written by the fuzz targets under corpus/regressions/<op>/; a DIR\nstands for every *.json file under it) and re-runs its property: against the oracle, and for GPU\nreproducers on every tier of the library given with --lib. Exit 1 if any still fails, 2 if a file\nor the library cannot be read.")
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
		if g, err = harness.Open(*lib); err != nil {
			fmt.Fprintf(stderr, "octant replay: --lib %s: %v\n", *lib, err)
			return 2
		}
		defer g.Close()
		fmt.Fprintf(stdout, "library: %s\n", g)
	}
	status := 0
	for _, p := range paths {
		if _, err := harness.ReadReproducer(p); err != nil {
			fmt.Fprintf(stderr, "octant replay: %v\n", err)
			return 2
		}
		if err := fuzz.ReplayLib(p, g); err != nil {
			fmt.Fprintf(stdout, "FAIL %v\n", err) // the error starts with the path
			status = 1
			continue
		}
		fmt.Fprintf(stdout, "ok   %s\n", p)
	}
	return status
}
