package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/octant-kv/octant/fuzz"
)

// runReplay re-runs reproducer files (corpus/regressions/<op>/*.json) against the oracle.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: octant replay FILE...\n\nRebuilds each reproducer (written by the fuzz targets under corpus/regressions/<op>/) and\nre-runs its property against the oracle. Exit 1 if any still fails, 2 if a file cannot be read.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	status := 0
	for _, p := range fs.Args() {
		if _, err := fuzz.ReadReproducer(p); err != nil {
			fmt.Fprintf(stderr, "octant replay: %v\n", err)
			return 2
		}
		if err := fuzz.Replay(p); err != nil {
			fmt.Fprintf(stdout, "FAIL %v\n", err) // the error starts with the path
			status = 1
			continue
		}
		fmt.Fprintf(stdout, "ok   %s\n", p)
	}
	return status
}
