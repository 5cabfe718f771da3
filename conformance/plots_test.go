package conformance

import (
	"fmt"
	"image/png"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/harness"
)

// syntheticCases is a run as a user sees it: decode/portable with ratios log-uniform in
// 1e-3..0.98, a few at 0 (padding-only calls) and one +Inf; decode/wmma with one quality warning
// (1.7) and one padding failure (ratio 0, another check); store and rotate all 0.
func syntheticCases() []CaseResult {
	rng := rand.New(rand.NewSource(1))
	var cs []CaseResult
	logUniform := func(lo, hi float64) float64 {
		return math.Pow(10, math.Log10(lo)+rng.Float64()*(math.Log10(hi)-math.Log10(lo)))
	}
	for i := 0; i < 300; i++ {
		r := CaseResult{Path: fmt.Sprintf("decode/portable/k3v4/bf16/g4/bs16/lbnhc/splits1/q3/seed%d", i), Status: harness.Pass, BoundErr: logUniform(1e-3, 0.98), Judged: 1536}
		if i%50 == 7 {
			r.BoundErr = 0 // every element exact
		}
		if i == 257 {
			r.BoundErr, r.Judged = 0, 0 // an empty call: nothing compared
		}
		if i == 123 {
			r.Status, r.BoundErr = harness.Fail, math.Inf(1)
		}
		cs = append(cs, r)
	}
	for i := 0; i < 120; i++ {
		r := CaseResult{Path: fmt.Sprintf("decode/wmma/k3v4/f16/g4/bs16/lbnhc/splits1/q3/seed%d", i), Status: harness.Pass, BoundErr: logUniform(2e-2, 0.9), Judged: 1536}
		switch i {
		case 5:
			r.Status, r.BoundErr = harness.QualityWarning, 1.7
		case 6:
			r.Status, r.BoundErr = harness.Fail, 0
		case 7:
			r.BoundErr = 1 // at the bound: passes
		}
		cs = append(cs, r)
	}
	for i := 0; i < 250; i++ {
		cs = append(cs, CaseResult{Path: fmt.Sprintf("store/portable/k3v4/bf16/hkv2/bs16/lbnhc/n5/seed%d", i), Status: harness.Pass})
		cs = append(cs, CaseResult{Path: fmt.Sprintf("rotate/portable/bf16/block64/forward/rows3/seed%d", i), Status: harness.Pass})
	}
	cs = append(cs, CaseResult{Path: "rotate/portable/bf16/block64/forward/rows3/seed999", Status: harness.Fail, Message: "rotate wrote element 3 in a gap"})
	cs = append(cs, CaseResult{Path: "reduce/portable/bf16/splits3/q2/h4/seed0", Status: harness.NotSupported})
	return cs
}

func syntheticReport(t *testing.T, dir string) string {
	t.Helper()
	c := &Certificate{Schema: SchemaVersion, Mode: "runtime", Arch: "sm_90", Cases: syntheticCases()}
	c.Finish()
	if err := c.Write(dir); err != nil {
		t.Fatal(err)
	}
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(rep)
}

func TestExactOpsHaveNoHistogram(t *testing.T) {
	dir := t.TempDir()
	rep := syntheticReport(t, dir)
	for _, want := range []string{
		"- store/portable: exact (no error bound), 250 of 250 cases accepted: every stored slot identical to the oracle's quantization, or different only by a tie docs/format.md §10 allows.\n",
		"- rotate/portable: bit-exact, 250 of 251 cases identical to the oracle, bit for bit; 1 failed (listed under Failures).\n",
	} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, name := range []string{"errors-store-portable.png", "errors-rotate-portable.png", "errors-reduce-portable.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s written: exact and not-run ops get no histogram", name)
		}
		if strings.Contains(rep, name) {
			t.Errorf("report links %s", name)
		}
	}
}

func TestBoundedOpPlotAndCaption(t *testing.T) {
	dir := t.TempDir()
	rep := syntheticReport(t, dir)
	for _, name := range []string{"errors-decode-portable.png", "errors-decode-wmma.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
			t.Errorf("%s: %v, too small to read", name, b)
		}
		if !strings.Contains(rep, "]("+name+")") {
			t.Errorf("report does not link %s", name)
		}
	}
	// Count what the caption must say from the cases themselves.
	var pos []float64
	zero, nothing, inf := 0, 0, 0
	for _, r := range syntheticCases() {
		if !strings.HasPrefix(r.Path, "decode/portable/") {
			continue
		}
		switch {
		case math.IsInf(r.BoundErr, 1):
			inf++
		case r.BoundErr == 0 && r.Judged == 0:
			nothing++
		case r.BoundErr == 0:
			zero++
		default:
			pos = append(pos, r.BoundErr)
		}
	}
	u := ratioUnits(syntheticCases())[0]
	if u.Key != "decode/portable" {
		t.Fatalf("first unit %s", u.Key)
	}
	mx := 0.0
	for _, x := range pos {
		mx = max(mx, x)
	}
	want := fmt.Sprintf("**decode/portable**: 299 cases plotted; over the %d with a finite ratio > 0: median %.3g, max %.3g. %d at exactly 0 (every compared element exact); %d compared no element (not plotted). 1 outside the bound: 0 with a finite ratio > 1, 1 with a ratio of +Inf or NaN.\n",
		len(pos), u.Median(), mx, zero, nothing)
	if !strings.Contains(rep, want) {
		t.Errorf("decode/portable caption: want\n%s", want)
	}
	if zero != 5 || nothing != 1 || inf != 1 || len(pos) != 293 {
		t.Fatalf("synthetic cases changed: %d zero, %d compared nothing, %d inf, %d positive", zero, nothing, inf, len(pos))
	}
	// The median is the middle one of the positive ratios.
	below := 0
	for _, x := range pos {
		if x < u.Median() {
			below++
		}
	}
	if below != len(pos)/2 {
		t.Errorf("median %g has %d of %d ratios below it", u.Median(), below, len(pos))
	}
	want = "**decode/wmma**: 119 cases plotted; over the 119 with a finite ratio > 0: median "
	if !strings.Contains(rep, want) || !strings.Contains(rep, "max 1.7. 0 at exactly 0 (every compared element exact). 1 outside the bound: 1 with a finite ratio > 1, 0 with a ratio of +Inf or NaN. 1 failed another check") {
		t.Errorf("decode/wmma caption wrong:\n%s", rep[strings.Index(rep, "**decode/wmma**"):])
	}
}

