package kernels_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// TestRotate checks rotate (KERNELS.md §3.2) bit for bit: every element must equal the oracle's
// float32 rotation (FORMAT.md §3: signs then FWHT, or FWHT then signs, in the specified stage order
// with no contraction; oracle.Rotate / oracle.Unrotate) of the dtype input, rounded back to the
// dtype to nearest even. The spec fixes every float32 operation and the final rounding, so there is
// no rounding slack: one differing bit is a defect. A NaN result must be a NaN (its payload and sign
// are not compared). Cases: fp16/bf16 × 64-dim blocks or 256 dims × forward/inverse × contiguous
// or strided rows (the gaps must stay untouched) × value distributions (Gaussian, near the dtype's
// largest values so sums overflow to ±inf, subnormal, NaN and ±inf sprinkled in) × row counts
// including 0.
func TestRotate(t *testing.T) {
	dev := device(t)
	for _, dt := range []kernels.Dtype{kernels.F16, kernels.BF16} {
		for _, k64 := range []bool{true, false} {
			for _, inv := range []bool{false, true} {
				for _, strided := range []bool{false, true} {
					for _, dist := range []string{"gauss", "huge", "subnormal", "nonfinite"} {
						blk := map[bool]string{true: "block64", false: "block256"}[k64]
						dir := map[bool]string{true: "inverse", false: "forward"}[inv]
						view := map[bool]string{true: "strided", false: "contig"}[strided]
						path := fmt.Sprintf("%s/%s/%s/%s/%s", dtName(dt), blk, dir, view, dist)
						t.Run(path, func(t *testing.T) { runRotate(t, dev, path, dt, k64, inv, strided, dist) })
					}
				}
			}
		}
	}
}

func runRotate(t *testing.T, dev *kernels.Device, path string, dt kernels.Dtype, k64, inv, strided bool, dist string) {
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
	bufs := newBufSet(t, dev)
	b := bufs.inout("x", kernels.Uint16Bytes(x))
	a := kernels.RotateArgs{X: b.Ptr, StrideToken: int64(st), StrideHead: int64(sh), Dtype: dt, HeadSize: 256, NumTokens: int32(T), NumHds: int32(H), Signs: kernels.SignWords(signs.Words())}
	if k64 {
		a.KLayout = 1
	}
	if inv {
		a.Inverse = 1
	}
	must(t, dev.Rotate(a), "rotate")
	must(t, dev.Sync(), "sync after rotate")
	bufs.checkCanaries(t, "rotate")
	got := kernels.BytesUint16(read(t, b))
	block := 256
	if k64 {
		block = 64
	}
	inRow := make([]bool, n)
	bad := 0
	row := make([]float32, 256)
	for tk := 0; tk < T; tk++ {
		for h := 0; h < H; h++ {
			o := tk*st + h*sh
			for d := range row {
				row[d] = fromAct(x[o+d], dt)
				inRow[o+d] = true
			}
			var want []float32
			if inv {
				want = oracle.Unrotate(row, signs, block)
			} else {
				want = oracle.Rotate(row, signs, block)
			}
			for d, w := range want {
				wb, gb := toAct(w, dt), got[o+d]
				same := wb == gb || (math.IsNaN(float64(w)) && math.IsNaN(float64(fromAct(gb, dt))))
				if !same {
					if bad++; bad <= 3 {
						failf(t, "rotate row %d head %d dim %d: got %#04x (%g), expected %#04x (%g) = the oracle's float32 %g rounded to %s (input %#04x)",
							tk, h, d, gb, fromAct(gb, dt), wb, fromAct(wb, dt), w, dtName(dt), x[o+d])
					}
				}
			}
		}
	}
	if bad > 3 {
		failf(t, "rotate: %d elements differ in all", bad)
	}
	for i := range got {
		if !inRow[i] && got[i] != x[i] {
			failf(t, "rotate wrote element %d, in a gap between rows (stride_token %d, stride_head %d): %#04x, was %#04x", i, st, sh, got[i], x[i])
			break
		}
	}
}
