package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/conformance"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
)

// TestCertifierSelfTest certifies fixtures of the CPU emulator library that are wrong in known
// ways (harnesstest): (a) a required tier omitted, (b) no case run, (c) a tier that writes zeros,
// (d) a tier that declares a looser profile than the registry's, and (e) the library as it is.
// Only (e) is CERTIFIED, and all four reports (the console's last line, certificate.json,
// report.md's title, junit.xml) say the same verdict.
func TestCertifierSelfTest(t *testing.T) {
	l, err := harness.Open(emuLib(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := arch.Lookup(l.Dev.Info.Arch)
	if err != nil {
		t.Fatal(err)
	}
	one := conformance.Options{Arch: a, Fixed: 1, MinCases: 1}
	fixtures := []struct {
		name      string
		lib       func() (*harness.Lib, error)
		o         conformance.Options
		certified bool
		why       string
	}{
		{"omits-portable", func() (*harness.Lib, error) { return harnesstest.Without(l, "portable") }, one, false, "failing cases"},
		{"no-case-run", func() (*harness.Lib, error) { return l, nil }, conformance.Options{Arch: a, MinCases: 1}, false, "no case ran"},
		{"writes-zeros", func() (*harness.Lib, error) { return harnesstest.Zeros(l, "portable") }, one, false, "failing cases"},
		{"looser-profile", func() (*harness.Lib, error) { return harnesstest.Declaring(l, "portable", arch.Decode, "wmma-f16q") }, one, false, "failing cases"},
		{"correct", func() (*harness.Lib, error) { return l, nil }, one, true, "CERTIFIED on the CPU emulator"},
	}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			fl, err := f.lib()
			if err != nil {
				t.Fatal(err)
			}
			cert, err := conformance.Runtime(fl, a, f.o, conformance.Suite{Version: "test", Command: "self-test " + f.name})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := writeCertificate(cert, dir, &stdout, &stderr)
			if cert.Certified != f.certified || !strings.Contains(cert.Verdict(), f.why) {
				t.Errorf("certified %v, verdict %q; expected certified %v, a verdict saying %q", cert.Certified, cert.Verdict(), f.certified, f.why)
			}
			if want := map[bool]int{true: 0, false: 1}[f.certified]; code != want {
				t.Errorf("exit %d, expected %d:\n%s%s", code, want, stdout.String(), stderr.String())
			}
			checkOneVerdict(t, dir, stdout.String(), cert.Verdict(), f.certified)
		})
	}
}

// checkOneVerdict reads the four reports in dir (console output given) and requires each to
// carry verdict and certified.
func checkOneVerdict(t *testing.T, dir, console, verdict string, certified bool) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(console), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, ": "+verdict+"; ") {
		t.Errorf("console's last line %q does not carry the verdict %q", last, verdict)
	}
	var j struct {
		Certified bool   `json:"certified"`
		Verdict   string `json:"verdict"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "certificate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &j); err != nil || j.Certified != certified || j.Verdict != verdict {
		t.Errorf("certificate.json: certified %v verdict %q (%v); expected %v, %q", j.Certified, j.Verdict, err, certified, verdict)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if title, _, _ := strings.Cut(string(md), "\n"); !strings.HasSuffix(title, "— **"+verdict+"**") {
		t.Errorf("report.md's title %q does not carry the verdict %q", title, verdict)
	}
	var x struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, err = os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &x); err != nil || len(x.Suites) == 0 {
		t.Fatalf("junit.xml: %v", err)
	}
	failures := 0
	for _, s := range x.Suites {
		failures += s.Failures
	}
	first := x.Suites[0]
	if !strings.HasSuffix(first.Name, "/certificate") || len(first.Cases) != 1 || (first.Cases[0].Failure == nil) == !certified ||
		(!certified && first.Cases[0].Failure.Message != verdict) || (failures == 0) != certified {
		t.Errorf("junit.xml: certificate suite %+v, %d failures in all; expected its verdict case to fail exactly when not certified (%v), with the verdict", first, failures, certified)
	}
}
