package oracle

import (
	"fmt"
	"math"
	"strings"
)

// Profile names a numeric profile of docs/contract.md §5: the documented way a tier approximates exact
// attention. The oracle models each profile in float64 on the profile's own quantized inputs
// ([DecodeProfile], [PrefillProfile]) and derives, per output element, the error that the fp32
// arithmetic of a correct kernel implementing the profile may add (profile_bounds.go,
// docs/bounds.md).
type Profile string

// The four profiles of docs/contract.md §5.
const (
	// ProfileDot4Int8Q (portable decode): the query is rotated in float32 (FWHT32) and quantized to
	// int8 per 64-dim block, s = max(amax, 1e-20)/127, q = round-half-even(x/s) clamped to ±127;
	// QK is an int8 dot against the codebook bytes, score = Σ_b s_b·ks_b·dot_b·(sm_scale·log2 e)/64;
	// P·V in fp32 with v = codebook·V scale/64; online softmax in base 2.
	ProfileDot4Int8Q Profile = "dot4-int8q"
	// ProfileWMMAF16Q (RDNA3 WMMA decode): the float32-rotated query rounded to fp16; QK an f16 dot
	// against the codebook bytes with fp32 accumulation, times K block scale/64; P·V with
	// P' = fp16(p·V scale·256) against the codebook bytes, fp32 accumulation.
	ProfileWMMAF16Q Profile = "wmma-f16q"
	// ProfileInt8RowQ (the prefill's cached prefix on RDNA3's WMMA and sm_90's mma, and the mma
	// decode; the upstream reference calls it "prefill-int8row"): the rotated fp16 query
	// quantized to int8 with one scale per row, qmax = max(1e-8, max|x|), q = round(x·127/qmax);
	// int8 dot per 64-dim block × K block scale; P' = fp16(p·V scale·64) against the codebook bytes.
	ProfileInt8RowQ Profile = "int8rowq"
	// ProfilePrefillChunkF16 (RDNA3 prefill phase 2, the chunk's own tokens): fp16 q, k, v; scores
	// accumulated in fp32; P rounded to fp16 and multiplied by the exact fp16 V, fp32 accumulation.
	ProfilePrefillChunkF16 Profile = "prefill-chunk-f16"
)

// Profiles lists the profiles in docs/contract.md §5 order.
var Profiles = []Profile{ProfileDot4Int8Q, ProfileWMMAF16Q, ProfileInt8RowQ, ProfilePrefillChunkF16}

// ParseProfile returns the profile with the given name.
func ParseProfile(name string) (Profile, error) {
	for _, p := range Profiles {
		if string(p) == name {
			return p, nil
		}
	}
	return "", fmt.Errorf("oracle: unknown numeric profile %q: expected one of %v", name, Profiles)
}

// ParsePrefillProfile maps a prefill tier's declared profile (TierDesc.PrefillProfile) to the
// (prefix, chunk) pair that [PrefillProfile] models: "prefill-fp32" ([ProfilePrefillFP32] for both
// parts), or "PREFIX+CHUNK", two profiles of docs/contract.md §5 ("int8rowq+prefill-chunk-f16").
// Either part may leave out the "prefill-" of a §5 name ("int8rowq+chunk-f16"): the C ABI's
// octave_tier_desc.prefill_profile holds 31 characters, and the full pair has 33.
func ParsePrefillProfile(name string) (prefix, chunk Profile, err error) {
	if name == string(ProfilePrefillFP32) {
		return ProfilePrefillFP32, ProfilePrefillFP32, nil
	}
	part := func(s string) (Profile, error) {
		p, err := ParseProfile(s)
		if err != nil && s != "" && !strings.HasPrefix(s, "prefill-") {
			if q, e := ParseProfile("prefill-" + s); e == nil {
				return q, nil
			}
		}
		return p, err
	}
	if a, b, ok := strings.Cut(name, "+"); ok {
		pa, ea := part(a)
		pb, eb := part(b)
		if ea == nil && eb == nil {
			return pa, pb, nil
		}
	}
	return "", "", fmt.Errorf("oracle: prefill profile %q: expected %s or PREFIX+CHUNK of docs/contract.md §5 profiles %v (\"prefill-\" may be left out of either part)", name, ProfilePrefillFP32, Profiles)
}

