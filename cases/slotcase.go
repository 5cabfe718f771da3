package cases

import (
	"encoding/hex"
	"fmt"

	"github.com/octant-kv/octant/harness"

	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// SlotCase is one (token, head) for the store: a format, K and V in an activation dtype and the
// sign patterns. K and V are stored as the dtype's raw bits (hex, 4 digits per value, dim 0
// first), so a reproducer holds the exact input whatever happens to the generators later; the
// recipes are kept for the record.
type SlotCase struct {
	Format string        `json:"format"`
	Dtype  harness.Dtype `json:"dtype"`
	K      string        `json:"k"`
	V      string        `json:"v"`
	Signs  SignPair      `json:"signs"`
	KSpec  *ValueSpec    `json:"k_spec,omitempty"`
	VSpec  *ValueSpec    `json:"v_spec,omitempty"`
	// Flips are single-bit corruptions of the oracle's slot that the acceptance property judges,
	// one at a time.
	Flips []BitFlip `json:"flips,omitempty"`
}

// BitFlip names one bit of a slot.
type BitFlip struct {
	Byte int `json:"byte"`
	Bit  int `json:"bit"`
}

// EncodeValues writes values of dtype dt as hex bits.
func EncodeValues(dt harness.Dtype, x []float32) string {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		h := dt.Bits(v)
		b[2*i], b[2*i+1] = byte(h>>8), byte(h)
	}
	return hex.EncodeToString(b)
}

// DecodeValues reads hex bits of dtype dt.
func DecodeValues(dt harness.Dtype, s string) ([]float32, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b)%2 != 0 {
		return nil, fmt.Errorf("values %.20q…: expected hex, 4 digits per value", s)
	}
	x := make([]float32, len(b)/2)
	for i := range x {
		x[i] = dt.FromBits(uint16(b[2*i])<<8 | uint16(b[2*i+1]))
	}
	return x, nil
}

// slotInputs are a SlotCase decoded.
type slotInputs struct {
	f      oracle.Format
	k, v   []float32
	ks, vs oracle.Signs
}

func (c *SlotCase) inputs() (*slotInputs, error) {
	f, err := KernelFormat(c.Format)
	if err != nil {
		return nil, err
	}
	if !c.Dtype.Valid() {
		return nil, fmt.Errorf("slot case: dtype %q, expected fp16 or bf16", c.Dtype)
	}
	in := &slotInputs{f: f, ks: c.Signs.K.Signs(f.HeadSize), vs: c.Signs.V.Signs(f.HeadSize)}
	if in.k, err = DecodeValues(c.Dtype, c.K); err != nil {
		return nil, fmt.Errorf("slot case K: %w", err)
	}
	if in.v, err = DecodeValues(c.Dtype, c.V); err != nil {
		return nil, fmt.Errorf("slot case V: %w", err)
	}
	if len(in.k) != f.HeadSize || len(in.v) != f.HeadSize {
		return nil, fmt.Errorf("slot case: %d K and %d V values, expected %d each", len(in.k), len(in.v), f.HeadSize)
	}
	return in, nil
}

// NewSlotCase assembles a case from values (exactly representable in dt).
func NewSlotCase(f oracle.Format, dt harness.Dtype, k, v []float32, sp SignPair) *SlotCase {
	return &SlotCase{Format: f.Name(), Dtype: dt, K: EncodeValues(dt, k), V: EncodeValues(dt, v), Signs: sp}
}

// SlotCaseOptions choose what SlotCases draws.
type SlotCaseOptions struct {
	// NonFinite is the chance, in eighths, that K (and, independently, V) comes from
	// NonFiniteValues instead of Values. 0 never; 8 always.
	NonFinite int
	// Flips is the most bit flips to draw (0: none).
	Flips int
}

// SlotCases draws slot cases: any kernel format and dtype, K and V of independent kinds (finite
// kinds; non-finite ones only as o.NonFinite allows), default or random K and V signs, and up to
// o.Flips bit flips aimed at codes, scales and pad bytes.
func SlotCases(o SlotCaseOptions) *rapid.Generator[*SlotCase] {
	return rapid.Custom(func(t *rapid.T) *SlotCase {
		id := rapid.SampledFrom(oracle.AllFormats).Draw(t, "format")
		f, _ := oracle.KernelFormat(id)
		dt := DtypeGen().Draw(t, "dtype")
		sp := SignPairs().Draw(t, "signs")
		ks, vs := sp.K.Signs(f.HeadSize), sp.V.Signs(f.HeadSize)
		vec := func(label string, s oracle.Signs, block int) Vector {
			ctx := VecContext{Dtype: dt, Signs: s, Block: block}
			if o.NonFinite > 0 && rapid.IntRange(0, 7).Draw(t, label+"_nonfinite") < o.NonFinite {
				return Vectors(ctx, NonFiniteKinds...).Draw(t, label)
			}
			return Vectors(ctx).Draw(t, label)
		}
		k := vec("k", ks, f.KRotBlock())
		v := vec("v", vs, f.VRotBlock())
		c := NewSlotCase(f, dt, k.X, v.X, sp)
		c.KSpec, c.VSpec = &k.Spec, &v.Spec
		if o.Flips > 0 {
			n := rapid.IntRange(1, o.Flips).Draw(t, "flips")
			for i := 0; i < n; i++ {
				c.Flips = append(c.Flips, drawFlip(rapidDraw{t}, f))
			}
		}
		return c
	})
}

// drawFlip aims a bit flip at the codes (half the time), the scales or the pad.
func drawFlip(d draw, f oracle.Format) BitFlip {
	var lo, hi int
	switch d.intn(0, 3, "flip_region") {
	case 0, 1:
		lo, hi = 0, f.OffScales()
	case 2:
		lo, hi = f.OffScales(), f.OffScales()+2*f.NumScales()
	default:
		lo, hi = f.SlotBytes()-f.PadBytes(), f.SlotBytes()
		if lo == hi { // compact has no pad
			lo, hi = f.OffScales(), f.OffScales()+2*f.NumScales()
		}
	}
	return BitFlip{Byte: d.intn(lo, hi-1, "flip_byte"), Bit: d.intn(0, 7, "flip_bit")}
}
