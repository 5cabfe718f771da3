package oracle

import (
	"fmt"
	"sort"
)

// Cache is a read view of a packed KV cache (docs/contract.md §1): num_blocks × num_kv_heads × block_size
// slots of F.SlotBytes() bytes each, addressed with explicit byte strides. The innermost (slot)
// stride is 1; the three outer strides are given. Both layouts vLLM uses are expressible:
//
//   - LBHNC (blocks, heads, tokens, slot; the contiguous form): StrideToken = slot,
//     StrideHead = block_size·slot, StrideBlock = Hkv·block_size·slot ([NewCacheLBHNC]);
//   - LBNHC (blocks, tokens, heads, slot): StrideHead = slot, StrideToken = Hkv·slot,
//     StrideBlock = block_size·Hkv·slot ([NewCacheLBNHC]).
//
// Any other strides are accepted by [Cache.Validate] when they keep slots dword-aligned (multiples
// of 8 bytes, 4 for the compact format), non-negative, non-overlapping, and inside Data. The oracle
// only reads through a Cache; the view does not own Data.
type Cache struct {
	F                                    Format
	Data                                 []byte
	NumBlocks, NumKVHeads, BlockSize     int
	StrideBlock, StrideHead, StrideToken int // in bytes
}

// NewCacheLBHNC returns a validated view of data in the contiguous LBHNC layout.
func NewCacheLBHNC(f Format, data []byte, numBlocks, numKVHeads, blockSize int) (*Cache, error) {
	sb := f.SlotBytes()
	c := &Cache{F: f, Data: data, NumBlocks: numBlocks, NumKVHeads: numKVHeads, BlockSize: blockSize,
		StrideToken: sb, StrideHead: blockSize * sb, StrideBlock: numKVHeads * blockSize * sb}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// NewCacheLBNHC returns a validated view of data in the LBNHC layout (heads innermost).
func NewCacheLBNHC(f Format, data []byte, numBlocks, numKVHeads, blockSize int) (*Cache, error) {
	sb := f.SlotBytes()
	c := &Cache{F: f, Data: data, NumBlocks: numBlocks, NumKVHeads: numKVHeads, BlockSize: blockSize,
		StrideHead: sb, StrideToken: numKVHeads * sb, StrideBlock: blockSize * numKVHeads * sb}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// CacheBytes is the size of a contiguous cache of the given shape (either layout).
func CacheBytes(f Format, numBlocks, numKVHeads, blockSize int) int {
	return numBlocks * numKVHeads * blockSize * f.SlotBytes()
}

// Validate checks the view: a kernel format (head 256 is not required; any valid Format works),
// positive sizes, strides that are non-negative multiples of the slot alignment (8 bytes, 4 for the
// compact format), slots that do not overlap, and Data long enough for the last slot.
func (c *Cache) Validate() error {
	if _, err := NewFormat(c.F.ID, c.F.HeadSize, c.F.RopeDim); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if c.NumBlocks <= 0 || c.NumKVHeads <= 0 || c.BlockSize <= 0 {
		return fmt.Errorf("cache: num_blocks %d, num_kv_heads %d, block_size %d: expected all positive", c.NumBlocks, c.NumKVHeads, c.BlockSize)
	}
	align := 8
	if c.F.Compact() {
		align = 4
	}
	for _, s := range []struct {
		name string
		v    int
	}{{"block", c.StrideBlock}, {"head", c.StrideHead}, {"token", c.StrideToken}} {
		if s.v < 0 || s.v%align != 0 {
			return fmt.Errorf("cache: %s stride %d bytes: expected a non-negative multiple of %d (slot alignment of %v)", s.name, s.v, align, c.F.ID)
		}
	}
	// Non-overlap: ordering the dims by stride, each stride must clear the extent of everything
	// inside it. A dim of size 1 never steps, so its stride is free.
	type dim struct {
		name          string
		stride, count int
	}
	dims := []dim{{"block", c.StrideBlock, c.NumBlocks}, {"head", c.StrideHead, c.NumKVHeads}, {"token", c.StrideToken, c.BlockSize}}
	sort.SliceStable(dims, func(i, j int) bool { return dims[i].stride < dims[j].stride })
	extent := c.F.SlotBytes()
	for _, d := range dims {
		if d.count == 1 {
			continue
		}
		if d.stride < extent {
			return fmt.Errorf("cache: %s stride %d bytes: expected at least %d so that slots do not overlap (slot %d bytes, strides block %d, head %d, token %d)",
				d.name, d.stride, extent, c.F.SlotBytes(), c.StrideBlock, c.StrideHead, c.StrideToken)
		}
		extent = d.stride * d.count
	}
	need := c.SlotOffset(c.NumBlocks-1, c.NumKVHeads-1, c.BlockSize-1) + c.F.SlotBytes()
	if len(c.Data) < need {
		return fmt.Errorf("cache: data has %d bytes, expected at least %d for %d blocks × %d heads × %d tokens of %d-byte slots with strides (block %d, head %d, token %d)",
			len(c.Data), need, c.NumBlocks, c.NumKVHeads, c.BlockSize, c.F.SlotBytes(), c.StrideBlock, c.StrideHead, c.StrideToken)
	}
	return nil
}

// SlotOffset is the byte offset of slot (block, head, token) in Data. It does not check bounds.
func (c *Cache) SlotOffset(block, head, token int) int {
	return block*c.StrideBlock + head*c.StrideHead + token*c.StrideToken
}

// Slot returns the bytes of slot (block, head, token) (a sub-slice of Data, writable). It panics
// when an index is out of range.
func (c *Cache) Slot(block, head, token int) []byte {
	if block < 0 || block >= c.NumBlocks || head < 0 || head >= c.NumKVHeads || token < 0 || token >= c.BlockSize {
		panic(fmt.Sprintf("oracle: cache slot (block %d, head %d, token %d) outside [0,%d)×[0,%d)×[0,%d)",
			block, head, token, c.NumBlocks, c.NumKVHeads, c.BlockSize))
	}
	o := c.SlotOffset(block, head, token)
	return c.Data[o : o+c.F.SlotBytes() : o+c.F.SlotBytes()]
}

// DescribeByte names what byte off of Data holds, for error messages: the slot (block, head,
// token, and its flat slot index block·BlockSize + token) and the byte within it, or "between
// slots" (pad bytes of a stride larger than a slot, or past the last slot).
func (c *Cache) DescribeByte(off int) string {
	for b := 0; b < c.NumBlocks; b++ {
		for h := 0; h < c.NumKVHeads; h++ {
			for tk := 0; tk < c.BlockSize; tk++ {
				if o := c.SlotOffset(b, h, tk); off >= o && off < o+c.F.SlotBytes() {
					return fmt.Sprintf("slot (block %d, head %d, token %d = flat slot %d) byte %d", b, h, tk, b*c.BlockSize+tk, off-o)
				}
			}
		}
	}
	return "between slots"
}

// SlotBytesFor maps a cache-dtype name to its slot size; it has the signature the golden loader
// (corpus/golden.LoadAttention) expects.
func SlotBytesFor(cacheDtype string, headSize, ropeDim int) (int, error) {
	f, err := ParseFormat(cacheDtype, headSize, ropeDim)
	if err != nil {
		return 0, err
	}
	return f.SlotBytes(), nil
}
