package oracle

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRoundF16 checks the one-step float64 → fp16 rounding against the float32 path on float32
// inputs (where both are single roundings) and on a value where float32 would double-round: just
// above the midpoint between 1 and 1+2^-10, float32 lands on the midpoint and ties to 1, while
// the correct result is 1+2^-10.
func TestRoundF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for i := 0; i < 100000; i++ {
		x := float32(math.Ldexp(rng.NormFloat64(), rng.IntN(60)-40))
		if got, want := attRoundF16(float64(x)), float64(F16ToF32(F32ToF16(x))); got != want && !(math.IsInf(got, 0) && math.IsInf(want, 0)) {
			t.Fatalf("attRoundF16(%g) = %g, float32 path %g", x, got, want)
		}
	}
	if got := attRoundF16(1 + 0x1p-11 + 0x1p-40); got != 1+0x1p-10 {
		t.Errorf("attRoundF16(1+2^-11+2^-40) = %v, expected 1+2^-10", got)
	}
	if got := attRoundF16(65520); !math.IsInf(got, 1) {
		t.Errorf("attRoundF16(65520) = %v, expected +Inf", got)
	}
	if got := attRoundF16(0x1p-25 * 3); got != 0x1p-24*2 {
		t.Errorf("attRoundF16(3·2^-25) = %v, expected 2^-23 (subnormal tie to even)", got)
	}
}

// TestPrepQueryInt8 checks the int8 query of dot4-int8q on a block whose amax is 127, so s = 1 and
// the codes are round-half-even of the values themselves: 2.5 → 2, −3.5 → −4, 0.5 → 0, 126.6 →
// 127; the exact ties are recorded as ambiguous (another tie rule gives the other neighbour). The
// per-row int8 of int8rowq uses one scale for all 256 dims, with qmax floored at 1e-8.
func TestPrepQueryInt8(t *testing.T) {
	x := make([]float32, 256)
	copy(x, []float32{127, 2.5, -3.5, 0.5, 126.6, 7})
	for i := 64; i < 256; i++ {
		x[i] = 1
	}
	pq := prepQuery(ProfileDot4Int8Q, x)
	want := []float64{127, 2, -4, 0, 127, 7}
	for i, w := range want {
		if pq.q[i] != w {
			t.Errorf("dot4 q̃[%d] = %v, expected %v", i, pq.q[i], w)
		}
	}
	s1 := float64(float32(float32(1) / 127))
	if pq.q[64] != s1*127 {
		t.Errorf("dot4 block 1: q̃ = %v, expected s·127 = %v with s = fl(1/127)", pq.q[64], s1*127)
	}
	amb := map[int]bool{}
	for _, i := range pq.amb {
		amb[i] = true
	}
	for i := 1; i <= 3; i++ {
		if !amb[i] {
			t.Errorf("dim %d (x = %v, an exact tie) not recorded as ambiguous; recorded %v", i, x[i], pq.amb)
		}
	}
	if amb[0] || amb[4] || amb[5] {
		t.Errorf("dims 0, 4, 5 are not ties, recorded %v", pq.amb)
	}
	row := prepQuery(ProfileInt8RowQ, x)
	if row.q[0] != float64(float32(float32(127)/127))*127 || row.q[64] != float64(float32(float32(127)/127))*1 {
		t.Errorf("int8row: q̃ = %v, %v, expected 127 and 1 (one scale 127/127)", row.q[0], row.q[64])
	}
	zero := prepQuery(ProfileInt8RowQ, make([]float32, 256))
	for _, q := range zero.q {
		if q != 0 {
			t.Fatalf("int8row of a zero query: q̃ = %v, expected 0", q)
		}
	}
	h := prepQuery(ProfileWMMAF16Q, []float32{1 + 0x1p-12, 1 + 0x1p-11 + 0x1p-20})
	if h.q[0] != 1 || h.q[1] != 1+0x1p-10 {
		t.Errorf("wmma fp16 query %v, expected [1, 1+2^-10]", h.q)
	}
}

