package grids_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// prefillCase is one prefill call (docs/contract.md §3.5): sequences with a cached prefix (quantized
// by the oracle into a cache of random bytes) and a chunk of new tokens (q, k, v already rotated).
// The cache slots of the chunk's own positions are poisoned (scales +inf/NaN): prefill must read
// the chunk exactly from k and v, never from the cache.
type prefillCase struct {
	path   string
	f      oracle.Format
	dt     kernels.Dtype
	g, hkv int
	bs     int
	lbnhc  bool
	qlens  []int // per sequence
	ctxs   []int // per sequence: cached prefix tokens (seq_len = ctx + qlen, or less: see short)
	short  []bool
	lead   int  // rows before cu_seqlens_q[0] (in no sequence)
	trail  int  // rows after the last sequence (in no sequence)
	fused  bool // q, k, v views into one fused tensor; out with a row gap
	holes  bool
	clamp  bool // max_blocks·block_size smaller than a context: ctx is clamped
	splits int  // octave_prefill's num_splits (0: the tier chooses; the mma tier's prefix splits)
	scale  float32
	// tiers, when set, runs first in every implementation's subtest (to skip tiers the case is not
	// for: portableOnly for block sizes that are not multiples of 16).
	tiers func(t *testing.T, im harness.Impl)
}

// prefillSetup is a built prefill case.
type prefillSetup struct {
	c                    *prefillCase
	T, hq, nb, maxBlocks int
	cu, seqLens, bt      []int32
	cache                []byte
	in                   *oracle.PrefillInput
}

func (c *prefillCase) build(t *testing.T, rng *rand.Rand) *prefillSetup {
	t.Helper()
	s := &prefillSetup{c: c, hq: c.g * c.hkv}
	S := len(c.qlens)
	s.cu = []int32{int32(c.lead)}
	s.seqLens = make([]int32, S)
	nblk := make([]int, S)
	total := 0
	for i := 0; i < S; i++ {
		s.cu = append(s.cu, s.cu[i]+int32(c.qlens[i]))
		s.seqLens[i] = int32(c.ctxs[i] + c.qlens[i])
		if c.short != nil && c.short[i] {
			s.seqLens[i] = int32(c.qlens[i] / 2) // seq_len < q_len: no prefix (ctx clamps to 0)
		}
		nblk[i] = (c.ctxs[i] + c.qlens[i] + c.bs - 1) / c.bs
		total += nblk[i]
		s.maxBlocks = max(s.maxBlocks, nblk[i])
	}
	if c.clamp {
		s.maxBlocks = max(1, (c.ctxs[0]-1)/c.bs) // max_blocks·block_size < ctx: the prefix is clamped
	}
	s.maxBlocks = max(1, s.maxBlocks)
	s.T = int(s.cu[S]) + c.trail
	s.nb = total + 1 + rng.IntN(2)
	s.bt = randomBlockTable(rng, nblk, s.maxBlocks, s.nb, []int32{-1, int32(s.nb), math.MaxInt32, math.MinInt32}, c.holes)
	s.cache = randBytes(rng, oracle.CacheBytes(c.f, s.nb, c.hkv, c.bs))
	view := newCache(t, c.f, s.cache, s.nb, c.hkv, c.bs, c.lbnhc)
	signs := oracle.DefaultSigns(256)
	qz, err := oracle.NewQuantizer(c.f, signs, signs)
	must(t, err, "quantizer")
	k, v := make([]float32, 256), make([]float32, 256)
	for i := 0; i < S; i++ {
		ctx := max(0, min(int(s.seqLens[i])-c.qlens[i], s.maxBlocks*c.bs))
		for lb := 0; lb < min(nblk[i], s.maxBlocks); lb++ {
			id := int(s.bt[i*s.maxBlocks+lb])
			if id < 0 || id >= s.nb {
				continue
			}
			for o := 0; o < c.bs; o++ {
				pos := lb*c.bs + o
				for h := 0; h < c.hkv; h++ {
					slot := view.Slot(id, h, o)
					if pos >= ctx {
						poisonSlot(c.f, slot, pos%2 == 0)
						continue
					}
					for d := range k {
						k[d] = fromAct(toAct(float32(rng.NormFloat64()), c.dt), c.dt)
						v[d] = fromAct(toAct(float32(rng.NormFloat64()), c.dt), c.dt)
					}
					qz.QuantizeInto(slot, k, v)
				}
			}
		}
	}
	_, qf := randRows(rng, s.T*s.hq, c.dt, gaussian)
	_, kf := randRows(rng, s.T*c.hkv, c.dt, gaussian)
	_, vf := randRows(rng, s.T*c.hkv, c.dt, gaussian)
	s.in = &oracle.PrefillInput{Cache: newCache(t, c.f, s.cache, s.nb, c.hkv, c.bs, c.lbnhc), Q: qf, K: kf, V: vf, NumTokens: s.T, NumQHeads: s.hq,
		CuSeqlensQ: s.cu, SeqLens: s.seqLens, BlockTable: s.bt, MaxBlocks: s.maxBlocks, SMScale: float64(c.scale)}
	must(t, s.in.Validate(), "prefill input")
	return s
}

