package harness

import (
	"math"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/internal/specref"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// RotateCall is one rotate call (docs/contract.md §3.2): X holds Rows rows of Heads heads of 256
// dtype values (bits), HeadGap elements after each head and RowGap after each row (gaps that must
// stay untouched), rotated in place forward or inverse, over 64-dim blocks (the K layout of the
// block-K formats) or all 256 dims, with the given signs.
type RotateCall struct {
	Dtype           Dtype
	Rows, Heads     int
	HeadGap, RowGap int
	Block64         bool
	Inverse         bool
	Signs           oracle.Signs
	X               []uint16 // max(Rows·row stride, 1) elements
}

// Op is arch.Rotate.
func (c *RotateCall) Op() arch.Op { return arch.Rotate }

func (c *RotateCall) block() int {
	if c.Block64 {
		return 64
	}
	return 256
}

func (c *RotateCall) strides() (head, row int) {
	return 256 + c.HeadGap, c.Heads*(256+c.HeadGap) + c.RowGap
}

// Want is the expected tensor after the call: every element the oracle's float32 rotation
// (oracle.Rotate / oracle.Unrotate, docs/format.md §3) of the row's values, rounded to the dtype;
// the gaps as they were.
func (c *RotateCall) Want() []uint16 {
	if c.Inverse {
		return c.apply(func(row []float32) []float32 { return oracle.Unrotate(row, c.Signs, c.block()) })
	}
	return c.apply(func(row []float32) []float32 { return oracle.Rotate(row, c.Signs, c.block()) })
}

// byDefinition is the oracle's implementation of the op: the rotation as docs/format.md §3
// defines it (specref, written apart from the oracle's FWHT), rounded to the dtype. The judge
// holds it to Want bit for bit, so the oracle implementation is two independent computations
// compared, not Want compared with itself.
func (c *RotateCall) byDefinition() []uint16 {
	if c.Inverse {
		return c.apply(func(row []float32) []float32 { return specref.Unrotate(row, c.Signs, c.block()) })
	}
	return c.apply(func(row []float32) []float32 { return specref.Rotate(row, c.Signs, c.block()) })
}

// apply is X with every head's 256 values replaced by f of them, rounded to the dtype; the gaps
// as they were.
func (c *RotateCall) apply(f func(row []float32) []float32) []uint16 {
	const d = 256
	sh, st := c.strides()
	out := append([]uint16(nil), c.X...)
	row := make([]float32, d)
	for tk := 0; tk < c.Rows; tk++ {
		for h := 0; h < c.Heads; h++ {
			o := tk*st + h*sh
			for j := range row {
				row[j] = c.Dtype.FromBits(c.X[o+j])
			}
			for j, x := range f(row) {
				out[o+j] = c.Dtype.Bits(x)
			}
		}
	}
	return out
}

// judge holds rotate bit for bit to Want (NaN for NaN), gaps untouched, canaries intact, the same
// bits twice. The oracle's implementation is the rotation by definition (byDefinition).
func (c *RotateCall) judge(l *Lib, im Impl) Verdict { return c.judgeAgainst(l, im, c.Want()) }

// judgeAgainst is judge with the expected tensor given.
func (c *RotateCall) judgeAgainst(l *Lib, im Impl, want []uint16) Verdict {
	const d = 256
	v := newVerdict(arch.Rotate, im)
	var got []uint16
	if im.Oracle {
		got = c.byDefinition()
	} else {
		var err error
		if got, err = runTwice("rotate", true, func() ([]uint16, error) { return c.runLib(l) }, elemIndex); err != nil {
			return v.fail(err)
		}
	}
	v.Output = kernels.Uint16Bytes(got)
	v.Judged = c.Rows * c.Heads * d
	sh, st := c.strides()
	for i := range got {
		w := want[i]
		nan := math.IsNaN(float64(c.Dtype.FromBits(w))) && math.IsNaN(float64(c.Dtype.FromBits(got[i])))
		if got[i] == w || nan {
			continue
		}
		v.Ratio = math.Inf(1)
		in := i % st
		if in >= c.Heads*sh || in%sh >= d {
			return v.failf("rotate wrote element %d in a gap (stride_token %d, stride_head %d): %#04x, was %#04x", i, st, sh, got[i], c.X[i])
		}
		return v.failf("rotate row %d head %d dim %d = %#04x (%g), expected %#04x (%g): the oracle's float32 rotation rounded to %s, bit for bit (bound 0: docs/format.md §3 fixes every operation)",
			i/st, in/sh, in%sh, got[i], c.Dtype.FromBits(got[i]), w, c.Dtype.FromBits(w), c.Dtype)
	}
	return v
}

func (c *RotateCall) runLib(l *Lib) ([]uint16, error) {
	const d = 256
	bufs := l.newBufs()
	defer bufs.Free()
	buf := bufs.InOut("x", kernels.Uint16Bytes(c.X))
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	sh, st := c.strides()
	a := kernels.RotateArgs{X: buf.Ptr, StrideToken: int64(st), StrideHead: int64(sh), Dtype: c.Dtype.Kernel(),
		HeadSize: d, NumTokens: int32(c.Rows), NumHds: int32(c.Heads), Signs: kernels.SignWords(c.Signs.Words())}
	if c.Block64 {
		a.KLayout = 1
	}
	if c.Inverse {
		a.Inverse = 1
	}
	if err := l.finish(bufs, "rotate", l.Runner().Rotate(a)); err != nil {
		return nil, err
	}
	out, err := buf.ReadAll()
	if err != nil {
		return nil, err
	}
	return kernels.BytesUint16(out), nil
}
