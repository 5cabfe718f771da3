package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/octant-kv/octant/mutate"
)

// rapidInvalidMult is rapid v1's invalidChecksMult: a rapid.Check stops after `checks` valid
// cases or checks·rapidInvalidMult invalid ones, so it runs at most checks·(1+rapidInvalidMult)−1
// cases (pgregory.net/rapid engine.go, findBug).
const rapidInvalidMult = 10

// seedWidth is how many consecutive seeds one rapid.Check with -rapid.checks=checks can use from
// its base seed S: case k (k = 0, 1, …) runs with seed S + k(k+1)/2 (rapid adds the number of
// cases so far before each one), and k ≤ K = checks·(1+rapidInvalidMult) − 2, so its seeds lie in
// [S, S + K(K+1)/2], a width of K(K+1)/2 + 1 (docs/fuzz.md, "Seeded property campaigns"). ok is
// false when the width does not fit in a uint64.
func seedWidth(checks int) (w uint64, ok bool) {
	if checks < 1 {
		return 0, false
	}
	k := uint64(checks)*(1+rapidInvalidMult) - 2
	hi, lo := bits.Mul64(k, k+1)
	if hi != 0 {
		return 0, false
	}
	w = lo/2 + 1
	return w, w != 0
}

// SeedRange is the seeds a shard's rapid.Check calls can use, First and Last included.
type SeedRange struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

// shardSeeds is shard i of n's base seed and range in a campaign with base seed base and checks
// per property: shard i starts at base + i·W (W = seedWidth(checks)), so the ranges are
// consecutive and disjoint. Base 0 is refused (rapid takes it for "pick a random seed"), and so
// is a campaign whose last seed does not fit in a uint64.
func shardSeeds(base uint64, checks, i, n int) (SeedRange, error) {
	w, ok := seedWidth(checks)
	if !ok {
		return SeedRange{}, fmt.Errorf("--checks %d: expected 1 ≤ checks with the seed range of a shard within a uint64", checks)
	}
	if base == 0 {
		return SeedRange{}, fmt.Errorf("--seed 0: expected a seed ≥ 1 (rapid takes 0 for a random seed, which no shard can reproduce)")
	}
	hi, span := bits.Mul64(uint64(n), w)
	if hi != 0 || span-1 > math.MaxUint64-base {
		return SeedRange{}, fmt.Errorf("--seed %d, --checks %d, %d shards: the last seed passes 2^64-1; expected a smaller seed or fewer checks", base, checks, n)
	}
	first := base + uint64(i)*w
	return SeedRange{First: first, Last: first + w - 1}, nil
}

// Campaign is what campaign.json holds: one shard of a seeded property campaign (octant props)
// or, merged, the campaign (Shard nil).
type Campaign struct {
	Shard     *mutate.Shard `json:"shard,omitempty"`
	Count     int           `json:"shard_count"`
	BaseSeed  uint64        `json:"base_seed"`
	Checks    int           `json:"checks"`
	Run       string        `json:"run"`
	Commit    string        `json:"commit"`
	Library   string        `json:"library,omitempty"`
	LibSHA    string        `json:"library_sha256,omitempty"`
	Seeds     []SeedRange   `json:"seeds"` // the shard's range; merged: the union, one per shard run
	Tests     []TestResult  `json:"tests"`
	Failures  []Failure     `json:"failures,omitempty"`
	Error     string        `json:"error,omitempty"` // the tests could not run (a build, a crash outside any test)
	NotRun    []string      `json:"shards_not_run,omitempty"`
	Shards    []string      `json:"shards_run,omitempty"` // merged: the shards combined
	Command   string        `json:"command"`
	Date      string        `json:"date"`
	TestsFrom string        `json:"tests_from"` // the test binary, or "go test ./fuzz"
}

// TestResult is one top-level test of a shard (or, merged, of a shard: "i/n TestX").
type TestResult struct {
	Name   string `json:"name"`
	Result string `json:"result"` // pass, fail, skip
}

// Failure is a failed test with the lines of its output that reproduce it: rapid's seed or fail
// file, the reproducer's replay command.
type Failure struct {
	Test  string   `json:"test"`
	Shard string   `json:"shard,omitempty"`
	Lines []string `json:"lines"`
}

// Passed is the campaign's verdict: no error, no shard missing, no test failed, and some test
// passed (a campaign in which every test skipped rests on nothing).
func (c *Campaign) Passed() bool {
	passed := 0
	for _, t := range c.Tests {
		if t.Result == "fail" {
			return false
		}
		if t.Result == "pass" {
			passed++
		}
	}
	return c.Error == "" && len(c.NotRun) == 0 && passed > 0
}

