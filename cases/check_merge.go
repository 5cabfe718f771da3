package cases

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// PropNameMerge is the partial-merge property's name.
const PropNameMerge = "merge-partials"

// MergeCase is one decode call (a DecodeSpec), a split geometry and a partials row stride. Digest
// is the SHA-256 of the decode input DecodeSpec.Build made when the case was recorded (Digest);
// a replay refuses to run if the generators no longer rebuild the same input.
type MergeCase struct {
	Decode   *DecodeSpec  `json:"decode"`
	Geometry GeometryCase `json:"geometry"`
	Stride   int          `json:"stride"`
	Digest   string       `json:"digest,omitempty"`
}

// mergeOptions are the decode calls the merge property draws: small enough that 100 cases take a
// few seconds (the exact decode is O(rows·klen·256) in float64), with every length boundary of
// Lengths still reachable up to 2048 tokens.
var mergeOptions = DecodeOptions{
	Batch:      BatchOptions{MaxReqs: 4, MaxQueryLen: 8, MaxSeqLen: 2048, MaxTotalSeq: 4096, MaxPadding: 3},
	MaxKVHeads: 2,
}

// mergeCostBudget bounds Σ_rows klen·(Hkv + Hq), the slot decodes and dot products of one
// evaluation; costlier calls are drawn again.
const mergeCostBudget = 40000

func MergeCost(s *DecodeSpec) int {
	c := 0
	for i := range s.Maps.QToReq {
		c += s.Klen(i) * (s.Cache.NumKVHeads + s.NumQHeads())
	}
	return c
}

// mergePartialsBudget bounds NumQ·Hq·splits·stride (float64s of the partials array): the split
// count is lowered to fit, so a case never needs more than 64 MiB.
const mergePartialsBudget = 1 << 23

// MergeCases draws merge cases from DecodeSpecs(mergeOptions).
func MergeCases() *rapid.Generator[*MergeCase] {
	return rapid.Custom(func(t *rapid.T) *MergeCase {
		s := DecodeSpecs(mergeOptions).Filter(func(s *DecodeSpec) bool { return MergeCost(s) <= mergeCostBudget }).Draw(t, "decode")
		stride := rapid.SampledFrom([]int{oracle.DefaultPartialStride, 258, 264, 300}).Draw(t, "stride")
		rows := max(1, len(s.Maps.QToReq)*s.NumQHeads())
		if lim := max(1, mergePartialsBudget/(rows*stride)); s.NumSplits > lim {
			s.NumSplits = lim
		}
		g := drawGeometry(rapidDraw{t}, s.KVMax(), s.NumSplits)
		return &MergeCase{Decode: s, Geometry: g, Stride: stride}
	})
}

