package grids_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// TestReduce runs reduce on hand-made partials and compares with oracle.MergePartials under
// oracle.ReduceBound: rows with every split empty (m = −inf, l = 0, o full of NaN that must never be
// read), rows mixing empty and valid splits, rows whose valid splits all have l = 0 (L = 0: the
// output must be exactly zero), rows with maxima far apart (weights that underflow), one valid
// split, many; split counts 1 to 1024; partial strides 260 (as 0 and 260), 264 and 512 with NaN in
// the unused floats; contiguous or gapped output rows; fp16 and bf16; random V sign patterns.
func TestReduce(t *testing.T) {
	l := lib(t)
	for _, dt := range []kernels.Dtype{kernels.F16, kernels.BF16} {
		for _, ns := range []int{1, 3, 64, 1024} {
			for _, ps := range []int{0, 264, 512} {
				path := fmt.Sprintf("%s/splits%d/pstride%d", dtName(dt), ns, ps)
				t.Run(path, func(t *testing.T) { runReduce(t, l, path, dt, ns, ps) })
			}
		}
	}
}

func runReduce(t *testing.T, l *harness.Lib, path string, dt kernels.Dtype, ns, pstride int) {
	rng := rand.New(rand.NewPCG(caseSeed("reduce/"+path), 5))
	nq, hq := 3+rng.IntN(4), 1+rng.IntN(6)
	if ns == 1024 {
		nq, hq = 2, 3
	}
	P := pstride
	if P == 0 {
		P = oracle.DefaultPartialStride
	}
	vs := make(oracle.Signs, 256)
	for i := range vs {
		vs[i] = rng.IntN(2) == 1
	}
	nan := float32(math.NaN())
	part := make([]float32, nq*hq*ns*P)
	for i := range part {
		part[i] = nan
	}
	patterns := []string{"empty", "mixed", "lzero", "far", "one", "all"}
	kinds := make([]string, nq*hq)
	for r := range kinds {
		kinds[r] = patterns[(r+rng.IntN(2))%len(patterns)]
		base := r * ns * P
		one := rng.IntN(ns)
		for s := 0; s < ns; s++ {
			cases.FillPartial(rng, part[base+s*P:base+(s+1)*P], kinds[r], s, one)
		}
	}
	outPad := 0
	if rng.IntN(2) == 0 {
		outPad = 64
	}
	call := &harness.ReduceCall{Dtype: harness.DtypeOf(dt), NumQ: nq, Heads: hq, Splits: ns, PartialStride: pstride, Partials: part, VSigns: vs,
		OutPad: outPad, RowKinds: kinds}
	report(t, "reduce", harness.Check(l, libImpl(t, l, arch.Reduce), call))
}
