package oracle

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// Property tests of the attention model (rapid). Slots are random bytes with sane fp16 scales:
// every bit pattern is a valid slot, so this covers codes the quantizer never writes.

// attRapidInput draws a decode call: format, layout, Hkv, G, block size, table (optionally with
// out-of-range physical ids), query maps with padding and out-of-range requests, signs, scale.
func attRapidInput(t *rapid.T, allValid bool) *DecodeInput {
	id := rapid.SampledFrom(AllFormats).Draw(t, "format")
	f := MustFormat(id, KernelHeadSize, KernelRopeDim)
	hkv := rapid.IntRange(1, 2).Draw(t, "hkv")
	g := rapid.SampledFrom(AllowedGroups).Draw(t, "G")
	bs := rapid.SampledFrom([]int{1, 3, 16, 32}).Draw(t, "block_size")
	tokens := rapid.IntRange(1, 240).Draw(t, "max_tokens")
	maxBlocks := (tokens + bs - 1) / bs
	numBlocks := maxBlocks + rapid.IntRange(0, 3).Draw(t, "spare_blocks")
	numReqs := rapid.IntRange(1, 3).Draw(t, "num_reqs")
	numQ := rapid.IntRange(1, 4).Draw(t, "num_q")
	rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
	data := make([]byte, CacheBytes(f, numBlocks, hkv, bs))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	var c *Cache
	var err error
	if rapid.Bool().Draw(t, "lbnhc") {
		c, err = NewCacheLBNHC(f, data, numBlocks, hkv, bs)
	} else {
		c, err = NewCacheLBHNC(f, data, numBlocks, hkv, bs)
	}
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < numBlocks; b++ {
		for h := 0; h < hkv; h++ {
			for tok := 0; tok < bs; tok++ {
				s := c.Slot(b, h, tok)
				for k := 0; k < f.NumScales(); k++ {
					putU16(s[f.OffScales()+2*k:], F32ToF16(float32(math.Exp2(-4+6*rng.Float64()))))
				}
			}
		}
	}
	bt := make([]int32, numReqs*maxBlocks)
	for r := 0; r < numReqs; r++ {
		perm := rng.Perm(numBlocks)
		for lb := 0; lb < maxBlocks; lb++ {
			bt[r*maxBlocks+lb] = int32(perm[lb])
			if !allValid && rng.IntN(8) == 0 {
				bt[r*maxBlocks+lb] = []int32{-1, int32(numBlocks), math.MinInt32}[rng.IntN(3)]
			}
		}
	}
	reqs, klens := make([]int32, numQ), make([]int32, numQ)
	for i := range reqs {
		reqs[i] = int32(rapid.IntRange(-1, numReqs).Draw(t, "req"))
		klens[i] = int32(rapid.IntRange(-2, tokens+5).Draw(t, "klen"))
	}
	ks, vs := DefaultSigns(256), DefaultSigns(256)
	if rapid.Bool().Draw(t, "random_signs") {
		ks, vs = attRandSigns(rng, 256), attRandSigns(rng, 256)
	}
	q := make([]float32, numQ*hkv*g*256)
	for i := range q {
		q[i] = attF16Rand(rng, 1)
	}
	scale := rapid.SampledFrom([]float64{1.0 / 16, 0.01, 0.3, 1}).Draw(t, "sm_scale")
	return &DecodeInput{Cache: c, Query: q, NumQHeads: hkv * g, BlockTable: bt, NumReqs: numReqs, MaxBlocks: maxBlocks,
		QToReq: reqs, QToKlen: klens, SMScale: scale, KSigns: ks, VSigns: vs}
}

// attTol2 is the tolerance between two float64 evaluations: the sum of their bounds (2B). B is
// evaluated at the float64 model instead of the exact value; that moves it by a relative
// O(ρ⁺) ≤ 1e-12, covered by the factor 1 + 1e-9.
func attTol2(b []float64) func(int) float64 {
	return func(j int) float64 { return 2 * b[j] * (1 + 1e-9) }
}

