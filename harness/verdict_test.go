package harness

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// TestJudgeAttentionRules pins the one rule every judge applies to an attention output: an
// element outside its bound fails (whatever the distance from exact attention); within every
// bound, a distance beyond the contract is a QualityWarning about the profile; otherwise Pass.
// Elements with an infinite bound (no claim) and masked-out rows count neither way.
func TestJudgeAttentionRules(t *testing.T) {
	res := &oracle.ProfileResult{Model: []float64{1, 2, 3, 4}, Bound: []float64{0.01, 0.01, 0.01, math.Inf(1)}}
	exact := []float64{1, 2, 3, 4}
	name := func(i int) string { return fmt.Sprintf("element %d", i) }
	im := Impl{Name: "portable"}
	for _, c := range []struct {
		what    string
		got     []float64
		exact   []float64
		judged  []bool
		status  Status
		message string
	}{
		{"within bound and contract", []float64{1.005, 2, 3, 99}, exact, nil, Pass, ""},
		{"outside one bound, within contract", []float64{1.02, 2, 3, 4}, exact, nil, Fail, "element 0 = 1.02, model 1 ± bound 0.01: |error| 0.02 is 2 × the bound"},
		{"a NaN where a value is due", []float64{1, math.NaN(), 3, 4}, exact, nil, Fail, "element 1 = NaN"},
		{"within bounds, profile misses the contract", []float64{1, 2, 3, 4}, []float64{1.3, 2, 3, 4}, nil, QualityWarning, "the profile's own arithmetic misses the contract"},
		{"an overflow within the bound is no contract miss", []float64{1, 2, 3, math.Inf(1)}, exact, nil, Pass, ""},
		{"the mask limits the contract distance, not the bound check", []float64{1, 2, 7, 4}, exact, []bool{true, true, false, true}, Fail, "element 2"},
	} {
		v := judgeAttention(newVerdict(arch.Decode, im), oracle.ProfileDot4Int8Q, F16, res, c.got, c.exact, c.judged, name, "test")
		if v.Status != c.status {
			t.Errorf("%s: status %v (%v), expected %v", c.what, v.Status, v.Err, c.status)
			continue
		}
		if c.message != "" && (v.Err == nil || !strings.Contains(v.Err.Error(), c.message)) {
			t.Errorf("%s: error %v, expected it to contain %q", c.what, v.Err, c.message)
		}
	}
	// Outputs in fp16's subnormal range, whose spacing (2^-24) exceeds the contract's precision:
	// a tier one spacing off each is within its bounds and no tier's miss.
	small := &oracle.ProfileResult{Model: []float64{1e-6, 2e-6, 3e-6}, Bound: []float64{1e-7, 1e-7, 1e-7}}
	v0 := judgeAttention(newVerdict(arch.Decode, im), oracle.ProfileDot4Int8Q, F16, small, []float64{1.06e-6, 2.06e-6, 3.06e-6}, small.Model, nil, name, "test")
	if v0.Status != QualityWarning || !strings.Contains(v0.Err.Error(), "the bounds' norm is 0.0463 of exact attention's") {
		t.Errorf("within bounds that exceed the contract: %v %v", v0.Status, v0.Err)
	}
	// Within a bound that says nothing (long context, near-uniform weights on zero-mean values: the
	// output cancels far below the bound), a tier writing zeros misses the contract its profile's
	// model meets: a failure, whatever the bound allows (mutant 35 at 131072 tokens).
	loose := &oracle.ProfileResult{Model: []float64{0.003, -0.002, 0.001}, Bound: []float64{0.2, 0.2, 0.2}}
	v1 := judgeAttention(newVerdict(arch.Decode, im), oracle.ProfileWMMAF16Q, BF16, loose, []float64{0, 0, 0}, loose.Model, nil, name, "test")
	if v1.Status != Fail || !strings.Contains(v1.Err.Error(), "too loose to judge this case element by element") {
		t.Errorf("zeros within a vacuous bound: %v %v", v1.Status, v1.Err)
	}
	// The same output one fp16 spacing from the model is no failure: the dtype explains it.
	if room := dtypeRoom(F16, []float64{1e-6, 2e-6, 3e-6}); room < 0.01 || room > 0.05 {
		t.Errorf("dtypeRoom(F16) of subnormal outputs = %g, expected about 2^-25 per value over their norm", room)
	}
	if room := dtypeRoom(F16, []float64{1, 2, 3}); room > 1e-3 {
		t.Errorf("dtypeRoom(F16) of normal outputs = %g, expected about 2^-12", room)
	}
	// The contract distance skips elements with no claim (+Inf bound): 99 at element 3 above.
	v := judgeAttention(newVerdict(arch.Decode, im), oracle.ProfileDot4Int8Q, F16, res, []float64{1, 2, 3, 99}, exact, nil, name, "test")
	if v.RelL2 != 0 || v.Judged != 3 {
		t.Errorf("no-claim element: rel L2 %g over %d judged, expected 0 over 3 (an element with an infinite bound is held to nothing)", v.RelL2, v.Judged)
	}
	// A profile that makes no claim about any element (its own arithmetic overflows) judges
	// nothing: no element counted, no distance measured (not a distance of 0).
	none := &oracle.ProfileResult{Model: []float64{1, 2}, Bound: []float64{math.Inf(1), math.Inf(1)}}
	if v := judgeAttention(newVerdict(arch.Decode, im), oracle.ProfileWMMAF16Q, F16, none, []float64{5, 6}, []float64{1, 2}, nil, name, "test"); v.Status != Pass || v.Judged != 0 || !math.IsNaN(v.RelL2) {
		t.Errorf("no claim at all: %v, judged %d, rel L2 %g; expected Pass over 0 elements with no distance (NaN)", v.Status, v.Judged, v.RelL2)
	}
}

