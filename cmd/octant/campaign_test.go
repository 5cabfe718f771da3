package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// setRapid sets rapid's flags (name without "rapid.") for the test, restoring them afterwards.
func setRapid(t *testing.T, set map[string]string) {
	t.Helper()
	for k, v := range set {
		fl := flag.Lookup("rapid." + k)
		old := fl.Value.String()
		if err := fl.Value.Set(v); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fl.Value.Set(old) })
	}
}

// TestRapidSeedSequence checks the model shardSeeds rests on against rapid itself: a rapid.Check
// with -rapid.checks=C that draws the most cases it can (10·C − 1 invalid, then C valid: 11·C − 1
// in all) draws case k from seed S + k(k+1)/2 (each case's first draw equals the one rapid draws
// from that seed as a run's first case), and no case beyond seedWidth(C) − 1 past S.
func TestRapidSeedSequence(t *testing.T) {
	const base = 1000
	for _, checks := range []int{1, 2, 3} {
		var got []uint64
		setRapid(t, map[string]string{"seed": fmt.Sprint(base), "checks": fmt.Sprint(checks)})
		t.Run(fmt.Sprintf("checks%d", checks), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				got = append(got, rapid.Uint64().Draw(rt, "x"))
				if len(got) < 10*checks {
					rt.SkipNow() // invalid: rapid goes on to its limit of invalid cases
				}
			})
		})
		if len(got) != 11*checks-1 {
			t.Fatalf("checks %d: rapid ran %d cases, the model says at most %d", checks, len(got), 11*checks-1)
		}
		w, _ := seedWidth(checks)
		for k, g := range got {
			s := uint64(base + k*(k+1)/2)
			if s > base+w-1 {
				t.Errorf("checks %d: case %d's seed %d is past the shard's range %d..%d", checks, k, s, base, base+w-1)
			}
			var first []uint64
			setRapid(t, map[string]string{"seed": fmt.Sprint(s), "checks": "1"})
			t.Run("alone", func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) { first = append(first, rapid.Uint64().Draw(rt, "x")) })
			})
			if len(first) == 0 || first[0] != g {
				t.Errorf("checks %d: case %d drew %d; from seed %d rapid draws %v", checks, k, g, s, first)
			}
		}
	}
}

// TestShardSeedsDisjoint enumerates every seed each shard's rapid.Check can use (S_i + k(k+1)/2,
// k < 11·C − 1) for small C and n: each lies in its shard's stated range, and no seed is used by
// two shards. Bad seeds and checks are refused.
func TestShardSeedsDisjoint(t *testing.T) {
	for _, base := range []uint64{1, 77} {
		for checks := 1; checks <= 4; checks++ {
			for n := 1; n <= 5; n++ {
				owner := map[uint64]int{}
				for i := range n {
					r, err := shardSeeds(base, checks, i, n)
					if err != nil {
						t.Fatal(err)
					}
					for k := uint64(0); k < uint64(11*checks-1); k++ {
						s := r.First + k*(k+1)/2
						if s < r.First || s > r.Last {
							t.Errorf("base %d checks %d shard %d/%d: seed %d outside %d..%d", base, checks, i, n, s, r.First, r.Last)
						}
						if o, seen := owner[s]; seen && o != i {
							t.Errorf("base %d checks %d: seed %d used by shards %d and %d of %d", base, checks, s, o, i, n)
						}
						owner[s] = i
					}
				}
			}
		}
	}
	for _, c := range []struct {
		base   uint64
		checks int
		want   string
	}{{0, 10, "--seed 0"}, {1, 0, "--checks 0"}, {math.MaxUint64 - 100, 10, "passes 2^64-1"}, {1, 1 << 40, "--checks 1099511627776"}} {
		if _, err := shardSeeds(c.base, c.checks, 0, 4); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("shardSeeds(%d, %d): %v; want an error saying %q", c.base, c.checks, err, c.want)
		}
	}
}

