package cases

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// Per-row isolation inside a row set (docs/contract.md §3.3): query row i attends to tokens
// 0 … klen_i − 1 of its request and to nothing else, even where a sibling row of the same request
// (an MTP or chunk row with a longer klen, sharing the row's workgroup under query_group > 1 and so
// its K/V tiles) attends more. The must-not-matter property cannot ask this: those slots are in
// the call's read set (the sibling reads them), so they keep valid content there. This property
// poisons them: random codes and non-finite scales in the slots of positions [cut, klen_long) of a
// request, and requires every row that reads none of them to come out bit for bit as it did with
// the clean cache. A kernel that reads past a row's klen into its arithmetic (a mask applied by
// multiplying by 0, a token mask one past the edge) then shows it: 0 · NaN is NaN.
//
// A tier whose arithmetic couples sibling rows legitimately declares it in the registry
// (arch.Tier.CouplesRows); it is then held to its declared profile's bound and to finite output on
// the poisoned call instead (the harness's judgement of that call: the compared rows' model and
// bound come from their own tokens only).

// PropNameIsoDecode names the decode isolation property.
const PropNameIsoDecode = "iso-decode"

// IsolationCase is one case of the isolation property: a decode recipe, a cut per request and the
// seed of the poison. The slots of request r's positions [Cuts[r], its longest row's klen) are
// poisoned (every KV head); a cut at or past that klen poisons nothing.
type IsolationCase struct {
	Decode *GPUDecodeCase `json:"decode"`
	Cuts   []int          `json:"cuts"`
	Seed   uint64         `json:"seed"`
}

// Isolation is what a poisoning did to a call: which rows read a poisoned slot, which are
// compared (they read none), and whether the case asks anything.
type Isolation struct {
	Slots    int    // poisoned (block, offset) pairs, every KV head's slot there poisoned
	Compared []bool // rows that read no poisoned slot (rows attending nothing included)
	Readers  []bool // rows that read a poisoned slot
	// Siblings counts the compared rows with klen > 0 whose request has a row that reads a
	// poisoned slot: the rows the property is about. 0: the case asks nothing.
	Siblings int
}

// poisonScales are the fp16 patterns a poisoned scale holds: ±inf and NaNs (quiet, signalling,
// negative, all ones).
var poisonScales = []uint16{0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0xffff}

// rowKlens is each request's distinct row klens (effective: oracle.DecodeInput.Klen), ascending.
func rowKlens(numReqs int, klen func(i int) int, req func(i int) int, rows int) [][]int {
	ks := make([][]int, numReqs)
	for i := 0; i < rows; i++ {
		k := klen(i)
		if k == 0 {
			continue
		}
		r := req(i)
		if !slices.Contains(ks[r], k) {
			ks[r] = append(ks[r], k)
		}
	}
	for _, k := range ks {
		slices.Sort(k)
	}
	return ks
}

// IsolationCuts cuts each request of in at one of its rows' klens: the which-th shortest (modulo
// the number of distinct klens below the longest); a request with one klen is not cut (its cut is
// that klen, which poisons nothing). which 0 cuts at the shortest row: [klen_short, klen_long).
func IsolationCuts(in *oracle.DecodeInput, which int) []int {
	ks := rowKlens(in.NumReqs, in.Klen, func(i int) int { return int(in.QToReq[i]) }, in.NumQ())
	cuts := make([]int, in.NumReqs)
	for r, k := range ks {
		switch len(k) {
		case 0:
		case 1:
			cuts[r] = k[0]
		default:
			cuts[r] = k[which%(len(k)-1)]
		}
	}
	return cuts
}

