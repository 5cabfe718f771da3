package grids_test

import (
	"fmt"
	"testing"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// Long context is where accumulation defects hide (a running sum kept in fp16, a rescale skipped
// once a tile's maximum stops growing): a short case never sees them. These cases reach 131072
// tokens (cases.MaxSeqLen), each judged on every tier under the bound the oracle derives for its
// own length (docs/bounds.md: the bound grows with the number of terms n). The flat cases (here
// and in TestDecodeLongFirst) use a tiny sm_scale: near-uniform weights, so that the softmax
// denominator l is about the length itself (above fp16's 65504) and P·V sums 131072 comparable
// terms. -short runs them at 16384 tokens
// (the emulator's two cores would need minutes per 131072-token case); the GPU runs them in full
// (make gpu-test). The cases past 2^16 tokens in -short too are TestDecodeLongFirst's
// (a_long_first_test.go), which runs first.
const longLen = 1 << 17

func longLength(n int) int {
	if testing.Short() {
		return n >> 3
	}
	return n
}

// overflowLength is the length of the case whose one split sums near-equal weights past fp16's
// largest finite value (65504): 2^17 in full mode, 80000 with -short, so that a softmax
// denominator kept or stored in fp16 overflows in the short grid too (mutant 35). The weights are
// 2^(s − max) with the max about 4σ above the mean score: at flatScale their mean is about 0.93,
// and l about 74000 at 80000 tokens (at 69632 it stayed at 64800, below fp16's range: measured).
func overflowLength() int {
	if testing.Short() {
		return 80000
	}
	return longLen
}

// flatScale makes scores of unit-RMS queries and keys nearly equal (|score| ≲ 2⁻⁶ log2 units).
const flatScale = 1.0 / 1024

// TestDecodeLong: one split walking the whole request (the longest accumulation one workgroup
// does), 64 splits with MTP rows sharing K/V reads, a length that is not a multiple of the tile,
// and flat weights over zero-mean V; every format and both dtypes. The cases past 2^16 tokens in
// -short too (flat weights over V with mean 1, one split of more than 65504 tokens: the softmax
// denominator past fp16's range; gaussian weights past 2^16) are TestDecodeLongFirst's, which
// runs first.
func TestDecodeLong(t *testing.T) {
	device(t)
	cases := []*decodeCase{
		{f: kernelFormat(t, oracle.K3V4), dt: kernels.F16, g: 6, hkv: 1, splits: 1, qg: 1, mode: "decode", scale: 1.0 / 16, lens: []int{longLength(longLen)}},
		{f: kernelFormat(t, oracle.K3V3Compact), dt: kernels.BF16, g: 8, hkv: 1, splits: 64, qg: 4, mode: "mtp", run: 4, scale: 1.0 / 16, lens: []int{longLength(longLen)}},
		{f: kernelFormat(t, oracle.K3V3), dt: kernels.F16, g: 1, hkv: 2, splits: 7, qg: 2, mode: "decode", scale: flatScale, lens: []int{longLength(longLen) - 1, 5}},
	}
	for i, c := range cases {
		c.bs, c.pad, c.signs = 16, []string{"first", "mid", "last"}[i%3], signKinds[i%len(signKinds)]
		c.path = fmt.Sprintf("%d/len%v/%s/%s/g%d/hkv%d/splits%d/qg%d/%s/scale%g/vmean%g", i, c.lens, fmtName(c.f.ID), dtName(c.dt), c.g, c.hkv, c.splits, c.qg, c.mode, c.scale, c.vmean)
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			runDecodeCase(t, c)
		})
	}
}

// TestPrefillLong: a chunk after a 131072-token prefix, with gaussian and with flat weights; the
// first case asks for one split (one workgroup walks the whole prefix, then the chunk: where a
// long-context accumulation defect shows), the third for 6 on the mma tier (its split and merge at
// length; the tier's own choice may split a long prefix of few workgroups too).
func TestPrefillLong(t *testing.T) {
	lib(t)
	cases := []*prefillCase{
		{f: kernelFormat(t, oracle.K3V4), dt: kernels.F16, g: 6, hkv: 1, qlens: []int{16}, ctxs: []int{longLength(longLen) - 16}, scale: 1.0 / 16, splits: 1},
		{f: kernelFormat(t, oracle.K3V3Compact), dt: kernels.BF16, g: 2, hkv: 1, qlens: []int{3}, ctxs: []int{longLength(longLen) - 3}, scale: flatScale, lead: 5},
		{f: kernelFormat(t, oracle.K3V3), dt: kernels.F16, g: 2, hkv: 1, qlens: []int{5}, ctxs: []int{longLength(longLen) - 5}, scale: flatScale, splits: 6, tiers: mmaOnly},
	}
	for i, c := range cases {
		c.bs = 16
		c.path = fmt.Sprintf("%d/q%v/ctx%v/%s/%s/g%d/scale%g/splits%d", i, c.qlens, c.ctxs, fmtName(c.f.ID), dtName(c.dt), c.g, c.scale, c.splits)
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			runPrefillCase(t, c)
		})
	}
}
