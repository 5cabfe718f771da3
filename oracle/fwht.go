package oracle

import (
	"fmt"
	"math"
	"math/bits"
)

// FWHT32 applies the normalized Walsh–Hadamard transform in place over consecutive blocks of size
// block, bit-exact to docs/format.md §3: float32 butterflies with stride h = 1, 2, …, block/2 in that
// order (new[k] = a+b, new[k+h] = a−b), then every element times 1/√block. Sums and differences of
// two float32 values cannot be fused, and the final scale is a power of two when block is a power
// of four; for other powers of two the multiplication is one rounded float32 product.
func FWHT32(x []float32, block int) {
	checkBlock(len(x), block)
	fwhtStages(x, block, 1)
}

// fwhtStages applies the stages h0, 2·h0, …, block/2 of FWHT32 and then its 1/√block scale to
// every block of x (h0 = 1 is the whole transform; h0 < block).
func fwhtStages(x []float32, block, h0 int) {
	inv := float32(1 / math.Sqrt(float64(block)))
	for base := 0; base < len(x); base += block {
		b := x[base : base+block]
		// Stages are applied in passes of three, two or one stage (h, 2h, 4h on eight elements
		// held in registers): every element sees the same additions in the same stage order as a
		// one-stage-at-a-time loop, so the result is bit-identical; the last pass also applies the
		// 1/√B scale to the finished values.
		h, left := h0, bits.TrailingZeros(uint(block/h0))
		for left > 0 {
			n := 3
			switch {
			case left == 4 || left == 2:
				n = 2
			case left == 1:
				n = 1
			}
			left -= n
			scale := left == 0
			switch n {
			case 3:
				fwhtPass8(b, h, scale, inv)
			case 2:
				fwhtPass4(b, h, scale, inv)
			default:
				fwhtPass2(b, h, scale, inv)
			}
			h <<= n
		}
	}
}

// fwhtPass8 applies stages h, 2h, 4h to every group of eight elements at stride h; with scale,
// it multiplies the results by inv.
func fwhtPass8(b []float32, h int, scale bool, inv float32) {
	if h == 1 && !scale {
		fwhtPass8Contiguous(b)
		return
	}
	for j := 0; j < len(b); j += 8 * h {
		r0, r1 := b[j:j+h:j+h], b[j+h:j+2*h:j+2*h]
		r2, r3 := b[j+2*h:j+3*h:j+3*h], b[j+3*h:j+4*h:j+4*h]
		r4, r5 := b[j+4*h:j+5*h:j+5*h], b[j+5*h:j+6*h:j+6*h]
		r6, r7 := b[j+6*h:j+7*h:j+7*h], b[j+7*h:j+8*h:j+8*h]
		for k := range r0 {
			a0, a1 := r0[k]+r1[k], r0[k]-r1[k]
			a2, a3 := r2[k]+r3[k], r2[k]-r3[k]
			a4, a5 := r4[k]+r5[k], r4[k]-r5[k]
			a6, a7 := r6[k]+r7[k], r6[k]-r7[k]
			c0, c2 := a0+a2, a0-a2
			c1, c3 := a1+a3, a1-a3
			c4, c6 := a4+a6, a4-a6
			c5, c7 := a5+a7, a5-a7
			d0, d4 := c0+c4, c0-c4
			d1, d5 := c1+c5, c1-c5
			d2, d6 := c2+c6, c2-c6
			d3, d7 := c3+c7, c3-c7
			if scale {
				d0, d1, d2, d3 = float32(d0*inv), float32(d1*inv), float32(d2*inv), float32(d3*inv)
				d4, d5, d6, d7 = float32(d4*inv), float32(d5*inv), float32(d6*inv), float32(d7*inv)
			}
			r0[k], r1[k], r2[k], r3[k] = d0, d1, d2, d3
			r4[k], r5[k], r6[k], r7[k] = d4, d5, d6, d7
		}
	}
}

// fwhtPass8Contiguous is fwhtPass8 for h = 1 without scaling: eight contiguous elements at a time,
// indexed directly (the strided form would build eight one-element slices per group).
func fwhtPass8Contiguous(b []float32) {
	for j := 0; j+7 < len(b); j += 8 {
		q := b[j : j+8 : j+8]
		a0, a1 := q[0]+q[1], q[0]-q[1]
		a2, a3 := q[2]+q[3], q[2]-q[3]
		a4, a5 := q[4]+q[5], q[4]-q[5]
		a6, a7 := q[6]+q[7], q[6]-q[7]
		c0, c2 := a0+a2, a0-a2
		c1, c3 := a1+a3, a1-a3
		c4, c6 := a4+a6, a4-a6
		c5, c7 := a5+a7, a5-a7
		q[0], q[4] = c0+c4, c0-c4
		q[1], q[5] = c1+c5, c1-c5
		q[2], q[6] = c2+c6, c2-c6
		q[3], q[7] = c3+c7, c3-c7
	}
}

