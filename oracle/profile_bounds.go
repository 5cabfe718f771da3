package oracle

import (
	"math"
	"slices"
	"sort"

	"github.com/octant-kv/octant/internal/par"
)

// Error bounds of the numeric profiles (docs/bounds.md has the same derivation with examples).
//
// Setting. One output row (query token, query head) attends to n tokens. The profile's float64
// model gives each token an exact score s_t (log2 units), a weight w_t = 2^(s_t−M) with
// M = max_t s_t, W = Σ w_t, a numerator weight a_t (= w_t, or fp16(w_t·κ_t)/κ_t when the profile
// rounds P' = p·κ_t to fp16) and its rotated value v̂_t; the model output is
// m = H(Σ_t a_t v̂_t)/W, H the inverse V rotation (decode) or the identity (prefill, whose output
// stays rotated). vo_t = H v̂_t is token t's value in the output space. u = 2^-24 and
// γ_k = k·u/(1−k·u) bounds k successive fp32 roundings (Higham, §3.1).
//
// A correct fp32 kernel of the profile computes, in some order of its choosing (splits, lanes,
// tiles, online softmax with any schedule of running-max updates, any merge tree):
//
//  1. Scores s̃_t with |s̃_t − s_t| ≤ δ_t: γ_K times the sum of the absolute values of the terms
//     the kernel adds, K counted per profile in profile.go (the fp32 additions of the dot, the
//     scale multiplications, three roundings of c̃ = fl(fl(sm_scale)·fl(log2 e)), one for the
//     query scale's evaluation order). Int8 profiles have exact integer dots, so their terms are
//     the per-block products; a query dim whose int8 code another correct evaluation order could
//     round the other way adds |Δq̃|·|k| (profQuery.amb). Flushing to zero adds 16·2^-126.
//  2. Weights. Token t's final weight is exp2(s̃_t − m̃) times the rescale factors
//     exp2(m_old − m_new) later applied to its partial sum. Each exp2 has relative error ≤ ε
//     (Exp2ULP ulps: ε = Exp2ULP·2^-23); exp2(0) = 1 exactly. A partial holding t is rescaled only
//     when its running max strictly increases, to the computed score of a token u with s̃_u > s̃_t,
//     so at most R_t = #{u ≠ t : s_u > s_t − 2δ_max} rescales touch t, whatever the order, split
//     geometry or merge tree (and at most Depth, when the kernel declares its depth). The exp2
//     arguments s̃_t − m̃ and m_old − m_new are single fp32 subtractions whose errors add up (the
//     maxima increase monotonically, so the differences telescope) to ≤ 2u·(M − s_t + 2δ_max); a
//     conversion of the max between natural-log and log2 units (prefill phases) adds
//     u·(|M| + 2δ_max) each. Dividing out the common factor 2^(M − m̃_final), token t's weight is
//     w_t·ρ_t with |ln ρ_t| ≤ λ_t = ln2·(δ_t + 2u(M − s_t + 2δ_max) + c·u(|M| + 2δ_max))
//     + (R_t+1)·(−ln(1−ε)), so |ρ_t − 1| ≤ ρ⁺_t = e^λ_t − 1; when M − s_t + 2δ_max + 1 ≥ 126 the
//     weight may flush to zero and ρ⁺_t is at least 1.
//  3. P' rounding (wmma-f16q, int8rowq, prefill-chunk-f16). The kernel rounds
//     fl(p̃·vs)·κ to fp16 relative to its own running max, the model relative to M; the kernel's
//     numerator weight ã_t and the model's a_t·ρ_t then differ by
//     ν_t ≤ (u16 + 2u)·w_t·(1 + e^λ_t) + 2·2^-25·e^λmax/κ_t (u16 = 2^-11; 2^-25 is half the
//     smallest fp16 subnormal, later rescaled by factors ≤ 1). The denominator sums the unrounded p̃.
//  4. With exact arithmetic on these weights the kernel would output k = H(Σ ã_t v̂_t)/L with
//     L = Σ w_t ρ_t ≥ W·e^-λmax. Since Σ_t (a_t vo_t − w_t m) = 0,
//     k_j − m_j = [Σ_t (ρ_t − 1)(a_t vo_tj − w_t m_j) + Σ_t (ã_t − a_t ρ_t) vo_tj] / L, so
//     |k_j − m_j| ≤ E^w_j = e^λmax·[Σ_t ρ⁺_t |a_t vo_tj − w_t m_j| + Σ_t ν_t |vo_tj|] / W.
//     Weight errors act through the deviation of each value from the output, which keeps this
//     term small.
//  5. Accumulation. Term t of the P·V sums (ã_t·v̂_ti) and of L is formed with at most one
//     rounding, takes part in at most n−1 additions in any summation tree, and its partial sum is
//     multiplied by a rescale factor at most R_t times (a multiplication by exactly 1 is exact): at
//     most N_t = n + R_t roundings, and at most Depth + 1 when the kernel declares that no term
//     passes through more than Depth additions and rescales. So the rotated numerator has error
//     ≤ A^γ_i = Σ_t γ_{N_t}·ã⁺_t·|v̂_ti| with ã⁺_t = a_t e^λ_t + ν_t, and |L̃ − L| ≤ Σ_t γ_{N_t} w_t e^λ_t,
//     a relative θ of L. The fp32 inverse rotation (log2 B butterfly levels, ×1/√B exact for
//     B = 4^k, else one more rounding) adds γ_{log2 B+1}·(1/√B)Σ_i|Õ_i|, |Õ_i| ≤ (1+γ_Nmax)·A_i with
//     A_i = Σ_t ã⁺_t|v̂_ti|, and the rotation spreads a per-dim error e over output dim j as
//     |(He)_j| ≤ (1/√B)Σ_i|e_i|:
//     E^acc_j = [(1/√B)·Σ_{i∈block(j)} (A^γ_i + γ_{lg B+1}(1+γ_Nmax)·A_i) + n(Nmax+1)·2^-126·√B]
//     / (W e^-λmax) (prefill: [A^γ_j + n(Nmax+1)·2^-126] / (W e^-λmax), no rotation; the last
//     term covers flushing to zero). Then y/L (or y·(1/L)) with the error of L gives
//     g = (1+u)²/(1−θ) − 1 relative.
//  6. Before output rounding: |k̃_j − m_j| ≤ E_j = E^w_j + (1+g)·E^acc_j + g·(|m_j| + E^w_j).
//     The model's own float64 rounding is at most 2^-28 of these terms (every one of them has an
//     fp32 counterpart at least 2^29 times larger) and is absorbed by the factor (1 + 2^-28).
//     Rounding to the output dtype adds u_out·(|m_j| + E_j) + abs_out (fp16: 2^-11 and 2^-25;
//     bf16: 2^-8 and 2^-134; fp32: 2^-24 and 2^-150). The bound is
//     B_j = E_j + u_out·(|m_j| + E_j) + abs_out.
//
// The bound is sound for any order of evaluation. Without a declared Depth it is pessimistic for
// long rows: γ_{N_t} grows like n (rounding errors of random data grow like √n), the terms are
// summed in absolute value (attention over many random values cancels, so |m| ≪ Σ a|v|/W), and
// accumulation errors are spread by 1/√B. Tests report the ratio of the bound to the error of the
// float32 implementation of each profile (profile_f32.go).

