package cases

import (
	"math"
	"testing"

	"github.com/octant-kv/octant/harness"
)

// TestBoundariesHostileDecode: FuzzDecode's calls reach every region a decode must not depend on
// with hostile content, and every clamp and skip of docs/contract.md §3.3 on both sides, in a
// good share of cases (the share of each is logged).
func TestBoundariesHostileDecode(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 100
	}
	s := newCoverage(t, "GPUDecodeCases", n)
	g := GPUDecodeCases(GPUDecodeOptions())
	for i := 0; i < n; i++ {
		c := g.Example(i)
		call, err := c.Call()
		if err != nil {
			t.Fatal(err)
		}
		d := call.(*harness.DecodeCall)
		in := d.In
		rs := in.ReadSet()
		hostile := c.HostileSeed != 0
		cache := in.Cache
		bs := cache.BlockSize
		var pastKlenInReadBlock, unusedBlock bool
		for b := 0; b < cache.NumBlocks; b++ {
			read, unread := false, false
			for t := 0; t < bs; t++ {
				if rs.Cache[cache.SlotOffset(b, 0, t)] {
					read = true
				} else {
					unread = true
				}
			}
			pastKlenInReadBlock = pastKlenInReadBlock || read && unread
			unusedBlock = unusedBlock || !read
		}
		var tablePastKlen, invalidInside bool
		for j, ok := range rs.Table {
			id := in.BlockTable[j]
			if ok && (id < 0 || int(id) >= cache.NumBlocks) {
				invalidInside = true
			}
			tablePastKlen = tablePastKlen || !ok
		}
		var paddingRow, reqOut, klenBeyond bool
		for i, ok := range rs.Rows {
			paddingRow = paddingRow || !ok
			r := in.QToReq[i]
			reqOut = reqOut || r < 0 || int(r) >= in.NumReqs
			klenBeyond = klenBeyond || int(in.QToKlen[i]) > in.MaxBlocks*bs
		}
		tail := false
		for _, r := range c.Spec.Batch.Requests {
			tail = tail || c.TailLog2Scale != 0 && r.QueryLen >= 2 && r.SeqLen > r.QueryLen
		}
		s.hit("slots past a row's klen in a block rows read", hostile && pastKlenInReadBlock)
		s.hit("unused blocks", hostile && unusedBlock)
		s.hit("pad bytes", hostile && cache.F.PadBytes() > 0)
		s.hit("table entries no row reads", hostile && tablePastKlen)
		s.hit("preallocated table rows", len(d.TableTail) > 0)
		s.hit("padding rows (queries, maps)", hostile && paddingRow)
		s.hit("stale workspace", d.StaleWorkspace)
		s.hit("tokens only later MTP rows read (V scaled)", tail)
		s.hit("invalid block ids inside klen", invalidInside)
		s.hit("q_to_req outside [0, num_reqs)", reqOut)
		s.hit("klen beyond the table (clamped)", klenBeyond)
		s.hit("splits with no token", d.NumSplits > in.KVMax())
	}
	s.requireShare(0.05, "slots past a row's klen in a block rows read", "unused blocks", "pad bytes", "table entries no row reads",
		"preallocated table rows", "padding rows (queries, maps)", "stale workspace", "tokens only later MTP rows read (V scaled)",
		"invalid block ids inside klen", "q_to_req outside [0, num_reqs)", "klen beyond the table (clamped)", "splits with no token")
}

// TestBoundariesHostilePrefill: FuzzPrefill's calls reach the prefill regions and clamps.
func TestBoundariesHostilePrefill(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 80
	}
	s := newCoverage(t, "GPUPrefillCases", n)
	g := GPUPrefillCases()
	for i := 0; i < n; i++ {
		c := g.Example(i)
		call, err := c.Call()
		if err != nil {
			t.Fatal(err)
		}
		in := call.(*harness.PrefillCall).In
		rs := in.ReadSet()
		hostile := c.HostileSeed != 0
		unreadSlot, noSeqRow, tableUnread := false, false, false
		for b := 0; b < in.Cache.NumBlocks && !unreadSlot; b++ {
			for t := 0; t < in.Cache.BlockSize; t++ {
				unreadSlot = unreadSlot || !rs.Cache[in.Cache.SlotOffset(b, 0, t)]
			}
		}
		for _, ok := range rs.Rows {
			noSeqRow = noSeqRow || !ok
		}
		for _, ok := range rs.Table {
			tableUnread = tableUnread || !ok
		}
		var shorter, equal, clamped bool
		for q := 0; q < in.NumSeqs(); q++ {
			qlen := int(in.CuSeqlensQ[q+1] - in.CuSeqlensQ[q])
			shorter = shorter || int(in.SeqLens[q]) < qlen
			equal = equal || int(in.SeqLens[q]) == qlen && qlen > 0
			clamped = clamped || int(in.SeqLens[q])-qlen > in.MaxBlocks*in.Cache.BlockSize
		}
		s.hit("slots no sequence's prefix holds", hostile && unreadSlot)
		s.hit("table entries no prefix reads", hostile && tableUnread)
		s.hit("rows in no sequence (q, k, v)", hostile && noSeqRow)
		s.hit("seq_len < q_len (no prefix)", shorter)
		s.hit("seq_len = q_len", equal)
		s.hit("prefix clamped to the table", clamped)
	}
	s.requireShare(0.05, "slots no sequence's prefix holds", "table entries no prefix reads", "rows in no sequence (q, k, v)",
		"seq_len < q_len (no prefix)", "seq_len = q_len", "prefix clamped to the table")
}

// TestBoundariesHostileStoreReduce: FuzzStore's and FuzzReduce's calls reach their regions.
func TestBoundariesHostileStoreReduce(t *testing.T) {
	n := 200
	s := newCoverage(t, "GPUStoreCases", n)
	g := GPUStoreCases()
	for i := 0; i < n; i++ {
		c := g.Example(i)
		skipped := c.Rows > len(c.Mapping)
		for _, m := range c.Mapping {
			skipped = skipped || m < 0
		}
		s.hit("rows not stored", c.HostileSeed != 0 && skipped)
		s.hit("old bytes of written slots", c.HostileSeed != 0)
	}
	s.requireShare(0.05, "rows not stored", "old bytes of written slots")
	r := newCoverage(t, "GPUReduceCases", n)
	gr := GPUReduceCases()
	for i := 0; i < n; i++ {
		c := gr.Example(i)
		call, _ := c.Call()
		rc := call.(*harness.ReduceCall)
		P := c.pstride()
		empty := false
		for row := 0; row < rc.NumQ*rc.Heads*rc.Splits; row++ {
			empty = empty || math.IsInf(float64(rc.Partials[row*P+256]), -1)
		}
		r.hit("o of empty splits", c.HostileSeed != 0 && empty)
		r.hit("stride padding", c.HostileSeed != 0 && P > 258)
	}
	r.requireShare(0.05, "o of empty splits", "stride padding")
}
