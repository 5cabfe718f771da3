package layers

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/octant-kv/octant/"

// rule: the non-test files of the packages under dir (dir itself and, with tree, its
// subpackages but those in except) import none of forbidden, for the reason why.
type rule struct {
	dir       string
	tree      bool
	except    []string
	forbidden []string
	why       string
}

var above = []string{"cases", "fuzz", "conformance", "bench", "mutate", "cmd/octant", "grids", "internal/settings"}

var rules = []rule{
	{dir: "harness", forbidden: append([]string{"testing", "os", "path/filepath"}, above...),
		why: "the judge is library, call and verdict: no case, test, environment or file path"},
	{dir: "cases", forbidden: []string{"fuzz", "conformance", "bench", "mutate", "cmd/octant", "grids", "internal/settings", "testing"},
		why: "a case knows no caller, and its settings come in as arguments"},
	{dir: "conformance", forbidden: []string{"fuzz", "testing"}, why: "callers take their cases from package cases"},
	{dir: "bench", forbidden: []string{"fuzz", "testing"}, why: "callers take their cases from package cases"},
	{dir: "mutate", forbidden: []string{"fuzz", "testing"}, why: "callers take their cases from package cases"},
	{dir: "cmd", tree: true, except: []string{"cmd/octant/testdata"}, forbidden: []string{"fuzz", "testing", "harness/harnesstest"},
		why: "commands take flags, not test helpers"},
	{dir: "kernels", tree: true, forbidden: append([]string{"harness", "oracle"}, above...), why: "the binding and its backends are below the judge"},
	{dir: "oracle", forbidden: append([]string{"harness", "kernels"}, above...), why: "the oracle knows no library"},
	{dir: "arch", tree: true, forbidden: append([]string{"harness", "kernels", "oracle"}, above...), why: "arch is the ground floor"},
}

// root is the module's root (the test runs in internal/layers).
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", r, err)
	}
	return r
}

// packageDirs lists dir and, with tree, every directory below it that holds Go files.
func packageDirs(t *testing.T, r string, ru rule) []string {
	t.Helper()
	if !ru.tree {
		return []string{ru.dir}
	}
	var out []string
	filepath.WalkDir(filepath.Join(r, ru.dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(r, p)
		if slices.Contains(ru.except, rel) || d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if m, _ := filepath.Glob(filepath.Join(p, "*.go")); len(m) > 0 {
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// forbiddenImport is the rule's forbidden package that path is, or "".
func forbiddenImport(path string, forbidden []string) string {
	for _, f := range forbidden {
		if path == f || path == module+f || strings.HasPrefix(path, module+f+"/") {
			return f
		}
	}
	return ""
}

func TestLayers(t *testing.T) {
	r := root(t)
	for _, ru := range rules {
		dirs := packageDirs(t, r, ru)
		if len(dirs) == 0 {
			t.Errorf("rule for %s: no package found (a rule that checks nothing)", ru.dir)
		}
		for _, d := range dirs {
			p, err := build.Default.ImportDir(filepath.Join(r, d), 0)
			if err != nil {
				t.Errorf("%s: %v", d, err)
				continue
			}
			if len(p.GoFiles) == 0 {
				t.Errorf("%s: no non-test Go files (a rule that checks nothing)", d)
			}
			for _, imp := range p.Imports {
				if f := forbiddenImport(imp, ru.forbidden); f != "" {
					t.Errorf("%s imports %s: expected no import of %s (%s)", d, imp, f, ru.why)
				}
			}
		}
	}
}

// envRead matches a read of one environment variable in Go source (os.Environ, which tests
// and mutate hand on to child processes whole, is not a read of a setting).
var envRead = regexp.MustCompile(`os\.(Getenv|LookupEnv)\(`)

// TestEnvironmentReadOnce: outside package settings no Go file reads an OCTANT_* variable or
// any other variable, but for the variables of the Go toolchain and the shell that tests
// pass on to child processes (PATH, GOGC), each listed with its file.
func TestEnvironmentReadOnce(t *testing.T) {
	r := root(t)
	allowed := map[string]string{ // file → what its read is for
		"fuzz/main_test.go":                    `os.Getenv("GOGC")`,
		"mutate/run_test.go":                   `os.Getenv("PATH")`,
		"cmd/octant/mutate_test.go":            `os.Getenv("PATH")`,
		"internal/cmd/gotest/makefile_test.go": `os.Getenv("PATH")`,
		"deploy/slurm_test.go":                 `os.Getenv("PATH")`,
	}
	found := 0
	filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "build" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(r, p)
		if rel == filepath.Join("internal", "settings", "settings.go") || rel == filepath.Join("internal", "layers", "layers_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			m := envRead.FindString(line)
			if m == "" {
				continue
			}
			found++
			if what, ok := allowed[filepath.ToSlash(rel)]; ok && strings.Contains(line, what) {
				continue
			}
			t.Errorf("%s:%d reads the environment (%s): expected every setting read in internal/settings (settings.FromEnv) and passed down", rel, i+1, strings.TrimSpace(line))
		}
		return nil
	})
	if found == 0 {
		t.Error("no environment read found anywhere: the scan is broken (internal/settings reads it)")
	}
}
