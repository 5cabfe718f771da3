package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/octant-kv/octant/conformance"
	"github.com/octant-kv/octant/internal/provenance"
	"github.com/octant-kv/octant/internal/settings"
	"github.com/octant-kv/octant/mutate"
)

// defaultPropsRun selects the rapid property tests of ./fuzz a campaign runs: the GPU properties,
// the oracle-only forms of them, and the must-not-matter properties.
const defaultPropsRun = "^(TestGPU|TestOracle|TestMustNotMatter)"

// runProps runs one shard of a seeded property campaign: the rapid property tests of ./fuzz with
// -rapid.checks and a per-shard -rapid.seed whose seeds no other shard uses (shardSeeds), and
// writes campaign.json.
func runProps(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("props", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shardFlag := fs.String("shard", "0/1", "i/n: this shard of the campaign; its seeds are disjoint from every other shard's")
	seed := fs.Uint64("seed", 1, "the campaign's base seed (≥ 1); shard i starts at seed + i·W (docs/fuzz.md)")
	checks := fs.Int("checks", 100, "rapid checks per property per shard (-rapid.checks)")
	run := fs.String("run", defaultPropsRun, "the tests of ./fuzz to run (-test.run)")
	lib := fs.String("lib", "", "kernel library the GPU properties judge (OCTANT_LIB of the tests); without it they skip and the oracle ones run")
	bin := fs.String("bin", filepath.Join("bin", "fuzz.test"), "the prebuilt ./fuzz test binary (make gpu-bins); go test ./fuzz when missing")
	out := fs.String("out", filepath.Join("build", "props"), "directory for campaign.json, the test log and reproducers")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: octant props [--shard i/n] [--seed S] [--checks C] [--run REGEXP] [--lib PATH] [--out DIR]

Runs one shard of a seeded property campaign: the rapid property tests of ./fuzz (--run) with
-rapid.checks=C and -rapid.seed = S + i·W, where W = K(K+1)/2 + 1, K = 11·C − 2, is how many seeds
one rapid.Check of C checks can use, so that no two shards share a seed (docs/fuzz.md, "Seeded
property campaigns"). Writes DIR/campaign.json (the shard, its seed range, the commit, the
library's sha256, each test's pass/fail/skip, each failure's seed and reproducer lines) and
DIR/props.log; octant merge --kind campaign combines the shards. Run from the repository root.
Exit 0 when no test failed and some passed, 1 otherwise, 2 usage error.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "octant props: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	s, err := conformance.ParseShard(*shardFlag)
	if err != nil {
		fmt.Fprintf(stderr, "octant props: %v\n", err)
		return 2
	}
	if _, err := regexp.Compile(*run); err != nil {
		fmt.Fprintf(stderr, "octant props: --run %q: expected a regular expression: %v\n", *run, err)
		return 2
	}
	rng, err := shardSeeds(*seed, *checks, s.Index, s.Count)
	if err != nil {
		fmt.Fprintf(stderr, "octant props: %v\n", err)
		return 2
	}
	c := &Campaign{Shard: &mutate.Shard{Index: s.Index, Count: s.Count}, Count: s.Count, BaseSeed: *seed, Checks: *checks, Run: *run,
		Commit: provenance.Revision(), Seeds: []SeedRange{rng}, Command: "octant props " + strings.Join(args, " ")}
	env := []string{}
	if *lib != "" {
		abs, err := filepath.Abs(*lib)
		if err == nil {
			c.LibSHA, err = provenance.FileSHA256(abs)
		}
		if err != nil {
			fmt.Fprintf(stderr, "octant props: --lib %s: %v\n", *lib, err)
			return 2
		}
		c.Library = abs
		env = append(env, settings.LibEnv+"="+abs)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "octant props: %v\n", err)
		return 2
	}
	absOut, _ := filepath.Abs(*out)
	env = append(env, settings.RegressionsEnv+"="+filepath.Join(absOut, "regressions"), settings.ReplayCmdEnv+"=bin/octant replay")
	fmt.Fprintf(stdout, "props: shard %s, checks %d per property, seeds %d..%d (-rapid.seed=%d), tests %s\n", s, *checks, rng.First, rng.Last, rng.First, *run)
	events, from, runErr := propsEvents(*bin, *run, *checks, rng.First, env, filepath.Join(*out, "props.log"))
	c.TestsFrom = from
	c.Tests, c.Failures = campaignResults(events)
	if runErr != nil && len(c.Failures) == 0 {
		c.Error = runErr.Error()
	}
	c.Date = time.Now().UTC().Format(time.RFC3339)
	if err := writeCampaign(*out, c); err != nil {
		fmt.Fprintf(stderr, "octant props: %v\n", err)
		return 2
	}
	return reportCampaign(c, filepath.Join(*out, "campaign.json"), stdout)
}

// propsEvents runs the tests matching run of ./fuzz with rapid's flags: the prebuilt binary bin
// (in fuzz/ when the working directory has it, as go test runs it) with -test.v=test2json, else
// go test -json ./fuzz; its output goes to logPath. It returns the test events, what ran the
// tests, and the error of a run that exited non-zero.
func propsEvents(bin, run string, checks int, seed uint64, env []string, logPath string) ([]mutate.Event, string, error) {
	rapidArgs := []string{fmt.Sprintf("-rapid.checks=%d", checks), fmt.Sprintf("-rapid.seed=%d", seed)}
	var cmd *exec.Cmd
	framed := false
	if _, err := os.Stat(bin); err == nil {
		abs, _ := filepath.Abs(bin)
		cmd = exec.Command(abs, append([]string{"-test.run=" + run, "-test.count=1", "-test.v=test2json"}, rapidArgs...)...)
		if st, err := os.Stat("fuzz"); err == nil && st.IsDir() {
			cmd.Dir = "fuzz"
			wd, _ := filepath.Abs("fuzz")
			env = append(env, "PWD="+wd)
		}
		framed = true
	} else {
		cmd = exec.Command("go", append([]string{"test", "-json", "-count=1", "-run", run, "./fuzz", "-args"}, rapidArgs...)...)
	}
	from := strings.Join(cmd.Args, " ")
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, from, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	if framed {
		cmd.Stderr = &buf
	}
	runErr := cmd.Run()
	logf.Write(buf.Bytes())
	var events []mutate.Event
	if framed {
		events, err = mutate.ReadFramed(&buf)
	} else {
		events, err = mutate.ReadEvents(&buf)
	}
	if runErr == nil {
		runErr = err
	}
	if runErr != nil {
		runErr = fmt.Errorf("%s: %v (log in %s)", from, runErr, logPath)
	}
	return events, from, runErr
}

// writeCampaign writes c to dir/campaign.json.
func writeCampaign(dir string, c *Campaign) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "campaign.json"), append(b, '\n'), 0o644)
}

