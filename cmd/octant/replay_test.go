package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayDirectory: a directory stands for the reproducer files under it (*.json, recursively,
// sorted), and replay says how many it found; an empty one is an error naming it.
func TestReplayDirectory(t *testing.T) {
	raw, err := os.ReadFile("../../corpus/regressions/slot/example-roundtrip.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	for _, p := range []string{"c.json", "a/b/x.json"} {
		os.WriteFile(filepath.Join(dir, p), raw, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a reproducer"), 0o644)
	code, out, errs := runCLI("replay", dir)
	want := dir + ": 2 reproducer file(s)\nok   " + filepath.Join(dir, "a", "b", "x.json") + "\nok   " + filepath.Join(dir, "c.json") + "\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout\n%s\nstderr %s\nwant exit 0 and\n%s", code, out, errs, want)
	}

	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("x"), 0o644)
	code, out, errs = runCLI("replay", empty)
	if code != 2 || out != "" || !strings.Contains(errs, empty+": a directory without reproducer files") {
		t.Errorf("empty directory: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = runCLI("replay")
	if code != 2 || !strings.HasPrefix(errs, "octant replay: expected reproducer files or directories") {
		t.Errorf("no arguments: exit %d, stderr %q", code, errs)
	}
	code, out, errs = runCLI("replay", dir, "--lib", "x.so")
	if code != 2 || out != "" || !strings.Contains(errs, "--lib: flags go before the files") {
		t.Errorf("a flag after the files: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestReplayCorpus replays the repository's corpus by its directory, as `make test` could.
func TestReplayCorpus(t *testing.T) {
	code, out, errs := runCLI("replay", "../../corpus/regressions")
	if code != 0 || !strings.HasPrefix(out, "../../corpus/regressions: ") || strings.Count(out, "\nok   ") < 1 {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
