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

// decodeCase is one decode batch of the grid (docs/contract.md §3.3): a packed cache of random bytes in
// which the requests' context tokens are quantized by the oracle, their new tokens stored by the
// kernel's cache_store (as vLLM runs store before attention), every slot no query may read poisoned
// (scales +inf/NaN), and query maps built as vLLM's metadata builder does (oracle.BuildQueryMaps)
// with padding rows inserted.
type decodeCase struct {
	path    string
	f       oracle.Format
	dt      kernels.Dtype
	g, hkv  int
	bs      int
	lbnhc   bool
	splits  int
	qg      int
	pstride int     // partial_stride argument (0: the default 260)
	mode    string  // "decode", "mtp" (a run of draft tokens), "chunk" (a short chunk)
	run     int     // query tokens of request 0 (mtp, chunk)
	ctx0    int     // context of request 0 (chunk)
	pad     string  // where padding rows go: "first", "mid", "last"
	signs   string  // signKinds
	fused   bool    // query a view into a fused QKV tensor, out with a row gap
	holes   bool    // block ids outside [0, num_blocks) inside some requests' lengths
	scale   float32 // sm_scale
	lens    []int   // seq_len of each request (request 0: see mode)
	outlier bool    // query and K with an outlier dim (×8, as upstream's test)
	// sharp draws K with a per-token RMS in [0.5, 4] instead of [0.9, 1.1]: peaky attention, many
	// running-max rescales. The dot4-int8q profile itself is then often farther than
	// ContractRelL2 from exact attention (its int8 query error grows with the score range): the
	// harness reports that as a QualityWarning about the profile, not a failure (docs/kernels.md).
	sharp bool
	// vmean is the mean of the cached V values (N(vmean, 1)): with near-uniform weights over many
	// tokens a zero-mean V cancels to an output far below the terms' sizes, which the order-free
	// bound cannot resolve (docs/bounds.md, "Long context"); an offset keeps the output as large as
	// its terms.
	vmean float64
	// noPoison quantizes the slots past each request's length instead of poisoning them.
	noPoison bool
	// remap, when set, replaces the query maps (and the query) after the store: arbitrary maps.
	remap func(t *testing.T, s *decodeSetup, rng *rand.Rand)
	// tiers, when set, runs first in every implementation's subtest (to skip tiers the case is not for).
	tiers func(t *testing.T, im harness.Impl)
}

// decodeSetup is a built case: the inputs on the host and the oracle's view of them.
type decodeSetup struct {
	c                *decodeCase
	ks, vs           oracle.Signs
	hq, nq           int
	nreqs, maxBlocks int
	nb               int
	bt               []int32
	qToReq, qToKlen  []int32
	in               *oracle.DecodeInput
	cache            []byte // after the store
}

// paddingEntries are (q_to_req, q_to_klen) pairs of rows that attend to nothing: vLLM's cudagraph
// padding (num_reqs, 0) and others the kernels must treat alike.
func paddingEntries(nreqs int) [][2]int32 {
	return [][2]int32{{int32(nreqs), 0}, {-1, 9}, {int32(nreqs + 7), 5}, {0, 0}, {int32(max(nreqs-1, 0)), -3}, {math.MaxInt32, math.MaxInt32}, {math.MinInt32, 1}}
}