// TestRatiosCounted: every case run is in exactly one count; none is dropped for being 0, +Inf or
// NaN, or for failing.
func TestRatiosCounted(t *testing.T) {
	cs := []CaseResult{
		{Path: "prefill/portable/a/seed0", Status: harness.Pass, BoundErr: 0, Judged: 512},
		{Path: "prefill/portable/a/seed8", Status: harness.Pass, BoundErr: 0}, // compared nothing
		{Path: "prefill/portable/a/seed1", Status: harness.Pass, BoundErr: 0.5},
		{Path: "prefill/portable/a/seed2", Status: harness.Pass, BoundErr: 1},
		{Path: "prefill/portable/a/seed3", Status: harness.QualityWarning, BoundErr: 3},
		{Path: "prefill/portable/a/seed4", Status: harness.Fail, BoundErr: math.Inf(1)},
		{Path: "prefill/portable/a/seed5", Status: harness.Fail, BoundErr: math.NaN()},
		{Path: "prefill/portable/a/seed6", Status: harness.Fail, BoundErr: 0}, // padding: another check
		{Path: "prefill/portable/a/seed7", Status: harness.NotSupported},
		{Path: "prefill/mfma/missing", Status: harness.Fail},
		{Path: "isa/x/y", Status: harness.Pass},
		{Path: "rotate/portable/a/seed0", Status: harness.Fail, BoundErr: math.Inf(1)},
	}
	us := ratioUnits(cs)
	if len(us) != 3 {
		t.Fatalf("%d units, expected prefill/mfma, prefill/portable, rotate/portable", len(us))
	}
	m, p, r := us[0], us[1], us[2]
	if m.Key != "prefill/mfma" || m.Other != 1 || m.Plotted() != 0 {
		t.Errorf("missing tier: %+v", m)
	}
	if p.Run != 8 || p.Zero != 1 || p.Nothing != 1 || p.Within != 2 || p.Over != 1 || p.NonFin != 2 || p.Other != 1 || p.Plotted() != 6 {
		t.Errorf("prefill/portable: %+v", p)
	}
	if p.Median() != 1 || p.Max() != 3 {
		t.Errorf("median %g max %g of 0.5, 1, 3", p.Median(), p.Max())
	}
	if r.Exact != true || r.Passed != 0 || r.NonFin != 1 {
		t.Errorf("rotate with a non-finite ratio: %+v", r)
	}
	c := &Certificate{Arch: "emu", Cases: cs}
	dir := t.TempDir()
	sec, err := c.plotSection(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- prefill/mfma: no case with a ratio; 1 failed another check",
		"3 outside the bound: 1 with a finite ratio > 1, 2 with a ratio of +Inf or NaN. 1 failed another check",
		"1 at exactly 0 (every compared element exact); 1 compared no element (not plotted)",
		"- rotate/portable: bit-exact, 0 of 1 cases identical to the oracle, bit for bit; 1 failed",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %q:\n%s", want, sec)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "errors-prefill-portable.png")); err != nil {
		t.Error(err)
	}
	if s, _ := (&Certificate{Cases: []CaseResult{{Path: "isa/a/b", Status: harness.Pass}}}).plotSection(dir); s != "" {
		t.Errorf("static certificate: %q, expected no section", s)
	}
}

// TestLogRange: the axis always spans 0.001 … past 1, at most 1e-8 … 1e4; ratios beyond share the
// end bars (counted, not dropped), and a store with a non-zero ratio is plotted, not called exact.
func TestLogRange(t *testing.T) {
	for _, c := range []struct {
		xs     []float64
		lo, hi float64
	}{
		{[]float64{0.2, 0.5}, -3, 0.75},
		{[]float64{3e-5, 0.98}, -5, 0.75},
		{[]float64{1e-12, 1.5}, -8, 0.25 * math.Ceil(4*math.Log10(1.5))},
		{[]float64{1e-12, 1e9}, -8, 4},
	} {
		if lo, hi := logRange(c.xs); lo != c.lo || hi != max(c.hi, 0.75) {
			t.Errorf("logRange(%v) = %g, %g; expected %g, %g", c.xs, lo, hi, c.lo, max(c.hi, 0.75))
		}
	}
	cs := []CaseResult{
		{Path: "store/portable/a/seed0", Status: harness.Pass, BoundErr: 1e-12},
		{Path: "store/portable/a/seed1", Status: harness.Fail, BoundErr: 1e9},
		{Path: "store/portable/a/seed2", Status: harness.Pass, Judged: 4},
	}
	us := ratioUnits(cs)
	if us[0].Exact || us[0].Plotted() != 3 || us[0].Over != 1 {
		t.Fatalf("store with non-zero ratios: %+v", us[0])
	}
	dir := t.TempDir()
	sec, err := (&Certificate{Arch: "emu", Cases: cs}).plotSection(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sec, "errors-store-portable.png") || !strings.Contains(sec, "max 1e+09") {
		t.Errorf("store with non-zero ratios not plotted:\n%s", sec)
	}
}