// campaignResults turns a test run's events into its top-level tests' results (in the order they
// ended) and the failures, each with the output lines of the test and its subtests that name a
// seed, a fail file or a reproducer.
func campaignResults(events []mutate.Event) ([]TestResult, []Failure) {
	var tests []TestResult
	var fails []Failure
	lines := map[string][]string{}
	for _, e := range events {
		top, _, _ := strings.Cut(e.Test, "/")
		switch e.Action {
		case "output":
			if top != "" && reproLine(e.Output) {
				lines[top] = append(lines[top], strings.TrimSpace(e.Output))
			}
		case "pass", "fail", "skip":
			if e.Test == "" || strings.Contains(e.Test, "/") {
				continue
			}
			tests = append(tests, TestResult{Name: e.Test, Result: e.Action})
			if e.Action == "fail" {
				fails = append(fails, Failure{Test: e.Test, Lines: lines[e.Test]})
			}
		}
	}
	return tests, fails
}

// reproLine says whether a test's output line reproduces a failure: rapid's -rapid.seed or
// -rapid.failfile, or a reproducer's replay line.
func reproLine(l string) bool {
	return strings.Contains(l, "-rapid.seed=") || strings.Contains(l, "-rapid.failfile=") || strings.Contains(l, "replay") || strings.Contains(l, "reproducer")
}

// readCampaign reads a campaign.json; a cut or foreign file is an error naming it.
func readCampaign(path string) (*Campaign, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Campaign
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: expected a whole campaign.json, found %d bytes that do not parse (cut or not a campaign): %v", path, len(b), err)
	}
	return &c, nil
}

// campaignFile is a shard's campaign and where it was read from.
type campaignFile struct {
	name string
	c    *Campaign
}

// mergeCampaigns combines the shards of one seeded property campaign: shards of different
// campaigns (base seed, checks, n, test pattern, commit, library digest) are refused, and so is a
// shard given twice and one whose seed range is not its shard's (shardSeeds: an edited file).
// Missing shards are named as not run; every shard's tests and failures are kept, named by shard.
func mergeCampaigns(files []campaignFile) (*Campaign, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("merge: expected at least one shard campaign, found none")
	}
	base := files[0].c
	byIndex := map[int]campaignFile{}
	for _, f := range files {
		s := f.c.Shard
		if s == nil || s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
			return nil, fmt.Errorf("merge: %s: expected a shard's campaign (octant props --shard i/n), found shard %v", f.name, s)
		}
		for _, d := range []struct {
			what string
			x, y any
		}{
			{"base seed", base.BaseSeed, f.c.BaseSeed}, {"checks", base.Checks, f.c.Checks}, {"shard count n", base.Shard.Count, s.Count},
			{"tests (--run)", base.Run, f.c.Run}, {"commit", base.Commit, f.c.Commit}, {"library sha256", base.LibSHA, f.c.LibSHA},
		} {
			if !reflect.DeepEqual(d.x, d.y) {
				return nil, fmt.Errorf("merge: %s and %s are shards of different campaigns: %s %v vs %v", files[0].name, f.name, d.what, d.x, d.y)
			}
		}
		want, err := shardSeeds(f.c.BaseSeed, f.c.Checks, s.Index, s.Count)
		if err != nil {
			return nil, fmt.Errorf("merge: %s: %v", f.name, err)
		}
		if !slices.Equal(f.c.Seeds, []SeedRange{want}) {
			return nil, fmt.Errorf("merge: %s: shard %s must use seeds %d..%d, found %v (edited)", f.name, s, want.First, want.Last, f.c.Seeds)
		}
		if prev, dup := byIndex[s.Index]; dup {
			return nil, fmt.Errorf("merge: shard %s given twice: %s and %s", s, prev.name, f.name)
		}
		byIndex[s.Index] = f
	}
	m := *base
	m.Shard, m.Seeds, m.Tests, m.Failures, m.Error, m.NotRun, m.Shards = nil, nil, nil, nil, "", nil, nil
	var errs []string
	for i := range base.Shard.Count {
		s := mutate.Shard{Index: i, Count: base.Shard.Count}.String()
		f, ok := byIndex[i]
		if !ok {
			m.NotRun = append(m.NotRun, s)
			continue
		}
		m.Shards = append(m.Shards, s)
		m.Seeds = append(m.Seeds, f.c.Seeds...)
		for _, t := range f.c.Tests {
			m.Tests = append(m.Tests, TestResult{Name: s + " " + t.Name, Result: t.Result})
		}
		for _, fl := range f.c.Failures {
			fl.Shard = s
			m.Failures = append(m.Failures, fl)
		}
		if f.c.Error != "" {
			errs = append(errs, s+": "+f.c.Error)
		}
	}
	m.Error = strings.Join(errs, "; ")
	return &m, nil
}
