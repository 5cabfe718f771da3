package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// slurmConformFlags are the conform flags of the Slurm test's run: the emulator's five required
// units (--tiers portable), 1 fixed and 2 random cases each; --min-cases 3 is met by the merged
// run and by no shard alone.
var slurmConformFlags = []string{"--fixed", "1", "--min-cases", "3", "--tiers", "portable"}

// fakeSbatch is an sbatch that records each call's arguments, one per line, in
// $FAKE_SBATCH_LOG (a call ends with a line "--end--") and prints a job id as --parsable does:
// 1001 for the first call (with a cluster name, "1001;gpu", as a multi-cluster sbatch prints it),
// 1002 for the second.
const fakeSbatch = `#!/usr/bin/env bash
set -eu
n=$(grep -c -- '^--end--$' "$FAKE_SBATCH_LOG" 2>/dev/null || true)
for a in "$@"; do printf '%s\n' "$a" >>"$FAKE_SBATCH_LOG"; done
echo --end-- >>"$FAKE_SBATCH_LOG"
id=$((1001 + n))
if [ "$id" = 1001 ]; then echo "$id;gpu"; else echo "$id"; fi
`

// sbatchCall is one recorded sbatch call: its options, the batch script and the script's
// arguments.
type sbatchCall struct {
	opts   []string
	script string
	args   []string
}

