package harness

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// PrefillCall is one prefill call (docs/contract.md §3.5) with concrete inputs: the oracle's
// input (the packed prefix in a cache, the chunk's q, k, v already rotated and exactly
// representable in Dtype, cu_seqlens_q, seq_lens, block table, sm_scale) and the layout only a
// kernel sees: q, k and v as views into one fused [T][Hq + 2·Hkv][256] tensor (Fused), and output
// rows with OutPad elements of gap after them.
type PrefillCall struct {
	In     *oracle.PrefillInput
	Dtype  Dtype
	Fused  bool
	OutPad int
	// Splits is octave_prefill's num_splits: 0 lets the tier choose; n >= 1 asks the mma tier to
	// split each sequence's prefix into n parts and merge them (other tiers ignore it).
	Splits int

	memo oracleMemo
}

// Op is arch.Prefill.
func (c *PrefillCall) Op() arch.Op { return arch.Prefill }

// workgroups is the size of the portable prefill launch (8 query rows per workgroup, per query
// head): it decides whether the CPU emulator runs a call twice.
func (c *PrefillCall) workgroups() int { return (c.In.NumTokens + 7) / 8 * c.In.NumQHeads }

type exactPrefill struct {
	out     []float64
	written []bool
}

func (c *PrefillCall) exact() func() (*exactPrefill, error) {
	w := c.memo.start("exact", func() (any, error) {
		out, written, err := oracle.ExactPrefill(c.In)
		if err != nil {
			return nil, err
		}
		return &exactPrefill{out, written}, nil
	})
	return func() (*exactPrefill, error) {
		v, err := w()
		r, _ := v.(*exactPrefill)
		return r, err
	}
}

func (c *PrefillCall) profile(prefix, chunk oracle.Profile) func() (*oracle.ProfileResult, error) {
	w := c.memo.start("profile/"+string(prefix)+"+"+string(chunk), func() (any, error) {
		r, err := oracle.PrefillProfile(prefix, chunk, c.In, oracle.ProfileOptions{Out: c.Dtype.Oracle()})
		if err != nil {
			return nil, fmt.Errorf("oracle.PrefillProfile(%s, %s): %w", prefix, chunk, err)
		}
		return r, nil
	})
	return func() (*oracle.ProfileResult, error) {
		v, err := w()
		r, _ := v.(*oracle.ProfileResult)
		return r, err
	}
}

// declaredPrefillProfiles is the profile pair an implementation declares (the oracle's own model:
// the upstream-like int8rowq + prefill-chunk-f16), which must be one the registry allows
// its tier (arch.CheckProfile).
func declaredPrefillProfiles(im Impl) (prefix, chunk oracle.Profile, err error) {
	if im.Oracle {
		return oracle.ProfileInt8RowQ, oracle.ProfilePrefillChunkF16, nil
	}
	if err := arch.CheckProfile(im.Tier.Name, arch.Prefill, im.Tier.PrefillProfile); err != nil {
		return "", "", err
	}
	if prefix, chunk, err = oracle.ParsePrefillProfile(im.Tier.PrefillProfile); err != nil {
		return "", "", fmt.Errorf("tier declares prefill profile %q: %v", im.Tier.PrefillProfile, err)
	}
	return prefix, chunk, nil
}

// prefetch starts the oracle's model under every implementation's declared profile pair (one it
// cannot parse is left for judge to fail).
func (c *PrefillCall) prefetch(impls []Impl) {
	for _, im := range impls {
		if prefix, chunk, err := declaredPrefillProfiles(im); err == nil {
			c.profile(prefix, chunk)
		}
	}
}

