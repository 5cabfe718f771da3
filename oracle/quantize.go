package oracle

import (
	"math"

	"github.com/x448/float16"
)

// rmsFloor is the clamp of FORMAT.md §4 step 2, as the float32 the reference uses.
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
	t := thresholds(bits)
	lo, hi := 0, len(t)
	for lo < hi { // first index with t[i] >= y
		m := (lo + hi) / 2
		if t[m] < y {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return uint8(lo)
}

// ZeroCode is the code of y = 0 (3 for 3-bit, 7 for 4-bit).
func ZeroCode(bits int) uint8 { return uint8(1<<bits/2 - 1) }

// groupStats returns the canonical float32 ss (FORMAT.md §4 step 1) and whether every value is
// finite.
func groupSS(x []float32) (float32, bool) {
	var s dd
	finite := true
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			finite = false
		}
		s.add(float64(float32(v * v)))
	}
	return s.float32(), finite
}

// groupRMS is step 2: max(sqrt(ss/n), 1e-12) in float32.
func groupRMS(ss float32, n int) float32 {
	r := float32(math.Sqrt(float64(ss / float32(n))))
	if !(r > rmsFloor) { // also catches NaN like torch.clamp_min would not; NaN groups are handled by the caller
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
	var s dd
	for i, v := range x {
		s.add(float64(float32(v * float32(l[codes[i]]))))
	}
	return s.float32()
}

// scaleFrom is step 6: 64·(ss/dot) in float32 if dot > 0, else +0.
func scaleFrom(ss, dot float32) float32 {
	if dot > 0 {
		return float32(ss/dot) * LUTOne
	}
	return 0
}

// F32ToF16 rounds a float32 to IEEE binary16 bits, to nearest even, with overflow to ±inf and
// gradual underflow (FORMAT.md §4 step 7).
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
// FORMAT.md §4 with the canonical sums of sum.go. A group holding NaN or ±inf is written as the
// zero group (every code ZeroCode, scale +0): Octant's choice under FORMAT.md §10 rule 4, which
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
	for i, v := range x {
		y := float32(float32(v/rms) * mult)
		codes[i] = Code(y, bits)
	}
	s := scaleFrom(ss, groupDot(x, codes, bits))
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
