package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	l, a := emuArch(t)
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
			cert, err := conformance.Runtime(context.Background(), fl, a, f.o, conformance.Suite{Version: "test", Command: "self-test " + f.name})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := writeCertificate("conform", cert, dir, &stdout, &stderr)
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

// TestConformWatchdog: a library whose rotate does not return within --case-timeout is reported by
// the watchdog with the case's name and a reproducer that replays it; conform's status for it is
// 3.
func TestConformWatchdog(t *testing.T) {
	l, a := emuArch(t)
	stall := harnesstest.Stalling(l, time.Second)
	hung := make(chan conformance.HungCase, 8)
	dir := t.TempDir()
	o := conformance.Options{Arch: a, Fixed: 1, MinCases: 1, OutDir: dir, CaseTimeout: 300 * time.Millisecond,
		Hung: func(h conformance.HungCase) { hung <- h }}
	units := []conformance.Unit{{Op: arch.Rotate, Tier: "portable"}}
	if _, err := conformance.RunBattery(context.Background(), stall, units, o); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-hung:
		if !strings.HasPrefix(h.Path, "rotate/portable/") || h.After != o.CaseTimeout || !strings.HasPrefix(h.Replay, "octant replay --lib "+l.Path+" "+dir) {
			t.Fatalf("hung case %+v: expected a rotate/portable case and its replay command", h)
		}
		var b strings.Builder
		if code := reportHung(&b, h); code != 3 || !strings.Contains(b.String(), h.Path) || !strings.Contains(b.String(), "replay: "+h.Replay) {
			t.Errorf("reportHung: exit %d, %q", code, b.String())
		}
		if _, err := os.Stat(strings.Fields(h.Replay)[4]); err != nil {
			t.Errorf("the hung case's reproducer: %v", err)
		}
	default:
		t.Fatal("a rotate that took 1 s under a 300 ms case timeout was not reported")
	}
	// Without the stall no case is reported.
	o.Hung = func(h conformance.HungCase) { t.Errorf("reported %+v on the library as it is", h) }
	if _, err := conformance.RunBattery(context.Background(), l, units, o); err != nil {
		t.Fatal(err)
	}
}

// TestConformInterrupted: a certification whose context is done stops between cases and writes
// no certificate.
func TestConformInterrupted(t *testing.T) {
	l, a := emuArch(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cert, err := conformance.Runtime(ctx, l, a, conformance.Options{Arch: a, Fixed: 3, MinCases: 1}, conformance.Suite{Version: "test"})
	if cert != nil || err == nil || !strings.Contains(err.Error(), "interrupted after 0 cases") || !strings.Contains(err.Error(), "no certificate written") {
		t.Fatalf("cancelled certification: %v, %v; expected no certificate and an error saying it was interrupted", cert, err)
	}
}

// emuArch opens the CPU emulator library for the test (closed when it ends) and looks up its
// architecture.
func emuArch(t *testing.T) (*harness.Lib, arch.Arch) {
	t.Helper()
	l, err := harness.Open(emuLib(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	a, err := arch.Lookup(l.Dev.Info.Arch)
	if err != nil {
		t.Fatal(err)
	}
	return l, a
}