// build makes the case's inputs, runs and judges the store of its new tokens, and returns the
// decode inputs.
func (c *decodeCase) build(t *testing.T, l *harness.Lib, rng *rand.Rand) *decodeSetup {
	t.Helper()
	s := &decodeSetup{c: c, hq: c.hkv * c.g}
	s.ks, s.vs = makeSigns(rng, c.signs)
	// Requests: request 0 carries the mode, the others are single decode tokens.
	R := len(c.lens)
	qlens := make([]int32, R)
	seqLens := make([]int32, R)
	for r := range qlens {
		qlens[r], seqLens[r] = 1, int32(c.lens[r])
	}
	switch c.mode {
	case "mtp":
		qlens[0], seqLens[0] = int32(c.run), int32(max(c.lens[0], c.run))
	case "chunk":
		qlens[0], seqLens[0] = int32(c.run), int32(c.ctx0+c.run)
	}
	qsl := []int32{0}
	builderLens := make([]int32, R)
	for r := range qlens {
		qsl = append(qsl, qsl[r]+qlens[r])
		builderLens[r] = max(seqLens[r], qlens[r]) // the builder refuses seq_len < q_len: patched below
	}
	nreal := int(qsl[R])
	toReq, toKlen, err := oracle.BuildQueryMaps(qsl, builderLens, nreal)
	must(t, err, "query maps")
	for r := range qlens {
		if seqLens[r] == 0 { // a request of length 0: its row attends to nothing
			toKlen[qsl[r]] = 0
		}
	}
	// Padding rows (cudagraph padding, or any map entry that attends to nothing).
	npad := 1 + rng.IntN(2)
	at := nreal
	switch c.pad {
	case "first":
		at = 0
	case "mid":
		at = nreal / 2
		if qlens[0] > 1 {
			at = int(qlens[0]) / 2 // inside the run of request 0
		}
	}
	variants := paddingEntries(R)
	for p := 0; p < npad; p++ {
		e := variants[rng.IntN(len(variants))]
		toReq = append(toReq[:at], append([]int32{e[0]}, toReq[at:]...)...)
		toKlen = append(toKlen[:at], append([]int32{e[1]}, toKlen[at:]...)...)
	}
	s.qToReq, s.qToKlen, s.nq, s.nreqs = toReq, toKlen, len(toReq), R

	// Blocks: each request owns distinct physical blocks; spare blocks hold random bytes.
	nblk := make([]int, R)
	total := 0
	for r := range nblk {
		nblk[r] = (int(seqLens[r]) + c.bs - 1) / c.bs
		total += nblk[r]
		s.maxBlocks = max(s.maxBlocks, nblk[r])
	}
	s.maxBlocks = max(1, s.maxBlocks+rng.IntN(3))
	s.nb = total + 1 + rng.IntN(3)
	s.bt = randomBlockTable(rng, nblk, s.maxBlocks, s.nb, []int32{-1, int32(s.nb), int32(s.nb + 1000), math.MaxInt32, math.MinInt32}, c.holes)
	// The cache: random bytes; context tokens quantized by the oracle (pad bytes random: readers
	// must ignore them); slots past each request's length poisoned.
	s.cache = randBytes(rng, oracle.CacheBytes(c.f, s.nb, c.hkv, c.bs))
	view := newCache(t, c.f, s.cache, s.nb, c.hkv, c.bs, c.lbnhc)
	q, err := oracle.NewQuantizer(c.f, s.ks, s.vs)
	must(t, err, "quantizer")
	kdist := gaussian
	if c.outlier {
		kdist.outlier = 5
	}
	if c.sharp {
		kdist.sigma, kdist.spread = 0.5, 7
	}
	k, v := make([]float32, 256), make([]float32, 256)
	data := c.f.OffScales() + 2*c.f.NumScales()
	for r := 0; r < R; r++ {
		ctx := int(seqLens[r] - qlens[r])
		for pos := 0; pos < nblk[r]*c.bs; pos++ {
			id := int(s.bt[r*s.maxBlocks+pos/c.bs])
			if id < 0 || id >= s.nb {
				continue
			}
			for h := 0; h < c.hkv; h++ {
				slot := view.Slot(id, h, pos%c.bs)
				switch {
				case pos < ctx || (c.noPoison && pos >= int(seqLens[r])):
					sig := 0.9 + 0.2*rng.Float64()
					if c.sharp {
						sig = 0.5 + 3.5*rng.Float64()
					}
					for d := range k {
						x := rng.NormFloat64() * sig
						if d == kdist.outlier {
							x *= 8
						}
						k[d] = fromAct(toAct(float32(x), c.dt), c.dt)
						v[d] = fromAct(toAct(float32(c.vmean+rng.NormFloat64()), c.dt), c.dt)
					}
					q.QuantizeInto(slot, k, v)
					copy(slot[data:], randBytes(rng, len(slot)-data))
				case pos >= int(seqLens[r]):
					poisonSlot(c.f, slot, pos%2 == 1)
				}
			}
		}
	}
	// The new tokens: one key/value row per query row, stored by the kernel at the row's position
	// (klen − 1); padding rows, rows of length 0 and tokens in a hole get slot −1.
	st := &storeCase{f: c.f, dt: c.dt, hkv: c.hkv, nb: s.nb, bs: c.bs, lbnhc: c.lbnhc, ks: s.ks, vs: s.vs, T: s.nq, cache: s.cache}
	if c.fused {
		st.hq = s.hq
	}
	st.slots = make([]int64, s.nq)
	for i := range st.slots {
		st.slots[i] = -1
		r, kl := int(s.qToReq[i]), int(s.qToKlen[i])
		if r < 0 || r >= R || kl <= 0 || kl > int(seqLens[r]) || kl <= int(seqLens[r]-qlens[r]) {
			continue
		}
		pos := kl - 1
		if id := s.bt[r*s.maxBlocks+pos/c.bs]; id >= 0 && int(id) < s.nb {
			st.slots[i] = int64(id)*int64(c.bs) + int64(pos%c.bs)
		}
	}
	_, st.kf = randRows(rng, s.nq*c.hkv, c.dt, kdist)
	_, st.vf = randRows(rng, s.nq*c.hkv, c.dt, gaussian)
	s.cache = st.run(t, l, "cache_store of the new tokens").Output
	// The query and the oracle's input.
	qdist := gaussian
	if c.outlier {
		qdist.outlier = 5
	}
	_, qf := randRows(rng, s.nq*s.hq, c.dt, qdist)
	s.in = &oracle.DecodeInput{Cache: newCache(t, c.f, s.cache, s.nb, c.hkv, c.bs, c.lbnhc), Query: qf, NumQHeads: s.hq,
		BlockTable: s.bt, NumReqs: R, MaxBlocks: s.maxBlocks, QToReq: s.qToReq, QToKlen: s.qToKlen,
		SMScale: float64(c.scale), KSigns: s.ks, VSigns: s.vs}
	must(t, s.in.Validate(), "decode input")
	return s
}