// TestPropMergeAnyGeometry: merging exact partials of any split geometry — random contiguous
// ranges, empty ranges, more splits than tokens, ranges past kv_max — equals the single-pass
// exact decode within the float64 bound, and so does the bound's own two-pass model.
func TestPropMergeAnyGeometry(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := attRapidInput(t, false)
		kv := in.KVMax()
		ns := rapid.IntRange(1, 2*kv+3).Draw(t, "splits")
		cuts := make([]int, ns-1)
		for i := range cuts {
			cuts[i] = rapid.IntRange(0, kv).Draw(t, "cut")
		}
		// Sort the cuts (insertion sort keeps it dependency-free and ns is small).
		for i := 1; i < len(cuts); i++ {
			for j := i; j > 0 && cuts[j] < cuts[j-1]; j-- {
				cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
			}
		}
		g := make(Geometry, ns)
		lo := 0
		for s := range g {
			hi := kv + rapid.IntRange(0, 3).Draw(t, "overshoot")
			if s < ns-1 {
				hi = cuts[s]
			}
			g[s] = Range{lo, hi}
			lo = hi
		}
		stride := rapid.SampledFrom([]int{258, 260, 264}).Draw(t, "stride")
		p, err := DecodePartials(in, g, stride)
		if err != nil {
			t.Fatal(err)
		}
		merged, err := MergePartials(p, in.Cache.F, in.VSigns)
		if err != nil {
			t.Fatal(err)
		}
		exact, err := ExactDecode(in)
		if err != nil {
			t.Fatal(err)
		}
		model, bound := attExactBound(in)
		if j := attWithin(merged, exact, attTol2(bound)); j >= 0 {
			t.Fatalf("geometry %v: element %d merged %.17g, single pass %.17g, |diff| %.3g > 2·bound %.3g", g, j, merged[j], exact[j], math.Abs(merged[j]-exact[j]), 2*bound[j])
		}
		if j := attWithin(model, exact, attTol2(bound)); j >= 0 {
			t.Fatalf("element %d: two-pass model %.17g, online %.17g, |diff| %.3g > 2·bound %.3g", j, model[j], exact[j], math.Abs(model[j]-exact[j]), 2*bound[j])
		}
	})
}

// TestPropTokenPermutation: attention is a function of the set of (key, value) tokens, so moving
// the first klen tokens of a request to permuted logical positions (rewriting the slots behind the
// block table) changes the result only within the float64 bound.
func TestPropTokenPermutation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := attRapidInput(t, true)
		// One request, every row with the same klen, so every row sees the permuted set.
		klen := rapid.IntRange(1, in.MaxBlocks*in.Cache.BlockSize).Draw(t, "klen")
		for i := range in.QToReq {
			in.QToReq[i], in.QToKlen[i] = 0, int32(klen)
		}
		perm := rapid.Permutation(attSeq(klen)).Draw(t, "perm")
		c := in.Cache
		pc := *c
		pc.Data = append([]byte(nil), c.Data...)
		bs := c.BlockSize
		for pos := 0; pos < klen; pos++ {
			src := perm[pos]
			for h := 0; h < c.NumKVHeads; h++ {
				copy(pc.Slot(int(in.BlockTable[pos/bs]), h, pos%bs), c.Slot(int(in.BlockTable[src/bs]), h, src%bs))
			}
		}
		out, err := ExactDecode(in)
		if err != nil {
			t.Fatal(err)
		}
		pin := *in
		pin.Cache = &pc
		pout, err := ExactDecode(&pin)
		if err != nil {
			t.Fatal(err)
		}
		_, bound := attExactBound(in)
		if j := attWithin(pout, out, attTol2(bound)); j >= 0 {
			t.Fatalf("element %d: permuted %.17g, original %.17g, |diff| %.3g > 2·bound %.3g", j, pout[j], out[j], math.Abs(pout[j]-out[j]), 2*bound[j])
		}
	})
}

