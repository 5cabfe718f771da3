package mutate

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
)

// ReadMatrix reads a kill-matrix.json written by WriteKillMatrix. A file that is not a whole
// matrix (cut, not JSON) is an error naming the file.
func ReadMatrix(path string) (*Matrix, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Matrix
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: expected a whole kill-matrix.json, found %d bytes that do not parse (cut or not a kill matrix): %v", path, len(b), err)
	}
	return &m, nil
}

// MatrixFile is a shard's kill matrix and where it was read from (for messages).
type MatrixFile struct {
	Name   string
	Matrix *Matrix
}

// MergeMatrices combines the kill matrices of the shards of one `octant mutate --shard i/n` run
// into the matrix of the unsharded run: its rows in list order (entry k of the list from shard
// k mod n), each row as its shard has it (a failed row stays failed). Shards of different runs
// (kind, commit, header digest, list, verdict flags, n) are an error naming what differs, and so
// is a shard given twice and a shard whose rows are not its part of the list (an edited or cut
// file). A shard missing from files is not run: its rows say so (Row.NotRun, never OK) and the
// merged run names it under shards_not_run. The date is left for WriteKillMatrix.
func MergeMatrices(files []MatrixFile) (*Matrix, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("merge: expected at least one shard kill matrix, found none")
	}
	for _, f := range files {
		r := f.Matrix.Run
		if r == nil || r.Shard == nil {
			return nil, fmt.Errorf("merge: %s: expected a shard's kill matrix (octant mutate --shard i/n), found one without \"run.shard\"", f.Name)
		}
		if s := r.Shard; s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
			return nil, fmt.Errorf("merge: %s: expected shard i/n with 0 ≤ i < n, found %s", f.Name, s)
		}
	}
	base := files[0]
	n := base.Matrix.Run.Shard.Count
	byIndex := make([]*MatrixFile, n)
	for i := range files {
		f := &files[i]
		if err := sameMatrixRun(base, *f); err != nil {
			return nil, err
		}
		s := *f.Matrix.Run.Shard
		if prev := byIndex[s.Index]; prev != nil {
			return nil, fmt.Errorf("merge: shard %s given twice: %s and %s", s, prev.Name, f.Name)
		}
		want := ids(ShardOf(f.Matrix.Run.List, s))
		if got := rowIDs(f.Matrix.Rows); !slices.Equal(got, want) {
			return nil, fmt.Errorf("merge: %s: shard %s of a %d-entry list must hold the rows of mutants %v, found %v (edited, cut or stopped early)", f.Name, s, len(f.Matrix.Run.List), want, got)
		}
		byIndex[s.Index] = f
	}
	run := *base.Matrix.Run
	run.Shard, run.ShardsNotRun = nil, nil
	for i, f := range byIndex {
		if f == nil {
			run.ShardsNotRun = append(run.ShardsNotRun, Shard{Index: i, Count: n}.String())
		}
	}
	m := &Matrix{Kind: base.Matrix.Kind, Run: &run}
	for k, mu := range run.List {
		s := Shard{Index: k % n, Count: n}
		if f := byIndex[s.Index]; f != nil {
			m.Rows = append(m.Rows, f.Matrix.Rows[k/n])
			continue
		}
		m.Rows = append(m.Rows, &Row{Mutant: mu, Build: "not run", NotRun: "shard " + s.String() + " not given to the merge"})
	}
	return m, nil
}

// sameMatrixRun checks that shard f comes from the same run as base: everything that decides the
// list and the verdicts.
func sameMatrixRun(base, f MatrixFile) error {
	a, b := base.Matrix, f.Matrix
	for _, d := range []struct {
		what string
		x, y any
	}{
		{"kind", a.Kind, b.Kind}, {"commit", a.Run.Commit, b.Run.Commit}, {"mutant header sha256", a.Run.HeaderSHA, b.Run.HeaderSHA},
		{"flags", a.Run.Flags, b.Run.Flags}, {"shard count n", a.Run.Shard.Count, b.Run.Shard.Count},
		{"mutant list", ids(a.Run.List), ids(b.Run.List)},
	} {
		if !reflect.DeepEqual(d.x, d.y) {
			return fmt.Errorf("merge: %s and %s are shards of different runs: %s %+v vs %+v", base.Name, f.Name, d.what, d.x, d.y)
		}
	}
	if !reflect.DeepEqual(a.Run.List, b.Run.List) {
		return fmt.Errorf("merge: %s and %s are shards of different runs: the mutant list's names or defects differ", base.Name, f.Name)
	}
	return nil
}

// ids are the mutants' ids in order.
func ids(ms []Mutant) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// rowIDs are the rows' ids in order.
func rowIDs(rows []*Row) []int {
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}
