package cases

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/oracle"
)

// The checks below are what a reproducer's case must satisfy before its call is built: every field
// in the range docs/contract.md and docs/format.md give it, and every size within what a replay
// can build on one machine. The ranges admit everything the generators draw (with room for
// hand-written cases) and refuse what would panic, divide by zero, or build something other than
// the call the case describes.

// Bounds of a reproducer's sizes (the generators stay far inside them).
const (
	// maxBlockSize bounds tokens per block: the ABI takes any block_size ≥ 1 (docs/kernels.md,
	// "any block_size ≥ 1"); the generators draw 1..128.
	maxBlockSize = 1024
	// maxKVHeads bounds KV heads (the generators draw 1..4).
	maxKVHeads = 64
	// maxPrefillGroup bounds a prefill's GQA group (any positive integer in the contract; the
	// generators draw docs/contract.md §3.3's decode groups).
	maxPrefillGroup = 16
	// maxRequests bounds requests (sequences) per call.
	maxRequests = 1024
	// maxTokens bounds token rows (query rows, store rows, rotate rows).
	maxTokens = 1 << 16
	// maxSeqLen bounds a request's seq_len (the generators draw up to MaxSeqLen = 2^17).
	maxSeqLen = 1 << 20
	// maxTableEntries bounds a block table's num_reqs · max_blocks.
	maxTableEntries = 1 << 20
	// maxCacheBytes bounds a cache's bytes (the longest generated call needs about 30 MB).
	maxCacheBytes = 256 << 20
	// maxElements bounds any activation or partials tensor (elements).
	maxElements = 1 << 26
	// maxAttentionCost bounds Σ_rows klen·(Hkv + Hq), what the oracle's exact attention and each
	// tier's model cost (the longest generated decode costs 2.6e6).
	maxAttentionCost = 1 << 26
	// maxPad bounds the bytes or elements of padding between slots, runs, blocks and rows.
	maxPad = 4096
	// maxPartialStride bounds a partials row stride (floats).
	maxPartialStride = 4096
	// maxLog2Scale bounds a per-head scale shift (log2; the generators draw within ±8).
	maxLog2Scale = 64
	// maxListLen bounds short lists (value kinds, reduce patterns, wild-map mutations, flips).
	maxListLen = 4096
)

// FieldError is a field of a reproducer out of its range: the field's path from the reproducer's
// top level ("case.spec.cache.block_size"), its value and what was expected.
type FieldError struct {
	Field   string
	Problem string // " = 0, expected 1..1024", " has 3 entries, expected 8"
}

func (e *FieldError) Error() string { return e.Field + e.Problem }

// under puts err's field below parent ("spec" + "cache.block_size").
func under(parent string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		sep := "."
		if strings.HasPrefix(fe.Field, "[") {
			sep = ""
		}
		return &FieldError{Field: parent + sep + fe.Field, Problem: fe.Problem}
	}
	return fmt.Errorf("%s: %w", parent, err)
}

// show is a value as it reads in JSON: strings quoted.
func show(v any) string {
	if r := reflect.ValueOf(v); r.Kind() == reflect.String {
		return fmt.Sprintf("%q", r.String())
	}
	return fmt.Sprint(v)
}

func badValue(field string, v any, expected string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(" = %s, expected %s", show(v), fmt.Sprintf(expected, args...))}
}

func badLen(field string, n int, expected string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(" has %d entries, expected %s", n, fmt.Sprintf(expected, args...))}
}

func missing(field, what string) error {
	return &FieldError{Field: field, Problem: " is missing, expected " + what}
}

// intIn checks lo ≤ v ≤ hi.
func intIn(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return badValue(field, v, "%d..%d", lo, hi)
	}
	return nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// oneOf checks that v is one of set.
func oneOf[T comparable](field string, v T, set []T) error {
	for _, s := range set {
		if v == s {
			return nil
		}
	}
	names := make([]string, len(set))
	for i, s := range set {
		names[i] = fmt.Sprint(s)
	}
	return badValue(field, v, "one of %s", strings.Join(names, ", "))
}

func formatNames() []string {
	var n []string
	for _, id := range oracle.AllFormats {
		f, _ := oracle.KernelFormat(id)
		n = append(n, f.Name())
	}
	return n
}

func validateFormat(field, name string) (oracle.Format, error) {
	f, err := KernelFormat(name)
	if err != nil {
		return f, oneOf(field, name, formatNames())
	}
	return f, nil
}

