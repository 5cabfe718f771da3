package oracle

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// attPrefillCase builds a prefill call: a quantized random cache, sequences with the given query
// lengths and cached contexts, padding rows after the last sequence, fp16 q/k/v.
func attPrefillCase(rng *rand.Rand, id FormatID, hkv, g int, qlens, ctxs []int, padRows int) *PrefillInput {
	f := MustFormat(id, KernelHeadSize, KernelRopeDim)
	bs := 16
	maxCtx := 0
	for _, c := range ctxs {
		maxCtx = max(maxCtx, c)
	}
	mb := max(1, (maxCtx+bs-1)/bs)
	ac := attBuild(rng, attShape{f: f, hkv: hkv, g: g, bs: bs, numBlocks: mb + 1, maxBlocks: mb, numReqs: len(qlens),
		kSigma: 1, vSigma: 1, qSigma: 1, outlierDim: -1})
	cu := []int32{0}
	var seqLens []int32
	for s, q := range qlens {
		cu = append(cu, cu[s]+int32(q))
		seqLens = append(seqLens, int32(ctxs[s]+q))
	}
	T := int(cu[len(qlens)]) + padRows
	d := f.HeadSize
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = attF16Rand(rng, 1)
		}
		return x
	}
	return &PrefillInput{Cache: ac.in.Cache, Q: fill(T * hkv * g * d), K: fill(T * hkv * d), V: fill(T * hkv * d), NumTokens: T, NumQHeads: hkv * g,
		CuSeqlensQ: cu, SeqLens: seqLens, BlockTable: ac.in.BlockTable, MaxBlocks: mb, SMScale: 1.0 / 16}
}

// attNaivePrefill is an independent implementation: per row, the list of (score, value) pairs of
// the dequantized prefix (DequantizeSlot, rotated) and of the chunk tokens 0..j, then a two-pass
// softmax with natural exp.
func attNaivePrefill(in *PrefillInput) []float64 {
	c := in.Cache
	d, hkv := c.F.HeadSize, c.NumKVHeads
	G := in.NumQHeads / hkv
	out := make([]float64, in.NumTokens*in.NumQHeads*d)
	for i := range out {
		out[i] = math.NaN()
	}
	for s := 0; s < len(in.SeqLens); s++ {
		lo, hi := int(in.CuSeqlensQ[s]), int(in.CuSeqlensQ[s+1])
		ctx := max(0, min(int(in.SeqLens[s])-(hi-lo), in.MaxBlocks*c.BlockSize))
		for i := lo; i < hi; i++ {
			for hq := 0; hq < in.NumQHeads; hq++ {
				h := hq / G
				q := in.Q[(i*in.NumQHeads+hq)*d:][:d]
				var sc []float64
				var vals [][]float64
				dot := func(k []float32) float64 {
					var x float64
					for j := range q {
						x += float64(q[j]) * float64(k[j])
					}
					return x * in.SMScale
				}
				for t := 0; t < ctx; t++ {
					pb := int(in.BlockTable[s*in.MaxBlocks+t/c.BlockSize])
					if pb < 0 || pb >= c.NumBlocks {
						continue
					}
					k, v := DequantizeSlot(c.F, c.Slot(pb, h, t%c.BlockSize))
					sc = append(sc, dot(k))
					vals = append(vals, f64s32(v))
				}
				for u := lo; u <= i; u++ {
					sc = append(sc, dot(in.K[(u*hkv+h)*d:][:d]))
					vals = append(vals, f64s32(in.V[(u*hkv+h)*d:][:d]))
				}
				mx := math.Inf(-1)
				for _, x := range sc {
					mx = math.Max(mx, x)
				}
				row := out[(i*in.NumQHeads+hq)*d:][:d]
				clear(row)
				var l float64
				for t, x := range sc {
					p := math.Exp(x - mx)
					l += p
					for j := range row {
						row[j] += p * vals[t][j]
					}
				}
				for j := range row {
					row[j] /= l
				}
			}
		}
	}
	return out
}

