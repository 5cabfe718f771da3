package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/conformance"
	"github.com/octant-kv/octant/fuzz"
	"github.com/octant-kv/octant/kernels"
)

// runConform certifies an architecture's kernels against the contract (package conformance).
func runConform(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("lib", "", "kernel library to certify (runtime certification on its device 0)")
	archName := fs.String("arch", "auto", "architecture: auto (the device's) or a registry name (gfx1100, gfx942, sm_90)")
	budget := fs.Duration("budget", 10*time.Minute, "time for random cases after the fixed ones")
	seed := fs.Int("seed", 1000, "first seed of the random cases (the fixed cases are seeds 0..fixed-1)")
	fixed := fs.Int("fixed", 12, "fixed cases per op and tier")
	minCases := fs.Int("min-cases", conformance.DefaultMinCases, "cases every op and tier must run for a runtime certificate (fewer: not certified)")
	out := fs.String("out", "conform-out", "directory for certificate.json, report.md, junit.xml")
	isaOnly := fs.Bool("isa-only", false, "static certification of the AMD code objects (make isa) where no such GPU is present")
	isaDir := fs.String("isa-dir", "build/isa", "disassemblies for --isa-only (make isa)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: octant conform --lib PATH [--arch auto|NAME] [--budget 10m] [--seed N] [--min-cases 32] [--out DIR]\n       octant conform --isa-only --arch gfx1100|gfx942 [--out DIR]\n\nRuns the conformance battery (docs/conformance.md) and writes certificate.json, report.md and\njunit.xml. Exit 0 certified, 1 not certified, 2 usage or environment error.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "octant conform: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *fixed < 0 || *minCases < 0 || *budget < 0 {
		fmt.Fprintf(stderr, "octant conform: --fixed %d, --min-cases %d, --budget %v: expected values ≥ 0\n", *fixed, *minCases, *budget)
		return 2
	}
	commit, dirty := suiteCommit()
	cert := &conformance.Certificate{Schema: conformance.SchemaVersion, Suite: Version, Commit: commit, Dirty: dirty,
		Date: time.Now().UTC().Format(time.RFC3339), Command: "octant conform " + strings.Join(args, " "), Seed: *seed, Budget: budget.String()}
	if *isaOnly {
		if *archName == "auto" || *lib != "" {
			fmt.Fprintln(stderr, "octant conform: --isa-only needs --arch gfx1100 or gfx942 and no --lib")
			return 2
		}
		a, err := arch.Lookup(*archName)
		if err != nil || a.Disassemble == "" || a.Vendor != arch.AMD {
			fmt.Fprintf(stderr, "octant conform: --isa-only --arch %s: expected an AMD architecture with code objects (gfx1100, gfx942)\n", *archName)
			return 2
		}
		cases, err := conformance.StaticCases(a, *isaDir)
		if err != nil {
			fmt.Fprintf(stderr, "octant conform: %v\n", err)
			return 2
		}
		cert.Mode, cert.Arch, cert.Cases, cert.Missing = "isa-only", a.Name, cases, a.Missing()
		cert.Budget = "0s"
		cert.NotCertified = []string{"runtime behaviour: no " + a.Name + " device was present; every runtime case is NotSupported"}
		for _, t := range a.Tiers {
			if !t.Built {
				cert.NotCertified = append(cert.NotCertified, fmt.Sprintf("the %s tier: registered with its profiles, but its kernels are not built by this repository, so its code objects are not checked", t.Name))
			}
		}
		return finishConform(cert, *out, stdout, stderr)
	}
	if *lib == "" {
		fmt.Fprintln(stderr, "octant conform: --lib PATH is required (or --isa-only)")
		fs.Usage()
		return 2
	}
	g, err := fuzz.OpenGPU(*lib)
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	defer g.Close()
	name := *archName
	if name == "auto" {
		name = g.Dev.Info.Arch
	}
	a, err := arch.Lookup(name)
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	if name != g.Dev.Info.Arch && !strings.HasPrefix(g.Dev.Info.Arch, name+":") {
		fmt.Fprintf(stderr, "octant conform: --arch %s but the device is %s (%s)\n", name, g.Dev.Info.Arch, g.Dev.Info.Name)
		return 2
	}
	if len(a.Requires) == 0 {
		fmt.Fprintf(stderr, "octant conform: %s has no certification requirements in the registry (it is not a GPU architecture)\n", a.Name)
		return 2
	}
	sum, err := fileSHA256(*lib)
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	cert.Mode, cert.Arch, cert.Library, cert.LibrarySHA, cert.ABI = "runtime", a.Name, *lib, sum, kernels.ABIVersion
	cert.BuildInfo, cert.Device, cert.Runtime = g.Lib.BuildInfo(), g.Dev.Info.Name, g.Dev.Info.Runtime
	cert.Missing = a.Missing()
	cert.MinCases = *minCases
	fmt.Fprintf(stdout, "conform: %s on %s (%s), %d fixed cases per op and tier, then random cases for %v\n", *lib, g.Dev.Info.Name, a.Name, *fixed, *budget)
	cert.Cases = conformance.RunBattery(g, conformance.Options{Arch: a, Budget: *budget, Fixed: *fixed, Seed: *seed, OutDir: *out, Progress: stdout})
	return finishConform(cert, *out, stdout, stderr)
}

func finishConform(cert *conformance.Certificate, out string, stdout, stderr io.Writer) int {
	cert.Finish()
	if err := cert.Write(out); err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	for _, s := range cert.Summary {
		if !strings.Contains(s.Node, "/") {
			fmt.Fprintf(stdout, "%-10s %-14s %v\n", s.Node, s.Status, s.Counts)
		}
	}
	for _, m := range cert.Missing {
		fmt.Fprintf(stdout, "missing: %s\n", m)
	}
	for _, m := range cert.TooFew {
		fmt.Fprintf(stdout, "too few cases: %s\n", m)
	}
	verdict := "CERTIFIED"
	if cert.Mode == "isa-only" {
		verdict = "CERTIFIED statically (code objects only)"
	}
	if !cert.Certified {
		verdict = "NOT CERTIFIED"
	}
	fmt.Fprintf(stdout, "conform: %s %s (%s): %s; %d cases; %s/certificate.json, report.md, junit.xml\n", cert.Arch, cert.Mode, cert.Status, verdict, len(cert.Cases), out)
	if !cert.Certified {
		return 1
	}
	return 0
}

// suiteCommit is the suite's git commit and whether its tree was dirty: from the binary's build
// info (go build stamps it), else from git in the working directory.
func suiteCommit() (string, bool) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var mod bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				mod = s.Value == "true"
			}
		}
		if rev != "" {
			return rev, mod
		}
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	st, _ := exec.Command("git", "status", "--porcelain").Output()
	return strings.TrimSpace(string(rev)), len(strings.TrimSpace(string(st))) > 0
}
