package oracle

import (
	"fmt"
	"math"
)

// PrefillProfile models a prefill tier whose prefix phase has profile prefix (a cache profile,
// int8rowq upstream) and whose chunk phase has profile chunk (prefill-chunk-f16): Model is
// the float64 value of what those profiles compute (rotated output, before rounding to
// opt.Out), Bound the per-element error a correct fp32 kernel may add, including the final
// rounding (profile_bounds.go, docs/bounds.md; the bound allows one conversion of the running max
// between natural-log and log2 units per phase). Rows that belong to no sequence are NaN in Model
// and Bound. ProfilePrefillFP32 names both phases of a tier: pass it as prefix and chunk.
func PrefillProfile(prefix, chunk Profile, in *PrefillInput, opt ProfileOptions) (*ProfileResult, error) {
	if prefix == ProfilePrefillFP32 || chunk == ProfilePrefillFP32 {
		return prefillFP32Profile(prefix, chunk, in, opt) // profile_prefill_fp32.go
	}
	if err := checkPrefillProfiles(prefix, chunk, in); err != nil {
		return nil, err
	}
	prec, err := fp32Prec(opt, 2)
	if err != nil {
		return nil, fmt.Errorf("prefill profile: %w", err)
	}
	c := in.Cache
	d, hkv := c.F.HeadSize, c.NumKVHeads
	G := in.NumQHeads / hkv
	res := newProfileResult(in.NumTokens*in.NumQHeads*d, math.NaN(), opt)
	sc := newProfScorer(prefix, c.F, in.SMScale)
	kChunk := attGamma(profChunkRoundings(d), 0x1p-24)
	cs := in.SMScale * math.Log2E
	var slots [][]byte
	qs := make([]profQuery, G)
	for s := 0; s < in.NumSeqs(); s++ {
		lo, hi := int(in.CuSeqlensQ[s]), int(in.CuSeqlensQ[s+1])
		for h := 0; h < hkv; h++ {
			slots = in.prefixSlots(s, h, slots[:0])
			np := len(slots)
			ps := newProfSlots(c.F, slots, nil)
			chunkV := make([]float64, (hi-lo)*d)
			for u := lo; u < hi; u++ {
				for j, x := range in.V[(u*hkv+h)*d:][:d] {
					chunkV[(u-lo)*d+j] = float64(x)
				}
			}
			for i := lo; i < hi; i++ {
				n := np + (i - lo + 1)
				r := newProfRows(d, n, G, prec)
				r.depth = opt.Depth
				for t := 0; t < np; t++ {
					r.kappa[t] = sc.kappaOf(ps.vs[t])
				}
				for t := np; t < n; t++ {
					r.kappa[t] = 1 // P rounded to fp16 against exact fp16 V
				}
				for k := 0; k < G; k++ {
					qrow := in.Q[(i*in.NumQHeads+h*G+k)*d:][:d]
					qs[k] = prepQuery(prefix, qrow)
				}
				for t := 0; t < np; t++ {
					for k := range qs {
						r.s[k][t], r.ds[k][t] = sc.scoreEntry(ps, t, &qs[k])
					}
				}
				for u := lo; u <= i; u++ {
					kr := in.K[(u*hkv+h)*d:][:d]
					for k := 0; k < G; k++ {
						qrow := in.Q[(i*in.NumQHeads+h*G+k)*d:][:d]
						var sum, abs float64
						for j, x := range qrow {
							p := float64(x) * float64(kr[j])
							sum += p
							abs += math.Abs(p)
						}
						t := np + u - lo
						r.s[k][t] = cs * sum
						r.ds[k][t] = kChunk*cs*abs + 16*0x1p-126
					}
				}
				r.value = func(t int) []float64 {
					if t < np {
						return ps.value(t)
					}
					return chunkV[(t-np)*d : (t-np+1)*d]
				}
				model, bound := make([][]float64, G), make([][]float64, G)
				for k := 0; k < G; k++ {
					o := (i*in.NumQHeads + h*G + k) * d
					model[k], bound[k] = res.Model[o:o+d], res.Bound[o:o+d]
				}
				r.eval(model, bound)
			}
			ps.release()
		}
	}
	return res, nil
}