// ReadsCache reports whether the profile describes attention to packed cache tokens (dot4-int8q,
// wmma-f16q, int8rowq); prefill-chunk-f16 describes a prefill chunk's own fp16 tokens.
func (p Profile) ReadsCache() bool {
	return p == ProfileDot4Int8Q || p == ProfileWMMAF16Q || p == ProfileInt8RowQ
}

// Dtype is an activation or output dtype.
type Dtype int

// Output dtypes of a kernel (the final rounding a bound includes).
const (
	DtypeUnset Dtype = iota
	DtypeF16         // IEEE binary16
	DtypeBF16        // bfloat16
	DtypeF32         // float32 (no rounding beyond fp32)
)

func (t Dtype) String() string {
	switch t {
	case DtypeF16:
		return "float16"
	case DtypeBF16:
		return "bfloat16"
	case DtypeF32:
		return "float32"
	}
	return fmt.Sprintf("dtype(%d)", int(t))
}

// rounding returns the unit roundoff and the absolute rounding error below the normal range
// (half the smallest subnormal) of a dtype.
func (t Dtype) rounding() (u, abs float64, err error) {
	switch t {
	case DtypeF16:
		return 0x1p-11, 0x1p-25, nil
	case DtypeBF16:
		return 0x1p-8, 0x1p-134, nil
	case DtypeF32:
		return 0x1p-24, 0x1p-150, nil
	}
	return 0, 0, fmt.Errorf("output dtype %v: expected DtypeF16, DtypeBF16 or DtypeF32", t)
}

// Rounding is the dtype's rounding as the bounds model it: rounding x to the dtype changes it by
// at most u·|x| + abs (u the unit roundoff, abs half the smallest subnormal).
func (t Dtype) Rounding() (u, abs float64, err error) { return t.rounding() }

// OverflowAt is the smallest magnitude that rounds to ±inf in the dtype (round to nearest even:
// halfway between the largest finite value and the next power of two).
func (t Dtype) OverflowAt() float64 {
	switch t {
	case DtypeF16:
		return 65520 // (2 − 2⁻¹¹)·2¹⁵
	case DtypeBF16:
		return 0x1.ffp127 // (2 − 2⁻⁸)·2¹²⁷
	case DtypeF32:
		return 0x1.ffffffp127 // (2 − 2⁻²⁴)·2¹²⁷
	}
	return math.Inf(1)
}

// Round rounds x to the dtype (to nearest even), returning the result as float64.
func (t Dtype) Round(x float64) float64 {
	switch t {
	case DtypeF16:
		return attRoundF16(x)
	case DtypeBF16:
		return float64(BF16ToF32(F32ToBF16(float32(x))))
	}
	return float64(float32(x))
}

// DefaultExp2ULP is the accuracy assumed for one fp32 exp2 (or exp) evaluation, in ulps: CUDA's
// exp2f and expf are documented to within 2 ulps, AMD's v_exp_f32 to 1 ulp.
const DefaultExp2ULP = 2

// ProfileOptions are the kernel facts a bound depends on.
type ProfileOptions struct {
	Out     Dtype   // the kernel's output dtype (the query's dtype for decode, fp16 for prefill)
	Exp2ULP float64 // accuracy of the kernel's exp2/exp in ulps; 0 means DefaultExp2ULP
	// Depth, when positive, is the kernel's declared accumulation depth: no term of its P·V and
	// softmax-denominator sums passes through more than Depth fp32 additions and rescale
	// multiplications (a kernel with S splits, T lanes per split and a sequential loop of k tokens
	// per lane, merged by butterflies and a sequential split merge, has Depth ≤ 2k + 2·log2 T + S).
	// It tightens the accumulation term of the bound. 0 means the order-free worst case.
	Depth int
}

func (o ProfileOptions) check() error {
	if o.Exp2ULP < 0 || math.IsNaN(o.Exp2ULP) || math.IsInf(o.Exp2ULP, 0) {
		return fmt.Errorf("Exp2ULP %v: expected a finite value ≥ 0 (0 for the default %d)", o.Exp2ULP, DefaultExp2ULP)
	}
	if o.Depth < 0 {
		return fmt.Errorf("Depth %d: expected ≥ 0 (0 for the order-free bound)", o.Depth)
	}
	_, _, err := o.Out.rounding()
	return err
}