// Poison returns a copy of c whose slots of request r's positions [cuts[r], the longest klen of
// r's rows) hold random codes and non-finite scales (from seed), and what that did.
func Poison(c *harness.DecodeCall, cuts []int, seed uint64) (*harness.DecodeCall, Isolation, error) {
	in := *c.In
	if len(cuts) != in.NumReqs {
		return nil, Isolation{}, fmt.Errorf("isolation: %d cuts for %d requests", len(cuts), in.NumReqs)
	}
	cache := *c.In.Cache
	cache.Data = append([]byte(nil), c.In.Cache.Data...)
	in.Cache = &cache
	bs, nb := cache.BlockSize, cache.NumBlocks
	// slotOf is the physical (block, offset) of request r's position p, or −1 through an invalid id.
	slotOf := func(r, p int) int {
		id := int(in.BlockTable[r*in.MaxBlocks+p/bs])
		if id < 0 || id >= nb {
			return -1
		}
		return id*bs + p%bs
	}
	long := make([]int, in.NumReqs)
	for i := 0; i < in.NumQ(); i++ {
		if k := in.Klen(i); k > 0 {
			r := int(in.QToReq[i])
			long[r] = max(long[r], k)
		}
	}
	poisoned := make([]bool, nb*bs)
	iso := Isolation{Compared: make([]bool, in.NumQ()), Readers: make([]bool, in.NumQ())}
	rng := newRand(seed, 30)
	f := cache.F
	for r, cut := range cuts {
		for p := max(cut, 0); p < long[r]; p++ {
			s := slotOf(r, p)
			if s < 0 || poisoned[s] {
				continue
			}
			poisoned[s] = true
			iso.Slots++
			for h := 0; h < cache.NumKVHeads; h++ {
				sl := cache.Slot(s/bs, h, s%bs)
				for j := 0; j < f.OffScales(); j++ {
					sl[j] = byte(rng.Uint32())
				}
				for g := 0; g < f.NumScales(); g++ {
					x := poisonScales[rng.IntN(len(poisonScales))]
					sl[f.OffScales()+2*g], sl[f.OffScales()+2*g+1] = byte(x), byte(x>>8)
				}
			}
		}
	}
	read := make([]bool, in.NumReqs) // requests with a row that reads a poisoned slot
	for i := range iso.Compared {
		k := in.Klen(i)
		iso.Compared[i] = true
		for p := 0; p < k; p++ {
			if s := slotOf(int(in.QToReq[i]), p); s >= 0 && poisoned[s] {
				iso.Compared[i], iso.Readers[i] = false, true
				read[in.QToReq[i]] = true
				break
			}
		}
	}
	for i, ok := range iso.Compared {
		if ok && in.Klen(i) > 0 && read[in.QToReq[i]] {
			iso.Siblings++
		}
	}
	out := &harness.DecodeCall{In: &in, Dtype: c.Dtype, NumSplits: c.NumSplits, QueryGroup: c.QueryGroup, PartialStride: c.PartialStride,
		QueryPadHeads: c.QueryPadHeads, OutPad: c.OutPad, StaleWorkspace: c.StaleWorkspace, TableTail: append([]int32(nil), c.TableTail...)}
	return out, iso, nil
}

// CouplesRows reports whether the registry declares that the decode arithmetic of the library's
// tier named impl couples sibling rows (arch.Tier.CouplesRows, matched by the ABI's tier id: the
// emulator's and the CUDA library's "wmma-model" run gfx1100's wmma tier, "mma-model" sm_90's mma
// tier). The oracle and tiers the registry does not know couple nothing.
func CouplesRows(l *harness.Lib, impl string) bool {
	if l == nil {
		return false
	}
	var id kernels.Tier = -1
	for _, t := range l.Tiers {
		if string(t.Name) == impl {
			id = t.Tier
		}
	}
	for _, a := range arch.All() {
		for _, t := range a.Tiers {
			if t.ID == int(id) && t.CouplesRows {
				return true
			}
		}
	}
	return false
}

// ErrNoSiblings says that a poisoning left no compared row beside a row that reads the poison:
// the case asks nothing of per-row isolation.
var ErrNoSiblings = errors.New("isolation: no row shares a request with a row that reads a poisoned slot")

