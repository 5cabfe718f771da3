package fuzz

import (
	"testing"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
)

// flatDecodeSpec is one request of n tokens and one query row of zeros: every weight is exactly
// 1/n, so the output is the mean of n zero-mean V values, about n^-1/2 of their scale, while the
// bound's accumulation term grows with n. At long context a tier that writes zeros is within
// every element's bound there; only the contract rule of the judge (an output as far from its
// profile's model as the contract allows) fails it.
func flatDecodeSpec(n int) *cases.DecodeSpec {
	const bs = 16
	nb := (n + bs - 1) / bs
	table := make([]int32, nb)
	for i := range table {
		table[i] = int32(i)
	}
	b := cases.Batch{Requests: []cases.Request{{QueryLen: 1, SeqLen: n}}, NumTokens: 1}
	m, _ := cases.BuilderMaps(b)
	return &cases.DecodeSpec{Dtype: harness.F16, Group: 1,
		Cache:   cases.CacheShape{Format: "octave_k3v4", NumBlocks: nb, NumKVHeads: 1, BlockSize: bs},
		Content: cases.CacheContent{Seed: 3, Dtype: harness.F16, Kinds: []cases.ValueKind{cases.Gaussian}, Garbage: cases.GarbageZero, FiniteScales: true},
		Batch:   b, Maps: m, Table: cases.BlockTable{Table: table, NumReqs: 1, MaxBlocks: nb, NumBlocks: nb},
		Signs: cases.SignPair{K: cases.DefaultSignSpec, V: cases.DefaultSignSpec}, SMScale: cases.DefaultSMScale, NumSplits: 1,
		Query: cases.QueryContent{Seed: 5, Kinds: []cases.ValueKind{cases.Zero}}}
}

// TestSkipContractZeros: a tier that writes zeros fails with and without SkipContract (the fuzz
// targets' setting), at a length where its zeros lie within every element's bound.
func TestSkipContractZeros(t *testing.T) {
	l := harnesstest.LibOrSkip(t)
	in, err := flatDecodeSpec(1 << 15).Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range l.TierNames() {
		z, err := harnesstest.Zeros(l, tier)
		if err != nil {
			t.Fatal(err)
		}
		for _, skip := range []bool{false, true} {
			c := &harness.DecodeCall{In: in, Dtype: harness.F16, NumSplits: 1, QueryGroup: 1, SkipContract: skip}
			for _, v := range harness.CheckAll(z.OnTier(tier), c) {
				t.Logf("%s, SkipContract %v: %v", tier, skip, v)
				if !v.Failed() {
					t.Errorf("%s writing zeros, SkipContract %v: %v, expected Fail", tier, skip, v)
				}
			}
		}
	}
}
