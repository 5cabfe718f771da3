package cases

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/octant-kv/octant/harness"
)

// Names of the must-not-matter properties.
const (
	PropNameMNMDecode  = "mnm-decode"
	PropNameMNMPrefill = "mnm-prefill"
	PropNameMNMStore   = "mnm-store"
	PropNameMNMReduce  = "mnm-reduce"
)

// MustNotMatterCase is one case of a must-not-matter property: a recipe of one op (exactly one
// field set) and a hostile fill (hostile.go: Seed, over Regions) of every input its result must
// not depend on. The property: the call and the same call with the fill give the same output bits
// on every implementation.
type MustNotMatterCase struct {
	Decode  *GPUDecodeCase  `json:"decode,omitempty"`
	Prefill *GPUPrefillCase `json:"prefill,omitempty"`
	Store   *GPUStoreCase   `json:"store,omitempty"`
	Reduce  *GPUReduceCase  `json:"reduce,omitempty"`
	Seed    uint64          `json:"seed"`
	Regions Region          `json:"regions"`
}

// calls builds the call and its hostile twin (over regions), and names an output byte.
func (m *MustNotMatterCase) calls(regions Region) (a, b harness.Call, name func(byteIndex int) string, err error) {
	elem := func(heads int) func(int) string {
		return func(i int) string {
			e := i / 2
			return fmt.Sprintf("row %d head %d dim %d", e/(heads*256), e/256%heads, e%256)
		}
	}
	switch {
	case m.Decode != nil:
		if a, err = m.Decode.Call(); err != nil {
			return
		}
		d := a.(*harness.DecodeCall)
		d.SkipContract = true
		return d, hostileDecode(d, m.Seed, regions), elem(d.In.NumQHeads), nil
	case m.Prefill != nil:
		if a, err = m.Prefill.Call(); err != nil {
			return
		}
		p := a.(*harness.PrefillCall)
		return p, hostilePrefill(p, m.Seed, regions), elem(p.In.NumQHeads), nil
	case m.Store != nil:
		if a, err = m.Store.Call(); err != nil {
			return
		}
		s := a.(*harness.StoreCall)
		return s, hostileStore(s, m.Seed, regions), func(i int) string { return "cache byte " + fmt.Sprint(i) + " (" + s.Cache.DescribeByte(i) + ")" }, nil
	case m.Reduce != nil:
		if a, err = m.Reduce.Call(); err != nil {
			return
		}
		r := a.(*harness.ReduceCall)
		return r, hostileReduce(r, m.Seed, regions), elem(r.Heads), nil
	}
	return nil, nil, nil, errors.New("must-not-matter case without a recipe")
}

// CheckMustNotMatter runs the case's call and its hostile twin on every implementation in l (nil:
// the oracle alone): both must pass, with the same output bits. When either lies outside l's
// declared domain (harness.Lib.Outside) it returns that *harness.DomainError: nothing is compared. A difference is reported with the
// first differing output element and the regions that, filled alone, change it.
func CheckMustNotMatter(l *harness.Lib, m *MustNotMatterCase) error {
	a, b, name, err := m.calls(m.Regions)
	if err != nil {
		return fmt.Errorf("building the call: %w", err)
	}
	va, vb := harness.CheckAll(l, a), harness.CheckAll(l, b)
	for _, vs := range [][]harness.Verdict{va, vb} {
		if d, ok := harness.OutsideDomain(vs); ok {
			return d // the call or its hostile twin is outside l's declared domain: nothing to compare
		}
	}
	for i := range va {
		if va[i].Failed() {
			return va[i].Err
		}
		if vb[i].Failed() {
			return fmt.Errorf("with hostile content in what must not matter (%s, seed %d) the call fails: %w", m.Regions, m.Seed, vb[i].Err)
		}
		j := firstDiff(va[i].Output, vb[i].Output)
		if j < 0 {
			continue
		}
		var culprits []string
		for bit := Region(1); bit < regionEnd; bit <<= 1 {
			if m.Regions&bit == 0 {
				continue
			}
			_, c, _, _ := m.calls(bit)
			vc := harness.Check(l, implOf(l, a, va[i].Impl), c)
			if !vc.Failed() && firstDiff(va[i].Output, vc.Output) >= 0 {
				culprits = append(culprits, bit.String())
			}
		}
		return fmt.Errorf("%s: %s is %s, then %s when only inputs the result must not depend on changed (hostile fill of %s, seed %d; alone, these change it: %v)",
			va[i].Impl, name(j), outWord(va[i].Output, j, m.Store != nil), outWord(vb[i].Output, j, m.Store != nil), m.Regions, m.Seed, culprits)
	}
	return nil
}

// implOf finds the implementation named name among those of a's op in l.
func implOf(l *harness.Lib, a harness.Call, name string) harness.Impl {
	impls, _ := harness.Impls(l, a.Op())
	for _, im := range impls {
		if im.Name == name {
			return im
		}
	}
	return harness.Impl{Name: name}
}

// outWord is the output element at byte j: a byte for the store's cache, 16 bits otherwise.
func outWord(b []byte, j int, bytewise bool) string {
	if bytewise {
		return fmt.Sprintf("%#02x", b[j])
	}
	return fmt.Sprintf("%#04x", binary.LittleEndian.Uint16(b[j&^1:]))
}

// firstDiff is the index of the first byte where a and b differ (−1: equal).
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
