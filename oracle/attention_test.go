package oracle

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// attRandSigns is a random sign pattern (K and V get different ones in some tests).
func attRandSigns(rng *rand.Rand, n int) Signs {
	s := make(Signs, n)
	for i := range s {
		s[i] = rng.IntN(2) == 1
	}
	return s
}

// attSmallShape is a mixed decode batch: two requests (one MTP run of 3), a padding row, and a
// row whose klen exceeds the table (clamped).
func attSmallShape(f Format, hkv, g, bs int, lbnhc bool) attShape {
	return attShape{f: f, hkv: hkv, g: g, bs: bs, numBlocks: 9, maxBlocks: 5, numReqs: 2,
		reqs: []int32{0, 1, 1, 1, 2, 0}, klens: []int32{int32(3*bs + 1), 7, 8, 9, 0, 1 << 20},
		lbnhc: lbnhc, kSigma: 1, vSigma: 1, qSigma: 1, outlierDim: -1}
}

// TestExactDecodeMatchesOriginalSpace checks the rotated-space exact decode against an
// independent original-space implementation (un-rotated K and V, unrotated query, natural exp,
// two-pass softmax) for every format, both layouts, every allowed G and random sign patterns.
// The two are float64 evaluations of the same real number; 1e-12 relative is far above their
// rounding (a few hundred ulps of 2^-53 over 256-term dots and ≤ 45 tokens) and far below any
// semantic difference.
func TestExactDecodeMatchesOriginalSpace(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, id := range AllFormats {
		f := MustFormat(id, KernelHeadSize, KernelRopeDim)
		for gi, g := range AllowedGroups {
			s := attSmallShape(f, 1+gi%2, g, 16, gi%2 == 1)
			if gi == 2 {
				s.ks, s.vs = attRandSigns(rng, 256), attRandSigns(rng, 256)
			}
			ac := attBuild(rng, s)
			got, err := ExactDecode(ac.in)
			if err != nil {
				t.Fatal(err)
			}
			want := attNaiveDecode(ac.in)
			if r := attRelL2(got, want); r > 1e-12 {
				t.Errorf("%v G=%d: rel L2 %.3g from the original-space implementation, expected ≤ 1e-12", id, g, r)
			}
			rowLen := ac.in.NumQHeads * f.HeadSize
			for _, x := range got[4*rowLen : 5*rowLen] {
				if x != 0 {
					t.Fatalf("%v G=%d: padding row not exactly zero", id, g)
				}
			}
		}
	}
}

// TestExactDecodeBlockRules checks Octant's rules: a physical block id outside [0, num_blocks)
// skips its tokens (equal to a table where those tokens are absent), klen is clamped to
// max_blocks·block_size, and rows with an out-of-range request or klen ≤ 0 are exactly zero.
func TestExactDecodeBlockRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f := MustFormat(K3V4, KernelHeadSize, KernelRopeDim)
	s := attSmallShape(f, 1, 2, 16, false)
	s.reqs = []int32{0, 0, -1, 2, 7, 1}
	s.klens = []int32{80, 40, 10, 10, 10, -3}
	ac := attBuild(rng, s)
	in := ac.in
	base, err := ExactDecode(in)
	if err != nil {
		t.Fatal(err)
	}
	// klen 80 = max_blocks·block_size: same as klen 1<<20.
	in.QToKlen[0] = 1 << 20
	clamped, _ := ExactDecode(in)
	rowLen := in.NumQHeads * f.HeadSize
	for j := 0; j < rowLen; j++ {
		if clamped[j] != base[j] {
			t.Fatalf("klen 1<<20 differs from klen 80 = max_blocks·block_size at %d", j)
		}
	}
	in.QToKlen[0] = 80
	for r := 2; r < 6; r++ {
		for _, x := range base[r*rowLen : (r+1)*rowLen] {
			if x != 0 {
				t.Fatalf("row %d (req %d, klen %d) is not exactly zero", r, in.QToReq[r], in.QToKlen[r])
			}
		}
	}
	// Logical block 1 of request 0 → out of range (both signs): row 1 (klen 40) must equal a
	// request whose tokens 16..31 are gone, built by moving blocks 2 and 3 down.
	for _, bad := range []int32{-1, int32(in.Cache.NumBlocks), math.MaxInt32} {
		bt := append([]int32(nil), in.BlockTable...)
		bt[1] = bad
		skip := *in
		skip.BlockTable = bt
		got, err := ExactDecode(&skip)
		if err != nil {
			t.Fatal(err)
		}
		// Reference: tokens 0..15 and 32..39 only. Block table [b0, b2, b3] with klen 24 gives
		// tokens 0..15 from b0 and 16..23 from b2 = old tokens 32..39.
		ref := *in
		ref.BlockTable = append([]int32(nil), in.BlockTable...)
		ref.BlockTable[1], ref.BlockTable[2] = in.BlockTable[2], in.BlockTable[3]
		ref.QToKlen = append([]int32(nil), in.QToKlen...)
		ref.QToKlen[1] = 24
		want, _ := ExactDecode(&ref)
		if r := attRelL2(got[rowLen:2*rowLen], want[rowLen:2*rowLen]); r > 1e-14 {
			t.Errorf("block id %d: rel L2 %.3g from the table without the block, expected equal up to float64 rounding", bad, r)
		}
	}
}

// TestDecodeValidation checks that malformed inputs are refused with messages that say what was
// expected and what was found.
func TestDecodeValidation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	f := MustFormat(K3V3, KernelHeadSize, KernelRopeDim)
	ac := attBuild(rng, attSmallShape(f, 1, 2, 16, false))
	for _, c := range []struct {
		name string
		mut  func(in *DecodeInput)
		want string
	}{
		{"G3", func(in *DecodeInput) { in.NumQHeads = 3; in.Query = make([]float32, 6*3*256) }, "GQA group 3"},
		{"G12", func(in *DecodeInput) { in.NumQHeads = 12; in.Query = make([]float32, 6*12*256) }, "expected one of [1 2 4 6 8]"},
		{"scale0", func(in *DecodeInput) { in.SMScale = 0 }, "sm_scale 0"},
		{"scaleNaN", func(in *DecodeInput) { in.SMScale = math.NaN() }, "expected a finite value > 0"},
		{"scaleInf", func(in *DecodeInput) { in.SMScale = math.Inf(1) }, "sm_scale +Inf"},
		{"query", func(in *DecodeInput) { in.Query = in.Query[:10] }, "query has 10 values, expected"},
		{"klen", func(in *DecodeInput) { in.QToKlen = in.QToKlen[:2] }, "q_to_klen has 2 entries, expected 6"},
		{"table", func(in *DecodeInput) { in.BlockTable = in.BlockTable[:3] }, "block_table has 3 entries, expected num_reqs 2 × max_blocks 5 = 10"},
		{"signs", func(in *DecodeInput) { in.VSigns = in.VSigns[:100] }, "sign patterns of 256 (K) and 100 (V) dims"},
	} {
		in := *ac.in
		c.mut(&in)
		_, err := ExactDecode(&in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, expected one containing %q", c.name, err, c.want)
		}
	}
}