// judge runs the call on im and judges it: rows of no sequence untouched; every other element
// within the declared profile pair's bound (oracle.PrefillProfile); the written rows' distance
// from exact prefill attention (Verdict's rule); canaries, inputs and gaps intact; the same bits
// twice. The oracle's part: its float32 model of the upstream-like pair (int8rowq for the
// prefix, prefill-chunk-f16 for the chunk) held to that pair's bound.
func (c *PrefillCall) judge(l *Lib, im Impl) Verdict {
	v := newVerdict(arch.Prefill, im)
	in := c.In
	d := in.Cache.F.HeadSize
	rowLen := in.NumQHeads * d
	prefix, chunk, err := declaredPrefillProfiles(im)
	if err != nil {
		return v.fail(err)
	}
	model, exact := c.profile(prefix, chunk), c.exact()
	ex, err := exact()
	if err != nil {
		return v.fail(err)
	}
	got := make([]float64, in.NumTokens*rowLen)
	judged := make([]bool, len(got))
	for i := 0; i < in.NumTokens; i++ {
		for j := i * rowLen; j < (i+1)*rowLen; j++ {
			judged[j] = ex.written[i]
		}
	}
	name := func(e int) string { return elemName(e, in.NumQHeads, d) }
	if im.Oracle {
		f32, err := oracle.PrefillProfileF32(prefix, chunk, in, c.Dtype.Oracle())
		if err != nil {
			return v.fail(err)
		}
		copy(got, f32)
	} else {
		raw, err := runTwice("prefill", l.repeat(c.workgroups()), func() ([]uint16, error) { return c.runLib(l, im.Tier) }, name)
		if err != nil {
			return v.fail(err)
		}
		v.Output = kernels.Uint16Bytes(raw)
		for j, b := range raw {
			if !judged[j] {
				if b != 0xFFFF {
					return v.failf("row %d belongs to no sequence (cu_seqlens_q %v) but %s was written: %#04x (docs/contract.md §3.5: rows past a sequence's query length are not written)",
						j/rowLen, in.CuSeqlensQ, name(j), b)
				}
				got[j] = math.NaN()
				continue
			}
			got[j] = float64(c.Dtype.FromBits(b))
		}
	}
	res, err := model()
	if err != nil {
		return v.fail(err)
	}
	return judgeAttention(v, prefix+"+"+chunk, c.Dtype, res, got, ex.out, judged, name,
		"the profile pair's fp32 arithmetic and "+string(c.Dtype)+" output rounding, oracle.PrefillProfile, docs/bounds.md")
}

// runLib uploads the call and runs prefill once on tier, checking the status, the canaries, that
// inputs are unchanged and that the gap after each output row is untouched.
func (c *PrefillCall) runLib(l *Lib, tier kernels.TierDesc) ([]uint16, error) {
	in, dt := c.In, c.Dtype
	d := in.Cache.F.HeadSize
	hq, hkv, T := in.NumQHeads, in.Cache.NumKVHeads, in.NumTokens
	bufs := l.newBufs()
	defer bufs.Free()
	var qp, kp, vp uintptr
	qTok, kvTok := hq*d, hkv*d
	if c.Fused {
		w := (hq + 2*hkv) * d
		x := make([]float32, T*w)
		for i := 0; i < T; i++ {
			copy(x[i*w:], in.Q[i*hq*d:(i+1)*hq*d])
			copy(x[i*w+hq*d:], in.K[i*hkv*d:(i+1)*hkv*d])
			copy(x[i*w+(hq+hkv)*d:], in.V[i*hkv*d:(i+1)*hkv*d])
		}
		b := bufs.Input("qkv", dt.ActBytes(x))
		qp, kp, vp = b.Ptr, b.Ptr+uintptr(2*hq*d), b.Ptr+uintptr(2*(hq+hkv)*d)
		qTok, kvTok = w, w
	} else {
		qp = bufs.Input("q", dt.ActBytes(in.Q)).Ptr
		kp = bufs.Input("k", dt.ActBytes(in.K)).Ptr
		vp = bufs.Input("v", dt.ActBytes(in.V)).Ptr
	}
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
	a := kernels.PrefillArgs{Out: out.Ptr, Q: qp, K: kp, V: vp, Cache: cache.Ptr, BlockTable: bt.Ptr, CuSeqlensQ: cu.Ptr, SeqLens: sl.Ptr,
		OutStrideToken: int64(outTok), OutStrideHead: int64(d), QStrideToken: int64(qTok), QStrideHead: int64(d), KStrideToken: int64(kvTok), KStrideHead: int64(d),
		VStrideToken: int64(kvTok), VStrideHead: int64(d), CacheStrideBlock: int64(in.Cache.StrideBlock), CacheStrideHead: int64(in.Cache.StrideHead),
		CacheStrideToken: int64(in.Cache.StrideToken), Fmt: int32(f.ID), Dtype: dt.Kernel(), HeadSize: int32(d), Tier: tier.Tier, NumTokens: int32(T),
		NumSeqs: int32(len(in.SeqLens)), NumQHeads: int32(hq), NumKVHeads: int32(hkv), NumBlocks: int32(in.Cache.NumBlocks), BlockSize: int32(in.Cache.BlockSize),
		MaxBlocks: int32(in.MaxBlocks), MaxQueryLen: int32(maxq), SMScale: float32(in.SMScale), NumSplits: int32(c.Splits)}
	op := "prefill (tier " + string(tier.Name) + ")"
	if err := l.finish(bufs, op, l.Runner().Prefill(a)); err != nil {
		return nil, err
	}
	return outputRows(out, op, T, hq*d, outTok)
}
