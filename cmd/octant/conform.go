package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/conformance"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/settings"
)

// runConform certifies an architecture's kernels against the contract (package conformance):
// flags, the call, and what a person reads.
func runConform(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("lib", "", "kernel library to certify (runtime certification on its device 0)")
	archName := fs.String("arch", "auto", "architecture: auto (the device's) or a registry name (gfx1100, gfx942, sm_90)")
	budget := fs.Duration("budget", 10*time.Minute, "time for random cases after the fixed ones")
	seed := fs.Int("seed", 1000, "first seed of the random cases (the fixed cases are seeds 0..fixed-1)")
	fixed := fs.Int("fixed", 12, "fixed cases per op and tier")
	minCases := fs.Int("min-cases", conformance.DefaultMinCases, "cases every op and tier must run for a runtime certificate (fewer: not certified; at least 1)")
	tiers := fs.String("tiers", "", "comma-separated tiers to judge beyond the required ones (default: every tier the library lists; a required tier is always judged)")
	out := fs.String("out", "build/conform", "directory for certificate.json, report.md, junit.xml")
	isaOnly := fs.Bool("isa-only", false, "static checks of the AMD code objects (make isa) where no such GPU is present; never certifies")
	isaDir := fs.String("isa-dir", "build/isa", "disassemblies for --isa-only (make isa)")
	cases := fs.Int("cases", -1, "random cases per op and tier after the fixed ones, instead of --budget: the run's work is then the same on any machine (not with --budget)")
	shardFlag := fs.String("shard", "", "i/n: judge only part i of n of a --cases run's case list (a partial certificate; octant merge combines the n shards)")
	devices := fs.String("devices", "", "comma-separated GPU ids (0,1,2,3): one --shard i/n process per device, each seeing only its device (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES), merged into --out (needs --cases; not with --shard)")
	uf := addUnitFlags(fs)
	caseTimeout := fs.Duration("case-timeout", 10*time.Minute, "watchdog: a case still running after this is hung in the library: its reproducer is written and conform exits 3 (0: no watchdog)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: octant conform --lib PATH [--arch auto|NAME] [--budget 10m | --cases N [--shard i/n | --devices 0,1,...]] [--seed N] [--min-cases 32] [--out DIR]\n       octant conform --lib PATH --arch gfx1100 [--isa-dir build/isa] ...   (on a model: see below)\n       octant conform --isa-only --arch gfx1100|gfx942 [--out DIR]\n\nRuns the conformance battery (docs/conformance.md) and writes certificate.json, report.md and\njunit.xml. With --arch naming another architecture than the library's device, and a library that\nruns that architecture's native tiers on a model of its instructions (the emulator and CUDA builds\nrun gfx1100's WMMA tier as \"wmma-model\"), it certifies that architecture on the model plus its\ncode objects (make isa). Exit 0 certified, 1 not certified (a static check never certifies:\nnothing runs), 2 usage or environment error, 3 a case hung in the library (--case-timeout),\n130 interrupted (no certificate).")
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
	if *fixed < 0 || *budget < 0 || *caseTimeout < 0 {
		fmt.Fprintf(stderr, "octant conform: --fixed %d, --budget %v, --case-timeout %v: expected values ≥ 0\n", *fixed, *budget, *caseTimeout)
		return 2
	}
	budgetSet := false
	fs.Visit(func(f *flag.Flag) { budgetSet = budgetSet || f.Name == "budget" })
	if *cases >= 0 && budgetSet {
		fmt.Fprintf(stderr, "octant conform: --cases %d and --budget %v: expected one of them (a case count or a wall-clock budget for the random cases)\n", *cases, *budget)
		return 2
	}
	if *cases < -1 {
		fmt.Fprintf(stderr, "octant conform: --cases %d: expected a count ≥ 0\n", *cases)
		return 2
	}
	devicesSet := false
	fs.Visit(func(f *flag.Flag) { devicesSet = devicesSet || f.Name == "devices" })
	if devicesSet {
		if *cases < 0 || *shardFlag != "" || *isaOnly || *uf.list {
			fmt.Fprintf(stderr, "octant conform: --devices %s: expected --cases N beside it and no --shard, --isa-only or --list-units (it runs the shards of a runtime certificate itself: one per device)\n", *devices)
			return 2
		}
		ids, err := parseDevices(*devices)
		if err != nil {
			fmt.Fprintf(stderr, "octant conform: %v\n", err)
			return 2
		}
		return runDevices(fs, ids, *out, "octant conform "+strings.Join(args, " "), stdout, stderr)
	}
	var shard *conformance.Shard
	if *shardFlag != "" {
		if *cases < 0 {
			fmt.Fprintf(stderr, "octant conform: --shard %s: expected --cases N beside it (a budget run has no fixed case list to split)\n", *shardFlag)
			return 2
		}
		s, err := conformance.ParseShard(*shardFlag)
		if err != nil {
			fmt.Fprintf(stderr, "octant conform: %v\n", err)
			return 2
		}
		shard = &s
	}
	unitNames, err := uf.names()
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	if *minCases < 1 {
		fmt.Fprintf(stderr, "octant conform: --min-cases %d: expected at least 1 (a certificate never rests on an op and tier that ran no case)\n", *minCases)
		return 2
	}
	env, err := settings.FromEnv()
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	suite := conformance.Suite{Version: Version, Command: "octant conform " + strings.Join(args, " "), VisibleDevices: env.VisibleDevices}
	if *isaOnly {
		if *archName == "auto" || *lib != "" {
			fmt.Fprintln(stderr, "octant conform: --isa-only needs --arch gfx1100 or gfx942 and no --lib")
			return 2
		}
		a, err := arch.Lookup(*archName)
		if err != nil {
			fmt.Fprintf(stderr, "octant conform: --isa-only --arch %s: %v\n", *archName, err)
			return 2
		}
		cert, err := conformance.Static(a, *isaDir, suite)
		if err != nil {
			fmt.Fprintf(stderr, "octant conform: --isa-only --arch %s: %v\n", *archName, err)
			return 2
		}
		return writeCertificate("conform", cert, *out, stdout, stderr)
	}
	if *lib == "" {
		fmt.Fprintln(stderr, "octant conform: --lib PATH is required (or --isa-only)")
		fs.Usage()
		return 2
	}
	l, err := openLib(*lib)
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	defer l.Close()
	// An interrupt stops the battery between cases (interruptContext: a case still running after
	// the grace, or a second interrupt, ends the process at once).
	ctx, release := interruptContext(stderr, "conform", interruptGrace)
	defer release()
	l.Dev.EnablePool(harness.PoolBytes)
	name := *archName
	if name == "auto" {
		name = l.Dev.Info.Arch
	}
	a, err := arch.Lookup(name)
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		return 2
	}
	o := conformance.Options{Budget: *budget, Fixed: *fixed, Seed: *seed, MinCases: *minCases, OutDir: *out, Progress: stdout,
		CaseTimeout: *caseTimeout, Hung: func(h conformance.HungCase) { os.Exit(reportHung(stderr, h)) },
		CaseCount: *cases >= 0, Cases: max(*cases, 0), Shard: shard}
	random := fmt.Sprintf("random cases for %v", *budget)
	if o.CaseCount {
		random = fmt.Sprintf("%d random cases each", *cases)
		if shard != nil {
			random += fmt.Sprintf(", shard %s of the case list", shard)
		}
	}
	if *tiers != "" {
		o.Tiers = arch.ParseTierNames(*tiers)
	}
	o.Units = unitNames
	model := name != l.Dev.Info.Arch && !strings.HasPrefix(l.Dev.Info.Arch, name+":") && conformance.ModelOffered(l, a)
	if *uf.list {
		return listUnits(stdout, stderr, l, a, o, model)
	}
	var cert *conformance.Certificate
	if model {
		fmt.Fprintf(stdout, "conform: %s on a model: %s on %s (%s) runs %s's native tiers with the instructions modelled, plus %s's code objects in %s; %d fixed cases per op and tier, then %s\n",
			a.Name, *lib, l.Dev.Info.Name, l.Dev.Info.Arch, a.Name, a.Name, *isaDir, *fixed, random)
		cert, err = conformance.Model(ctx, l, a, *isaDir, o, suite)
	} else {
		fmt.Fprintf(stdout, "conform: %s on %s (%s), %d fixed cases per op and tier, then %s\n", *lib, l.Dev.Info.Name, a.Name, *fixed, random)
		cert, err = conformance.Runtime(ctx, l, a, o, suite)
	}
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: %v\n", err)
		if ctx.Err() != nil {
			return 130
		}
		return 2
	}
	return writeCertificate("conform", cert, *out, stdout, stderr)
}

