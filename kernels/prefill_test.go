package kernels_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// prefillCase is one prefill call (KERNELS.md §3.5): sequences with a cached prefix (quantized
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
	scale  float32
}

// prefillSetup is a built prefill case.
type prefillSetup struct {
	c                        *prefillCase
	T, hq, nb, maxBlocks     int
	cu, seqLens, bt          []int32
	q, k, v                  []uint16
	cache                    []byte
	in                       *oracle.PrefillInput
	written                  []bool
	exact                    []float64
	qTok, kvTok, outTok, wid int
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
	var qf, kf, vf []float32
	s.q, qf = randRows(rng, s.T*s.hq, c.dt, gaussian)
	s.k, kf = randRows(rng, s.T*c.hkv, c.dt, gaussian)
	s.v, vf = randRows(rng, s.T*c.hkv, c.dt, gaussian)
	s.in = &oracle.PrefillInput{Cache: newCache(t, c.f, s.cache, s.nb, c.hkv, c.bs, c.lbnhc), Q: qf, K: kf, V: vf, NumTokens: s.T, NumQHeads: s.hq,
		CuSeqlensQ: s.cu, SeqLens: s.seqLens, BlockTable: s.bt, MaxBlocks: s.maxBlocks, SMScale: float64(c.scale)}
	must(t, s.in.Validate(), "prefill input")
	s.exact, s.written, err = oracle.ExactPrefill(s.in)
	must(t, err, "oracle.ExactPrefill")
	return s
}

// prefillOn runs prefill for a tier; returns the output bits [T][hq][256].
func (s *prefillSetup) prefillOn(t *testing.T, dev *kernels.Device, tier kernels.TierDesc, what string) []uint16 {
	t.Helper()
	c := s.c
	bufs := newBufSet(t, dev)
	var qp, kp, vp uintptr
	qTok, kvTok := s.hq*256, c.hkv*256
	if c.fused {
		w := (s.hq + 2*c.hkv) * 256
		f := make([]uint16, s.T*w)
		for i := 0; i < s.T; i++ {
			copy(f[i*w:], s.q[i*s.hq*256:(i+1)*s.hq*256])
			copy(f[i*w+s.hq*256:], s.k[i*c.hkv*256:(i+1)*c.hkv*256])
			copy(f[i*w+(s.hq+c.hkv)*256:], s.v[i*c.hkv*256:(i+1)*c.hkv*256])
		}
		b := bufs.input("qkv", kernels.Uint16Bytes(f))
		qp, kp, vp = b.Ptr, b.Ptr+uintptr(s.hq*512), b.Ptr+uintptr((s.hq+c.hkv)*512)
		qTok, kvTok = w, w
	} else {
		qp = bufs.input("q", kernels.Uint16Bytes(s.q)).Ptr
		kp = bufs.input("k", kernels.Uint16Bytes(s.k)).Ptr
		vp = bufs.input("v", kernels.Uint16Bytes(s.v)).Ptr
	}
	cache := bufs.input("cache", s.cache)
	bt := bufs.input("block_table", kernels.Int32Bytes(s.bt))
	cu := bufs.input("cu_seqlens_q", kernels.Int32Bytes(s.cu))
	sl := bufs.input("seq_lens", kernels.Int32Bytes(s.seqLens))
	outTok := s.hq * 256
	if c.fused {
		outTok += 32
	}
	out := bufs.output("out", 2*max(1, s.T)*outTok, 0xFF)
	maxq := 0
	for _, q := range c.qlens {
		maxq = max(maxq, q)
	}
	a := kernels.PrefillArgs{Out: out.Ptr, Q: qp, K: kp, V: vp, Cache: cache.Ptr, BlockTable: bt.Ptr, CuSeqlensQ: cu.Ptr, SeqLens: sl.Ptr,
		OutStrideToken: int64(outTok), OutStrideHead: 256, QStrideToken: int64(qTok), QStrideHead: 256, KStrideToken: int64(kvTok), KStrideHead: 256,
		VStrideToken: int64(kvTok), VStrideHead: 256, CacheStrideBlock: int64(s.in.Cache.StrideBlock), CacheStrideHead: int64(s.in.Cache.StrideHead),
		CacheStrideToken: int64(s.in.Cache.StrideToken), Fmt: int32(c.f.ID), Dtype: c.dt, HeadSize: 256, Tier: tier.Tier, NumTokens: int32(s.T),
		NumSeqs: int32(len(c.qlens)), NumQHeads: int32(s.hq), NumKVHeads: int32(c.hkv), NumBlocks: int32(s.nb), BlockSize: int32(c.bs),
		MaxBlocks: int32(s.maxBlocks), MaxQueryLen: int32(maxq), SMScale: c.scale}
	if err := dev.Prefill(a); err != nil {
		fatalf(t, "%s: prefill: %v", what, err)
	}
	must(t, dev.Sync(), what+": sync after prefill")
	bufs.checkCanaries(t, what)
	bufs.checkInputs(t, what)
	got, err := kernels.UnpackRows(read(t, out), s.T, s.hq*256, outTok)
	if err != nil {
		fatalf(t, "%s: out: %v", what, err)
	}
	return got
}

