// Package deploy's tests validate the campaign templates of docs/campaigns.md without a cluster:
// the Slurm scripts run locally (slurm_test.go), the Kubernetes manifests strictly decoded into
// the API's types (k8s_test.go), the GitHub Actions workflow through actionlint (github_test.go).
// They live in their own module so that the Kubernetes and actionlint modules stay out of
// Octant's go.mod.
package deploy

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	octantFlag = flag.String("octant", "", "the octant binary the Slurm test runs; default: built from the repository into a temporary directory")
	libFlag    = flag.String("lib", "../build/liboctave_emu.so", "the kernel library the Slurm test's shards judge (make emu builds the default)")
)

var (
	octantOnce sync.Once
	octantBin  string
	octantErr  error
	octantDir  string
)

// octant is the path of the octant binary: -octant, or one built from the repository (the
// directory above this module) once per test binary.
func octant(t *testing.T) string {
	t.Helper()
	if *octantFlag != "" {
		p, err := filepath.Abs(*octantFlag)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	octantOnce.Do(func() {
		octantDir, octantErr = os.MkdirTemp("", "octant-deploy-test")
		if octantErr != nil {
			return
		}
		octantBin = filepath.Join(octantDir, "octant")
		cmd := exec.Command("go", "build", "-o", octantBin, "./cmd/octant")
		cmd.Dir = ".."
		if b, err := cmd.CombinedOutput(); err != nil {
			octantErr = &buildError{err, string(b)}
		}
	})
	if octantErr != nil {
		t.Fatalf("building octant from the repository (or pass -octant): %v", octantErr)
	}
	return octantBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// emuLib is the absolute path of the library the Slurm test runs on; the test fails, saying how
// to build it, when it is absent.
func emuLib(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(*libFlag)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("kernel library %s: %v (expected the CPU emulator library: run make emu in the repository, or pass -lib)", p, err)
	}
	return p
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if octantDir != "" {
		os.RemoveAll(octantDir)
	}
	os.Exit(code)
}

// readJSON decodes a JSON file into a generic tree.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}
