package cases

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/octant-kv/octant/harness"

	"github.com/octant-kv/octant/oracle"
)

// The boundary-coverage tests draw many values from each generator (deterministically:
// Generator.Example with seeds 0..n−1) and fail if some boundary the generator promises is never
// reached, so a change that stops a generator from reaching an edge case cannot go unnoticed.

// coverage counts hits of named boundaries.
type coverage struct {
	t    *testing.T
	name string
	n    int
	hits map[string]int
}

func newCoverage(t *testing.T, name string, n int) *coverage {
	return &coverage{t: t, name: name, n: n, hits: map[string]int{}}
}

func (c *coverage) hit(b string, ok bool) {
	if ok {
		c.hits[b]++
	} else if _, seen := c.hits[b]; !seen {
		c.hits[b] = 0
	}
}

// require fails for every listed boundary never hit, and logs the counts.
func (c *coverage) require(bs ...string) {
	c.t.Helper()
	var miss []string
	for _, b := range bs {
		if c.hits[b] == 0 {
			miss = append(miss, b)
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.hits)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, c.hits[k]))
	}
	c.t.Logf("%s, %d draws: %s", c.name, c.n, strings.Join(parts, " "))
	if len(miss) > 0 {
		c.t.Errorf("%s: in %d draws these boundaries were never reached: %s", c.name, c.n, strings.Join(miss, ", "))
	}
}

// requireShare logs each boundary's share of the draws and fails for each listed one reached in
// fewer than min of them.
func (c *coverage) requireShare(min float64, bs ...string) {
	c.t.Helper()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.hits)) {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", k, 100*float64(c.hits[k])/float64(c.n)))
	}
	c.t.Logf("%s, %d cases: %s", c.name, c.n, strings.Join(parts, ", "))
	for _, b := range bs {
		if got := float64(c.hits[b]) / float64(c.n); got < min {
			c.t.Errorf("%s: %q reached in %.1f%% of %d cases, expected at least %.0f%%", c.name, b, 100*got, c.n, 100*min)
		}
	}
}

func klenNames(extra ...string) []string {
	var s []string
	for _, k := range KlenBoundaries {
		s = append(s, fmt.Sprintf("klen=%d", k))
	}
	return append(s, extra...)
}

// hitLength records the length boundaries of v for block size bs.
func (c *coverage) hitLength(v, bs int, prefix string) {
	for _, k := range KlenBoundaries {
		c.hit(fmt.Sprintf("%sklen=%d", prefix, k), v == k)
	}
	c.hit(prefix+"k·bs-1 (k≥3)", v > 2*bs && v%bs == bs-1)
	c.hit(prefix+"k·bs (k≥3)", v > 2*bs && v%bs == 0)
	c.hit(prefix+"k·bs+1 (k≥3)", v > 2*bs && v%bs == 1)
}

func TestBoundariesLengths(t *testing.T) {
	for _, bs := range []int{16, 48} {
		const n = 3000
		c := newCoverage(t, fmt.Sprintf("Lengths(0, 2^17, %d)", bs), n)
		g := Lengths(0, MaxSeqLen, bs)
		for i := 0; i < n; i++ {
			v := g.Example(i)
			if v < 0 || v > MaxSeqLen {
				t.Fatalf("Lengths gave %d outside [0, %d]", v, MaxSeqLen)
			}
			c.hitLength(v, bs, "")
			c.hit("max", v == MaxSeqLen)
			c.hit("max-1", v == MaxSeqLen-1)
			c.hit(">4096", v > 4096)
		}
		c.require(klenNames("k·bs-1 (k≥3)", "k·bs (k≥3)", "k·bs+1 (k≥3)", "max", "max-1", ">4096")...)
	}
}

