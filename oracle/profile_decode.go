package oracle

import (
	"fmt"
	"iter"
	"math"

	"github.com/octant-kv/octant/internal/par"
)

// DecodeProfile models a decode tier of profile p on in: Model is the float64 value of what the
// profile computes from its quantized inputs (original space, before rounding to the output
// dtype), Bound the per-element error a correct fp32 kernel of that profile may add, including the
// final rounding to opt.Out (profile_bounds.go, docs/bounds.md). p must read the cache
// (dot4-int8q, wmma-f16q, or int8rowq applied to decode tokens).
//
// Where the profile rounds P' to fp16, the model rounds it relative to the row's global maximum;
// a kernel rounds relative to its running maximum, and the bound covers the difference.
func DecodeProfile(p Profile, in *DecodeInput, opt ProfileOptions) (*ProfileResult, error) {
	rs, err := DecodeProfiles([]Profile{p}, in, opt)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// DecodeProfiles is DecodeProfile under each of ps, the results in order: the slots the call
// reads are decoded once for all of them, and their work shares the cores.
func DecodeProfiles(ps []Profile, in *DecodeInput, opt ProfileOptions) ([]*ProfileResult, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	for _, p := range ps {
		if !p.ReadsCache() {
			return nil, fmt.Errorf("decode profile: %q does not read the packed cache: expected one of %s, %s, %s", p, ProfileDot4Int8Q, ProfileWMMAF16Q, ProfileInt8RowQ)
		}
	}
	if err := attCheckF32Scale(in.SMScale); err != nil {
		return nil, fmt.Errorf("decode profile: %w", err)
	}
	prec, err := fp32Prec(opt, 0)
	if err != nil {
		return nil, fmt.Errorf("decode profile: %w", err)
	}
	f := in.Cache.F
	d := f.HeadSize
	G := in.Group()
	res := make([]*ProfileResult, len(ps))
	for k := range ps {
		res[k] = newProfileResult(in.NumQ()*in.NumQHeads*d, 0, opt)
	}
	// One job per (profile, query row, query head) that reads the cache, so that even a call of a
	// few rows spreads over the cores; jobs write disjoint outputs. The slots they read are
	// decoded once for the call (profSlots).
	type job struct{ k, i, hq int }
	var jobs []job
	for i := 0; i < in.NumQ(); i++ {
		if in.Klen(i) == 0 {
			continue
		}
		for hq := 0; hq < in.NumQHeads; hq++ {
			for k := range ps {
				jobs = append(jobs, job{k, i, hq})
			}
		}
	}
	tab := newDecodeSlotTable(in)
	slots := newProfSlots(f, tab.slots, in.VSigns)
	defer slots.release()
	type state struct {
		sc      map[Profile]*profScorer
		entries []int32
		qs      []profQuery
	}
	par.Jobs(len(jobs), func() *state {
		return &state{sc: map[Profile]*profScorer{}, qs: make([]profQuery, 1)}
	}, func(st *state, n int) {
		p, i, hq := ps[jobs[n].k], jobs[n].i, jobs[n].hq
		sc := st.sc[p]
		if sc == nil {
			sc = newProfScorer(p, f, in.SMScale)
			st.sc[p] = sc
		}
		st.entries = tab.tokenEntries(in, i, hq/G, st.entries[:0])
		q := in.Query[(i*in.NumQHeads+hq)*d:][:d]
		rq := Rotate(q, in.KSigns, f.KRotBlock())
		over := false
		for _, x := range rq {
			if math.Abs(float64(x)) > fp32Near || math.IsNaN(float64(x)) {
				over = true // the fp32 rotation of the query (nearly) overflows: no claim
			}
		}
		st.qs[0] = prepQuery(p, rq)
		rows := sc.rows(st.qs, slots, st.entries, prec)
		rows.unrot = func(x []float64) { attUnrotateInPlace(x, in.VSigns, f.VRotBlock()) }
		rows.rotBlock = f.VRotBlock()
		rows.depth = opt.Depth
		o := (i*in.NumQHeads + hq) * d
		model, bound := res[jobs[n].k].Model[o:o+d], res[jobs[n].k].Bound[o:o+d]
		rows.eval([][]float64{model}, [][]float64{bound})
		if over {
			for j := range bound {
				bound[j] = math.Inf(1)
			}
		}
	})
	return res, nil
}

// decodeSlotTable numbers the slots a decode call reads: index maps (block, KV head, offset) to
// an entry of slots (−1: not read).
type decodeSlotTable struct {
	index []int32
	slots [][]byte
}

func newDecodeSlotTable(in *DecodeInput) *decodeSlotTable {
	c := in.Cache
	t := &decodeSlotTable{index: make([]int32, c.NumBlocks*c.NumKVHeads*c.BlockSize)}
	for k := range t.index {
		t.index[k] = -1
	}
	for i := 0; i < in.NumQ(); i++ {
		for h := 0; h < c.NumKVHeads; h++ {
			for pb, off := range in.tokenBlocks(i, 0, in.Klen(i)) {
				k := (pb*c.NumKVHeads+h)*c.BlockSize + off
				if t.index[k] < 0 {
					t.index[k] = int32(len(t.slots))
					t.slots = append(t.slots, c.Slot(pb, h, off))
				}
			}
		}
	}
	return t
}

// tokenEntries appends the entries of row i's tokens [0, klen) through KV head h, skipping
// tokens whose physical block is out of range (tokenBlocks).
func (t *decodeSlotTable) tokenEntries(in *DecodeInput, i, h int, dst []int32) []int32 {
	c := in.Cache
	for pb, off := range in.tokenBlocks(i, 0, in.Klen(i)) {
		dst = append(dst, t.index[(pb*c.NumKVHeads+h)*c.BlockSize+off])
	}
	return dst
}

// attCheckF32Scale requires sm_scale to be a normal float32, as a kernel receives it.
func attCheckF32Scale(s float64) error {
	if err := attCheckScale(s); err != nil {
		return err
	}
	if s < 0x1p-126 || s > math.MaxFloat32 {
		return fmt.Errorf("sm_scale %v: expected a normal float32 value for a kernel profile, in [2^-126, %g]", s, math.MaxFloat32)
	}
	return nil
}

// tokenSlots appends the slots of tokens [lo, hi) of row i's request through KV head h, skipping
// tokens whose physical block is out of range (tokenBlocks).
func (in *DecodeInput) tokenSlots(i, h, lo, hi int, dst [][]byte) [][]byte {
	for pb, off := range in.tokenBlocks(i, lo, hi) {
		dst = append(dst, in.Cache.Slot(pb, h, off))
	}
	return dst
}

// tokenBlocks yields the physical block and the offset in it of tokens [lo, hi) of row i's
// request, skipping tokens whose block-table entry is out of range [0, NumBlocks).
func (in *DecodeInput) tokenBlocks(i, lo, hi int) iter.Seq2[int, int] {
	if lo >= hi {
		return cacheBlocks(in.Cache, nil, 0, 0) // a row of no tokens may have no request (padding): its table row is not read
	}
	return cacheBlocks(in.Cache, in.BlockTable[int(in.QToReq[i])*in.MaxBlocks:][:in.MaxBlocks], lo, hi)
}

// cacheBlocks yields (physical block, token within the block) for the logical tokens [lo, hi) of
// the block-table row, skipping tokens whose physical block is outside [0, c.NumBlocks): the one
// walk over block tables of decode and prefill, exact and profile models alike.
func cacheBlocks(c *Cache, row []int32, lo, hi int) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		bs := c.BlockSize
		for t := lo; t < hi; t++ {
			pb := int(row[t/bs])
			if pb < 0 || pb >= c.NumBlocks {
				continue
			}
			if !yield(pb, t%bs) {
				return
			}
		}
	}
}

// attUnrotateInPlace applies the inverse rotation (transform, then signs) in float64, in place.
func attUnrotateInPlace(x []float64, s Signs, block int) {
	FWHT64(x, block)
	negate(x, s)
}

// profScorer computes a cache profile's model scores and score error bounds.
type profScorer struct {
	p    Profile
	f    Format
	c    float64 // sm_scale·log2 e
	kInt int     // rounding count of the score (profScoreRoundings)
}

func newProfScorer(p Profile, f Format, smScale float64) *profScorer {
	dotLen := 64
	if f.Compact() {
		dotLen = f.HeadSize
	}
	return &profScorer{p: p, f: f, c: smScale * math.Log2E, kInt: profScoreRoundings(p, f.NumKBlocks(), dotLen)}
}