// attPrec is the arithmetic a bound is derived for.
type attPrec struct {
	u        float64 // unit roundoff of the accumulation arithmetic
	expErr   float64 // relative error of one exp2/exp evaluation
	ftz      float64 // smallest normal: results below may flush to zero
	ftzExp   float64 // log2 of 1/ftz: weights 2^-ftzExp below the max may flush
	uP, absP float64 // P' rounding (fp16)
	uOut     float64 // output rounding
	absOut   float64
	convs    int // conversions of the running max between natural-log and log2 units
}

// fp32Prec is the arithmetic of an fp32 kernel with the given options.
func fp32Prec(opt ProfileOptions, convs int) (attPrec, error) {
	if err := opt.check(); err != nil {
		return attPrec{}, err
	}
	uo, ao, _ := opt.Out.rounding()
	ulp := opt.Exp2ULP
	if ulp == 0 {
		ulp = DefaultExp2ULP
	}
	return attPrec{u: 0x1p-24, expErr: ulp * 0x1p-23, ftz: 0x1p-126, ftzExp: 126, uP: 0x1p-11, absP: 0x1p-25,
		uOut: uo, absOut: ao, convs: convs}, nil
}

// fp64Prec is the float64 arithmetic of the oracle's own exact engine (Go's math.Exp2 is within
// 1 ulp of its reduced argument, plus one rounding of the reduction: 2 ulps), with no output
// rounding. Used to bound float64-vs-float64 differences (split geometry, token order).
var fp64Prec = attPrec{u: 0x1p-53, expErr: 0x1p-51, ftz: 0x1p-1022, ftzExp: 1022}

// profRows evaluates a profile's model and bound for the heads of one group, which share a token
// list (the G query heads of a KV head, for one query row).
type profRows struct {
	d, n     int
	s, ds    [][]float64           // [head][token]: model score (log2 units) and its error bound
	kappa    []float64             // [token]: P' scale κ_t, 0 when P is not rounded
	value    func(t int) []float64 // rotated value of token t (read-only; called from several goroutines at once)
	valueOut func(t int) []float64 // token t's value in the output space, H·value(t) (the same); nil: value
	unrot    func(x []float64)     // rotated → output space in place (the model output); nil: output stays rotated
	rotBlock int                   // block of unrot (ignored when unrot is nil)
	depth    int                   // declared accumulation depth (ProfileOptions.Depth), 0: order-free
	prec     attPrec
}