// CheckIsolation judges call on every implementation in l (nil: the oracle alone), then the same
// call with request r's slots of positions [cuts[r], its longest klen) poisoned (Poison, from
// seed). Both must pass their judgement (on the poisoned call the rows that read the poison have no
// claim: their bound is +inf; the others are held to their own tokens' model and bound), and on
// every tier that does not declare coupled rows (CouplesRows) each row that reads no poisoned slot
// must have the same output bits in both. It returns what the poisoning did; ErrNoSiblings when it
// asks nothing (the calls are still judged); the *harness.DomainError when either call lies outside
// l's declared domain (nothing compared).
func CheckIsolation(l *harness.Lib, call *harness.DecodeCall, cuts []int, seed uint64) (Isolation, error) {
	b, iso, err := Poison(call, cuts, seed)
	if err != nil {
		return iso, err
	}
	va := harness.CheckAll(l, call)
	if d, ok := harness.OutsideDomain(va); ok {
		return iso, d
	}
	for _, v := range va {
		if v.Failed() {
			return iso, v.Err
		}
	}
	vb := harness.CheckAll(l, b)
	if d, ok := harness.OutsideDomain(vb); ok {
		return iso, d
	}
	in := call.In
	rowBytes := 2 * in.NumQHeads * in.Cache.F.HeadSize
	for i, v := range vb {
		if v.Failed() {
			return iso, fmt.Errorf("with the slots of positions [cut, longest klen) of each request poisoned (cuts %v, %d slots, seed %d: non-finite scales, random codes) the call fails: %w",
				cuts, iso.Slots, seed, v.Err)
		}
		if CouplesRows(l, v.Impl) {
			continue // held to its bound and to finite output by the verdict above
		}
		a := va[i].Output
		if len(a) != len(v.Output) || len(a) != rowBytes*in.NumQ() {
			return iso, fmt.Errorf("%s: output of %d bytes clean, %d poisoned; expected %d rows of %d", v.Impl, len(a), len(v.Output), in.NumQ(), rowBytes)
		}
		for row, ok := range iso.Compared {
			if !ok {
				continue
			}
			j := firstDiff(a[row*rowBytes:][:rowBytes], v.Output[row*rowBytes:][:rowBytes])
			if j < 0 {
				continue
			}
			e := j / 2
			r, k := int(in.QToReq[row]), in.Klen(row)
			return iso, fmt.Errorf("%s: row %d head %d dim %d (request %d, klen %d) is %s with the clean cache and %s with the slots of its request's positions [%d, %d) poisoned, which only its sibling rows %s attend (cuts %v, seed %d; docs/contract.md §3.3: a row attends to tokens 0 … klen−1 and nothing else; a tier whose arithmetic couples sibling rows declares it in arch.Tier.CouplesRows)",
				v.Impl, row, e/in.Cache.F.HeadSize, e%in.Cache.F.HeadSize, r, k, outWord(a[row*rowBytes:], j, false), outWord(v.Output[row*rowBytes:], j, false),
				cuts[r], longest(in, r), readersOf(in, iso, r), cuts, seed)
		}
	}
	if iso.Siblings == 0 {
		return iso, ErrNoSiblings
	}
	return iso, nil
}

// longest is the longest klen of request r's rows.
func longest(in *oracle.DecodeInput, r int) int {
	m := 0
	for i := 0; i < in.NumQ(); i++ {
		if int(in.QToReq[i]) == r {
			m = max(m, in.Klen(i))
		}
	}
	return m
}

// readersOf lists request r's rows that read a poisoned slot, with their klens.
func readersOf(in *oracle.DecodeInput, iso Isolation, r int) string {
	var s []string
	for i, ok := range iso.Readers {
		if ok && int(in.QToReq[i]) == r {
			s = append(s, fmt.Sprintf("%d (klen %d)", i, in.Klen(i)))
		}
	}
	return strings.Join(s, ", ")
}

