package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Fuzz corpora in Go's layout: a directory of FuzzX/ directories, each file in them one input
// ("go test fuzz v1" and one Go value per line), named by Go (internal/fuzz writeToCorpus) as
// the first 16 hex digits of the SHA-256 of its bytes. `go test` reads such a directory as
// PKG/testdata/fuzz (the seed corpus) and the fuzzer as its cache (-test.fuzzcachedir).

// corpusManifestName marks a shard of `octant fuzz --devices` (fuzzShardManifest); octant merge
// detects the corpus kind by it.
const corpusManifestName = "corpus.json"

// fuzzShardManifest is OUT/shard-i/corpus.json: what one fuzzer of `octant fuzz --devices` ran
// and where its corpus is.
type fuzzShardManifest struct {
	Target string `json:"target"`
	Index  int    `json:"index"`
	Count  int    `json:"count"`
	// VisibleDevices is the device mask the fuzzer ran under.
	VisibleDevices string `json:"visible_devices"`
	FuzzTime       string `json:"fuzztime"`
	Exit           int    `json:"exit"`
	// Corpus are the shard's corpus directories (Go's layout), relative to the shard directory:
	// the fuzzer's cache (the interesting inputs) and the failing inputs.
	Corpus []string `json:"corpus"`
	// Failures are the failing inputs the fuzzer wrote (relative paths), Regressions the
	// directory of their reproducers (OCTANT_REGRESSIONS).
	Failures    []string `json:"failures,omitempty"`
	Regressions string   `json:"regressions"`
}

// corpusFileName is the name Go gives a corpus entry with these bytes.
func corpusFileName(data []byte) string {
	return fmt.Sprintf("%x", sha256.Sum256(data))[:16]
}

// checkCorpusEntry reports why data is not a corpus entry Go reads, or nil: the version line,
// then at least one value, each a call of a type on one literal, as internal/fuzz's
// unmarshalCorpusFile takes them ([]byte("..."), string("..."), int(-3), bool(true),
// float64(math.Float64frombits(0x…)), rune('x'), ...).
func checkCorpusEntry(data []byte) error {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) < 2 || strings.TrimSuffix(string(lines[0]), "\r") != "go test fuzz v1" {
		return fmt.Errorf("expected a first line \"go test fuzz v1\" and values after it")
	}
	values := 0
	for _, line := range lines[1:] {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := checkCorpusValue(string(line)); err != nil {
			return fmt.Errorf("line %q: %v", line, err)
		}
		values++
	}
	if values == 0 {
		return fmt.Errorf("expected at least one value after \"go test fuzz v1\", found none")
	}
	return nil
}

var corpusPrimitive = map[string]bool{"string": true, "bool": true, "byte": true, "rune": true,
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "float32": true, "float64": true}

// checkCorpusValue checks one value line: T(literal) with T []byte or a primitive type.
func checkCorpusValue(line string) error {
	e, err := parser.ParseExpr(line)
	if err != nil {
		return err
	}
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return fmt.Errorf("expected a call of a type on one value, such as []byte(\"...\")")
	}
	arg := call.Args[0]
	if at, ok := call.Fun.(*ast.ArrayType); ok {
		if id, ok := at.Elt.(*ast.Ident); !ok || at.Len != nil || id.Name != "byte" {
			return fmt.Errorf("expected []byte or a primitive type")
		}
		if lit, ok := arg.(*ast.BasicLit); !ok || lit.Kind != token.STRING {
			return fmt.Errorf("expected a string literal in []byte(...)")
		}
		_, err := strconv.Unquote(arg.(*ast.BasicLit).Value)
		return err
	}
	id, ok := call.Fun.(*ast.Ident)
	if !ok || !corpusPrimitive[id.Name] {
		return fmt.Errorf("expected []byte or a primitive type, found %s", line[:min(len(line), 24)])
	}
	if u, ok := arg.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		arg = u.X
	}
	switch a := arg.(type) {
	case *ast.BasicLit:
		if a.Kind == token.STRING {
			_, err := strconv.Unquote(a.Value)
			return err
		}
		return nil
	case *ast.Ident:
		if id.Name == "bool" && (a.Name == "true" || a.Name == "false") || strings.HasPrefix(id.Name, "float") && (a.Name == "NaN" || a.Name == "Inf") {
			return nil
		}
	case *ast.CallExpr:
		if sel, ok := a.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(id.Name, "float") && len(a.Args) == 1 {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "math" {
				return nil
			}
		}
	}
	return fmt.Errorf("expected a literal value for %s", id.Name)
}

// corpusTarget is one target's entries while merging: content by name.
type corpusTarget struct {
	entries      map[string][]byte
	existing     int // entries OUT/Target held before
	added, dupes int
}