// writeCertificate writes the certificate's files and prints, for a person: one line per op with
// its status and case counts, what the certificate rests on, what is missing, and the verdict.
func writeCertificate(cmd string, cert *conformance.Certificate, out string, stdout, stderr io.Writer) int {
	if err := cert.Write(out); err != nil {
		fmt.Fprintf(stderr, "octant %s: %v\n", cmd, err)
		return 2
	}
	fmt.Fprintf(stdout, "%-8s %-14s %s\n", "op", "status", "cases")
	for _, s := range cert.Summary {
		if !strings.Contains(s.Node, "/") {
			fmt.Fprintf(stdout, "%-8s %-14s %s\n", s.Node, s.Status, conformance.CountsString(s.Counts))
		}
	}
	for _, e := range cert.Evidence {
		opt := ""
		if e.Optional {
			opt = " (not required; listed by the library)"
		}
		fmt.Fprintf(stdout, "evidence: %s/%s%s: %d cases, %s; %s\n", e.Op, e.Tier, opt, e.Cases, e.Status, e.Describe())
	}
	for _, m := range cert.Missing {
		fmt.Fprintf(stdout, "missing: %s\n", m)
	}
	for _, m := range cert.TooFew {
		fmt.Fprintf(stdout, "too few cases: %s\n", m)
	}
	for _, m := range cert.Notes {
		fmt.Fprintf(stdout, "note: %s\n", m)
	}
	for _, m := range cert.ShardsNotRun {
		fmt.Fprintf(stdout, "shard not run: %s\n", m)
	}
	for _, m := range cert.ShardDevices {
		fmt.Fprintf(stdout, "shard device: %s\n", m)
	}
	fmt.Fprintf(stdout, "%s: %s (%s): %s; %d cases, worst status %s; %s/certificate.json, report.md, junit.xml\n",
		cmd, cert.Arch, cert.Mode, cert.Verdict(), len(cert.Cases), cert.Status, out)
	return exitStatus(cert)
}

// exitStatus is conform's and merge's exit status for a certificate written: 0 certified, 1 not.
// A shard's certificate is never certified; its status is 0 when none of its cases failed, so that
// a scheduler's job array reports a shard failed only when a case of it did (octant merge decides
// the certificate).
func exitStatus(cert *conformance.Certificate) int {
	if cert.Certified || cert.Shard != nil && cert.Status != harness.Fail && len(cert.Missing) == 0 {
		return 0
	}
	return 1
}

// reportHung says which case hung in the library and how to reproduce it, and returns conform's
// exit status for it: the library cannot be interrupted from Go, so the process ends.
func reportHung(w io.Writer, h conformance.HungCase) int {
	fmt.Fprintf(w, "octant conform: case %s has not returned from the library after %v: it hangs\nreplay: %s\n", h.Path, h.After, h.Replay)
	return 3
}
