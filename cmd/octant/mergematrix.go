package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/octant-kv/octant/mutate"
)

// mergeMatrices combines shard kill matrices (octant mutate --shard i/n) into the kill matrix of
// the unsharded run (mutate.MergeMatrices), written to out as mutate writes it. Exit 0 when every
// row passes (as a whole mutate run's exit), 1 otherwise (a shard not given included), 2 when a
// shard is unreadable, cut, doubled or of another run.
func mergeMatrices(out string, shards []string, _ string, stdout, stderr io.Writer) int {
	var files []mutate.MatrixFile
	for _, d := range shards {
		path := d
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			path = filepath.Join(d, "kill-matrix.json")
		}
		m, err := mutate.ReadMatrix(path)
		if err != nil {
			fmt.Fprintf(stderr, "octant merge: shard %s: %v\n", d, err)
			return 2
		}
		files = append(files, mutate.MatrixFile{Name: path, Matrix: m})
	}
	m, err := mutate.MergeMatrices(files)
	if err != nil {
		fmt.Fprintf(stderr, "octant %v\n", err)
		return 2
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintf(stderr, "octant merge: %v\n", err)
		return 2
	}
	if err := mutate.WriteKillMatrix(out, m); err != nil {
		fmt.Fprintf(stderr, "octant merge: %v\n", err)
		return 2
	}
	code := 0
	for _, r := range m.Rows {
		fmt.Fprintf(stdout, "mutant %d (%s): %s\n", r.ID, r.Name, r.Verdict())
		if !r.OK() {
			code = 1
		}
	}
	for _, s := range m.Run.ShardsNotRun {
		fmt.Fprintf(stdout, "shard not run: %s\n", s)
	}
	fmt.Fprintf(stdout, "kill matrix: %s\n", filepath.Join(out, "kill-matrix.md"))
	return code
}
