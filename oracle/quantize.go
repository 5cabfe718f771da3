package oracle

import (
	"math"

	"github.com/x448/float16"
)

// rmsFloor is the clamp of docs/format.md §4 step 2, as the float32 the reference uses.
var rmsFloor = float32(1e-12)

// GroupQuant is the quantization of one group: its codes, the float32 scale before fp16 rounding,
// and the stored fp16 bits.
type GroupQuant struct {
	Codes   []uint8
	Scale32 float32
	Scale16 uint16
}

// Code returns the canonical code of y: the number of thresholds strictly below y (ties go to the
// lower code; NaN gives 0 as in the kernel, but see QuantizeGroup for non-finite groups).
func Code(y float32, bits int) uint8 {
	if !(y == y) {
		return 0
	}
	// Clamping keeps every code (|t| ≤ 110.5 for every threshold t) and keeps 2y in the table.
	i := codeIndex(min(max(y, -1024), 1024))
	if bits == 4 {
		return codeTab4[i]
	}
	return codeTab3[i]
}

// codeHalfRange bounds the tables: they cover |2y| < codeHalfRange.
const codeHalfRange = 8192

// codeIndex returns the index of y's code in codeTab3 and codeTab4, for |2y| < codeHalfRange.
// Every threshold is a multiple of 0.5, so for y in (i/2, (i+1)/2] the count of thresholds below
// y equals the count of thresholds ≤ i/2; i = ⌈2y⌉ − 1 (2y and the ceiling are exact).
func codeIndex(y float32) int {
	return int(math.Ceil(float64(2*y))) - 1 + codeHalfRange
}

// maxTableGroup is the largest group whose codes QuantizeGroup looks up without clamping 2y. In a
// finite group |x/rms| ≤ √n·(1+2^-19): a normal x² rounds to at most ss, and ss/n, the square
// root and x/rms each round with relative error at most 2^-24 (ss/n is subnormal only under the
// 1e-12 floor, and the floor is then at least √(ss/n)·(1−2^-20)); a subnormal x² means
// |x| < 2^-63, far below rms; ss = +inf makes rms = +inf and x/rms = ±0. So for n ≤ 4096,
// |2y| ≤ 2·59·64·(1+2^-18) < 7553 < codeHalfRange (the table's bounds check stays as a backstop).
const maxTableGroup = 4096

var codeTab3, codeTab4 = codeTable(3), codeTable(4)

// lutF3 and lutF4 are the codebooks as float32 (exact), padded to 16 entries, so the dot loop
// indexes a float table instead of converting int8 values.
var lutF3, lutF4 = lutFloat(3), lutFloat(4)

func lutFloat(bits int) [16]float32 {
	var t [16]float32
	for i, v := range LUT(bits) {
		t[i] = float32(v)
	}
	return t
}

func codeTable(bits int) []uint8 {
	tab := make([]uint8, 2*codeHalfRange+1)
	for i := range tab {
		a := float32(i-codeHalfRange) / 2
		for _, t := range thresholds(bits) {
			if t <= a {
				tab[i]++
			}
		}
	}
	return tab
}

// codeLinear is the definition of Code, for tests: count the thresholds strictly below y.
func codeLinear(y float32, bits int) uint8 {
	c := uint8(0)
	for _, t := range thresholds(bits) {
		if t < y {
			c++
		}
	}
	return c
}

// ZeroCode is the code of y = 0 (3 for 3-bit, 7 for 4-bit).
func ZeroCode(bits int) uint8 { return uint8(1<<bits/2 - 1) }

