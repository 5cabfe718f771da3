package mutate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeMatricesFaults: shards of the fake run (runShards, n = 3) merged with a fault each: a
// missing shard's rows are not run (never killed, never survived, never OK) and the run names
// it; a shard of another commit, header, flags or n, a shard given twice, a cut file and a shard
// whose rows are not its part of the list are refused, naming what differs.
func TestMergeMatricesFaults(t *testing.T) {
	fakeRepo(t, `case "$*" in *MUTANT=3*) echo "error: no such mutant" >&2; exit 2;; esac; echo "make $*"`)
	files := runShards(t, 3)

	m, err := MergeMatrices([]MatrixFile{files[0], files[2]})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Run.ShardsNotRun; len(got) != 1 || got[0] != "1/3" {
		t.Errorf("shards not run %v, want [1/3]", got)
	}
	for k, r := range m.Rows {
		notRun := k%3 == 1
		if (r.NotRun != "") != notRun {
			t.Errorf("row %d (mutant %d): not run %q, want not run %v", k, r.ID, r.NotRun, notRun)
		}
		if notRun {
			if o, _ := r.Outcome(); o != "not run" || r.OK() || !strings.HasPrefix(r.Verdict(), "NOT RUN: shard 1/3") {
				t.Errorf("row %d (mutant %d): outcome %q, OK %v, verdict %q; want not run, not OK", k, r.ID, o, r.OK(), r.Verdict())
			}
			if killed, _, _, _ := r.Killed(); killed {
				t.Errorf("row %d: a row not run is killed", k)
			}
		}
	}
	if err := os.MkdirAll("partial", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteKillMatrix("partial", m); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join("partial", "kill-matrix.md"))
	if !strings.Contains(string(md), "**Shards not run: 1/3**") || !strings.Contains(string(md), "**not run** (shard 1/3 not given to the merge)") {
		t.Errorf("kill-matrix.md of a merge without shard 1/3:\n%s", md)
	}

	edit := func(i int, f func(m *Matrix)) MatrixFile {
		c := *files[i].Matrix
		run := *c.Run
		run.List = append([]Mutant(nil), run.List...)
		shard := *run.Shard
		run.Shard = &shard
		c.Run = &run
		c.Rows = append([]*Row(nil), c.Rows...)
		f(&c)
		return MatrixFile{Name: files[i].Name + "-edited", Matrix: &c}
	}
	cut := filepath.Join("shard1", "cut.json")
	b, _ := os.ReadFile(filepath.Join("shard1", "kill-matrix.json"))
	if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMatrix(cut); err == nil || !strings.Contains(err.Error(), "expected a whole kill-matrix.json") || !strings.Contains(err.Error(), cut) {
		t.Errorf("cut file: %v", err)
	}
	for _, c := range []struct {
		name  string
		files []MatrixFile
		want  string
	}{
		{"other commit", []MatrixFile{files[0], edit(1, func(m *Matrix) { m.Run.Commit = "def456" })}, "commit abc123 vs def456"},
		{"other header", []MatrixFile{files[0], edit(1, func(m *Matrix) { m.Run.HeaderSHA = "beef" })}, "mutant header sha256 feed vs beef"},
		{"other flags", []MatrixFile{files[0], edit(1, func(m *Matrix) { m.Run.Flags.Full = true })}, "flags"},
		{"other kind", []MatrixFile{files[0], edit(1, func(m *Matrix) { m.Kind = "cuda" })}, "kind emu vs cuda"},
		{"other n", []MatrixFile{files[0], edit(1, func(m *Matrix) { m.Run.Shard.Count = 4 })}, "shard count n 3 vs 4"},
		{"other list", []MatrixFile{files[0], edit(1, func(m *Matrix) { m.Run.List = m.Run.List[1:] })}, "mutant list"},
		{"doubled", []MatrixFile{files[0], files[1], files[1]}, "shard 1/3 given twice"},
		{"rows cut", []MatrixFile{files[0], edit(1, func(m *Matrix) { m.Rows = m.Rows[:1] })}, "must hold the rows of mutants [2 5 0], found [2]"},
		{"no shard", []MatrixFile{edit(0, func(m *Matrix) { m.Run.Shard = nil })}, "expected a shard's kill matrix"},
	} {
		if _, err := MergeMatrices(c.files); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: merge error %v; want one saying %q", c.name, err, c.want)
		}
	}
}