// TestProfileAPI checks names, option validation, Check's semantics and refusals.
func TestProfileAPI(t *testing.T) {
	for _, p := range Profiles {
		if q, err := ParseProfile(string(p)); err != nil || q != p {
			t.Errorf("ParseProfile(%q) = %q, %v", p, q, err)
		}
	}
	if _, err := ParseProfile("dot4"); err == nil || !strings.Contains(err.Error(), "expected one of [dot4-int8q wmma-f16q int8rowq prefill-chunk-f16]") {
		t.Errorf("ParseProfile(dot4): %v", err)
	}
	for name, want := range map[string][2]Profile{
		"prefill-fp32":               {ProfilePrefillFP32, ProfilePrefillFP32},
		"int8rowq+prefill-chunk-f16": {ProfileInt8RowQ, ProfilePrefillChunkF16},
		"int8rowq+chunk-f16":         {ProfileInt8RowQ, ProfilePrefillChunkF16}, // the WMMA tier's declaration (31-character ABI field)
		"wmma-f16q+chunk-f16":        {ProfileWMMAF16Q, ProfilePrefillChunkF16},
	} {
		if a, b, err := ParsePrefillProfile(name); err != nil || a != want[0] || b != want[1] {
			t.Errorf("ParsePrefillProfile(%q) = %q, %q, %v; expected %q", name, a, b, err, want)
		}
	}
	for _, name := range []string{"", "dot4-int8q", "int8rowq+", "int8rowq+chunk", "int8row+fp32", "int8rowq+prefill-prefill-chunk-f16", "+chunk-f16"} {
		if _, _, err := ParsePrefillProfile(name); err == nil || !strings.Contains(err.Error(), "expected prefill-fp32 or PREFIX+CHUNK") {
			t.Errorf("ParsePrefillProfile(%q): %v, expected a refusal", name, err)
		}
	}
	r := &ProfileResult{Model: []float64{0, 1, 2, math.NaN(), 5}, Bound: []float64{0, 0.5, 0.1, math.NaN(), math.Inf(1)}}
	if w, q := r.Check([]float64{0, 1.25, 2, 7, 99}); w != 1 || q != 0.5 {
		t.Errorf("Check: worst %d ratio %v, expected 1 and 0.5", w, q)
	}
	if w, q := r.Check([]float64{-0.0, 1, 2.3, 0, 0}); w != 2 || math.Abs(q-3) > 1e-12 {
		t.Errorf("Check: worst %d ratio %v, expected 2 and 3", w, q)
	}
	if w, q := r.Check([]float64{1e-300, 1, 2, 0, 0}); w != 0 || !math.IsInf(q, 1) {
		t.Errorf("Check: a non-zero padding element gives worst %d ratio %v, expected 0 and +Inf", w, q)
	}
	// Output overflow: ±inf passes only with the model's sign, only where model + bound reaches
	// the dtype's overflow threshold.
	ov := &ProfileResult{Model: []float64{-65510, 65500, 65510, 1}, Bound: []float64{20, 10, 5, 1}, Overflow: DtypeF16.OverflowAt()}
	if w, q := ov.Check([]float64{math.Inf(-1), 65500, 65510, 1}); q != 0 {
		t.Errorf("Check: -inf where model −65510 ± 20 reaches −65520: worst %d ratio %v, expected a pass", w, q)
	}
	for i, got := range [][]float64{{math.Inf(1), 65500, 65504, 1}, {-65504, math.Inf(1), 65504, 1}, {-65504, 65500, math.Inf(1), 1}} {
		if w, q := ov.Check(got); w != i || !math.IsInf(q, 1) {
			t.Errorf("Check %v: worst %d ratio %v, expected element %d to fail (wrong sign, or model+bound below 65520)", got, w, q, i)
		}
	}
	if DtypeF16.Round(65519.99) != 65504 || !math.IsInf(DtypeF16.Round(DtypeF16.OverflowAt()), 1) || !math.IsInf(DtypeBF16.Round(DtypeBF16.OverflowAt()), 1) ||
		DtypeBF16.Round(float64(math.Nextafter32(float32(DtypeBF16.OverflowAt()), 0))) != float64(BF16ToF32(0x7F7F)) {
		t.Errorf("OverflowAt: not the round-to-nearest overflow threshold of fp16/bf16")
	}
	rng := rand.New(rand.NewPCG(33, 34))
	in := attBuild(rng, attSmallShape(MustFormat(K3V4, 256, 64), 1, 2, 16, false)).in
	for _, c := range []struct {
		p    Profile
		opt  ProfileOptions
		mut  func(in *DecodeInput)
		want string
	}{
		{ProfilePrefillChunkF16, ProfileOptions{Out: DtypeF16}, nil, "does not read the packed cache"},
		{ProfileDot4Int8Q, ProfileOptions{}, nil, "output dtype dtype(0): expected DtypeF16, DtypeBF16 or DtypeF32"},
		{ProfileDot4Int8Q, ProfileOptions{Out: DtypeF16, Depth: -1}, nil, "Depth -1"},
		{ProfileDot4Int8Q, ProfileOptions{Out: DtypeF16, Exp2ULP: math.NaN()}, nil, "Exp2ULP NaN"},
		{ProfileDot4Int8Q, ProfileOptions{Out: DtypeF16}, func(in *DecodeInput) { in.SMScale = 1e-40 }, "expected a normal float32 value"},
	} {
		x := *in
		if c.mut != nil {
			c.mut(&x)
		}
		if _, err := DecodeProfile(c.p, &x, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: error %v, expected one containing %q", c.p, c.opt, err, c.want)
		}
	}
}