// check judges a prefill output: rows of no sequence untouched; every element of the other rows
// within the tier's declared profile bound (prefill-fp32: exact prefill attention with the bound
// of docs/bounds.md, "prefill-fp32"); the written rows within ContractRelL2 of exact prefill.
func (s *prefillSetup) check(t *testing.T, tier kernels.TierDesc, raw []uint16, what string) {
	t.Helper()
	c := s.c
	rowLen := s.hq * 256
	for i := 0; i < s.T; i++ {
		if s.written[i] {
			continue
		}
		for j := i * rowLen; j < (i+1)*rowLen; j++ {
			if raw[j] != 0xFFFF {
				failf(t, "%s: row %d belongs to no sequence (cu_seqlens_q %v) but %s was written: %#04x", what, i, s.cu, elemAt(j, s.hq), raw[j])
				break
			}
		}
	}
	prefix, chunk, err := oracle.ParsePrefillProfile(tier.PrefillProfile)
	if err != nil {
		t.Fatalf("tier %s: %v: the oracle has no prefill model for it", tier.Name, err)
	}
	res, err := oracle.PrefillProfile(prefix, chunk, s.in, oracle.ProfileOptions{Out: outDtype(c.dt)})
	must(t, err, "oracle.PrefillProfile")
	got := actsToF64(raw, c.dt)
	for i := 0; i < s.T; i++ {
		if !s.written[i] {
			for j := i * rowLen; j < (i+1)*rowLen; j++ {
				got[j] = math.NaN() // not judged here (checked untouched above)
			}
		}
	}
	worst, ratio := res.Check(got)
	if ratio > 1 {
		failf(t, "%s: tier %s (profile %s): %s = %.9g, profile model %.9g ± bound %.3g (|error| = %.3g, %.3g × the bound); exact prefill %.9g",
			what, tier.Name, tier.PrefillProfile, elemAt(worst, s.hq), got[worst], res.Model[worst], res.Bound[worst], math.Abs(got[worst]-res.Model[worst]), ratio, s.exact[worst])
	}
	var g, e []float64
	for i := 0; i < s.T; i++ {
		if s.written[i] {
			g = append(g, got[i*rowLen:(i+1)*rowLen]...)
			e = append(e, s.exact[i*rowLen:(i+1)*rowLen]...)
		}
	}
	rel, ok := oracle.ContractCheck(g, e)
	if !ok {
		failf(t, "%s: tier %s: relative L2 distance from exact prefill %.4g over the written rows, expected < %g (KERNELS.md §5 contract)", what, tier.Name, rel, oracle.ContractRelL2)
	}
	t.Logf("%s: worst |error|/bound %.3g (%s), relative L2 from exact prefill %.3g", what, ratio, tier.PrefillProfile, rel)
}

func runPrefillCase(t *testing.T, c *prefillCase) {
	dev := device(t)
	rng := rand.New(rand.NewPCG(caseSeed("prefill/"+c.path), 7))
	t0 := time.Now()
	s := c.build(t, rng)
	tBuild := time.Since(t0)
	forEachTier(t, kernels.OpPrefill, func(t *testing.T, tier kernels.TierDesc) {
		t1 := time.Now()
		raw := s.prefillOn(t, dev, tier, "prefill")
		tDev := time.Since(t1)
		t2 := time.Now()
		s.check(t, tier, raw, "prefill")
		tCheck := time.Since(t2)
		if blocks := (s.T + 7) / 8 * s.hq; !testing.Short() || blocks <= 64 {
			raw2 := s.prefillOn(t, dev, tier, "prefill (second run)")
			for j := range raw {
				if raw[j] != raw2[j] {
					failf(t, "nondeterministic result: race? prefill run twice on the same inputs: %s = %#04x, then %#04x", elemAt(j, s.hq), raw[j], raw2[j])
					break
				}
			}
		}
		t.Logf("T %d, Hq %d, qlens %v, ctxs %v, num_blocks %d, max_blocks %d: build+exact %v, prefill %v, profile+check %v",
			s.T, s.hq, c.qlens, c.ctxs, s.nb, s.maxBlocks, tBuild.Round(time.Millisecond), tDev.Round(time.Millisecond), tCheck.Round(time.Millisecond))
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
	}
}

// TestPrefillGrid runs the covering grid of prefill cases on every prefill tier. Sequence shapes:
// one chunk after a prefix; several sequences (upstream's [129, 1, 517] with contexts 2500, 0,
// 4100, scaled down in -short mode); chunks without prefix; sequences with seq_len < q_len and
// empty ones; a context longer than max_blocks·block_size (clamped). Rows before cu_seqlens_q[0] or
// after the last sequence must stay untouched.
func TestPrefillGrid(t *testing.T) {
	device(t)
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
		t.Run(c.path, func(t *testing.T) {
			selectGridCase(t, i)
			runPrefillCase(t, c)
		})
	}
}
