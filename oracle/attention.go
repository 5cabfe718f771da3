package oracle

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/internal/par"
)

// DecodeInput is one call of the decode operation (docs/contract.md §3.3), with the query as float32
// values (exactly representable in the activation dtype, fp16 or bf16: see [F16ToF32]).
//
// Query row i, head hq attends to tokens 0..klen−1 of request QToReq[i] through KV head hq/G
// (G = NumQHeads/Hkv), where klen = QToKlen[i] clamped to MaxBlocks·BlockSize. A row whose klen is
// ≤ 0 or whose request is outside [0, NumReqs) is padding: its output is exactly zero. Logical
// block lb of request r is physical block BlockTable[r·MaxBlocks+lb]; a physical id outside
// [0, NumBlocks) makes the tokens of that block contribute nothing (Octant's rule).
type DecodeInput struct {
	Cache      *Cache
	Query      []float32 // [NumQ][NumQHeads][HeadSize], original (unrotated) space
	NumQHeads  int
	BlockTable []int32 // [NumReqs][MaxBlocks], row-major
	NumReqs    int
	MaxBlocks  int
	QToReq     []int32 // [NumQ]
	QToKlen    []int32 // [NumQ]
	SMScale    float64 // finite, > 0
	KSigns     Signs   // K (and query) sign pattern, at least HeadSize long
	VSigns     Signs   // V sign pattern, at least HeadSize long
}

// AllowedGroups lists the GQA group sizes G = Hq/Hkv the decode operation accepts (docs/contract.md §3.3).
var AllowedGroups = []int{1, 2, 4, 6, 8}

// NumQ is the number of query rows (len(QToReq)).
func (in *DecodeInput) NumQ() int { return len(in.QToReq) }

// Group is G = NumQHeads / NumKVHeads.
func (in *DecodeInput) Group() int { return in.NumQHeads / in.Cache.NumKVHeads }

// Klen is the number of tokens query row i attends to: 0 for padding (klen ≤ 0 or request outside
// [0, NumReqs)), else QToKlen[i] clamped to MaxBlocks·BlockSize.
func (in *DecodeInput) Klen(i int) int {
	r, k := int(in.QToReq[i]), int(in.QToKlen[i])
	if r < 0 || r >= in.NumReqs || k <= 0 {
		return 0
	}
	return min(k, in.MaxBlocks*in.Cache.BlockSize)
}

// KVMax is the largest Klen over all rows (the token count a split geometry must cover).
func (in *DecodeInput) KVMax() int {
	m := 0
	for i := range in.QToReq {
		m = max(m, in.Klen(i))
	}
	return m
}

// Validate checks shapes and parameters; every error says what was expected and what was found.
func (in *DecodeInput) Validate() error {
	if in.Cache == nil {
		return fmt.Errorf("decode: no cache")
	}
	if err := in.Cache.Validate(); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	d, hkv := in.Cache.F.HeadSize, in.Cache.NumKVHeads
	if in.NumQHeads <= 0 || in.NumQHeads%hkv != 0 {
		return fmt.Errorf("decode: num_q_heads %d: expected a positive multiple of num_kv_heads %d", in.NumQHeads, hkv)
	}
	if g := in.NumQHeads / hkv; !attIntIn(g, AllowedGroups) {
		return fmt.Errorf("decode: GQA group %d (num_q_heads %d / num_kv_heads %d): expected one of %v", g, in.NumQHeads, hkv, AllowedGroups)
	}
	nq := len(in.QToReq)
	if len(in.QToKlen) != nq {
		return fmt.Errorf("decode: q_to_klen has %d entries, expected %d (one per q_to_req entry)", len(in.QToKlen), nq)
	}
	if want := nq * in.NumQHeads * d; len(in.Query) != want {
		return fmt.Errorf("decode: query has %d values, expected num_q %d × num_q_heads %d × head_size %d = %d", len(in.Query), nq, in.NumQHeads, d, want)
	}
	if in.NumReqs < 0 || in.MaxBlocks < 0 {
		return fmt.Errorf("decode: num_reqs %d, max_blocks %d: expected non-negative", in.NumReqs, in.MaxBlocks)
	}
	if want := in.NumReqs * in.MaxBlocks; len(in.BlockTable) != want {
		return fmt.Errorf("decode: block_table has %d entries, expected num_reqs %d × max_blocks %d = %d", len(in.BlockTable), in.NumReqs, in.MaxBlocks, want)
	}
	if err := attCheckScale(in.SMScale); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if len(in.KSigns) < d || len(in.VSigns) < d {
		return fmt.Errorf("decode: sign patterns of %d (K) and %d (V) dims: expected at least head_size %d each", len(in.KSigns), len(in.VSigns), d)
	}
	return nil
}