// prepareMerge reads and checks a merge case, builds its decode call and checks its digest (a
// reproducer whose call the generators no longer rebuild is refused), and returns the check that
// replays it.
func prepareMerge(raw json.RawMessage) (func() error, error) {
	var c MergeCase
	if err := DecodeCase(raw, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	in, err := c.Decode.Build()
	if err != nil {
		return nil, fmt.Errorf("building the decode call: %w", err)
	}
	if d := Digest(in); c.Digest != "" && d != c.Digest {
		return nil, fmt.Errorf("the decode call rebuilds with digest %s, the reproducer was recorded with %s: the generators changed since; re-record it", d, c.Digest)
	}
	return func() error { return CheckMergeBuilt(&c, in) }, nil
}

// CheckMerge is PropMergePartials' check of one case.
func CheckMerge(c *MergeCase) error {
	in, err := c.Decode.Build()
	if err != nil {
		return err
	}
	return CheckMergeBuilt(c, in)
}

func CheckMergeBuilt(c *MergeCase, in *oracle.DecodeInput) error {
	g := oracle.Geometry(c.Geometry.Ranges)
	p, err := oracle.DecodePartials(in, g, c.Stride)
	if err != nil {
		return fmt.Errorf("DecodePartials (%s geometry, %d ranges, kv_max %d): %v", c.Geometry.Kind, len(g), in.KVMax(), err)
	}
	merged, err := oracle.MergePartials(p, in.Cache.F, in.VSigns)
	if err != nil {
		return fmt.Errorf("MergePartials: %v", err)
	}
	exact, err := oracle.ExactDecode(in)
	if err != nil {
		return fmt.Errorf("ExactDecode: %v", err)
	}
	if len(merged) != len(exact) {
		return fmt.Errorf("merged partials have %d values, ExactDecode %d", len(merged), len(exact))
	}
	rb := newMergeBounder(in, len(g))
	d := in.Cache.F.HeadSize
	hq := in.NumQHeads
	for i := 0; i < in.NumQ(); i++ {
		for h := 0; h < in.Cache.NumKVHeads; h++ {
			rows := rb.rows(i, h)
			for k, rw := range rows {
				q := h*in.Group() + k
				o := (i*hq + q) * d
				for j := 0; j < d; j++ {
					a, b := merged[o+j], exact[o+j]
					if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
						return fmt.Errorf("row %d head %d dim %d: merged %v, single pass %v: expected finite values (the cache's scales are finite)", i, q, j, a, b)
					}
					if rw.n == 0 {
						if a != 0 || b != 0 {
							return fmt.Errorf("row %d head %d dim %d: no readable token (klen %d), yet merged %.17g and single pass %.17g; both must be exactly zero",
								i, q, j, in.Klen(i), a, b)
						}
						continue
					}
					bound := rw.bound(j, b)
					if diff := math.Abs(a - b); !(diff <= bound) {
						return fmt.Errorf("row %d head %d dim %d: merged %.17g, single pass %.17g, |diff| %.3g > bound %.3g (%s; %s geometry, %d splits, stride %d)",
							i, q, j, a, b, diff, bound, rw.explain(j, b), c.Geometry.Kind, len(g), c.Stride)
					}
				}
			}
		}
	}
	return nil
}

