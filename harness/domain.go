package harness

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// Class is an input class of the contract that an implementation may declare it does not handle
// (Declaration.Excludes): the hostile or out-of-range inputs of docs/contract.md, and the layouts
// a serving engine may never pass. A call's classes are computed from the call itself (Classes),
// so that every judge (grids, fuzz targets, conform, replay) puts a call in the same classes.
type Class string

// The input classes (docs/adapters.md, "Input classes", defines each).
const (
	InvalidBlockIDs      Class = "invalid-block-ids"
	SlotOutOfRange       Class = "slot-out-of-range"
	DuplicateSlots       Class = "duplicate-slots"
	CustomSigns          Class = "custom-signs"
	LBNHCLayout          Class = "lbnhc-layout"
	PaddedCacheStrides   Class = "padded-cache-strides"
	StridedViews         Class = "strided-views"
	OutOfRangeRequests   Class = "out-of-range-requests"
	KlenClamped          Class = "klen-clamped"
	PrefillCtxClamped    Class = "prefill-ctx-clamped"
	RowsOutsideSequences Class = "rows-outside-sequences"
)

// ClassInfo is one input class: the ops whose calls can fall in it and its definition.
type ClassInfo struct {
	Class      Class
	Ops        []arch.Op
	Definition string
}

// Classes is the vocabulary of Declaration.Excludes, in the order reports list them.
var Classes = []ClassInfo{
	{InvalidBlockIDs, []arch.Op{arch.Decode, arch.Prefill},
		"a block-table entry outside [0, num_blocks) that the call reads: decode, among the first ⌈klen/block_size⌉ entries of a row's request; prefill, among the first ⌈ctx/block_size⌉ entries of a sequence (the contract: those tokens contribute nothing, the op reads nothing outside the cache)"},
	{SlotOutOfRange, []arch.Op{arch.Store},
		"a slot_mapping entry ≥ num_blocks·block_size (the contract: an error before anything is written)"},
	{DuplicateSlots, []arch.Op{arch.Store},
		"two tokens of one call mapped to the same slot (the contract: an error before anything is written)"},
	{CustomSigns, []arch.Op{arch.Store, arch.Rotate, arch.Decode, arch.Reduce},
		"k_signs or v_signs other than the default pattern (docs/format.md §2): any pattern is an input, and K and V may differ"},
	{LBNHCLayout, []arch.Op{arch.Store, arch.Decode, arch.Prefill},
		"a cache whose head stride is smaller than its token stride (heads innermost, LBNHC), with more than one KV head and more than one token per block"},
	{PaddedCacheStrides, []arch.Op{arch.Store, arch.Decode, arch.Prefill},
		"cache strides larger than the dense layout of their order: gaps between slots, heads or blocks"},
	{StridedViews, []arch.Op{arch.Store, arch.Rotate, arch.Decode, arch.Reduce, arch.Prefill},
		"activations that are views with gaps: q, k, v inside a fused QKV tensor (decode's padded query heads, store's and prefill's fused views), output rows with a gap after them, rotate's head and row gaps"},
	{OutOfRangeRequests, []arch.Op{arch.Decode},
		"a q_to_req entry outside [0, num_reqs) (the contract: the row is padding, exactly zero, and reads nothing)"},
	{KlenClamped, []arch.Op{arch.Decode},
		"a row of a valid request whose q_to_klen exceeds max_blocks·block_size (the contract: clamped to it)"},
	{PrefillCtxClamped, []arch.Op{arch.Prefill},
		"a sequence whose seq_len − qlen lies outside [0, max_blocks·block_size] (the contract: its prefix clamped to that range)"},
	{RowsOutsideSequences, []arch.Op{arch.Prefill},
		"token rows past cu_seqlens_q[num_seqs], in no sequence (the contract: their output rows are left untouched)"},
}

// classInfo looks c up in Classes.
func classInfo(c Class) (ClassInfo, bool) {
	i := slices.IndexFunc(Classes, func(x ClassInfo) bool { return x.Class == c })
	if i < 0 {
		return ClassInfo{}, false
	}
	return Classes[i], true
}

// ClassNames lists the vocabulary's names.
func ClassNames() []string {
	out := make([]string, len(Classes))
	for i, c := range Classes {
		out[i] = string(c.Class)
	}
	return out
}