func attCheckScale(s float64) error {
	if !(s > 0) || math.IsInf(s, 0) {
		return fmt.Errorf("sm_scale %v: expected a finite value > 0", s)
	}
	return nil
}

func attIntIn(x int, set []int) bool {
	for _, v := range set {
		if v == x {
			return true
		}
	}
	return false
}

// ExactDecode computes decode attention exactly (in float64) over the dequantized cache: for each
// query row i and head hq, softmax over t < klen of sm_scale·⟨q, k_t⟩ applied to v_t, with K and V
// the dequantized (exact) cache values. The result is float64 [NumQ][NumQHeads][HeadSize] in the
// original (unrotated) space; padding rows are exactly zero.
//
// It runs in the rotated space: the query is rotated with the K rotation in float64, scores are
// dot products with the rotated dequantized K, P·V is accumulated in the rotated V space and
// un-rotated once per row. The rotations are orthonormal, so this equals the original-space
// attention up to float64 rounding. Each slot is decoded once per (row, KV head) and shared by the
// G query heads of the group.
func ExactDecode(in *DecodeInput) ([]float64, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	d := in.Cache.F.HeadSize
	out := make([]float64, in.NumQ()*in.NumQHeads*d)
	g, hkv := in.Group(), in.Cache.NumKVHeads
	// One job per (row, KV head) with a klen: the jobs write disjoint rows of out, each with its own
	// engine and accumulators, so the result does not depend on how they are spread over cores.
	var jobs []int
	for i := 0; i < in.NumQ(); i++ {
		if in.Klen(i) > 0 {
			for h := 0; h < hkv; h++ {
				jobs = append(jobs, i*hkv+h)
			}
		}
	}
	type state struct {
		e    *decodeEngine
		accs []softmaxAcc
	}
	par.Jobs(len(jobs), func() *state {
		st := &state{e: newDecodeEngine(in), accs: make([]softmaxAcc, g)}
		for k := range st.accs {
			st.accs[k] = newSoftmaxAcc(d)
		}
		return st
	}, func(st *state, j int) {
		i, h := jobs[j]/hkv, jobs[j]%hkv
		st.e.loadQueries(i, h)
		for k := range st.accs {
			st.accs[k].reset()
		}
		st.e.addRange(i, h, 0, in.Klen(i), st.accs)
		for k := range st.accs {
			hq := h*g + k
			st.accs[k].finishInto(out[(i*in.NumQHeads+hq)*d:][:d], in.Cache.F, in.VSigns)
		}
	})
	return out, nil
}

// decodeEngine holds the per-call state of the exact float64 decode: rotated queries of one group
// and a slot decoder, so the token loop allocates nothing.
type decodeEngine struct {
	in  *DecodeInput
	d   int
	c   float64 // sm_scale·log2(e): scores in log2 units
	dec *slotDecoder64
	qr  [][]float64 // G rotated queries of the current (row, KV head)
	tmp []float64
}

func newDecodeEngine(in *DecodeInput) *decodeEngine {
	d := in.Cache.F.HeadSize
	e := &decodeEngine{in: in, d: d, c: in.SMScale * math.Log2E, dec: newSlotDecoder64(in.Cache.F), tmp: make([]float64, d)}
	e.qr = make([][]float64, in.Group())
	for k := range e.qr {
		e.qr[k] = make([]float64, d)
	}
	return e
}

// loadQueries rotates (in float64, with the K rotation) the G query heads of row i that read KV
// head h.
func (e *decodeEngine) loadQueries(i, h int) {
	in := e.in
	g := len(e.qr)
	for k := 0; k < g; k++ {
		hq := h*g + k
		q := in.Query[(i*in.NumQHeads+hq)*e.d:][:e.d]
		dst := e.qr[k]
		for j, x := range q {
			dst[j] = float64(x)
		}
		negate(dst, in.KSigns)
		FWHT64(dst, in.Cache.F.KRotBlock())
	}
}

// addRange adds tokens [lo, hi) of row i's request, through KV head h, into the G accumulators.
// Tokens whose physical block is outside [0, NumBlocks) are skipped.
func (e *decodeEngine) addRange(i, h, lo, hi int, accs []softmaxAcc) {
	c := e.in.Cache
	sb := c.F.SlotBytes()
	for pb, tin := range e.in.tokenBlocks(i, lo, hi) {
		o := c.SlotOffset(pb, h, tin)
		e.dec.load(c.Data[o : o+sb])
		for k := range accs {
			accs[k].add(e.c*attDot(e.qr[k], e.dec.k), e.dec.v)
		}
	}
}