func TestBoundariesQueryLens(t *testing.T) {
	const n = 2000
	c := newCoverage(t, "QueryLens(128)", n)
	g := QueryLens(128)
	var want []string
	for _, b := range QueryLenBoundaries {
		want = append(want, fmt.Sprintf("q=%d", b))
	}
	for i := 0; i < n; i++ {
		v := g.Example(i)
		if v < 1 || v > 128 {
			t.Fatalf("QueryLens gave %d", v)
		}
		for _, b := range QueryLenBoundaries {
			c.hit(fmt.Sprintf("q=%d", b), v == b)
		}
	}
	c.require(want...)
}

func TestBoundariesSplits(t *testing.T) {
	for _, kv := range []int{0, 1, 37, 700, 5000} {
		const n = 1500
		c := newCoverage(t, fmt.Sprintf("Splits(kv_max %d)", kv), n)
		g := Splits(kv)
		for i := 0; i < n; i++ {
			v := g.Example(i)
			if v < 1 || v > oracle.MaxSplits {
				t.Fatalf("Splits gave %d", v)
			}
			for _, b := range SplitBoundaries {
				c.hit(fmt.Sprintf("splits=%d", b), v == b)
			}
			c.hit("one token per split", kv > 0 && v >= kv && (kv+v-1)/v == 1 && v == kv)
			c.hit("more splits than tokens", v > kv)
		}
		var want []string
		if kv < oracle.MaxSplits {
			want = append(want, "more splits than tokens")
		}
		for _, b := range SplitBoundaries {
			want = append(want, fmt.Sprintf("splits=%d", b))
		}
		if kv > 0 && kv <= oracle.MaxSplits {
			want = append(want, "one token per split")
		}
		c.require(want...)
	}
}

func TestBoundariesSmallGenerators(t *testing.T) {
	const n = 500
	c := newCoverage(t, "GQAGroups, SMScales, BlockSizes, harness.Dtypes", n)
	for i := 0; i < n; i++ {
		g := GQAGroups().Example(i)
		for _, a := range oracle.AllowedGroups {
			c.hit(fmt.Sprintf("G=%d", a), g == a)
		}
		s := SMScales().Example(i)
		if !(s > 0) || math.IsInf(s, 0) {
			t.Fatalf("SMScales gave %v", s)
		}
		c.hit("sm_scale=1/16", s == DefaultSMScale)
		c.hit("sm_scale>1", s > 1)
		c.hit("sm_scale<0.01", s < 0.01)
		bs := BlockSizes().Example(i)
		c.hit("bs=16", bs == 16)
		c.hit("bs=256", bs == 256)
		dt := DtypeGen().Example(i)
		c.hit("fp16", dt == harness.F16)
		c.hit("bf16", dt == harness.BF16)
	}
	c.require("G=1", "G=2", "G=4", "G=6", "G=8", "sm_scale=1/16", "sm_scale>1", "sm_scale<0.01", "bs=16", "bs=256", "fp16", "bf16")
}

func TestBoundariesSigns(t *testing.T) {
	const n = 500
	c := newCoverage(t, "SignPairs", n)
	for i := 0; i < n; i++ {
		p := SignPairs().Example(i)
		kw, vw := p.K.Int32Words(), p.V.Int32Words()
		same := fmt.Sprint(kw) == fmt.Sprint(vw)
		c.hit("K default", p.K.Default)
		c.hit("K random", !p.K.Default && len(p.K.Words) == 8)
		c.hit("V random", !p.V.Default && len(p.V.Words) == 8)
		c.hit("K≠V", !same)
		c.hit("K=V random", same && !p.K.Default)
		c.hit("all negated", fmt.Sprint(kw) == fmt.Sprint([]int32{-1, -1, -1, -1, -1, -1, -1, -1}))
		c.hit("none negated", fmt.Sprint(kw) == fmt.Sprint(make([]int32, 8)))
	}
	c.require("K default", "K random", "V random", "K≠V", "K=V random", "all negated", "none negated")
}

