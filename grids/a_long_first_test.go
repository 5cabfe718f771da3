package grids_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// This file's name sorts before every other external test file of the package, so that its test
// is the first of them that go test runs (files in name order, tests in source order; the
// package's internal test files, the model tests without long cases, run before all external ones), and
// the first phase of every kill run of `octant mutate` names it (mutate/phases.go): a defect that
// shows only past 2^16 tokens is caught in the first seconds of a run, not after the whole decode
// grid. TestLongFirstOrder (order_test.go) checks both.

// firstLongLen is the gaussian case's length: past 2^16 by more than a tenth (8191 tokens, not a
// multiple of any tile), in -short too, so that a token index, a tile count or a block offset kept
// in 16 bits wraps over many of the tokens that carry the output.
const firstLongLen = 1<<16 + 8191

// TestDecodeLongFirst: decode past 2^16 tokens on every decode tier, run first. One split walks
// the whole request in both cases (the longest accumulation one workgroup does), with MTP rows
// sharing K/V reads: gaussian weights over zero-mean V (a token past 2^16 dropped or read from the
// wrong place moves the output far) and flat weights over V with mean 1 (the softmax denominator
// past fp16's 65504: overflowLength, mutants 35 and 40). The gaussian case also proves it can
// fail: on a fixture of the portable tier that reads the block table with a 16-bit token index
// (wrap16) it must be a Fail (measured on the emulator: relative L2 0.48 from the model, where
// the flat case passes such a tier).
func TestDecodeLongFirst(t *testing.T) {
	device(t)
	cases := []*decodeCase{
		{f: kernelFormat(t, oracle.K3V4), dt: kernels.F16, g: 2, hkv: 1, splits: 1, qg: 2, mode: "mtp", run: 2, scale: 1.0 / 16, lens: []int{firstLongLen}, pad: "last"},
		{f: kernelFormat(t, oracle.K3V4), dt: kernels.BF16, g: 2, hkv: 1, splits: 1, qg: 3, mode: "mtp", run: 3, scale: flatScale, lens: []int{overflowLength()}, vmean: 1, pad: "mid"},
	}
	for i, c := range cases {
		c.bs, c.signs = 16, signKinds[i%len(signKinds)]
		c.path = fmt.Sprintf("%d/len%v/%s/%s/g%d/hkv%d/splits%d/qg%d/%s%d/scale%g/vmean%g", i, c.lens, fmtName(c.f.ID), dtName(c.dt), c.g, c.hkv, c.splits, c.qg, c.mode, c.run, c.scale, c.vmean)
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			l := lib(t)
			rng := rand.New(rand.NewPCG(caseSeed("decode/"+c.path), 2))
			t0 := time.Now()
			s := c.build(t, l, rng)
			call := s.call()
			t.Logf("num_q %d, Hq %d, lens %v: build+store %v", s.nq, s.hq, c.lens, time.Since(t0).Round(time.Millisecond))
			harnesstest.ForEachImpl(t, l, arch.Decode, func(t *testing.T, im harness.Impl) {
				t1 := time.Now()
				report(t, "decode", harness.Check(l, im, call))
				t.Logf("decode twice+oracle+check %v", time.Since(t1).Round(time.Millisecond))
			})
			if i != 0 || l.Ops != nil || !l.Offers(arch.Decode, arch.Portable) {
				return
			}
			t.Run("wrap16-fixture", func(t *testing.T) {
				bad := *l
				bad.Ops = &wrap16{Kernels: l.Dev, dev: l.Dev}
				im := harness.Impl{Name: harness.PortableImpl}
				for _, tr := range l.Tiers {
					if tr.Name == arch.Portable {
						im.Tier = tr
					}
				}
				v := harness.Check(&bad, im, call)
				if !v.Failed() {
					failf(t, "the portable tier reading its block table with a 16-bit token index passes this case: %v", v)
					return
				}
				t.Logf("a 16-bit token index fails as it must: %v", v.Err)
			})
		})
	}
}

// wrap16 is a fixture of a library: its decode reads the block table as a kernel whose token
// index is kept in 16 bits would (token t read at position t mod 2^16: every entry of a logical
// block at or past 2^16 / block_size replaced by the entry 2^16 / block_size before it).
type wrap16 struct {
	harness.Kernels
	dev *kernels.Device
}

func (w *wrap16) Decode(a kernels.DecodeArgs) error {
	mb, n := int(a.MaxBlocks), int(a.NumReqs)*int(a.MaxBlocks)
	b, err := w.dev.Alloc(4*n, 0)
	if err != nil {
		return err
	}
	defer b.Free()
	if n > 0 {
		if err := w.dev.CopyD2D(b.Ptr, a.BlockTable, uint64(4*n)); err != nil {
			return err
		}
	}
	table, err := b.Bytes()
	if err != nil {
		return err
	}
	at := (1 << 16) / int(a.BlockSize)
	for r := 0; r < int(a.NumReqs); r++ {
		for lb := at; lb < mb; lb++ {
			copy(table[4*(r*mb+lb):][:4], table[4*(r*mb+lb-at):][:4])
		}
	}
	if err := b.Write(0, table); err != nil {
		return err
	}
	a.BlockTable = b.Ptr
	return w.Kernels.Decode(a)
}
