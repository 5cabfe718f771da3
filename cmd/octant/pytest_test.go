package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pytestPython is the interpreter the pytest file's test runs: Debian's, where apt installs
// python3-pytest (the pyenv python3 on PATH has the standard library only).
const pytestPython = "/usr/bin/python3"

// pytestOrSkip skips when pytestPython cannot run pytest, saying how to get it.
func pytestOrSkip(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(pytestPython, "-m", "pytest", "--version").CombinedOutput(); err != nil {
		t.Skipf("pytest is absent (%s -m pytest --version: %v: %s): apt-get install python3-pytest to run the pytest file's test", pytestPython, err, strings.TrimSpace(string(out)))
	}
}

// buildOctant builds the command line into the test's temporary directory (the pytest file runs
// it as a program).
func buildOctant(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "octant")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -o %s .: %v\n%s", bin, err, out)
	}
	return bin
}

// runPytest runs contrib/pytest with args and returns its exit status, output and the JUnit
// test cases (name, failed).
func runPytest(t *testing.T, args ...string) (int, string, map[string]bool) {
	t.Helper()
	dir, _ := filepath.Abs("../../contrib/pytest")
	xmlPath := filepath.Join(t.TempDir(), "junit.xml")
	cmd := exec.Command(pytestPython, append([]string{"-m", "pytest", dir, "-p", "no:cacheprovider", "-rA", "--junitxml", xmlPath}, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running pytest: %v", err)
	}
	b, err := os.ReadFile(xmlPath)
	if err != nil {
		t.Fatalf("pytest wrote no JUnit XML (exit %d): %v\n%s", code, err, out)
	}
	var suites struct {
		Suites []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatalf("pytest's JUnit XML: %v\n%s", err, b)
	}
	items := map[string]bool{}
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			items[c.Name] = c.Failure != nil || c.Error != nil || c.Skipped != nil
		}
	}
	return code, string(out), items
}

// TestPytestShards: the pytest file over the CPU emulator library in 2 shards makes one item per
// unit of conform's plan, every unit in exactly one shard, and every item passes; through the
// defect adapter (a decode that writes a wrong element), the decode/portable item fails naming
// its unit, the element and the Python reproducer.
func TestPytestShards(t *testing.T) {
	lib := emuLib(t)
	pytestOrSkip(t)
	code, stdout, stderr := runCLI("conform", "--lib", lib, "--list-units")
	if code != 0 {
		t.Fatalf("conform --list-units: exit %d\n%s", code, stderr)
	}
	var list UnitList
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, u := range list.Units {
		want = append(want, "test_unit["+u.Unit+"]")
	}
	sort.Strings(want)
	bin := buildOctant(t)
	conformArgs := "--fixed 1 --budget 0s --min-cases 1"
	var got []string
	for shard := range 2 {
		code, out, items := runPytest(t, "--octant", bin, "--lib", lib, "--shard-id", strconv.Itoa(shard), "--num-shards", "2", "--octant-args", conformArgs)
		if code != 0 {
			t.Fatalf("shard %d of 2: pytest exit %d, expected 0:\n%s", shard, code, out)
		}
		if len(items) == 0 || len(items) == len(want) {
			t.Errorf("shard %d of 2 ran %d of the %d units, expected a strict part of them", shard, len(items), len(want))
		}
		for name, bad := range items {
			if bad {
				t.Errorf("shard %d: %s did not pass:\n%s", shard, name, out)
			}
			got = append(got, name)
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the 2 shards ran %v, expected every unit of the plan exactly once: %v", got, want)
	}

	spec := "host:" + filepath.Join(filepath.Dir(filepath.Dir(lib)), "kernels", "worker", "testdata", "defect_adapter.py") + "?lib=" + lib + "&defect=perturb"
	code, out, items := runPytest(t, "--octant", bin, "--lib", spec, "-k", "decode and portable", "--octant-args", conformArgs)
	if code != 1 || len(items) != 1 || !items["test_unit[decode/portable]"] {
		t.Fatalf("defect adapter: pytest exit %d with items %v, expected exit 1 and test_unit[decode/portable] failing:\n%s", code, items, out)
	}
	for _, w := range []string{"FAILED", "test_unit[decode/portable]", "decode/portable: Fail", "row 0 head 0 dim 5 = 100", "without Go: python3 "} {
		if !strings.Contains(out, w) {
			t.Errorf("defect adapter: pytest's output does not say %q:\n%s", w, out)
		}
	}
}

// TestConformUnits: --units narrows the battery to the named units and the certificate says the
// run is partial, never CERTIFIED, even naming every unit; a unit not in the plan, or named twice,
// is a usage error listing the plan.
func TestConformUnits(t *testing.T) {
	lib := emuLib(t)
	out := t.TempDir()
	_, stdout, _ := runCLI("conform", "--lib", lib, "--list-units")
	var list UnitList
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, u := range list.Units {
		all = append(all, u.Unit)
	}
	code, stdout, stderr := runCLI("conform", "--lib", lib, "--units", "store/portable", "--fixed", "1", "--budget", "0s", "--min-cases", "1", "--out", out)
	if code != 1 || !strings.Contains(stdout, "NOT CERTIFIED (a partial run: 1 unit(s) judged (--units))") || !strings.Contains(stdout, "store    Pass") || strings.Contains(stdout, "decode   ") {
		t.Fatalf("--units store/portable: exit %d\n%s\n%s\nexpected exit 1, store alone judged, a partial NOT CERTIFIED verdict", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("conform", "--lib", lib, "--units", strings.Join(all, ","), "--fixed", "1", "--budget", "0s", "--min-cases", "1", "--out", out)
	if code != 1 || !strings.Contains(stdout, "NOT CERTIFIED (a partial run") {
		t.Fatalf("--units naming every unit: exit %d\n%s\n%s\nexpected exit 1 and a partial NOT CERTIFIED verdict", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "certificate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cert struct {
		Certified bool     `json:"certified"`
		Partial   []string `json:"partial"`
	}
	if err := json.Unmarshal(b, &cert); err != nil {
		t.Fatal(err)
	}
	if cert.Certified || !slices.Equal(cert.Partial, all) {
		t.Errorf("certificate: certified %v, partial %v; expected not certified and partial %v", cert.Certified, cert.Partial, all)
	}
	for _, c := range []struct{ units, want string }{
		{"decode/fast", `unit "decode/fast" is not in this run's plan: expected some of decode/portable,`},
		{"store/portable,store/portable", `unit "store/portable" named twice`},
		{"store/portable,", "an empty unit name"},
	} {
		if code, _, stderr := runCLI("conform", "--lib", lib, "--units", c.units, "--out", out); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("--units %s: exit %d, stderr %q; expected exit 2 and %q", c.units, code, stderr, c.want)
		}
	}
}