// TestBoundariesValues: every kind in both dtypes, values exactly representable and finite (or,
// for NonFiniteValues, holding NaN or ±inf), and the format hazards of docs/format.md §10 reached
// through the quantizer: scale overflow (fp16 and bf16), subnormal and underflowing scales, zero
// groups, Σx² overflowing float32 (bf16), non-finite input.
func TestBoundariesValues(t *testing.T) {
	const n = 1500
	c := newCoverage(t, "SlotCases values and hazards", n)
	var want []string
	for _, dt := range harness.Dtypes {
		for _, k := range append(append([]ValueKind(nil), FiniteKinds...), NonFiniteKinds...) {
			want = append(want, fmt.Sprintf("%s/%s", dt, k))
		}
		for _, h := range []oracle.Hazard{oracle.HazardScaleOverflow, oracle.HazardScaleSubnormal, oracle.HazardZeroGroup, oracle.HazardNonFinite, oracle.HazardScaleUnderflow} {
			want = append(want, fmt.Sprintf("%s hazard %s", dt, h))
		}
	}
	want = append(want, "bf16 hazard "+string(oracle.HazardSSOverflow), "fp16 huge RMS in [4.7e4, 5.8e4]", "fp16 max finite", "fp16 min subnormal", "bf16 max finite", "bf16 min subnormal", "bf16 min normal", "fp16 min normal")
	g := SlotCases(SlotCaseOptions{NonFinite: 2})
	for i := 0; i < n; i++ {
		sc := g.Example(i)
		in, err := sc.inputs()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			spec *ValueSpec
			x    []float32
		}{{sc.KSpec, in.k}, {sc.VSpec, in.v}} {
			c.hit(fmt.Sprintf("%s/%s", sc.Dtype, v.spec.Kind), true)
			if err := sc.Dtype.Representable(v.x); err != nil {
				t.Fatalf("%s: %v", v.spec, err)
			}
			if finite(v.x) != v.spec.Kind.Finite() {
				t.Fatalf("%s: finite values %v, kind finite %v", v.spec, finite(v.x), v.spec.Kind.Finite())
			}
			for _, x := range v.x {
				a := math.Abs(float64(x))
				c.hit(fmt.Sprintf("%s max finite", sc.Dtype), a == float64(sc.Dtype.MaxFinite()))
				c.hit(fmt.Sprintf("%s min subnormal", sc.Dtype), a == float64(sc.Dtype.MinSubnormal()))
				c.hit(fmt.Sprintf("%s min normal", sc.Dtype), a == float64(sc.Dtype.MinNormal()))
			}
			if v.spec.Kind == Huge && sc.Dtype == harness.F16 {
				var ss float64
				for _, x := range v.x {
					ss += float64(x) * float64(x)
				}
				rms := math.Sqrt(ss / float64(len(v.x)))
				c.hit("fp16 huge RMS in [4.7e4, 5.8e4]", rms >= 4.7e4 && rms <= 5.8e4)
			}
		}
		sv, err := oracle.AcceptSlot(in.f, in.k, in.v, oracleSlot(in), in.ks, in.vs)
		if err != nil {
			t.Fatal(err)
		}
		for _, gv := range sv.Groups {
			for _, h := range gv.Hazards {
				c.hit(fmt.Sprintf("%s hazard %s", sc.Dtype, h), true)
			}
		}
	}
	c.require(want...)
}

// oracleSlot is the oracle's slot of a case's inputs.
func oracleSlot(in *slotInputs) []byte {
	b, err := oracle.QuantizeSlot(in.f, in.k, in.v, in.ks, in.vs)
	if err != nil {
		panic(err)
	}
	return b
}