// The bound. Both evaluations (ExactDecode's single online softmax, and DecodePartials +
// MergePartials) compute every score s_t (log2 units) with the same code, so they see identical
// scores; they differ in how the weights 2^(s_t − M) are formed and summed. Let u = 2^-53,
// γ_k = k·u/(1 − k·u), M = max_t s_t, Δ_t = M − s_t, w_t = 2^(−Δ_t), W = Σ w_t ≥ 1, and y the
// exact softmax average Σ w_t·vo_t/W (vo_t = the un-rotated value).
//
//  1. Weights. Token t's weight is a product of exp2 factors — its own 2^(s_t − m), one per later
//     running-max increase (R_t ≤ n − 1 of them), and the merge's 2^(m_s − M) — whose arguments
//     are non-positive float64 differences summing to −Δ_t. Each argument is rounded once
//     (relative u) and each exp2 is within 2 ulps (ε = 2^-51), so the computed weight is
//     ŵ_t = w_t·e^(±λ_t), λ_t = (n+1)·(−ln(1 − ε)) + ln2·u·Δ_t, and |ŵ_t − w_t| ≤ d_t = w_t·expm1(λ_t).
//     Tokens with Δ_t > 1000 have weights below 2^-1000 in any evaluation; the floor term
//     covers them (and every subnormal weight).
//  2. Perturbed weights, exact arithmetic: because Σ_t w_t(vo_t − y) = 0,
//     Σŵ_t·vo_t/Ŵ − y = Σ(ŵ_t − w_t)(vo_t − y)/Ŵ, so its magnitude is at most
//     T1 = Σ d_t·‖v̂_t − ŷ‖₂ / W⁻ with W⁻ = W − Σd_t (|vo_tj − y_j| ≤ ‖vo_t − y‖₂ = ‖v̂_t − ŷ‖₂,
//     the rotation being orthonormal).
//  3. Accumulation. Each term of the P·V and denominator sums passes through at most
//     N = 2n + S + 2 roundings (its product, n − 1 additions and n − 1 rescales in a split, the
//     merge's product and S additions), so the numerator's dim i is off by at most γ_N·A_i,
//     A_i = Σ_t (w_t + d_t)|v̂_ti|, and the denominator relatively by γ_N. The inverse rotation
//     (log2 B stages and a scaling: γ_{lg B + 1}) and the spread of a per-dim error e through it
//     (|(He)_j| ≤ Σ_i|e_i|/√B over j's block) give E_N = Σ_{i∈block(j)} A_i·(γ_N + γ_{lgB+1}(1+γ_N))/√B;
//     with the final division, g = (1+u)/(1−γ_N) − 1.
//  4. E_j = (T1 + (1+g)·E_N/W⁻ + g·(|ref_j| + T1))/(1 − g) + floor, where ref_j is the single-pass
//     value (|y_j| ≤ |ref_j| + E_j, hence the 1/(1 − g)), floor = (N+2)·n·2^-1000·max|v̂|·√B.
//  5. The two evaluations are each within E_j of y: bound_j = 2·E_j·(1 + κ). κ covers that this
//     code evaluates w_t, W, ŷ and A_i itself in float64, from scores computed by its own
//     rotation and dot product: each score within σ = 2·γ_{d+lgB+2}·c·‖q̂‖·‖k̂‖ of the
//     evaluations' (Σ|q̂_i k̂_i| ≤ ‖q̂‖·‖k̂‖), so κ = expm1(4·ln2·σ_max) + 2^-30.
//  6. When scores are so large that σ is not small (κ > 2^-20: huge queries, where this code's
//     weights mean little), a second bound needs no weights: every computed weight is
//     non-negative and at most (1+ε)^(n+1) (each factor is exp2 of a non-positive rounded
//     argument), the top-scoring token's is exactly 1, so each evaluation is a convex combination
//     of the vo_tj plus its accumulation error: bound_j = range_j + 2·((1+g)·E'_N + g·max_t|vo_tj|),
//     range_j = max_t vo_tj − min_t vo_tj, E'_N as E_N with A'_i = (1+ε)^(n+1)·Σ_t|v̂_ti|. The
//     smaller of the two bounds is used.
type mergeBounder struct {
	in    *oracle.DecodeInput
	S     int
	dq    *oracle.Dequantizer
	kbuf  []float32
	vbuf  []float32
	c     float64
	block int
}

func newMergeBounder(in *oracle.DecodeInput, splits int) *mergeBounder {
	f := in.Cache.F
	return &mergeBounder{in: in, S: splits, dq: oracle.NewDequantizer(f), kbuf: make([]float32, f.HeadSize),
		vbuf: make([]float32, f.HeadSize), c: in.SMScale * math.Log2E, block: f.VRotBlock()}
}

// mergeRow is the bound of one (query row, query head).
type mergeRow struct {
	n, N         int
	W, Wlo       float64
	T1, g, kappa float64
	EN           []float64 // per V rotation block
	floor        float64
	deltaMax     float64
	block        int
	// The weight-free bound of step 6 (nil when κ is small): per output dim.
	convex []float64
}

func gammaK(k int) float64 {
	u := math.Ldexp(1, -53)
	return float64(k) * u / (1 - float64(k)*u)
}

// e_j of step 4 (without the factor 2(1+κ)).
func (r *mergeRow) e(j int, ref float64) float64 {
	return (r.T1+(1+r.g)*r.EN[j/r.block]/r.Wlo+r.g*(math.Abs(ref)+r.T1))/(1-r.g) + r.floor
}