func validateDtype(field string, dt harness.Dtype) error {
	if !dt.Valid() {
		return oneOf(field, string(dt), []string{string(harness.F16), string(harness.BF16)})
	}
	return nil
}

func validateKinds(field string, kinds []ValueKind) error {
	if len(kinds) > maxListLen {
		return badLen(field, len(kinds), "at most %d", maxListLen)
	}
	all := append(append([]ValueKind(nil), FiniteKinds...), NonFiniteKinds...)
	for i, k := range kinds {
		if err := oneOf(fmt.Sprintf("%s[%d]", field, i), k, all); err != nil {
			return err
		}
	}
	return nil
}

// validateLog2Scales checks per-head scale shifts: at most heads of them, each finite within
// ±maxLog2Scale.
func validateLog2Scales(field string, s []float64, heads int) error {
	if len(s) > heads {
		return badLen(field, len(s), "at most %d (one per head)", heads)
	}
	for i, x := range s {
		if math.IsNaN(x) || math.Abs(x) > maxLog2Scale {
			return badValue(fmt.Sprintf("%s[%d]", field, i), x, "a finite value in -%d..%d", maxLog2Scale, maxLog2Scale)
		}
	}
	return nil
}

func validateSMScale(field string, s float64) error {
	if !(s > 0) || math.IsInf(s, 0) {
		return badValue(field, s, "a finite value > 0 (docs/contract.md §3.3)")
	}
	return nil
}

func validateDigest(field, d string) error {
	if d == "" {
		return nil
	}
	if b, err := hex.DecodeString(d); err != nil || len(b) != 32 {
		return badValue(field, d, "64 hex digits (a SHA-256)")
	}
	return nil
}

// Validate checks a sign pattern: the default, or 8 words (256 dims, docs/contract.md §1).
func (s SignSpec) Validate() error {
	if s.Default && len(s.Words) > 0 {
		return badValue("default", true, "default or words, not both")
	}
	if len(s.Words) > 0 && len(s.Words) != 8 {
		return badLen("words", len(s.Words), "8 (256 sign bits)")
	}
	return nil
}

// Validate checks both patterns.
func (p SignPair) Validate() error {
	return firstErr(under("k", p.K.Validate()), under("v", p.V.Validate()))
}

// validate checks a cache shape: a kernel format, 1..2^20 blocks, 1..maxKVHeads heads,
// 1..maxBlockSize tokens per block, a layout, pads that keep slots aligned (docs/contract.md §1), and
// at most maxCacheBytes in all.
func (c CacheShape) validate() (oracle.Format, error) {
	f, err := validateFormat("format", c.Format)
	if err != nil {
		return f, err
	}
	align := 8
	if f.Compact() {
		align = 4
	}
	err = firstErr(
		intIn("num_blocks", c.NumBlocks, 1, 1<<20),
		intIn("num_kv_heads", c.NumKVHeads, 1, maxKVHeads),
		intIn("block_size", c.BlockSize, 1, maxBlockSize),
		oneOf("layout", c.Layout, []Layout{LBHNC, LBNHC}))
	if err != nil {
		return f, err
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"pad_token", c.PadToken}, {"pad_head", c.PadHead}, {"pad_block", c.PadBlock}} {
		if p.v < 0 || p.v > maxPad || p.v%align != 0 {
			return f, badValue(p.name, p.v, "a multiple of %d bytes in 0..%d (slots stay %d-byte aligned)", align, maxPad, align)
		}
	}
	if n := c.Bytes(f); n > maxCacheBytes {
		return f, &FieldError{Field: "num_blocks", Problem: fmt.Sprintf(" = %d: a cache of %d bytes, expected at most %d", c.NumBlocks, n, maxCacheBytes)}
	}
	return f, nil
}

var garbageKinds = []Garbage{GarbageRandom, GarbageFinite, GarbageStale, GarbageZero}

func (c CacheContent) validate(hkv int) error {
	return firstErr(
		validateDtype("dtype", c.Dtype),
		validateKinds("kinds", c.Kinds),
		validateLog2Scales("head_log2_scale", c.HeadLog2Scale, hkv),
		oneOf("garbage", c.Garbage, garbageKinds))
}

