package harness

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// Dtype is an activation dtype of the kernels' inputs: every value a generator returns is exactly
// representable in it.
type Dtype string

// The two activation dtypes of docs/contract.md §1.
const (
	F16  Dtype = "fp16"
	BF16 Dtype = "bf16"
)

// Dtypes lists the activation dtypes, fp16 first (what a shrunk case uses).
var Dtypes = []Dtype{F16, BF16}

// Valid reports whether t is fp16 or bf16.
func (t Dtype) Valid() bool { return t == F16 || t == BF16 }

// Kernel is the C ABI's enum value for t.
func (t Dtype) Kernel() kernels.Dtype {
	if t == BF16 {
		return kernels.BF16
	}
	return kernels.F16
}

// DtypeOf is the activation dtype of a C ABI enum value (fp16 for anything but bf16).
func DtypeOf(k kernels.Dtype) Dtype {
	if k == kernels.BF16 {
		return BF16
	}
	return F16
}

// Oracle is the oracle's name for t.
func (t Dtype) Oracle() oracle.Dtype {
	if t == BF16 {
		return oracle.DtypeBF16
	}
	return oracle.DtypeF16
}

// Bits rounds x to t (to nearest even, overflowing to ±inf) and returns the raw 16 bits.
func (t Dtype) Bits(x float32) uint16 {
	if t == BF16 {
		return oracle.F32ToBF16(x)
	}
	return oracle.F32ToF16(x)
}

// FromBits converts raw 16 bits of t to float32 (exact).
func (t Dtype) FromBits(h uint16) float32 {
	if t == BF16 {
		return oracle.BF16ToF32(h)
	}
	return oracle.F16ToF32(h)
}

// Round rounds x to the nearest value of t (ties to even; beyond the largest finite value it
// overflows to ±inf, NaN stays NaN).
func (t Dtype) Round(x float32) float32 {
	if t == BF16 {
		return oracle.BF16ToF32(oracle.F32ToBF16(x))
	}
	// fp16 fast paths, equal to F16ToF32(F32ToF16(x)) (TestRoundFastPath): normal results by
	// rounding the float32 mantissa to 10 bits, subnormal ones to a multiple of 2^-24. The
	// magnitude is compared as bits (|x| < 2^-14: below 0x38800000; < 65504: below 0x477FE000).
	b := math.Float32bits(x)
	switch a := b &^ (1 << 31); {
	case a >= 0x38800000 && a < 0x477FE000:
		b += 0xfff + (b>>13)&1
		return math.Float32frombits(b &^ 0x1fff)
	case a < 0x38800000:
		return float32(math.RoundToEven(float64(x)*0x1p24) * 0x1p-24)
	}
	return t.FromBits(t.Bits(x))
}

// RoundSat is Round with saturation: finite x never becomes infinite, it stops at ±MaxFinite.
func (t Dtype) RoundSat(x float32) float32 {
	m := t.MaxFinite()
	return t.Round(min(max(x, -m), m)) // NaN stays NaN (min and max propagate it)
}

// MaxFinite, MinNormal and MinSubnormal are the dtype's extremes: 65504, 2^-14, 2^-24 for fp16;
// about 3.39e38, 2^-126, 2^-133 for bf16.
func (t Dtype) MaxFinite() float32 {
	if t == BF16 {
		return oracle.BF16ToF32(0x7f7f)
	}
	return 65504
}

// MinNormal is the smallest positive normal value of t.
func (t Dtype) MinNormal() float32 {
	if t == BF16 {
		return float32(math.Ldexp(1, -126))
	}
	return float32(math.Ldexp(1, -14))
}

// MinSubnormal is the smallest positive subnormal value of t.
func (t Dtype) MinSubnormal() float32 {
	if t == BF16 {
		return float32(math.Ldexp(1, -133))
	}
	return float32(math.Ldexp(1, -24))
}

// Representable reports whether every value of x is exactly a value of t (NaN counts as
// representable).
func (t Dtype) Representable(x []float32) error {
	for i, v := range x {
		if v != v {
			continue
		}
		if r := t.Round(v); math.Float32bits(r) != math.Float32bits(v) {
			return fmt.Errorf("value %d = %g is not a %s value (nearest %g)", i, v, t, r)
		}
	}
	return nil
}
