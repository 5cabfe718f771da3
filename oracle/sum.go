package oracle

import "math"

// The oracle's canonical summation (docs/oracle.md, "Canonical sums"). The reference sums ss and
// dot with a library reduction whose order is unspecified, and the kernels with a lane butterfly,
// so neither order is canonical. The oracle instead forms each term as the reference does (one
// float32 product) and adds the terms in double-double arithmetic, which is exact unless the terms
// span more than about 2^100 in magnitude, then rounds the sum once to float32 (round to nearest,
// ties to even, with the low word breaking exact float32 midpoints). The result does not depend on
// the order of the terms.

// dd is an unevaluated sum hi + lo with |lo| ≤ ulp(hi)/2.
type dd struct{ hi, lo float64 }

// add adds one float64 term exactly into the double-double (Knuth's TwoSum).
func (a *dd) add(x float64) {
	s := a.hi + x
	bp := s - a.hi
	e := (a.hi - (s - bp)) + (x - bp)
	lo := a.lo + e
	hi := s + lo
	a.lo = lo - (hi - s)
	a.hi = hi
}

// float32 rounds hi+lo to the nearest float32, ties to even, using lo to break a tie that hi
// alone would present.
func (a dd) float32() float32 {
	r := float32(a.hi)
	if a.lo == 0 || math.IsInf(float64(r), 0) || math.IsNaN(a.hi) {
		return r
	}
	// hi is a float32 midpoint exactly when rounding it lands at distance exactly half an ulp.
	d := a.hi - float64(r)
	if d == 0 {
		// hi is representable; hi+lo rounds to r unless lo pushes past a midpoint, impossible since
		// |lo| ≤ ulp64(hi)/2 ≪ ulp32/2.
		return r
	}
	other := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), d)))
	if math.Abs(float64(other)-a.hi) != math.Abs(d) {
		return r // not a midpoint
	}
	// hi sits exactly between r and other: lo decides.
	if (lo64sign(a.lo) > 0) == (float64(other) > float64(r)) {
		return other
	}
	return r
}

func lo64sign(x float64) int {
	if x > 0 {
		return 1
	}
	return -1
}
