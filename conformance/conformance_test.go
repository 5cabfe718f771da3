package conformance

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
)

func TestWorstWins(t *testing.T) {
	cases := []CaseResult{{Path: "decode/portable/a", Status: harness.Pass}, {Path: "decode/portable/b", Status: harness.QualityWarning},
		{Path: "decode/wmma/c", Status: harness.NotSupported}, {Path: "store/portable/d", Status: harness.Fail}}
	got := map[string]harness.Status{}
	for _, s := range Summarize(cases, 2) {
		got[s.Node] = s.Status
	}
	want := map[string]harness.Status{"decode": harness.QualityWarning, "decode/portable": harness.QualityWarning, "decode/wmma": harness.NotSupported, "store": harness.Fail, "store/portable": harness.Fail}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, expected %v (worst wins)", k, got[k], v)
		}
	}
	ran := []Evidence{{Op: arch.Decode, Tier: "portable", How: HowRan}, {Op: arch.Store, Tier: "portable", How: HowRan}}
	c := &Certificate{Cases: cases, Evidence: ran}
	c.Finish()
	if c.Certified || c.Status != harness.Fail {
		t.Errorf("a failing case: certified %v status %v", c.Certified, c.Status)
	}
	c = &Certificate{Cases: cases[:3], Evidence: ran[:1]}
	c.Finish()
	if !c.Certified || c.Status != harness.QualityWarning {
		t.Errorf("quality warnings only: certified %v status %v, expected certified with QualityWarning", c.Certified, c.Status)
	}
	c = &Certificate{Cases: cases[:1], Evidence: ran, Missing: []string{"prefill: no mfma prefill kernel"}}
	c.Finish()
	if c.Certified {
		t.Error("a missing required kernel must not certify")
	}
}

func TestReportAndJUnit(t *testing.T) {
	c := &Certificate{Schema: SchemaVersion, Arch: "sm_90", Mode: "runtime", Cases: []CaseResult{
		{Path: "decode/portable/k3v4/seed1", Status: harness.Fail, Message: "bad <value> & more", Replay: "octant replay --lib L f.json", Seconds: 0.5},
		{Path: "decode/portable/k3v4/seed2", Status: harness.QualityWarning, Message: "near"},
		{Path: "rotate/portable/x/seed3", Status: harness.NotSupported, Message: "why"}}}
	c.Finish()
	dir := t.TempDir()
	if err := c.Write(dir); err != nil {
		t.Fatal(err)
	}
	rep, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, w := range []string{"NOT CERTIFIED", "decode/portable/k3v4/seed1", "replay: `octant replay --lib L f.json`"} {
		if !strings.Contains(string(rep), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	var j junitSuites
	b, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if len(j.Suites) != 3 || j.Suites[0].Failures != 1 || j.Suites[1].Failures != 1 || j.Suites[2].Skipped != 1 {
		t.Errorf("junit suites %+v: expected the certificate (1 failure: not certified), decode (1 failure) and rotate (1 skipped)", j.Suites)
	}
}

func TestStaticCases(t *testing.T) {
	a, _ := arch.Lookup("gfx1100")
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "gfx1100"), 0o755)
	// A disassembly with the store kernel only, lacking its byte permute.
	os.WriteFile(filepath.Join(dir, "gfx1100", "x.s"), []byte("0000000000001000 <octave_store_kernel>:\n\tv_add_f32 v0, v1, v2\n"), 0o644)
	cases, err := StaticCases(a, dir)
	if err != nil {
		t.Fatal(err)
	}
	var fails, ns int
	for _, c := range cases {
		switch c.Status {
		case harness.Fail:
			fails++
		case harness.NotSupported:
			ns++
		}
	}
	if fails < 2 || ns == 0 {
		t.Errorf("%d failing and %d harness.NotSupported cases: expected the missing kernels and byte permute to fail and the runtime ops NotSupported", fails, ns)
	}
	if _, err := StaticCases(a, t.TempDir()); err == nil || !strings.Contains(err.Error(), "make isa") {
		t.Errorf("no disassemblies: %v", err)
	}
}

