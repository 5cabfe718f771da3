package harness

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/octant-kv/octant/oracle"
)

// TestRoundFastPath: Dtype.Round's fp16 fast paths equal the oracle's conversion, on every fp16
// value, every midpoint between neighbours and its float32 neighbours, and random float32 bits.
func TestRoundFastPath(t *testing.T) {
	check := func(x float32) {
		want := oracle.F16ToF32(oracle.F32ToF16(x))
		if got := F16.Round(x); math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("F16.Round(%g = %#08x) = %g, oracle %g", x, math.Float32bits(x), got, want)
		}
	}
	for h := 0; h < 0x7c00; h++ {
		v := oracle.F16ToF32(uint16(h))
		next := oracle.F16ToF32(uint16(h + 1))
		mid := float32((float64(v) + float64(next)) / 2)
		for _, x := range []float32{v, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			check(x)
			check(-x)
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 1<<16; i++ {
		check(math.Float32frombits(r.Uint32()))
	}
}
