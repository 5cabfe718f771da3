package oracle

import (
	"math"
	"math/rand/v2"
	"testing"
)

// prefillFP32Impl is a float32 implementation of the prefill-fp32 profile in the portable tier's
// order: per row, prefix tokens then chunk tokens, 32-token tiles, each score a sequential fp32 dot
// (product and addition rounded separately: one more rounding per term than a fused
// multiply-add, still within the bound's count), an online softmax in base 2 per tile, P·V in fp32,
// out = O/L rounded to out. Rotated output; rows of no sequence are NaN.
func prefillFP32Impl(in *PrefillInput, out Dtype) []float64 {
	c := in.Cache
	d, hkv := c.F.HeadSize, c.NumKVHeads
	G := in.NumQHeads / hkv
	res := make([]float64, in.NumTokens*in.NumQHeads*d)
	for i := range res {
		res[i] = math.NaN()
	}
	c2 := float32(in.SMScale * math.Log2E)
	dq := NewDequantizer(c.F)
	var slots [][]byte
	for s := 0; s < in.NumSeqs(); s++ {
		lo, hi := int(in.CuSeqlensQ[s]), int(in.CuSeqlensQ[s+1])
		for h := 0; h < hkv; h++ {
			slots = in.prefixSlots(s, h, slots[:0])
			np := len(slots)
			keys, vals := make([][]float32, 0, np+hi-lo), make([][]float32, 0, np+hi-lo)
			for _, sl := range slots {
				k, v := make([]float32, d), make([]float32, d)
				dq.DequantizeInto(k, v, sl)
				keys, vals = append(keys, k), append(vals, v)
			}
			for u := lo; u < hi; u++ {
				keys = append(keys, in.K[(u*hkv+h)*d:][:d])
				vals = append(vals, in.V[(u*hkv+h)*d:][:d])
			}
			for i := lo; i < hi; i++ {
				n := np + i - lo + 1
				for k := 0; k < G; k++ {
					hq := h*G + k
					q := in.Q[(i*in.NumQHeads+hq)*d:][:d]
					m, l := float32(math.Inf(-1)), float32(0)
					o := make([]float32, d)
					for t0 := 0; t0 < n; t0 += 32 {
						t1 := min(t0+32, n)
						sc := make([]float32, t1-t0)
						mt := float32(math.Inf(-1))
						for t := t0; t < t1; t++ {
							var dot float32
							for j, x := range q {
								dot += float32(x * keys[t][j])
							}
							sc[t-t0] = float32(dot * c2)
							mt = max(mt, sc[t-t0])
						}
						mn := max(m, mt)
						alpha := attExp2f(float32(m - mn))
						var ls float32
						for j := range o {
							o[j] = float32(o[j] * alpha)
						}
						for t := t0; t < t1; t++ {
							p := attExp2f(float32(sc[t-t0] - mn))
							ls += p
							for j, x := range vals[t] {
								o[j] += float32(p * x)
							}
						}
						l = float32(l*alpha) + ls
						m = mn
					}
					dst := res[(i*in.NumQHeads+hq)*d:][:d]
					for j := range dst {
						dst[j] = out.Round(float64(float32(o[j] / l)))
					}
				}
			}
		}
	}
	return res
}

// TestPrefillFP32ProfileWithinBound: the prefill-fp32 model is exact prefill attention, and a
// float32 implementation of the profile stays within the derived per-element bound for fp16, bf16
// and fp32 outputs (logged: how loose the bound is).
func TestPrefillFP32ProfileWithinBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, id := range AllFormats {
		in := attPrefillCase(rng, id, 2, 3, []int{40, 1, 70}, []int{300, 0, 33}, 3)
		exact, rows := exactPrefillElems(t, in)
		for _, out := range []Dtype{DtypeF16, DtypeBF16, DtypeF32} {
			res, err := PrefillProfile(ProfilePrefillFP32, ProfilePrefillFP32, in, ProfileOptions{Out: out})
			if err != nil {
				t.Fatal(err)
			}
			for j := 0; j < rows; j++ {
				if d := math.Abs(res.Model[j] - exact[j]); d > 1e-12*(math.Abs(exact[j])+1e-3) {
					t.Fatalf("%v: model element %d = %v, exact prefill %v", id, j, res.Model[j], exact[j])
				}
			}
			for j := rows; j < len(res.Model); j++ {
				if !math.IsNaN(res.Model[j]) || !math.IsNaN(res.Bound[j]) {
					t.Fatalf("%v: element %d of a row of no sequence: model %v bound %v, expected NaN", id, j, res.Model[j], res.Bound[j])
				}
			}
			got := prefillFP32Impl(in, out)
			head := &ProfileResult{Model: res.Model[:rows], Bound: res.Bound[:rows]}
			use, med, mx := attBoundStats(t, "prefill-fp32/"+out.String(), head, got[:rows], 256)
			t.Logf("%-20v prefill-fp32 %-8v: |err|/bound ≤ %.3f, bound/err per row median %.1f max %.1f", id, out, use, med, mx)
		}
	}
	in := attPrefillCase(rng, K3V4, 1, 1, []int{1}, []int{0}, 0)
	if _, err := PrefillProfile(ProfilePrefillFP32, ProfilePrefillChunkF16, in, ProfileOptions{Out: DtypeF16}); err == nil {
		t.Errorf("prefill-fp32 mixed with prefill-chunk-f16 accepted")
	}
}

// TestPrefillFP32BoundDetectsDefects: the bound is tight enough to refuse a kernel that skips the
// first prefix block of a long row (16 of 420 tokens) or computes with a query perturbed by 1e-3
// relative (what fp16 scores would do).
func TestPrefillFP32BoundDetectsDefects(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	in := attPrefillCase(rng, K3V4, 1, 2, []int{20}, []int{400}, 0)
	res, err := PrefillProfile(ProfilePrefillFP32, ProfilePrefillFP32, in, ProfileOptions{Out: DtypeF16})
	if err != nil {
		t.Fatal(err)
	}
	if _, r := res.Check(prefillFP32Impl(in, DtypeF16)); r > 1 {
		t.Fatalf("correct implementation exceeds the bound ×%.3g", r)
	}
	skip := *in
	skip.BlockTable = append([]int32(nil), in.BlockTable...)
	skip.BlockTable[0] = -1 // the first prefix block is skipped, as an out-of-range block is
	if _, r := res.Check(prefillFP32Impl(&skip, DtypeF16)); r <= 1 {
		t.Errorf("skipping the first prefix block passes the bound (×%.3g)", r)
	}
	pert := *in
	pert.Q = make([]float32, len(in.Q))
	for i, x := range in.Q {
		pert.Q[i] = x * 0.999
	}
	if _, r := res.Check(prefillFP32Impl(&pert, DtypeF16)); r <= 1 {
		t.Errorf("a query perturbed by 1e-3 passes the bound (×%.3g)", r)
	}
}
