package oracle

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"
)

// attBoundStats compares an implementation's output with a profile result. It fails the test
// when an element exceeds its bound, and returns the largest |err|/bound and, over the rows of
// rowLen elements with a non-zero error, the median and largest looseness ||bound||/||err||.
func attBoundStats(t *testing.T, name string, res *ProfileResult, got []float64, rowLen int) (maxUse, medLoose, maxLoose float64) {
	t.Helper()
	worst, use := res.Check(got)
	if use > 1 {
		t.Errorf("%s: element %d: |%.9g − model %.9g| = %.3g exceeds the bound %.3g (×%.3g)", name, worst, got[worst], res.Model[worst],
			math.Abs(got[worst]-res.Model[worst]), res.Bound[worst], use)
	}
	var loose []float64
	for r := 0; r+rowLen <= len(got); r += rowLen {
		var be, ee float64
		for j := r; j < r+rowLen; j++ {
			e := got[j] - res.Model[j]
			ee += e * e
			be += res.Bound[j] * res.Bound[j]
		}
		if ee > 0 {
			loose = append(loose, math.Sqrt(be/ee))
		}
	}
	if len(loose) == 0 {
		return use, 0, 0
	}
	sort.Float64s(loose)
	return use, loose[len(loose)/2], loose[len(loose)-1]
}

// attCanonicalDepth is the accumulation depth of DecodeProfileF32 with geometry g
// (ProfileOptions.Depth): a term passes through at most 2(L−1) additions and rescales in its
// split of L tokens, one merge multiplication and ns−1 merge additions.
func attCanonicalDepth(g Geometry) int {
	l := 0
	for _, r := range g {
		l = max(l, r.Hi-r.Lo)
	}
	return 2*l + len(g) - 2
}

// attProfileShape is a decode batch like upstream's test: Hkv 1, G 6, block 16, requests of
// several lengths and one padding query.
func attProfileShape(id FormatID, lens []int) attShape {
	f := MustFormat(id, KernelHeadSize, KernelRopeDim)
	maxLen := 0
	for _, l := range lens {
		maxLen = max(maxLen, l)
	}
	bs := 16
	mb := (maxLen + bs - 1) / bs
	var reqs, klens []int32
	for r, l := range lens {
		reqs = append(reqs, int32(r))
		klens = append(klens, int32(l))
	}
	reqs = append(reqs, int32(len(lens)))
	klens = append(klens, 0)
	return attShape{f: f, hkv: 1, g: 6, bs: bs, numBlocks: mb + 2, maxBlocks: mb, numReqs: len(lens), reqs: reqs, klens: klens,
		kSigma: 1, vSigma: 1, qSigma: 1, outlierDim: 5, outlierScale: 8}
}

// TestDecodeProfilesF32WithinBound runs each decode profile in float32 (kernel order, several
// split geometries) and checks every element against the float64 model's derived bound, both the
// order-free bound and the bound for the implementation's declared depth. It logs how loose the
// bound is per row (||bound||/||error||), for fp16, bf16 and fp32 output.
func TestDecodeProfilesF32WithinBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, id := range AllFormats {
		ac := attBuild(rng, attProfileShape(id, []int{1, 16, 37, 700}))
		in := ac.in
		exact, err := ExactDecode(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []Profile{ProfileDot4Int8Q, ProfileWMMAF16Q, ProfileInt8RowQ} {
			for _, out := range []Dtype{DtypeF16, DtypeBF16, DtypeF32} {
				res, err := DecodeProfile(p, in, ProfileOptions{Out: out})
				if err != nil {
					t.Fatal(err)
				}
				rel, ok := ContractCheck(res.Model, exact)
				if !ok {
					t.Errorf("%v %s: model rel L2 %.3g from exact attention, expected < %g", id, p, rel, ContractRelL2)
				}
				for _, ns := range []int{1, 7, 64} {
					g, _ := PortableGeometry(in.KVMax(), ns)
					got, err := DecodeProfileF32(p, in, g, out)
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("%v %s out %v splits %d", id, p, out, ns)
					use, med, mx := attBoundStats(t, name, res, got, 256)
					resD, err := DecodeProfile(p, in, ProfileOptions{Out: out, Depth: attCanonicalDepth(g)})
					if err != nil {
						t.Fatal(err)
					}
					useD, medD, mxD := attBoundStats(t, name+" (declared depth)", resD, got, 256)
					t.Logf("%-40s |err|/bound ≤ %.3f, bound/err per row median %6.1f max %8.1f; depth %4d: ≤ %.3f, median %6.1f max %8.1f (model vs exact %.2g)",
						name, use, med, mx, attCanonicalDepth(g), useD, medD, mxD, rel)
				}
			}
		}
	}
}

