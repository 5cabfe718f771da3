package oracle

import (
	"math"
	"strings"
	"testing"
)

// attExactBound returns, per element of ExactDecode's output, a bound on the distance between the
// exact real value and any float64 evaluation of it by the oracle's engine: online softmax in any
// token order, any split geometry, any merge order. It is the profile bound of profile_bounds.go
// instantiated for the engine's own arithmetic (fp64Prec: u = 2^-53, exp2 within 2 ulps, no
// output rounding) with exact scores (δ = 0: every evaluation computes each score with the same
// operations on the same rotated query and key, so scores are bit-identical). Two evaluations then
// differ by at most the sum of their bounds. Also returns the two-pass model of profRows.
func attExactBound(in *DecodeInput) (model, bound []float64) {
	f := in.Cache.F
	d := f.HeadSize
	G := in.Group()
	model = make([]float64, in.NumQ()*in.NumQHeads*d)
	bound = make([]float64, len(model))
	e := newDecodeEngine(in)
	dec := newSlotDecoder64(f)
	var slots [][]byte
	for i := 0; i < in.NumQ(); i++ {
		klen := in.Klen(i)
		if klen == 0 {
			continue
		}
		for h := 0; h < in.Cache.NumKVHeads; h++ {
			e.loadQueries(i, h)
			slots = in.tokenSlots(i, h, 0, klen, slots[:0])
			n := len(slots)
			r := &profRows{d: d, n: n, s: make([][]float64, G), ds: make([][]float64, G), kappa: make([]float64, n), prec: fp64Prec,
				rotBlock: f.VRotBlock()}
			for k := range r.s {
				r.s[k], r.ds[k] = make([]float64, n), make([]float64, n)
			}
			for t, sl := range slots {
				dec.load(sl)
				for k := range r.s {
					r.s[k][t] = e.c * attDot(e.qr[k], dec.k)
				}
			}
			ps := newProfSlots(f, slots, in.VSigns)
			r.value, r.valueOut = ps.value, ps.valueOut
			r.unrot = func(x []float64) { attUnrotateInPlace(x, in.VSigns, f.VRotBlock()) }
			m, b := make([][]float64, G), make([][]float64, G)
			for k := 0; k < G; k++ {
				o := (i*in.NumQHeads + h*G + k) * d
				m[k], b[k] = model[o:o+d], bound[o:o+d]
			}
			r.eval(m, b)
		}
	}
	return model, bound
}

// attWithin reports the first element where |a−b| exceeds tol(j), or −1.
func attWithin(a, b []float64, tol func(j int) float64) int {
	for j := range a {
		if math.Abs(a[j]-b[j]) > tol(j) {
			return j
		}
	}
	return -1
}

// TestGeometryHelpers checks the two tiers' geometries against their definitions (docs/contract.md
// §3.3) on a grid of kv_max and num_splits.
func TestGeometryHelpers(t *testing.T) {
	for _, kv := range []int{0, 1, 15, 16, 63, 64, 65, 700, 3000, 32768, 100000} {
		for _, ns := range []int{1, 2, 7, 64, 191, 192, 193, 1024} {
			pg, err := PortableGeometry(kv, ns)
			if err != nil {
				t.Fatal(err)
			}
			per := (kv + ns - 1) / ns
			if len(pg) != ns || pg.Validate(kv) != nil || pg[len(pg)-1].Hi != kv {
				t.Fatalf("portable(%d,%d): %d ranges ending at %d, expected %d ending at %d", kv, ns, len(pg), pg[len(pg)-1].Hi, ns, kv)
			}
			for s, r := range pg {
				if r.Hi-r.Lo > per || (r.Hi < kv && r.Hi-r.Lo != per) {
					t.Fatalf("portable(%d,%d): split %d is [%d,%d), expected %d tokens (fewer only at the end)", kv, ns, s, r.Lo, r.Hi, per)
				}
			}
			wg, err := WMMAGeometry(kv, ns)
			if err != nil {
				t.Fatal(err)
			}
			nw := min(ns, 192)
			wper := max((kv+nw-1)/nw, 64)
			wper = (wper + 15) / 16 * 16
			if len(wg) != nw || wg.Validate(kv) != nil || wg[len(wg)-1].Hi != kv {
				t.Fatalf("wmma(%d,%d): %d ranges, expected %d covering 0..%d", kv, ns, len(wg), nw, kv)
			}
			for s, r := range wg {
				if r.Hi-r.Lo > wper || (r.Hi < kv && r.Hi-r.Lo != wper) || wper%16 != 0 || wper < 64 {
					t.Fatalf("wmma(%d,%d): split %d is [%d,%d), expected %d tokens", kv, ns, s, r.Lo, r.Hi, wper)
				}
			}
		}
	}
	for _, c := range []struct {
		g    Geometry
		kv   int
		want string
	}{
		{Geometry{}, 0, "no ranges"},
		{Geometry{{1, 5}}, 5, "range 0 starts at 1, expected 0"},
		{Geometry{{0, 5}, {6, 9}}, 9, "range 1 starts at 6, expected 5"},
		{Geometry{{0, 5}, {5, 4}}, 4, "range 1 is [5,4), expected Lo ≤ Hi"},
		{Geometry{{0, 5}}, 9, "cover tokens 0..4, expected to cover 0..8"},
	} {
		if err := c.g.Validate(c.kv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, expected one containing %q", c.g, err, c.want)
		}
	}
	if _, err := PortableGeometry(10, 0); err == nil || !strings.Contains(err.Error(), "num_splits 0, expected 1..1024") {
		t.Errorf("num_splits 0: error %v", err)
	}
	if _, err := WMMAGeometry(10, 1025); err == nil {
		t.Errorf("num_splits 1025 accepted")
	}
}

