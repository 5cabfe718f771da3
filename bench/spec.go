package bench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/octant-kv/octant/oracle"
)

// Spec is one batch shape: Reqs requests of Tokens tokens each; the last QPerReq positions of each
// request are query tokens (klen Tokens−QPerReq+1 .. Tokens).
type Spec struct {
	Name    string
	Summary string
	Hidden  bool // a test shape: accepted by ParseSpecs, listed apart in the help
	Reqs    int  // requests
	Tokens  int  // sequence length of each request, its query tokens included
	QPerReq int  // query tokens per request
	KVHeads int  // Hkv
	G       int  // query heads per KV head (Hq = G·Hkv)
	// Prefill: each request's query tokens are one chunk run through octave_prefill (its own K/V
	// exact, the prefix from the packed cache), one call per iteration, instead of decode calls.
	Prefill bool
}

// Specs are the shapes ParseSpecs accepts. "100k" is 100000 tokens; "2k" queries are 2048.
var Specs = []Spec{
	{Name: "q1s100k", Summary: "1 decode query over a 100000-token sequence; Hkv 1, Hq 6",
		Reqs: 1, Tokens: 100000, QPerReq: 1, KVHeads: 1, G: 6},
	{Name: "q4s100k", Summary: "MTP verification: 4 query tokens of one request, klens 99997..100000; Hkv 1, Hq 6",
		Reqs: 1, Tokens: 100000, QPerReq: 4, KVHeads: 1, G: 6},
	{Name: "q2ks100k", Summary: "a chunk of 2048 query tokens of one request ending a 100000-token sequence,\n" +
		"causal klens 97953..100000; Hkv 1, Hq 6; run as 16 decode calls of 128 rows (see below)",
		Reqs: 1, Tokens: 100000, QPerReq: 2048, KVHeads: 1, G: 6},
	{Name: "q2ks100k-pf", Summary: "the q2ks100k chunk as a prefill: one octave_prefill call, the 97952-token prefix\n" +
		"from the packed cache and the chunk's own 2048 K/V tokens in fp16, causal; Hkv 1, Hq 6",
		Reqs: 1, Tokens: 100000, QPerReq: 2048, KVHeads: 1, G: 6, Prefill: true},
	{Name: "big", Summary: "bandwidth-bound: 8 requests x 131072 tokens, one decode query each; Hkv 4, Hq 24",
		Reqs: 8, Tokens: 131072, QPerReq: 1, KVHeads: 4, G: 6},
	{Name: "tiny", Summary: "test: 1 decode query over 2048 tokens; Hkv 1, Hq 6",
		Hidden: true, Reqs: 1, Tokens: 2048, QPerReq: 1, KVHeads: 1, G: 6},
	{Name: "tinychunk", Summary: "test: a chunk of 136 query tokens ending a 520-token sequence (2 calls); Hkv 1, Hq 6",
		Hidden: true, Reqs: 1, Tokens: 520, QPerReq: 136, KVHeads: 1, G: 6},
	{Name: "tinypf", Summary: "test: a chunk of 136 query tokens ending a 520-token sequence, as a prefill; Hkv 1, Hq 6",
		Hidden: true, Reqs: 1, Tokens: 520, QPerReq: 136, KVHeads: 1, G: 6, Prefill: true},
	{Name: "tinymulti", Summary: "test: 3 requests x 1000 tokens, 2 query tokens each; Hkv 2, Hq 8",
		Hidden: true, Reqs: 3, Tokens: 1000, QPerReq: 2, KVHeads: 2, G: 4},
}

// DefaultSpecs are the specs a run times unless told otherwise.
const DefaultSpecs = "q1s100k,q4s100k,q2ks100k,q2ks100k-pf,big"

// HeadSize is the kernels' head size D.
const HeadSize = 256

