package fuzz

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// Reduce row patterns: which splits of a (query, head) row are valid and how their maxima and
// sums look.
var reducePatterns = []string{"all", "empty", "mixed", "one", "lzero", "far", "nan-free-spread"}

// GPUReduceCase is one reduce call (KERNELS.md §3.4) on hand-made partials for FuzzReduce: rows
// drawn from reducePatterns (empty splits have m = −inf, l = 0 and o full of NaN that must never be
// read), 1..1024 splits, any partial stride, V signs, an output gap.
type GPUReduceCase struct {
	Dtype         Dtype    `json:"dtype"`
	NumQ          int      `json:"num_q"`
	Heads         int      `json:"heads"`
	Splits        int      `json:"splits"`
	PartialStride int      `json:"partial_stride"` // 0: default 260
	VSigns        SignSpec `json:"v_signs"`
	Seed          uint64   `json:"seed"`
	Patterns      []string `json:"patterns"`
	OutPad        int      `json:"out_pad,omitempty"`
}

// GPUReduceCases draws reduce calls, at most 2^21 partial floats.
func GPUReduceCases() *rapid.Generator[*GPUReduceCase] {
	return rapid.Custom(func(t *rapid.T) *GPUReduceCase {
		d := rapidDraw{t}
		c := &GPUReduceCase{Dtype: pick(d, Dtypes, "dtype"), NumQ: d.intn(1, 8, "num_q"), Heads: d.intn(1, 8, "heads")}
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
		return c
	})
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
	nan, ninf := float32(math.NaN()), float32(math.Inf(-1))
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
			p := part[(row*c.Splits+s)*P:][:P]
			valid := true
			switch k {
			case "empty":
				valid = false
			case "mixed", "lzero":
				valid = r.IntN(2) == 0 || s == one
			case "one":
				valid = s == one
			}
			if !valid {
				p[256], p[257] = ninf, 0
				continue
			}
			m := float32(r.NormFloat64() * 8)
			switch k {
			case "far":
				m = float32(-200 * r.Float64())
			case "nan-free-spread":
				m = float32(r.NormFloat64() * 60)
			}
			l := float32(1 + 40*r.Float64())
			if k == "lzero" {
				l = 0
			}
			p[256], p[257] = m, l
			for i := 0; i < 256; i++ {
				p[i] = float32(r.NormFloat64()) * l
			}
		}
	}
	return part, kinds
}

// CheckGPUReduce compares reduce with oracle.MergePartials under oracle.ReduceBound (docs/bounds.md,
// "Reduce on hand-made partials"): the oracle's float32 reduce (the order docs/kernels.md gives) and
// every library are held to it; gaps untouched, canaries intact, inputs unchanged, same bits twice.
func CheckGPUReduce(g *GPU, c *GPUReduceCase) error {
	const d = 256
	P := c.pstride()
	part, kinds := c.partials()
	vs := c.VSigns.Signs(d)
	p, err := oracle.PartialsFromFloat32(part, c.NumQ, c.Heads, c.Splits, d, P)
	if err != nil {
		return err
	}
	f, _ := oracle.KernelFormat(oracle.K3V4)
	model, err := oracle.MergePartials(p, f, vs)
	if err != nil {
		return err
	}
	impls, err := Impls(g, OpReduce)
	if err != nil {
		return err
	}
	od := c.Dtype.Oracle()
	bounds := make([][]float64, c.NumQ*c.Heads)
	for row := range bounds {
		rows := make([][]float32, c.Splits)
		for s := range rows {
			rows[s] = part[(row*c.Splits+s)*P:][:P]
		}
		bounds[row] = oracle.ReduceBound(rows, model[row*d:(row+1)*d], od)
	}
	for _, im := range impls {
		var got []uint16
		if im.Oracle {
			got = c.reduceF32(part, vs)
		} else {
			got, err = c.reduceLib(g, part, vs)
			if err != nil {
				return err
			}
			again, err := c.reduceLib(g, part, vs)
			if err != nil {
				return fmt.Errorf("second run: %w", err)
			}
			if err := sameBits(im, "reduce", got, again, elemIndex); err != nil {
				return err
			}
		}
		worst := 0.0
		for row := range bounds {
			for j := 0; j < d; j++ {
				v := float64(c.Dtype.FromBits(got[row*d+j]))
				m, b := model[row*d+j], bounds[row][j]
				e := math.Abs(v - m)
				if e > 0 && b > 0 {
					worst = math.Max(worst, e/b)
				}
				if e > b || math.IsNaN(e) {
					return fmt.Errorf("%s: reduce row %d head %d (%s splits) dim %d = %.9g (%#04x), exact merge %.9g ± bound %.3g (oracle.ReduceBound: fp32 merge, exp2 within 2 ulps, FWHT, 1/L, %s rounding)",
						im.Name, row/c.Heads, row%c.Heads, kinds[row], j, v, got[row*d+j], m, b, c.Dtype)
				}
			}
		}
		if !im.Oracle {
			g.observe(im.Name, worst)
		}
	}
	return nil
}

