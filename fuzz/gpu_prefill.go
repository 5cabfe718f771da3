package fuzz

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// GPUPrefillCase is one prefill call (KERNELS.md §3.5) for FuzzPrefill: sequences with a cached
// prefix (quantized into a cache with garbage elsewhere, through a shuffled block table with
// invalid ids and shared prefixes) and a chunk of new tokens (q, k, v, already rotated), rows after
// the last sequence that belong to none (must stay untouched), any sm_scale and GQA group.
type GPUPrefillCase struct {
	Dtype     Dtype        `json:"dtype"`
	Group     int          `json:"group"`
	Cache     CacheShape   `json:"cache"`
	Content   CacheContent `json:"content"`
	Batch     Batch        `json:"batch"`
	Table     BlockTable   `json:"block_table"`
	Signs     SignPair     `json:"signs"`
	SMScale   float64      `json:"sm_scale"`
	ValueSeed uint64       `json:"value_seed"`
	Kinds     []ValueKind  `json:"kinds"`
	OutPad    int          `json:"out_pad,omitempty"`
	// ClampBlocks removes the last ClampBlocks columns of the block table (max_blocks shrinks):
	// sequences longer than max_blocks·block_size have their prefix clamped (KERNELS.md §3.5).
	ClampBlocks int `json:"clamp_blocks,omitempty"`
}

// GPUPrefillOptions bound FuzzPrefill's batches: up to 4 sequences, chunks up to 64 tokens,
// prefixes up to 1024.
var GPUPrefillOptions = BatchOptions{MaxReqs: 4, MaxQueryLen: 64, MaxSeqLen: 1024, MaxTotalSeq: 2048, MaxPadding: 3}

