package oracle

import (
	"fmt"
	"math"
)

// DecodeProfile models a decode tier of profile p on in: Model is the float64 value of what the
// profile computes from its quantized inputs (original space, before rounding to the output
// dtype), Bound the per-element error a correct fp32 kernel of that profile may add, including the
// final rounding to opt.Out (profile_bounds.go, docs/bounds.md). p must read the cache
// (dot4-int8q, wmma-f16q, or prefill-int8row applied to decode tokens).
//
// Where the profile rounds P' to fp16, the model rounds it relative to the row's global maximum;
// a kernel rounds relative to its running maximum, and the bound covers the difference.
func DecodeProfile(p Profile, in *DecodeInput, opt ProfileOptions) (*ProfileResult, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if !p.ReadsCache() {
		return nil, fmt.Errorf("decode profile: %q does not read the packed cache: expected one of %s, %s, %s", p, ProfileDot4Int8Q, ProfileWMMAF16Q, ProfilePrefillInt8Row)
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
	res := &ProfileResult{Model: make([]float64, in.NumQ()*in.NumQHeads*d), Bound: make([]float64, in.NumQ()*in.NumQHeads*d), Overflow: opt.Out.OverflowAt()}
	// One job per (query row, KV head) that reads the cache; jobs write disjoint outputs.
	type job struct{ i, h int }
	var jobs []job
	for i := 0; i < in.NumQ(); i++ {
		if in.Klen(i) == 0 {
			continue
		}
		for h := 0; h < in.Cache.NumKVHeads; h++ {
			jobs = append(jobs, job{i, h})
		}
	}
	type state struct {
		ps    *profScorer
		slots [][]byte
		qs    []profQuery
		over  []bool
	}
	parallelJobs(len(jobs), func() *state {
		return &state{ps: newProfScorer(p, f, in.SMScale), qs: make([]profQuery, G), over: make([]bool, G)}
	}, func(st *state, n int) {
		i, h := jobs[n].i, jobs[n].h
		st.slots = in.tokenSlots(i, h, 0, in.Klen(i), st.slots[:0])
		for k := 0; k < G; k++ {
			hq := h*G + k
			q := in.Query[(i*in.NumQHeads+hq)*d:][:d]
			rq := Rotate(q, in.KSigns, f.KRotBlock())
			st.over[k] = false
			for _, x := range rq {
				if math.Abs(float64(x)) > fp32Near || math.IsNaN(float64(x)) {
					st.over[k] = true // the fp32 rotation of the query (nearly) overflows: no claim
				}
			}
			st.qs[k] = prepQuery(p, rq)
		}
		rows := st.ps.cacheRows(st.qs, st.slots, prec)
		rows.unrot = func(x []float64) { attUnrotateInPlace(x, in.VSigns, f.VRotBlock()) }
		rows.rotBlock = f.VRotBlock()
		rows.depth = opt.Depth
		model, bound := make([][]float64, G), make([][]float64, G)
		for k := 0; k < G; k++ {
			o := (i*in.NumQHeads + h*G + k) * d
			model[k], bound[k] = res.Model[o:o+d], res.Bound[o:o+d]
		}
		rows.eval(model, bound)
		for k := 0; k < G; k++ {
			if st.over[k] {
				for j := range bound[k] {
					bound[k][j] = math.Inf(1)
				}
			}
		}
	})
	return res, nil
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
// tokens whose physical block is out of range.
func (in *DecodeInput) tokenSlots(i, h, lo, hi int, dst [][]byte) [][]byte {
	c := in.Cache
	row := in.BlockTable[int(in.QToReq[i])*in.MaxBlocks:][:in.MaxBlocks]
	for t := lo; t < hi; t++ {
		pb := int(row[t/c.BlockSize])
		if pb < 0 || pb >= c.NumBlocks {
			continue
		}
		dst = append(dst, c.Slot(pb, h, t%c.BlockSize))
	}
	return dst
}

// attUnrotateInPlace applies the inverse rotation (transform, then signs) in float64, in place.
func attUnrotateInPlace(x []float64, s Signs, block int) {
	FWHT64(x, block)
	for j := range x {
		if s[j] {
			x[j] = -x[j]
		}
	}
}

// profScorer computes a cache profile's model scores and score error bounds.
type profScorer struct {
	p    Profile
	f    Format
	c    float64 // sm_scale·log2 e
	kInt int     // rounding count of the score (profScoreRoundings)
	dec  *slotDecoder64
}

func newProfScorer(p Profile, f Format, smScale float64) *profScorer {
	dotLen := 64
	if f.Compact() {
		dotLen = f.HeadSize
	}
	return &profScorer{p: p, f: f, c: smScale * math.Log2E, kInt: profScoreRoundings(p, f.NumKBlocks(), dotLen), dec: newSlotDecoder64(f)}
}

// score returns the model score of the loaded slot (s.dec) for query q and its error bound.
func (ps *profScorer) score(q *profQuery) (s, ds float64) {
	dec := ps.dec
	var sum, abs float64
	for b := 0; b < ps.f.NumKBlocks(); b++ {
		l, ks := dec.kBlock(b)
		m := ks / LUTOne
		var pb, ab float64
		qb := q.q[64*b : 64*b+64]
		for j, c := range dec.kc[64*b : 64*b+64] {
			x := qb[j] * l[c&15]
			pb += x
			ab += math.Abs(x)
		}
		sum += m * pb
		// |m|: a slot's fp16 scales may be negative (garbage a wild map reads); the error of a
		// product scales with the magnitude.
		if q.intDot {
			abs += math.Abs(m * pb)
		} else {
			abs += math.Abs(m) * ab
		}
	}
	var amb float64
	for k, i := range q.amb {
		l, ks := dec.kBlock(i / 64)
		amb += q.ambStep[k] * math.Abs(ks/LUTOne*l[dec.kc[i]&15])
	}
	s = ps.c * sum
	ds = attGamma(ps.kInt, 0x1p-24)*ps.c*abs + ps.c*amb + 16*0x1p-126
	if abs*LUTOne*math.Max(1, ps.c) > fp32Near {
		// Within 2^24 of fp32 overflow: a kernel's intermediate (query scale × K scale × an
		// integer dot of up to 2^20, before the 1/64 and sm_scale·log2 e factors) may overflow,
		// whatever its order. No claim here (bound +Inf, docs/bounds.md).
		ds = math.Inf(1)
	}
	return s, ds
}

// kappa is the P' scale of the loaded slot (0 when the profile does not round P or V is zero).
func (ps *profScorer) kappa() float64 {
	vs := math.Abs(ps.dec.vScale)
	if vs == 0 || math.IsInf(vs, 0) || math.IsNaN(vs) {
		return 0
	}
	switch ps.p {
	case ProfileWMMAF16Q:
		return vs * 256
	case ProfilePrefillInt8Row:
		return vs * 64
	}
	return 0
}

// cacheRows scores every slot for every query head and returns the rows, with values read back
// from the slots (rotated); the caller sets the output mapping.
func (ps *profScorer) cacheRows(qs []profQuery, slots [][]byte, prec attPrec) *profRows {
	n, nh := len(slots), len(qs)
	r := &profRows{d: ps.f.HeadSize, n: n, s: make([][]float64, nh), ds: make([][]float64, nh), kappa: make([]float64, n), prec: prec}
	for k := range qs {
		r.s[k], r.ds[k] = make([]float64, n), make([]float64, n)
	}
	// V values are decoded once here, while the slot is loaded for its scores, and served from
	// this buffer to eval's passes (each reads every token's V once or twice).
	d := ps.f.HeadSize
	vals := make([]float64, n*d)
	for t, sl := range slots {
		ps.dec.loadRaw(sl)
		for k := range qs {
			r.s[k][t], r.ds[k][t] = ps.score(&qs[k])
		}
		r.kappa[t] = ps.kappa()
		ps.dec.fillV()
		copy(vals[t*d:(t+1)*d], ps.dec.v)
	}
	r.value = func(t int, dst []float64) { copy(dst, vals[t*d:(t+1)*d]) }
	return r
}
