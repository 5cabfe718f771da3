package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/conformance"
)

// TestConformUsageErrors: bad flags and missing inputs exit 2 with a message saying what was
// expected, before anything runs.
func TestConformUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"conform", "--isa-only", "--lib", "x.so", "--arch", "gfx1100"}, "--isa-only needs --arch gfx1100 or gfx942 and no --lib"},
		{[]string{"conform", "--isa-only", "--arch", "sm_90"}, "expected an AMD architecture"},
		{[]string{"conform", "--fixed", "-1", "--lib", "x.so"}, "expected values ≥ 0"},
		{[]string{"conform", "--min-cases", "-3", "--lib", "x.so"}, "--min-cases -3: expected at least 1"},
		{[]string{"conform", "--min-cases", "0", "--lib", "x.so"}, "--min-cases 0: expected at least 1"},
		{[]string{"conform", "--lib", filepath.Join(dir, "missing.so"), "--out", dir}, "missing.so"},
		{[]string{"conform", "--isa-only", "--arch", "gfx1100", "--isa-dir", filepath.Join(dir, "none"), "--out", dir}, "make isa"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; expected exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestConformTooFewCases: a run against a real library (the CPU emulator, built by make emu)
// that runs fewer cases per op and tier than --min-cases is NOT CERTIFIED (exit 1), names the
// units, and says so in the certificate — even when every case passed.
func TestConformTooFewCases(t *testing.T) {
	lib, _ := filepath.Abs("../../build/liboctave_emu.so")
	if _, err := os.Stat(lib); err != nil {
		t.Skip("build/liboctave_emu.so missing: make emu")
	}
	out := t.TempDir()
	code, stdout, stderr := runCLI("conform", "--lib", lib, "--fixed", "1", "--budget", "0s", "--out", out)
	if code != 1 || !strings.Contains(stdout, "too few cases: decode/portable: 1 cases run, at least 32 required") {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s\nexpected exit 1 and the too-few-cases line", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "certificate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cert conformance.Certificate
	if err := json.Unmarshal(b, &struct {
		Certified *bool                   `json:"certified"`
		TooFew    *[]string               `json:"too_few_cases"`
		MinCases  *int                    `json:"min_cases"`
		Evidence  *[]conformance.Evidence `json:"evidence"`
	}{&cert.Certified, &cert.TooFew, &cert.MinCases, &cert.Evidence}); err != nil {
		t.Fatal(err)
	}
	if cert.Certified || cert.MinCases != conformance.DefaultMinCases || len(cert.TooFew) != len(cert.Evidence) || len(cert.Evidence) < 5 {
		t.Errorf("certificate: certified %v, min_cases %d, too_few_cases %q over %d op/tier rows; expected not certified, %d, one entry per op and tier", cert.Certified, cert.MinCases, cert.TooFew, len(cert.Evidence), conformance.DefaultMinCases)
	}
}

// TestConformNothingRan: with no fixed case and no budget nothing runs, and nothing is said to
// have run: every op and tier is "not run", the certificate is NOT CERTIFIED (exit 1).
func TestConformNothingRan(t *testing.T) {
	lib := emuLib(t)
	out := t.TempDir()
	code, stdout, stderr := runCLI("conform", "--lib", lib, "--fixed", "0", "--budget", "0s", "--min-cases", "1", "--out", out)
	if code != 1 || !strings.Contains(stdout, "NOT CERTIFIED (too few cases ran: decode/portable: no case ran") {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s\nexpected exit 1, NOT CERTIFIED, no case ran", code, stdout, stderr)
	}
	if strings.Contains(stdout, " ran on ") {
		t.Errorf("evidence claims a run over 0 cases:\n%s", stdout)
	}
	if !strings.Contains(stdout, "evidence: decode/portable: 0 cases, Pass; not run: no case ran") {
		t.Errorf("no evidence line says decode/portable was not run:\n%s", stdout)
	}
}

// TestConformTiers: every tier the library lists is judged by default; --tiers narrows the
// optional ones but never drops a required one (it is judged all the same, with a note); an
// unknown tier is a usage error.
func TestConformTiers(t *testing.T) {
	lib := emuLib(t)
	out := t.TempDir()
	_, stdout, stderr := runCLI("conform", "--lib", lib, "--fixed", "1", "--budget", "0s", "--min-cases", "1", "--out", out)
	for _, w := range []string{"evidence: decode/wmma-model (not required; listed by the library): 1 cases", "evidence: prefill/mma-model (not required; listed by the library): 1 cases"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("default run: no line %q:\n%s\n%s", w, stdout, stderr)
		}
	}
	_, stdout, stderr = runCLI("conform", "--lib", lib, "--fixed", "1", "--budget", "0s", "--min-cases", "1", "--tiers", "wmma-model", "--out", out)
	for _, w := range []string{"note: --tiers leaves out decode/portable, which the certificate requires: judged all the same", "evidence: decode/portable: 1 cases",
		"evidence: decode/wmma-model (not required; listed by the library): 1 cases", "note: decode/mma-model: listed by the library, left out by --tiers"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("--tiers wmma-model: no line %q:\n%s\n%s", w, stdout, stderr)
		}
	}
	if code, _, stderr := runCLI("conform", "--lib", lib, "--tiers", "fast", "--out", out); code != 2 || !strings.Contains(stderr, `the library offers no tier "fast"`) {
		t.Errorf("--tiers fast: exit %d, %s", code, stderr)
	}
}

// emuLib is the CPU emulator library (make emu), or a skip saying how to build it.
func emuLib(t *testing.T) string {
	t.Helper()
	lib, _ := filepath.Abs("../../build/liboctave_emu.so")
	if _, err := os.Stat(lib); err != nil {
		t.Skip("build/liboctave_emu.so missing: make emu")
	}
	return lib
}
