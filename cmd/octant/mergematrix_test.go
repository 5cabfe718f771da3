package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMutateShardsMerge runs `octant mutate --only 1,2,0 --shard i/3` for each i with fake tools
// (a mutant library fails TestA, the unmutated build passes it: every kill is confirmed), then
// `octant merge` (the kind found from kill-matrix.json): all shards merge to every row passing,
// exit 0, rows in list order; without shard 1 the merge exits 1 and names it; a shard of another
// commit and a cut file exit 2. Bad --shard values are usage errors.
func TestMutateShardsMerge(t *testing.T) {
	dir := fakeMutateTools(t, `case "$OCTANT_LIB" in *_m*) printf '\026=== RUN   TestA\n\026--- FAIL: TestA (0.00s)\n\026FAIL\n'; exit 1;; esac
printf '\026=== RUN   TestA\n\026--- PASS: TestA (0.00s)\n\026PASS\n'`)
	var shards []string
	for i, s := range []string{"0/3", "1/3", "2/3"} {
		out := filepath.Join(dir, "shard"+s[:1])
		code, stdout, stderr := runCLI("mutate", "--header", mutantHeader, "--kind", "emu", "--only", "1,2,0", "--shard", s, "--bin", dir, "--out", out, "--budget-per-mutant", "0s")
		if code != 0 || !strings.Contains(stdout, "(shard "+s+" of a 3-entry list: a partial kill matrix)") {
			t.Fatalf("shard %s: exit %d\nstdout:\n%s\nstderr:\n%s", s, code, stdout, stderr)
		}
		want := []string{"mutant 1 ", "mutant 2 ", "mutant 0 "}[i]
		if strings.Count(stdout, "): grid…") != 1 || !strings.Contains(stdout, want) {
			t.Errorf("shard %s ran other rows than %q:\n%s", s, want, stdout)
		}
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged")
	code, stdout, stderr := runCLI("merge", merged, shards[2], shards[0], shards[1])
	if code != 0 || !strings.Contains(stdout, "mutant 1 (OCT_MUT_") || strings.Index(stdout, "mutant 2 (") > strings.Index(stdout, "mutant 0 (") {
		t.Errorf("merge of all shards: exit %d, want 0, rows 1, 2, 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var m struct {
		Rows []struct {
			ID int `json:"id"`
		} `json:"rows"`
	}
	if b, err := os.ReadFile(filepath.Join(merged, "kill-matrix.json")); err != nil || json.Unmarshal(b, &m) != nil || len(m.Rows) != 3 {
		t.Errorf("merged kill-matrix.json: %v, %d rows; want 3", err, len(m.Rows))
	}
	code, stdout, _ = runCLI("merge", "--kind", "matrix", filepath.Join(dir, "m2"), shards[0], shards[2])
	if code != 1 || !strings.Contains(stdout, "shard not run: 1/3") || !strings.Contains(stdout, "mutant 2 (OCT_MUT_") || !strings.Contains(stdout, "NOT RUN: shard 1/3") {
		t.Errorf("merge without shard 1/3: exit %d, want 1 naming it\n%s", code, stdout)
	}

	b, err := os.ReadFile(filepath.Join(shards[1], "kill-matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	j["run"].(map[string]any)["commit"] = "0000other"
	other, _ := json.Marshal(j)
	otherDir, cutDir := filepath.Join(dir, "other"), filepath.Join(dir, "cut")
	for d, body := range map[string][]byte{otherDir: other, cutDir: b[:len(b)-40]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "kill-matrix.json"), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", filepath.Join(dir, "m3"), shards[0], otherDir, shards[2]}, "are shards of different runs: commit"},
		{[]string{"merge", filepath.Join(dir, "m4"), shards[0], cutDir, shards[2]}, "expected a whole kill-matrix.json"},
		{[]string{"merge", filepath.Join(dir, "m5"), shards[0], shards[0]}, "shard 0/3 given twice"},
		{[]string{"mutate", "--header", mutantHeader, "--only", "1", "--shard", "3/3"}, "expected i/n with 0 ≤ i < n"},
		{[]string{"mutate", "--header", mutantHeader, "--only", "1", "--shard", "x"}, "expected i/n"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q\nstderr:\n%s", c.args, code, c.want, stderr)
		}
	}
}
