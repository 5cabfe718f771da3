package cases

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/harness"

	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// ValueKind names a family of activation vectors (K, V or query rows).
type ValueKind string

// Finite kinds: every value is finite and exactly representable in the chosen dtype.
const (
	Gaussian      ValueKind = "gaussian"       // N(0, σ²), σ = 2^[-6, 6]
	Outliers      ValueKind = "outliers"       // Gaussian with 1..8 channels multiplied by 8..1000
	RopeHeavy     ValueKind = "rope-heavy"     // Gaussian with the rotary dims 0..63 multiplied by 4..100
	Tiny          ValueKind = "tiny"           // Gaussian with σ = 2^[-26, -12]: fp16 scales go subnormal
	F16Subnormal  ValueKind = "fp16-subnormal" // every value k·2^-24, |k| < 2^10: fp16 subnormals (and zeros)
	Huge          ValueKind = "huge"           // group RMS 2^[15.2, 17] (3.7e4..1.3e5), bf16 also up to 2^66
	Zero          ValueKind = "zero"           // all zero
	Constant      ValueKind = "constant"       // every value the same
	Spike         ValueKind = "spike"          // one non-zero dim
	HadamardRow   ValueKind = "hadamard-row"   // Unrotate of a one-hot vector: all energy in one rotated coordinate
	HeadScale     ValueKind = "head-scale"     // Gaussian at a scale drawn per head from 2^[-16, 15]
	DtypeExtremes ValueKind = "extremes"       // the dtype's max finite, min normal, min subnormal values
)

// Non-finite kinds (NonFiniteValues): a vector holding NaN or ±inf. docs/format.md §10 rule 4: every
// quantization group holding a non-finite rotated value must decode to zero.
const (
	NaNs         ValueKind = "nan"           // Gaussian with NaN in one dim, 1..8 dims, up to a quarter, or every dim
	Infs         ValueKind = "inf"           // the same with +inf or −inf (every dim: +inf)
	NonFiniteMix ValueKind = "nonfinite-mix" // NaN, +inf and −inf mixed (+inf and −inf in one block rotate to NaN)
)

// FiniteKinds lists the finite kinds; NonFiniteKinds the others. Shrinking moves towards the
// first entry (Gaussian).
var (
	FiniteKinds = []ValueKind{Gaussian, Outliers, RopeHeavy, Tiny, F16Subnormal, Huge, Zero, Constant, Spike,
		HadamardRow, HeadScale, DtypeExtremes}
	NonFiniteKinds = []ValueKind{NaNs, Infs, NonFiniteMix}
)

// Finite reports whether the kind produces only finite values.
func (k ValueKind) Finite() bool {
	for _, n := range NonFiniteKinds {
		if k == n {
			return false
		}
	}
	return true
}

// ValueSpec is the recipe of one vector: its kind, dtype, a few parameters and the seed of its
// per-element randomness. Build turns it into values deterministically, so a recipe is all a
// reproducer needs to rebuild the vector.
type ValueSpec struct {
	Kind  ValueKind     `json:"kind"`
	Dtype harness.Dtype `json:"dtype"`
	// Log2Scale sets the magnitude: σ (Gaussian kinds), the value (constant, spike), the
	// amplitude of the rotated coordinate (hadamard-row) or the group RMS (huge).
	Log2Scale float64 `json:"log2_scale,omitempty"`
	// Param is kind-specific: outlier channels, the spike or rotated dim, the subnormal bit width,
	// the huge/extremes/non-finite mode, the constant's mantissa.
	Param int `json:"param,omitempty"`
	// Factor is the outlier or rotary multiplier.
	Factor float64 `json:"factor,omitempty"`
	Seed   uint64  `json:"seed,omitempty"`
}

func (s ValueSpec) String() string {
	return fmt.Sprintf("%s/%s(2^%.3g, param %d, factor %g, seed %#x)", s.Kind, s.Dtype, s.Log2Scale, s.Param, s.Factor, s.Seed)
}