// Words is the class in words, as reports print it: "invalid block ids".
func (c Class) Words() string { return strings.ReplaceAll(string(c), "-", " ") }

// DomainError is the error of a NotSupported verdict for a call outside its implementation's
// declared domain: what took it out (an undeclared op, dtype, format or block size; the input
// classes excluded). It never fails a call: the judges count it and report it.
type DomainError struct {
	Op      arch.Op
	Reasons []string
}

func (e *DomainError) Error() string {
	return "outside declared domain: " + strings.Join(e.Reasons, ", ")
}

// OutsideDomain returns the DomainError of the first verdict that has one: the call was not run
// because it lies outside the declared domain of the implementations judged.
func OutsideDomain(vs []Verdict) (*DomainError, bool) {
	for _, v := range vs {
		var d *DomainError
		if v.Status == NotSupported && errors.As(v.Err, &d) {
			return d, true
		}
	}
	return nil, false
}

// Outside returns why c lies outside l's declared domain (nil: inside it, or l declares nothing,
// as a C library): the op not declared (the reduce of a declaration whose reduce runs inside its
// decode included), its dtype, format or block size not declared, and each excluded input class
// the call falls in (Classes), in the vocabulary's order.
func (l *Lib) Outside(c Call) *DomainError {
	if l == nil || l.Decl == nil {
		return nil
	}
	d, op := l.Decl, c.Op()
	o, ok := d.Ops[op]
	if !ok {
		why := string(op) + " not declared"
		if op == arch.Reduce && d.ReduceInDecode {
			why = "reduce inside decode (no reduce op of its own)"
		}
		return &DomainError{Op: op, Reasons: []string{why}}
	}
	var why []string
	dt, f, bs := callShape(c)
	if !slices.Contains(o.Dtypes, dt) {
		why = append(why, fmt.Sprintf("dtype %s (%s declares %v)", dt, op, o.Dtypes))
	}
	if f != 0 && !slices.Contains(d.Formats, f) {
		why = append(why, fmt.Sprintf("format %d (declared: %v)", int(f), formatIDs(d.Formats)))
	}
	if bs != 0 && d.BlockSizes != nil && !slices.Contains(d.BlockSizes, bs) {
		why = append(why, fmt.Sprintf("block size %d (declared: %v)", bs, d.BlockSizes))
	}
	for _, cl := range CallClasses(c) {
		if d.Excluded(cl) {
			why = append(why, cl.Words())
		}
	}
	if len(why) == 0 {
		return nil
	}
	return &DomainError{Op: op, Reasons: why}
}

// formatIDs lists format ids as numbers, as a declaration writes them.
func formatIDs(fs []oracle.FormatID) []int {
	out := make([]int, len(fs))
	for i, f := range fs {
		out[i] = int(f)
	}
	return out
}

// callShape is c's activation dtype, its cache format and block size (0 for the ops without a
// cache: rotate, reduce).
func callShape(c Call) (Dtype, oracle.FormatID, int) {
	switch c := c.(type) {
	case *DecodeCall:
		return c.Dtype, c.In.Cache.F.ID, c.In.Cache.BlockSize
	case *PrefillCall:
		return c.Dtype, c.In.Cache.F.ID, c.In.Cache.BlockSize
	case *StoreCall:
		return c.Dtype, c.Cache.F.ID, c.Cache.BlockSize
	case *RotateCall:
		return c.Dtype, 0, 0
	case *ReduceCall:
		return c.Dtype, 0, 0
	}
	return "", 0, 0
}