// groupSS returns the canonical float32 ss (docs/format.md §4 step 1) and whether every value is
// finite.
func groupSS(x []float32) (float32, bool) {
	// The float64 terms may be added in any order: roundIfSafe's error bound holds for every order.
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+7 < len(x); i += 8 {
		q := x[i : i+8 : i+8]
		s0 += float64(float32(q[0]*q[0])) + float64(float32(q[1]*q[1]))
		s1 += float64(float32(q[2]*q[2])) + float64(float32(q[3]*q[3]))
		s2 += float64(float32(q[4]*q[4])) + float64(float32(q[5]*q[5]))
		s3 += float64(float32(q[6]*q[6])) + float64(float32(q[7]*q[7]))
	}
	for ; i < len(x); i++ {
		s0 += float64(float32(x[i] * x[i]))
	}
	s := (s0 + s1) + (s2 + s3)
	if math.IsNaN(s) || math.IsInf(s, 0) {
		// Either a non-finite input or float32 squares summing past float32's range; decide which
		// exactly.
		for _, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return float32(math.NaN()), false
			}
		}
		return float32(math.Inf(1)), true // a float32 square overflowed: float32 ss is +inf
	}
	// Every term is ≥ 0, so the float64 sum's error is at most len·2^-53·s.
	if r, ok := roundIfSafe(s, s, len(x)); ok {
		return r, true
	}
	var e dd
	for _, v := range x {
		e.add(float64(float32(v * v)))
	}
	return e.float32(), true
}

// roundIfSafe rounds the float64 sum s of n terms whose magnitudes sum to abs to float32, and
// reports whether that is certainly the rounding of the exact sum: true when s is farther than the
// float64 summation error bound n·2^-53·abs from every float32 rounding boundary (a midpoint
// between float32 neighbours). Otherwise the caller must sum exactly.
func roundIfSafe(s, abs float64, n int) (float32, bool) {
	r := float32(s)
	if s == 0 || math.IsInf(float64(r), 0) {
		return r, abs == 0 // all-zero terms are exact; near overflow, sum exactly
	}
	errb := float64(n) * 0x1p-53 * abs
	// Distance from s to the nearest float32 midpoint is at least half the gap below |r| (never
	// wider than the gap above it) minus |s − r|.
	b := math.Float32bits(r) &^ (1 << 31)
	ulp := 0x1p-149
	if b != 0 {
		ulp = float64(math.Float32frombits(b)) - float64(math.Float32frombits(b-1))
	}
	return r, ulp/2-math.Abs(s-float64(r)) > errb
}

// groupRMS is step 2: max(sqrt(ss/n), 1e-12) in float32.
func groupRMS(ss float32, n int) float32 {
	r := float32(math.Sqrt(float64(ss / float32(n))))
	if !(r > rmsFloor) {
		if math.IsNaN(float64(r)) {
			return r
		}
		return rmsFloor
	}
	return r
}

// groupDot is step 5 over given codes: Σ float32(x_i·L[c_i]) summed canonically.
func groupDot(x []float32, codes []uint8, bits int) float32 {
	l := LUT(bits)
	codes = codes[:len(x)]
	var s0, s1, a0, a1 float64
	i := 0
	for ; i+1 < len(x); i += 2 {
		t0 := float64(float32(x[i] * float32(l[codes[i]&15])))
		t1 := float64(float32(x[i+1] * float32(l[codes[i+1]&15])))
		s0 += t0
		s1 += t1
		a0 += math.Abs(t0)
		a1 += math.Abs(t1)
	}
	for ; i < len(x); i++ {
		t0 := float64(float32(x[i] * float32(l[codes[i]&15])))
		s0 += t0
		a0 += math.Abs(t0)
	}
	if r, ok := roundIfSafe(s0+s1, a0+a1, len(x)); ok {
		return r
	}
	var e dd
	for i, v := range x {
		e.add(float64(float32(v * float32(l[codes[i]]))))
	}
	return e.float32()
}

// scaleFrom is step 6: 64·(ss/dot) in float32 if dot > 0, else +0.
func scaleFrom(ss, dot float32) float32 {
	if dot > 0 {
		if math.IsInf(float64(ss), 1) {
			// Σx² overflowed float32 (finite bf16 input above about 1e18): the reference's
			// inf/dot is +inf, or NaN when dot overflowed too. The oracle writes +inf, the
			// scale-overflow hazard, either way (docs/oracle.md, "ss overflow").
			return float32(math.Inf(1))
		}
		return float32(ss/dot) * LUTOne
	}
	return 0
}

// F32ToF16 rounds a float32 to IEEE binary16 bits, to nearest even, with overflow to ±inf and
// gradual underflow (docs/format.md §4 step 7).
func F32ToF16(f float32) uint16 { return uint16(float16.Fromfloat32(f)) }