// eval writes the model output and the bound of each head into model[h] and bound[h] (d each).
func (r *profRows) eval(model, bound [][]float64) {
	nh, d, n, pr := len(r.s), r.d, r.n, r.prec
	for h := 0; h < nh; h++ {
		clear(model[h])
		clear(bound[h])
	}
	if n == 0 {
		return // exact zeros, bound 0
	}
	type head struct {
		M, dmax, W, lamMax float64
		nMax               int
		eL                 float64 // Σ_t γ_{N_t}·w_t·e^λ_t
		bad                bool
		w, a, rho, nu, aup []float64
		gam                []float64 // γ_{N_t}
	}
	hs := make([]head, nh)
	sorted := make([]float64, n)
	lnExp := -math.Log1p(-pr.expErr)
	for h := range hs {
		st := &hs[h]
		s, ds := r.s[h], r.ds[h]
		st.M = math.Inf(-1)
		for t := 0; t < n; t++ {
			st.M = math.Max(st.M, s[t])
			st.dmax = math.Max(st.dmax, ds[t])
			if math.IsNaN(s[t]) || math.IsInf(s[t], 0) || math.IsNaN(ds[t]) || math.IsInf(ds[t], 0) {
				st.bad = true
			}
		}
		st.w, st.a = make([]float64, n), make([]float64, n)
		st.rho, st.nu, st.aup, st.gam = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		copy(sorted, s)
		sort.Float64s(sorted)
		self := 0
		if st.dmax > 0 {
			self = 1
		}
		lam := make([]float64, n)
		for t := 0; t < n; t++ {
			w := math.Exp2(s[t] - st.M)
			st.w[t] = w
			st.a[t] = w
			if k := r.kappa[t]; k > 0 {
				st.a[t] = attRoundF16(w*k) / k
				if math.IsInf(attRoundF16(k), 0) {
					// P' = fp16(p·κ) overflows for p near 1, which any token reaches against a
					// running maximum (the first one always): no claim (docs/bounds.md).
					st.bad = true
				}
			}
			if math.IsInf(st.a[t], 0) || math.IsNaN(st.a[t]) {
				st.bad = true
			}
			st.W += w
			x := s[t] - 2*st.dmax
			rt := n - sort.Search(n, func(i int) bool { return sorted[i] > x }) - self
			nt := n + rt
			if r.depth > 0 {
				rt = min(rt, r.depth)
				nt = min(nt, r.depth+1)
			}
			st.nMax = max(st.nMax, nt)
			st.gam[t] = attGamma(nt, pr.u)
			gap := st.M - s[t] + 2*st.dmax
			lam[t] = math.Ln2*(ds[t]+2*pr.u*gap+float64(pr.convs)*pr.u*(math.Abs(st.M)+2*st.dmax)) + float64(rt+1)*lnExp
			st.lamMax = math.Max(st.lamMax, lam[t])
			st.rho[t] = math.Expm1(lam[t])
			if gap+1 >= pr.ftzExp {
				st.rho[t] = math.Max(st.rho[t], 1)
			}
		}
		eMax := math.Exp(st.lamMax)
		for t := 0; t < n; t++ {
			el := math.Exp(lam[t])
			if k := r.kappa[t]; k > 0 {
				st.nu[t] = (pr.uP+2*pr.u)*st.w[t]*(1+el) + 2*pr.absP*eMax/k
			}
			st.aup[t] = st.a[t]*el + st.nu[t]
			st.eL += st.gam[t] * st.w[t] * el
		}
	}
	// Pass B: the model output (rotated), A and A^γ (per rotated dim), in one sweep over the values.
	// A long row's tokens are swept in chunks on their own goroutines (sweepTokens).
	Ag, A0 := make([][]float64, nh), make([][]float64, nh)
	for h := range Ag {
		Ag[h], A0[h] = make([]float64, d), make([]float64, d)
	}
	sweepTokens(n, d, slices.Concat(model, Ag, A0), func(lo, hi int, acc [][]float64) {
		for t := lo; t < hi; t++ {
			v := r.value(t)[:d]
			for h := range hs {
				st := &hs[h]
				a, aup, ga := st.a[t], st.aup[t], st.gam[t]
				y, ag, a0 := acc[h][:d], acc[nh+h][:d], acc[2*nh+h][:d]
				if a == 0 {
					for j, x := range v {
						u := aup * math.Abs(x)
						a0[j] += u
						ag[j] += ga * u
					}
					continue
				}
				for j, x := range v {
					y[j] += a * x
					u := aup * math.Abs(x)
					a0[j] += u
					ag[j] += ga * u
				}
			}
		}
	})
	for h := range hs {
		if r.unrot != nil {
			r.unrot(model[h])
		}
		for j := range model[h] {
			model[h][j] /= hs[h].W
		}
	}
	// Pass C: E^w (into bound), in the output space.
	valueOut := r.valueOut
	if valueOut == nil {
		valueOut = r.value
	}
	sweepTokens(n, d, bound, func(lo, hi int, acc [][]float64) {
		for t := lo; t < hi; t++ {
			vo := valueOut(t)[:d]
			for h := range hs {
				st := &hs[h]
				a, w, rho, nu := st.a[t], st.w[t], st.rho[t], st.nu[t]
				m, ew := model[h][:d], acc[h][:d]
				if nu == 0 {
					for j, x := range vo {
						ew[j] += rho * math.Abs(a*x-w*m[j])
					}
				} else {
					for j, x := range vo {
						ew[j] += rho*math.Abs(a*x-w*m[j]) + nu*math.Abs(x)
					}
				}
			}
		}
	})
	// Assemble.
	for h := range hs {
		st := &hs[h]
		b := bound[h]
		if st.bad {
			for j := range b {
				b[j] = math.Inf(1)
			}
			continue
		}
		eMax := math.Exp(st.lamMax)
		lMin := st.W / eMax
		theta := st.eL / lMin
		g := (1+pr.u)*(1+pr.u)/(1-theta) - 1
		if theta >= 1 {
			g = math.Inf(1)
		}
		for j := range A0[h] {
			if A0[h][j]*float64(d) > fp32Near { // the fp32 accumulator Σ p·v may overflow: no claim
				st.bad = true
			}
		}
		if st.bad {
			for j := range b {
				b[j] = math.Inf(1)
			}
			continue
		}
		gMax := attGamma(st.nMax, pr.u)
		ftz := float64(n) * float64(st.nMax+1) * pr.ftz
		eacc := make([]float64, d)
		if r.unrot != nil {
			B := r.rotBlock
			gB := attGamma(bitsLen(B)+1, pr.u)
			sq := math.Sqrt(float64(B))
			for j0 := 0; j0 < d; j0 += B {
				var S float64
				for i := j0; i < j0+B; i++ {
					S += Ag[h][i] + gB*(1+gMax)*A0[h][i]
				}
				e := (S/sq + ftz*sq) / lMin
				for j := j0; j < j0+B; j++ {
					eacc[j] = e
				}
			}
		} else {
			for j := range eacc {
				eacc[j] = (Ag[h][j] + ftz) / lMin
			}
		}
		for j := range b {
			ew := b[j] * eMax / st.W
			m := math.Abs(model[h][j])
			e := (ew + (1+g)*eacc[j] + g*(m+ew)) * (1 + 0x1p-28)
			b[j] = e + pr.uOut*(m+e) + pr.absOut
			if math.IsNaN(b[j]) || math.IsNaN(model[h][j]) || math.IsInf(model[h][j], 0) {
				b[j] = math.Inf(1)
			}
		}
	}
}

