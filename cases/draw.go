package cases

import (
	"math"
	"math/rand/v2"

	"pgregory.net/rapid"
)

// draw is where a generator takes its small choices from: rapid (recorded, so rapid can shrink
// and replay them, and `go test -fuzz` can mutate them) or a PCG stream (for bulk content, such as
// the values behind every slot of a cache, which would be too many draws for rapid). Writing each
// distribution once against draw keeps the two sources in agreement.
type draw interface {
	intn(lo, hi int, label string) int // uniform-ish in [lo, hi]; rapid biases towards lo
	f64(lo, hi float64, label string) float64
	u64(label string) uint64
}

type rapidDraw struct{ t *rapid.T }

func (d rapidDraw) intn(lo, hi int, label string) int {
	return rapid.IntRange(lo, hi).Draw(d.t, label)
}

func (d rapidDraw) f64(lo, hi float64, label string) float64 {
	// A 20-bit fixed-point fraction, drawn bit-reversed: rapid favours small integers (and
	// shrinks towards 0), which reversed are the coarse fractions 0, 1/2, 1/4, 3/4, … spread over
	// the whole range, so every part of [lo, hi] is reached and a shrunk draw is lo. (rapid's own
	// float generators favour special values the kinds choose for themselves.)
	const bits = 20
	k := rapid.IntRange(0, 1<<bits-1).Draw(d.t, label)
	if rapid.IntRange(0, 15).Draw(d.t, label+"_top") == 15 {
		return hi
	}
	return lo + (hi-lo)*float64(bitsReverse(uint32(k), bits))/(1<<bits)
}

func bitsReverse(x uint32, n int) uint32 {
	var r uint32
	for i := 0; i < n; i++ {
		r = r<<1 | x&1
		x >>= 1
	}
	return r
}

func (d rapidDraw) u64(label string) uint64 { return rapid.Uint64().Draw(d.t, label) }

type rngDraw struct{ r *rand.Rand }

func (d rngDraw) intn(lo, hi int, _ string) int {
	if hi <= lo {
		return lo
	}
	return lo + d.r.IntN(hi-lo+1)
}

func (d rngDraw) f64(lo, hi float64, _ string) float64 { return lo + (hi-lo)*d.r.Float64() }

func (d rngDraw) u64(string) uint64 { return d.r.Uint64() }

// newRand is the PCG stream every bulk builder uses: the same seed gives the same values on every
// platform and Go version (math/rand/v2's PCG is a specified algorithm).
func newRand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x6f63_7461_6e74))
}

// pick returns one of xs, the first when shrunk.
func pick[E any](d draw, xs []E, label string) E { return xs[d.intn(0, len(xs)-1, label)] }

// exp2 is 2^e as float64.
func exp2(e float64) float64 { return math.Exp2(e) }
