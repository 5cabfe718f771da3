package oracle

import (
	"fmt"
	"math"
)

// Range is the token range [Lo, Hi) of one split.
type Range struct{ Lo, Hi int }

// Geometry is a split-KV geometry: contiguous token ranges, in order, starting at 0 (docs/contract.md
// §3.3). Ranges may be empty, and there may be more ranges than tokens. A row attends to the
// part of each range below its klen.
type Geometry []Range

// MaxSplits is the largest num_splits the decode operation accepts.
const MaxSplits = 1024

// WMMAMaxSplits is the cap on splits of the upstream WMMA tier's geometry.
const WMMAMaxSplits = 192

// Validate checks that g is contiguous from 0 and covers tokens 0..kvMax−1.
func (g Geometry) Validate(kvMax int) error {
	if len(g) == 0 {
		return fmt.Errorf("split geometry: no ranges, expected at least one")
	}
	if g[0].Lo != 0 {
		return fmt.Errorf("split geometry: range 0 starts at %d, expected 0", g[0].Lo)
	}
	for s, r := range g {
		if r.Hi < r.Lo {
			return fmt.Errorf("split geometry: range %d is [%d,%d), expected Lo ≤ Hi", s, r.Lo, r.Hi)
		}
		if s > 0 && r.Lo != g[s-1].Hi {
			return fmt.Errorf("split geometry: range %d starts at %d, expected %d (where range %d ends)", s, r.Lo, g[s-1].Hi, s-1)
		}
	}
	if end := g[len(g)-1].Hi; end < kvMax {
		return fmt.Errorf("split geometry: ranges cover tokens 0..%d, expected to cover 0..%d (kv_max %d)", end-1, kvMax-1, kvMax)
	}
	return nil
}

func checkSplits(kvMax, numSplits int) error {
	if kvMax < 0 {
		return fmt.Errorf("split geometry: kv_max %d, expected ≥ 0", kvMax)
	}
	if numSplits < 1 || numSplits > MaxSplits {
		return fmt.Errorf("split geometry: num_splits %d, expected 1..%d", numSplits, MaxSplits)
	}
	return nil
}

// evenGeometry is n ranges of per tokens each, clamped to kvMax.
func evenGeometry(kvMax, n, per int) Geometry {
	g := make(Geometry, n)
	for s := range g {
		g[s] = Range{min(s*per, kvMax), min((s+1)*per, kvMax)}
	}
	return g
}

// PortableGeometry is the portable tier's geometry: numSplits ranges of ⌈kvMax/numSplits⌉ tokens
// (the last ones clamped to kvMax, possibly empty).
func PortableGeometry(kvMax, numSplits int) (Geometry, error) {
	if err := checkSplits(kvMax, numSplits); err != nil {
		return nil, err
	}
	return evenGeometry(kvMax, numSplits, (kvMax+numSplits-1)/numSplits), nil
}

// WMMAGeometry is the upstream WMMA tier's geometry: min(numSplits, 192) ranges of
// max(⌈kvMax/ns⌉, 64) tokens rounded up to a multiple of 16 (clamped to kvMax, possibly empty).
func WMMAGeometry(kvMax, numSplits int) (Geometry, error) {
	if err := checkSplits(kvMax, numSplits); err != nil {
		return nil, err
	}
	ns := min(numSplits, WMMAMaxSplits)
	per := max((kvMax+ns-1)/ns, 64)
	per = (per + 15) / 16 * 16
	return evenGeometry(kvMax, ns, per), nil
}

// DefaultPartialStride is the default row stride P of a partials array (docs/contract.md §3.4).
const DefaultPartialStride = 260

// Partials is a split-partials array [NumQ][NumQHeads][NumSplits][Stride] in the log2 convention
// of docs/contract.md §3.4: row [0, HeadSize) is o_s = Σ_t 2^(s_t−m_s)·v̂_t (unnormalized, rotated V
// space), [HeadSize] is m_s = max_t s_t in log2 units (s_t = sm_scale·log2(e)·⟨q̂, k̂_t⟩; −inf for
// an empty split), [HeadSize+1] is l_s = Σ_t 2^(s_t−m_s) (0 when empty). Entries past HeadSize+1
// are padding.
type Partials struct {
	NumQ, NumQHeads, NumSplits int
	HeadSize, Stride           int
	Data                       []float64
}

// NewPartials allocates a partials array with every split empty (o 0, m −inf, l 0).
func NewPartials(numQ, numQHeads, numSplits, headSize, stride int) (*Partials, error) {
	p := &Partials{NumQ: numQ, NumQHeads: numQHeads, NumSplits: numSplits, HeadSize: headSize, Stride: stride}
	if err := p.checkShape(); err != nil {
		return nil, err
	}
	p.Data = make([]float64, numQ*numQHeads*numSplits*stride)
	for r := 0; r < numQ*numQHeads*numSplits; r++ {
		p.Data[r*stride+headSize] = math.Inf(-1)
	}
	return p, nil
}

// PartialsFromFloat32 wraps fp32 partials (a kernel's workspace) as a Partials, converting exactly.
func PartialsFromFloat32(data []float32, numQ, numQHeads, numSplits, headSize, stride int) (*Partials, error) {
	p := &Partials{NumQ: numQ, NumQHeads: numQHeads, NumSplits: numSplits, HeadSize: headSize, Stride: stride}
	if err := p.checkShape(); err != nil {
		return nil, err
	}
	if want := numQ * numQHeads * numSplits * stride; len(data) != want {
		return nil, fmt.Errorf("partials: %d values, expected num_q %d × num_q_heads %d × splits %d × stride %d = %d", len(data), numQ, numQHeads, numSplits, stride, want)
	}
	p.Data = make([]float64, len(data))
	for i, x := range data {
		p.Data[i] = float64(x)
	}
	return p, nil
}

