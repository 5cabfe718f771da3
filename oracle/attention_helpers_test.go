package oracle

import (
	"math"
	"math/rand/v2"
)

// Helpers shared by the attention tests (names start with att to stay clear of other test files).

// attF16Rand returns a normal(0, sigma) value rounded to fp16 (as float32).
func attF16Rand(rng *rand.Rand, sigma float64) float32 {
	return F16ToF32(F32ToF16(float32(rng.NormFloat64() * sigma)))
}

// attCase is a decode problem: a cache filled by the oracle's own quantizer from random K/V, a
// block table with shuffled physical blocks, and queries.
type attCase struct {
	in       *DecodeInput
	origK    [][]float32 // [block·Hkv·bs + head·bs + token] original-space K of each slot (nil if unset)
	origV    [][]float32
	blockIDs []int // physical blocks in use
}

type attShape struct {
	f                       Format
	hkv, g, bs, numBlocks   int
	maxBlocks, numReqs      int
	klens, reqs             []int32
	lbnhc                   bool
	kSigma, vSigma, qSigma  float64
	ks, vs                  Signs
	outlierDim              int // <0 for none
	outlierScale            float64
	smScale                 float64
	randomBytesWhereUnsetOK bool
}

// attBuild quantizes a random cache of the given shape. Every slot of every block is written
// (block ids are a permutation), so any block table entry in range points at real data.
func attBuild(rng *rand.Rand, s attShape) *attCase {
	f := s.f
	d := f.HeadSize
	data := make([]byte, CacheBytes(f, s.numBlocks, s.hkv, s.bs))
	var c *Cache
	var err error
	if s.lbnhc {
		c, err = NewCacheLBNHC(f, data, s.numBlocks, s.hkv, s.bs)
	} else {
		c, err = NewCacheLBHNC(f, data, s.numBlocks, s.hkv, s.bs)
	}
	if err != nil {
		panic(err)
	}
	if s.ks == nil {
		s.ks = DefaultSigns(d)
	}
	if s.vs == nil {
		s.vs = DefaultSigns(d)
	}
	q, err := NewQuantizer(f, s.ks, s.vs)
	if err != nil {
		panic(err)
	}
	ac := &attCase{origK: make([][]float32, s.numBlocks*s.hkv*s.bs), origV: make([][]float32, s.numBlocks*s.hkv*s.bs)}
	k := make([]float32, d)
	v := make([]float32, d)
	for b := 0; b < s.numBlocks; b++ {
		for h := 0; h < s.hkv; h++ {
			for t := 0; t < s.bs; t++ {
				for j := range k {
					k[j] = attF16Rand(rng, s.kSigma)
					v[j] = attF16Rand(rng, s.vSigma)
				}
				if s.outlierDim >= 0 {
					k[s.outlierDim] = F16ToF32(F32ToF16(k[s.outlierDim] * float32(s.outlierScale)))
				}
				q.QuantizeInto(c.Slot(b, h, t), k, v)
				idx := (b*s.hkv+h)*s.bs + t
				ac.origK[idx] = append([]float32(nil), k...)
				ac.origV[idx] = append([]float32(nil), v...)
			}
		}
	}
	bt := make([]int32, s.numReqs*s.maxBlocks)
	for r := 0; r < s.numReqs; r++ {
		perm := rng.Perm(s.numBlocks)
		for lb := 0; lb < s.maxBlocks; lb++ {
			bt[r*s.maxBlocks+lb] = int32(perm[lb%s.numBlocks])
		}
	}
	hq := s.hkv * s.g
	nq := len(s.reqs)
	query := make([]float32, nq*hq*d)
	for i := range query {
		query[i] = attF16Rand(rng, s.qSigma)
	}
	sm := s.smScale
	if sm == 0 {
		sm = 1 / math.Sqrt(float64(d))
	}
	ac.in = &DecodeInput{Cache: c, Query: query, NumQHeads: hq, BlockTable: bt, NumReqs: s.numReqs, MaxBlocks: s.maxBlocks,
		QToReq: s.reqs, QToKlen: s.klens, SMScale: sm, KSigns: s.ks, VSigns: s.vs}
	return ac
}

// attRelL2 is ||a−b||/||b|| (0 when both are zero).
func attRelL2(a, b []float64) float64 {
	var num, den float64
	for i := range a {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// attNaiveDecode is an independent original-space implementation: each K and V is dequantized and
// un-rotated to the original space (float64), the query is used as given, and a two-pass softmax
// with natural exp is applied. It shares only DequantizeSlot with ExactDecode.
func attNaiveDecode(in *DecodeInput) []float64 {
	c := in.Cache
	f := c.F
	d := f.HeadSize
	g := in.NumQHeads / c.NumKVHeads
	out := make([]float64, in.NumQ()*in.NumQHeads*d)
	for i := 0; i < in.NumQ(); i++ {
		r, kl := int(in.QToReq[i]), int(in.QToKlen[i])
		if kl <= 0 || r < 0 || r >= in.NumReqs {
			continue
		}
		kl = min(kl, in.MaxBlocks*c.BlockSize)
		for hq := 0; hq < in.NumQHeads; hq++ {
			h := hq / g
			q := in.Query[(i*in.NumQHeads+hq)*d:][:d]
			var scores []float64
			var vals [][]float64
			for t := 0; t < kl; t++ {
				pb := int(in.BlockTable[r*in.MaxBlocks+t/c.BlockSize])
				if pb < 0 || pb >= c.NumBlocks {
					continue
				}
				kr, vr := DequantizeSlot(f, c.Slot(pb, h, t%c.BlockSize))
				ko := attUnrotate64(kr, in.KSigns, f.KRotBlock())
				vo := attUnrotate64(vr, in.VSigns, f.VRotBlock())
				var s float64
				for j := range q {
					s += float64(q[j]) * ko[j]
				}
				scores = append(scores, s*in.SMScale)
				vals = append(vals, vo)
			}
			if len(scores) == 0 {
				continue
			}
			mx := math.Inf(-1)
			for _, s := range scores {
				mx = math.Max(mx, s)
			}
			var l float64
			row := out[(i*in.NumQHeads+hq)*d:][:d]
			for t, s := range scores {
				p := math.Exp(s - mx)
				l += p
				for j := range row {
					row[j] += p * vals[t][j]
				}
			}
			for j := range row {
				row[j] /= l
			}
		}
	}
	return out
}

// attUnrotate64 un-rotates float32 rotated values in float64 (transform, then signs).
func attUnrotate64(y []float32, s Signs, block int) []float64 {
	x := make([]float64, len(y))
	for i, v := range y {
		x[i] = float64(v)
	}
	return Unrotate64(x, s, block)
}
