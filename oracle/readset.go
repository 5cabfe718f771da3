package oracle

// The inputs a result may depend on (docs/contract.md §3): everything else "must not matter". A
// kernel may read more (a whole tile of block ids, a slot past a row's klen that it then masks), but
// no output bit may depend on what it reads there; the must-not-matter properties of package fuzz
// fill everything outside these sets with hostile bytes and require the same output bits.

// ReadSet marks the inputs of a decode or prefill call its result may depend on.
type ReadSet struct {
	// Cache marks the cache bytes: the data bytes (codes and scales, not the pad bytes) of every
	// slot some row attends to through a valid block id.
	Cache []bool
	// Table marks the block-table entries: entry [r][lb] when some row reads logical block lb of
	// request (sequence) r.
	Table []bool
	// Rows marks the query rows (decode: rows with klen > 0; prefill: token rows in some
	// sequence): the query (and for prefill k, v) values of the other rows must not matter.
	Rows []bool
}

// markSlot marks the data bytes of slot (b, h, t).
func (rs *ReadSet) markSlot(c *Cache, b, h, t int) {
	o := c.SlotOffset(b, h, t)
	n := c.F.SlotBytes() - c.F.PadBytes()
	for i := o; i < o+n; i++ {
		rs.Cache[i] = true
	}
}

// markTokens marks the table entries and the slots (every KV head) of logical tokens [0, n) of a
// block-table row starting at entry base.
func (rs *ReadSet) markTokens(c *Cache, table []int32, base, maxBlocks, n int) {
	for lb := 0; lb < (n+c.BlockSize-1)/c.BlockSize && lb < maxBlocks; lb++ {
		rs.Table[base+lb] = true
	}
	for pb, t := range cacheBlocks(c, table[base:][:maxBlocks], 0, n) {
		for h := 0; h < c.NumKVHeads; h++ {
			rs.markSlot(c, pb, h, t)
		}
	}
}

// ReadSet is what a decode result may depend on: for each row with klen > 0, the table entries of
// its request's first ⌈klen/block_size⌉ logical blocks and the data bytes of its tokens' slots
// (every KV head: a row's G query heads share them) through valid block ids; the row itself.
func (in *DecodeInput) ReadSet() ReadSet {
	c := in.Cache
	rs := ReadSet{Cache: make([]bool, len(c.Data)), Table: make([]bool, len(in.BlockTable)), Rows: make([]bool, in.NumQ())}
	for i := range rs.Rows {
		k := in.Klen(i)
		if k == 0 {
			continue
		}
		rs.Rows[i] = true
		rs.markTokens(c, in.BlockTable, int(in.QToReq[i])*in.MaxBlocks, in.MaxBlocks, k)
	}
	return rs
}

// ReadSet is what a prefill result may depend on: for each sequence, the table entries and slots of
// its cached prefix (Ctx tokens) and its token rows (q, k, v of rows in no sequence must not
// matter).
func (in *PrefillInput) ReadSet() ReadSet {
	c := in.Cache
	rs := ReadSet{Cache: make([]bool, len(c.Data)), Table: make([]bool, len(in.BlockTable)), Rows: make([]bool, in.NumTokens)}
	for s := 0; s < in.NumSeqs(); s++ {
		for i := in.CuSeqlensQ[s]; i < in.CuSeqlensQ[s+1]; i++ {
			rs.Rows[i] = true
		}
		rs.markTokens(c, in.BlockTable, s*in.MaxBlocks, in.MaxBlocks, in.Ctx(s))
	}
	return rs
}
