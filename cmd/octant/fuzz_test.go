package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readManifest(t *testing.T, shard string) fuzzShardManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shard, corpusManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m fuzzShardManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// countFiles counts the files under dir.
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFuzzDevices: `octant fuzz --devices 0,1` builds the fuzz test binary and runs two fuzzers
// of a CPU target, each with its device mask, its own fuzz cache and working copy of the seed
// corpus; both finish, their corpora merge into DIR/corpus, and the package's testdata is left as
// it was.
func TestFuzzDevices(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fuzz test binary")
	}
	before := countFiles(t, "../../fuzz/testdata")
	out := t.TempDir()
	code, stdout, stderr := runCLI("fuzz", "--devices", "0,1", "--target", "FuzzMergePartials", "--fuzztime", "200x", "--pkg", "../../fuzz", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for i := range 2 {
		shard := filepath.Join(out, fmt.Sprintf("shard-%d", i))
		m := readManifest(t, shard)
		mask := fmt.Sprintf("CUDA_VISIBLE_DEVICES=%d, HIP_VISIBLE_DEVICES=%d", i, i)
		if m.Index != i || m.Count != 2 || m.Exit != 0 || m.VisibleDevices != mask || m.Target != "FuzzMergePartials" {
			t.Errorf("shard %d manifest %+v, expected %d/2, exit 0, %s", i, m, i, mask)
		}
		log, _ := os.ReadFile(filepath.Join(shard, "fuzz.log"))
		if !strings.Contains(string(log), "-test.fuzzcachedir="+filepath.Join(shard, "cache")) || !strings.Contains(string(log), "-test.parallel=1") {
			t.Errorf("shard %d: its own fuzz cache and -parallel 1 not in its command:\n%s", i, log)
		}
		if !strings.Contains(stdout, fmt.Sprintf("fuzz: shard %d/2 (FuzzMergePartials) on device %d: exit 0 after", i, i)) {
			t.Errorf("no end line for shard %d in\n%s", i, stdout)
		}
	}
	if !strings.Contains(stdout, "corpus: FuzzMergePartials: ") || countFiles(t, filepath.Join(out, "corpus")) == 0 {
		t.Errorf("no merged corpus:\n%s", stdout)
	}
	if after := countFiles(t, "../../fuzz/testdata"); after != before {
		t.Errorf("fuzz/testdata holds %d files after the run, %d before: a fuzzer wrote into the package", after, before)
	}
}

// TestFuzzDevicesFailure: a fuzzer that writes a failing input (a stand-in test binary that
// writes testdata/fuzz/<target>/fail-<device>, where Go's fuzzer writes one, relative to its
// working directory, and exits 1 on device 1) has its input collected in its own shard only; the
// run exits 1 and the merged corpus holds the input.
func TestFuzzDevicesFailure(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fake.test")
	script := `#!/bin/sh
t=FuzzMergePartials
mkdir -p testdata/fuzz/$t
printf 'go test fuzz v1\n[]byte("device %s")\n' "$CUDA_VISIBLE_DEVICES" > testdata/fuzz/$t/fail-$CUDA_VISIBLE_DEVICES
test "$CUDA_VISIBLE_DEVICES" = 1 && { echo "--- FAIL: $t"; exit 1; }
rm testdata/fuzz/$t/fail-$CUDA_VISIBLE_DEVICES
exit 0
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	code, stdout, stderr := runCLI("fuzz", "--devices", "0,1", "--target", "FuzzMergePartials", "--test-bin", bin, "--pkg", "../../fuzz", "--out", out)
	if code != 1 {
		t.Fatalf("exit %d, expected 1 (a fuzzer failed)\n%s\n%s", code, stdout, stderr)
	}
	m0, m1 := readManifest(t, filepath.Join(out, "shard-0")), readManifest(t, filepath.Join(out, "shard-1"))
	want := filepath.Join("failures", "FuzzMergePartials", "fail-1")
	if m0.Exit != 0 || len(m0.Failures) != 0 || m1.Exit != 1 || len(m1.Failures) != 1 || m1.Failures[0] != want {
		t.Fatalf("manifests: shard 0 exit %d failures %v, shard 1 exit %d failures %v; expected shard 1 alone with %s", m0.Exit, m0.Failures, m1.Exit, m1.Failures, want)
	}
	e := "go test fuzz v1\n[]byte(\"device 1\")\n"
	if _, err := os.Stat(filepath.Join(out, "corpus", "FuzzMergePartials", hashName(e))); err != nil {
		t.Errorf("the failing input is not in the merged corpus: %v", err)
	}
	for _, s := range []string{"fuzz: shard 1/2 (FuzzMergePartials) on device 1: exit 1 after", "1 failing input(s)", "--- FAIL: FuzzMergePartials"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("no %q in\n%s", s, stdout)
		}
	}
}

// TestFuzzUsage: a missing or malformed target and bad device lists are usage errors.
func TestFuzzUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--devices", "0,1"}, `--target ""`},
		{[]string{"--devices", "0,1", "--target", "Decode"}, `--target "Decode"`},
		{[]string{"--devices", "0,0", "--target", "FuzzDecode"}, "device 0 given twice"},
		{[]string{"--target", "FuzzDecode"}, `device id ""`},
		{[]string{"--devices", "0", "--target", "FuzzDecode", "--lib", "/no/such/lib.so"}, "--lib /no/such/lib.so"},
	} {
		code, _, stderr := runCLI(append([]string{"fuzz", "--out", t.TempDir()}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("fuzz %s: exit %d, stderr %q; expected exit 2 with %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}