// TestProfileBoundDetectsDefects: the order-free bounds are tight enough to refuse plausible kernel
// defects that the contract bound (relative L2 < 2e-2 over the batch) lets through: dropping the
// last token of a 700-token row, and using wmma-f16q arithmetic under the dot4-int8q profile.
func TestProfileBoundDetectsDefects(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	in := attBuild(rng, attProfileShape(K3V4, []int{1, 16, 37, 700})).in
	res, err := DecodeProfile(ProfileDot4Int8Q, in, ProfileOptions{Out: DtypeF16})
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := ExactDecode(in)
	short := *in
	short.QToKlen = append([]int32(nil), in.QToKlen...)
	short.QToKlen[3]--
	got, err := DecodeProfileF32(ProfileDot4Int8Q, &short, nil, DtypeF16)
	if err != nil {
		t.Fatal(err)
	}
	rel, ok := ContractCheck(got, exact)
	if _, q := res.Check(got); q <= 1 {
		t.Errorf("a kernel that drops the last token of the 700-token row passes the dot4-int8q bound (max ratio %.3g); contract rel L2 %.3g", q, rel)
	}
	if !ok {
		t.Errorf("dropping one token of 700 moves the batch by %.3g, expected the contract bound not to notice (< %g)", rel, ContractRelL2)
	}
	t.Logf("dropped token: contract rel L2 %.3g (passes), profile bound exceeded", rel)
	other, err := DecodeProfileF32(ProfileWMMAF16Q, in, nil, DtypeF16)
	if err != nil {
		t.Fatal(err)
	}
	rel, ok = ContractCheck(other, exact)
	if _, q := res.Check(other); q <= 1 {
		t.Errorf("wmma-f16q arithmetic passes the dot4-int8q bound (max ratio %.3g)", q)
	}
	if !ok {
		t.Errorf("wmma-f16q arithmetic is %.3g from exact, expected within the contract bound %g", rel, ContractRelL2)
	}
	t.Logf("wrong profile: contract rel L2 %.3g (passes), profile bound exceeded", rel)
}