// drawValueSpec draws the parameters of a kind.
func drawValueSpec(d draw, kind ValueKind, dt harness.Dtype) ValueSpec {
	s := ValueSpec{Kind: kind, Dtype: dt}
	switch kind {
	case Gaussian:
		s.Log2Scale = d.f64(0, 6, "log2_sigma") * float64(1-2*d.intn(0, 1, "neg_exp"))
	case Outliers:
		s.Log2Scale = d.f64(-4, 4, "log2_sigma")
		s.Param = d.intn(1, 8, "outlier_channels")
		s.Factor = pick(d, []float64{8, 32, 100, 1000}, "outlier_factor")
	case RopeHeavy:
		s.Log2Scale = d.f64(-4, 4, "log2_sigma")
		s.Factor = d.f64(4, 100, "rope_factor")
	case Tiny:
		s.Log2Scale = -d.f64(12, 26, "minus_log2_sigma")
	case F16Subnormal:
		s.Param = d.intn(1, 10, "subnormal_bits")
	case Huge:
		// Mode 0: constant magnitude with random signs (group RMS exactly the scale); 1: Gaussian,
		// clamped to the dtype's range. The fp16 scale overflows at an RMS near 4.7e4 (4-bit
		// groups) and 5.8e4 (3-bit groups), docs/format.md §10: 2^15.2..2^17 straddles both.
		s.Param = d.intn(0, 1, "huge_mode")
		s.Log2Scale = d.f64(15.2, 17, "log2_rms")
		if dt == harness.BF16 && d.intn(0, 2, "bf16_beyond") == 2 {
			s.Log2Scale = d.f64(17, 66, "log2_rms_bf16") // up to Σx² overflowing float32
		}
	case Zero:
	case Constant:
		s.Log2Scale = float64(d.intn(-20, 16, "log2_value"))
		s.Param = d.intn(0, 15, "mantissa") * (1 - 2*d.intn(0, 1, "negative"))
	case Spike:
		s.Log2Scale = float64(d.intn(-20, 17, "log2_height"))
		s.Param = d.intn(0, 255, "spike_dim")
		s.Factor = float64(1 - 2*d.intn(0, 1, "negative"))
	case HadamardRow:
		s.Log2Scale = float64(d.intn(-16, 19, "log2_amplitude"))
		s.Param = d.intn(0, 255, "rotated_dim")
		s.Factor = float64(1 - 2*d.intn(0, 1, "negative"))
	case HeadScale:
		s.Log2Scale = d.f64(-16, 15, "log2_head_sigma")
	case DtypeExtremes:
		s.Param = d.intn(0, 4, "extremes_mode")
	case NaNs, Infs, NonFiniteMix:
		s.Log2Scale = d.f64(-4, 4, "log2_sigma")
		s.Param = d.intn(0, 3, "nonfinite_mode")
	default:
		panic("fuzz: unknown value kind " + string(kind))
	}
	if kind != Zero {
		s.Seed = d.u64("value_seed")
	}
	return s
}

// Build materializes the vector: n values (a multiple of 64), each exactly representable in
// s.Dtype. signs and block are the rotation the values will go through; only hadamard-row uses
// them (its vector is Unrotate(a·e_j, signs, block) rounded to the dtype). n = 256 everywhere in
// the kernels.
func (s ValueSpec) Build(n int, signs oracle.Signs, block int) []float32 {
	dt := s.Dtype
	if !dt.Valid() {
		dt = harness.F16
	}
	r := newRand(s.Seed, 1)
	x := make([]float32, n)
	sigma := exp2(s.Log2Scale)
	gauss := func(scale float64) {
		for i := range x {
			x[i] = float32(r.NormFloat64() * scale)
		}
	}
	switch s.Kind {
	case Gaussian, HeadScale, Tiny:
		gauss(sigma)
	case Outliers:
		gauss(sigma)
		for c := 0; c < s.Param; c++ {
			j := r.IntN(n)
			x[j] = float32(float64(x[j]) * s.Factor)
		}
	case RopeHeavy:
		gauss(sigma)
		for i := 0; i < min(64, n); i++ {
			x[i] = float32(float64(x[i]) * s.Factor)
		}
	case F16Subnormal:
		lim := 1<<max(s.Param, 1) - 1
		for i := range x {
			x[i] = float32(math.Ldexp(float64(r.IntN(2*lim+1)-lim), -24))
		}
	case Huge:
		if s.Param == 0 {
			for i := range x {
				x[i] = float32(sigma * float64(1-2*r.IntN(2)))
			}
		} else {
			gauss(sigma)
		}
	case Zero:
	case Constant:
		c := float32(exp2(s.Log2Scale) * (1 + float64(abs(s.Param))/16))
		if s.Param < 0 {
			c = -c
		}
		for i := range x {
			x[i] = c
		}
	case Spike:
		x[s.Param%n] = float32(exp2(s.Log2Scale) * s.Factor)
	case HadamardRow:
		if block <= 0 || n%block != 0 {
			block = n
		}
		if len(signs) < n {
			signs = oracle.DefaultSigns(n)
		}
		y := make([]float32, n)
		y[s.Param%n] = float32(exp2(s.Log2Scale) * s.Factor)
		x = oracle.Unrotate(y, signs[:n], block)
	case DtypeExtremes:
		// Mode 0: a random mix of ±max, ±min normal, ±min subnormal and 0; 1, 2, 3: every dim ±max,
		// ±min normal or ±min subnormal; 4: ±max in dim 0 and one random dim, ±min subnormal
		// elsewhere.
		vals := []float32{dt.MaxFinite(), dt.MinNormal(), dt.MinSubnormal(), 0}
		big := r.IntN(n)
		for i := range x {
			var v float32
			switch s.Param {
			case 0:
				v = vals[r.IntN(len(vals))]
			case 1, 2, 3:
				v = vals[s.Param-1]
			default:
				v = vals[2]
				if i == 0 || i == big {
					v = vals[0]
				}
			}
			if r.IntN(2) == 1 {
				v = -v
			}
			x[i] = v
		}
	case NaNs, Infs, NonFiniteMix:
		gauss(sigma)
	default:
		panic("fuzz: unknown value kind " + string(s.Kind))
	}
	m := dt.MaxFinite()
	for i, v := range x {
		x[i] = dt.Round(min(max(v, -m), m)) // dt.RoundSat, its bound hoisted
	}
	if !s.Kind.Finite() {
		s.poison(x, r)
	}
	return x
}

