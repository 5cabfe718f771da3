package mutate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestShardOfCoversListOnce: for n = 1, 3 and 4 (and n beyond the list's length), the shards of a
// list hold every entry exactly once, shard i the entries k with k mod n = i, each in list order.
func TestShardOfCoversListOnce(t *testing.T) {
	var list []Mutant
	for id := 1; id <= 10; id++ {
		list = append(list, Mutant{ID: id * 3, Name: "m"})
	}
	list = append(list, Unmutated)
	for _, n := range []int{1, 3, 4, 12} {
		seen := map[int]int{}
		for i := range n {
			part := ShardOf(list, Shard{Index: i, Count: n})
			for j, m := range part {
				k := i + j*n // the index the rule gives the j-th entry of shard i
				if k >= len(list) || list[k].ID != m.ID {
					t.Errorf("n=%d shard %d entry %d: mutant %d, want list[%d]", n, i, j, m.ID, k)
				}
				seen[m.ID]++
			}
		}
		for _, m := range list {
			if seen[m.ID] != 1 {
				t.Errorf("n=%d: mutant %d in %d shards, want exactly 1", n, m.ID, seen[m.ID])
			}
		}
		if len(seen) != len(list) {
			t.Errorf("n=%d: shards hold %d distinct mutants, want %d", n, len(seen), len(list))
		}
	}
}

// fakeMutants are the mutants of fakeRepo (TestRunWithFakes says what each does there).
var fakeMutants = []Mutant{{ID: 1, Name: "OCT_MUT_REDUCE_PAD", Op: "reduce"}, {ID: 2, Name: "OCT_MUT_DECODE_X", Op: "decode"}, {ID: 3, Name: "OCT_MUT_STORE_Y", Op: "store"},
	{ID: 4, Name: "OCT_MUT_DECODE_SKIPPED", Op: "decode"}, {ID: 5, Name: "OCT_MUT_DECODE_NOSTART", Op: "decode"},
	{ID: 6, Name: "OCT_MUT_DECODE_BROKEN_TEST", Op: "decode"}, {ID: 7, Name: "OCT_MUT_STORE_FUZZ", Op: "store"}}

// runShards runs the fake list unsharded into out "whole" and as n shards into "shard<i>" (from
// fakeRepo's root), each with its RunInfo, and returns the shards' matrix files.
func runShards(t *testing.T, n int) []MatrixFile {
	t.Helper()
	list := Select(fakeMutants, nil)
	run := func(out string, s *Shard) {
		cfg := Config{Kind: "emu", Budget: time.Second, Bin: filepath.Join("..", "bin"), Out: out, Conventional: true, Jobs: 2}
		cfg.Info = &RunInfo{Commit: "abc123", Header: "h", HeaderSHA: "feed", List: list, Flags: cfg.VerdictFlags(), Shard: s}
		todo := list
		if s != nil {
			todo = ShardOf(list, *s)
		}
		var stdout, stderr strings.Builder
		if _, err := Run(cfg, todo, &stdout, &stderr); err != nil {
			t.Fatalf("Run %s: %v\n%s%s", out, err, stdout.String(), stderr.String())
		}
	}
	run("whole", nil)
	var files []MatrixFile
	for i := range n {
		out := "shard" + string(rune('0'+i))
		run(out, &Shard{Index: i, Count: n})
		m, err := ReadMatrix(filepath.Join(out, "kill-matrix.json"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, MatrixFile{Name: out, Matrix: m})
	}
	return files
}

// timeless is a kill matrix's text without its dates and durations.
func timeless(s string) string {
	s = regexp.MustCompile(`\d{4}-\d\d-\d\d[ T][0-9:]+( UTC|Z)`).ReplaceAllString(s, "DATE")
	s = regexp.MustCompile(`\b[0-9.]+(ns|µs|ms|s|m[0-9.]+s)\b`).ReplaceAllString(s, "TIME")
	return regexp.MustCompile(`"after_ns": \d+`).ReplaceAllString(s, `"after_ns": 0`)
}

// TestMergedShardsEqualUnsharded: the fake run of TestRunWithFakes (every kind of row: killed,
// survived, build failed, no evidence, error, unconfirmed, fuzz kill, the unmutated build) run
// as 3 shards, each with its own control, and merged gives the kill matrix (json and md) of the
// unsharded run, dates and durations left out; a lone shard's matrix says it is partial.
func TestMergedShardsEqualUnsharded(t *testing.T) {
	fakeRepo(t, `case "$*" in *MUTANT=3*) echo "error: no such mutant" >&2; exit 2;; esac; echo "make $*"`)
	files := runShards(t, 3)
	for _, f := range files {
		if len(f.Matrix.Rows) == 0 || len(f.Matrix.Rows) == 8 {
			t.Errorf("%s: %d rows; want its part of the 8", f.Name, len(f.Matrix.Rows))
		}
		md, _ := os.ReadFile(filepath.Join(f.Name, "kill-matrix.md"))
		if !strings.Contains(string(md), "**Partial: shard "+f.Matrix.Run.Shard.String()+" of a 8-entry mutant list**") {
			t.Errorf("%s/kill-matrix.md does not say partial:\n%s", f.Name, md)
		}
	}
	// Merged from the shards given in another order than their indices.
	m, err := MergeMatrices([]MatrixFile{files[2], files[0], files[1]})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("merged", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteKillMatrix("merged", m); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kill-matrix.json", "kill-matrix.md"} {
		whole, err1 := os.ReadFile(filepath.Join("whole", name))
		merged, err2 := os.ReadFile(filepath.Join("merged", name))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if w, g := timeless(string(whole)), timeless(string(merged)); w != g {
			t.Errorf("merged %s differs from the unsharded run's:\n--- unsharded\n%s\n--- merged\n%s", name, w, g)
		}
	}
	var w Matrix
	b, _ := os.ReadFile(filepath.Join("whole", "kill-matrix.json"))
	if err := json.Unmarshal(b, &w); err != nil || len(w.Rows) != 8 || !reflect.DeepEqual(rowIDs(w.Rows), rowIDs(m.Rows)) {
		t.Errorf("unsharded rows %v, merged %v (%v)", rowIDs(w.Rows), rowIDs(m.Rows), err)
	}
}
