package cases

import (
	"github.com/octant-kv/octant/harness"

	"pgregory.net/rapid"
)

// GPURotateCase is one rotate call (docs/contract.md §3.2) for FuzzRotate: T rows of H heads (with gaps
// between heads and after rows that must stay untouched), forward or inverse, 64-dim blocks (K
// layout) or 256, any sign pattern, finite and non-finite value kinds.
type GPURotateCase struct {
	Dtype     harness.Dtype `json:"dtype"`
	Rows      int           `json:"rows"`
	Heads     int           `json:"heads"`
	HeadGap   int           `json:"head_gap,omitempty"` // elements after each head
	RowGap    int           `json:"row_gap,omitempty"`  // elements after each row
	Block64   bool          `json:"block64"`
	Inverse   bool          `json:"inverse"`
	Signs     SignSpec      `json:"signs"`
	ValueSeed uint64        `json:"value_seed"`
	Kinds     []ValueKind   `json:"kinds"`
}

// GPURotateCases draws rotate calls: 0..64 rows of 1..8 heads.
func GPURotateCases() *rapid.Generator[*GPURotateCase] {
	return rapid.Custom(func(t *rapid.T) *GPURotateCase { return drawGPURotateCase(rapidDraw{t}) })
}

func drawGPURotateCase(d draw) *GPURotateCase {
	c := &GPURotateCase{Dtype: pick(d, harness.Dtypes, "dtype"), Rows: d.intn(0, 64, "rows"), Heads: d.intn(1, 8, "heads")}
	if d.intn(0, 2, "strided") == 2 {
		c.HeadGap, c.RowGap = 8*d.intn(0, 4, "head_gap"), 8*d.intn(0, 4, "row_gap")
	}
	c.Block64 = d.intn(0, 1, "block64") == 1
	c.Inverse = d.intn(0, 1, "inverse") == 1
	c.Signs = drawSignSpec(d, "signs")
	c.ValueSeed = d.u64("value_seed")
	c.Kinds = drawKindMix(d, FiniteKinds, "kind")
	if d.intn(0, 3, "non_finite") == 3 {
		c.Kinds = append(c.Kinds, pick(d, NonFiniteKinds, "non_finite_kind"))
	}
	return c
}

func (c *GPURotateCase) Block() int {
	if c.Block64 {
		return 64
	}
	return 256
}

// Call builds the call the judges run (harness.RotateCall): the tensor with each head's values
// drawn from the kinds and the gaps filled with a pattern that must survive.
func (c *GPURotateCase) Call() (harness.Call, error) {
	const d = 256
	sh, st := d+c.HeadGap, c.Heads*(d+c.HeadGap)+c.RowGap
	x := make([]uint16, max(c.Rows*st, 1))
	for i := range x {
		x[i] = 0x7BFF ^ uint16(i) // gap filler
	}
	signs := c.Signs.Signs(d)
	dr := rngDraw{newRand(c.ValueSeed, 13)}
	kinds := c.Kinds
	if len(kinds) == 0 {
		kinds = []ValueKind{Gaussian}
	}
	for tk := 0; tk < c.Rows; tk++ {
		for h := 0; h < c.Heads; h++ {
			row := drawValueSpec(dr, pick(dr, kinds, ""), c.Dtype).Build(d, signs, c.Block())
			for j, v := range row {
				x[tk*st+h*sh+j] = c.Dtype.Bits(v)
			}
		}
	}
	return &harness.RotateCall{Dtype: c.Dtype, Rows: c.Rows, Heads: c.Heads, HeadGap: c.HeadGap, RowGap: c.RowGap, Block64: c.Block64,
		Inverse: c.Inverse, Signs: signs, X: x}, nil
}