// TestCaseResultNonFinite: a defective kernel's NaN output gives an infinite bound ratio; the
// certificate records it (as a string) instead of failing to encode (it did, against mutant 1 on
// the H200). Finite values stay numbers; a NaN rel_l2 (not computed) is left out.
func TestCaseResultNonFinite(t *testing.T) {
	for _, c := range []struct {
		r    CaseResult
		want string
	}{
		{CaseResult{Path: "decode/x", Status: harness.Fail, BoundErr: math.Inf(1), RelL2: math.NaN()}, `"bound_ratio":"+Inf"`},
		{CaseResult{Path: "decode/x", Status: harness.Fail, BoundErr: 2.5, RelL2: math.Inf(1)}, `"rel_l2":"+Inf","bound_ratio":2.5`},
		{CaseResult{Path: "decode/x", Status: harness.Pass, BoundErr: 0.25, RelL2: 0.01}, `"rel_l2":0.01,"bound_ratio":0.25`},
	} {
		b, err := json.Marshal(c.r)
		if err != nil {
			t.Fatalf("%+v: %v", c.r, err)
		}
		if !strings.Contains(string(b), c.want) || strings.Contains(string(b), "NaN") {
			t.Errorf("%+v encodes as %s, expected it to contain %s and no NaN", c.r, b, c.want)
		}
	}
}

// TestMinCases: with MinCases set, an op/tier that ran fewer cases (harness.NotSupported ones do not
// count) is not certified even if every case passed; without it, the same cases certify.
func TestMinCases(t *testing.T) {
	var cases []CaseResult
	for i := 0; i < 3; i++ {
		cases = append(cases, CaseResult{Path: "decode/portable/x", Status: harness.Pass}, CaseResult{Path: "store/portable/x", Status: harness.Pass})
	}
	cases = append(cases, CaseResult{Path: "store/portable/y", Status: harness.NotSupported, Message: "no"})
	c := &Certificate{Cases: cases, Evidence: []Evidence{{Op: arch.Decode, Tier: "portable", How: HowRan}, {Op: arch.Store, Tier: "portable", How: HowRan}}}
	c.Finish()
	if !c.Certified {
		t.Fatalf("no minimum: not certified (%q)", c.TooFew)
	}
	c.MinCases = 3
	c.Finish()
	if !c.Certified || len(c.TooFew) != 0 {
		t.Errorf("3 cases per unit, minimum 3: certified %v, too few %q", c.Certified, c.TooFew)
	}
	c.MinCases = 4
	c.Finish()
	if c.Certified || len(c.TooFew) != 2 || !strings.Contains(c.TooFew[0], "decode/portable: 3 cases run, at least 4 required") ||
		!strings.Contains(c.Report(), "too few cases ran") {
		t.Errorf("3 cases per unit, minimum 4: certified %v, too few %q", c.Certified, c.TooFew)
	}
}

// TestStaticNeverCertifies: a static certificate states that nothing ran and is not certified,
// even when every static check passes and no required kernel is missing; the evidence names
// what was only compiled.
func TestStaticNeverCertifies(t *testing.T) {
	c := &Certificate{Mode: ModeStatic, Cases: []CaseResult{{Path: "isa/k/p", Status: harness.Pass}, {Path: "decode/portable/runtime", Status: harness.NotSupported}},
		Evidence: []Evidence{{Op: arch.Decode, Tier: "portable", How: HowCompiled, Where: "gfx1100 code objects"}}}
	c.Finish()
	if c.Certified || !strings.Contains(c.Verdict(), "NOT CERTIFIED (static checks only") {
		t.Errorf("static pass: certified %v, verdict %q; expected NOT CERTIFIED (static checks only ...)", c.Certified, c.Verdict())
	}
	if r := c.Report(); !strings.Contains(r, "compiled and disassembled only (gfx1100 code objects): no kernel ran") {
		t.Errorf("report does not say what was only compiled:\n%s", r)
	}
}