func (p *Partials) checkShape() error {
	if p.NumQ < 0 || p.NumQHeads <= 0 || p.NumSplits <= 0 || p.HeadSize <= 0 {
		return fmt.Errorf("partials: num_q %d, num_q_heads %d, splits %d, head_size %d: expected num_q ≥ 0 and the rest positive", p.NumQ, p.NumQHeads, p.NumSplits, p.HeadSize)
	}
	if p.Stride < p.HeadSize+2 {
		return fmt.Errorf("partials: row stride %d, expected ≥ head_size+2 = %d", p.Stride, p.HeadSize+2)
	}
	return nil
}

// Row returns split s of (query q, head h): Stride values, o at [0, HeadSize), m at [HeadSize],
// l at [HeadSize+1].
func (p *Partials) Row(q, h, s int) []float64 {
	o := ((q*p.NumQHeads+h)*p.NumSplits + s) * p.Stride
	return p.Data[o : o+p.Stride]
}

// DecodePartials computes exact (float64) split partials of decode attention for the geometry g,
// which must cover in.KVMax() tokens, with row stride stride (0 means DefaultPartialStride).
// Split s of row i holds the tokens of g[s] below Klen(i) whose physical block is valid.
func DecodePartials(in *DecodeInput, g Geometry, stride int) (*Partials, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := g.Validate(in.KVMax()); err != nil {
		return nil, fmt.Errorf("decode partials: %w", err)
	}
	if stride == 0 {
		stride = DefaultPartialStride
	}
	d := in.Cache.F.HeadSize
	p, err := NewPartials(in.NumQ(), in.NumQHeads, len(g), d, stride)
	if err != nil {
		return nil, fmt.Errorf("decode partials: %w", err)
	}
	e := newDecodeEngine(in)
	G := in.Group()
	accs := make([]softmaxAcc, G)
	for k := range accs {
		accs[k] = newSoftmaxAcc(d)
	}
	for i := 0; i < in.NumQ(); i++ {
		klen := in.Klen(i)
		if klen == 0 {
			continue
		}
		for h := 0; h < in.Cache.NumKVHeads; h++ {
			e.loadQueries(i, h)
			for s, r := range g {
				for k := range accs {
					accs[k].reset()
				}
				e.addRange(i, h, min(r.Lo, klen), min(r.Hi, klen), accs)
				for k := range accs {
					row := p.Row(i, h*G+k, s)
					copy(row[:d], accs[k].o)
					row[d], row[d+1] = accs[k].m, accs[k].l
				}
			}
		}
	}
	return p, nil
}

// MergePartials is the reduce of docs/contract.md §3.4 in float64: per (q, head), M = max_s m_s,
// w_s = 2^(m_s−M) (0 when m_s = −inf, and then o_s is not read), L = Σ w_s l_s, O = Σ w_s o_s,
// y = the inverse V rotation of O (f's V block, signs vs), out = y/L, or 0 when L = 0. The result is
// [NumQ][NumQHeads][HeadSize] in the original space. An m_s that is NaN or +inf is an error.
func MergePartials(p *Partials, f Format, vs Signs) ([]float64, error) {
	if err := p.checkShape(); err != nil {
		return nil, err
	}
	d := p.HeadSize
	if d != f.HeadSize {
		return nil, fmt.Errorf("merge partials: head_size %d, expected the format's %d", d, f.HeadSize)
	}
	if len(vs) < d {
		return nil, fmt.Errorf("merge partials: V sign pattern of %d dims, expected at least %d", len(vs), d)
	}
	if want := p.NumQ * p.NumQHeads * p.NumSplits * p.Stride; len(p.Data) != want {
		return nil, fmt.Errorf("merge partials: %d values, expected %d", len(p.Data), want)
	}
	out := make([]float64, p.NumQ*p.NumQHeads*d)
	O := make([]float64, d)
	for q := 0; q < p.NumQ; q++ {
		for h := 0; h < p.NumQHeads; h++ {
			M := math.Inf(-1)
			for s := 0; s < p.NumSplits; s++ {
				m := p.Row(q, h, s)[d]
				if math.IsNaN(m) || math.IsInf(m, 1) {
					return nil, fmt.Errorf("merge partials: m of (q %d, head %d, split %d) is %v, expected a finite value or −inf", q, h, s, m)
				}
				M = math.Max(M, m)
			}
			if math.IsInf(M, -1) {
				continue // every split empty: zeros
			}
			clear(O)
			var L float64
			for s := 0; s < p.NumSplits; s++ {
				row := p.Row(q, h, s)
				if math.IsInf(row[d], -1) {
					continue
				}
				w := math.Exp2(row[d] - M)
				L += w * row[d+1]
				for i := range O {
					O[i] += w * row[i]
				}
			}
			if L == 0 {
				continue
			}
			dst := out[(q*p.NumQHeads+h)*d:][:d]
			copy(dst, O)
			attUnrotateInPlace(dst, vs, f.VRotBlock())
			for j := range dst {
				dst[j] /= L
			}
		}
	}
	return out, nil
}