func TestBoundariesBatches(t *testing.T) {
	const n = 1500
	c := newCoverage(t, "Batches (default options)", n)
	g := Batches(BatchOptions{})
	for i := 0; i < n; i++ {
		b := g.Example(i)
		m, err := BuilderMaps(b)
		if err != nil {
			t.Fatalf("Batches drew an input the builder refuses: %v (%+v)", err, b)
		}
		dec, mtp, chunk := true, true, false
		for _, r := range b.Requests {
			dec = dec && r.QueryLen == 1
			mtp = mtp && r.QueryLen == b.Requests[0].QueryLen && r.QueryLen >= 2 && r.QueryLen <= 8
			chunk = chunk || r.QueryLen > 8
			c.hit("seq=2^17", r.SeqLen == MaxSeqLen)
			c.hit("last block exactly full", r.SeqLen > 0 && r.SeqLen%16 == 0)
			c.hit("q_len=128", r.QueryLen == 128)
		}
		c.hit("decode batch", dec)
		c.hit("MTP batch", mtp && len(b.Requests) > 1)
		c.hit("chunk in batch", chunk)
		c.hit("single request", len(b.Requests) == 1)
		c.hit("padding rows", b.NumTokens > b.QueryTokens())
		c.hit("no padding", b.NumTokens == b.QueryTokens())
		for i := range m.QToKlen {
			k := int(m.QToKlen[i])
			if int(m.QToReq[i]) >= len(b.Requests) {
				c.hit("padding klen=0", k == 0)
				continue
			}
			c.hitLength(k, 16, "")
		}
	}
	c.require(append(klenNames("k·bs-1 (k≥3)", "k·bs (k≥3)", "k·bs+1 (k≥3)")[1:], // klen 0 only for padding
		"padding klen=0", "seq=2^17", "last block exactly full", "q_len=128", "decode batch", "MTP batch", "chunk in batch",
		"single request", "padding rows", "no padding")...)
}

// TestBoundariesDecodeSpecs: the full decode-call generator (default options) reaches every
// boundary of the issue: klen edges per row (0 included), one token per split, more splits than
// tokens, the last block exactly full, both layouts, padded strides, shared prefixes, invalid ids
// inside klen, garbage past klen, every garbage kind, builder and wild maps with every mutation,
// every G, random and distinct K/V signs, sm_scale other than 1/16, both dtypes, every format.
func TestBoundariesDecodeSpecs(t *testing.T) {
	const n = 1200
	c := newCoverage(t, "DecodeSpecs (default options)", n)
	g := DecodeSpecs(DecodeOptions{})
	want := klenNames("k·bs-1 (k≥3)", "k·bs (k≥3)", "k·bs+1 (k≥3)", "one token per split", "more splits than tokens",
		"splits=1", "splits=1024", "last block exactly full", "LBHNC", "LBNHC", "padded strides", "shared prefix",
		"invalid id inside klen", "garbage past klen", "builder maps", "wild maps", "K≠V signs", "random K signs",
		"sm_scale≠1/16", "fp16", "bf16", "padding row", "huge seq (>2^16)")
	for _, gb := range []Garbage{GarbageRandom, GarbageFinite, GarbageStale, GarbageZero} {
		want = append(want, "garbage "+string(gb))
	}
	for _, w := range []string{WildInterleave, WildKlen, WildPadMiddle, WildNegativeReq, WildOutOfRange, WildSwapKlen} {
		want = append(want, "wild "+w)
	}
	for _, a := range oracle.AllowedGroups {
		want = append(want, fmt.Sprintf("G=%d", a))
	}
	for _, f := range oracle.AllFormats {
		want = append(want, f.String())
	}
	for i := 0; i < n; i++ {
		s := g.Example(i)
		kv := s.KVMax()
		bs := s.Cache.BlockSize
		for r := range s.Maps.QToReq {
			k := s.Klen(r)
			c.hitLength(k, bs, "")
			c.hit("padding row", k == 0)
		}
		c.hit("one token per split", kv > 0 && s.NumSplits == kv)
		c.hit("more splits than tokens", s.NumSplits > kv)
		c.hit("splits=1", s.NumSplits == 1)
		c.hit("splits=1024", s.NumSplits == 1024)
		for _, r := range s.Batch.Requests {
			c.hit("last block exactly full", r.SeqLen > 0 && r.SeqLen%bs == 0)
			c.hit("huge seq (>2^16)", r.SeqLen > 1<<16)
		}
		c.hit(string(s.Cache.Layout), true)
		c.hit("padded strides", s.Cache.Padded())
		shared := false
		for _, v := range s.Table.Shared {
			shared = shared || v > 0
		}
		c.hit("shared prefix", shared)
		c.hit("invalid id inside klen", s.Table.Invalid > 0)
		c.hit("garbage past klen", s.Table.Garbage > 0)
		c.hit("garbage "+string(s.Content.Garbage), true)
		c.hit("builder maps", len(s.Maps.Wild) == 0)
		c.hit("wild maps", len(s.Maps.Wild) > 0)
		for _, w := range s.Maps.Wild {
			c.hit("wild "+w, true)
		}
		c.hit(fmt.Sprintf("G=%d", s.Group), true)
		c.hit("K≠V signs", fmt.Sprint(s.Signs.K.Int32Words()) != fmt.Sprint(s.Signs.V.Int32Words()))
		c.hit("random K signs", !s.Signs.K.Default)
		c.hit("sm_scale≠1/16", s.SMScale != DefaultSMScale)
		c.hit(string(s.Dtype), true)
		f, _ := KernelFormat(s.Cache.Format)
		c.hit(f.ID.String(), true)
	}
	c.require(want...)
}

