package cases

import (
	"fmt"

	"github.com/octant-kv/octant/harness"

	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// GPUPrefillCase is one prefill call (docs/contract.md §3.5) for FuzzPrefill: sequences with a cached
// prefix (quantized into a cache with garbage elsewhere, through a shuffled block table with
// invalid ids and shared prefixes) and a chunk of new tokens (q, k, v, already rotated), rows after
// the last sequence that belong to none (must stay untouched), any sm_scale and GQA group.
type GPUPrefillCase struct {
	Dtype     harness.Dtype `json:"dtype"`
	Group     int           `json:"group"`
	Cache     CacheShape    `json:"cache"`
	Content   CacheContent  `json:"content"`
	Batch     Batch         `json:"batch"`
	Table     BlockTable    `json:"block_table"`
	Signs     SignPair      `json:"signs"`
	SMScale   float64       `json:"sm_scale"`
	ValueSeed uint64        `json:"value_seed"`
	Kinds     []ValueKind   `json:"kinds"`
	OutPad    int           `json:"out_pad,omitempty"`
	// ClampBlocks removes the last ClampBlocks columns of the block table (max_blocks shrinks):
	// sequences longer than max_blocks·block_size have their prefix clamped (docs/contract.md §3.5).
	ClampBlocks int `json:"clamp_blocks,omitempty"`
	// HostileSeed, when not 0, fills every input the result must not depend on with hostile
	// content (hostile.go, PrefillRegions): drawn in about half the calls.
	HostileSeed uint64 `json:"hostile_seed,omitempty"`
	// Splits is octave_prefill's num_splits: 0 (most calls) lets the tier choose; else the mma tier
	// splits each prefix into that many parts and merges them (other tiers ignore it).
	Splits int `json:"num_splits,omitempty"`
}

// gpuPrefillOptions bound FuzzPrefill's batches: up to 4 sequences, chunks up to 64 tokens,
// prefixes up to 1024.
var gpuPrefillOptions = BatchOptions{MaxReqs: 4, MaxQueryLen: 64, MaxSeqLen: 1024, MaxTotalSeq: 2048, MaxPadding: 3}

// gpuPrefillLongOptions bound the long calls: one sequence of up to 16 chunk tokens after a
// prefix that makes seq_len 2^16..MaxSeqLen (2^17). Such a call asks for one split in about half
// the draws (num_splits 1: one workgroup walks the whole prefix, where accumulation defects show;
// the bound is derived for the case's length); else the tier's choice may split it.
var gpuPrefillLongOptions = BatchOptions{MaxReqs: 1, MaxQueryLen: 16, MinSeqLen: 1 << 16, MaxSeqLen: MaxSeqLen, MaxPadding: 3}

// gpuPrefillLongEvery: a call is long when size_class, drawn in [0, gpuPrefillLongEvery), and then
// long_class, in [0, 16), hit their maxima (rapid's draws favour the ends: about 2 in 1000 of
// rapid.Check's cases); its G is then at most 2 and its KV heads 1, so the oracle's profile model
// of it stays near a second of one core. Never in a worker of Go's fuzzer (inFuzzWorker).
const gpuPrefillLongEvery = 64

// GPUPrefillCases draws prefill calls.
func GPUPrefillCases() *rapid.Generator[*GPUPrefillCase] {
	return rapid.Custom(func(t *rapid.T) *GPUPrefillCase { return drawGPUPrefillCase(rapidDraw{t}) })
}

func drawGPUPrefillCase(d draw) *GPUPrefillCase {
	c := &GPUPrefillCase{}
	f, _ := oracle.KernelFormat(pick(d, oracle.AllFormats, "format"))
	c.Dtype = pick(d, harness.Dtypes, "dtype")
	hkv := d.intn(1, 3, "num_kv_heads")
	c.Group = pick(d, oracle.AllowedGroups, "group")
	bs := pick(d, []int{16, 16, 32, 48, 64}, "block_size")
	o := gpuPrefillOptions
	// Drawn in a fuzz worker too (only the outcome is ignored there), so that a seed's bytes mean
	// the same case in the worker as in `go test`'s replay.
	if d.intn(0, gpuPrefillLongEvery-1, "size_class") == gpuPrefillLongEvery-1 && d.intn(0, 15, "long_class") == 15 && !inFuzzWorker() {
		o, hkv, c.Group = gpuPrefillLongOptions, 1, min(c.Group, 2)
	}
	o.BlockSize = bs
	c.Batch = drawBatch(d, o)
	// seq_len at or below the query length: no cached prefix (ctx clamps at 0, docs/contract.md §3.5).
	if d.intn(0, 3, "short_seq") == 3 {
		r := d.intn(0, len(c.Batch.Requests)-1, "short_seq_req")
		c.Batch.Requests[r].SeqLen = d.intn(0, c.Batch.Requests[r].QueryLen, "short_seq_len")
	}
	seqs := make([]int, len(c.Batch.Requests))
	for r, q := range c.Batch.Requests {
		seqs[r] = q.SeqLen
	}
	c.Table = drawBlockTable(d, seqs, bs)
	c.Cache = CacheShape{Format: f.Name(), NumBlocks: c.Table.NumBlocks, NumKVHeads: hkv, BlockSize: bs}
	drawCacheLayout(d, f, &c.Cache)
	c.Content = drawCacheContent(d, c.Dtype, hkv, []Garbage{GarbageRandom, GarbageFinite, GarbageStale, GarbageZero})
	c.Content.FiniteScales = true
	c.Signs = drawSignPair(d)
	c.SMScale = drawSMScale(d)
	c.ValueSeed = d.u64("value_seed")
	c.Kinds = drawKindMix(d, FiniteKinds, "kind")
	c.OutPad = pick(d, []int{0, 0, 32}, "out_pad")
	if d.intn(0, 3, "clamp") == 3 {
		c.ClampBlocks = d.intn(1, max(1, c.Table.MaxBlocks-1), "clamp_blocks")
	}
	if d.intn(0, 1, "hostile") == 1 {
		c.HostileSeed = d.u64("hostile_seed") | 1
	}
	c.Splits = pick(d, []int{0, 0, 0, 1, 2, 3, 7, 64}, "num_splits") // drawn last (octant-cases/4; the seed corpus regenerated)
	if len(c.Batch.Requests) == 1 && c.Batch.Requests[0].SeqLen >= gpuPrefillLongOptions.MinSeqLen && d.intn(0, 1, "long_one_split") == 1 {
		c.Splits = 1
	}
	return c
}

// Build expands the recipe into the oracle's prefill input (q, k, v rotated, exactly
// representable in the dtype).
func (c *GPUPrefillCase) Build() (*oracle.PrefillInput, error) {
	f, err := KernelFormat(c.Cache.Format)
	if err != nil {
		return nil, err
	}
	ds := &DecodeSpec{Batch: c.Batch, Table: c.Table, Cache: c.Cache}
	live := ds.liveSet()
	cache, err := BuildCache(c.Cache, c.Content, c.Signs, live.at)
	if err != nil {
		return nil, err
	}
	d := f.HeadSize
	hkv := c.Cache.NumKVHeads
	hq := c.Group * hkv
	T := c.Batch.NumTokens
	dr := rngDraw{newRand(c.ValueSeed, 15)}
	kinds := c.Kinds
	if len(kinds) == 0 {
		kinds = []ValueKind{Gaussian}
	}
	vec := func(dst []float32) {
		copy(dst, drawValueSpec(dr, pick(dr, kinds, ""), c.Dtype).Build(d, nil, 0))
	}
	q, k, v := make([]float32, T*hq*d), make([]float32, T*hkv*d), make([]float32, T*hkv*d)
	for i := 0; i < T*hq; i++ {
		vec(q[i*d : (i+1)*d])
	}
	for i := 0; i < T*hkv; i++ {
		vec(k[i*d : (i+1)*d])
		vec(v[i*d : (i+1)*d])
	}
	bt, mb := c.Table.Table, c.Table.MaxBlocks
	if c.ClampBlocks > 0 && mb > 1 {
		nmb := max(1, mb-c.ClampBlocks)
		t := make([]int32, 0, len(c.Batch.Requests)*nmb)
		for r := range c.Batch.Requests {
			t = append(t, bt[r*mb:r*mb+nmb]...)
		}
		bt, mb = t, nmb
	}
	in := &oracle.PrefillInput{Cache: cache, Q: q, K: k, V: v, NumTokens: T, NumQHeads: hq, CuSeqlensQ: c.Batch.QSL(), SeqLens: c.Batch.SeqLens(),
		BlockTable: bt, MaxBlocks: mb, SMScale: c.SMScale}
	return in, in.Validate()
}

// Call builds the call the judges run (harness.PrefillCall).
func (c *GPUPrefillCase) Call() (harness.Call, error) {
	in, err := c.Build()
	if err != nil {
		return nil, fmt.Errorf("building the call: %w", err)
	}
	call := &harness.PrefillCall{In: in, Dtype: c.Dtype, OutPad: c.OutPad, Splits: c.Splits}
	if c.HostileSeed != 0 {
		call = hostilePrefill(call, c.HostileSeed, PrefillRegions)
	}
	return call, nil
}

// ClampedBeforeLast reports whether the clamped block table (ClampBlocks) cuts the prefix of a
// sequence that another follows: a prefix loop that runs past its row of the table then reads the
// next sequence's blocks, which no row may attend (docs/contract.md §3.5).
func (c *GPUPrefillCase) ClampedBeforeLast() bool {
	mb := c.Table.MaxBlocks
	if c.ClampBlocks == 0 || mb <= 1 {
		return false
	}
	limit := max(1, mb-c.ClampBlocks) * c.Cache.BlockSize
	reqs := c.Batch.Requests
	for _, r := range reqs[:max(0, len(reqs)-1)] {
		if r.SeqLen-r.QueryLen > limit {
			return true
		}
	}
	return false
}
