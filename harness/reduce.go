package harness

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// ReduceCall is one reduce call (docs/contract.md §3.4) on given partials: Partials is
// [NumQ][Heads][Splits][stride] float32 (stride PartialStride, 0 for the default), V signs, and
// output rows with OutPad elements of gap after them. RowKinds, when set, names each (query, head)
// row's pattern for messages ("empty", "far", ...).
type ReduceCall struct {
	Dtype         Dtype
	NumQ, Heads   int
	Splits        int
	PartialStride int
	Partials      []float32
	VSigns        oracle.Signs
	OutPad        int
	RowKinds      []string
}

// Op is arch.Reduce.
func (c *ReduceCall) Op() arch.Op { return arch.Reduce }

func (c *ReduceCall) pstride() int {
	if c.PartialStride == 0 {
		return oracle.DefaultPartialStride
	}
	return c.PartialStride
}

func (c *ReduceCall) rowKind(row int) string {
	if row < len(c.RowKinds) {
		return c.RowKinds[row] + " splits"
	}
	return fmt.Sprintf("%d splits", c.Splits)
}

// judge compares reduce with the exact merge (oracle.MergePartials) under oracle.ReduceBound
// (docs/bounds.md, "Reduce on hand-made partials"): the oracle's float32 reduce (in the order
// docs/kernels.md gives) and every library are held to it; gaps untouched, canaries intact, inputs
// unchanged, the same bits twice.
func (c *ReduceCall) judge(l *Lib, im Impl) Verdict {
	const d = 256
	v := newVerdict(arch.Reduce, im)
	P := c.pstride()
	p, err := oracle.PartialsFromFloat32(c.Partials, c.NumQ, c.Heads, c.Splits, d, P)
	if err != nil {
		return v.fail(err)
	}
	f, _ := oracle.KernelFormat(oracle.K3V4)
	model, err := oracle.MergePartials(p, f, c.VSigns)
	if err != nil {
		return v.fail(err)
	}
	var got []uint16
	if im.Oracle {
		got = c.runOracle()
	} else {
		if got, err = runTwice("reduce", true, func() ([]uint16, error) { return c.runLib(l) }, elemIndex); err != nil {
			return v.fail(err)
		}
	}
	v.Output = kernels.Uint16Bytes(got)
	od := c.Dtype.Oracle()
	for row := 0; row < c.NumQ*c.Heads; row++ {
		rows := make([][]float32, c.Splits)
		for s := range rows {
			rows[s] = c.Partials[(row*c.Splits+s)*P:][:P]
		}
		bound := oracle.ReduceBound(rows, model[row*d:(row+1)*d], od)
		for j := 0; j < d; j++ {
			x := float64(c.Dtype.FromBits(got[row*d+j]))
			m, b := model[row*d+j], bound[j]
			e := math.Abs(x - m)
			v.Judged++
			if e > 0 && b > 0 {
				v.Ratio = math.Max(v.Ratio, e/b)
			}
			if e > b || math.IsNaN(e) {
				v.Ratio = math.Inf(1)
				return v.failf("reduce row %d head %d (%s) dim %d = %.9g (%#04x), exact merge %.9g ± bound %.3g (oracle.ReduceBound: fp32 merge, exp2 within 2 ulps, FWHT, 1/L, %s rounding)",
					row/c.Heads, row%c.Heads, c.rowKind(row), j, x, got[row*d+j], m, b, c.Dtype)
			}
		}
	}
	return v
}

// runOracle is the reduce in float32 in the order docs/kernels.md gives: NaN-ignoring max M, then
// per valid split in order w = exp2(m − M), L = fma(w, l, L), o = fma(w, o_s, o); the inverse V
// rotation of o; o/L (0 when L = 0); rounding to the dtype.
func (c *ReduceCall) runOracle() []uint16 {
	const d = 256
	P := c.pstride()
	out := make([]uint16, c.NumQ*c.Heads*d)
	fma := func(a, b, x float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(x))) }
	for row := 0; row < c.NumQ*c.Heads; row++ {
		M := float32(math.Inf(-1))
		for s := 0; s < c.Splits; s++ {
			if m := c.Partials[(row*c.Splits+s)*P+256]; m > M {
				M = m
			}
		}
		var L float32
		o := make([]float32, d)
		if !math.IsInf(float64(M), -1) {
			for s := 0; s < c.Splits; s++ {
				p := c.Partials[(row*c.Splits+s)*P:][:P]
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
		o = oracle.Unrotate(o, c.VSigns, d)
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

func (c *ReduceCall) runLib(l *Lib) ([]uint16, error) {
	const d = 256
	bufs := l.newBufs()
	defer bufs.Free()
	pb := kernels.Float32Bytes(c.Partials)
	in := bufs.Input("partials", pb)
	outTok := c.Heads*d + c.OutPad
	out := bufs.Output("out", 2*c.NumQ*outTok, 0xFF)
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	a := kernels.ReduceArgs{Out: out.Ptr, Partials: in.Ptr, PartialsBytes: uint64(len(pb)), OutStrideToken: int64(outTok), OutStrideHead: d,
		Dtype: c.Dtype.Kernel(), HeadSize: d, NumQ: int32(c.NumQ), NumQHeads: int32(c.Heads), NumSplits: int32(c.Splits),
		PartialStride: int32(c.PartialStride), VSigns: kernels.SignWords(c.VSigns.Words())}
	if err := l.finish(bufs, "reduce", l.Runner().Reduce(a)); err != nil {
		return nil, err
	}
	return outputRows(out, "reduce", c.NumQ, c.Heads*d, outTok)
}
