package harness

import (
	"fmt"
	"math"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// TestNearModelNeverHidesAFail: where nearModel holds (SkipContract then leaves exact attention
// out), judgeAttention does not fail, whatever exact attention is: leaving it out can turn a
// QualityWarning into a Pass, never a Fail into a Pass. Outputs are drawn within their bounds,
// near the model or far from it (zeros), with bounds that may exceed the model (long context).
func TestNearModelNeverHidesAFail(t *testing.T) {
	name := func(i int) string { return fmt.Sprintf("element %d", i) }
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(rt, "n")
		res := &oracle.ProfileResult{Model: make([]float64, n), Bound: make([]float64, n)}
		got, exact := make([]float64, n), make([]float64, n)
		zeros := rapid.Bool().Draw(rt, "zeros")
		for i := range n {
			res.Model[i] = rapid.Float64Range(-4, 4).Draw(rt, "model")
			res.Bound[i] = math.Abs(res.Model[i]) * math.Exp2(rapid.Float64Range(-12, 3).Draw(rt, "log2_bound"))
			if rapid.IntRange(0, 9).Draw(rt, "no_claim") == 0 {
				res.Bound[i] = math.Inf(1)
			}
			got[i] = res.Model[i] + res.Bound[i]*rapid.Float64Range(-1, 1).Draw(rt, "within")
			if zeros && res.Bound[i] >= math.Abs(res.Model[i]) {
				got[i] = 0
			}
			if math.IsInf(got[i], 0) || math.IsNaN(got[i]) {
				got[i] = res.Model[i]
			}
			exact[i] = res.Model[i] * (1 + rapid.Float64Range(-0.1, 0.1).Draw(rt, "exact_off"))
		}
		_, ratio := res.Check(got)
		if ratio > 1 || !nearModel(res, got, ratio) {
			return
		}
		for _, dt := range []Dtype{F16, BF16} {
			v := judgeAttention(newVerdict(arch.Decode, Impl{Name: "t"}), oracle.ProfileDot4Int8Q, dt, res, got, exact, nil, name, "test")
			if v.Failed() {
				rt.Fatalf("nearModel holds (ratio %g) yet the full rule fails: %v", ratio, v.Err)
			}
		}
	})
	// The output of a tier that writes zeros within a vacuous bound is not near its model.
	loose := &oracle.ProfileResult{Model: []float64{0.003, -0.002, 0.001}, Bound: []float64{0.2, 0.2, 0.2}}
	if nearModel(loose, []float64{0, 0, 0}, 0.015) {
		t.Errorf("zeros within a vacuous bound: nearModel holds, so SkipContract would leave them unjudged")
	}
}