func (c sbatchCall) opt(name string) (string, bool) {
	for _, o := range c.opts {
		if v, ok := strings.CutPrefix(o, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func readSbatchLog(t *testing.T, path string) []sbatchCall {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("sbatch was not called: %v", err)
	}
	var calls []sbatchCall
	var cur []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l != "--end--" {
			cur = append(cur, l)
			continue
		}
		var c sbatchCall
		for i, a := range cur {
			if !strings.HasPrefix(a, "-") {
				c.opts, c.script, c.args = cur[:i], a, cur[i+1:]
				break
			}
		}
		calls = append(calls, c)
		cur = nil
	}
	return calls
}

// runScript runs a script with env added to the test's environment and returns its exit status
// and output.
func runScript(t *testing.T, env []string, name string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// comparableCert is a certificate.json without what differs between two runs of the same cases:
// the date, the command line and the per-case times.
func comparableCert(t *testing.T, path string) map[string]any {
	m := readJSON(t, path)
	delete(m, "date")
	delete(m, "command")
	cases, _ := m["cases"].([]any)
	for _, c := range cases {
		delete(c.(map[string]any), "seconds")
	}
	return m
}

// TestSlurmSubmitShardsMerge submits a 4-shard run through submit.sh with a fake sbatch on PATH,
// checks what was submitted (the array's range, one GPU per task, the merge's afterany dependency
// on the array's job id), then runs each submitted job as Slurm would: the array's script once per
// task id in the submitted range with SLURM_ARRAY_TASK_ID set, then the merge job's script. The
// merged certificate must equal the unsharded run's with the same flags (a fifth conform run),
// and a shard removed afterwards must be reported as not run.
func TestSlurmSubmitShardsMerge(t *testing.T) {
	bin, lib := octant(t), emuLib(t)
	tmp := t.TempDir()
	fakeBin := filepath.Join(tmp, "bin")
	os.MkdirAll(fakeBin, 0o755)
	if err := os.WriteFile(filepath.Join(fakeBin, "sbatch"), []byte(fakeSbatch), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(tmp, "sbatch.log")
	runDir := filepath.Join(tmp, "run")
	env := []string{"PATH=" + fakeBin + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKE_SBATCH_LOG=" + log, "OCTANT=" + bin}

	code, stdout, stderr := runScript(t, env, "slurm/submit.sh", append([]string{"4", "2", lib, runDir}, slurmConformFlags...)...)
	if code != 0 {
		t.Fatalf("submit.sh: exit %d, expected 0\n%s%s", code, stdout, stderr)
	}
	calls := readSbatchLog(t, log)
	if len(calls) != 2 {
		t.Fatalf("sbatch called %d times, expected 2 (the shard array, then the merge job): %+v", len(calls), calls)
	}
	array, merge := calls[0], calls[1]
	if filepath.Base(array.script) != "octant-shard.sbatch" || filepath.Base(merge.script) != "octant-merge.sbatch" {
		t.Fatalf("submitted scripts %s, %s: expected octant-shard.sbatch, then octant-merge.sbatch", array.script, merge.script)
	}
	rng, ok := array.opt("--array")
	if rng != "0-3" {
		t.Errorf("shard array submitted with --array=%q (given: %v), expected --array=0-3 for 4 shards", rng, ok)
	}
	if dep, _ := merge.opt("--dependency"); dep != "afterany:1001" {
		t.Errorf("merge job submitted with --dependency=%q, expected afterany:1001 (the array's job id, printed by sbatch as 1001;gpu): "+
			"afterany, so that the merge runs and reports failed shards", dep)
	}
	if _, ok := merge.opt("--array"); ok {
		t.Errorf("merge job submitted as an array (%v), expected one job", merge.opts)
	}
	if !strings.Contains(stdout, "job 1001") || !strings.Contains(stdout, "job 1002") {
		t.Errorf("submit.sh printed %q, expected both job ids (1001, 1002)", stdout)
	}
	checkSbatchDirectives(t, array.script, merge.script)

	// The array's tasks, as Slurm runs them: every id of the submitted range.
	lo, hi := parseArrayRange(t, rng)
	count := strconv.Itoa(hi - lo + 1)
	for id := lo; id <= hi; id++ {
		taskEnv := append(env, "SLURM_ARRAY_TASK_ID="+strconv.Itoa(id), "SLURM_ARRAY_TASK_COUNT="+count, "SLURM_ARRAY_JOB_ID=1001")
		code, stdout, stderr := runScript(t, taskEnv, array.script, array.args...)
		if code != 0 {
			t.Fatalf("shard task %d: exit %d, expected 0 (no failing case)\n%s%s", id, code, stdout, stderr)
		}
		if _, err := os.Stat(filepath.Join(runDir, "shards", strconv.Itoa(id), "certificate.json")); err != nil {
			t.Fatalf("shard task %d wrote no certificate: %v", id, err)
		}
	}
	code, stdout, stderr = runScript(t, env, merge.script, merge.args...)
	if code != 0 {
		t.Fatalf("merge job: exit %d, expected 0 (CERTIFIED)\n%s%s", code, stdout, stderr)
	}
	merged := filepath.Join(runDir, "merged", "certificate.json")
	if c := readJSON(t, merged); c["certified"] != true {
		t.Fatalf("merged certificate: verdict %v, expected CERTIFIED", c["verdict"])
	}

	// The unsharded run of the same flags.
	whole := filepath.Join(tmp, "whole")
	code, stdout, stderr = runScript(t, env, bin, append(append([]string{"conform", "--lib", lib, "--cases", "2"}, slurmConformFlags...), "--out", whole)...)
	if code != 0 {
		t.Fatalf("unsharded run: exit %d, expected 0\n%s%s", code, stdout, stderr)
	}
	want, got := comparableCert(t, filepath.Join(whole, "certificate.json")), comparableCert(t, merged)
	if !reflect.DeepEqual(want, got) {
		for k := range want {
			if !reflect.DeepEqual(want[k], got[k]) {
				t.Errorf("merged certificate's %s differs from the unsharded run's:\n merged:    %v\n unsharded: %v", k, got[k], want[k])
			}
		}
	}

	// Shard 2's task failed before writing its certificate: the merge job reports it as not run.
	os.RemoveAll(filepath.Join(runDir, "shards", "2"))
	os.RemoveAll(filepath.Join(runDir, "merged"))
	code, stdout, stderr = runScript(t, env, merge.script, merge.args...)
	c := readJSON(t, merged)
	notRun, _ := c["shards_not_run"].([]any)
	if code != 1 || c["certified"] == true || len(notRun) != 1 || notRun[0] != "2/4" || !strings.Contains(stdout, "shard not run: 2/4") {
		t.Fatalf("merge without shard 2: exit %d, verdict %v, shards_not_run %v; expected exit 1, NOT CERTIFIED, shard 2/4 not run\n%s%s",
			code, c["verdict"], c["shards_not_run"], stdout, stderr)
	}
}

// checkSbatchDirectives checks the #SBATCH lines: one GPU per shard task, none for the merge.
func checkSbatchDirectives(t *testing.T, shardScript, mergeScript string) {
	t.Helper()
	directives := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return regexp.MustCompile(`(?m)^#SBATCH\s+(\S+)`).FindAllString(string(b), -1)
	}
	if d := directives(shardScript); !strings.Contains(strings.Join(d, "\n"), "#SBATCH --gres=gpu:1") {
		t.Errorf("%s: #SBATCH lines %q, expected --gres=gpu:1 (one GPU per shard task)", shardScript, d)
	}
	if d := directives(mergeScript); strings.Contains(strings.Join(d, "\n"), "--gres") {
		t.Errorf("%s: #SBATCH lines %q, expected no --gres (the merge needs no GPU)", mergeScript, d)
	}
}

func parseArrayRange(t *testing.T, r string) (int, int) {
	t.Helper()
	m := regexp.MustCompile(`^(\d+)-(\d+)$`).FindStringSubmatch(r)
	if m == nil {
		t.Fatalf("--array=%q: expected a range LO-HI", r)
	}
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	return lo, hi
}

// TestSlurmShardTaskID runs the array script outside Slurm with a missing, out-of-range, malformed
// task id and an array of the wrong size: each exits 2 naming what it expected, before running
// octant (OCTANT names a binary that fails the test's check if it ran).
func TestSlurmShardTaskID(t *testing.T) {
	tmp := t.TempDir()
	ran := filepath.Join(tmp, "ran")
	stub := filepath.Join(tmp, "octant")
	os.WriteFile(stub, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755)
	args := []string{"4", "2", "lib.so", filepath.Join(tmp, "run")}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"missing", nil, "SLURM_ARRAY_TASK_ID is not set"},
		{"empty", []string{"SLURM_ARRAY_TASK_ID="}, "SLURM_ARRAY_TASK_ID is not set"},
		{"out of range", []string{"SLURM_ARRAY_TASK_ID=4"}, "SLURM_ARRAY_TASK_ID=4 is out of range: expected 0..3"},
		{"negative", []string{"SLURM_ARRAY_TASK_ID=-1"}, "expected a shard index 0..3, found '-1'"},
		{"not a number", []string{"SLURM_ARRAY_TASK_ID=x"}, "expected a shard index 0..3, found 'x'"},
		{"wrong array size", []string{"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=3"}, "the job array has 3 tasks, expected 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"OCTANT=" + stub}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "SLURM_") {
					env = append(env, kv)
				}
			}
			cmd := exec.Command("slurm/octant-shard.sbatch", args...)
			cmd.Env = append(env, tc.env...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %d, output %q; expected exit 2 saying %q", code, out, tc.want)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("octant ran despite the bad task id")
				os.Remove(ran)
			}
		})
	}
	// A good id reaches octant with the shard, the count and the shard's directory.
	cmd := exec.Command("slurm/octant-shard.sbatch", append(args, "--fixed", "1")...)
	argLog := filepath.Join(tmp, "args")
	os.WriteFile(stub, []byte("#!/bin/sh\necho \"$@\" >"+argLog+"\n"), 0o755)
	cmd.Env = append(os.Environ(), "OCTANT="+stub, "SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_COUNT=4")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("task 3 of 4: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(argLog)
	want := "conform --lib lib.so --cases 2 --shard 3/4 --fixed 1 --out " + filepath.Join(tmp, "run", "shards", "3") + "\n"
	if string(b) != want {
		t.Errorf("task 3 of 4 ran octant %q, expected %q", b, want)
	}
}
