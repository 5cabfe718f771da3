// Command octant is Octant's command line: golden-vector checks of the oracle and, as they land,
// conformance runs, fuzzing, replays, ISA checks and benchmarks.
//
// Exit status: 0 success, 1 a check failed, 2 usage or environment error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// command is one subcommand: run gets the arguments after the subcommand name.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

var commands = []command{
	{"bench", "time the decode and prefill tiers of a kernel library on a device", runBench},
	{"conform", "certify an architecture's kernels against the contract", runConform},
	{"fuzz", "run one coverage-guided Go fuzzer per GPU (--devices) and merge their corpora", runFuzz},
	{"golden", "verify golden-vector files against the oracle", runGolden},
	{"merge", "combine the shards of one sharded run (certificates, ...) into its result", runMerge},
	{"mutate", "build mutant kernel libraries and measure which tests kill them", runMutate},
	{"props", "run one shard of a seeded property campaign (disjoint rapid seeds per shard)", runProps},
	{"replay", "re-run reproducer files against the oracle (and a kernel library: --lib)", runReplay},
	{"version", "print the suite version", runVersion},
}

// Version is the suite version recorded in reports.
const Version = "0.1.0"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "octant: expected a command")
		usage(stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout) // asked for: the usage is the output
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "octant: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: octant <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'octant <command> -h' for a command's flags.")
}

// runVersion prints the suite version. It takes no flags and no arguments: -h and --help print
// its usage (on stdout, exit 0, as the top-level --help does); anything else is a usage error.
func runVersion(args []string, stdout, stderr io.Writer) int {
	usage := "usage: octant version\n\nPrints the suite version (the one recorded in reports) and exits 0. It takes no flags."
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the usage goes to stdout when asked for, to stderr after an error
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stdout, usage)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "octant version: %v\n%s\n", err, usage)
		return 2
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "octant version: unexpected argument %q: expected none\n%s\n", fs.Arg(0), usage)
		return 2
	}
	fmt.Fprintf(stdout, "octant %s\n", Version)
	return 0
}