func (r *mergeRow) bound(j int, ref float64) float64 {
	b := math.Inf(1)
	if r.Wlo > 0 && r.g < 1 {
		if e := 2 * r.e(j, ref) * (1 + r.kappa); e == e {
			b = e
		}
	}
	if r.convex != nil {
		b = min(b, r.convex[j])
	}
	return b
}

func (r *mergeRow) explain(j int, ref float64) string {
	if r.convex != nil && r.convex[j] <= r.bound(j, ref) {
		return fmt.Sprintf("bound = weight-free convex-combination bound (κ %.2g too large for the weighted one): range + accumulation; n %d tokens, N %d roundings", r.kappa, r.n, r.N)
	}
	return fmt.Sprintf("bound = 2·E·(1+κ), E = weights %.3g + accumulation %.3g + division %.3g + floor %.3g; n %d tokens, N %d roundings, max score gap %.4g (log2 units), W %.6g, κ %.2g",
		r.T1/(1-r.g), (1+r.g)*r.EN[j/r.block]/r.Wlo/(1-r.g), r.g*(math.Abs(ref)+r.T1)/(1-r.g), r.floor, r.n, r.N, r.deltaMax, r.W, r.kappa)
}

// rows computes the bounds of the G query heads of row i that read KV head h.
func (b *mergeBounder) rows(i, h int) []mergeRow {
	in := b.in
	f := in.Cache.F
	d := f.HeadSize
	G := in.Group()
	out := make([]mergeRow, G)
	klen := in.Klen(i)
	u := math.Ldexp(1, -53)
	eps := -math.Log1p(-math.Ldexp(1, -51))
	lgB := int(math.Round(math.Log2(float64(b.block))))
	gRot := gammaK(lgB + 1)
	// The readable tokens' rotated V, and their scores for each of the G query heads.
	qr := make([][]float64, G)
	qn := make([]float64, G)
	for k := range qr {
		q32 := in.Query[(i*in.NumQHeads+h*G+k)*d:][:d]
		q := make([]float64, d)
		for j, x := range q32 {
			q[j] = float64(x)
		}
		qr[k] = oracle.Rotate64(q, in.KSigns, f.KRotBlock())
		for _, x := range qr[k] {
			qn[k] += x * x
		}
		qn[k] = math.Sqrt(qn[k])
	}
	var vs [][]float32
	scores := make([][]float64, G)
	sigma := make([]float64, G)
	if klen > 0 {
		row := in.BlockTable[int(in.QToReq[i])*in.MaxBlocks:][:in.MaxBlocks]
		for t := 0; t < klen; t++ {
			pb := int(row[t/in.Cache.BlockSize])
			if pb < 0 || pb >= in.Cache.NumBlocks {
				continue
			}
			b.dq.DequantizeInto(b.kbuf, b.vbuf, in.Cache.Slot(pb, h, t%in.Cache.BlockSize))
			vs = append(vs, append([]float32(nil), b.vbuf...))
			var kn float64
			for _, x := range b.kbuf {
				kn += float64(x) * float64(x)
			}
			kn = math.Sqrt(kn)
			for k := range qr {
				var d0, d1, d2, d3 float64
				q := qr[k]
				for j := 0; j+3 < d; j += 4 {
					d0 += q[j] * float64(b.kbuf[j])
					d1 += q[j+1] * float64(b.kbuf[j+1])
					d2 += q[j+2] * float64(b.kbuf[j+2])
					d3 += q[j+3] * float64(b.kbuf[j+3])
				}
				scores[k] = append(scores[k], b.c*((d0+d1)+(d2+d3)))
				// Σ|q̂_i k̂_i| ≤ ‖q̂‖·‖k̂‖ (Cauchy–Schwarz), times the margin for the norms' own rounding.
				sigma[k] = max(sigma[k], 2*gammaK(d+lgB+2)*b.c*qn[k]*kn*(1+1e-12))
			}
		}
	}
	n := len(vs)
	for k := 0; k < G; k++ {
		r := &out[k]
		r.n, r.block = n, b.block
		r.EN = make([]float64, d/b.block)
		if n == 0 {
			continue
		}
		s := scores[k]
		M := math.Inf(-1)
		for _, x := range s {
			M = max(M, x)
		}
		r.N = 2*n + b.S + 2
		gN := gammaK(r.N)
		w := make([]float64, n)
		dt := make([]float64, n)
		var sumD, vmax float64
		for t := range s {
			delta := M - s[t]
			r.deltaMax = max(r.deltaMax, delta)
			if delta > 1000 {
				continue
			}
			w[t] = math.Exp2(-delta)
			dt[t] = w[t] * math.Expm1(float64(n+1)*eps+math.Ln2*u*delta)
			r.W += w[t]
			sumD += dt[t]
		}
		r.Wlo = r.W - sumD
		yh := make([]float64, d)
		A := make([]float64, d)
		for t, v := range vs {
			for i, x := range v {
				yh[i] += w[t] * float64(x)
				A[i] += (w[t] + dt[t]) * math.Abs(float64(x))
				vmax = max(vmax, math.Abs(float64(x)))
			}
		}
		for i := range yh {
			yh[i] /= r.W
		}
		for t, v := range vs {
			if dt[t] == 0 {
				continue
			}
			var n2 float64
			for i, x := range v {
				e := float64(x) - yh[i]
				n2 += e * e
			}
			r.T1 += dt[t] * math.Sqrt(n2)
		}
		r.T1 /= r.Wlo
		for i, a := range A {
			r.EN[i/b.block] += a * (gN + gRot*(1+gN)) / math.Sqrt(float64(b.block))
		}
		r.g = (1+u)/(1-gN) - 1
		r.floor = float64(r.N+2) * float64(n) * math.Ldexp(1, -1000) * vmax * math.Sqrt(float64(b.block))
		r.kappa = math.Expm1(4*math.Ln2*sigma[k]) + math.Ldexp(1, -30)
		if !(r.kappa <= 0x1p-20) {
			r.convex = convexBound(vs, f.VRotBlock(), in.VSigns, n, r.N, r.g, eps, gRot, gN)
		}
	}
	return out
}