// ProfileResult is a profile's float64 model of a kernel output and the per-element bound a
// correct fp32 kernel of that profile meets: |kernel[j] − Model[j]| ≤ Bound[j], the kernel's value
// taken after its final rounding to the output dtype. Elements of padding rows have Model 0 and
// Bound 0 (the kernel must write exact zeros). Where the profile's own arithmetic overflows (an
// fp16 intermediate reaches ±inf) or the cache holds non-finite scales, Bound is +Inf.
type ProfileResult struct {
	Model []float64
	Bound []float64
	// Overflow is the output dtype's OverflowAt (0: none given). An element whose model lies
	// within its bound of it may round to ±inf: a kernel's ±inf with the model's sign passes there.
	Overflow float64
}

// newProfileResult is a result of n elements whose Model and Bound all start at fill: 0 for
// decode (a row no output is computed for is a padding row, which must be exactly 0), NaN for
// prefill (rows of no sequence: no claim, Check skips them).
func newProfileResult(n int, fill float64, opt ProfileOptions) *ProfileResult {
	res := &ProfileResult{Model: make([]float64, n), Bound: make([]float64, n), Overflow: opt.Out.OverflowAt()}
	if fill != 0 {
		for i := range res.Model {
			res.Model[i], res.Bound[i] = fill, fill
		}
	}
	return res
}

// Check compares got (the kernel's output as float64) with the model and returns the index of the
// element that exceeds its bound by the largest factor, and that factor |got−Model|/Bound (≤ 1
// passes). An element with a zero bound must match exactly (+Inf otherwise), a NaN error counts as
// +Inf, and elements the result makes no claim about are skipped: Bound +Inf (overflow or
// non-finite cache), or Model and Bound NaN (prefill rows of no sequence). worst is −1 when
// len(got) does not match.
func (r *ProfileResult) Check(got []float64) (worst int, ratio float64) {
	if len(got) != len(r.Model) {
		return -1, math.Inf(1)
	}
	worst = 0
	for j, g := range got {
		b := r.Bound[j]
		if math.IsInf(b, 1) || (math.IsNaN(b) && math.IsNaN(r.Model[j])) {
			continue
		}
		if math.IsInf(g, 0) && r.Overflow > 0 && math.Abs(r.Model[j])+b >= r.Overflow && (g > 0) == (r.Model[j] > 0) {
			continue // rounding to the output dtype may overflow here
		}
		e := math.Abs(g - r.Model[j])
		var q float64
		switch {
		case e == 0:
			q = 0
		case b == 0 || math.IsNaN(e):
			q = math.Inf(1)
		default:
			q = e / b
		}
		if q > ratio {
			worst, ratio = j, q
		}
	}
	return worst, ratio
}

// attRoundF16 rounds a float64 to the nearest fp16 value (ties to even) in one step, with overflow
// to ±inf and gradual underflow.
func attRoundF16(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	a := math.Abs(x)
	if a >= 65520 {
		return math.Copysign(math.Inf(1), x)
	}
	_, e := math.Frexp(a) // a = f·2^e, f ∈ [0.5, 1)
	exp := e - 1          // a ∈ [2^exp, 2^(exp+1))
	if exp < -14 {
		exp = -14 // subnormal spacing 2^-24
	}
	sp := math.Ldexp(1, exp-10)
	return math.Copysign(math.RoundToEven(a/sp)*sp, x)
}

// profQuery is one query head as a cache profile sees it: an effective rotated query q̃ (float64,
// exact) whose products with the codebook values give the profile's score, plus what the score
// error bound needs.
type profQuery struct {
	q      []float64 // q̃_i
	intDot bool      // the kernel's dot is an exact integer dot (int8 profiles)
	// amb lists the dims whose int8 code is ambiguous (x·127/amax within 4 units of fp32 roundoff
	// of a half-integer, or exactly on one): another correct evaluation order (x/s, x·(1/s),
	// x·127/amax: each within 3 roundings of the real quotient) or tie rule may give the
	// neighbouring integer. ambStep is |Δq̃| for such a change (the block's query scale).
	amb     []int
	ambStep []float64
}