// TestStaticVerdictPerArch: for every registered AMD architecture the static certificate is not
// certified, also where nothing is missing (gfx1100 since its WMMA prefill exists), and an
// architecture with unbuilt required tiers (gfx942) names each missing kernel.
func TestStaticVerdictPerArch(t *testing.T) {
	for _, a := range arch.All() {
		if a.Vendor != arch.AMD {
			continue
		}
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, a.Name), 0o755)
		os.WriteFile(filepath.Join(dir, a.Name, "x.s"), []byte("0000000000001000 <octave_store_kernel>:\n\tv_perm_b32 v0, v1, v2, v3\n"), 0o644)
		c, err := Static(a, dir, Suite{Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if c.Certified {
			t.Errorf("%s: a static certificate certified", a.Name)
		}
		if !strings.Contains(c.Verdict(), "NOT CERTIFIED") {
			t.Errorf("%s: static verdict %q, expected NOT CERTIFIED", a.Name, c.Verdict())
		}
		if len(c.Missing) != len(a.Missing()) {
			t.Errorf("%s: missing %q, expected the registry's %q", a.Name, c.Missing, a.Missing())
		}
		var missing int
		for _, e := range c.Evidence {
			if e.How == HowMissing {
				missing++
			} else if e.How != HowCompiled {
				t.Errorf("%s: evidence %+v in a static certificate", a.Name, e)
			}
		}
		if missing != len(a.Missing()) {
			t.Errorf("%s: %d evidence rows say missing, expected %d", a.Name, missing, len(a.Missing()))
		}
	}
}

// TestCountsString: people read counts, not Go maps.
func TestCountsString(t *testing.T) {
	if got := CountsString(map[string]int{"Fail": 1, "Pass": 24, "NotSupported": 0}); got != "Pass 24, Fail 1" {
		t.Errorf("CountsString = %q", got)
	}
	if got := CountsString(nil); got != "no cases" {
		t.Errorf("CountsString(nil) = %q", got)
	}
}

// TestModelEvidence: a certificate on a model certifies only with runtime evidence for every
// required op and tier (model or another device's build) and says so in its verdict; one missing
// kernel keeps it not certified.
func TestModelEvidence(t *testing.T) {
	ev := []Evidence{{Op: arch.Decode, Tier: "wmma", How: HowModel, Where: "wmma-model on X"}, {Op: arch.Decode, Tier: "portable", How: HowOther, Where: "X"}}
	cases := []CaseResult{{Path: "isa/k/p", Status: harness.Pass}, {Path: "decode/wmma/a/seed0", Status: harness.Pass}, {Path: "decode/portable/a/seed0", Status: harness.Pass}}
	c := &Certificate{Mode: ModeModel, Arch: "gfx1100", Cases: cases, Evidence: ev}
	c.Finish()
	if !c.Certified || !strings.Contains(c.Verdict(), "CERTIFIED on a model of the WMMA instructions; no gfx1100 device ran") {
		t.Errorf("model certificate: certified %v, verdict %q", c.Certified, c.Verdict())
	}
	g := &Certificate{Mode: ModeModel, Arch: "gfx942", Cases: []CaseResult{{Path: "isa/k/p", Status: harness.Pass}, {Path: "decode/mfma/a/seed0", Status: harness.Pass}}, Evidence: []Evidence{{Op: arch.Decode, Tier: "mfma", How: HowModel, Where: "mfma-model on X"}}}
	g.Finish()
	if !g.Certified || !strings.Contains(g.Verdict(), "CERTIFIED on a model of the MFMA instructions; no gfx942 device ran") {
		t.Errorf("gfx942 model certificate: certified %v, verdict %q", g.Certified, g.Verdict())
	}
	if r := c.Report(); !strings.Contains(r, "ran on a model: wmma-model on X") || !strings.Contains(r, "ran on another device: X") {
		t.Errorf("report does not say what ran where:\n%s", r)
	}
	c = &Certificate{Mode: ModeModel, Arch: "gfx1100", Cases: cases, Evidence: append(ev, Evidence{Op: arch.Prefill, Tier: "wmma", How: HowMissing, Where: "not built"}),
		Missing: []string{"prefill: not built"}}
	c.Finish()
	if c.Certified {
		t.Error("a model certificate with a missing kernel certified")
	}
}