// mergeCorpora merges shard fuzz corpora into one in Go's layout at out: each SHARD_DIR is
// either a shard of `octant fuzz --devices` (corpus.json names its corpus directories) or a
// corpus directory itself. Every entry is checked first (a file that is not an entry: exit 2,
// nothing written); entries are written under the name Go gives their content, so that the
// same input found by two fuzzers is one file. Exit 1 when a shard's fuzzer failed or a shard
// of the run is not given, 0 otherwise.
func mergeCorpora(out string, shards []string, cmdline string, stdout, stderr io.Writer) int {
	targets := map[string]*corpusTarget{}
	get := func(name string) (*corpusTarget, error) {
		if t := targets[name]; t != nil {
			return t, nil
		}
		t := &corpusTarget{entries: map[string][]byte{}}
		files, err := os.ReadDir(filepath.Join(out, name))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		for _, f := range files {
			if b, err := os.ReadFile(filepath.Join(out, name, f.Name())); err == nil && !f.IsDir() {
				t.entries[corpusFileName(b)] = nil // present already: not written again
				t.existing++
			}
		}
		targets[name] = t
		return t, nil
	}
	failed := false
	var runCount int
	seen := map[int]string{}
	for _, shard := range shards {
		dirs := []string{shard}
		if b, err := os.ReadFile(filepath.Join(shard, corpusManifestName)); err == nil {
			var m fuzzShardManifest
			if err := json.Unmarshal(b, &m); err != nil || m.Count < 1 || m.Index < 0 || m.Index >= m.Count {
				fmt.Fprintf(stderr, "octant merge: %s: expected a fuzz shard's manifest (target, index i < count n, corpus), found one that does not read as one (%v)\n", filepath.Join(shard, corpusManifestName), err)
				return 2
			}
			if runCount != 0 && runCount != m.Count {
				fmt.Fprintf(stderr, "octant merge: %s: shard %d/%d of a run of %d fuzzers, the shards before it of %d: expected shards of one run\n", shard, m.Index, m.Count, m.Count, runCount)
				return 2
			}
			if prev, ok := seen[m.Index]; ok {
				fmt.Fprintf(stderr, "octant merge: shard %d/%d given twice: %s and %s\n", m.Index, m.Count, prev, shard)
				return 2
			}
			runCount, seen[m.Index] = m.Count, shard
			if m.Exit != 0 || len(m.Failures) > 0 {
				failed = true
				fmt.Fprintf(stdout, "corpus: shard %d/%d (%s, %s): fuzzer exit %d, %d failing input(s): %s; reproducers in %s\n", m.Index, m.Count, m.Target, m.VisibleDevices, m.Exit, len(m.Failures), strings.Join(m.Failures, ", "), filepath.Join(shard, m.Regressions))
			}
			dirs = nil
			for _, d := range m.Corpus {
				dirs = append(dirs, filepath.Join(shard, d))
			}
		} else if st, err := os.Stat(shard); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "octant merge: shard %s: expected a corpus directory (FuzzX/ directories) or a fuzz shard (%s), found %v\n", shard, corpusManifestName, statWhat(st, err))
			return 2
		}
		for _, dir := range dirs {
			tdirs, err := os.ReadDir(dir)
			if os.IsNotExist(err) && dir != shard {
				continue // a fuzzer that found nothing leaves no cache
			}
			if err != nil {
				fmt.Fprintf(stderr, "octant merge: %v\n", err)
				return 2
			}
			for _, td := range tdirs {
				if !td.IsDir() {
					continue // corpus.json, logs: not a target
				}
				files, err := os.ReadDir(filepath.Join(dir, td.Name()))
				if err != nil {
					fmt.Fprintf(stderr, "octant merge: %v\n", err)
					return 2
				}
				t, err := get(td.Name())
				if err != nil {
					fmt.Fprintf(stderr, "octant merge: %v\n", err)
					return 2
				}
				for _, f := range files {
					p := filepath.Join(dir, td.Name(), f.Name())
					if f.IsDir() {
						fmt.Fprintf(stderr, "octant merge: %s: expected a corpus entry file, found a directory\n", p)
						return 2
					}
					b, err := os.ReadFile(p)
					if err != nil {
						fmt.Fprintf(stderr, "octant merge: %v\n", err)
						return 2
					}
					if err := checkCorpusEntry(b); err != nil {
						fmt.Fprintf(stderr, "octant merge: %s: not a Go fuzz corpus entry: %v\n", p, err)
						return 2
					}
					name := corpusFileName(b)
					if _, ok := t.entries[name]; ok {
						t.dupes++
						continue
					}
					t.entries[name] = b
					t.added++
				}
			}
		}
	}
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := targets[n]
		dir := filepath.Join(out, n)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "octant merge: %v\n", err)
			return 2
		}
		for name, b := range t.entries {
			if b == nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				fmt.Fprintf(stderr, "octant merge: %v\n", err)
				return 2
			}
		}
		fmt.Fprintf(stdout, "corpus: %s: %d new, %d duplicate, %d already in %s; %d entries\n", n, t.added, t.dupes, t.existing, dir, len(t.entries))
	}
	for i := range runCount {
		if _, ok := seen[i]; !ok {
			failed = true
			fmt.Fprintf(stdout, "corpus: shard %d/%d not given: its fuzzer's inputs are not in %s\n", i, runCount, out)
		}
	}
	if len(names) == 0 {
		fmt.Fprintf(stdout, "corpus: no FuzzX/ directories in %s: nothing merged\n", strings.Join(shards, " "))
	}
	verdict := "merged"
	if failed {
		verdict = "merged; a fuzzer failed or a shard is missing (above)"
	}
	fmt.Fprintf(stdout, "merge: corpus %s: %d target(s), %s (%s)\n", out, len(names), verdict, cmdline)
	if failed {
		return 1
	}
	return 0
}

// statWhat says what os.Stat found.
func statWhat(st os.FileInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return "a file (" + st.Mode().String() + ")"
}