// prepQuery builds the profile's effective query from the float32 rotated query xr (bit-exact
// FWHT32 output for decode, the given fp16 values for prefill).
func prepQuery(p Profile, xr []float32) profQuery {
	d := len(xr)
	pq := profQuery{q: make([]float64, d)}
	switch p {
	case ProfileWMMAF16Q:
		for i, x := range xr {
			pq.q[i] = float64(F16ToF32(F32ToF16(x)))
		}
	case ProfileDot4Int8Q:
		pq.intDot = true
		for b := 0; b < d; b += 64 {
			var amax float32
			for _, x := range xr[b : b+64] {
				amax = max(amax, float32(math.Abs(float64(x))))
			}
			s := float32(max(amax, float32(1e-20)) / 127)
			for i := b; i < b+64; i++ {
				pq.q[i] = float64(s) * attQuantInt8(float32(xr[i]/s))
				pq.noteAmbiguous(i, float64(xr[i])*127/float64(max(amax, float32(1e-20))), float64(s))
			}
		}
	case ProfileInt8RowQ:
		pq.intDot = true
		qmax := float32(1e-8)
		for _, x := range xr {
			qmax = max(qmax, float32(math.Abs(float64(x))))
		}
		s := float32(qmax / 127)
		for i, x := range xr {
			pq.q[i] = float64(s) * attQuantInt8(float32(float32(x*127)/qmax))
			pq.noteAmbiguous(i, float64(x)*127/float64(qmax), float64(s))
		}
	default:
		panic(fmt.Sprintf("oracle: profile %q does not read the cache", p))
	}
	return pq
}

// attQuantInt8 is round-half-even, clamped to ±127.
func attQuantInt8(y float32) float64 {
	return math.Max(-127, math.Min(127, math.RoundToEven(float64(y))))
}

// noteAmbiguous records dim i when its real quantization argument r is within 4u (u = 2^-24,
// so 2^-22 relative) of a half-integer that rounding can cross. For |r| ≥ 127 every evaluation
// order and tie rule ends at ±127 (127.5 rounds to 128 and is clamped), so nothing is ambiguous.
func (pq *profQuery) noteAmbiguous(i int, r, step float64) {
	a := math.Abs(r)
	if a >= 127 {
		return
	}
	h := math.Floor(a) + 0.5
	if math.Abs(a-h) <= 0x1p-22*a {
		pq.amb = append(pq.amb, i)
		pq.ambStep = append(pq.ambStep, step)
	}
}

// Rounding counts of the score computations (profile_bounds.go derives them): an fp32 score is
// within γ_K of the profile's exact score, relative to the sum of absolute terms.
const (
	// attScaleRoundings is the rounding count of c̃ = fl(fl(sm_scale)·fl(log2 e)).
	attScaleRoundings = 3
)

// profScoreRoundings returns K for a cache profile's score over nb 64-dim blocks, with dotLen
// terms accumulated in fp32 per scaled dot (64 per block, or the whole head for compact K, whose
// one scale lets a kernel accumulate all dims before scaling).
func profScoreRoundings(p Profile, nb, dotLen int) int {
	if p == ProfileWMMAF16Q {
		// (dotLen−1) additions in the dot, ·ks and ·c̃ (2), c̃ itself (3), (nb−1) block additions when
		// per-block; a whole-head dot has no block additions but a longer sum: take the larger.
		per := 64 - 1 + 2 + attScaleRoundings + (nb - 1)
		whole := dotLen - 1 + 2 + attScaleRoundings
		return max(per, whole)
	}
	// int8: exact integer dots; qs·ks, ·dot, ·c̃ (3), c̃ (3), the query scale's own evaluation order
	// (1), and (nb−1) block additions.
	return 3 + attScaleRoundings + 1 + (nb - 1)
}

// profChunkRoundings is K for prefill-chunk-f16: exact fp16 products, (d−1) fp32 additions, ·c̃ (1)
// and c̃ (3).
func profChunkRoundings(d int) int { return d - 1 + 1 + attScaleRoundings }

// attGamma is γ_n = n·u/(1−n·u) (Higham, Accuracy and Stability of Numerical Algorithms, §3.1):
// the relative error bound of n successive roundings with unit roundoff u.
func attGamma(n int, u float64) float64 {
	nu := float64(n) * u
	if nu >= 1 {
		return math.Inf(1)
	}
	return nu / (1 - nu)
}