// validate checks a batch: 0..maxRequests requests of q_len 0..maxTokens and seq_len
// 0..maxSeqLen, and num_tokens from their query tokens to maxTokens.
func (b Batch) validate() error {
	if len(b.Requests) > maxRequests {
		return badLen("requests", len(b.Requests), "at most %d", maxRequests)
	}
	q := 0
	for i, r := range b.Requests {
		f := fmt.Sprintf("requests[%d].", i)
		if err := firstErr(intIn(f+"q_len", r.QueryLen, 0, maxTokens), intIn(f+"seq_len", r.SeqLen, 0, maxSeqLen)); err != nil {
			return err
		}
		q += r.QueryLen
	}
	if b.NumTokens < q || b.NumTokens > maxTokens {
		return badValue("num_tokens", b.NumTokens, "%d..%d (the requests' %d query tokens, then padding rows)", q, maxTokens, q)
	}
	return nil
}

// validate checks a block table against its requests and cache: one row of max_blocks entries per
// request (any id: invalid ids are part of the contract), num_blocks the cache's.
func (t BlockTable) validate(reqs, numBlocks int) error {
	if t.NumReqs != reqs {
		return badValue("num_reqs", t.NumReqs, "%d (the batch's requests)", reqs)
	}
	if t.MaxBlocks < 0 || (reqs > 0 && t.MaxBlocks > maxTableEntries/reqs) {
		return badValue("max_blocks", t.MaxBlocks, "0..%d (at most %d entries in all)", maxTableEntries/max(reqs, 1), maxTableEntries)
	}
	if len(t.Table) != t.NumReqs*t.MaxBlocks {
		return badLen("table", len(t.Table), "num_reqs %d × max_blocks %d = %d", t.NumReqs, t.MaxBlocks, t.NumReqs*t.MaxBlocks)
	}
	if t.NumBlocks != numBlocks {
		return badValue("num_blocks", t.NumBlocks, "%d (the cache's num_blocks)", numBlocks)
	}
	if len(t.Shared) != 0 && len(t.Shared) != reqs {
		return badLen("shared", len(t.Shared), "0 or %d (one per request)", reqs)
	}
	for i, s := range t.Shared {
		if err := intIn(fmt.Sprintf("shared[%d]", i), s, 0, t.MaxBlocks); err != nil {
			return err
		}
	}
	// invalid and garbage count what the generator did (an entry may be counted twice).
	return firstErr(intIn("invalid", t.Invalid, 0, maxTableEntries), intIn("garbage", t.Garbage, 0, maxTableEntries))
}

var wildMutations = []string{WildInterleave, WildKlen, WildPadMiddle, WildNegativeReq, WildOutOfRange, WildSwapKlen}

