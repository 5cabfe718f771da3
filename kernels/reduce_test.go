package kernels_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

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
	dev := device(t)
	for _, dt := range []kernels.Dtype{kernels.F16, kernels.BF16} {
		for _, ns := range []int{1, 3, 64, 1024} {
			for _, ps := range []int{0, 264, 512} {
				path := fmt.Sprintf("%s/splits%d/pstride%d", dtName(dt), ns, ps)
				t.Run(path, func(t *testing.T) { runReduce(t, dev, path, dt, ns, ps) })
			}
		}
	}
}

func runReduce(t *testing.T, dev *kernels.Device, path string, dt kernels.Dtype, ns, pstride int) {
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
	ninf := float32(math.Inf(-1))
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
			row := part[base+s*P : base+(s+1)*P]
			valid := true
			switch kinds[r] {
			case "empty":
				valid = false
			case "mixed", "lzero":
				valid = rng.IntN(2) == 0 || s == one
			case "one":
				valid = s == one
			}
			if !valid {
				row[256], row[257] = ninf, 0 // o stays NaN: it must never be read
				continue
			}
			m := float32(rng.NormFloat64() * 8)
			if kinds[r] == "far" {
				m = float32(-200 * rng.Float64())
			}
			l := float32(1 + 40*rng.Float64())
			if kinds[r] == "lzero" {
				l = 0
			}
			row[256], row[257] = m, l
			for i := 0; i < 256; i++ {
				row[i] = float32(rng.NormFloat64()) * l
			}
		}
	}
	p, err := oracle.PartialsFromFloat32(part, nq, hq, ns, 256, P)
	must(t, err, "partials")
	model, err := oracle.MergePartials(p, kernelFormat(t, oracle.K3V4), vs)
	must(t, err, "oracle.MergePartials")
	outTok := hq * 256
	if rng.IntN(2) == 0 {
		outTok += 64
	}
	bufs := newBufSet(t, dev)
	pb := bufs.input("partials", kernels.Float32Bytes(part))
	out := bufs.output("out", 2*nq*outTok, 0xFF)
	a := kernels.ReduceArgs{Out: out.Ptr, Partials: pb.Ptr, PartialsBytes: uint64(len(part) * 4), OutStrideToken: int64(outTok), OutStrideHead: 256,
		Dtype: dt, HeadSize: 256, NumQ: int32(nq), NumQHeads: int32(hq), NumSplits: int32(ns), PartialStride: int32(pstride), VSigns: kernels.SignWords(vs.Words())}
	must(t, dev.Reduce(a), "reduce")
	must(t, dev.Sync(), "sync after reduce")
	bufs.checkCanaries(t, "reduce")
	bufs.checkInputs(t, "reduce")
	raw, err := kernels.UnpackRows(read(t, out), nq, hq*256, outTok)
	if err != nil {
		fatalf(t, "reduce: out: %v", err)
	}
	od := outDtype(dt)
	worstAll := 0.0
	defer func() { t.Logf("worst |error|/bound %.3g", worstAll) }()
	for q := 0; q < nq; q++ {
		for h := 0; h < hq; h++ {
			r := q*hq + h
			rows := make([][]float32, ns)
			for s := range rows {
				rows[s] = part[(r*ns+s)*P:][:P]
			}
			m := model[r*256 : (r+1)*256]
			bound := oracle.ReduceBound(rows, m, od)
			worst, ratio := -1, 0.0
			for j := 0; j < 256; j++ {
				gb := raw[r*256+j]
				g := float64(fromAct(gb, dt))
				e := math.Abs(g - m[j])
				var x float64
				switch {
				case e == 0:
				case bound[j] == 0 || math.IsNaN(e):
					x = math.Inf(1)
				default:
					x = e / bound[j]
				}
				if x > ratio {
					worst, ratio = j, x
				}
			}
			worstAll = math.Max(worstAll, ratio)
			if ratio > 1 {
				j := worst
				failf(t, "reduce row %d head %d (%s splits): dim %d = %.9g (%#04x), exact merge %.9g ± bound %.3g (%.3g × the bound)",
					q, h, kinds[r], j, fromAct(raw[r*256+j], dt), raw[r*256+j], m[j], bound[j], ratio)
			}
		}
	}
}