// TestBoundariesMergeCases: the merge property's smaller calls still reach the klen edges up to
// 129, block-size multiples ±1, one token per split, more splits than tokens, and all three
// geometry kinds with empty ranges and ranges past kv_max.
func TestBoundariesMergeCases(t *testing.T) {
	const n = 400
	c := newCoverage(t, "MergeCases", n)
	for i := 0; i < n; i++ {
		m := MergeCases().Example(i)
		s := m.Decode
		kv := s.KVMax()
		for r := range s.Maps.QToReq {
			c.hitLength(s.Klen(r), s.Cache.BlockSize, "")
		}
		c.hit("one token per split", kv > 0 && len(m.Geometry.Ranges) >= kv && m.Geometry.Kind == GeometryPortable)
		c.hit("more splits than tokens", len(m.Geometry.Ranges) > kv)
		c.hit("geometry "+m.Geometry.Kind, true)
		empty := false
		for _, r := range m.Geometry.Ranges {
			empty = empty || r.Hi == r.Lo
		}
		c.hit("empty range", empty)
		c.hit("range past kv_max", m.Geometry.Ranges[len(m.Geometry.Ranges)-1].Hi > kv)
		if err := oracle.Geometry(m.Geometry.Ranges).Validate(kv); err != nil {
			t.Fatalf("drew an invalid geometry: %v", err)
		}
	}
	c.require(append(klenNames("k·bs-1 (k≥3)", "k·bs (k≥3)", "k·bs+1 (k≥3)"), "one token per split", "more splits than tokens",
		"geometry portable", "geometry wmma", "geometry random", "empty range", "range past kv_max")...)
}

