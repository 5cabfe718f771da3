package oracle

import (
	"fmt"
	"math"
)

// FWHT32 applies the normalized Walsh–Hadamard transform in place over consecutive blocks of size
// block, bit-exact to FORMAT.md §3: float32 butterflies with stride h = 1, 2, …, block/2 in that
// order (new[k] = a+b, new[k+h] = a−b), then every element times 1/√block. Sums and differences of
// two float32 values cannot be fused, and the final scale is a power of two when block is a power
// of four; for other powers of two the multiplication is one rounded float32 product.
func FWHT32(x []float32, block int) {
	checkBlock(len(x), block)
	inv := float32(1 / math.Sqrt(float64(block)))
	for base := 0; base < len(x); base += block {
		b := x[base : base+block]
		// Stages h = 1, 2, 4 on groups of eight held in registers (the same operations on the same
		// pairs, in the same stage order).
		for j := 0; j+7 < len(b); j += 8 {
			q := b[j : j+8 : j+8]
			a0, a1 := q[0]+q[1], q[0]-q[1]
			a2, a3 := q[2]+q[3], q[2]-q[3]
			a4, a5 := q[4]+q[5], q[4]-q[5]
			a6, a7 := q[6]+q[7], q[6]-q[7]
			b0, b2 := a0+a2, a0-a2
			b1, b3 := a1+a3, a1-a3
			b4, b6 := a4+a6, a4-a6
			b5, b7 := a5+a7, a5-a7
			q[0], q[4] = b0+b4, b0-b4
			q[1], q[5] = b1+b5, b1-b5
			q[2], q[6] = b2+b6, b2-b6
			q[3], q[7] = b3+b7, b3-b7
		}
		// Remaining stages two at a time (h and 2h on four elements in registers), then a last
		// single stage if log2(block) − 3 is odd. Each element sees the same additions in the same
		// stage order as the one-stage-at-a-time loop.
		h := 8
		for ; 4*h <= block; h *= 4 {
			for j := 0; j < block; j += 4 * h {
				q0 := b[j : j+h : j+h]
				q1 := b[j+h : j+2*h : j+2*h]
				q2 := b[j+2*h : j+3*h : j+3*h]
				q3 := b[j+3*h : j+4*h : j+4*h]
				for k := range q0 {
					a0, a1 := q0[k]+q1[k], q0[k]-q1[k]
					a2, a3 := q2[k]+q3[k], q2[k]-q3[k]
					q0[k], q2[k] = a0+a2, a0-a2
					q1[k], q3[k] = a1+a3, a1-a3
				}
			}
		}
		for ; h < block; h <<= 1 {
			for j := 0; j < block; j += 2 * h {
				lo := b[j : j+h : j+h]
				hi := b[j+h : j+2*h : j+2*h]
				for k := range lo {
					a, c := lo[k], hi[k]
					lo[k], hi[k] = a+c, a-c
				}
			}
		}
		for i := range b {
			b[i] = float32(b[i] * inv)
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
	if block < 8 && block > 0 && block&(block-1) == 0 {
		panic(fmt.Sprintf("oracle: FWHT block %d: the oracle supports blocks of 8 or more", block))
	}
	if block <= 0 || block&(block-1) != 0 || n%block != 0 {
		panic(fmt.Sprintf("oracle: FWHT block %d over %d values: expected a power of two dividing the length", block, n))
	}
}

// Rotate returns H_B(D·x) in float32 (FORMAT.md §3): signs first, then the blockwise transform.
// len(s) must be at least len(x).
func Rotate(x []float32, s Signs, block int) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		if s[i] {
			v = -v
		}
		y[i] = v
	}
	FWHT32(y, block)
	return y
}

// Unrotate returns D·H_B(y) in float32: transform first, then signs.
func Unrotate(y []float32, s Signs, block int) []float32 {
	x := append([]float32(nil), y...)
	FWHT32(x, block)
	for i := range x {
		if s[i] {
			x[i] = -x[i]
		}
	}
	return x
}

// Rotate64 is Rotate in float64.
func Rotate64(x []float64, s Signs, block int) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		if s[i] {
			v = -v
		}
		y[i] = v
	}
	FWHT64(y, block)
	return y
}

// Unrotate64 is Unrotate in float64.
func Unrotate64(y []float64, s Signs, block int) []float64 {
	x := append([]float64(nil), y...)
	FWHT64(x, block)
	for i := range x {
		if s[i] {
			x[i] = -x[i]
		}
	}
	return x
}