// GPUPrefillCases draws prefill calls.
func GPUPrefillCases() *rapid.Generator[*GPUPrefillCase] {
	return rapid.Custom(func(t *rapid.T) *GPUPrefillCase {
		d := rapidDraw{t}
		c := &GPUPrefillCase{}
		f, _ := oracle.KernelFormat(pick(d, oracle.AllFormats, "format"))
		c.Dtype = pick(d, Dtypes, "dtype")
		hkv := d.intn(1, 3, "num_kv_heads")
		c.Group = pick(d, oracle.AllowedGroups, "group")
		bs := pick(d, []int{16, 16, 32, 48, 64}, "block_size")
		o := GPUPrefillOptions
		o.BlockSize = bs
		c.Batch = drawBatch(d, o)
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
		return c
	})
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

// CheckGPUPrefill runs the call on every prefill tier of g and judges it: rows of no sequence
// untouched, every other element within the declared profile's bound (oracle.PrefillProfile),
// canaries, inputs and row gaps intact, the same bits twice. The oracle's part: its float32 model
// of the upstream-like profile pair (prefill-int8row + prefill-chunk-f16) held to that pair's bound.
func CheckGPUPrefill(g *GPU, c *GPUPrefillCase) error {
	in, err := c.Build()
	if err != nil {
		return fmt.Errorf("building the call: %w", err)
	}
	exact, written, err := oracle.ExactPrefill(in)
	if err != nil {
		return err
	}
	impls, err := Impls(g, OpPrefill)
	if err != nil {
		return err
	}
	d := in.Cache.F.HeadSize
	rowLen := in.NumQHeads * d
	for _, im := range impls {
		var prefix, chunk oracle.Profile
		var got []float64
		var raw []uint16
		if im.Oracle {
			if g != nil {
				continue
			}
			prefix, chunk = oracle.ProfilePrefillInt8Row, oracle.ProfilePrefillChunkF16
			if got, err = oracle.PrefillProfileF32(prefix, chunk, in, c.Dtype.Oracle()); err != nil {
				return err
			}
		} else {
			if prefix, chunk, err = oracle.ParsePrefillProfile(im.Tier.PrefillProfile); err != nil {
				return fmt.Errorf("tier %s: %w", im.Name, err)
			}
			if raw, err = c.prefillLib(g, im.Tier, in); err != nil {
				return err
			}
			again, err := c.prefillLib(g, im.Tier, in)
			if err != nil {
				return fmt.Errorf("second run: %w", err)
			}
			if err := sameBits(im, "prefill", raw, again, func(i int) string { return elemName(i, in.NumQHeads, d) }); err != nil {
				return err
			}
			got = make([]float64, len(raw))
			for i := 0; i < in.NumTokens; i++ {
				for j := i * rowLen; j < (i+1)*rowLen; j++ {
					if !written[i] {
						if raw[j] != 0xFFFF {
							return fmt.Errorf("%s: row %d belongs to no sequence (cu_seqlens_q %v) but %s was written: %#04x", im.Name, i, in.CuSeqlensQ, elemName(j, in.NumQHeads, d), raw[j])
						}
						got[j] = math.NaN()
						continue
					}
					got[j] = float64(c.Dtype.FromBits(raw[j]))
				}
			}
		}
		res, err := oracle.PrefillProfile(prefix, chunk, in, oracle.ProfileOptions{Out: c.Dtype.Oracle()})
		if err != nil {
			return err
		}
		worst, ratio := res.Check(got)
		if ratio > 1 {
			msg := fmt.Sprintf("%s (profile %s+%s): %s = %.9g, model %.9g ± bound %.3g: |error| %.3g is %.3g × the bound (oracle.PrefillProfile, docs/bounds.md)",
				im.Name, prefix, chunk, elemName(worst, in.NumQHeads, d), got[worst], res.Model[worst], res.Bound[worst], math.Abs(got[worst]-res.Model[worst]), ratio)
			var g, e []float64
			for i := 0; i < in.NumTokens; i++ {
				if written[i] {
					g = append(g, got[i*rowLen:(i+1)*rowLen]...)
					e = append(e, exact[i*rowLen:(i+1)*rowLen]...)
				}
			}
			rel := oracle.RelL2(g, e)
			return &BoundError{Msg: msg, Ratio: ratio, RelL2: rel, WithinContract: rel < oracle.ContractRelL2}
		}
		if !im.Oracle {
			g.observe(im.Name, ratio)
		}
	}
	return nil
}

func (c *GPUPrefillCase) prefillLib(g *GPU, tier kernels.TierDesc, in *oracle.PrefillInput) ([]uint16, error) {
	d := in.Cache.F.HeadSize
	hq, hkv, T := in.NumQHeads, in.Cache.NumKVHeads, in.NumTokens
	bufs := &kernels.BufferSet{Dev: g.Dev, MinLen: 1}
	defer bufs.Free()
	q := bufs.Input("q", actBytes(c.Dtype, in.Q))
	k := bufs.Input("k", actBytes(c.Dtype, in.K))
	v := bufs.Input("v", actBytes(c.Dtype, in.V))
	cache := bufs.Input("cache", in.Cache.Data)
	bt := bufs.Input("block_table", kernels.Int32Bytes(in.BlockTable))
	cu := bufs.Input("cu_seqlens_q", kernels.Int32Bytes(in.CuSeqlensQ))
	sl := bufs.Input("seq_lens", kernels.Int32Bytes(in.SeqLens))
	outTok := hq*d + c.OutPad
	out := bufs.Output("out", 2*max(1, T)*outTok, 0xFF)
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	maxq := 0
	for s := 0; s+1 < len(in.CuSeqlensQ); s++ {
		maxq = max(maxq, int(in.CuSeqlensQ[s+1]-in.CuSeqlensQ[s]))
	}
	f := in.Cache.F
	a := kernels.PrefillArgs{Out: out.Ptr, Q: q.Ptr, K: k.Ptr, V: v.Ptr, Cache: cache.Ptr, BlockTable: bt.Ptr, CuSeqlensQ: cu.Ptr, SeqLens: sl.Ptr,
		OutStrideToken: int64(outTok), OutStrideHead: int64(d), QStrideToken: int64(hq * d), QStrideHead: int64(d), KStrideToken: int64(hkv * d), KStrideHead: int64(d),
		VStrideToken: int64(hkv * d), VStrideHead: int64(d), CacheStrideBlock: int64(in.Cache.StrideBlock), CacheStrideHead: int64(in.Cache.StrideHead),
		CacheStrideToken: int64(in.Cache.StrideToken), Fmt: int32(f.ID), Dtype: kernelDtype(c.Dtype), HeadSize: int32(d), Tier: tier.Tier, NumTokens: int32(T),
		NumSeqs: int32(len(in.SeqLens)), NumQHeads: int32(hq), NumKVHeads: int32(hkv), NumBlocks: int32(in.Cache.NumBlocks), BlockSize: int32(in.Cache.BlockSize),
		MaxBlocks: int32(in.MaxBlocks), MaxQueryLen: int32(maxq), SMScale: float32(in.SMScale)}
	op := "prefill (tier " + tier.Name + ")"
	if err := g.finish(bufs, op, g.Dev.Prefill(a)); err != nil {
		return nil, err
	}
	return outputRows(out, op, T, hq*d, outTok)
}