// ParseSpecs resolves a comma-separated list of spec names.
func ParseSpecs(list string) ([]Spec, error) {
	var out []Spec
	for _, name := range listFields(list) {
		i := slices.IndexFunc(Specs, func(s Spec) bool { return s.Name == name })
		if i < 0 {
			var known []string
			for _, s := range Specs {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("unknown spec %q (known: %s)", name, strings.Join(known, ", "))
		}
		out = append(out, Specs[i])
	}
	if len(out) == 0 {
		return nil, errors.New("--specs: no spec given")
	}
	return out, nil
}

// listFields is the non-empty fields of a comma-separated list, spaces trimmed.
func listFields(list string) []string {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ParseSplits parses num_splits settings: "auto" (0) or a number in 1..1024, or a comma-separated
// list of them.
func ParseSplits(list string) ([]int, error) {
	var out []int
	for _, f := range listFields(list) {
		if f == "auto" {
			out = append(out, 0)
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > oracle.MaxSplits {
			return nil, fmt.Errorf("--splits: %q is neither auto nor a number in 1..%d", f, oracle.MaxSplits)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("--splits: empty")
	}
	return out, nil
}

// FormatSplits is the inverse of ParseSplits: "auto" for 0, comma-separated.
func FormatSplits(splits []int) string {
	f := make([]string, len(splits))
	for i, n := range splits {
		f[i] = "auto"
		if n != 0 {
			f[i] = strconv.Itoa(n)
		}
	}
	return strings.Join(f, ",")
}

// ParseByteSize parses "4GiB", "256MiB", "64KiB", "1GB", "1000" (bytes).
func ParseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a byte size (examples: 4GiB, 256MiB, 1048576)", s)
	}
	return n * mult, nil
}

// HumanBytes prints a byte count in the largest binary unit it reaches ("1.5 MiB", "2.00 GiB").
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Hq is the number of query heads.
func (s Spec) Hq() int { return s.G * s.KVHeads }

// NumQ is the number of query rows.
func (s Spec) NumQ() int { return s.Reqs * s.QPerReq }

// Klen is the number of tokens query row i attends to (causal within a request's query tokens).
func (s Spec) Klen(i int) int { return s.Tokens - s.QPerReq + i%s.QPerReq + 1 }

// BlocksPerReq is max_blocks: the blocks one request's sequence needs.
func (s Spec) BlocksPerReq(blockSize int) int { return (s.Tokens + blockSize - 1) / blockSize }

// CacheBytes is the size of the packed cache allocated for the spec (LBHNC, every block of every
// request).
func (s Spec) CacheBytes(slotBytes, blockSize int) int64 {
	return int64(s.Reqs) * int64(s.BlocksPerReq(blockSize)) * int64(s.KVHeads) * int64(blockSize) * int64(slotBytes)
}

// ReadBytes is the packed cache one decode iteration reads: Hkv × seq_len × slot bytes per request,
// each KV head's slots counted once per request (the kernel reads them once for all G query heads,
// and for all query tokens of a request sharing a workgroup). A prefill reads the packed prefix
// and the chunk's own fp16 K and V.
func (s Spec) ReadBytes(slotBytes int) int64 {
	if s.Prefill { // the packed prefix, and the chunk's own K and V in fp16
		return int64(s.Reqs) * int64(s.KVHeads) * (int64(s.Tokens-s.QPerReq)*int64(slotBytes) + 2*int64(s.QPerReq)*HeadSize*2)
	}
	return int64(s.Reqs) * int64(s.KVHeads) * int64(s.Tokens) * int64(slotBytes)
}

// FP16Bytes is what an fp16 K/V cache of the same shape holds: 2 (K, V) × seq_len × Hkv × 256 × 2
// bytes per request.
func (s Spec) FP16Bytes() int64 {
	return int64(s.Reqs) * 2 * int64(s.Tokens) * int64(s.KVHeads) * HeadSize * 2
}

// QKPairs is the number of (query head, token) scores one iteration computes.
func (s Spec) QKPairs() int64 {
	var n int64
	for i := 0; i < s.QPerReq; i++ {
		n += int64(s.Klen(i))
	}
	return n * int64(s.Reqs) * int64(s.Hq())
}

// Shape describes the spec for messages.
func (s Spec) Shape() string {
	return fmt.Sprintf("%d request(s) x %d tokens, %d query token(s) each, Hkv %d, Hq %d", s.Reqs, s.Tokens, s.QPerReq, s.KVHeads, s.Hq())
}

// RowRange is the query rows [Lo, Hi) of one decode call.
type RowRange struct{ Lo, Hi int }

// Calls splits the query rows into decode calls: all rows in one call when every request has at
// most maxRows query tokens (or maxRows ≤ 0); otherwise each request's rows in runs of maxRows.
func (s Spec) Calls(maxRows int) []RowRange {
	if s.Prefill {
		return []RowRange{{0, s.NumQ()}} // one prefill call
	}
	if maxRows <= 0 || s.QPerReq <= maxRows {
		return []RowRange{{0, s.NumQ()}}
	}
	var out []RowRange
	for r := 0; r < s.Reqs; r++ {
		for lo := 0; lo < s.QPerReq; lo += maxRows {
			out = append(out, RowRange{r*s.QPerReq + lo, r*s.QPerReq + min(lo+maxRows, s.QPerReq)})
		}
	}
	return out
}

// AutoQueryGroup is query_group = min(4, query tokens per request).
func AutoQueryGroup(s Spec) int { return min(4, s.QPerReq) }

// AutoSplits is num_splits = clamp(⌈16·SMs / W⌉, 1, min(1024, ⌊kv_max / T⌋)) with
// W = ⌈rows per call / query_group⌉ · Hkv workgroups per split and T = 768 tokens (384 when a
// workgroup holds more than 8 queries, query_group · G > 8): four waves of the portable decode's
// four resident workgroups per SM (CU), a whole number of them, and enough tokens per split that
// each workgroup's fixed costs (query preparation, partials, the reduce's walk over the splits)
// stay small (the measured reasons: docs/performance.md, "Split counts"). computeUnits ≤ 0 counts
// as an H200's 132.
func AutoSplits(rowsPerCall, queryGroup, g, kvHeads, kvMax, computeUnits int) int {
	tok := 768
	if queryGroup*g > 8 {
		tok = 384
	}
	return splitsFor((rowsPerCall+queryGroup-1)/queryGroup*kvHeads, 16, tok, kvMax, computeUnits)
}

// splitsFor is clamp(⌈perCU·SMs / wg⌉, 1, min(1024, ⌊kv_max / tok⌋)) for wg workgroups per split;
// computeUnits ≤ 0 counts as an H200's 132.
func splitsFor(wg, perCU, tok, kvMax, computeUnits int) int {
	if computeUnits <= 0 {
		computeUnits = 132 // an H200
	}
	ns := (perCU*computeUnits + wg - 1) / wg
	return max(1, min(ns, min(oracle.MaxSplits, kvMax/tok)))
}

// MMAPassQueries is the number of queries one workgroup of the mma decode takes in a pass when a
// row chunk has more than 8 (csrc/decode_mma_quad.hip: the quad kernel's three N tiles); a chunk's
// passes run on workgroups side by side.
const MMAPassQueries = 24

// AutoSplitsMMA is the mma tier's num_splits "auto": ⌈8·SMs / W⌉ splits of W workgroups, ≥ 768 tokens, or whole waves
// (each workgroup's start and end cost time, a partial wave idles SMs; docs/performance.md, "Split counts").
func AutoSplitsMMA(fmt oracle.FormatID, rowsPerCall, queryGroup, g, kvHeads, kvMax, computeUnits int) int {
	passes := 1
	if queryGroup*g > 8 {
		passes = (queryGroup*g + MMAPassQueries - 1) / MMAPassQueries
	}
	wg := (rowsPerCall + queryGroup - 1) / queryGroup * kvHeads * passes
	if computeUnits <= 0 {
		computeUnits = 132 // an H200, as splitsFor takes it
	}
	floor := splitsFor(wg, 8, 768, kvMax, computeUnits)
	if ns := (kvMax + 767) / 768; ns > floor && ns <= oracle.MaxSplits && ns*wg <= computeUnits {
		return ns
	}
	if fmt == oracle.K3V4 && queryGroup*g <= 8 {
		return wholeWaves(wg, computeUnits, max(1, min(oracle.MaxSplits, kvMax/768)))
	}
	return floor
}

// wholeWaves is the split count k in 1..kmax of the best E(k) − 0.03·(waves − 1) for a kernel of
// one workgroup per SM (AutoSplitsMMA), the smallest of equal scores.
func wholeWaves(wg, computeUnits, kmax int) int {
	best, bestScore := 1, math.Inf(-1)
	for k := 1; k <= kmax; k++ {
		waves := (k*wg + computeUnits - 1) / computeUnits
		score := float64(k*wg)/float64(computeUnits*waves) - 0.03*float64(waves-1)
		if score > bestScore+1e-12 {
			best, bestScore = k, score
		}
	}
	return best
}