func attSeq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestPropPaddingExactlyZero: rows with klen ≤ 0 or a request outside [0, num_reqs) are exactly
// zero in the exact decode, the merged partials (every split empty, m = −inf) and every decode
// profile (model 0, bound 0); rows whose every token sits in an out-of-range block are zero too.
func TestPropPaddingExactlyZero(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := attRapidInput(t, false)
		exact, err := ExactDecode(in)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := PortableGeometry(in.KVMax(), rapid.IntRange(1, 9).Draw(t, "splits"))
		p, err := DecodePartials(in, g, 0)
		if err != nil {
			t.Fatal(err)
		}
		merged, err := MergePartials(p, in.Cache.F, in.VSigns)
		if err != nil {
			t.Fatal(err)
		}
		prof := rapid.SampledFrom([]Profile{ProfileDot4Int8Q, ProfileWMMAF16Q, ProfileInt8RowQ}).Draw(t, "profile")
		res, err := DecodeProfile(prof, in, ProfileOptions{Out: DtypeF16})
		if err != nil {
			t.Fatal(err)
		}
		rowLen := in.NumQHeads * 256
		for i := 0; i < in.NumQ(); i++ {
			if in.Klen(i) != 0 && len(in.tokenSlots(i, 0, 0, in.Klen(i), nil)) != 0 {
				continue
			}
			for j := i * rowLen; j < (i+1)*rowLen; j++ {
				if exact[j] != 0 || merged[j] != 0 || res.Model[j] != 0 || res.Bound[j] != 0 {
					t.Fatalf("row %d (req %d, klen %d): exact %v, merged %v, %s model %v bound %v: expected exact zeros",
						i, in.QToReq[i], in.QToKlen[i], exact[j], merged[j], prof, res.Model[j], res.Bound[j])
				}
			}
		}
	})
}

// TestPropScoreShift: the softmax is invariant to adding a constant c to every score. The online
// accumulator fed scores s_t + c ends with m' = fl(max s_t + c), and the same l and o up to
// rounding: each run is within the float64 bound of the exact output, where the shifted run's
// scores carry the rounding of s_t + c (δ_t = 2^-53·(|s_t| + |c|)).
func TestPropScoreShift(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 200).Draw(t, "n")
		d := rapid.SampledFrom([]int{4, 8, 32}).Draw(t, "d")
		spread := rapid.SampledFrom([]float64{0.01, 1, 10, 60}).Draw(t, "spread")
		c := rapid.SampledFrom([]float64{-1e6, -700, -3.25, 0.5, 100, 1e6}).Draw(t, "shift")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 2))
		s := make([]float64, n)
		vals := make([][]float64, n)
		for i := range s {
			s[i] = spread * rng.NormFloat64()
			vals[i] = make([]float64, d)
			for j := range vals[i] {
				vals[i][j] = rng.NormFloat64()
			}
		}
		run := func(shift float64) (softmaxAcc, []float64) {
			a := newSoftmaxAcc(d)
			for i := range s {
				a.add(s[i]+shift, vals[i])
			}
			out := make([]float64, d)
			for j := range out {
				out[j] = a.o[j] / a.l
			}
			return a, out
		}
		a0, out0 := run(0)
		a1, out1 := run(c)
		M := math.Inf(-1)
		for _, x := range s {
			M = math.Max(M, x)
		}
		if want := M + c; a1.m != want {
			t.Fatalf("shifted max %v, expected fl(%v + %v) = %v", a1.m, M, c, want)
		}
		if a0.m != M {
			t.Fatalf("max %v, expected %v", a0.m, M)
		}
		r := &profRows{d: d, n: n, s: [][]float64{s}, ds: [][]float64{make([]float64, n)}, kappa: make([]float64, n), prec: fp64Prec,
			value: func(t int) []float64 { return vals[t] }}
		for i := range s {
			r.ds[0][i] = 0x1p-53 * (math.Abs(s[i]) + math.Abs(c))
		}
		model, bound := [][]float64{make([]float64, d)}, [][]float64{make([]float64, d)}
		r.eval(model, bound)
		if j := attWithin(out1, out0, attTol2(bound[0])); j >= 0 {
			t.Fatalf("shift %v: element %d %.17g vs %.17g, |diff| %.3g > 2·bound %.3g", c, j, out1[j], out0[j], math.Abs(out1[j]-out0[j]), 2*bound[0][j])
		}
	})
}