// fakeFuzzTest writes a fake ./fuzz test binary printing as Go test binaries do under
// -test.v=test2json: TestGPUStore passes, TestOracleStore skips, and TestGPUDecode fails with
// rapid's reproduction line when its -rapid.seed is failSeed.
func fakeFuzzTest(t *testing.T, failSeed uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fuzz.test")
	body := fmt.Sprintf(`#!/bin/sh
printf '\026=== RUN   TestGPUStore\n\026--- PASS: TestGPUStore (0.00s)\n\026=== RUN   TestOracleStore\n\026--- SKIP: TestOracleStore (0.00s)\n\026=== RUN   TestGPUDecode\n'
case "$*" in *-rapid.seed=%d*)
  printf '    gpu_test.go:9: [rapid] draw case: bad\n    To reproduce, specify -run="TestGPUDecode" -rapid.seed=%d\n    replay: bin/octant replay /x/m.json\n\026--- FAIL: TestGPUDecode (0.00s)\n\026FAIL\n'; exit 1;;
esac
printf '\026--- PASS: TestGPUDecode (0.00s)\n\026PASS\n'
`, failSeed, failSeed)
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPropsShardsMerge runs `octant props` as 3 shards of one campaign with a fake test binary,
// then merges them: every shard passing merges to exit 0 with the total checks and the three seed
// ranges; a failing shard keeps its failure and seed line (exit 1 for the shard and the merge); a
// missing shard is named not run (exit 1); another base seed or checks, a doubled and a cut shard
// are refused (exit 2).
func TestPropsShardsMerge(t *testing.T) {
	dir := t.TempDir()
	props := func(bin, name string, extra ...string) (string, int, string) {
		out := filepath.Join(dir, name)
		code, stdout, stderr := runCLI(append([]string{"props", "--bin", bin, "--seed", "7", "--checks", "2", "--out", out}, extra...)...)
		return out, code, stdout + stderr
	}
	r1, _ := shardSeeds(7, 2, 1, 3)
	pass, fail := fakeFuzzTest(t, 1), fakeFuzzTest(t, r1.First)
	var shards []string
	for i := range 3 {
		out, code, text := props(pass, fmt.Sprint("s", i), "--shard", fmt.Sprintf("%d/3", i))
		if code != 0 || !strings.Contains(text, "tests: 2 passed, 0 failed, 1 skipped") {
			t.Fatalf("shard %d/3: exit %d\n%s", i, code, text)
		}
		shards = append(shards, out)
	}
	code, stdout, stderr := runCLI("merge", filepath.Join(dir, "m"), shards[1], shards[0], shards[2])
	w, _ := seedWidth(2)
	ranges := fmt.Sprintf("seeds: %d..%d, %d..%d, %d..%d", 7, 7+w-1, 7+w, 7+2*w-1, 7+2*w, 7+3*w-1)
	if code != 0 || !strings.Contains(stdout, "checks: 2 per property in each of 3 shards run = 6 per property") || !strings.Contains(stdout, ranges) {
		t.Errorf("merge of 3 passing shards: exit %d, want 0, %q\n%s%s", code, ranges, stdout, stderr)
	}

	failed, code, text := props(fail, "f1", "--shard", "1/3")
	if code != 1 || !strings.Contains(text, "FAIL TestGPUDecode") || !strings.Contains(text, fmt.Sprintf("-rapid.seed=%d", r1.First)) {
		t.Errorf("failing shard: exit %d, want 1 naming the test and its seed\n%s", code, text)
	}
	var c Campaign
	if b, err := os.ReadFile(filepath.Join(failed, "campaign.json")); err != nil || json.Unmarshal(b, &c) != nil || len(c.Failures) != 1 || len(c.Failures[0].Lines) != 2 {
		t.Errorf("failing shard's campaign.json: %v, failures %+v; want TestGPUDecode with its seed and replay lines", err, c.Failures)
	}
	code, stdout, _ = runCLI("merge", filepath.Join(dir, "mf"), shards[0], failed, shards[2])
	if code != 1 || !strings.Contains(stdout, "FAIL 1/3 TestGPUDecode") {
		t.Errorf("merge with a failing shard: exit %d, want 1\n%s", code, stdout)
	}
	code, stdout, _ = runCLI("merge", "--kind", "campaign", filepath.Join(dir, "mm"), shards[0], shards[2])
	if code != 1 || !strings.Contains(stdout, "shard not run: 1/3") || !strings.Contains(stdout, "= 4 per property") {
		t.Errorf("merge without shard 1/3: exit %d, want 1 naming it\n%s", code, stdout)
	}

	otherSeed, _, _ := props(pass, "o1", "--shard", "1/3", "--seed", "8")
	otherChecks, _, _ := props(pass, "o2", "--shard", "1/3", "--checks", "3")
	b, _ := os.ReadFile(filepath.Join(shards[1], "campaign.json"))
	cut := filepath.Join(dir, "cut")
	if err := os.MkdirAll(cut, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cut, "campaign.json"), b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		shards []string
		want   string
	}{
		{[]string{shards[0], otherSeed}, "different campaigns: base seed 7 vs 8"},
		{[]string{shards[0], otherChecks}, "different campaigns: checks 2 vs 3"},
		{[]string{shards[0], shards[0]}, "shard 0/3 given twice"},
		{[]string{shards[0], cut}, "expected a whole campaign.json"},
	} {
		code, _, stderr := runCLI(append([]string{"merge", filepath.Join(dir, "x")}, c.shards...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("merge %v: exit %d, want 2 and %q\n%s", c.shards, code, c.want, stderr)
		}
	}
	for _, args := range [][]string{{"--seed", "0"}, {"--checks", "0"}, {"--shard", "3/3"}, {"--run", "("}} {
		if _, code, text := props(pass, "bad", args...); code != 2 {
			t.Errorf("props %v: exit %d, want 2\n%s", args, code, text)
		}
	}
}

// TestPropsOracleRun runs two shards of a real campaign of one oracle-only property of ./fuzz
// (go test, no library) from the repository root, and merges them.
func TestPropsOracleRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ./fuzz's tests")
	}
	dir := t.TempDir()
	t.Chdir(filepath.Join("..", ".."))
	var shards []string
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprint(i))
		code, stdout, stderr := runCLI("props", "--bin", filepath.Join(dir, "none"), "--run", "^TestOracleStore$", "--checks", "2", "--seed", "3", "--shard", fmt.Sprintf("%d/2", i), "--out", out)
		if code != 0 || !strings.Contains(stdout, "tests: 1 passed, 0 failed, 0 skipped") {
			t.Fatalf("shard %d/2: exit %d\n%s%s", i, code, stdout, stderr)
		}
		shards = append(shards, out)
	}
	if code, stdout, stderr := runCLI("merge", filepath.Join(dir, "m"), shards[0], shards[1]); code != 0 {
		t.Errorf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
}
