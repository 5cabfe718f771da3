package grids_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// TestDecodeIsolation: per-row isolation inside a row set (docs/contract.md §3.3, cases.CheckIsolation).
// Each case is an MTP run or a short chunk whose rows share workgroups (query_group 2..4) beside
// single decode rows; it is judged on every decode tier with the clean cache, then with the slots
// of positions [cut, klen_long) of each request poisoned (random codes, fp16 NaN and ±inf scales),
// the cut at one of the request's row klens (the shortest in the first cases, later ones further
// in). Rows that attend none of the poisoned slots must keep their output bits on every tier that
// does not declare coupled rows (arch.Tier.CouplesRows); every tier must pass both judgements.
func TestDecodeIsolation(t *testing.T) {
	l := lib(t)
	t.Logf("tiers %v", l.TierNames())
	runs := []int{2, 3, 4, 5, 8, 16}
	ctxs := []int{0, 17, 63, 200}
	for i := 0; i < 12; i++ {
		c := &decodeCase{f: kernelFormat(t, oracle.AllFormats[i%3]), dt: []kernels.Dtype{kernels.F16, kernels.BF16}[i/3%2],
			g: oracle.AllowedGroups[i%5], hkv: 1 + i%2, bs: []int{16, 32, 48, 64}[i%4], lbnhc: i%3 == 1, splits: []int{1, 7, 64, 3}[i%4],
			qg: 2 + i%3, mode: []string{"mtp", "chunk"}[i%2], run: runs[i%len(runs)], ctx0: ctxs[i/2%len(ctxs)],
			pad: []string{"first", "mid", "last"}[i%3], signs: signKinds[i%len(signKinds)], scale: 1.0 / 16,
			lens: []int{[]int{33, 129, 300, 700}[i%4], 65}}
		if c.mode == "chunk" {
			c.run += 7 // a chunk has more rows than a draft run
		}
		c.path = fmt.Sprintf("%d/%s%d/%s/%s/g%d/hkv%d/bs%d/%s/splits%d/qg%d", i, c.mode, c.run, fmtName(c.f.ID), dtName(c.dt), c.g, c.hkv, c.bs, layoutName(c.lbnhc), c.splits, c.qg)
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			seed := caseSeed("isolation/" + c.path)
			rng := rand.New(rand.NewPCG(seed, 2))
			t0 := time.Now()
			s := c.build(t, l, rng)
			cuts := cases.IsolationCuts(s.in, i/2)
			iso, err := cases.CheckIsolation(l, s.call(), cuts, seed)
			if errors.Is(err, cases.ErrNoSiblings) {
				fatalf(t, "the case asks nothing: cuts %v poison %d slots and no compared row shares a request with a row that reads them", cuts, iso.Slots)
			}
			if err != nil {
				fatalf(t, "decode isolation: %v", err)
			}
			t.Logf("cuts %v: %d slots poisoned, %d rows compared beside a row that reads them, bit for bit on every tier not declaring coupled rows (%v)",
				cuts, iso.Slots, iso.Siblings, time.Since(t0).Round(time.Millisecond))
		})
	}
}