// attDot is ⟨a, b⟩ in float64 with four partial sums (len(a) a multiple of 4).
func attDot(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	for i := 0; i+3 < len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	return (s0 + s1) + (s2 + s3)
}

// slotDecoder64 decodes a slot into rotated float64 K and V (exact: each value is LUT[c]·scale/64).
type slotDecoder64 struct {
	f          Format
	kc, vc     []uint8
	k, v       []float64
	kScale     []float64 // stored fp16 K scales as values (one per K group)
	vScale     float64   // stored fp16 V scale as a value
	kLUT, vLUT []float64 // per-dim K codebook (LUT3/LUT4 by block) and the V codebook, as float64
}

func newSlotDecoder64(f Format) *slotDecoder64 {
	d := f.HeadSize
	s := &slotDecoder64{f: f, kc: make([]uint8, d), vc: make([]uint8, d), k: make([]float64, d), v: make([]float64, d),
		kScale: make([]float64, f.NumKScales())}
	s.vLUT = attLUT64(f.VBits())
	return s
}

func attLUT64(bits int) []float64 {
	l := LUT(bits)
	out := make([]float64, len(l))
	for i, x := range l {
		out[i] = float64(x)
	}
	return out
}

var attLUT3, attLUT4 = attLUT64(3), attLUT64(4)

// load decodes K and V of a slot.
func (s *slotDecoder64) load(slot []byte) {
	s.loadRaw(slot)
	s.fillK()
	s.fillV()
}

// loadRaw unpacks the codes and reads the scales of a slot (no float conversion).
func (s *slotDecoder64) loadRaw(slot []byte) {
	f := s.f
	slotCodesInto(f, slot, s.kc, s.vc)
	sc := f.OffScales()
	for g := range s.kScale {
		s.kScale[g] = float64(F16ToF32(getU16(slot[sc+2*g:])))
	}
	s.vScale = float64(F16ToF32(getU16(slot[sc+2*f.NumKScales():])))
}

// kBlock returns the codebook and the stored scale (as a value) of 64-dim K block b.
func (s *slotDecoder64) kBlock(b int) ([]float64, float64) {
	if s.f.Compact() {
		return attLUT3, s.kScale[0]
	}
	if 64*b < s.f.RopeDim {
		return attLUT4, s.kScale[b]
	}
	return attLUT3, s.kScale[b]
}

// fillK sets k from the loaded codes: LUT[c]·scale/64 per dim.
func (s *slotDecoder64) fillK() {
	for b := 0; b < s.f.NumKBlocks(); b++ {
		l, sc := s.kBlock(b)
		m := sc / LUTOne
		kc := s.kc[64*b : 64*b+64]
		k := s.k[64*b : 64*b+64]
		for j, c := range kc {
			k[j] = l[c&15] * m
		}
	}
}

// fillV sets v from the loaded codes.
func (s *slotDecoder64) fillV() {
	m := s.vScale / LUTOne
	for i, c := range s.vc {
		s.v[i] = s.vLUT[c&15] * m
	}
}

// softmaxAcc is an online softmax in the log2 convention, exact in float64: after adding tokens
// with scores s_t (log2 units) and values v_t it holds m = max s_t (−inf when empty),
// l = Σ 2^(s_t−m) and o = Σ 2^(s_t−m)·v_t — exactly a split partial of docs/contract.md §3.4.
type softmaxAcc struct {
	m, l float64
	o    []float64
}

func newSoftmaxAcc(d int) softmaxAcc { return softmaxAcc{m: math.Inf(-1), o: make([]float64, d)} }

func (a *softmaxAcc) reset() {
	a.m, a.l = math.Inf(-1), 0
	clear(a.o)
}

// add adds one token with score s (log2 units) and value v.
func (a *softmaxAcc) add(s float64, v []float64) {
	if s > a.m {
		if !math.IsInf(a.m, -1) {
			r := math.Exp2(a.m - s)
			for i := range a.o {
				a.o[i] *= r
			}
			a.l *= r
		}
		a.m = s
	}
	p := math.Exp2(s - a.m)
	a.l += p
	o := a.o[:len(v)]
	for i, x := range v {
		o[i] += p * x
	}
}

// finishInto writes the normalized, un-rotated output o/l (or zeros when l = 0) into dst.
func (a *softmaxAcc) finishInto(dst []float64, f Format, vs Signs) {
	if a.l == 0 {
		clear(dst)
		return
	}
	copy(dst, a.o)
	FWHT64(dst, f.VRotBlock())
	for j := range dst {
		if vs[j] {
			dst[j] = -dst[j]
		}
		dst[j] /= a.l
	}
}
