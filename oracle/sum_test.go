package oracle

import (
	"math"
	"math/big"
	"testing"

	"pgregory.net/rapid"
)

// exactFloat32Sum rounds the exact sum of float64 terms to float32 with math/big (the definition
// the canonical sums must meet).
func exactFloat32Sum(terms []float64) float32 {
	s := new(big.Float).SetPrec(4096)
	for _, t := range terms {
		s.Add(s, new(big.Float).SetPrec(4096).SetFloat64(t))
	}
	f, _ := s.Float32()
	return f
}

// TestCanonicalSumsExactAndOrderFree: groupSS and groupDot equal the correctly rounded exact sum
// of their float32 terms, and permuting the inputs never changes a bit. Inputs include values
// spanning many binades and exact float32 midpoints, where a plain float32 or float64 sum would
// round differently.
func TestCanonicalSumsExactAndOrderFree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.SampledFrom([]int{64, 256}).Draw(t, "n")
		bits := rapid.SampledFrom([]int{3, 4}).Draw(t, "bits")
		x := make([]float32, n)
		for i := range x {
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				x[i] = float32(math.Ldexp(float64(rapid.IntRange(-(1<<12), 1<<12).Draw(t, "m")), rapid.IntRange(-40, 40).Draw(t, "e")))
			case 1:
				x[i] = F16ToF32(F32ToF16(float32(rapid.Float64Range(-2, 2).Draw(t, "g"))))
			case 2:
				x[i] = 1 + float32(math.Ldexp(1, -12)) // (1+2^-12)² sits on float32 midpoints
			default:
				x[i] = 0
			}
		}
		codes := make([]uint8, n)
		for i := range codes {
			codes[i] = uint8(rapid.IntRange(0, 1<<bits-1).Draw(t, "c"))
		}
		var sq, dt []float64
		l := LUT(bits)
		for i, v := range x {
			sq = append(sq, float64(float32(v*v)))
			dt = append(dt, float64(float32(v*float32(l[codes[i]]))))
		}
		ss, _ := groupSS(x)
		if want := exactFloat32Sum(sq); ss != want {
			t.Fatalf("groupSS = %v, exact rounding %v", ss, want)
		}
		dot := groupDot(x, codes, bits)
		if want := exactFloat32Sum(dt); dot != want {
			t.Fatalf("groupDot = %v, exact rounding %v", dot, want)
		}
		perm := rapid.Permutation(seq(n)).Draw(t, "perm")
		px, pc := make([]float32, n), make([]uint8, n)
		for i, p := range perm {
			px[i], pc[i] = x[p], codes[p]
		}
		if ss2, _ := groupSS(px); ss2 != ss {
			t.Fatalf("groupSS depends on order: %v vs %v", ss2, ss)
		}
		if d2 := groupDot(px, pc, bits); d2 != dot {
			t.Fatalf("groupDot depends on order: %v vs %v", d2, dot)
		}
	})
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestDDRounding: the double-double's final rounding breaks float32 midpoints by the low word.
func TestDDRounding(t *testing.T) {
	mid := 1 + math.Ldexp(1, -24) // midpoint between 1 and 1+2^-23
	for _, c := range []struct {
		terms []float64
		want  float32
	}{
		{[]float64{mid}, 1}, // tie to even
		{[]float64{mid, math.Ldexp(1, -80)}, 1 + 0x1p-23},           // just above
		{[]float64{mid, -math.Ldexp(1, -80)}, 1},                    // just below
		{[]float64{1 + 3*0x1p-24, math.Ldexp(1, -90)}, 1 + 0x1p-22}, // odd midpoint rounds up
		{[]float64{1e300, -1e300, 0.5}, 0.5},
	} {
		var d dd
		for _, x := range c.terms {
			d.add(x)
		}
		if got := d.float32(); got != c.want {
			t.Errorf("dd%v = %v, want %v", c.terms, got, c.want)
		}
		if got := exactFloat32Sum(c.terms); got != c.want {
			t.Errorf("test case %v is wrong: exact rounding is %v", c.terms, got)
		}
	}
}
