package oracle

import (
	"fmt"
	"math"
)

// The float32 implementations of the profiles: what an fp32 kernel of each profile computes, in
// one canonical order (tokens in order within each split, online softmax with a running-max
// update per token, partials merged in split order as docs/contract.md §3.4 describes). They serve two
// purposes: a check that the derived bounds hold for a real fp32 evaluation, and the reference of
// FlashAttention's rule of thumb for a tier (its error against the float64 model should be at most
// about twice this implementation's). Every float32 product is wrapped in an explicit float32
// conversion so that Go cannot fuse it into an FMA.

func attExp2f(x float32) float32 { return float32(math.Exp2(float64(x))) }
func attExpf(x float32) float32  { return float32(math.Exp(float64(x))) }

// f32Query is a query head as an fp32 kernel of a cache profile holds it.
type f32Query struct {
	p   Profile
	qi  []int32   // int8 values (dot4-int8q, int8rowq)
	qs  []float32 // query scale per 64-dim block (dot4) or one per row (int8row, repeated)
	q16 []float32 // fp16 query (wmma-f16q)
}

func newF32Query(p Profile, xr []float32) f32Query {
	d := len(xr)
	fq := f32Query{p: p}
	switch p {
	case ProfileWMMAF16Q:
		fq.q16 = make([]float32, d)
		for i, x := range xr {
			fq.q16[i] = F16ToF32(F32ToF16(x))
		}
	case ProfileDot4Int8Q:
		fq.qi, fq.qs = make([]int32, d), make([]float32, d/64)
		for b := 0; b < d/64; b++ {
			var amax float32
			for _, x := range xr[64*b : 64*b+64] {
				amax = max(amax, float32(math.Abs(float64(x))))
			}
			s := float32(max(amax, float32(1e-20)) / 127)
			fq.qs[b] = s
			for i := 64 * b; i < 64*b+64; i++ {
				fq.qi[i] = int32(attQuantInt8(xr[i] / s))
			}
		}
	case ProfileInt8RowQ:
		fq.qi, fq.qs = make([]int32, d), make([]float32, d/64)
		qmax := float32(1e-8)
		for _, x := range xr {
			qmax = max(qmax, float32(math.Abs(float64(x))))
		}
		s := float32(qmax / 127)
		for b := range fq.qs {
			fq.qs[b] = s
		}
		for i, x := range xr {
			fq.qi[i] = int32(attQuantInt8(float32(float32(x*127) / qmax)))
		}
	}
	return fq
}

// f32Slot is a slot as an fp32 kernel reads it: codes, codebook values and scales.
type f32Slot struct {
	f      Format
	kc, vc []uint8
	ks     []float32 // K scale per 64-dim block (compact: the one scale, repeated)
	vs     float32
}

func newF32Slot(f Format) *f32Slot {
	return &f32Slot{f: f, kc: make([]uint8, f.HeadSize), vc: make([]uint8, f.HeadSize), ks: make([]float32, f.NumKBlocks())}
}

func (s *f32Slot) load(slot []byte) {
	f := s.f
	slotCodesInto(f, slot, s.kc, s.vc)
	sc := f.OffScales()
	for b := range s.ks {
		g := b
		if f.Compact() {
			g = 0
		}
		s.ks[b] = F16ToF32(getU16(slot[sc+2*g:]))
	}
	s.vs = F16ToF32(getU16(slot[sc+2*f.NumKScales():]))
}

func (s *f32Slot) kLUT(b int) []int8 {
	if !s.f.Compact() && 64*b < s.f.RopeDim {
		return LUT4[:]
	}
	return LUT3[:]
}

// score is the fp32 score of the loaded slot, times c32 (sm_scale·log2 e or sm_scale in float32).
func (s *f32Slot) score(q *f32Query, c32 float32) float32 {
	var sum float32
	for b := range s.ks {
		l := s.kLUT(b)
		kc := s.kc[64*b : 64*b+64]
		switch q.p {
		case ProfileWMMAF16Q:
			var acc float32
			for j, c := range kc {
				acc += float32(q.q16[64*b+j] * float32(l[c]))
			}
			sum += float32(acc * s.ks[b])
		default:
			var dot int32
			for j, c := range kc {
				dot += q.qi[64*b+j] * int32(l[c])
			}
			if q.p == ProfileDot4Int8Q {
				sum += float32(float32(q.qs[b]*s.ks[b]) * float32(dot))
			} else {
				sum += float32(s.ks[b] * float32(dot))
			}
		}
	}
	if q.p == ProfileInt8RowQ {
		sum = float32(sum * q.qs[0])
	}
	return float32(float32(sum*c32) * (1.0 / LUTOne))
}

// f32Acc is an fp32 online-softmax state; exp is exp2 (log2 units) or exp (natural units).
type f32Acc struct {
	m, l float32
	o    []float32
	exp  func(float32) float32
}

func newF32Acc(d int, exp func(float32) float32) *f32Acc {
	return &f32Acc{m: float32(math.Inf(-1)), o: make([]float32, d), exp: exp}
}