// IsolationCases draws IsolationCases: a decode call of FuzzDecode's mix (GPUDecodeCases) with
// query_group raised to 2..4 in three draws of four (siblings then share a workgroup), a cut per
// request among its rows' klens, and a poison seed.
func IsolationCases() *rapid.Generator[*IsolationCase] {
	return isolationCasesOf(GPUDecodeCases(GPUDecodeOptions()))
}

// IsolationSmallCases draws IsolationCases over FuzzDecode's small calls alone
// (gpuDecodeSmallCases): TestIsolationDecode's -short form, whose time on the CPU emulator then
// stays within seconds whatever rapid's seed (a large call there takes tens of seconds).
func IsolationSmallCases() *rapid.Generator[*IsolationCase] {
	return isolationCasesOf(gpuDecodeSmallCases())
}

// isolationCasesOf draws IsolationCases around the decode calls of calls.
func isolationCasesOf(calls *rapid.Generator[*GPUDecodeCase]) *rapid.Generator[*IsolationCase] {
	return rapid.Custom(func(t *rapid.T) *IsolationCase {
		c := calls.Draw(t, "case")
		if c.QueryGroup == 1 && rapid.IntRange(0, 3).Draw(t, "share_workgroup") != 0 {
			c.QueryGroup = rapid.IntRange(2, 4).Draw(t, "iso_query_group")
		}
		s := c.Spec
		ks := rowKlens(len(s.Batch.Requests), s.Klen, func(i int) int { return int(s.Maps.QToReq[i]) }, len(s.Maps.QToReq))
		cuts := make([]int, len(ks))
		for r, k := range ks {
			switch len(k) {
			case 0:
			case 1:
				cuts[r] = k[0]
			default:
				cuts[r] = k[rapid.IntRange(0, len(k)-2).Draw(t, "cut")]
			}
		}
		return &IsolationCase{Decode: c, Cuts: cuts, Seed: rapid.Uint64().Draw(t, "poison_seed")}
	})
}

// CheckIsolationCase builds the case's call and checks it (CheckIsolation); a case that asks
// nothing passes.
func CheckIsolationCase(l *harness.Lib, m *IsolationCase) (Isolation, error) {
	if m.Decode == nil {
		return Isolation{}, errors.New("isolation case without a decode recipe")
	}
	c, err := m.Decode.Call()
	if err != nil {
		return Isolation{}, fmt.Errorf("building the call: %w", err)
	}
	iso, err := CheckIsolation(l, c.(*harness.DecodeCall), m.Cuts, m.Seed)
	if errors.Is(err, ErrNoSiblings) {
		err = nil
	}
	return iso, err
}

// loadIsolation decodes and checks an isolation case (IsolationCase.Validate), builds its call
// (a recorded digest must match), and returns its op and its check (CheckIsolationCase: the
// property's own, so a replay judges what the property judged).
func loadIsolation(raw json.RawMessage) (arch.Op, func(*harness.Lib) error, error) {
	var m IsolationCase
	if err := DecodeCase(raw, &m); err != nil {
		return "", nil, err
	}
	if err := m.Validate(); err != nil {
		return "", nil, err
	}
	c, err := m.Decode.Call()
	if err != nil {
		return "", nil, fmt.Errorf("building the call: %w", err)
	}
	return c.Op(), func(l *harness.Lib) error {
		_, err := CheckIsolationCase(l, &m)
		return err
	}, nil
}

// Record sets the digest of the case's decode recipe from its built call, so that a replay tells
// a changed generator from a fixed kernel (the reproducer of a failure carries it).
func (m *IsolationCase) Record() {
	if m.Decode == nil {
		return
	}
	if c, err := m.Decode.Call(); err == nil {
		m.Decode.Record(c)
	}
}
