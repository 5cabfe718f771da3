package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// writeEntries writes corpus files: name → bytes under dir/target.
func writeEntries(t *testing.T, dir, target string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, target), 0o755); err != nil {
		t.Fatal(err)
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, target, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func entry(v string) string { return fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", v) }

// hashName is the name Go's fuzzer gives an entry: the first 16 hex digits of its SHA-256.
func hashName(b string) string { s := sha256.Sum256([]byte(b)); return hex.EncodeToString(s[:])[:16] }

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	fs, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.Name())
	}
	return out
}

// TestMergeCorpus: two shard corpora that share an entry (under different names) merge into
// their union, one file per distinct content, each named as Go names it; `go test` of a fuzz
// target reads every merged entry as its seed corpus. A file that is not an entry is refused with
// its path and nothing is written.
func TestMergeCorpus(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	e1, e2, e3, e4 := entry("one"), entry("two"), entry("three"), "go test fuzz v1\nint(-3)\nstring(\"x\")\n"
	writeEntries(t, a, "FuzzX", map[string]string{hashName(e1): e1, hashName(e2): e2})
	writeEntries(t, b, "FuzzX", map[string]string{"seed-two": e2, hashName(e3): e3})
	writeEntries(t, b, "FuzzY", map[string]string{"y": e4})
	out := filepath.Join(t.TempDir(), "corpus")
	code, stdout, stderr := runCLI("merge", "--kind", "corpus", out, a, b)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	wantX := []string{hashName(e1), hashName(e2), hashName(e3)}
	sort.Strings(wantX)
	if got := dirNames(t, filepath.Join(out, "FuzzX")); strings.Join(got, " ") != strings.Join(wantX, " ") {
		t.Errorf("FuzzX: %v, expected %v (three distinct entries, named by content)", got, wantX)
	}
	if got := dirNames(t, filepath.Join(out, "FuzzY")); len(got) != 1 || got[0] != hashName(e4) {
		t.Errorf("FuzzY: %v, expected [%s]", got, hashName(e4))
	}
	if !strings.Contains(stdout, "corpus: FuzzX: 3 new, 1 duplicate") || !strings.Contains(stdout, "corpus: FuzzY: 1 new, 0 duplicate") {
		t.Errorf("per-target counts missing from\n%s", stdout)
	}

	t.Run("go test reads it", func(t *testing.T) {
		mod := t.TempDir()
		for name, src := range map[string]string{
			"go.mod":        "module corpuscheck\n\ngo 1.22\n",
			"fuzz_test.go":  "package corpuscheck\n\nimport \"testing\"\n\nfunc FuzzX(f *testing.F) { f.Fuzz(func(t *testing.T, b []byte) {}) }\n",
			"fuzzy_test.go": "package corpuscheck\n\nimport \"testing\"\n\nfunc FuzzY(f *testing.F) { f.Fuzz(func(t *testing.T, i int, s string) {}) }\n",
		} {
			if err := os.WriteFile(filepath.Join(mod, name), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.CopyFS(filepath.Join(mod, "testdata", "fuzz"), os.DirFS(out)); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^Fuzz")
		cmd.Dir = mod
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go test of the merged corpus: %v\n%s", err, b)
		}
		for _, n := range append(wantX, "FuzzY/"+hashName(e4)) {
			if !strings.Contains(n, "/") {
				n = "FuzzX/" + n
			}
			if !strings.Contains(string(b), "--- PASS: "+n) {
				t.Errorf("go test ran no %s\n%s", n, b)
			}
		}
	})

	t.Run("bad entry refused", func(t *testing.T) {
		c := t.TempDir()
		writeEntries(t, c, "FuzzX", map[string]string{"junk": "go test fuzz v1\nnot a value\n"})
		out := filepath.Join(t.TempDir(), "corpus")
		code, _, stderr := runCLI("merge", "--kind", "corpus", out, a, c)
		bad := filepath.Join(c, "FuzzX", "junk")
		if code != 2 || !strings.Contains(stderr, bad+": not a Go fuzz corpus entry") {
			t.Fatalf("exit %d, stderr %q; expected exit 2 naming %s", code, stderr, bad)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s written although a shard was refused", out)
		}
		writeEntries(t, c, "FuzzX", map[string]string{"junk": "hello\n[]byte(\"x\")\n"})
		if code, _, stderr := runCLI("merge", "--kind", "corpus", out, c); code != 2 || !strings.Contains(stderr, `"go test fuzz v1"`) {
			t.Errorf("a file without the version line: exit %d, stderr %q; expected exit 2", code, stderr)
		}
	})

	t.Run("fuzz shards", func(t *testing.T) {
		s0 := t.TempDir()
		writeEntries(t, filepath.Join(s0, "cache"), "FuzzX", map[string]string{hashName(e1): e1})
		m, _ := json.Marshal(fuzzShardManifest{Target: "FuzzX", Index: 0, Count: 2, Corpus: []string{"cache", "failures"}})
		if err := os.WriteFile(filepath.Join(s0, corpusManifestName), m, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "corpus")
		code, stdout, stderr := runCLI("merge", out, s0) // the kind detected from corpus.json
		if code != 1 || !strings.Contains(stdout, "shard 1/2 not given") || !strings.Contains(stdout, "corpus: FuzzX: 1 new") {
			t.Fatalf("exit %d; expected exit 1, shard 1/2 not given, FuzzX merged\n%s\n%s", code, stdout, stderr)
		}
	})
}