func f64s32(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// TestExactPrefill checks the exact prefill against the independent implementation (every
// format, G 1 and 3, a sequence with no context, one with a context longer than the table allows,
// an empty sequence, padding rows), the written mask, and that padding rows stay NaN. 1e-12
// relative is far above the float64 rounding of both and far below any semantic difference.
func TestExactPrefill(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, id := range AllFormats {
		for _, g := range []int{1, 3} {
			in := attPrefillCase(rng, id, 2, g, []int{20, 0, 1, 33}, []int{50, 7, 0, 30}, 3)
			in.SeqLens[3] = 1 << 20 // context clamped to max_blocks·block_size
			out, written, err := ExactPrefill(in)
			if err != nil {
				t.Fatal(err)
			}
			want := attNaivePrefill(in)
			rowLen := in.NumQHeads * in.Cache.F.HeadSize
			rows := int(in.CuSeqlensQ[len(in.SeqLens)])
			if r := attRelL2(out[:rows*rowLen], want[:rows*rowLen]); r > 1e-12 {
				t.Errorf("%v G=%d: rel L2 %.3g from the independent prefill, expected ≤ 1e-12", id, g, r)
			}
			for i := 0; i < in.NumTokens; i++ {
				if written[i] != (i < rows) {
					t.Fatalf("%v: row %d written = %v, expected %v", id, i, written[i], i < rows)
				}
				if i >= rows && !math.IsNaN(out[i*rowLen]) {
					t.Fatalf("%v: unwritten row %d holds %v, expected NaN", id, i, out[i*rowLen])
				}
			}
		}
	}
	in := attPrefillCase(rng, K3V4, 1, 1, []int{2}, []int{0}, 0)
	for _, c := range []struct {
		mut  func(in *PrefillInput)
		want string
	}{
		{func(in *PrefillInput) { in.CuSeqlensQ = []int32{0, 3} }, "cu_seqlens_q[1] = 3 exceeds num_tokens 2"},
		{func(in *PrefillInput) { in.CuSeqlensQ = []int32{0} }, "cu_seqlens_q has 1 entries, expected num_seqs+1 = 2"},
		{func(in *PrefillInput) { in.K = in.K[:5] }, "k has 5 values, expected 512"},
		{func(in *PrefillInput) { in.NumQHeads = 0 }, "num_q_heads 0: expected a positive multiple of num_kv_heads 1"},
		{func(in *PrefillInput) { in.SMScale = -1 }, "sm_scale -1"},
	} {
		x := *in
		c.mut(&x)
		if _, _, err := ExactPrefill(&x); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, expected one containing %q", err, c.want)
		}
	}
}

// TestPrefillProfilesF32WithinBound runs the prefill profiles (prefix: int8rowq upstream,
// and the decode profiles for comparison; chunk: prefill-chunk-f16) in float32 and checks every
// element against the derived bound; it logs the looseness per row and checks the model against
// exact prefill under the contract bound.
func TestPrefillProfilesF32WithinBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, id := range AllFormats {
		in := attPrefillCase(rng, id, 1, 6, []int{30, 1, 50}, []int{200, 0, 120}, 2)
		exact, rows := exactPrefillElems(t, in)
		for _, prefix := range []Profile{ProfileInt8RowQ, ProfileDot4Int8Q, ProfileWMMAF16Q} {
			res, err := PrefillProfile(prefix, ProfilePrefillChunkF16, in, ProfileOptions{Out: DtypeF16})
			if err != nil {
				t.Fatal(err)
			}
			if rel, ok := ContractCheck(res.Model[:rows], exact[:rows]); !ok {
				t.Errorf("%v %s: model rel L2 %.3g from exact prefill, expected < %g", id, prefix, rel, ContractRelL2)
			}
			got, err := PrefillProfileF32(prefix, ProfilePrefillChunkF16, in, DtypeF16)
			if err != nil {
				t.Fatal(err)
			}
			for j := rows; j < len(got); j++ {
				if !math.IsNaN(got[j]) || !math.IsNaN(res.Model[j]) {
					t.Fatalf("unwritten element %d: f32 %v, model %v, expected NaN", j, got[j], res.Model[j])
				}
			}
			head := &ProfileResult{Model: res.Model[:rows], Bound: res.Bound[:rows]}
			use, med, mx := attBoundStats(t, string(prefix)+"+chunk", head, got[:rows], 256)
			t.Logf("%-20v %-16s + %s: |err|/bound ≤ %.3f, bound/err per row median %.1f max %.1f", id, prefix, ProfilePrefillChunkF16, use, med, mx)
		}
	}
	if _, err := PrefillProfile(ProfilePrefillChunkF16, ProfilePrefillChunkF16, attPrefillCase(rng, K3V4, 1, 1, []int{1}, []int{0}, 0), ProfileOptions{Out: DtypeF16}); err == nil {
		t.Errorf("prefill-chunk-f16 accepted as the prefix profile")
	}
}

// exactPrefillElems is exact prefill attention of in and the number of its output elements (every
// chunk token's query heads).
func exactPrefillElems(t *testing.T, in *PrefillInput) ([]float64, int) {
	t.Helper()
	exact, _, err := ExactPrefill(in)
	if err != nil {
		t.Fatal(err)
	}
	return exact, int(in.CuSeqlensQ[len(in.SeqLens)]) * in.NumQHeads * 256
}
