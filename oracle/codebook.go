package oracle

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// LUT3 and LUT4 are the int8 codebooks of docs/format.md §1: code c decodes to LUT[c]·scale/64.
var (
	LUT3 = [8]int8{-127, -79, -45, -14, 14, 45, 79, 127}
	LUT4 = [16]int8{-126, -95, -74, -58, -43, -30, -18, -6, 6, 18, 30, 43, 58, 74, 95, 126}
)

// LUTMult is the number of int8 units per σ for each code width.
func LUTMult(bits int) float32 {
	switch bits {
	case 3:
		return 59
	case 4:
		return 46
	}
	panic(fmt.Sprintf("oracle: code width %d: expected 3 or 4", bits))
}

// LUT returns the codebook of a code width as a slice (do not modify).
func LUT(bits int) []int8 {
	switch bits {
	case 3:
		return LUT3[:]
	case 4:
		return LUT4[:]
	}
	panic(fmt.Sprintf("oracle: code width %d: expected 3 or 4", bits))
}

// Thresholds returns the 2^bits − 1 midpoints (LUT[i]+LUT[i+1])/2 as float32 (all exact).
func Thresholds(bits int) []float32 {
	l := LUT(bits)
	t := make([]float32, len(l)-1)
	for i := range t {
		t[i] = (float32(l[i]) + float32(l[i+1])) / 2
	}
	return t
}

var thr3, thr4 = Thresholds(3), Thresholds(4)

func thresholds(bits int) []float32 {
	if bits == 3 {
		return thr3
	}
	return thr4
}

// PermWords packs a codebook into little-endian uint32 words for a byte-permute lookup
// (v_perm_b32 / prmt): byte c of the concatenation is LUT[c].
func PermWords(bits int) []uint32 {
	l := LUT(bits)
	w := make([]uint32, len(l)/4)
	for c, v := range l {
		w[c/4] |= uint32(uint8(v)) << (8 * (c % 4))
	}
	return w
}

// LloydMax returns the MSE-optimal reconstruction points (centroids) of a quantizer with n levels
// for the standard normal N(0,1), in increasing order, by Lloyd's iteration: thresholds are
// midpoints of adjacent centroids, and each centroid is the conditional mean
// E[X | t_{i-1} < X ≤ t_i] = (φ(t_{i-1}) − φ(t_i)) / (Φ(t_i) − Φ(t_{i-1})), with φ, Φ from gonum.
// It iterates until no centroid moves by more than 1e-13.
func LloydMax(n int) []float64 {
	if n < 2 {
		panic("oracle: LloydMax needs at least 2 levels")
	}
	nd := distuv.UnitNormal
	c := make([]float64, n)
	for i := range c { // start at the quantiles' centres
		c[i] = nd.Quantile((float64(i) + 0.5) / float64(n))
	}
	t := make([]float64, n+1)
	t[0], t[n] = math.Inf(-1), math.Inf(1)
	for iter := 0; iter < 100000; iter++ {
		for i := 1; i < n; i++ {
			t[i] = (c[i-1] + c[i]) / 2
		}
		moved := 0.0
		for i := 0; i < n; i++ {
			num := nd.Prob(t[i]) - nd.Prob(t[i+1])
			den := nd.CDF(t[i+1]) - nd.CDF(t[i])
			nc := num / den
			moved = math.Max(moved, math.Abs(nc-c[i]))
			c[i] = nc
		}
		if moved < 1e-13 {
			break
		}
	}
	return c
}