// TestSameBits: identical runs pass; the first differing element is reported with both values,
// as two hex digits for bytes (store) and four for fp16/bf16 bits.
func TestSameBits(t *testing.T) {
	if err := sameBits("reduce", []uint16{1, 2}, []uint16{1, 2}, elemIndex); err != nil {
		t.Errorf("identical runs: %v", err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{sameBits("reduce", []uint16{1, 0x3c00, 5}, []uint16{1, 0x3c01, 6}, elemIndex),
			"nondeterministic reduce (a race?): element 1 is 0x3c00 after one run, 0x3c01 after another"},
		{sameBits("store", []byte{7, 8}, []byte{7, 9}, func(i int) string { return fmt.Sprintf("cache byte %d", i) }),
			"nondeterministic store (a race?): cache byte 1 is 0x08 after one run, 0x09 after another"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("sameBits: %v\nexpected %s", c.err, c.want)
		}
	}
}

// TestImplsWithoutLibrary: with no library the oracle alone is judged, for every op.
func TestImplsWithoutLibrary(t *testing.T) {
	for _, op := range arch.Ops() {
		impls, err := Impls(nil, op)
		if err != nil || len(impls) != 1 || !impls[0].Oracle || impls[0].Name != OracleImpl {
			t.Errorf("%s: Impls(nil) = %+v, %v; expected the oracle alone", op, impls, err)
		}
	}
}

// TestVerdictFailPrefix: a failing verdict's error names the implementation, and FirstFailure
// skips quality warnings.
func TestVerdictFailPrefix(t *testing.T) {
	v := newVerdict(arch.Store, Impl{Name: "portable"}).fail(errors.New("pad byte 3 written"))
	if v.Status != Fail || v.Err.Error() != "portable: pad byte 3 written" {
		t.Errorf("fail: %v %v", v.Status, v.Err)
	}
	w := newVerdict(arch.Decode, Impl{Name: "wmma"})
	w.Status, w.Err = QualityWarning, errors.New("far")
	if err := FirstFailure([]Verdict{w}); err != nil {
		t.Errorf("FirstFailure of a quality warning: %v", err)
	}
	if err := FirstFailure([]Verdict{w, v}); err != v.Err {
		t.Errorf("FirstFailure: %v, expected the store failure", err)
	}
}

// TestDeclaredProfileChecked: a library tier's declared profile must be one the registry allows
// the tier; another one (looser or merely different) is an error, so its verdicts are Fails.
func TestDeclaredProfileChecked(t *testing.T) {
	im := Impl{Name: "portable", Tier: kernels.TierDesc{Name: "portable", DecodeProfile: "wmma-f16q", PrefillProfile: "int8rowq+chunk-f16"}}
	if _, err := declaredProfile(im, arch.Decode); err == nil || !strings.Contains(err.Error(), `declares decode profile "wmma-f16q"`) {
		t.Errorf("portable declaring wmma-f16q for decode: %v", err)
	}
	if _, _, err := declaredPrefillProfiles(im); err == nil || !strings.Contains(err.Error(), `declares prefill profile "int8rowq+chunk-f16"`) {
		t.Errorf("portable declaring the wmma prefill profile: %v", err)
	}
	im.Tier.DecodeProfile, im.Tier.PrefillProfile = "dot4-int8q", "prefill-fp32"
	if p, err := declaredProfile(im, arch.Decode); err != nil || p != oracle.ProfileDot4Int8Q {
		t.Errorf("portable declaring its own profile: %v %v", p, err)
	}
}