// reduceF32 is the reduce in float32 in the order docs/kernels.md gives: NaN-ignoring max M, then
// per valid split in order w = exp2(m − M), L = fma(w, l, L), o = fma(w, o_s, o); the inverse V
// rotation of o; o/L (0 when L = 0); rounding to the dtype.
func (c *GPUReduceCase) reduceF32(part []float32, vs oracle.Signs) []uint16 {
	const d = 256
	P := c.pstride()
	out := make([]uint16, c.NumQ*c.Heads*d)
	fma := func(a, b, x float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(x))) }
	for row := 0; row < c.NumQ*c.Heads; row++ {
		M := float32(math.Inf(-1))
		for s := 0; s < c.Splits; s++ {
			if m := part[(row*c.Splits+s)*P+256]; m > M {
				M = m
			}
		}
		var L float32
		o := make([]float32, d)
		if !math.IsInf(float64(M), -1) {
			for s := 0; s < c.Splits; s++ {
				p := part[(row*c.Splits+s)*P:][:P]
				if math.IsInf(float64(p[256]), -1) {
					continue
				}
				w := float32(math.Exp2(float64(p[256] - M)))
				L = fma(w, p[257], L)
				for e := range o {
					o[e] = fma(w, p[e], o[e])
				}
			}
		}
		o = oracle.Unrotate(o, vs, d)
		for e, x := range o {
			if L == 0 {
				x = 0
			} else {
				x /= L
			}
			out[row*d+e] = c.Dtype.Bits(x)
		}
	}
	return out
}

func (c *GPUReduceCase) reduceLib(g *GPU, part []float32, vs oracle.Signs) ([]uint16, error) {
	const d = 256
	bufs := &kernels.BufferSet{Dev: g.Dev, MinLen: 1}
	defer bufs.Free()
	pb := kernels.Float32Bytes(part)
	in := bufs.Input("partials", pb)
	outTok := c.Heads*d + c.OutPad
	out := bufs.Output("out", 2*c.NumQ*outTok, 0xFF)
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	a := kernels.ReduceArgs{Out: out.Ptr, Partials: in.Ptr, PartialsBytes: uint64(len(pb)), OutStrideToken: int64(outTok), OutStrideHead: d,
		Dtype: kernelDtype(c.Dtype), HeadSize: d, NumQ: int32(c.NumQ), NumQHeads: int32(c.Heads), NumSplits: int32(c.Splits),
		PartialStride: int32(c.PartialStride), VSigns: kernels.SignWords(vs.Words())}
	if err := g.finish(bufs, "reduce", g.Dev.Reduce(a)); err != nil {
		return nil, err
	}
	return outputRows(out, "reduce", c.NumQ, c.Heads*d, outTok)
}