// call is the case's decode call as the harness judges it: a query tensor that is a view into a
// fused QKV tensor and output rows with a 128-element gap when the case is fused.
func (s *decodeSetup) call() *harness.DecodeCall {
	c := s.c
	dc := &harness.DecodeCall{In: s.in, Dtype: harness.DtypeOf(c.dt), NumSplits: c.splits, QueryGroup: c.qg, PartialStride: c.pstride}
	if c.fused {
		dc.QueryPadHeads, dc.OutPad = 2*c.hkv, 128
	}
	return dc
}

// runDecodeCase builds a case and judges it on every decode tier (harness.DecodeCall: padding
// rows exactly zero, every element within the declared profile's bound of the oracle's model, the
// contract distance from exact attention, canaries, inputs and gaps intact, the same bits twice).
func runDecodeCase(t *testing.T, c *decodeCase) {
	l := lib(t)
	rng := rand.New(rand.NewPCG(caseSeed("decode/"+c.path), 2))
	t0 := time.Now()
	s := c.build(t, l, rng)
	if c.remap != nil {
		c.remap(t, s, rng)
	}
	call := s.call()
	tBuild := time.Since(t0)
	harnesstest.ForEachImpl(t, l, arch.Decode, func(t *testing.T, im harness.Impl) {
		if c.tiers != nil {
			c.tiers(t, im)
		}
		t1 := time.Now()
		report(t, "decode", harness.Check(l, im, call))
		t.Logf("num_q %d, Hq %d, num_blocks %d, max_blocks %d, lens %v: build+store %v, decode twice+oracle+check %v",
			s.nq, s.hq, s.nb, s.maxBlocks, c.lens, tBuild.Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	})
}

// decodeAxes are the decode grid's axes. Every pair of their values (-short) or every triple
// (full) appears in some case: grid_test.go. Run lengths, chunk contexts, request lengths,
// partial strides, sm_scale and outliers rotate with the case index (decodeGridCases).
func decodeAxes() []axis {
	return []axis{
		{"fmt", []string{"k3v3", "k3v4", "k3v3c"}},
		{"dt", []string{"f16", "bf16"}},
		{"g", []string{"g1", "g2", "g4", "g6", "g8"}},
		{"hkv", []string{"hkv1", "hkv2", "hkv3"}},
		{"bs", []string{"bs16", "bs32", "bs48", "bs64"}},
		{"lay", []string{"lbhnc", "lbnhc"}},
		{"splits", []string{"splits1", "splits7", "splits64", "splits1024"}},
		{"qg", []string{"qg1", "qg2", "qg3", "qg4"}},
		{"mode", []string{"decode", "mtp", "chunk"}},
		{"pad", []string{"padfirst", "padmid", "padlast"}},
		{"signs", signKinds},
		{"view", []string{"contig", "fused"}},
		{"bt", []string{"bt", "holes"}},
	}
}

var (
	mtpRuns     = []int{2, 3, 4, 5, 7, 8, 16, 33, 64, 128}
	chunkRuns   = []int{9, 16, 31, 64, 100, 128}
	chunkCtx    = []int{0, 1, 15, 16, 17, 63, 64, 65, 200}
	gridLens    = []int{1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 300, 517, 700, 1023}
	gridLensBig = []int{2000, 4097, 8192}
	pstrides    = []int{0, 260, 264, 512}
	smScales    = []float32{1.0 / 16, 1.0 / 16, 0.05, 0.03}
)

// decodeBudget bounds one case's cost: emuBlocks the workgroups of the decode launch
// (⌈num_q/query_group⌉·num_splits·Hkv; the CPU emulator runs about 2000 a second, -short only) and
// work the oracle's Σ rows·heads·klen (the profile model runs about 6e5 a second per core).
func decodeBudget() (emuBlocks, work int) {
	if testing.Short() {
		return 1500, 300_000
	}
	return 0, 6_000_000
}

// decodeGridCases turns grid rows into cases, deterministically from the seed.
func decodeGridCases(t *testing.T, grid []gridCase) []*decodeCase {
	var out []*decodeCase
	seen := map[string]int{}
	maxBlocks, work := decodeBudget()
	for i, gc := range grid {
		rng := rand.New(rand.NewPCG(*seedFlag, uint64(i)))
		c := &decodeCase{dt: kernels.F16, lbnhc: gc["lay"] == "lbnhc", mode: gc["mode"], signs: gc["signs"],
			fused: gc["view"] == "fused", holes: gc["bt"] == "holes", pad: gc["pad"][3:],
			pstride: pstrides[i%len(pstrides)], scale: smScales[i%len(smScales)], outlier: i%4 == 3}
		c.f = kernelFormat(t, storeFormats[gc["fmt"]])
		if gc["dt"] == "bf16" {
			c.dt = kernels.BF16
		}
		fmt.Sscanf(gc["g"], "g%d", &c.g)
		fmt.Sscanf(gc["hkv"], "hkv%d", &c.hkv)
		fmt.Sscanf(gc["bs"], "bs%d", &c.bs)
		fmt.Sscanf(gc["splits"], "splits%d", &c.splits)
		fmt.Sscanf(gc["qg"], "qg%d", &c.qg)
		lens := gridLens
		if !testing.Short() {
			lens = append(append([]int(nil), gridLens...), gridLensBig...)
		}
		extra := rng.IntN(3)
		if c.mode == "decode" {
			extra++
		}
		c.lens = []int{lens[i%len(lens)]}
		for j := 0; j < extra; j++ {
			c.lens = append(c.lens, lens[rng.IntN(len(lens))])
		}
		switch c.mode {
		case "mtp":
			c.run = mtpRuns[i%len(mtpRuns)]
		case "chunk":
			c.run = chunkRuns[i%len(chunkRuns)]
			c.ctx0 = chunkCtx[i%len(chunkCtx)]
		default:
			c.run = 1
		}
		// Budgets: fewer rows (then shorter runs) while the emulator's workgroups exceed the budget,
		// shorter requests while the oracle's work does.
		rows := func() int { return c.run - 1 + len(c.lens) + 2 }
		if maxBlocks > 0 {
			maxRows := max(2, max(1, maxBlocks/(c.splits*c.hkv))*c.qg)
			for rows() > maxRows && len(c.lens) > 1 {
				c.lens = c.lens[:len(c.lens)-1]
			}
			if c.mode != "decode" && rows() > maxRows {
				c.run = max(2, maxRows-len(c.lens)-1)
			}
		}
		cost := func() int {
			w := 0
			for j, l := range c.lens {
				if j == 0 && c.mode != "decode" {
					l = max(l, c.run) + c.ctx0
					w += l * c.run
				} else {
					w += l
				}
			}
			return w * c.g * c.hkv
		}
		for cost() > work {
			k := 0
			for j, l := range c.lens {
				if l > c.lens[k] {
					k = j
				}
			}
			if c.lens[k] <= 1 {
				if c.run > 2 {
					c.run /= 2
					continue
				}
				break
			}
			c.lens[k] /= 2
		}
		mode := c.mode
		if c.mode != "decode" {
			mode = fmt.Sprintf("%s%d", c.mode, c.run)
		}
		c.path = fmt.Sprintf("%s/%s/g%d/hkv%d/bs%d/%s/splits%d/qg%d/%s/pad%s/%s", gc["fmt"], gc["dt"], c.g, c.hkv, c.bs, gc["lay"], c.splits, c.qg, mode, c.pad, c.signs)
		if c.fused {
			c.path += "/fused"
		}
		if c.holes {
			c.path += "/holes"
		}
		if n := seen[c.path]; n > 0 {
			c.path += fmt.Sprintf("/v%d", n+1)
		}
		seen[c.path]++
		out = append(out, c)
	}
	return out
}

// decodeForbidden: the -short grid (the CPU emulator, which runs about 2000 workgroups a second)
// never combines 1024 splits with more than one KV head, a launch of at least 2048 workgroups per
// query chunk; the full grid has no constraint.
func decodeForbidden() []forbid {
	if !testing.Short() {
		return nil
	}
	return []forbid{{"splits", "splits1024", "hkv", "hkv2"}, {"splits", "splits1024", "hkv", "hkv3"}}
}

// TestDecodeGrid runs the covering grid of decode cases on every decode tier (runDecodeCase).
// Reproduce one case with -run 'TestDecodeGrid/<path>$' (and -short if it came from the short
// grid: the two grids differ).
func TestDecodeGrid(t *testing.T) {
	device(t)
	strength := 3
	if testing.Short() {
		strength = 2
	}
	axes := decodeAxes()
	grid, err := buildGrid(axes, strength, decodeForbidden(), *seedFlag)
	if err != nil {
		t.Fatal(err)
	}
	cases := decodeGridCases(t, grid)
	t.Logf("%d cases covering every %d-way combination of %d axes (seed %d)", len(cases), strength, len(axes), *seedFlag)
	for i, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			selectGridCase(t, i)
			runDecodeCase(t, c)
		})
	}
}