// TestDecodeProfilesShareSlots: DecodeProfiles under several profiles at once (one slot decode
// shared) gives each profile's DecodeProfile result bit for bit, for every format and output dtype.
func TestDecodeProfilesShareSlots(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ps := []Profile{ProfileDot4Int8Q, ProfileWMMAF16Q, ProfileInt8RowQ}
	for _, id := range AllFormats {
		in := attBuild(rng, attProfileShape(id, []int{1, 16, 37, 300})).in
		for _, out := range []Dtype{DtypeF16, DtypeBF16} {
			opt := ProfileOptions{Out: out, Depth: 40}
			all, err := DecodeProfiles(ps, in, opt)
			if err != nil {
				t.Fatal(err)
			}
			for k, p := range ps {
				one, err := DecodeProfile(p, in, opt)
				if err != nil {
					t.Fatal(err)
				}
				for j := range one.Model {
					if math.Float64bits(one.Model[j]) != math.Float64bits(all[k].Model[j]) || math.Float64bits(one.Bound[j]) != math.Float64bits(all[k].Bound[j]) {
						t.Fatalf("%v %s out %v: element %d: DecodeProfiles gives model %v bound %v, DecodeProfile %v %v",
							id, p, out, j, all[k].Model[j], all[k].Bound[j], one.Model[j], one.Bound[j])
					}
				}
			}
		}
	}
	if _, err := DecodeProfiles([]Profile{ProfileDot4Int8Q, ProfilePrefillChunkF16}, attBuild(rng, attProfileShape(K3V4, []int{5})).in, ProfileOptions{}); err == nil {
		t.Error("DecodeProfiles with a profile that does not read the cache: no error")
	}
}

// TestSweepTokens: a long row's model and bound (tokens swept in chunks on several goroutines,
// sweepTokens) are the same bits on one processor as on all of them, and within float64 rounding
// of one sweep in token order (a millionth of the bound): decode rows of 3000 and 9000 tokens, and
// prefill rows (both prefill profile kinds) whose prefix and chunk tokens cross chunk boundaries
// (evalChunk lowered to 64). Run it with -race too: the rows' value functions are called from
// several goroutines at once.
func TestSweepTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dec := attBuild(rng, attProfileShape(K3V4, []int{3000, 9000})).in
	pre := attPrefillCase(rng, K3V4, 1, 2, []int{40, 30}, []int{100, 61}, 1)
	for _, c := range []struct {
		name  string
		chunk int
		run   func() ([]*ProfileResult, error)
	}{
		{"decode", evalChunk, func() ([]*ProfileResult, error) {
			return DecodeProfiles([]Profile{ProfileDot4Int8Q, ProfileWMMAF16Q}, dec, ProfileOptions{Out: DtypeF16})
		}},
		{"prefill-fp32", 64, func() ([]*ProfileResult, error) {
			r, err := PrefillProfile(ProfilePrefillFP32, ProfilePrefillFP32, pre, ProfileOptions{Out: DtypeF16})
			return []*ProfileResult{r}, err
		}},
		{"int8rowq+chunk-f16", 64, func() ([]*ProfileResult, error) {
			r, err := PrefillProfile(ProfileInt8RowQ, ProfilePrefillChunkF16, pre, ProfileOptions{Out: DtypeF16})
			return []*ProfileResult{r}, err
		}},
	} {
		t.Run(c.name, func(t *testing.T) { checkSweepTokens(t, c.chunk, c.run) })
	}
}

func checkSweepTokens(t *testing.T, chunk int, run func() ([]*ProfileResult, error)) {
	defer func(c int) { evalChunk = c }(evalChunk)
	get := func() []*ProfileResult {
		r, err := run()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	evalChunk = chunk
	chunks := get()
	procs := runtime.GOMAXPROCS(1)
	one := get()
	runtime.GOMAXPROCS(procs)
	evalChunk = math.MaxInt
	whole := get()
	for k := range whole {
		c, o, w := chunks[k], one[k], whole[k]
		for j := range w.Model {
			if math.Float64bits(c.Model[j]) != math.Float64bits(o.Model[j]) || math.Float64bits(c.Bound[j]) != math.Float64bits(o.Bound[j]) {
				t.Fatalf("result %d element %d: model %v bound %v on every processor, %v %v on one", k, j, c.Model[j], c.Bound[j], o.Model[j], o.Bound[j])
			}
			// float64 rounding of sums of n terms: about n·2^-53 of Σ|terms|, which the bound (fp32
			// arithmetic: at least 2^-24 of it) exceeds by orders of magnitude.
			if math.Abs(c.Model[j]-w.Model[j]) > 1e-6*w.Bound[j] || math.Abs(c.Bound[j]-w.Bound[j]) > 1e-12*w.Bound[j] {
				t.Errorf("result %d element %d: model %v bound %v in chunks, %v %v in one sweep: more than float64 rounding apart", k, j, c.Model[j], c.Bound[j], w.Model[j], w.Bound[j])
			}
		}
	}
}
