package grids_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/corpus/golden"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/internal/settings"
	"github.com/octant-kv/octant/internal/settings/settingstest"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// goldenDir returns the directory of the upstream golden vectors (corpus/golden/upstream,
// unchanged copies of shared/golden): $OCTANT_GOLDEN, or found from the working directory (the
// package directory under go test; the repository root or grids/ for a copied test binary).
func goldenDir(t *testing.T) string {
	t.Helper()
	cands := []string{"../corpus/golden/upstream", "corpus/golden/upstream"}
	if d := settingstest.Get(t).Golden; d != "" {
		cands = []string{d}
	}
	for _, d := range cands {
		if _, err := os.Stat(filepath.Join(d, "attention.json.gz")); err == nil {
			return d
		}
	}
	t.Fatalf("upstream golden vectors not found in %v: run from the repository or grids/, or set %s to corpus/golden/upstream", cands, settings.GoldenEnv)
	return ""
}

// TestStoreGolden stores the K and V of every upstream golden slot (fp16 and bf16 inputs, in
// reverse slot order, into a cache of random bytes) and judges every slot under docs/format.md §10; it
// logs how many equal upstream's bytes exactly (the rest differ from upstream only by
// summation-order ties, which the oracle's canonical order resolves the other way).
func TestStoreGolden(t *testing.T) {
	l := lib(t)
	for _, id := range oracle.AllFormats {
		sf, err := golden.LoadSlots(fmt.Sprintf("%s/slots-%s.json.gz", goldenDir(t), id))
		if err != nil {
			t.Fatal(err)
		}
		signs, err := oracle.SignsFromInt32(sf.SignBitsI32, 256)
		if err != nil {
			t.Fatal(err)
		}
		for _, dt := range []kernels.Dtype{kernels.F16, kernels.BF16} {
			want := map[kernels.Dtype]string{kernels.F16: "float16", kernels.BF16: "bfloat16"}[dt]
			var cases []golden.SlotCase
			for _, gc := range sf.Cases {
				if gc.InputDtype == want {
					cases = append(cases, gc)
				}
			}
			if len(cases) == 0 {
				continue
			}
			path := fmt.Sprintf("%s/%s", fmtName(id), dtName(dt))
			t.Run(path, func(t *testing.T) {
				c := &storeCase{f: kernelFormat(t, id), dt: dt, hkv: 1, bs: 16, T: len(cases), ks: signs, vs: signs}
				c.nb = (len(cases) + c.bs - 1) / c.bs
				for i, gc := range cases {
					k, v, err := gc.Inputs()
					if err != nil {
						t.Fatal(err)
					}
					c.kf, c.vf = append(c.kf, k...), append(c.vf, v...)
					c.slots = append(c.slots, int64(len(cases)-1-i))
				}
				c.cache = randBytes(rand.New(rand.NewPCG(caseSeed("store-golden/"+path), 4)), oracle.CacheBytes(c.f, c.nb, 1, c.bs))
				v := c.run(t, l, "golden slots")
				view := newCache(t, c.f, v.Output, c.nb, 1, c.bs, false)
				data := c.f.OffScales() + 2*c.f.NumScales()
				upstream := 0
				for i, gc := range cases {
					s := int(c.slots[i])
					if bytes.Equal(view.Slot(s/c.bs, 0, s%c.bs)[:data], gc.Slot[:data]) {
						upstream++
					}
				}
				t.Logf("%d golden slots: %d identical to the oracle, %d explained; %d byte-identical to upstream", len(cases), v.Judged-v.Explained, v.Explained, upstream)
			})
		}
	}
}

// TestDecodeGolden runs decode on every upstream golden attention case (corpus/golden/upstream:
// the reference's caches, fp16 queries and float32 outputs) with 1 and 5 splits and query groups 1
// and 4, on every decode tier: the harness's judgement (declared profile bound, exact attention,
// padding rows exactly zero, canaries, inputs unchanged, the same bits twice), and the output
// within ContractRelL2 of the reference's float32 output (upstream's own test).
func TestDecodeGolden(t *testing.T) {
	l := lib(t)
	af, err := golden.LoadAttention(goldenDir(t)+"/attention.json.gz", oracle.SlotBytesFor)
	if err != nil {
		t.Fatal(err)
	}
	for _, gc := range af.Cases {
		in, err := af.DecodeInput(gc)
		if err != nil {
			t.Fatal(err)
		}
		ref := make([]float64, in.NumQ()*in.NumQHeads*in.Cache.F.HeadSize)
		for i, b := range gc.OutF32.U32() {
			ref[i] = float64(oracle.F32FromBits(b))
		}
		for _, ns := range []int{1, 5} {
			for _, qg := range []int{1, 4} {
				path := fmt.Sprintf("%s/splits%d/qg%d", gc.Name, ns, qg)
				t.Run(path, func(t *testing.T) {
					call := &harness.DecodeCall{In: in, Dtype: harness.F16, NumSplits: ns, QueryGroup: qg}
					harnesstest.ForEachImpl(t, l, arch.Decode, func(t *testing.T, im harness.Impl) {
						v := harness.Check(l, im, call)
						report(t, "decode of a golden case", v)
						if v.Output == nil {
							return
						}
						got := actsToF64(kernels.BytesUint16(v.Output), kernels.F16)
						if rel := oracle.RelL2(got, ref); !(rel < oracle.ContractRelL2) {
							failf(t, "golden case %s: relative L2 distance from the upstream reference's output %.4g, expected < %g", gc.Name, rel, oracle.ContractRelL2)
						}
					})
				})
			}
		}
	}
}