// poison writes the non-finite values of a non-finite kind.
func (s ValueSpec) poison(x []float32, r interface{ IntN(int) int }) {
	n := len(x)
	nan, pinf, ninf := float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	count := 1
	switch s.Param {
	case 1:
		count = 1 + r.IntN(8)
	case 2:
		count = 1 + r.IntN(n/4)
	case 3:
		count = n
	}
	for c := 0; c < count; c++ {
		j := r.IntN(n)
		if count == n {
			j = c
		}
		switch s.Kind {
		case NaNs:
			x[j] = nan
		case Infs:
			if s.Param == 3 || r.IntN(2) == 0 {
				x[j] = pinf
			} else {
				x[j] = ninf
			}
		default:
			x[j] = []float32{nan, pinf, ninf}[r.IntN(3)]
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// VecContext is what a vector generator needs to know besides its kind: the dtype, and the
// rotation the vector will go through (for hadamard-row). A zero Signs means the default pattern;
// a zero Block means one transform over the whole vector.
type VecContext struct {
	Dtype harness.Dtype
	Signs oracle.Signs
	Block int
	N     int // vector length; 0 means 256 (oracle.KernelHeadSize)
}

func (c VecContext) n() int {
	if c.N > 0 {
		return c.N
	}
	return oracle.KernelHeadSize
}

// ValueSpecs draws recipes of the given kinds (all finite kinds when none are given) for dtype dt.
func ValueSpecs(dt harness.Dtype, kinds ...ValueKind) *rapid.Generator[ValueSpec] {
	if len(kinds) == 0 {
		kinds = FiniteKinds
	}
	return rapid.Custom(func(t *rapid.T) ValueSpec {
		d := rapidDraw{t}
		return drawValueSpec(d, pick(d, kinds, "kind"), dt)
	})
}

// Values draws a finite vector of any finite kind (or of the given kinds), exactly representable
// in ctx.Dtype.
func Values(ctx VecContext, kinds ...ValueKind) *rapid.Generator[[]float32] {
	return rapid.Map(ValueSpecs(ctx.Dtype, kinds...), func(s ValueSpec) []float32 {
		return s.Build(ctx.n(), ctx.Signs, ctx.Block)
	})
}

// NonFiniteValues draws a vector holding NaN or ±inf (kinds nan, inf, nonfinite-mix). It is kept
// apart from Values on purpose: its expectation differs (the groups it poisons must decode to
// zero, docs/format.md §10 rule 4).
func NonFiniteValues(ctx VecContext) *rapid.Generator[[]float32] {
	return Values(ctx, NonFiniteKinds...)
}

// Vector is a generated vector with its recipe.
type Vector struct {
	Spec ValueSpec
	X    []float32
}

// Vectors draws a vector with its recipe (for reports and reproducers).
func Vectors(ctx VecContext, kinds ...ValueKind) *rapid.Generator[Vector] {
	return rapid.Map(ValueSpecs(ctx.Dtype, kinds...), func(s ValueSpec) Vector {
		return Vector{Spec: s, X: s.Build(ctx.n(), ctx.Signs, ctx.Block)}
	})
}

// DtypeGen draws fp16 or bf16 (fp16 when shrunk).
func DtypeGen() *rapid.Generator[harness.Dtype] { return rapid.SampledFrom(harness.Dtypes) }