// runPrefillCase builds a case and judges it on every prefill tier (harness.PrefillCall: rows of
// no sequence untouched, every element within the declared profile pair's bound, the contract
// distance from exact prefill over the written rows, canaries, inputs and gaps intact, the same
// bits twice). A fused case passes q, k and v as views into one tensor and output rows with a
// 32-element gap.
func runPrefillCase(t *testing.T, c *prefillCase) {
	l := lib(t)
	rng := rand.New(rand.NewPCG(caseSeed("prefill/"+c.path), 7))
	t0 := time.Now()
	s := c.build(t, rng)
	call := &harness.PrefillCall{In: s.in, Dtype: harness.DtypeOf(c.dt), Fused: c.fused, Splits: c.splits}
	if c.fused {
		call.OutPad = 32
	}
	tBuild := time.Since(t0)
	harnesstest.ForEachImpl(t, l, arch.Prefill, func(t *testing.T, im harness.Impl) {
		if c.tiers != nil {
			c.tiers(t, im)
		}
		t1 := time.Now()
		report(t, "prefill", harness.Check(l, im, call))
		t.Logf("T %d, Hq %d, qlens %v, ctxs %v, num_blocks %d, max_blocks %d: build %v, prefill twice+oracle+check %v",
			s.T, s.hq, c.qlens, c.ctxs, s.nb, s.maxBlocks, tBuild.Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	})
}

// prefillAxes are the prefill grid's axes (pairwise in -short mode, every triple in full mode).
func prefillAxes() []axis {
	return []axis{
		{"fmt", []string{"k3v3", "k3v4", "k3v3c"}},
		{"dt", []string{"f16", "bf16"}},
		{"g", []string{"g1", "g2", "g3", "g6", "g8"}},
		{"hkv", []string{"hkv1", "hkv2"}},
		{"bs", []string{"bs16", "bs32", "bs48", "bs64"}},
		{"lay", []string{"lbhnc", "lbnhc"}},
		{"seqs", []string{"one", "many", "ctx0", "short", "clamp"}},
		{"rows", []string{"exact", "lead", "trail"}},
		{"view", []string{"contig", "fused"}},
		{"bt", []string{"bt", "holes"}},
		{"split", []string{"auto", "split3"}},
	}
}

// TestPrefillGrid runs the covering grid of prefill cases on every prefill tier. Sequence shapes:
// one chunk after a prefix; several sequences (upstream's [129, 1, 517] with contexts 2500, 0,
// 4100, scaled down in -short mode); chunks without prefix; sequences with seq_len < q_len and
// empty ones; a context longer than max_blocks·block_size (clamped). Rows before cu_seqlens_q[0] or
// after the last sequence must stay untouched.
func TestPrefillGrid(t *testing.T) {
	lib(t)
	strength := 3
	if testing.Short() {
		strength = 2
	}
	axes := prefillAxes()
	grid, err := buildGrid(axes, strength, nil, *seedFlag)
	if err != nil {
		t.Fatal(err)
	}
	// work bounds Σ rows·heads·(ctx + chunk) for the oracle: ~6e5 per second per core.
	work := 150_000
	if !testing.Short() {
		work = 4_000_000
	}
	t.Logf("%d cases covering every %d-way combination of %d axes (seed %d)", len(grid), strength, len(axes), *seedFlag)
	for i, gc := range grid {
		rng := rand.New(rand.NewPCG(*seedFlag, 1000+uint64(i)))
		c := &prefillCase{f: kernelFormat(t, storeFormats[gc["fmt"]]), dt: kernels.F16, lbnhc: gc["lay"] == "lbnhc", fused: gc["view"] == "fused",
			holes: gc["bt"] == "holes", scale: smScales[i%len(smScales)]}
		if gc["dt"] == "bf16" {
			c.dt = kernels.BF16
		}
		fmt.Sscanf(gc["g"], "g%d", &c.g)
		fmt.Sscanf(gc["hkv"], "hkv%d", &c.hkv)
		fmt.Sscanf(gc["bs"], "bs%d", &c.bs)
		switch gc["rows"] {
		case "lead":
			c.lead = 1 + rng.IntN(9)
		case "trail":
			c.trail = 1 + rng.IntN(9)
		}
		ctxList := []int{1, c.bs - 1, c.bs, c.bs + 1, 3*c.bs + 1, 300, 1000, 2500, 4100}
		qList := []int{1, 7, 8, 9, 33, 129, 300, 517}
		switch gc["seqs"] {
		case "one":
			c.qlens, c.ctxs = []int{qList[i%len(qList)]}, []int{ctxList[i%len(ctxList)]}
		case "clamp":
			c.qlens, c.ctxs, c.clamp = []int{qList[i%4]}, []int{max(ctxList[i%len(ctxList)], 2*c.bs+1)}, true
		case "many":
			c.qlens, c.ctxs = []int{129, 1, 517}, []int{2500, 0, 4100}
		case "ctx0":
			c.qlens, c.ctxs = []int{qList[(i+3)%len(qList)], qList[(i+5)%len(qList)]}, []int{0, 0}
		case "short":
			c.qlens, c.ctxs = []int{20, 0, 12, 5}, []int{50, 0, 100, 3}
			c.short = []bool{true, false, false, true}
		}
		cost := func() int {
			w := 0
			for j, q := range c.qlens {
				w += q * (c.ctxs[j] + (q+1)/2)
			}
			return w * c.g * c.hkv
		}
		for cost() > work {
			j := 0
			for k := range c.qlens {
				if c.qlens[k]*(c.ctxs[k]+c.qlens[k]) > c.qlens[j]*(c.ctxs[j]+c.qlens[j]) {
					j = k
				}
			}
			if c.ctxs[j] > c.qlens[j] && (!c.clamp || c.ctxs[j] > 4*c.bs) {
				c.ctxs[j] /= 2
			} else if c.qlens[j] > 1 {
				c.qlens[j] /= 2
			} else {
				break
			}
		}
		c.path = fmt.Sprintf("%s/%s/g%d/hkv%d/bs%d/%s/%s/%s/%s/%s", gc["fmt"], gc["dt"], c.g, c.hkv, c.bs, gc["lay"], gc["seqs"], gc["rows"], gc["view"], gc["bt"])
		if gc["split"] == "split3" {
			c.splits, c.path = 3, c.path+"/split3"
		}
		t.Run(c.path, func(t *testing.T) {
			selectGridCase(t, i)
			runPrefillCase(t, c)
		})
	}
}

// TestPrefillTiles runs prefill shapes at the edges of the WMMA tier's geometry (16 query rows and
// 16 tokens per tile) on every prefill tier: chunks and prefixes of 15, 16, 17, 31–33 tokens;
// several sequences whose rows straddle 16-row tiles (rows before cu_seqlens_q[0] shift them);
// GQA groups the grid does not draw (5, 7: prefill takes any G ≥ 1); block size 7 on the portable
// tier only (docs/format.md §7 asks native kernels for multiples of 16).
func TestPrefillTiles(t *testing.T) {
	lib(t)
	type shape struct {
		qlens, ctxs []int
		lead        int
	}
	shapes := []shape{
		{[]int{1}, []int{15}, 0}, {[]int{15}, []int{16}, 0}, {[]int{16}, []int{17}, 0}, {[]int{17}, []int{0}, 0},
		{[]int{31}, []int{31}, 0}, {[]int{32}, []int{33}, 1}, {[]int{33}, []int{47}, 15}, {[]int{16}, []int{0}, 16},
		{[]int{5, 11, 16, 3}, []int{17, 0, 33, 15}, 7}, {[]int{1, 1, 1, 1, 1}, []int{16, 15, 0, 48, 1}, 13},
		{[]int{20, 12}, []int{64, 63}, 9}, {[]int{9, 30}, []int{0, 100}, 3},
	}
	groups := []int{1, 5, 7, 2, 3, 8}
	sizes := []int{16, 48, 7, 32}
	formats := []string{"k3v4", "k3v3", "k3v3c"}
	for i, sh := range shapes {
		c := &prefillCase{f: kernelFormat(t, storeFormats[formats[i%3]]), dt: kernels.F16, g: groups[i%len(groups)], hkv: 1 + i%2,
			bs: sizes[i%len(sizes)], lbnhc: i%3 == 1, qlens: sh.qlens, ctxs: sh.ctxs, lead: sh.lead, trail: i % 4, fused: i%4 == 3,
			holes: i%5 == 2, scale: smScales[i%len(smScales)]}
		if i%2 == 1 {
			c.dt = kernels.BF16
		}
		if c.bs%16 != 0 {
			c.tiers = portableOnly
		}
		c.path = fmt.Sprintf("q%v/ctx%v/lead%d/%s/%s/g%d/hkv%d/bs%d", sh.qlens, sh.ctxs, sh.lead, formats[i%3], dtName(c.dt), c.g, c.hkv, c.bs)
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			runPrefillCase(t, c)
		})
	}
}