// convexBound is step 6's weight-free bound, per output dim.
func convexBound(vs [][]float32, block int, vsigns oracle.Signs, n, N int, g, eps, gRot, gN float64) []float64 {
	d := len(vs[0])
	lo, hi, amax := make([]float64, d), make([]float64, d), make([]float64, d)
	for j := range lo {
		lo[j], hi[j] = math.Inf(1), math.Inf(-1)
	}
	A := make([]float64, d)
	v64 := make([]float64, d)
	var l1max float64 // max_t Σ_i |v̂_ti|
	for _, v := range vs {
		var l1 float64
		for i, x := range v {
			v64[i] = float64(x)
			A[i] += math.Abs(float64(x))
			l1 += math.Abs(float64(x))
		}
		l1max = max(l1max, l1)
		vo := oracle.Unrotate64(v64, vsigns, block)
		for j, x := range vo {
			// vo is computed in float64: off by at most γ_{lgB+1}·Σ_i|v̂_ti|/√B (slack below).
			lo[j], hi[j] = min(lo[j], x), max(hi[j], x)
			amax[j] = max(amax[j], math.Abs(x))
		}
	}
	wmax := math.Exp(float64(n+1) * eps)
	EN := make([]float64, d/block)
	for i, a := range A {
		EN[i/block] += wmax * a * (gN + gRot*(1+gN)) / math.Sqrt(float64(block))
	}
	out := make([]float64, d)
	for j := range out {
		slack := 2 * gRot * l1max / math.Sqrt(float64(block)) // the float64 vo above, at both ends
		out[j] = (hi[j] - lo[j] + slack + 2*((1+g)*EN[j/block]+g*(amax[j]+slack))) * (1 + 0x1p-30)
	}
	return out
}
