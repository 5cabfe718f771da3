package grids_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// TestRotate checks rotate (docs/contract.md §3.2) bit for bit: every element must equal the oracle's
// float32 rotation (docs/format.md §3: signs then FWHT, or FWHT then signs, in the specified stage order
// with no contraction; oracle.Rotate / oracle.Unrotate) of the dtype input, rounded back to the
// dtype to nearest even. The spec fixes every float32 operation and the final rounding, so there is
// no rounding slack: one differing bit is a defect. A NaN result must be a NaN (its payload and sign
// are not compared). Cases: fp16/bf16 × 64-dim blocks or 256 dims × forward/inverse × contiguous
// or strided rows (the gaps must stay untouched) × value distributions (Gaussian, near the dtype's
// largest values so sums overflow to ±inf, subnormal, NaN and ±inf sprinkled in) × row counts
// including 0.
func TestRotate(t *testing.T) {
	l := lib(t)
	for _, dt := range []kernels.Dtype{kernels.F16, kernels.BF16} {
		for _, k64 := range []bool{true, false} {
			for _, inv := range []bool{false, true} {
				for _, strided := range []bool{false, true} {
					for _, dist := range []string{"gauss", "huge", "subnormal", "nonfinite"} {
						blk := map[bool]string{true: "block64", false: "block256"}[k64]
						dir := map[bool]string{true: "inverse", false: "forward"}[inv]
						view := map[bool]string{true: "strided", false: "contig"}[strided]
						path := fmt.Sprintf("%s/%s/%s/%s/%s", dtName(dt), blk, dir, view, dist)
						t.Run(path, func(t *testing.T) { runRotate(t, l, path, dt, k64, inv, strided, dist) })
					}
				}
			}
		}
	}
}

func runRotate(t *testing.T, l *harness.Lib, path string, dt kernels.Dtype, k64, inv, strided bool, dist string) {
	rng := rand.New(rand.NewPCG(caseSeed("rotate/"+path), 3))
	T, H := []int{0, 1, 5, 37}[rng.IntN(4)], 1+rng.IntN(3)
	if dist == "gauss" {
		T = max(T, 1)
	}
	sh, st := 256, H*256
	if strided {
		sh = 256 + 8*(1+rng.IntN(4)) // gaps between heads and after each row
		st = H*sh + 8*rng.IntN(5)
	}
	signs := make(oracle.Signs, 256)
	for i := range signs {
		signs[i] = rng.IntN(2) == 1
	}
	n := T * st
	if n == 0 {
		n = 64
	}
	x := make([]uint16, n)
	for i := range x {
		x[i] = 0x7BFF ^ uint16(i) // gap filler, never a row element
	}
	for tk := 0; tk < T; tk++ {
		for h := 0; h < H; h++ {
			for d := 0; d < 256; d++ {
				var v float64
				switch dist {
				case "gauss":
					v = rng.NormFloat64() * 3
				case "huge":
					m := 60000.0
					if dt == kernels.BF16 {
						m = 3e38
					}
					v = m * (0.5 + 0.5*rng.Float64()) * float64(1-2*rng.IntN(2))
				case "subnormal":
					v = rng.NormFloat64() * 1e-6
					if dt == kernels.BF16 {
						v = rng.NormFloat64() * 1e-39
					}
				case "nonfinite":
					v = rng.NormFloat64()
					switch rng.IntN(40) {
					case 0:
						v = math.NaN()
					case 1:
						v = math.Inf(1 - 2*rng.IntN(2))
					}
				}
				x[tk*st+h*sh+d] = toAct(float32(v), dt)
			}
		}
	}
	call := &harness.RotateCall{Dtype: harness.DtypeOf(dt), Rows: T, Heads: H, HeadGap: sh - 256, RowGap: st - H*sh, Block64: k64, Inverse: inv, Signs: signs, X: x}
	report(t, "rotate", harness.Check(l, libImpl(t, l, arch.Rotate), call))
}