func checkPrefillProfiles(prefix, chunk Profile, in *PrefillInput) error {
	if err := in.Validate(); err != nil {
		return err
	}
	if !prefix.ReadsCache() {
		return fmt.Errorf("prefill profile: prefix profile %q does not read the packed cache: expected one of %s, %s, %s", prefix, ProfileInt8RowQ, ProfileDot4Int8Q, ProfileWMMAF16Q)
	}
	if chunk != ProfilePrefillChunkF16 {
		return fmt.Errorf("prefill profile: chunk profile %q: expected %s", chunk, ProfilePrefillChunkF16)
	}
	if err := attCheckF32Scale(in.SMScale); err != nil {
		return fmt.Errorf("prefill profile: %w", err)
	}
	return nil
}

// PrefillProfileF32 computes prefill with the two profiles in float32 as a kernel would, in the
// canonical order: phase 1 over the prefix in natural-log units (expf), phase 2 over the chunk in
// log2 units (exp2f) starting from phase 1's state with its max converted, P rounded to fp16
// against the exact V, output o·(1/l) rounded to out. Rotated output [NumTokens][NumQHeads][d] as
// float64; rows of no sequence are NaN.
func PrefillProfileF32(prefix, chunk Profile, in *PrefillInput, out Dtype) ([]float64, error) {
	if err := checkPrefillProfiles(prefix, chunk, in); err != nil {
		return nil, err
	}
	if _, _, err := out.rounding(); err != nil {
		return nil, fmt.Errorf("prefill profile: %w", err)
	}
	c := in.Cache
	d, hkv := c.F.HeadSize, c.NumKVHeads
	G := in.NumQHeads / hkv
	res := make([]float64, in.NumTokens*in.NumQHeads*d)
	for i := range res {
		res[i] = math.NaN()
	}
	ce := float32(in.SMScale)
	c2 := float32(float32(in.SMScale) * float32(math.Log2E))
	log2e := float32(math.Log2E)
	sl := newF32Slot(c.F)
	var slots [][]byte
	for s := 0; s < in.NumSeqs(); s++ {
		lo, hi := int(in.CuSeqlensQ[s]), int(in.CuSeqlensQ[s+1])
		for h := 0; h < hkv; h++ {
			slots = in.prefixSlots(s, h, slots[:0])
			for i := lo; i < hi; i++ {
				for k := 0; k < G; k++ {
					hq := h*G + k
					qrow := in.Q[(i*in.NumQHeads+hq)*d:][:d]
					fq := newF32Query(prefix, qrow)
					a := newF32Acc(d, attExpf)
					for _, b := range slots {
						sl.load(b)
						a.addSlotV(prefix, sl, a.update(sl.score(&fq, ce)))
					}
					sc := slotScale(prefix)
					for j := range a.o {
						a.o[j] = float32(a.o[j] * sc)
					}
					// Phase 2: convert the max to log2 units and continue with exp2.
					if !math.IsInf(float64(a.m), -1) {
						a.m = float32(a.m * log2e)
					}
					a.exp = attExp2f
					for u := lo; u <= i; u++ {
						kr := in.K[(u*hkv+h)*d:][:d]
						var dot float32
						for j, x := range qrow {
							dot += float32(x * kr[j])
						}
						p := F16ToF32(F32ToF16(a.update(float32(dot * c2))))
						for j, x := range in.V[(u*hkv+h)*d:][:d] {
							a.o[j] += float32(p * x)
						}
					}
					inv := 1 / a.l
					dst := res[(i*in.NumQHeads+hq)*d:][:d]
					for j := range dst {
						dst[j] = out.Round(float64(float32(a.o[j] * inv)))
					}
				}
			}
		}
	}
	return res, nil
}