// fwhtPass8Signed is fwhtPass8Contiguous reading its input from src, each value with its sign-bit
// mask applied (the D of Rotate, exactly a negation), and writing to dst.
func fwhtPass8Signed(dst, src []float32, mask []uint32) {
	for j := 0; j+7 < len(src); j += 8 {
		s, m, q := src[j:j+8:j+8], mask[j:j+8:j+8], dst[j:j+8:j+8]
		v0, v1 := applySign(s[0], m[0]), applySign(s[1], m[1])
		v2, v3 := applySign(s[2], m[2]), applySign(s[3], m[3])
		v4, v5 := applySign(s[4], m[4]), applySign(s[5], m[5])
		v6, v7 := applySign(s[6], m[6]), applySign(s[7], m[7])
		a0, a1 := v0+v1, v0-v1
		a2, a3 := v2+v3, v2-v3
		a4, a5 := v4+v5, v4-v5
		a6, a7 := v6+v7, v6-v7
		c0, c2 := a0+a2, a0-a2
		c1, c3 := a1+a3, a1-a3
		c4, c6 := a4+a6, a4-a6
		c5, c7 := a5+a7, a5-a7
		q[0], q[4] = c0+c4, c0-c4
		q[1], q[5] = c1+c5, c1-c5
		q[2], q[6] = c2+c6, c2-c6
		q[3], q[7] = c3+c7, c3-c7
	}
}

// applySign XORs a sign-bit mask into v: −v for 1<<31 (NaN included), v for 0.
func applySign(v float32, mask uint32) float32 {
	return math.Float32frombits(math.Float32bits(v) ^ mask)
}

// fwhtPass4 applies stages h, 2h to every group of four elements at stride h.
func fwhtPass4(b []float32, h int, scale bool, inv float32) {
	for j := 0; j < len(b); j += 4 * h {
		r0, r1 := b[j:j+h:j+h], b[j+h:j+2*h:j+2*h]
		r2, r3 := b[j+2*h:j+3*h:j+3*h], b[j+3*h:j+4*h:j+4*h]
		for k := range r0 {
			a0, a1 := r0[k]+r1[k], r0[k]-r1[k]
			a2, a3 := r2[k]+r3[k], r2[k]-r3[k]
			c0, c2 := a0+a2, a0-a2
			c1, c3 := a1+a3, a1-a3
			if scale {
				c0, c1, c2, c3 = float32(c0*inv), float32(c1*inv), float32(c2*inv), float32(c3*inv)
			}
			r0[k], r1[k], r2[k], r3[k] = c0, c1, c2, c3
		}
	}
}

// fwhtPass2 applies stage h to every pair at stride h.
func fwhtPass2(b []float32, h int, scale bool, inv float32) {
	for j := 0; j < len(b); j += 2 * h {
		lo, hi := b[j:j+h:j+h], b[j+h:j+2*h:j+2*h]
		for k := range lo {
			a, c := lo[k]+hi[k], lo[k]-hi[k]
			if scale {
				a, c = float32(a*inv), float32(c*inv)
			}
			lo[k], hi[k] = a, c
		}
	}
}

// FWHT64 is FWHT32 in float64 (used by the exact attention model).
func FWHT64(x []float64, block int) {
	checkBlock(len(x), block)
	inv := 1 / math.Sqrt(float64(block))
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
			b[i] *= inv
		}
	}
}

func checkBlock(n, block int) {
	if block <= 0 || block&(block-1) != 0 || n%block != 0 {
		panic(fmt.Sprintf("oracle: FWHT block %d over %d values: expected a power of two dividing the length", block, n))
	}
}

// Rotate returns H_B(D·x) in float32 (docs/format.md §3): signs first, then the blockwise transform.
// len(s) must be at least len(x).
func Rotate(x []float32, s Signs, block int) []float32 {
	y := append([]float32(nil), x...)
	negate(y, s)
	FWHT32(y, block)
	return y
}

// Unrotate returns D·H_B(y) in float32: transform first, then signs.
func Unrotate(y []float32, s Signs, block int) []float32 {
	x := append([]float32(nil), y...)
	FWHT32(x, block)
	negate(x, s)
	return x
}

// Rotate64 is Rotate in float64.
func Rotate64(x []float64, s Signs, block int) []float64 {
	y := append([]float64(nil), x...)
	negate(y, s)
	FWHT64(y, block)
	return y
}

// Unrotate64 is Unrotate in float64.
func Unrotate64(y []float64, s Signs, block int) []float64 {
	x := append([]float64(nil), y...)
	FWHT64(x, block)
	negate(x, s)
	return x
}

// negate applies the sign pattern D: x[i] = −x[i] where s[i] (len(s) ≥ len(x)).
func negate[T float32 | float64](x []T, s Signs) {
	for i := range x {
		if s[i] {
			x[i] = -x[i]
		}
	}
}
