package oracle

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// genValues draws n finite float32 values exactly representable in fp16 or bf16, with a random
// per-vector magnitude so that groups of very different scale are exercised.
func genValues(t *rapid.T, n int, label string) []float32 {
	bf := rapid.Bool().Draw(t, label+"-bf16")
	exp := rapid.IntRange(-12, 12).Draw(t, label+"-exp")
	x := make([]float32, n)
	for i := range x {
		v := rapid.Float64Range(-4, 4).Draw(t, label) * math.Ldexp(1, exp)
		if bf {
			x[i] = BF16ToF32(F32ToBF16(float32(v)))
		} else {
			x[i] = F16ToF32(F32ToF16(float32(v)))
		}
	}
	return x
}

func genSigns(t *rapid.T, n int) Signs {
	if rapid.Bool().Draw(t, "default-signs") {
		return DefaultSigns(n)
	}
	s := make(Signs, n)
	for i := range s {
		s[i] = rapid.Bool().Draw(t, "sign")
	}
	return s
}

// gammaN is the standard bound n·u/(1−n·u) on the relative error of n float32 roundings.
func gammaN(n int) float64 {
	u := 0x1p-24
	return float64(n) * u / (1 - float64(n)*u)
}

// TestRotationProperties: the float32 rotation preserves the norm and unrotate∘rotate is the
// identity, within the error of log2(B) float32 butterfly stages plus the scaling (each stage
// adds at most one rounding of relative size u to each element's path, so the computed transform
// differs from the exact one by at most γ_{log2 B + 1} times the norm; the round trip doubles it).
func TestRotationProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		block := rapid.SampledFrom([]int{64, 256}).Draw(t, "block")
		x := genValues(t, 256, "x")
		s := genSigns(t, 256)
		y := Rotate(x, s, block)
		var nx, ny float64
		for i := range x {
			nx += float64(x[i]) * float64(x[i])
			ny += float64(y[i]) * float64(y[i])
		}
		stages := int(math.Log2(float64(block))) + 1
		bound := gammaN(stages) * math.Sqrt(float64(block)) // per element, relative to the block norm
		if math.Abs(math.Sqrt(ny)-math.Sqrt(nx)) > bound*math.Sqrt(nx)+1e-300 {
			t.Fatalf("norm %g after rotation, %g before (bound %g)", math.Sqrt(ny), math.Sqrt(nx), bound*math.Sqrt(nx))
		}
		z := Unrotate(y, s, block)
		for i := range x {
			if d := math.Abs(float64(z[i] - x[i])); d > 2*bound*math.Sqrt(nx) {
				t.Fatalf("unrotate(rotate(x))[%d] = %g, x = %g (bound %g)", i, z[i], x[i], 2*bound*math.Sqrt(nx))
			}
		}
		// Exact arithmetic check: the float64 transform is the Sylvester matrix.
		i := rapid.IntRange(0, 255).Draw(t, "row")
		b0 := i / block * block
		var want float64
		for j := b0; j < b0+block; j++ {
			xs := float64(x[j])
			if s[j] {
				xs = -xs
			}
			if popcount((i-b0)&(j-b0))%2 == 1 {
				xs = -xs
			}
			want += xs
		}
		want /= math.Sqrt(float64(block))
		got := Rotate64(f64s(x), s, block)[i]
		if math.Abs(got-want) > 1e-12*math.Sqrt(nx) {
			t.Fatalf("Rotate64 row %d = %g, Sylvester sum %g", i, got, want)
		}
	})
}

func popcount(v int) int {
	c := 0
	for ; v != 0; v &= v - 1 {
		c++
	}
	return c
}

func f64s(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// TestPackRoundTrip: unpack∘pack is the identity for every code vector, and the packing writes
// exactly 3n/8 or n/2 bytes.
func TestPackRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bits := rapid.SampledFrom([]int{3, 4}).Draw(t, "bits")
		n := 32 * rapid.IntRange(1, 16).Draw(t, "n/32")
		codes := make([]uint8, n)
		for i := range codes {
			codes[i] = uint8(rapid.IntRange(0, 1<<bits-1).Draw(t, "code"))
		}
		nb := n * bits / 8
		buf := make([]byte, nb+4)
		for i := range buf {
			buf[i] = 0xA5
		}
		PackCodes(buf[:nb], codes, bits)
		for i := nb; i < len(buf); i++ {
			if buf[i] != 0xA5 {
				t.Fatalf("packing %d %d-bit codes wrote byte %d", n, bits, i)
			}
		}
		back := make([]uint8, n)
		UnpackCodes(back, buf[:nb], bits)
		for i := range codes {
			if back[i] != codes[i] {
				t.Fatalf("code %d: packed %d, unpacked %d", i, codes[i], back[i])
			}
		}
	})
}