// F16ToF32 converts binary16 bits to float32 (exact).
func F16ToF32(h uint16) float32 { return float16.Frombits(h).Float32() }

// BF16ToF32 converts bfloat16 bits to float32 (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds a float32 to bfloat16 bits, to nearest even (NaN stays NaN).
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// QuantizeGroup quantizes one group of rotated float32 values with the given code width, following
// docs/format.md §4 with the canonical sums of sum.go. A group holding NaN or ±inf is written as the
// zero group (every code ZeroCode, scale +0): Octant's choice under docs/format.md §10 rule 4, which
// only requires such a group to decode to zero. codes, if long enough, is reused.
func QuantizeGroup(x []float32, bits int, codes []uint8) GroupQuant {
	n := len(x)
	if cap(codes) < n {
		codes = make([]uint8, n)
	}
	codes = codes[:n]
	ss, finite := groupSS(x)
	if !finite {
		z := ZeroCode(bits)
		for i := range codes {
			codes[i] = z
		}
		return GroupQuant{Codes: codes, Scale32: 0, Scale16: 0}
	}
	rms := groupRMS(ss, n)
	mult := LUTMult(bits)
	tab, lut := codeTab3, &lutF3
	if bits == 4 {
		tab, lut = codeTab4, &lutF4
	}
	tab = tab[:2*codeHalfRange+1]
	// Codes (steps 3-4), then the dot terms of step 5 (two loops run faster than one fused loop:
	// fewer live registers). Groups up to maxTableGroup need no clamp before the table lookup. The terms are summed in float64 and rounded once when that is provably
	// the exact sum's rounding (roundIfSafe), else again in double-double by groupDot.
	x = x[:n]
	if n <= maxTableGroup {
		for i, v := range x {
			codes[i] = tab[codeIndex(float32(float32(v/rms)*mult))]
		}
	} else {
		for i, v := range x {
			codes[i] = Code(float32(float32(v/rms)*mult), bits)
		}
	}
	// With canonical codes every term x·L[c] is ≥ 0 (L[c] has the sign of y, and y the sign of x),
	// except when x/rms underflows to +0 for a tiny positive x: so Σ|t| = Σt and the float64
	// error bound needs no second sum. neg collects the terms' sign bits (of t+0, so that −0 does
	// not count); a negative term sends the sum to the exact path.
	var s0, s1, s2, s3 float64
	var neg uint64
	i := 0
	for ; i+3 < n; i += 4 {
		t0 := float64(float32(x[i] * lut[codes[i]&15]))
		t1 := float64(float32(x[i+1] * lut[codes[i+1]&15]))
		t2 := float64(float32(x[i+2] * lut[codes[i+2]&15]))
		t3 := float64(float32(x[i+3] * lut[codes[i+3]&15]))
		s0 += t0
		s1 += t1
		s2 += t2
		s3 += t3
		neg |= math.Float64bits(t0+0) | math.Float64bits(t1+0) | math.Float64bits(t2+0) | math.Float64bits(t3+0)
	}
	for ; i < n; i++ {
		t := float64(float32(x[i] * lut[codes[i]&15]))
		s0 += t
		neg |= math.Float64bits(t + 0)
	}
	sum := (s0 + s1) + (s2 + s3)
	var dot float32
	ok := false
	if neg>>63 == 0 {
		dot, ok = roundIfSafe(sum, sum, n)
	}
	if !ok {
		dot = groupDot(x, codes, bits)
	}
	s := scaleFrom(ss, dot)
	return GroupQuant{Codes: codes, Scale32: s, Scale16: F32ToF16(s)}
}

// Dequant returns LUT[c]·(scale/64) in float32 (exact: at most 7 × 11 significant bits).
func Dequant(code uint8, bits int, scale16 uint16) float32 {
	return float32(LUT(bits)[code]) * (F16ToF32(scale16) / LUTOne)
}

// F32Bits and F32FromBits are math.Float32bits and math.Float32frombits, for callers that compare
// raw float32 patterns.
func F32Bits(f float32) uint32     { return math.Float32bits(f) }
func F32FromBits(b uint32) float32 { return math.Float32frombits(b) }
