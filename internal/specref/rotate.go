// Package specref holds readings of docs/format.md written apart from the oracle: they share no
// code with package oracle, so a judge that compares the two compares two independent
// computations of what the specification says, not the oracle with itself.
package specref

import "math"

// Rotate is docs/format.md §3's forward rotation of x in float32: signs (neg[i] negates x[i]),
// then in each block of B dims butterflies with stride 1, 2, …, B/2 (new[k] = a+b,
// new[k+h] = a−b), then × 1/√B rounded to float32 once.
func Rotate(x []float32, neg []bool, block int) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		if neg[i] {
			v = -v
		}
		y[i] = v
	}
	transform(y, block)
	return y
}

// Unrotate is docs/format.md §3's inverse rotation in float32: the same transform first, then
// the signs.
func Unrotate(y []float32, neg []bool, block int) []float32 {
	x := append([]float32(nil), y...)
	transform(x, block)
	for i := range x {
		if neg[i] {
			x[i] = -x[i]
		}
	}
	return x
}

// transform applies the normalised Walsh–Hadamard transform to each block of y in place.
func transform(y []float32, block int) {
	inv := float32(1 / math.Sqrt(float64(block)))
	for b0 := 0; b0 < len(y); b0 += block {
		blk := y[b0 : b0+block]
		for h := 1; h < block; h *= 2 {
			for k := 0; k < block; k++ {
				if k&h == 0 {
					a, c := blk[k], blk[k+h]
					blk[k], blk[k+h] = a+c, a-c
				}
			}
		}
		for k := range blk {
			blk[k] = float32(blk[k] * inv)
		}
	}
}