// evalChunk is the number of tokens per chunk of a long row's sweeps (sweepTokens): a shorter row
// is cheap (milliseconds) and a call's rows already run one per core, while at long context
// (2^16..2^17 tokens) one row is the whole call's critical path.
var evalChunk = 4096 // a variable for TestSweepTokens

// sweepTokens runs sweep over the tokens [0, n), which adds each token's terms into acc (arrays of
// d, one per array of dst). A row of at most evalChunk tokens is swept once, straight into dst. A
// longer row is swept in chunks of evalChunk tokens on up to GOMAXPROCS goroutines, each into zeroed
// arrays of its own, and dst then receives the chunks' sums in chunk order: the result depends on
// n alone, never on the schedule or the number of processors (each sum is Σ over chunks, in order,
// of the chunk's sum in token order, instead of one sum in token order; both are float64 sums of
// the same terms).
func sweepTokens(n, d int, dst [][]float64, sweep func(lo, hi int, acc [][]float64)) {
	nc := (n + evalChunk - 1) / evalChunk
	if nc <= 1 {
		sweep(0, n, dst)
		return
	}
	parts := make([][][]float64, nc)
	par.Jobs(nc, func() struct{} { return struct{}{} }, func(_ struct{}, c int) {
		acc := make([][]float64, len(dst))
		for i := range acc {
			acc[i] = make([]float64, d)
		}
		sweep(c*evalChunk, min(n, (c+1)*evalChunk), acc)
		parts[c] = acc
	})
	for _, acc := range parts {
		for i, x := range dst {
			for j := range x[:d] {
				x[j] += acc[i][j]
			}
		}
	}
}

// bitsLen is log2 of a power of two.
func bitsLen(b int) int {
	n := 0
	for b > 1 {
		b >>= 1
		n++
	}
	return n
}
