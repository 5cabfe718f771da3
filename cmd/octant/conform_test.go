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
		{[]string{"conform", "--min-cases", "-3", "--lib", "x.so"}, "expected values ≥ 0"},
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
		Certified *bool     `json:"certified"`
		TooFew    *[]string `json:"too_few_cases"`
		MinCases  *int      `json:"min_cases"`
	}{&cert.Certified, &cert.TooFew, &cert.MinCases}); err != nil {
		t.Fatal(err)
	}
	if cert.Certified || cert.MinCases != conformance.DefaultMinCases || len(cert.TooFew) != 5 {
		t.Errorf("certificate: certified %v, min_cases %d, too_few_cases %q; expected not certified, %d, one entry per op", cert.Certified, cert.MinCases, cert.TooFew, conformance.DefaultMinCases)
	}
}
