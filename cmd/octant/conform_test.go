package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/conformance"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/provenance"
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
		{[]string{"conform", "--cases", "4", "--budget", "1m", "--lib", "x.so"}, "--cases 4 and --budget 1m0s: expected one of them"},
		{[]string{"conform", "--cases", "-2", "--lib", "x.so"}, "--cases -2: expected a count ≥ 0"},
		{[]string{"conform", "--shard", "0/2", "--lib", "x.so"}, "expected --cases N beside it"},
		{[]string{"conform", "--cases", "4", "--shard", "2/2", "--lib", "x.so"}, "expected i/n with 0 ≤ i < n"},
		{[]string{"conform", "--cases", "4", "--shard", "x", "--lib", "x.so"}, "expected i/n with 0 ≤ i < n"},
		{[]string{"merge", dir}, "expected OUT and at least one SHARD_DIR"},
		{[]string{"merge", dir, filepath.Join(dir, "none")}, "shard " + filepath.Join(dir, "none")},
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

// conformCert runs octant conform with args and reads the certificate it wrote.
func conformCert(t *testing.T, args ...string) (int, string, conformance.Certificate) {
	t.Helper()
	out := t.TempDir()
	code, stdout, stderr := runCLI(append(append([]string{"conform"}, args...), "--out", out)...)
	b, err := os.ReadFile(filepath.Join(out, "certificate.json"))
	if err != nil {
		t.Fatalf("exit %d, no certificate (%v); stdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	var c conformance.Certificate
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return code, stdout, c
}

// emuAndAdapters is the CPU emulator library and the absolute paths of the reference adapter and
// the narrowing test adapter, or a skip.
func emuAndAdapters(t *testing.T) (emu, capi, narrow string) {
	t.Helper()
	emu, _ = filepath.Abs("../../build/liboctave_emu.so")
	if _, err := os.Stat(emu); err != nil {
		t.Skip("build/liboctave_emu.so missing: make emu")
	}
	capi, _ = filepath.Abs("../../kernels/worker/py/octant_adapters/capi.py")
	narrow, _ = filepath.Abs("../../kernels/worker/testdata/narrow_adapter.py")
	return emu, capi, narrow
}

// TestConformThroughAdapter: conform through host:capi.py?lib=<emulator> certifies the same units
// with the same case counts and verdicts as conform on the emulator library directly (dates and
// times left out), and the certificate records the spec, the adapter's SHA-256 and the library
// its lib= option names with the library's own SHA-256; nothing is narrowed.
func TestConformThroughAdapter(t *testing.T) {
	emu, capi, _ := emuAndAdapters(t)
	args := []string{"--fixed", "2", "--budget", "0s", "--min-cases", "1"}
	codeD, _, direct := conformCert(t, append([]string{"--lib", emu}, args...)...)
	spec := "host:" + capi + "?lib=" + emu
	codeA, stdout, via := conformCert(t, append([]string{"--lib", spec}, args...)...)
	if codeD != 0 || codeA != 0 || !via.Certified || via.VerdictLine != direct.VerdictLine {
		t.Errorf("exit %d direct, %d through the adapter; verdicts %q and %q: expected both certified alike\n%s", codeD, codeA, direct.VerdictLine, via.VerdictLine, stdout)
	}
	type caseKey struct {
		Path   string
		Status string
	}
	keys := func(c conformance.Certificate) (out []caseKey) {
		for _, r := range c.Cases {
			out = append(out, caseKey{r.Path, r.Status.String()})
		}
		return out
	}
	if a, b := keys(direct), keys(via); !slices.Equal(a, b) {
		t.Errorf("cases differ:\ndirect  %v\nadapter %v", a, b)
	}
	if len(direct.Evidence) != len(via.Evidence) {
		t.Fatalf("%d evidence rows direct, %d through the adapter", len(direct.Evidence), len(via.Evidence))
	}
	for i, e := range direct.Evidence {
		v := via.Evidence[i]
		if e.Op != v.Op || e.Tier != v.Tier || e.How != v.How || e.Cases != v.Cases || e.Status != v.Status || e.OutsideDomain != 0 || v.OutsideDomain != 0 {
			t.Errorf("evidence %d: direct %+v, adapter %+v", i, e, v)
		}
	}
	sum, err := provenance.FileSHA256(capi)
	if err != nil {
		t.Fatal(err)
	}
	a := via.Adapter
	if via.Library != spec || via.LibrarySHA != sum || a == nil || a.Spec != spec || a.File != capi || a.SHA256 != sum || a.Mode != "host" ||
		len(a.OptionFiles) != 1 || a.OptionFiles[0].Option != "lib" || a.OptionFiles[0].Path != emu || a.OptionFiles[0].SHA256 != direct.LibrarySHA {
		t.Errorf("provenance: library %q sha %s, adapter %+v; expected the spec, capi.py's sha256 %s and lib=%s with the library's %s", via.Library, via.LibrarySHA, a, sum, emu, direct.LibrarySHA)
	}
	if direct.Adapter != nil || len(direct.Narrowed) > 0 || len(via.Narrowed) > 0 {
		t.Errorf("adapter %+v on the library; narrowed %v direct, %v through capi.py: expected none", direct.Adapter, direct.Narrowed, via.Narrowed)
	}
}

// TestConformNarrowed: through an adapter whose declaration leaves prefill out, runs its reduce
// inside decode, excludes invalid block ids and does not report decode's tier (narrow_adapter.py
// over the emulator), the certificate is CERTIFIED ON A NARROWED DOMAIN naming each narrowing, in
// the JSON and under not_certified; prefill and reduce run no case and are evidence "not declared"
// and "inside decode"; decode's cases outside the domain are counted apart and do not count toward
// --min-cases. A declaration of no required op certifies nothing.
func TestConformNarrowed(t *testing.T) {
	emu, _, narrow := emuAndAdapters(t)
	spec := "host:" + narrow + "?lib=" + emu + "&drop=prefill&reduce_in_decode=1&excludes=invalid-block-ids&no_tier=decode"
	code, stdout, c := conformCert(t, "--lib", spec, "--fixed", "4", "--budget", "0s", "--min-cases", "1", "--tiers", "portable")
	want := "CERTIFIED ON A NARROWED DOMAIN (not declared: prefill; reduce inside decode; outside declared domain: invalid block ids; decode tier not reported) on the CPU emulator"
	if code != 0 || !c.Certified || !strings.HasPrefix(c.VerdictLine, want) {
		t.Fatalf("exit %d, verdict %q; expected exit 0 and a verdict starting %q\n%s", code, c.VerdictLine, want, stdout)
	}
	wantNarrowed := []string{"not declared: prefill", "reduce inside decode", "outside declared domain: invalid block ids", "decode tier not reported"}
	if !slices.Equal(c.Narrowed, wantNarrowed) {
		t.Errorf("narrowed %q, expected %q", c.Narrowed, wantNarrowed)
	}
	for _, n := range wantNarrowed {
		if !slices.Contains(c.NotCertified, "narrowed by the adapter's declaration: "+n) {
			t.Errorf("not_certified %q lacks %q", c.NotCertified, n)
		}
	}
	outside, notSupported := 0, 0
	for _, e := range c.Evidence {
		switch {
		case e.Op == arch.Prefill && e.How != conformance.HowNotDeclared, e.Op == arch.Reduce && e.How != conformance.HowInDecode:
			t.Errorf("evidence %+v: expected prefill not declared and reduce inside decode", e)
		case e.Op == arch.Decode:
			outside += e.OutsideDomain
			if !e.TierNotReported {
				t.Errorf("decode evidence %+v: expected tier not reported", e)
			}
		}
	}
	for _, r := range c.Cases {
		if strings.HasPrefix(r.Path, "prefill/") || strings.HasPrefix(r.Path, "reduce/") {
			t.Errorf("case %s ran: expected no prefill or reduce case", r.Path)
		}
		if r.Status == harness.NotSupported {
			notSupported++
			if !strings.HasPrefix(r.Message, "portable: ") && !strings.Contains(r.Message, "outside declared domain: invalid block ids") {
				t.Errorf("case %s: %q, expected outside declared domain: invalid block ids", r.Path, r.Message)
			}
		}
	}
	if outside == 0 || outside != notSupported {
		t.Errorf("decode counts %d cases outside the domain, the certificate has %d NotSupported: expected the same, above 0 (seeds 0-3 include invalid block ids)", outside, notSupported)
	}

	code, stdout, c = conformCert(t, "--lib", "host:"+narrow+"?lib="+emu+"&drop=store,rotate,decode,prefill&reduce_in_decode=1", "--fixed", "1", "--budget", "0s", "--min-cases", "1")
	if code != 1 || c.Certified || !strings.Contains(c.VerdictLine, "NOT CERTIFIED") || !strings.Contains(c.VerdictLine, "narrowed domain") {
		t.Errorf("a declaration of no required op: exit %d, verdict %q; expected exit 1, NOT CERTIFIED on a narrowed domain\n%s", code, c.VerdictLine, stdout)
	}
}