// TestQualityWarningsInVerdict: a certified certificate with quality warnings says so in its
// verdict, with where they are and how far from exact attention they go, and report.md shows the
// error against exact attention beside the error against the profile.
func TestQualityWarningsInVerdict(t *testing.T) {
	c := &Certificate{Arch: "sm_90", Mode: ModeRuntime, Cases: []CaseResult{
		{Path: "decode/mma/k3v4/seed1", Status: harness.QualityWarning, RelL2: 0.76, BoundErr: 0.5, Judged: 10, Message: "fp16 output"},
		{Path: "decode/mma/k3v4/seed2", Status: harness.QualityWarning, RelL2: 0.03, BoundErr: 0.25, Judged: 10},
		{Path: "decode/mma/k3v4/seed4", Status: harness.Pass, RelL2: math.NaN()},
		{Path: "decode/portable/k3v4/seed3", Status: harness.Pass, RelL2: 0.004, BoundErr: 0.1, Judged: 10}},
		Evidence: []Evidence{{Op: arch.Decode, Tier: "mma", How: HowRan}, {Op: arch.Decode, Tier: "portable", How: HowRan}}}
	c.Finish()
	want := "CERTIFIED with 2 quality warnings: decode/mma 2 (relative L2 from exact attention up to 0.76)"
	if !c.Certified || !strings.HasPrefix(c.Verdict(), want) || c.VerdictLine != c.Verdict() {
		t.Errorf("verdict %q (certified %v), expected it to start with %q", c.Verdict(), c.Certified, want)
	}
	r := c.Report()
	for _, w := range []string{"# Octave KV conformance: sm_90 (runtime) — **" + want, "## Accuracy: against the declared profile and against exact attention",
		"| decode/mma | 3 | 1 | 0.5 | 0.76 | 0.76 | 2 | 2 | 0 |", "| decode/portable | 1 | 0 | 0.1 | 0.004 | 0.004 | 0 | 0 | 0 |"} {
		if !strings.Contains(r, w) {
			t.Errorf("report.md lacks %q:\n%s", w, r)
		}
	}
}

// TestMissingKernelIsAFailingCase: a required kernel that does not exist is a failing case in the
// summary, the report and junit.xml, not only a line in the certificate (gfx942's MFMA tier).
func TestMissingKernelIsAFailingCase(t *testing.T) {
	c := &Certificate{Arch: "gfx942", Mode: ModeStatic, Missing: []string{"decode: the mfma tier's decode kernel is not built"},
		Cases:    []CaseResult{{Path: "decode/mfma/runtime", Status: harness.NotSupported, Message: "no device"}},
		Evidence: []Evidence{{Op: arch.Decode, Tier: "mfma", How: HowMissing, Where: "decode: the mfma tier's decode kernel is not built"}}}
	c.Finish()
	var row Summary
	for _, s := range c.Summary {
		if s.Node == "decode/mfma" {
			row = s
		}
	}
	if row.Status != harness.Fail || row.Counts["Fail"] != 1 {
		t.Errorf("summary row decode/mfma: %+v, expected Fail with 1 failing case", row)
	}
	x, err := c.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(x), `<testcase name="decode/mfma/missing"`) || !strings.Contains(string(x), `<failure message="required kernel missing: decode: the mfma tier`) {
		t.Errorf("junit.xml does not fail the missing kernel:\n%s", x)
	}
}

// TestModelNeedsInstructionModel: certifying on a model an architecture whose instructions this
// repository does not model (sm_90, the emulator) is refused before anything runs, and the two
// AMD architectures name the model their certificates rest on.
func TestModelNeedsInstructionModel(t *testing.T) {
	for _, name := range []string{"sm_90", "emu"} {
		a, err := arch.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Model(context.Background(), nil, a, "", Options{}, Suite{}); err == nil || !strings.Contains(err.Error(), "has no model of its instructions") {
			t.Errorf("%s on a model: %v, expected a refusal naming the missing model", name, err)
		}
	}
	for name, want := range map[string]string{"gfx1100": "WMMA", "gfx942": "MFMA"} {
		a, err := arch.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if a.Model == nil || a.Model.Instructions != want {
			t.Errorf("%s: instruction model %+v, expected %s", name, a.Model, want)
		}
	}
}
