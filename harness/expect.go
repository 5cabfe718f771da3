package harness

import (
	"fmt"

	"github.com/octant-kv/octant/oracle"
)

// The judges' expectations of each op's output, for a Recording (Record): the same oracle values
// and bounds the judge holds the output to.

// attention fills the fields decode and prefill share: the model and bound of the declared
// profile, exact attention for the contract's rule, the dtype's rounding and overflow.
func attention(e *Expectation, dt Dtype, res *oracle.ProfileResult, exact []float64) error {
	u, abs, err := dt.Oracle().Rounding()
	if err != nil {
		return err
	}
	e.Model, e.Bound, e.Overflow, e.Exact = res.Model, res.Bound, res.Overflow, exact
	e.ContractRelL2, e.RoundU, e.RoundAbs = oracle.ContractRelL2, u, abs
	return nil
}

// expect is decode's expectation on im: every element within the declared profile's bound of its
// model, padding rows exactly ±0, the contract's rule against exact attention.
func (c *DecodeCall) expect(im Impl) (*Expectation, error) {
	p, err := declaredProfile(im, c.Op())
	if err != nil {
		return nil, err
	}
	res, err := c.profile(p)()
	if err != nil {
		return nil, err
	}
	ex, err := c.exact()()
	if err != nil {
		return nil, err
	}
	in := c.In
	d := in.Cache.F.HeadSize
	e := &Expectation{Kind: ExpectBound, Buffer: "out", Dtype: c.Dtype, Rows: in.NumQ(), RowElems: in.NumQHeads * d,
		Stride: in.NumQHeads*d + c.OutPad, Heads: in.NumQHeads, Profile: string(p),
		BoundWhy: fmt.Sprintf("the %s profile's fp32 arithmetic and %s output rounding, oracle.DecodeProfile, docs/bounds.md", p, c.Dtype)}
	for i := 0; i < in.NumQ(); i++ {
		if in.Klen(i) == 0 {
			e.ZeroRows = append(e.ZeroRows, i)
		}
	}
	return e, attention(e, c.Dtype, res, ex)
}

// expect is prefill's expectation on im: the rows of some sequence within the declared profile
// pair's bound, the contract's rule against exact prefill attention, the other rows unwritten.
func (c *PrefillCall) expect(im Impl) (*Expectation, error) {
	prefix, chunk, err := declaredPrefillProfiles(im)
	if err != nil {
		return nil, err
	}
	ex, err := c.exact()()
	if err != nil {
		return nil, err
	}
	res, err := c.profile(prefix, chunk)()
	if err != nil {
		return nil, err
	}
	in := c.In
	d := in.Cache.F.HeadSize
	rowLen := in.NumQHeads * d
	e := &Expectation{Kind: ExpectBound, Buffer: "out", Dtype: c.Dtype, Rows: in.NumTokens, RowElems: rowLen,
		Stride: rowLen + c.OutPad, Heads: in.NumQHeads, Profile: string(prefix + "+" + chunk),
		BoundWhy: "the profile pair's fp32 arithmetic and " + string(c.Dtype) + " output rounding, oracle.PrefillProfile, docs/bounds.md",
		Judged:   make([]bool, in.NumTokens*rowLen)}
	for i := 0; i < in.NumTokens; i++ {
		for j := i * rowLen; j < (i+1)*rowLen; j++ {
			e.Judged[j] = ex.written[i]
		}
	}
	return e, attention(e, c.Dtype, res, ex.out)
}

// expect is reduce's expectation: every element within oracle.ReduceBound of the exact merge,
// a NaN failing wherever it is.
func (c *ReduceCall) expect() (*Expectation, error) {
	const d = 256
	P := c.pstride()
	p, err := oracle.PartialsFromFloat32(c.Partials, c.NumQ, c.Heads, c.Splits, d, P)
	if err != nil {
		return nil, err
	}
	f, _ := oracle.KernelFormat(oracle.K3V4)
	model, err := oracle.MergePartials(p, f, c.VSigns)
	if err != nil {
		return nil, err
	}
	e := &Expectation{Kind: ExpectBound, Buffer: "out", Dtype: c.Dtype, Rows: c.NumQ, RowElems: c.Heads * d,
		Stride: c.Heads*d + c.OutPad, Heads: c.Heads, Model: model, Bound: make([]float64, len(model)), NaNFails: true,
		BoundWhy: fmt.Sprintf("oracle.ReduceBound: fp32 merge, exp2 within 2 ulps, FWHT, 1/L, %s rounding", c.Dtype)}
	for row := 0; row < c.NumQ*c.Heads; row++ {
		rows := make([][]float32, c.Splits)
		for s := range rows {
			rows[s] = c.Partials[(row*c.Splits+s)*P:][:P]
		}
		copy(e.Bound[row*d:], oracle.ReduceBound(rows, model[row*d:(row+1)*d], c.Dtype.Oracle()))
	}
	return e, nil
}

// expect is rotate's expectation: the tensor Want, bit for bit, gaps included.
func (c *RotateCall) expect() *Expectation {
	sh, st := c.strides()
	return &Expectation{Kind: ExpectBits, Buffer: "x", Dtype: c.Dtype, Rows: c.Rows, RowElems: c.Heads * sh, Stride: st,
		Heads: c.Heads, HeadStride: sh, Want: c.Want(),
		BoundWhy: fmt.Sprintf("the oracle's float32 rotation rounded to %s, bit for bit (bound 0: docs/format.md §3 fixes every operation)", c.Dtype)}
}

// expect is store's expectation: the oracle's slot bytes in every written slot, every other byte
// of the cache (pad bytes included) as before.
func (c *StoreCall) expect() (*Expectation, error) {
	want, err := c.runOracle()
	if err != nil {
		return nil, err
	}
	view := c.Cache
	f := view.F
	e := &Expectation{Kind: ExpectSlots, Buffer: "cache", WantCache: want,
		BoundWhy: "the oracle's slot bytes (oracle.Quantizer); docs/format.md §10 also accepts some ties and roundings, which Octant's judge re-derives"}
	for tk, s := range c.Mapping {
		if !c.live(s) {
			continue
		}
		for h := 0; h < view.NumKVHeads; h++ {
			b, t := int(s)/view.BlockSize, int(s)%view.BlockSize
			e.Slots = append(e.Slots, ExpectedSlot{Offset: view.SlotOffset(b, h, t), DataBytes: f.SlotBytes() - f.PadBytes(), SlotBytes: f.SlotBytes(),
				Name: fmt.Sprintf("slot_mapping[%d] = %d (block %d offset %d), KV head %d", tk, s, b, t, h)})
		}
	}
	return e, nil
}
