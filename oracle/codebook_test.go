package oracle

import (
	"math"
	"testing"
)

// TestLloydMaxDerivation derives the codebooks: Lloyd-Max centroids of N(0,1) for 8 and 16 levels,
// times LUT_MULT and rounded, must give the int8 tables (docs/format.md §1).
func TestLloydMaxDerivation(t *testing.T) {
	for _, bits := range []int{3, 4} {
		c := LloydMax(1 << bits)
		l := LUT(bits)
		for i, v := range c {
			if got := int8(math.Round(v * float64(LUTMult(bits)))); got != l[i] {
				t.Errorf("%d-bit centroid %d = %.6f × %v rounds to %d, LUT has %d", bits, i, v, LUTMult(bits), got, l[i])
			}
			if math.Abs(v+c[len(c)-1-i]) > 1e-9 {
				t.Errorf("%d-bit centroids not symmetric: %v vs %v", bits, v, c[len(c)-1-i])
			}
		}
		// The spec quotes the centroids to 4 decimals.
		quoted := map[int][]float64{3: {0.2451, 0.7560, 1.3439, 2.1520}, 4: {0.1284, 0.3881, 0.6568, 0.9424, 1.2562, 1.6180, 2.0690, 2.7326}}[bits]
		for i, q := range quoted {
			if v := c[len(c)/2+i]; math.Abs(v-q) > 6e-5 {
				t.Errorf("%d-bit centroid %.6f, docs/format.md §1 quotes %.4f", bits, v, q)
			}
		}
	}
}

func TestThresholdsAndPermWords(t *testing.T) {
	want3 := []float32{-103, -62, -29.5, 0, 29.5, 62, 103}
	want4 := []float32{-110.5, -84.5, -66, -50.5, -36.5, -24, -12, 0, 12, 24, 36.5, 50.5, 66, 84.5, 110.5}
	for bits, want := range map[int][]float32{3: want3, 4: want4} {
		got := Thresholds(bits)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%d-bit threshold %d = %v, want %v", bits, i, got[i], want[i])
			}
		}
	}
	for bits, want := range map[int][]uint32{3: {0xF2D3B181, 0x7F4F2D0E}, 4: {0xC6B6A182, 0xFAEEE2D5, 0x2B1E1206, 0x7E5F4A3A}} {
		got := PermWords(bits)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%d-bit perm word %d = %#08x, want %#08x", bits, i, got[i], want[i])
			}
		}
	}
	// Ties go to the lower code; saturation at both ends (docs/format.md §4 step 4, checked on torch).
	for _, c := range []struct {
		y    float32
		bits int
		want uint8
	}{{0, 3, 3}, {29.5, 3, 4}, {-29.5, 3, 2}, {103, 3, 6}, {1e30, 3, 7}, {-1e30, 3, 0}, {0, 4, 7}, {float32(math.Copysign(0, -1)), 4, 7}, {110.5, 4, 14}, {110.6, 4, 15}} {
		if got := Code(c.y, c.bits); got != c.want {
			t.Errorf("Code(%v, %d) = %d, want %d", c.y, c.bits, got, c.want)
		}
	}
}

func TestFP16Conversions(t *testing.T) {
	// docs/format.md §4 step 7 (torch checked).
	for _, c := range []struct {
		f float32
		h uint16
	}{{65519, 0x7BFF}, {65520, 0x7C00}, {3e-8, 0x0001}, {2.7749786, 0x418D}, {0, 0}, {1, 0x3C00}} {
		if got := F32ToF16(c.f); got != c.h {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if got := f64ToF16(65519.99); got != 0x7BFF {
		t.Errorf("f64ToF16(65519.99) = %#04x", got)
	}
	if got := f64ToF16(65520); got != 0x7C00 {
		t.Errorf("f64ToF16(65520) = %#04x", got)
	}
	// Every fp16 value and every midpoint between neighbours rounds as RNE says.
	for h := uint16(0); h < 0x7bff; h++ {
		if got := f64ToF16(float64(F16ToF32(h))); got != h {
			t.Fatalf("f64ToF16(value of %#04x) = %#04x", h, got)
		}
		mid := (float64(F16ToF32(h)) + float64(F16ToF32(h+1))) / 2
		want := h
		if h&1 == 1 {
			want = h + 1
		}
		if got := f64ToF16(mid); got != want {
			t.Fatalf("f64ToF16(midpoint %#04x/%#04x) = %#04x, want %#04x", h, h+1, got, want)
		}
	}
	if BF16ToF32(0x3F80) != 1 || F32ToBF16(1) != 0x3F80 || F32ToBF16(1.00390625) != 0x3F80 || F32ToBF16(1.01171875) != 0x3F82 {
		t.Error("bf16 conversions")
	}
}

// TestCodeMatchesDefinition checks the table lookup of Code against the definition (count of
// thresholds strictly below y) on every half-integer, its float32 neighbours, and random values.
func TestCodeMatchesDefinition(t *testing.T) {
	var ys []float32
	for i := -600; i <= 600; i++ {
		h := float32(i) / 2
		ys = append(ys, h, math.Nextafter32(h, -1000), math.Nextafter32(h, 1000))
	}
	ys = append(ys, float32(math.Inf(1)), float32(math.Inf(-1)), 1e30, -1e30, 0, float32(math.Copysign(0, -1)))
	for i := 0; i < 10000; i++ {
		ys = append(ys, float32(math.Sin(float64(i))*300))
	}
	for _, bits := range []int{3, 4} {
		for _, y := range ys {
			if got, want := Code(y, bits), codeLinear(y, bits); got != want {
				t.Fatalf("Code(%v, %d) = %d, definition gives %d", y, bits, got, want)
			}
		}
	}
	if Code(float32(math.NaN()), 4) != 0 {
		t.Error("Code(NaN) must be 0 (the kernel's behaviour)")
	}
}