// CallClasses lists the input classes c falls in, in the vocabulary's order, computed from the
// call's own inputs (see each class's definition in Classes).
func CallClasses(c Call) []Class {
	has := map[Class]bool{}
	switch c := c.(type) {
	case *DecodeCall:
		in := c.In
		cacheClasses(in.Cache, has)
		has[CustomSigns] = !defaultSigns(in.KSigns) || !defaultSigns(in.VSigns)
		has[StridedViews] = c.QueryPadHeads > 0 || c.OutPad > 0
		bs, kvMax := in.Cache.BlockSize, in.MaxBlocks*in.Cache.BlockSize
		for i := range in.QToReq {
			r, k := int(in.QToReq[i]), int(in.QToKlen[i])
			if r < 0 || r >= in.NumReqs {
				has[OutOfRangeRequests] = true
				continue
			}
			if k > kvMax {
				has[KlenClamped] = true
			}
			if readsInvalid(in.BlockTable[r*in.MaxBlocks:(r+1)*in.MaxBlocks], in.Klen(i), bs, in.Cache.NumBlocks) {
				has[InvalidBlockIDs] = true
			}
		}
	case *PrefillCall:
		in := c.In
		cacheClasses(in.Cache, has)
		has[StridedViews] = c.Fused || c.OutPad > 0
		kvMax := in.MaxBlocks * in.Cache.BlockSize
		for s := range in.NumSeqs() {
			qlen := int(in.CuSeqlensQ[s+1] - in.CuSeqlensQ[s])
			if raw := int(in.SeqLens[s]) - qlen; raw < 0 || raw > kvMax {
				has[PrefillCtxClamped] = true
			}
			if readsInvalid(in.BlockTable[s*in.MaxBlocks:(s+1)*in.MaxBlocks], in.Ctx(s), in.Cache.BlockSize, in.Cache.NumBlocks) {
				has[InvalidBlockIDs] = true
			}
		}
		if n := in.NumSeqs(); int(in.CuSeqlensQ[n]) < in.NumTokens {
			has[RowsOutsideSequences] = true
		}
	case *StoreCall:
		cacheClasses(c.Cache, has)
		has[CustomSigns] = !defaultSigns(c.KSigns) || !defaultSigns(c.VSigns)
		has[StridedViews] = c.FusedQHeads > 0
		slots := c.Cache.NumBlocks * c.Cache.BlockSize
		seen := map[int64]bool{}
		for _, s := range c.Mapping {
			if s < 0 {
				continue
			}
			if s >= int64(slots) {
				has[SlotOutOfRange] = true
			}
			if seen[s] {
				has[DuplicateSlots] = true
			}
			seen[s] = true
		}
	case *RotateCall:
		has[CustomSigns] = !defaultSigns(c.Signs)
		has[StridedViews] = c.HeadGap > 0 || c.RowGap > 0
	case *ReduceCall:
		has[CustomSigns] = !defaultSigns(c.VSigns)
		has[StridedViews] = c.OutPad > 0
	}
	var out []Class
	for _, ci := range Classes {
		if has[ci.Class] {
			out = append(out, ci.Class)
		}
	}
	return out
}

// readsInvalid reports whether a table row read for n tokens (its first ⌈n/bs⌉ entries) holds a
// block id outside [0, numBlocks).
func readsInvalid(row []int32, n, bs, numBlocks int) bool {
	for lb := 0; lb < (n+bs-1)/bs && lb < len(row); lb++ {
		if row[lb] < 0 || int(row[lb]) >= numBlocks {
			return true
		}
	}
	return false
}

// cacheClasses marks the layout classes of a cache (LBNHCLayout, PaddedCacheStrides).
func cacheClasses(c *oracle.Cache, has map[Class]bool) {
	type dim struct{ stride, count int }
	dims := []dim{{c.StrideToken, c.BlockSize}, {c.StrideHead, c.NumKVHeads}}
	has[LBNHCLayout] = c.NumKVHeads > 1 && c.BlockSize > 1 && c.StrideHead < c.StrideToken
	dims = slices.DeleteFunc(dims, func(d dim) bool { return d.count <= 1 })
	slices.SortFunc(dims, func(a, b dim) int { return a.stride - b.stride })
	want := c.F.SlotBytes()
	for _, d := range dims {
		if d.stride != want {
			has[PaddedCacheStrides] = true
		}
		want = d.stride * d.count
	}
	if c.NumBlocks > 1 && c.StrideBlock != want {
		has[PaddedCacheStrides] = true
	}
}

// defaultWords is the default sign pattern as the kernels receive it (docs/format.md §2).
var defaultWords = kernels.SignWords(oracle.DefaultSigns(256).Words())

// defaultSigns reports whether s is passed to a kernel as the default pattern.
func defaultSigns(s oracle.Signs) bool { return kernels.SignWords(s.Words()) == defaultWords }
