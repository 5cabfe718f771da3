package cases

import (
	"sort"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// Split geometries (docs/contract.md §3.3: a tier chooses its own; the result must not depend on it).
const (
	GeometryPortable = string(arch.Portable) // ⌈kv_max/ns⌉ tokens per split
	GeometryWMMA     = string(arch.WMMA)     // max(⌈kv_max/ns⌉, 64) rounded up to 16, at most 192 splits
	GeometryRandom   = "random"              // random contiguous ranges: empty ones, uneven ones, past kv_max
)

// GeometryCase is a drawn geometry with how it was made.
type GeometryCase struct {
	Kind   string         `json:"kind"`
	Splits int            `json:"splits"`
	Ranges []oracle.Range `json:"ranges"`
}

func drawGeometry(d draw, kvMax, numSplits int) GeometryCase {
	g := GeometryCase{Kind: pick(d, []string{GeometryPortable, GeometryWMMA, GeometryRandom}, "geometry"), Splits: numSplits}
	var err error
	switch g.Kind {
	case GeometryPortable:
		g.Ranges, err = oracle.PortableGeometry(kvMax, numSplits)
	case GeometryWMMA:
		g.Ranges, err = oracle.WMMAGeometry(kvMax, numSplits)
	default:
		r := newRand(d.u64("geometry_seed"), 7)
		cuts := make([]int, numSplits-1)
		dup := r.IntN(3) == 0 // many empty ranges
		for i := range cuts {
			cuts[i] = r.IntN(kvMax + 1)
			if dup && i > 0 && r.IntN(2) == 0 {
				cuts[i] = cuts[i-1]
			}
		}
		sort.Ints(cuts)
		end := kvMax + d.intn(0, 3, "overshoot")
		lo := 0
		for s := 0; s < numSplits; s++ {
			hi := end
			if s < numSplits-1 {
				hi = cuts[s]
			}
			g.Ranges = append(g.Ranges, oracle.Range{Lo: lo, Hi: hi})
			lo = hi
		}
	}
	if err != nil {
		panic("fuzz: " + err.Error())
	}
	return g
}

// Geometries draws a split geometry over kvMax tokens with numSplits ranges (at most 192 for the
// WMMA kind): the portable tier's, the WMMA tier's, or random contiguous ranges (empty ranges,
// more ranges than tokens, the last range past kv_max).
func Geometries(kvMax, numSplits int) *rapid.Generator[GeometryCase] {
	return rapid.Custom(func(t *rapid.T) GeometryCase { return drawGeometry(rapidDraw{t}, kvMax, numSplits) })
}
