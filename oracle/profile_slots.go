package oracle

import (
	"math"
	"sync"

	"github.com/octant-kv/octant/internal/par"
)

// profSlots holds what a cache profile needs of each slot a call reads, decoded once per call:
// the rows of an MTP run, the G query heads of a KV head and the rows of a prefill chunk all
// read the same slots, and decoding (unpacking, the V inverse rotation) would otherwise be
// repeated for each of them. Entries are numbered in the order they were added.
type profSlots struct {
	f         Format
	d, nb     int
	kl        []float64  // [entry][d]: the codebook level of each K code (LUT value, not scaled)
	km        []float64  // [entry][nb]: each 64-dim K block's stored scale / LUTOne
	v, vo     []float64  // [entry][d]: rotated V (LUT[c]·scale/64) and V in the output space
	vs        []float64  // [entry]: the stored V scale as a value
	unrotated bool       // vo is filled
	buf       *[]float64 // the backing array, from slotBufs
}

// slotBufs recycles profSlots' backing arrays between calls: a fuzz target evaluates thousands
// of calls a minute, and fresh multi-megabyte arrays cost page faults that do not scale across
// cores.
var slotBufs = sync.Pool{New: func() any { return new([]float64) }}

// release returns the backing array to slotBufs; ps must not be used afterwards.
func (ps *profSlots) release() {
	if ps.buf != nil {
		slotBufs.Put(ps.buf)
		ps.buf, ps.kl, ps.km, ps.v, ps.vo, ps.vs = nil, nil, nil, nil, nil, nil
	}
}

// newProfSlots decodes slots (in parallel). With vSigns non-nil, vo holds each V inverse-rotated
// (attUnrotateInPlace: the decode output space); else vo is nil.
func newProfSlots(f Format, slots [][]byte, vSigns Signs) *profSlots {
	d, nb, n := f.HeadSize, f.NumKBlocks(), len(slots)
	ps := &profSlots{f: f, d: d, nb: nb, unrotated: vSigns != nil}
	size := n * (3*d + nb + 1)
	ps.buf = slotBufs.Get().(*[]float64)
	if cap(*ps.buf) < size {
		*ps.buf = make([]float64, size)
	}
	b := (*ps.buf)[:size]
	next := func(k int) []float64 {
		s := b[:k:k]
		b = b[k:]
		return s
	}
	ps.kl, ps.km, ps.v, ps.vs = next(n*d), next(n*nb), next(n*d), next(n)
	if ps.unrotated {
		ps.vo = next(n * d)
	}
	const chunk = 64
	par.Jobs((n+chunk-1)/chunk, func() *slotDecoder64 { return newSlotDecoder64(f) }, func(dec *slotDecoder64, c int) {
		for e := c * chunk; e < min(n, (c+1)*chunk); e++ {
			dec.loadRaw(slots[e])
			kl := ps.kl[e*d : (e+1)*d]
			for b := 0; b < nb; b++ {
				l, ks := dec.kBlock(b)
				ps.km[e*nb+b] = ks / LUTOne
				for j, c := range dec.kc[64*b : 64*b+64] {
					kl[64*b+j] = l[c&15]
				}
			}
			dec.fillV()
			copy(ps.v[e*d:(e+1)*d], dec.v)
			ps.vs[e] = dec.vScale
			if ps.unrotated {
				vo := ps.vo[e*d : (e+1)*d]
				copy(vo, dec.v)
				attUnrotateInPlace(vo, vSigns, f.VRotBlock())
			}
		}
	})
	return ps
}

// value is entry e's rotated V (read-only).
func (ps *profSlots) value(e int) []float64 { return ps.v[e*ps.d : (e+1)*ps.d] }

// valueOut is entry e's V in the output space (read-only); the rotated V without vSigns.
func (ps *profSlots) valueOut(e int) []float64 {
	if !ps.unrotated {
		return ps.value(e)
	}
	return ps.vo[e*ps.d : (e+1)*ps.d]
}

// score returns the profile's model score of entry e for query q and its error bound (the
// products and sums of the per-slot form, in the same order).
func (sc *profScorer) scoreEntry(ps *profSlots, e int, q *profQuery) (s, ds float64) {
	var sum, abs float64
	kl := ps.kl[e*ps.d : (e+1)*ps.d]
	km := ps.km[e*ps.nb : (e+1)*ps.nb]
	for b, m := range km {
		var pb, ab float64
		qb := q.q[64*b : 64*b+64]
		for j, l := range kl[64*b : 64*b+64] {
			x := qb[j] * l
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
		amb += q.ambStep[k] * math.Abs(km[i/64]*kl[i])
	}
	s = sc.c * sum
	ds = attGamma(sc.kInt, 0x1p-24)*sc.c*abs + sc.c*amb + 16*0x1p-126
	if abs*LUTOne*math.Max(1, sc.c) > fp32Near {
		// Within 2^24 of fp32 overflow: a kernel's intermediate (query scale × K scale × an
		// integer dot of up to 2^20, before the 1/64 and sm_scale·log2 e factors) may overflow,
		// whatever its order. No claim here (bound +Inf, docs/bounds.md).
		ds = math.Inf(1)
	}
	return s, ds
}

// kappaOf is the P' scale of a slot with stored V scale vs (0 when the profile does not round P
// or V is zero).
func (sc *profScorer) kappaOf(vs float64) float64 {
	vs = math.Abs(vs)
	if vs == 0 || math.IsInf(vs, 0) || math.IsNaN(vs) {
		return 0
	}
	switch sc.p {
	case ProfileWMMAF16Q:
		return vs * 256
	case ProfileInt8RowQ:
		return vs * 64
	}
	return 0
}

// rows scores entries (one per token, in order) for every query head and returns the rows,
// with values served from ps; the caller sets the output mapping.
func (sc *profScorer) rows(qs []profQuery, ps *profSlots, entries []int32, prec attPrec) *profRows {
	n, nh := len(entries), len(qs)
	r := newProfRows(ps.d, n, nh, prec)
	score := func(lo, hi int) {
		for t := lo; t < hi; t++ {
			e := entries[t]
			for k := range qs {
				r.s[k][t], r.ds[k][t] = sc.scoreEntry(ps, int(e), &qs[k])
			}
			r.kappa[t] = sc.kappaOf(ps.vs[e])
		}
	}
	if n <= evalChunk {
		score(0, n)
	} else {
		par.Chunks(n, score) // a long row (sweepTokens): each token's scores on their own
	}
	r.value = func(t int) []float64 { return ps.value(int(entries[t])) }
	r.valueOut = func(t int) []float64 { return ps.valueOut(int(entries[t])) }
	return r
}

// newProfRows allocates the score arrays of n tokens for nh heads.
func newProfRows(d, n, nh int, prec attPrec) *profRows {
	r := &profRows{d: d, n: n, s: make([][]float64, nh), ds: make([][]float64, nh), kappa: make([]float64, n), prec: prec}
	buf := make([]float64, 2*nh*n)
	for k := 0; k < nh; k++ {
		r.s[k], r.ds[k] = buf[2*k*n:(2*k+1)*n:(2*k+1)*n], buf[(2*k+1)*n:(2*k+2)*n:(2*k+2)*n]
	}
	return r
}