// update raises the running max to s if needed and returns p = exp(s − m).
func (a *f32Acc) update(s float32) float32 {
	if s > a.m {
		if !math.IsInf(float64(a.m), -1) {
			r := a.exp(a.m - s)
			for i := range a.o {
				a.o[i] = float32(a.o[i] * r)
			}
			a.l = float32(a.l * r)
		}
		a.m = s
	}
	p := a.exp(s - a.m)
	a.l += p
	return p
}

// addSlotV adds the loaded slot's V with weight p under profile pr (P' rounding and all).
func (a *f32Acc) addSlotV(pr Profile, s *f32Slot, p float32) {
	l := LUT(s.f.VBits())
	switch pr {
	case ProfileDot4Int8Q:
		vsc := s.vs / LUTOne
		for i, c := range s.vc {
			a.o[i] += float32(p * float32(float32(l[c])*vsc))
		}
	case ProfileWMMAF16Q, ProfileInt8RowQ:
		k := float32(256)
		if pr == ProfileInt8RowQ {
			k = 64
		}
		// P' = fp16(p·vs·κ) against the codebook bytes; o holds Σ P'·L, scaled back by
		// 1/(κ·64) when the partial is written (finishSlotScale).
		pp := F16ToF32(F32ToF16(float32(float32(p*s.vs) * k)))
		for i, c := range s.vc {
			a.o[i] += float32(pp * float32(l[c]))
		}
	}
}

// slotScale is the factor that turns the accumulator of addSlotV into V units.
func slotScale(pr Profile) float32 {
	switch pr {
	case ProfileWMMAF16Q:
		return 1.0 / (256 * LUTOne)
	case ProfileInt8RowQ:
		return 1.0 / (64 * LUTOne)
	}
	return 1
}

// f32Partial is one split's (o, m, l).
type f32Partial struct {
	o    []float32
	m, l float32
}

// f32Merge merges partials as reduce does (log2 units) and returns O and L (O still rotated).
func f32Merge(parts []f32Partial, d int) ([]float32, float32) {
	M := float32(math.Inf(-1))
	for _, p := range parts {
		M = max(M, p.m)
	}
	O := make([]float32, d)
	var L float32
	if math.IsInf(float64(M), -1) {
		return O, 0
	}
	for _, p := range parts {
		if math.IsInf(float64(p.m), -1) {
			continue
		}
		w := attExp2f(p.m - M)
		L += float32(w * p.l)
		for i := range O {
			O[i] += float32(w * p.o[i])
		}
	}
	return O, L
}

// DecodeProfileF32 computes decode with profile p in float32 as a kernel would (see the file
// comment), with the given split geometry (nil: one split over all tokens), and returns the
// output rounded to out, as float64 values, original space [NumQ][NumQHeads][HeadSize].
func DecodeProfileF32(p Profile, in *DecodeInput, geom Geometry, out Dtype) ([]float64, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if !p.ReadsCache() {
		return nil, fmt.Errorf("decode profile: %q does not read the packed cache", p)
	}
	if err := attCheckF32Scale(in.SMScale); err != nil {
		return nil, fmt.Errorf("decode profile: %w", err)
	}
	if _, _, err := out.rounding(); err != nil {
		return nil, fmt.Errorf("decode profile: %w", err)
	}
	kvMax := in.KVMax()
	if geom == nil {
		geom = Geometry{{0, kvMax}}
	}
	if err := geom.Validate(kvMax); err != nil {
		return nil, fmt.Errorf("decode profile: %w", err)
	}
	f := in.Cache.F
	d := f.HeadSize
	G := in.Group()
	c32 := float32(float32(in.SMScale) * float32(math.Log2E))
	res := make([]float64, in.NumQ()*in.NumQHeads*d)
	sl := newF32Slot(f)
	var slots [][]byte
	parts := make([]f32Partial, len(geom))
	for i := 0; i < in.NumQ(); i++ {
		klen := in.Klen(i)
		if klen == 0 {
			continue
		}
		for hq := 0; hq < in.NumQHeads; hq++ {
			h := hq / G
			q := in.Query[(i*in.NumQHeads+hq)*d:][:d]
			fq := newF32Query(p, Rotate(q, in.KSigns, f.KRotBlock()))
			for s, rg := range geom {
				acc := newF32Acc(d, attExp2f)
				slots = in.tokenSlots(i, h, min(rg.Lo, klen), min(rg.Hi, klen), slots[:0])
				for _, b := range slots {
					sl.load(b)
					acc.addSlotV(p, sl, acc.update(sl.score(&fq, c32)))
				}
				sc := slotScale(p)
				for j := range acc.o {
					acc.o[j] = float32(acc.o[j] * sc)
				}
				parts[s] = f32Partial{o: acc.o, m: acc.m, l: acc.l}
			}
			O, L := f32Merge(parts, d)
			dst := res[(i*in.NumQHeads+hq)*d:][:d]
			if L == 0 {
				continue
			}
			y := Unrotate(O, in.VSigns, f.VRotBlock())
			inv := 1 / L
			for j := range dst {
				dst[j] = out.Round(float64(float32(y[j] * inv)))
			}
		}
	}
	return res, nil
}
