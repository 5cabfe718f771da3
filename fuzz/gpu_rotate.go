package fuzz

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// GPURotateCase is one rotate call (KERNELS.md §3.2) for FuzzRotate: T rows of H heads (with gaps
// between heads and after rows that must stay untouched), forward or inverse, 64-dim blocks (K
// layout) or 256, any sign pattern, finite and non-finite value kinds.
type GPURotateCase struct {
	Dtype     Dtype       `json:"dtype"`
	Rows      int         `json:"rows"`
	Heads     int         `json:"heads"`
	HeadGap   int         `json:"head_gap,omitempty"` // elements after each head
	RowGap    int         `json:"row_gap,omitempty"`  // elements after each row
	Block64   bool        `json:"block64"`
	Inverse   bool        `json:"inverse"`
	Signs     SignSpec    `json:"signs"`
	ValueSeed uint64      `json:"value_seed"`
	Kinds     []ValueKind `json:"kinds"`
}

// GPURotateCases draws rotate calls: 0..64 rows of 1..8 heads.
func GPURotateCases() *rapid.Generator[*GPURotateCase] {
	return rapid.Custom(func(t *rapid.T) *GPURotateCase {
		d := rapidDraw{t}
		c := &GPURotateCase{Dtype: pick(d, Dtypes, "dtype"), Rows: d.intn(0, 64, "rows"), Heads: d.intn(1, 8, "heads")}
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
	})
}

func (c *GPURotateCase) block() int {
	if c.Block64 {
		return 64
	}
	return 256
}

// CheckGPURotate judges rotate bit for bit: every element the oracle's float32 rotation
// (oracle.Rotate / oracle.Unrotate, FORMAT.md §3) rounded to the dtype, NaN for NaN; gaps
// untouched; canaries intact; the same bits when run twice. The oracle's own implementation is
// checked against an independent reading of FORMAT.md §3 (forward direction).
func CheckGPURotate(g *GPU, c *GPURotateCase) error {
	const d = 256
	sh, st := d+c.HeadGap, c.Heads*(d+c.HeadGap)+c.RowGap
	n := max(c.Rows*st, 1)
	x := make([]uint16, n)
	for i := range x {
		x[i] = 0x7BFF ^ uint16(i) // gap filler
	}
	signs := c.Signs.Signs(d)
	dr := rngDraw{newRand(c.ValueSeed, 13)}
	kinds := c.Kinds
	if len(kinds) == 0 {
		kinds = []ValueKind{Gaussian}
	}
	want := make([]uint16, n)
	copy(want, x)
	for tk := 0; tk < c.Rows; tk++ {
		for h := 0; h < c.Heads; h++ {
			row := drawValueSpec(dr, pick(dr, kinds, ""), c.Dtype).Build(d, signs, c.block())
			o := tk*st + h*sh
			for j, v := range row {
				x[o+j] = c.Dtype.Bits(v)
				row[j] = c.Dtype.FromBits(x[o+j])
			}
			var y []float32
			if c.Inverse {
				y = oracle.Unrotate(row, signs, c.block())
			} else {
				y = oracle.Rotate(row, signs, c.block())
				ref := refRotate(row, signs, c.block())
				for j := range y {
					if !sameF32(y[j], ref[j]) {
						return fmt.Errorf("oracle: oracle.Rotate row %d head %d dim %d = %g, FORMAT.md §3 read independently gives %g", tk, h, j, y[j], ref[j])
					}
				}
			}
			for j, v := range y {
				want[o+j] = c.Dtype.Bits(v)
			}
		}
	}
	impls, err := Impls(g, OpRotate)
	if err != nil {
		return err
	}
	for _, im := range impls {
		if im.Oracle {
			continue // checked above against the independent reading
		}
		got, err := c.rotateLib(g, x)
		if err != nil {
			return err
		}
		g.observe(im.Name, 0)
		for i := range got {
			w := want[i]
			nan := math.IsNaN(float64(c.Dtype.FromBits(w))) && math.IsNaN(float64(c.Dtype.FromBits(got[i])))
			if got[i] != w && !nan {
				in := i % st
				if in >= c.Heads*sh || in%sh >= d {
					return fmt.Errorf("%s: rotate wrote element %d in a gap (stride_token %d, stride_head %d): %#04x, was %#04x", im.Name, i, st, sh, got[i], x[i])
				}
				return fmt.Errorf("%s: rotate row %d head %d dim %d = %#04x (%g), expected %#04x (%g): the oracle's float32 rotation rounded to %s, bit for bit (bound 0: FORMAT.md §3 fixes every operation)",
					im.Name, i/st, in/sh, in%sh, got[i], c.Dtype.FromBits(got[i]), w, c.Dtype.FromBits(w), c.Dtype)
			}
		}
		again, err := c.rotateLib(g, x)
		if err != nil {
			return fmt.Errorf("second run: %w", err)
		}
		if err := sameBits(im, "rotate", got, again, elemIndex); err != nil {
			return err
		}
	}
	return nil
}

func (c *GPURotateCase) rotateLib(g *GPU, x []uint16) ([]uint16, error) {
	const d = 256
	bufs := &kernels.BufferSet{Dev: g.Dev, MinLen: 1}
	defer bufs.Free()
	buf := bufs.InOut("x", kernels.Uint16Bytes(x))
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	a := kernels.RotateArgs{X: buf.Ptr, StrideToken: int64(c.Heads*(d+c.HeadGap) + c.RowGap), StrideHead: int64(d + c.HeadGap), Dtype: kernelDtype(c.Dtype),
		HeadSize: d, NumTokens: int32(c.Rows), NumHds: int32(c.Heads), Signs: kernels.SignWords(c.Signs.Signs(d).Words())}
	if c.Block64 {
		a.KLayout = 1
	}
	if c.Inverse {
		a.Inverse = 1
	}
	if err := g.finish(bufs, "rotate", g.Dev.Rotate(a)); err != nil {
		return nil, err
	}
	out, err := buf.ReadAll()
	if err != nil {
		return nil, err
	}
	return kernels.BytesUint16(out), nil
}