// lengthSweep lists the sequence lengths every decode tier must handle for block size bs: 0, 1,
// both sides of the 32-token tile and of powers of two, block multiples ±1, and a few hundred to a
// few thousand tokens (up to 8192 in full mode), each once.
func lengthSweep(bs int) []int {
	l := []int{0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, bs - 1, bs + 1, 2*bs - 1, 2 * bs, 2*bs + 1, 5*bs - 1, 5*bs + 1, 300, 517, 1000, 2600}
	if !testing.Short() {
		l = append(l, 4095, 4097, 8191, 8192)
	}
	var out []int
	seen := map[int]bool{}
	for _, n := range l {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// TestDecodeLengths runs one request of every length of lengthSweep (plus padding rows) for block
// sizes 16, 48 and 7 (the portable tier accepts any block size), with a configuration that rotates
// over formats, dtypes, GQA groups, KV heads, layouts, split counts, query groups, padding
// positions and sign patterns.
func TestDecodeLengths(t *testing.T) {
	device(t)
	for i, bs := range []int{16, 48, 7} {
		for j, n := range lengthSweep(bs) {
			k := j + 7*i
			c := &decodeCase{f: kernelFormat(t, oracle.AllFormats[k%3]), dt: []kernels.Dtype{kernels.F16, kernels.BF16}[k/3%2],
				g: oracle.AllowedGroups[k%5], hkv: 1 + k/5%2, bs: bs, lbnhc: k/7%2 == 1, splits: []int{1, 7, 64, 3}[k/2%4], qg: 1 + k/4%4,
				mode: "decode", pad: []string{"first", "mid", "last"}[k%3], signs: signKinds[k/2%3], scale: 1.0 / 16, lens: []int{n}}
			if n > 1000 && testing.Short() {
				c.g, c.hkv = 1, 1
			}
			c.path = fmt.Sprintf("bs%d/len%d/%s/%s/g%d/hkv%d/%s/splits%d/qg%d", bs, n, fmtName(c.f.ID), dtName(c.dt), c.g, c.hkv, layoutName(c.lbnhc), c.splits, c.qg)
			if bs%16 != 0 {
				c.tiers = portableOnly
			}
			t.Run(c.path, func(t *testing.T) {
				t.Parallel()
				runDecodeCase(t, c)
			})
		}
	}
}

// portableOnly skips tiers other than the portable one: block sizes that are not multiples of 16
// are an Octant decision of the portable tier (docs/kernels.md); docs/format.md §7 requires multiples
// of 16 of native kernels.
func portableOnly(t *testing.T, im harness.Impl) {
	if im.Tier.Tier != kernels.TierPortable {
		t.Skip("block sizes that are not multiples of 16 are promised by the portable tier only (docs/kernels.md)")
	}
}

// TestDecodeSharp runs batches with peaky attention (K with per-token RMS up to 4, sm_scale 0.15:
// score ranges of tens of log2 units, weights that underflow, many running-max rescales) on every
// decode tier, held to the declared profile's bound. Where the dot4-int8q profile's own model is
// beyond ContractRelL2 from exact attention (measured: K RMS 4, 2600 tokens, 0.025) the harness
// reports a QualityWarning about the profile, whatever the kernel does.
func TestDecodeSharp(t *testing.T) {
	device(t)
	for i := 0; i < 8; i++ {
		c := &decodeCase{f: kernelFormat(t, oracle.AllFormats[i%3]), dt: []kernels.Dtype{kernels.F16, kernels.BF16}[i%2], g: oracle.AllowedGroups[(i+1)%5],
			hkv: 1 + i/4, bs: []int{16, 32, 48, 64}[i%4], lbnhc: i%3 == 1, splits: []int{1, 7, 64, 5}[i%4], qg: 1 + (i+2)%4,
			mode: []string{"decode", "mtp"}[i%2], run: 5, pad: []string{"first", "mid", "last"}[i%3], signs: signKinds[(i+1)%3],
			scale: 0.15, lens: []int{[]int{33, 300, 700, 1500}[i%4], 129}, sharp: true, outlier: i%2 == 0}
		c.path = fmt.Sprintf("%d/%s/%s/g%d/hkv%d/bs%d/splits%d/qg%d/%s", i, fmtName(c.f.ID), dtName(c.dt), c.g, c.hkv, c.bs, c.splits, c.qg, c.mode)
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			runDecodeCase(t, c)
		})
	}
}
