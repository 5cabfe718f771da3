package oracle

import "math"

// ReduceBound is the per-element bound of an fp32 reduce (docs/contract.md §3.4, in the order
// docs/kernels.md gives: NaN-ignoring max, w_s = exp2(m_s − M), L and O accumulated over the
// splits in order with fused multiply-adds, the fp32 inverse V rotation, y/L, rounding to the
// output dtype) against the exact merge (MergePartials) of the same fp32 partials. The
// derivation is in docs/bounds.md ("Reduce on hand-made partials"). row holds one (query, head)'s
// splits: o at [0, 256), m at 256, l at 257. model is MergePartials' output for the row.
func ReduceBound(row [][]float32, model []float64, out Dtype) []float64 {
	const u = 0x1p-24
	eps := 2 * 0x1p-23 // exp2 within 2 ulps
	gamma := func(n int) float64 { return float64(n) * u / (1 - float64(n)*u) }
	M := math.Inf(-1)
	nv := 0
	for _, r := range row {
		if m := float64(r[256]); !math.IsInf(m, -1) {
			M = math.Max(M, m)
			nv++
		}
	}
	b := make([]float64, 256)
	if nv == 0 {
		return b // exact zeros
	}
	gS := gamma(nv)
	var A, e [256]float64
	var L, dL float64
	for _, r := range row {
		m := float64(r[256])
		if math.IsInf(m, -1) {
			continue
		}
		w := math.Exp2(m - M)
		eta := (1+eps)*math.Exp2(u*(M-m)) - 1 // one rounding of m − M, then exp2
		abs := 0.0
		if M-m > 125 { // the weight may be subnormal or flush to zero
			eta = math.Max(eta, 1)
			abs = 0x1p-148
		}
		wUp := (1+eta)*w + abs
		dw := (eta+gS*(1+eta))*w + (1+gS)*abs
		l := float64(r[257])
		L += w * l
		dL += dw * l
		for i := 0; i < 256; i++ {
			o := math.Abs(float64(r[i]))
			A[i] += wUp * o
			e[i] += dw * o
		}
	}
	if L == 0 {
		return b // every l is 0: the kernel's L is exactly 0 and the output exactly 0
	}
	theta := dL / L
	var sumE, sumA float64
	for i := 0; i < 256; i++ {
		sumE += e[i]
		sumA += A[i]
	}
	ey := (sumE + gamma(8)*(1+gS)*sumA) / 16 // 8 butterfly levels of the 256-dim FWHT; ×1/16 exact
	uo := map[Dtype]float64{DtypeF16: 0x1p-11, DtypeBF16: 0x1p-8}[out]
	ao := map[Dtype]float64{DtypeF16: 0x1p-25, DtypeBF16: 0x1p-134}[out]
	for j := range b {
		y := math.Abs(model[j]) * L
		ej := (ey + y*theta + u*(y+ey)) / (L * (1 - theta))
		ej = ej*(1+0x1p-40) + 0x1p-45*sumA/16/L // the float64 model's own rounding
		b[j] = ej + uo*(math.Abs(model[j])+ej) + ao
	}
	return b
}