// validate checks query maps: one q_to_req and one q_to_klen entry per row (any values: wild maps
// are part of the contract, docs/contract.md §4), and known mutation names.
func (m QueryMaps) validate(rows int) error {
	if len(m.QToReq) != rows {
		return badLen("q_to_req", len(m.QToReq), "%d (batch.num_tokens)", rows)
	}
	if len(m.QToKlen) != rows {
		return badLen("q_to_klen", len(m.QToKlen), "%d (batch.num_tokens)", rows)
	}
	if len(m.Wild) > maxListLen {
		return badLen("wild", len(m.Wild), "at most %d", maxListLen)
	}
	for i, w := range m.Wild {
		if err := oneOf(fmt.Sprintf("wild[%d]", i), w, wildMutations); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a decode recipe (docs/contract.md §3.3): dtype, a decode GQA group, the cache, its
// content, the batch, maps and block table that agree with each other, signs, sm_scale, 1..1024
// splits, the query's recipe, and a cost the oracle can evaluate.
func (s *DecodeSpec) Validate() error {
	err := firstErr(validateDtype("dtype", s.Dtype), oneOf("group", s.Group, oracle.AllowedGroups))
	if err != nil {
		return err
	}
	if _, err := s.Cache.validate(); err != nil {
		return under("cache", err)
	}
	hkv := s.Cache.NumKVHeads
	err = firstErr(
		under("content", s.Content.validate(hkv)),
		under("batch", s.Batch.validate()),
		under("block_table", s.Table.validate(len(s.Batch.Requests), s.Cache.NumBlocks)),
		under("maps", s.Maps.validate(s.Batch.NumTokens)),
		under("signs", s.Signs.Validate()),
		validateSMScale("sm_scale", s.SMScale),
		intIn("num_splits", s.NumSplits, 1, oracle.MaxSplits),
		under("query", validateKinds("kinds", s.Query.Kinds)),
		under("query", validateLog2Scales("head_log2_scale", s.Query.HeadLog2Scale, s.NumQHeads())))
	if err != nil {
		return err
	}
	if n := s.Batch.NumTokens * s.NumQHeads() * oracle.KernelHeadSize; n > maxElements {
		return badValue("batch.num_tokens", s.Batch.NumTokens, "a query of at most %d elements (%d rows × %d heads × 256 = %d)", maxElements, s.Batch.NumTokens, s.NumQHeads(), n)
	}
	if c := MergeCost(s); c > maxAttentionCost {
		return &FieldError{Field: "maps.q_to_klen", Problem: fmt.Sprintf(": Σ_rows klen·(Hkv + Hq) = %d, expected at most %d (what the oracle evaluates in a replay)", c, maxAttentionCost)}
	}
	return nil
}

// Validate checks a decode call of FuzzDecode: its spec and the launch parameters (query group
// 1..4, partials stride a multiple of 4 floats ≥ 258 or 0, docs/contract.md §3.4), and a workspace of at
// most maxElements floats.
func (c *GPUDecodeCase) Validate() error {
	if c.Spec == nil {
		return missing("spec", "a decode recipe")
	}
	if err := under("spec", c.Spec.Validate()); err != nil {
		return err
	}
	err := firstErr(
		intIn("query_group", c.QueryGroup, 1, 4),
		validateStride("partial_stride", c.PartialStride),
		intIn("query_pad_heads", c.QueryPadHeads, 0, maxPad),
		intIn("out_pad", c.OutPad, 0, maxPad),
		intIn("tail_log2_scale", c.TailLog2Scale, -maxLog2Scale, maxLog2Scale),
		validateDigest("digest", c.Digest))
	if err != nil {
		return err
	}
	rows, hq := c.Spec.Batch.NumTokens, c.Spec.NumQHeads()
	if n := rows * max((hq+c.QueryPadHeads)*oracle.KernelHeadSize, hq*oracle.KernelHeadSize+c.OutPad); n > maxElements {
		return badValue("query_pad_heads", c.QueryPadHeads, "a query and an output of at most %d elements each (%d rows, %d heads, out_pad %d: %d)", maxElements, rows, hq, c.OutPad, n)
	}
	if n := c.Spec.Batch.NumTokens * c.Spec.NumQHeads() * c.Spec.NumSplits * c.pstride(); n > maxElements {
		return badValue("spec.num_splits", c.Spec.NumSplits, "a partials workspace of at most %d floats (rows × Hq × splits × stride = %d)", maxElements, n)
	}
	return nil
}

// validateStride checks a partials row stride: 0 (the default) or a multiple of 4 floats ≥ 258
// (docs/contract.md §3.4).
func validateStride(field string, p int) error {
	if p != 0 && (p < 260 || p > maxPartialStride || p%4 != 0) {
		return badValue(field, p, "0 or a multiple of 4 in 260..%d (floats per partials row, at least 258)", maxPartialStride)
	}
	return nil
}

// Validate checks a store call (docs/contract.md §3.1): dtype, cache, signs, value kinds, and a slot mapping
// of at most rows entries, each −1 (or any negative: skip) or a slot of the cache, none twice.
func (c *GPUStoreCase) Validate() error {
	if err := validateDtype("dtype", c.Dtype); err != nil {
		return err
	}
	if _, err := c.Cache.validate(); err != nil {
		return under("cache", err)
	}
	hkv := c.Cache.NumKVHeads
	err := firstErr(
		under("signs", c.Signs.Validate()),
		validateKinds("kinds", c.Kinds),
		intIn("rows", c.Rows, 0, maxTokens),
		intIn("fused_q_heads", c.FusedQHeads, 0, maxPad))
	if err != nil {
		return err
	}
	if len(c.Mapping) > c.Rows {
		return badValue("rows", c.Rows, "at least len(slot_mapping) = %d (docs/contract.md §3.1: n ≤ T)", len(c.Mapping))
	}
	if n := c.Rows * (c.FusedQHeads + 2*hkv) * oracle.KernelHeadSize; n > maxElements {
		return badValue("rows", c.Rows, "K and V of at most %d elements (found %d)", maxElements, n)
	}
	slots := int64(c.Cache.NumBlocks) * int64(c.Cache.BlockSize)
	seen := make(map[int64]int, len(c.Mapping))
	for i, s := range c.Mapping {
		f := fmt.Sprintf("slot_mapping[%d]", i)
		if s >= slots {
			return badValue(f, s, "-1 or a slot in 0..%d (num_blocks %d × block_size %d)", slots-1, c.Cache.NumBlocks, c.Cache.BlockSize)
		}
		if s < 0 {
			continue
		}
		if j, ok := seen[s]; ok {
			return badValue(f, s, "a slot no other entry names (slot_mapping[%d] names it too; docs/contract.md §3.1)", j)
		}
		seen[s] = i
	}
	return nil
}

// Validate checks a rotate call (docs/contract.md §3.2): dtype, 0..maxTokens rows of
// 1..maxKVHeads·16 heads, gaps, signs and value kinds.
func (c *GPURotateCase) Validate() error {
	err := firstErr(
		validateDtype("dtype", c.Dtype),
		intIn("rows", c.Rows, 0, maxTokens),
		intIn("heads", c.Heads, 1, 16*maxKVHeads),
		intIn("head_gap", c.HeadGap, 0, maxPad),
		intIn("row_gap", c.RowGap, 0, maxPad),
		under("signs", c.Signs.Validate()),
		validateKinds("kinds", c.Kinds))
	if err != nil {
		return err
	}
	if n := c.Rows * (c.Heads*(256+c.HeadGap) + c.RowGap); n > maxElements {
		return badValue("rows", c.Rows, "a tensor of at most %d elements (found %d)", maxElements, n)
	}
	return nil
}

// Validate checks a reduce call (docs/contract.md §3.4): dtype, rows, heads, 1..1024 splits, stride,
// V signs, row patterns, output gap, and partials of at most maxElements floats.
func (c *GPUReduceCase) Validate() error {
	err := firstErr(
		validateDtype("dtype", c.Dtype),
		intIn("num_q", c.NumQ, 0, maxTokens),
		intIn("heads", c.Heads, 1, 16*maxKVHeads),
		intIn("splits", c.Splits, 1, oracle.MaxSplits),
		validateStride("partial_stride", c.PartialStride),
		under("v_signs", c.VSigns.Validate()),
		intIn("out_pad", c.OutPad, 0, maxPad))
	if err != nil {
		return err
	}
	if len(c.Patterns) > maxListLen {
		return badLen("patterns", len(c.Patterns), "at most %d", maxListLen)
	}
	for i, p := range c.Patterns {
		if err := oneOf(fmt.Sprintf("patterns[%d]", i), p, reducePatterns); err != nil {
			return err
		}
	}
	if n := c.NumQ * (c.Heads*oracle.KernelHeadSize + c.OutPad); n > maxElements {
		return badValue("out_pad", c.OutPad, "an output of at most %d elements (found %d)", maxElements, n)
	}
	if n := c.NumQ * c.Heads * c.Splits * c.pstride(); n > maxElements {
		return badValue("splits", c.Splits, "partials of at most %d floats (num_q × heads × splits × stride = %d)", maxElements, n)
	}
	return nil
}

// Validate checks a prefill call (docs/contract.md §3.5): dtype, a GQA group, the cache, its content,
// the batch and a block table that agree, signs, sm_scale, value kinds, output gap, clamped
// columns, 0..64 splits, and a cost the oracle can evaluate.
func (c *GPUPrefillCase) Validate() error {
	err := firstErr(validateDtype("dtype", c.Dtype), intIn("group", c.Group, 1, maxPrefillGroup))
	if err != nil {
		return err
	}
	if _, err := c.Cache.validate(); err != nil {
		return under("cache", err)
	}
	hkv := c.Cache.NumKVHeads
	err = firstErr(
		under("content", c.Content.validate(hkv)),
		under("batch", c.Batch.validate()),
		under("block_table", c.Table.validate(len(c.Batch.Requests), c.Cache.NumBlocks)),
		under("signs", c.Signs.Validate()),
		validateSMScale("sm_scale", c.SMScale),
		validateKinds("kinds", c.Kinds),
		intIn("out_pad", c.OutPad, 0, maxPad),
		intIn("clamp_blocks", c.ClampBlocks, 0, max(c.Table.MaxBlocks, 0)),
		intIn("num_splits", c.Splits, 0, 64))
	if err != nil {
		return err
	}
	hq := c.Group * hkv
	if n := c.Batch.NumTokens * ((hq+2*hkv)*oracle.KernelHeadSize + c.OutPad); n > maxElements {
		return badValue("batch.num_tokens", c.Batch.NumTokens, "q, k, v and the output of at most %d elements (found %d)", maxElements, n)
	}
	cost := 0
	for _, r := range c.Batch.Requests {
		cost += r.QueryLen * (r.SeqLen + r.QueryLen) * (hkv + hq)
		if cost > maxAttentionCost {
			return &FieldError{Field: "batch.requests", Problem: fmt.Sprintf(": Σ q_len·(seq_len + q_len)·(Hkv + Hq) over %d, expected at most %d (what the oracle evaluates in a replay)", cost, maxAttentionCost)}
		}
	}
	return nil
}

// Validate checks a must-not-matter case: exactly one recipe, valid, and a non-empty set of its
// op's regions.
func (m *MustNotMatterCase) Validate() error {
	var set []string
	var err error
	var regions Region
	if m.Decode != nil {
		set, err, regions = append(set, "decode"), under("decode", m.Decode.Validate()), DecodeRegions
	}
	if m.Prefill != nil {
		set, err, regions = append(set, "prefill"), firstErr(err, under("prefill", m.Prefill.Validate())), PrefillRegions
	}
	if m.Reduce != nil {
		set, err, regions = append(set, "reduce"), firstErr(err, under("reduce", m.Reduce.Validate())), ReduceRegions
	}
	if m.Store != nil {
		set, err, regions = append(set, "store"), firstErr(err, under("store", m.Store.Validate())), StoreRegions
	}
	if len(set) != 1 {
		return fmt.Errorf("%d recipes (%s), expected exactly one of decode, prefill, store, reduce", len(set), strings.Join(set, ", "))
	}
	if err != nil {
		return err
	}
	if m.Regions == 0 || m.Regions&^regions != 0 {
		return &FieldError{Field: "regions", Problem: fmt.Sprintf(" = %d (%s), expected a subset of %s (%d)", uint(m.Regions), m.Regions, regions, uint(regions))}
	}
	return nil
}

// Validate checks an isolation case: its decode recipe (GPUDecodeCase.Validate) and one cut per
// request of it, each a position in 0..max_blocks·block_size (the most tokens a row of the call
// can attend: a cut there poisons nothing). The poison seed takes any value.
func (m *IsolationCase) Validate() error {
	if m.Decode == nil {
		return missing("decode", "a decode recipe")
	}
	if err := under("decode", m.Decode.Validate()); err != nil {
		return err
	}
	s := m.Decode.Spec
	reqs := len(s.Batch.Requests)
	if len(m.Cuts) != reqs {
		return badLen("cuts", len(m.Cuts), "%d (one per request of decode.spec.batch.requests)", reqs)
	}
	span := s.Table.MaxBlocks * s.Cache.BlockSize
	for r, c := range m.Cuts {
		if c < 0 || c > span {
			return badValue(fmt.Sprintf("cuts[%d]", r), c, "a position in 0..%d (max_blocks %d × block_size %d: a row attends at most that many tokens)", span, s.Table.MaxBlocks, s.Cache.BlockSize)
		}
	}
	return nil
}

// Validate checks a slot case: format, dtype, K and V of 256 values each (validated by inputs),
// signs, recipes of known kinds, and bit flips inside the slot.
func (c *SlotCase) Validate() error {
	f, err := validateFormat("format", c.Format)
	if err != nil {
		return err
	}
	if err := firstErr(validateDtype("dtype", c.Dtype), under("signs", c.Signs.Validate())); err != nil {
		return err
	}
	for _, s := range []struct {
		name string
		v    string
		spec *ValueSpec
	}{{"k", c.K, c.KSpec}, {"v", c.V, c.VSpec}} {
		if _, err := DecodeValues(c.Dtype, s.v); err != nil || len(s.v) != 4*f.HeadSize {
			return &FieldError{Field: s.name, Problem: fmt.Sprintf(": %d characters, expected %d hex digits (%d values, 4 digits each)", len(s.v), 4*f.HeadSize, f.HeadSize)}
		}
		if s.spec == nil {
			continue
		}
		if err := oneOf(s.name+"_spec.kind", s.spec.Kind, append(append([]ValueKind(nil), FiniteKinds...), NonFiniteKinds...)); err != nil {
			return err
		}
		if s.spec.Dtype != "" {
			if err := validateDtype(s.name+"_spec.dtype", s.spec.Dtype); err != nil {
				return err
			}
		}
	}
	if len(c.Flips) > maxListLen {
		return badLen("flips", len(c.Flips), "at most %d", maxListLen)
	}
	for i, fl := range c.Flips {
		p := fmt.Sprintf("flips[%d].", i)
		if err := firstErr(intIn(p+"byte", fl.Byte, 0, f.SlotBytes()-1), intIn(p+"bit", fl.Bit, 0, 7)); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a query-map case: any values (the property asks the builder to refuse broken
// ones), sizes the brute-force reading can afford, and a known way of breaking.
func (c *QueryMapCase) Validate() error {
	err := firstErr(
		intIn("num_tokens", c.NumTokens, -maxTokens, maxTokens),
		func() error {
			if c.Broken == "" {
				return nil
			}
			return oneOf("broken", c.Broken, queryMapBreaks)
		}())
	if err != nil {
		return err
	}
	if len(c.SeqLens) > maxRequests {
		return badLen("seq_lens", len(c.SeqLens), "at most %d", maxRequests)
	}
	if len(c.QSL) > maxRequests+1 {
		return badLen("qsl", len(c.QSL), "at most %d", maxRequests+1)
	}
	return nil
}

var geometryKinds = []string{GeometryPortable, GeometryWMMA, GeometryRandom}

// Validate checks a merge case: its decode recipe, a geometry of 1..1024 contiguous ranges from 0
// covering kv_max (oracle.Geometry.Validate), a partials stride of 258..maxPartialStride floats (0:
// the default), and partials of at most maxElements floats.
func (c *MergeCase) Validate() error {
	if c.Decode == nil {
		return missing("decode", "a decode recipe")
	}
	if err := under("decode", c.Decode.Validate()); err != nil {
		return err
	}
	g := c.Geometry
	err := firstErr(
		under("geometry", oneOf("kind", g.Kind, geometryKinds)),
		under("geometry", intIn("splits", g.Splits, 1, oracle.MaxSplits)),
		validateDigest("digest", c.Digest))
	if err != nil {
		return err
	}
	if len(g.Ranges) < 1 || len(g.Ranges) > oracle.MaxSplits {
		return badLen("geometry.ranges", len(g.Ranges), "1..%d", oracle.MaxSplits)
	}
	if err := oracle.Geometry(g.Ranges).Validate(c.Decode.KVMax()); err != nil {
		return &FieldError{Field: "geometry.ranges", Problem: ": " + err.Error()}
	}
	if c.Stride != 0 && (c.Stride < 258 || c.Stride > maxPartialStride) {
		return badValue("stride", c.Stride, "0 or 258..%d (floats per partials row)", maxPartialStride)
	}
	stride := c.Stride
	if stride == 0 {
		stride = oracle.DefaultPartialStride
	}
	if n := c.Decode.Batch.NumTokens * c.Decode.NumQHeads() * len(g.Ranges) * stride; n > maxElements {
		return badLen("geometry.ranges", len(g.Ranges), "partials of at most %d floats (rows × Hq × ranges × stride = %d)", maxElements, n)
	}
	return nil
}

// validateRecipe decodes a GPU property's case strictly into its recipe type and validates it.
func validateRecipe(prop string, raw []byte) error {
	var v interface{ Validate() error }
	switch prop {
	case PropNameGPUStore:
		v = &GPUStoreCase{}
	case PropNameGPURotate:
		v = &GPURotateCase{}
	case PropNameGPUDecode:
		v = &GPUDecodeCase{}
	case PropNameGPUReduce:
		v = &GPUReduceCase{}
	case PropNameGPUPrefill:
		v = &GPUPrefillCase{}
	case PropNameMNMDecode, PropNameMNMPrefill, PropNameMNMStore, PropNameMNMReduce:
		v = &MustNotMatterCase{}
	case PropNameIsoDecode:
		v = &IsolationCase{}
	default:
		return fmt.Errorf("property %s: no reader of its case", prop)
	}
	if err := DecodeCase(raw, v); err != nil {
		return err
	}
	return v.Validate()
}