// reportCampaign prints c's tests, failures and verdict, and returns the exit status: 0 passed, 1
// not.
func reportCampaign(c *Campaign, path string, stdout io.Writer) int {
	counts := map[string]int{}
	for _, t := range c.Tests {
		counts[t.Result]++
	}
	fmt.Fprintf(stdout, "tests: %d passed, %d failed, %d skipped\n", counts["pass"], counts["fail"], counts["skip"])
	for _, f := range c.Failures {
		name := f.Test
		if f.Shard != "" {
			name = f.Shard + " " + name
		}
		fmt.Fprintf(stdout, "FAIL %s\n", name)
		for _, l := range f.Lines {
			fmt.Fprintf(stdout, "    %s\n", l)
		}
	}
	if c.Error != "" {
		fmt.Fprintf(stdout, "error: %s\n", c.Error)
	}
	fmt.Fprintf(stdout, "campaign: %s\n", path)
	if c.Passed() {
		return 0
	}
	return 1
}

// mergeCampaignShards combines shard campaigns (octant props --shard i/n) into out/campaign.json
// (mergeCampaigns) and prints the total checks and the seeds used. Exit 0 when every shard ran
// and passed, 1 otherwise, 2 when a shard is unreadable, cut, doubled or of another campaign.
func mergeCampaignShards(out string, shards []string, cmdline string, stdout, stderr io.Writer) int {
	var files []campaignFile
	for _, d := range shards {
		path := d
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			path = filepath.Join(d, "campaign.json")
		}
		c, err := readCampaign(path)
		if err != nil {
			fmt.Fprintf(stderr, "octant merge: shard %s: %v\n", d, err)
			return 2
		}
		files = append(files, campaignFile{path, c})
	}
	m, err := mergeCampaigns(files)
	if err != nil {
		fmt.Fprintf(stderr, "octant %v\n", err)
		return 2
	}
	m.Command, m.Date = cmdline, time.Now().UTC().Format(time.RFC3339)
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintf(stderr, "octant merge: %v\n", err)
		return 2
	}
	if err := writeCampaign(out, m); err != nil {
		fmt.Fprintf(stderr, "octant merge: %v\n", err)
		return 2
	}
	var ranges []string
	for _, r := range m.Seeds {
		ranges = append(ranges, fmt.Sprintf("%d..%d", r.First, r.Last))
	}
	fmt.Fprintf(stdout, "checks: %d per property in each of %d shards run = %d per property\nseeds: %s\n", m.Checks, len(m.Shards), m.Checks*len(m.Shards), strings.Join(ranges, ", "))
	for _, s := range m.NotRun {
		fmt.Fprintf(stdout, "shard not run: %s\n", s)
	}
	return reportCampaign(m, filepath.Join(out, "campaign.json"), stdout)
}
