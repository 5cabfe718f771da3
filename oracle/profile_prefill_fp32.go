package oracle

import (
	"fmt"
	"math"
)

// ProfilePrefillFP32 (Octant's portable prefill tier, a profile beyond docs/contract.md §5's four): q, k
// and v (already rotated) are converted exactly to float32; the cached prefix is dequantized exactly
// (codebook × fp16 scale / 64) in the rotated space; each score is a float32 dot product over the
// head's dims (fused multiply-adds or any other order: the bound counts one rounding per term)
// times fl32(sm_scale·log2 e); one online softmax in base 2 covers prefix and chunk; P·V in float32;
// out = O/L rounded to the output dtype, still rotated. It names both phases of a prefill tier:
// PrefillProfile(ProfilePrefillFP32, ProfilePrefillFP32, in, opt). Its model is exact prefill
// attention (ExactPrefill): the profile quantizes nothing beyond its inputs.
const ProfilePrefillFP32 Profile = "prefill-fp32"

// prefillFP32ScoreRoundings is K of the score bound (profile_bounds.go step 1) for prefill-fp32: d
// roundings of the fp32 dot (one per fused multiply-add, or a product and an addition counted as
// one term each in any summation tree: d − 1 additions plus one product rounding), one for the
// multiplication by c̃, and attScaleRoundings for c̃ = fl(fl(sm_scale)·fl(log2 e)) itself. The
// dequantized prefix K (codebook × scale/64) and the fp16/bf16 inputs are exact in float32.
func prefillFP32ScoreRoundings(d int) int { return d + 1 + attScaleRoundings }

// prefillFP32Profile is PrefillProfile for ProfilePrefillFP32: the shared bound machinery of
// profile_bounds.go (profRows) with exact scores, no P' rounding (κ = 0), no rotation of the output,
// and no conversion of the running max between natural-log and log2 units.
func prefillFP32Profile(prefix, chunk Profile, in *PrefillInput, opt ProfileOptions) (*ProfileResult, error) {
	if prefix != ProfilePrefillFP32 || chunk != ProfilePrefillFP32 {
		return nil, fmt.Errorf("prefill profile: %s names both phases: expected prefix and chunk profile %s, got %q and %q",
			ProfilePrefillFP32, ProfilePrefillFP32, prefix, chunk)
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := attCheckF32Scale(in.SMScale); err != nil {
		return nil, fmt.Errorf("prefill profile: %w", err)
	}
	prec, err := fp32Prec(opt, 0)
	if err != nil {
		return nil, fmt.Errorf("prefill profile: %w", err)
	}
	c := in.Cache
	d, hkv := c.F.HeadSize, c.NumKVHeads
	G := in.NumQHeads / hkv
	res := newProfileResult(in.NumTokens*in.NumQHeads*d, math.NaN(), opt)
	cs := in.SMScale * math.Log2E
	gam := attGamma(prefillFP32ScoreRoundings(d), 0x1p-24)
	dec := newSlotDecoder64(c.F)
	q := make([][]float64, G)
	for k := range q {
		q[k] = make([]float64, d)
	}
	var slots [][]byte
	for s := 0; s < in.NumSeqs(); s++ {
		lo, hi := int(in.CuSeqlensQ[s]), int(in.CuSeqlensQ[s+1])
		for h := 0; h < hkv; h++ {
			slots = in.prefixSlots(s, h, slots[:0])
			np := len(slots)
			pk, pv := make([]float64, np*d), make([]float64, np*d)
			for t, sl := range slots {
				dec.load(sl)
				copy(pk[t*d:], dec.k)
				copy(pv[t*d:], dec.v)
			}
			// The chunk's V as float64, once: r.value is called from several goroutines at once for
			// a long row (sweepTokens), so it returns read-only slices.
			cv := make([]float64, (hi-lo)*d)
			for u := lo; u < hi; u++ {
				for j, x := range in.V[(u*hkv+h)*d:][:d] {
					cv[(u-lo)*d+j] = float64(x)
				}
			}
			kv := make([]float64, d)
			for i := lo; i < hi; i++ {
				n := np + (i - lo + 1)
				r := &profRows{d: d, n: n, s: make([][]float64, G), ds: make([][]float64, G), kappa: make([]float64, n), prec: prec, depth: opt.Depth}
				for k := 0; k < G; k++ {
					for j, x := range in.Q[(i*in.NumQHeads+h*G+k)*d:][:d] {
						q[k][j] = float64(x)
					}
					r.s[k], r.ds[k] = make([]float64, n), make([]float64, n)
				}
				// ovf: an fp32 intermediate of this head may overflow (a product q·k, the score, or
				// below the accumulator Σ p·v with p ≤ 1): the profile then makes no claim there.
				ovf := make([]bool, G)
				score := func(t int, key []float64) {
					for k := 0; k < G; k++ {
						var sum, abs float64
						for j, x := range q[k] {
							p := x * key[j]
							sum += p
							abs += math.Abs(p)
						}
						r.s[k][t] = cs * sum
						r.ds[k][t] = gam*cs*abs + float64(d+16)*0x1p-126 // flushes to zero: one per term
						if abs > fp32Half || cs*abs > fp32Half {
							ovf[k] = true
						}
					}
				}
				for t := 0; t < np; t++ {
					score(t, pk[t*d:(t+1)*d])
				}
				for u := lo; u <= i; u++ {
					for j, x := range in.K[(u*hkv+h)*d:][:d] {
						kv[j] = float64(x)
					}
					score(np+u-lo, kv)
				}
				r.value = func(t int) []float64 {
					if t < np {
						return pv[t*d : (t+1)*d]
					}
					return cv[(t-np)*d : (t-np+1)*d]
				}
				model, bound := make([][]float64, G), make([][]float64, G)
				for k := 0; k < G; k++ {
					o := (i*in.NumQHeads + h*G + k) * d
					model[k], bound[k] = res.Model[o:o+d], res.Bound[o:o+d]
				}
				r.eval(model, bound)
				vsum := make([]float64, d)
				for t := 0; t < n; t++ {
					for j, x := range r.value(t) {
						vsum[j] += math.Abs(x)
					}
				}
				for k := 0; k < G; k++ {
					for j := range bound[k] {
						if ovf[k] || vsum[j] > fp32Half {
							bound[k][j] = math.Inf(1)
						}
					}
				}
			}
		}
	}
	return res, nil
}

// fp32Half is half the largest float32: an fp32 sum of terms whose magnitudes add up to more may
// overflow to ±inf.
const fp32Half = math.MaxFloat32 / 2

// fp32Near is 2^-24 of the largest float32: magnitudes above it are "near overflow" for products
// whose other factor the bound does not track (an integer dot of up to 2^20, a block count).
const fp32Near = math.MaxFloat32 * 0x1p-24
