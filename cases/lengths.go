package cases

import (
	"math"
	"sort"

	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// MaxSeqLen is the longest sequence the batch generators produce by default (2^17 tokens).
const MaxSeqLen = 1 << 17

// KlenBoundaries are the lengths every length generator must reach (when its range allows): the
// edges of the kernels' 16-token tiles, 64-token WMMA splits and 128-token MTP runs. Block-size
// multiples ±1 and the range's own ends are added per generator.
var KlenBoundaries = []int{0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129}

// lengthBoundaries is KlenBoundaries plus bs·k−1, bs·k, bs·k+1 for k = 1, 2 and the last k that
// fits, plus lo, lo+1, hi−1 and hi, clipped to [lo, hi], sorted and deduplicated.
func lengthBoundaries(lo, hi, bs int) []int {
	c := append([]int(nil), KlenBoundaries...)
	c = append(c, lo, lo+1, hi-1, hi)
	if bs > 0 {
		for _, k := range []int{1, 2, hi / bs} {
			c = append(c, k*bs-1, k*bs, k*bs+1)
		}
	}
	var out []int
	sort.Ints(c)
	for i, v := range c {
		if v >= lo && v <= hi && (i == 0 || v != c[i-1]) {
			out = append(out, v)
		}
	}
	return out
}

// drawLength draws a length in [lo, hi]: mostly small (cheap cases), often a boundary, sometimes
// a block-size multiple ±1, a medium or a long one (log-uniform up to hi).
func drawLength(d draw, lo, hi, bs int, label string) int {
	if hi <= lo {
		return lo
	}
	switch d.intn(0, 9, label+"_class") {
	case 0, 1, 2: // small
		return d.intn(lo, min(hi, lo+300), label)
	case 3, 4, 5: // a boundary
		return pick(d, lengthBoundaries(lo, hi, bs), label+"_boundary")
	case 6: // a multiple of the block size, ±1
		if bs > 0 && hi/bs >= 1 {
			k := d.intn(1, hi/bs, label+"_blocks")
			return min(hi, max(lo, k*bs+d.intn(-1, 1, label+"_delta")))
		}
		return d.intn(lo, hi, label)
	case 7: // medium
		return d.intn(lo, min(hi, lo+4096), label)
	case 8: // long: log-uniform
		e := d.f64(math.Log2(float64(max(lo, 1))), math.Log2(float64(hi)), label+"_log2")
		return min(hi, max(lo, int(math.Round(math.Exp2(e)))))
	default: // the longest
		return hi - d.intn(0, 1, label+"_from_max")
	}
}

// Lengths draws sequence or key lengths in [lo, hi] (KlenBoundaries, multiples of blockSize ±1
// and the ends of the range all reachable; most draws small, so cases stay cheap).
func Lengths(lo, hi, blockSize int) *rapid.Generator[int] {
	return rapid.Custom(func(t *rapid.T) int { return drawLength(rapidDraw{t}, lo, hi, blockSize, "len") })
}

// QueryLenBoundaries are the query lengths the query-length generator must reach: decode (1),
// MTP verification with 1..7 drafts (2..8), the edges of 16-token tiles and of the 128-token decode
// limit (docs/contract.md §3.3, §7).
var QueryLenBoundaries = []int{1, 2, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128}

func drawQueryLen(d draw, hi int, label string) int {
	if hi <= 1 {
		return 1
	}
	switch d.intn(0, 5, label+"_class") {
	case 0, 1: // decode
		return 1
	case 2: // MTP verify: k drafts + 1
		return min(hi, d.intn(2, 8, label+"_mtp"))
	case 3:
		var b []int
		for _, v := range QueryLenBoundaries {
			if v <= hi {
				b = append(b, v)
			}
		}
		return pick(d, append(b, hi), label+"_boundary")
	default:
		return d.intn(1, hi, label)
	}
}

// QueryLens draws a request's query length in 1..hi (hi = 128 for the decode kernel): decode,
// MTP runs and short chunks, with QueryLenBoundaries reachable.
func QueryLens(hi int) *rapid.Generator[int] {
	return rapid.Custom(func(t *rapid.T) int { return drawQueryLen(rapidDraw{t}, hi, "q_len") })
}

// SplitBoundaries are the split counts the split generator must reach besides those derived from
// kv_max (one token per split, more splits than tokens): 1, the upstream WMMA cap 192 ± 1, and
// the largest count 1024.
var SplitBoundaries = []int{1, 2, 7, 64, 191, 192, 193, 1023, oracle.MaxSplits}

func drawSplits(d draw, kvMax int, label string) int {
	clamp := func(n int) int { return min(oracle.MaxSplits, max(1, n)) }
	switch d.intn(0, 5, label+"_class") {
	case 0:
		return clamp(d.intn(1, 16, label))
	case 1:
		return pick(d, SplitBoundaries, label+"_boundary")
	case 2: // one token per split, or a few more splits than tokens
		return clamp(kvMax + d.intn(0, 3, label+"_extra"))
	case 3: // many more splits than tokens
		return clamp(2*kvMax + d.intn(1, 64, label+"_extra"))
	default:
		return d.intn(1, oracle.MaxSplits, label)
	}
}

// Splits draws num_splits in 1..1024 for a call whose longest row has kvMax tokens: split-count
// boundaries, one token per split (kvMax), and more splits than tokens.
func Splits(kvMax int) *rapid.Generator[int] {
	return rapid.Custom(func(t *rapid.T) int { return drawSplits(rapidDraw{t}, kvMax, "splits") })
}

// GQAGroups draws G = Hq/Hkv from the groups the decode operation accepts: 1, 2, 4, 6, 8.
func GQAGroups() *rapid.Generator[int] { return rapid.SampledFrom(oracle.AllowedGroups) }

// DefaultSMScale is what vLLM passes: 256^-1/2.
const DefaultSMScale = 1.0 / 16

// SMScales draws a softmax scale: vLLM's 1/16, a few fixed others, or log-uniform in
// [2^-10, 2^4] (docs/contract.md §3.3: any finite value > 0).
func SMScales() *rapid.Generator[float64] {
	return rapid.Custom(func(t *rapid.T) float64 {
		switch rapid.IntRange(0, 3).Draw(t, "sm_scale_class") {
		case 0:
			return DefaultSMScale
		case 1:
			return rapid.SampledFrom([]float64{1 / math.Sqrt(128), 0.01, 0.3, 1, 2}).Draw(t, "sm_scale")
		default:
			return math.Exp2(rapidDraw{t}.f64(-10, 4, "log2_sm_scale"))
		}
	})
}

// BlockSizes draws a cache block size: a multiple of 16 (the kernels' requirement, docs/contract.md
// §7), 16 most often.
func BlockSizes() *rapid.Generator[int] {
	return rapid.SampledFrom([]int{16, 16, 32, 48, 64, 128, 256})
}
