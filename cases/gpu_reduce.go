package cases

import (
	"math"
	"math/rand/v2"

	"github.com/octant-kv/octant/harness"

	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// Reduce row patterns: which splits of a (query, head) row are valid and how their maxima and
// sums look.
var reducePatterns = []string{"all", "empty", "mixed", "one", "lzero", "far", "nan-free-spread"}

// GPUReduceCase is one reduce call (docs/contract.md §3.4) on hand-made partials for FuzzReduce: rows
// drawn from reducePatterns (empty splits have m = −inf, l = 0 and o full of NaN that must never be
// read), 1..1024 splits, any partial stride, V signs, an output gap.
type GPUReduceCase struct {
	Dtype         harness.Dtype `json:"dtype"`
	NumQ          int           `json:"num_q"`
	Heads         int           `json:"heads"`
	Splits        int           `json:"splits"`
	PartialStride int           `json:"partial_stride"` // 0: default 260
	VSigns        SignSpec      `json:"v_signs"`
	Seed          uint64        `json:"seed"`
	Patterns      []string      `json:"patterns"`
	OutPad        int           `json:"out_pad,omitempty"`
	// HostileSeed, when not 0, fills the o of empty splits and the floats past 258 of every
	// partial row with ±inf, NaN and huge values instead of NaN (hostile.go, ReduceRegions).
	HostileSeed uint64 `json:"hostile_seed,omitempty"`
}

// GPUReduceCases draws reduce calls, at most 2^21 partial floats.
func GPUReduceCases() *rapid.Generator[*GPUReduceCase] {
	return rapid.Custom(func(t *rapid.T) *GPUReduceCase { return drawGPUReduceCase(rapidDraw{t}) })
}

func drawGPUReduceCase(d draw) *GPUReduceCase {
	c := &GPUReduceCase{Dtype: pick(d, harness.Dtypes, "dtype"), NumQ: d.intn(1, 8, "num_q"), Heads: d.intn(1, 8, "heads")}
	c.Splits = drawSplits(d, d.intn(1, 64, "kv_hint"), "splits")
	c.PartialStride = pick(d, []int{0, oracle.DefaultPartialStride, 264, 512}, "partial_stride")
	for c.NumQ*c.Heads*c.Splits*c.pstride() > 1<<21 && c.Splits > 1 {
		c.Splits /= 2
	}
	c.VSigns = drawSignSpec(d, "v_signs")
	c.Seed = d.u64("seed")
	n := d.intn(1, 3, "num_patterns")
	for i := 0; i < n; i++ {
		c.Patterns = append(c.Patterns, pick(d, reducePatterns, "pattern"))
	}
	c.OutPad = pick(d, []int{0, 0, 64}, "out_pad")
	if d.intn(0, 1, "hostile") == 1 {
		c.HostileSeed = d.u64("hostile_seed") | 1
	}
	return c
}

func (c *GPUReduceCase) pstride() int {
	if c.PartialStride == 0 {
		return oracle.DefaultPartialStride
	}
	return c.PartialStride
}

// partials builds the partials array [num_q][Hq][splits][stride] and each row's pattern.
func (c *GPUReduceCase) partials() ([]float32, []string) {
	P := c.pstride()
	r := newRand(c.Seed, 14)
	nan := float32(math.NaN())
	part := make([]float32, c.NumQ*c.Heads*c.Splits*P)
	for i := range part {
		part[i] = nan
	}
	pats := c.Patterns
	if len(pats) == 0 {
		pats = []string{"all"}
	}
	kinds := make([]string, c.NumQ*c.Heads)
	for row := range kinds {
		k := pats[r.IntN(len(pats))]
		kinds[row] = k
		one := r.IntN(c.Splits)
		for s := 0; s < c.Splits; s++ {
			FillPartial(r, part[(row*c.Splits+s)*P:][:P], k, s, one)
		}
	}
	return part, kinds
}

// Call builds the call the judges run (harness.ReduceCall).
func (c *GPUReduceCase) Call() (harness.Call, error) {
	part, kinds := c.partials()
	call := &harness.ReduceCall{Dtype: c.Dtype, NumQ: c.NumQ, Heads: c.Heads, Splits: c.Splits, PartialStride: c.PartialStride,
		Partials: part, VSigns: c.VSigns.Signs(256), OutPad: c.OutPad, RowKinds: kinds}
	if c.HostileSeed != 0 {
		call = hostileReduce(call, c.HostileSeed, ReduceRegions)
	}
	return call, nil
}

// FillPartial fills one split's partial p (256 output values, then m and l) of a row of pattern
// kind, s the split and one the row's split that is always valid under "mixed", "lzero" and
// "one". An invalid split gets m = -inf, l = 0 and its outputs untouched (NaN in a fresh array:
// they must never be read); a valid one a running maximum, a sum and outputs scaled by it. The
// draws from r are the same for every caller, so a case's seed reproduces its partials.
func FillPartial(r *rand.Rand, p []float32, kind string, s, one int) {
	valid := true
	switch kind {
	case "empty":
		valid = false
	case "mixed", "lzero":
		valid = r.IntN(2) == 0 || s == one
	case "one":
		valid = s == one
	}
	if !valid {
		p[256], p[257] = float32(math.Inf(-1)), 0
		return
	}
	m := float32(r.NormFloat64() * 8)
	switch kind {
	case "far":
		m = float32(-200 * r.Float64())
	case "nan-free-spread":
		m = float32(r.NormFloat64() * 60)
	}
	l := float32(1 + 40*r.Float64())
	if kind == "lzero" {
		l = 0
	}
	p[256], p[257] = m, l
	for i := 0; i < 256; i++ {
		p[i] = float32(r.NormFloat64()) * l
	}
}