// TestScalePreservesDot: with the float32 scale (before fp16 rounding), x·x̂ = |x|² up to the
// float32 roundings of ss, dot, the division and the final comparison sum (docs/format.md §4 step 6):
// a few ulps, bounded here by γ_8.
func TestScalePreservesDot(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bits := rapid.SampledFrom([]int{3, 4}).Draw(t, "bits")
		n := rapid.SampledFrom([]int{64, 256}).Draw(t, "n")
		x := genValues(t, n, "x")
		g := QuantizeGroup(x, bits, nil)
		var ss, xd float64
		l := LUT(bits)
		for i, v := range x {
			ss += float64(v) * float64(v)
			xd += float64(v) * float64(l[g.Codes[i]]) * float64(g.Scale32) / 64
		}
		if ss == 0 {
			if g.Scale32 != 0 {
				t.Fatalf("zero group has scale %v", g.Scale32)
			}
			return
		}
		if math.Abs(xd-ss) > gammaN(8)*ss {
			t.Fatalf("x·x̂ = %.9g, |x|² = %.9g: relative error %.3g > γ_8 = %.3g", xd, ss, math.Abs(xd-ss)/ss, gammaN(8))
		}
	})
}

// TestDequantizeMatchesCodes: the byte-level decoder equals LUT[code]·scale/64 over the unpacked
// codes and scales, for random slot bytes of every format (any byte pattern is a valid slot).
func TestDequantizeMatchesCodes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := MustFormat(rapid.SampledFrom(AllFormats).Draw(t, "fmt"), 256, 64)
		slot := rapid.SliceOfN(rapid.Byte(), f.SlotBytes(), f.SlotBytes()).Draw(t, "slot")
		// Keep scales finite so that NaN != NaN does not hide a mismatch.
		for i := 0; i < f.NumScales(); i++ {
			slot[f.OffScales()+2*i+1] &= 0x7b
		}
		k, v := DequantizeSlot(f, slot)
		kc, vc := SlotCodes(f, slot)
		sc := SlotScales(f, slot)
		for _, g := range f.Groups() {
			codes, out := kc, k
			if g.IsV {
				codes, out = vc, v
			}
			for i := g.Dim0; i < g.Dim0+g.N; i++ {
				if want := Dequant(codes[i], g.Bits, sc[(g.ScaleOff-f.OffScales())/2]); out[i] != want {
					t.Fatalf("%s dim %d: %v, want %v", g.Name, i, out[i], want)
				}
			}
		}
	})
}

// fwhtReference is docs/format.md §3's transform written one stage at a time, the definition the
// pass-fused FWHT32 must reproduce bit for bit.
func fwhtReference(x []float32, block int) {
	inv := float32(1 / math.Sqrt(float64(block)))
	for base := 0; base < len(x); base += block {
		b := x[base : base+block]
		for h := 1; h < block; h <<= 1 {
			for k := 0; k < block; k++ {
				if k&h == 0 {
					a, c := b[k], b[k+h]
					b[k], b[k+h] = a+c, a-c
				}
			}
		}
		for i := range b {
			b[i] = float32(b[i] * inv)
		}
	}
}

// TestFWHT32MatchesStageOrder: bit-identical to the stage-by-stage definition for every block
// size 2..1024 on inexact inputs (values spanning many binades, so additions round).
func TestFWHT32MatchesStageOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		block := 1 << rapid.IntRange(1, 10).Draw(t, "log2 block")
		n := block * rapid.IntRange(1, 2).Draw(t, "blocks")
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Ldexp(rapid.Float64Range(-1, 1).Draw(t, "m"), rapid.IntRange(-30, 30).Draw(t, "e")))
		}
		want := append([]float32(nil), x...)
		fwhtReference(want, block)
		FWHT32(x, block)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
				t.Fatalf("block %d: element %d = %g, stage-by-stage %g", block, i, x[i], want[i])
			}
		}
	})
}
