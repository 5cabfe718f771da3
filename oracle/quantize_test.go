package oracle

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQuantizeGroupCodesAtExtremes: QuantizeGroup's unclamped table lookup (groups of up to
// maxTableGroup values) gives Code's codes, on the groups that push |x/rms| to its bound √n: one
// spike among zeros or tiny values, at magnitudes around the 1e-12 rms floor, subnormal squares
// and float32 overflow of ss. Larger groups take the clamped path.
func TestQuantizeGroupCodesAtExtremes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{64, 256, maxTableGroup, maxTableGroup + 64} {
		x := make([]float32, n)
		for iter := 0; iter < 200; iter++ {
			spike := float32(math.Ldexp(1+r.Float64(), r.IntN(260)-150))
			if r.IntN(2) == 0 {
				spike = -spike
			}
			for i := range x {
				x[i] = 0
				if iter%2 == 1 {
					x[i] = float32(math.Ldexp(r.Float64()-0.5, -140))
				}
			}
			x[r.IntN(n)] = spike
			for _, bits := range []int{3, 4} {
				g := QuantizeGroup(x, bits, nil)
				ss, _ := groupSS(x)
				rms := groupRMS(ss, n)
				for i, v := range x {
					if want := Code(float32(float32(v/rms)*LUTMult(bits)), bits); g.Codes[i] != want {
						t.Fatalf("n=%d bits=%d spike %g: code %d of x=%g is %d, want %d", n, bits, spike, i, v, g.Codes[i], want)
					}
				}
			}
		}
	}
}

// TestRotateIntoMatchesRotate: the quantizer's rotation (signs fused into the first FWHT pass for
// blocks of 16 or more) equals Rotate bit for bit, NaN and infinities included.
func TestRotateIntoMatchesRotate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-45, 3e38}
	for block := 2; block <= 1024; block *= 2 {
		n := 2 * max(block, 64)
		s := make(Signs, n)
		x := make([]float32, n)
		dst := make([]float32, n)
		for iter := 0; iter < 20; iter++ {
			for i := range x {
				s[i] = r.IntN(2) == 1
				x[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20))
				if iter%4 == 3 && r.IntN(50) == 0 {
					x[i] = special[r.IntN(len(special))]
				}
			}
			rotateInto(dst, x, signMasks(s), block)
			want := Rotate(x, s, block)
			for i := range want {
				if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
					t.Fatalf("block %d dim %d: %#08x, Rotate gives %#08x", block, i, math.Float32bits(dst[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}