// TestMergeHandMade merges partials written by hand. Split 0: m = 1, l = 2, o = 4·e0; split 1
// empty (m = −inf) with NaN in o, which must not be read; split 2: m = 3, l = 1, o = e0. By hand:
// M = 3, w = (1/4, 0, 1), L = 1/4·2 + 1 = 3/2, O = (1/4·4 + 1)·e0 = 2·e0, and the inverse V rotation
// of e0 is sign_j/16 (one 256-point transform), so out_j = ±2/16/(3/2) = ±1/12, negative where
// the V sign is set.
func TestMergeHandMade(t *testing.T) {
	f := MustFormat(K3V3, KernelHeadSize, KernelRopeDim)
	vs := DefaultSigns(256)
	for _, stride := range []int{258, DefaultPartialStride, 300} {
		p, err := NewPartials(2, 1, 3, 256, stride)
		if err != nil {
			t.Fatal(err)
		}
		r0, r1, r2 := p.Row(0, 0, 0), p.Row(0, 0, 1), p.Row(0, 0, 2)
		r0[0], r0[256], r0[257] = 4, 1, 2
		for i := 0; i < 256; i++ {
			r1[i] = math.NaN()
		}
		r2[0], r2[256], r2[257] = 1, 3, 1
		// Query 1: every split empty except one with l = 0 (a split whose weights underflowed).
		p.Row(1, 0, 1)[256] = 5
		out, err := MergePartials(p, f, vs)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 256; j++ {
			want := 1.0 / 12
			if vs[j] {
				want = -want
			}
			if math.Abs(out[j]-want) > 0x1p-52 {
				t.Fatalf("stride %d: out[%d] = %v, expected %v", stride, j, out[j], want)
			}
			if out[256+j] != 0 {
				t.Fatalf("stride %d: query 1 (L = 0) out[%d] = %v, expected 0", stride, j, out[256+j])
			}
		}
	}
	// From float32 partials, and refusals.
	data := make([]float32, 260)
	data[256] = float32(math.Inf(-1))
	p, err := PartialsFromFloat32(data, 1, 1, 1, 256, 260)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := MergePartials(p, f, vs); err != nil || out[0] != 0 {
		t.Fatalf("empty float32 partial: %v, %v", out[0], err)
	}
	for _, m := range []float64{math.NaN(), math.Inf(1)} {
		p.Data[256] = m
		if _, err := MergePartials(p, f, vs); err == nil || !strings.Contains(err.Error(), "expected a finite value or −inf") {
			t.Errorf("m = %v: error %v", m, err)
		}
	}
	if _, err := NewPartials(1, 1, 1, 256, 257); err == nil || !strings.Contains(err.Error(), "row stride 257, expected ≥ head_size+2 = 258") {
		t.Errorf("stride 257: error %v", err)
	}
	if _, err := PartialsFromFloat32(data[:100], 1, 1, 1, 256, 260); err == nil || !strings.Contains(err.Error(), "100 values, expected") {
		t.Errorf("short data: error %v", err)
	}
}