// mmaOnly skips every implementation but the mma tier (cases about its prefix splits).
func mmaOnly(t *testing.T, im harness.Impl) {
	if im.Oracle || im.Tier.Tier != kernels.TierMMA {
		t.Skip("prefix splits are the mma tier's (octave_prefill num_splits; other tiers ignore it)")
	}
}

// TestPrefillSplits runs the mma tier's prefix splits (octave_prefill num_splits) at their edges,
// judged like every prefill case: more splits than the prefix has 32-token tiles (empty splits
// that write an empty partial), prefixes of 0, 1, 31–33 and 64 tokens, split boundaries inside a
// block and at one, several sequences of different contexts in one workgroup (each row set split
// on its own), rows of no sequence before and after (the merge must not write them), G 6 and 8,
// 64 splits (the most), and bf16 (served without splits).
func TestPrefillSplits(t *testing.T) {
	lib(t)
	type shape struct {
		qlens, ctxs []int
		splits      int
		lead, trail int
	}
	shapes := []shape{
		{[]int{40}, []int{100}, 2, 0, 0}, {[]int{7}, []int{1000}, 3, 3, 2}, {[]int{33}, []int{33}, 5, 0, 0},
		{[]int{16}, []int{64}, 64, 1, 0}, {[]int{5, 11, 16, 3}, []int{300, 0, 31, 1}, 4, 7, 5},
		{[]int{129, 1, 60}, []int{700, 0, 410}, 7, 0, 3}, {[]int{20}, []int{0}, 3, 2, 0}, {[]int{1}, []int{513}, 2, 0, 0},
	}
	groups := []int{6, 8, 1, 3}
	sizes := []int{16, 32, 48}
	formats := []string{"k3v4", "k3v3", "k3v3c"}
	for i, sh := range shapes {
		c := &prefillCase{f: kernelFormat(t, storeFormats[formats[i%3]]), dt: kernels.F16, g: groups[i%len(groups)], hkv: 1 + i%2,
			bs: sizes[i%len(sizes)], lbnhc: i%3 == 2, qlens: sh.qlens, ctxs: sh.ctxs, lead: sh.lead, trail: sh.trail, fused: i%4 == 1,
			holes: i%3 == 1, splits: sh.splits, scale: smScales[i%len(smScales)], tiers: mmaOnly}
		if i == len(shapes)-1 {
			c.dt = kernels.BF16
		}
		c.path = fmt.Sprintf("q%v/ctx%v/splits%d/lead%d/%s/%s/g%d/hkv%d/bs%d", sh.qlens, sh.ctxs, sh.splits, sh.lead, formats[i%3], dtName(c.dt), c.g, c.hkv, c.bs)
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			runPrefillCase(t, c)
		})
	}
}