func TestBoundariesCachesAndTables(t *testing.T) {
	const n = 600
	c := newCoverage(t, "CacheShapes, BlockTables, SlotMappings, QueryMapCases", n)
	for i := 0; i < n; i++ {
		f := oracle.AllFormats[i%3]
		fm, _ := oracle.KernelFormat(f)
		sh := CacheShapes(fm.Name(), 3, 2, 16).Example(i)
		if _, err := sh.View(fm, make([]byte, sh.Bytes(fm))); err != nil {
			t.Fatalf("CacheShapes drew an invalid shape: %v", err)
		}
		c.hit("cache "+string(sh.Layout), true)
		c.hit("pad token", sh.PadToken > 0)
		c.hit("pad head", sh.PadHead > 0)
		c.hit("pad block", sh.PadBlock > 0)
		bt := BlockTables([]int{40, 33, 0, 17}, 16).Example(i)
		shared := false
		for _, v := range bt.Shared {
			shared = shared || v > 0
		}
		c.hit("table shared prefix", shared)
		c.hit("table invalid id", bt.Invalid > 0)
		c.hit("table garbage", bt.Garbage > 0)
		m := SlotMappings(10, 64).Example(i)
		seen := map[int64]bool{}
		skip := 0
		for _, s := range m {
			if s < 0 {
				skip++
				continue
			}
			if seen[s] || s >= 64 {
				t.Fatalf("SlotMappings gave a repeated or out-of-range slot: %v", m)
			}
			seen[s] = true
		}
		c.hit("slot_mapping -1", skip > 0)
		c.hit("slot_mapping -1 first", m[0] < 0)
		c.hit("slot_mapping -1 last", m[len(m)-1] < 0)
		q := QueryMapCases().Example(i)
		c.hit("querymap valid", q.Broken == "")
		if q.Broken != "" {
			c.hit("querymap "+q.Broken, true)
		}
	}
	want := []string{"cache LBHNC", "cache LBNHC", "pad token", "pad head", "pad block", "table shared prefix", "table invalid id",
		"table garbage", "slot_mapping -1", "slot_mapping -1 first", "slot_mapping -1 last", "querymap valid"}
	for _, b := range queryMapBreaks {
		want = append(want, "querymap "+b)
	}
	c.require(want...)
}

// TestBoundariesGPUDecodeCases: FuzzDecode's calls are mostly small (≤ 1024 tokens in all, so
// that the target runs hundreds of cases a second) but the large class appears in a few
// percent of them and reaches 4096-token requests and 8192-token batches' limits, and the small
// class still reaches every klen edge, one token per split, more splits than tokens and padding
// rows.
func TestBoundariesGPUDecodeCases(t *testing.T) {
	const n = 3000
	c := newCoverage(t, "GPUDecodeCases", n)
	g := GPUDecodeCases(GPUDecodeOptions())
	large, longest := 0, 0
	for i := 0; i < n; i++ {
		s := g.Example(i).Spec
		total := 0
		for _, r := range s.Batch.Requests {
			total += r.SeqLen
			longest = max(longest, r.SeqLen)
		}
		isLarge := total > gpuDecodeSmallOptions.Batch.MaxTotalSeq || s.Cache.NumKVHeads > gpuDecodeSmallOptions.MaxKVHeads
		if isLarge {
			large++
			continue
		}
		kv := s.KVMax()
		for r := range s.Maps.QToReq {
			k := s.Klen(r)
			c.hitLength(k, s.Cache.BlockSize, "")
			c.hit("padding row", k == 0)
		}
		c.hit("one token per split", kv > 0 && s.NumSplits == kv)
		c.hit("more splits than tokens", s.NumSplits > kv)
	}
	c.require(klenNames("one token per split", "more splits than tokens", "padding row")...)
	// The large class is drawn when size_class hits its maximum (63): about 3% of rapid.Check's
	// draws, about 10% of Example's (rapid biases its draws differently there); some large
	// draws are no larger than a small one, so the count here is a lower bound of the share.
	if f := float64(large) / n; f < 0.01 || f > 0.15 {
		t.Errorf("%d of %d cases recognisably large (%.1f%%): expected 1%%..15%%", large, n, 100*f)
	}
	if longest < GPUDecodeOptions().Batch.MaxSeqLen-1 {
		t.Errorf("longest request %d tokens: expected the large class to reach %d", longest, GPUDecodeOptions().Batch.MaxSeqLen)
	}
	t.Logf("%d of %d cases large, longest request %d tokens", large, n, longest)
}
