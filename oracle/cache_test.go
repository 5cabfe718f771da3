package oracle

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCacheLayouts writes the same slots into an LBHNC cache, an LBNHC cache and a padded
// custom-stride cache and checks that decode gives bit-identical results (the layout only changes
// addresses) and that each layout's strides are the ones docs/contract.md §1 gives.
func TestCacheLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, id := range AllFormats {
		f := MustFormat(id, KernelHeadSize, KernelRopeDim)
		sb := f.SlotBytes()
		s := attSmallShape(f, 2, 2, 16, false)
		ac := attBuild(rng, s)
		a := ac.in.Cache
		if a.StrideToken != sb || a.StrideHead != 16*sb || a.StrideBlock != 2*16*sb {
			t.Fatalf("%v LBHNC strides %d/%d/%d", id, a.StrideBlock, a.StrideHead, a.StrideToken)
		}
		b, err := NewCacheLBNHC(f, make([]byte, len(a.Data)), a.NumBlocks, a.NumKVHeads, a.BlockSize)
		if err != nil {
			t.Fatal(err)
		}
		if b.StrideHead != sb || b.StrideToken != 2*sb || b.StrideBlock != 16*2*sb {
			t.Fatalf("%v LBNHC strides %d/%d/%d", id, b.StrideBlock, b.StrideHead, b.StrideToken)
		}
		// A padded layout: 64 spare bytes per token row, heads innermost.
		pad := &Cache{F: f, NumBlocks: a.NumBlocks, NumKVHeads: 2, BlockSize: 16, StrideHead: sb, StrideToken: 2*sb + 64}
		pad.StrideBlock = 16 * pad.StrideToken
		pad.Data = make([]byte, pad.NumBlocks*pad.StrideBlock)
		if err := pad.Validate(); err != nil {
			t.Fatal(err)
		}
		for blk := 0; blk < a.NumBlocks; blk++ {
			for h := 0; h < 2; h++ {
				for tok := 0; tok < 16; tok++ {
					copy(b.Slot(blk, h, tok), a.Slot(blk, h, tok))
					copy(pad.Slot(blk, h, tok), a.Slot(blk, h, tok))
				}
			}
		}
		want, err := ExactDecode(ac.in)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*Cache{b, pad} {
			in := *ac.in
			in.Cache = c
			got, err := ExactDecode(&in)
			if err != nil {
				t.Fatal(err)
			}
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("%v strides %d/%d/%d: element %d = %v, LBHNC gives %v", id, c.StrideBlock, c.StrideHead, c.StrideToken, j, got[j], want[j])
				}
			}
		}
	}
}

// TestCacheValidation checks the refusals and their messages.
func TestCacheValidation(t *testing.T) {
	f := MustFormat(K3V4, KernelHeadSize, KernelRopeDim) // 248-byte slots
	fc := MustFormat(K3V3Compact, KernelHeadSize, KernelRopeDim)
	ok := func() *Cache {
		c := &Cache{F: f, NumBlocks: 2, NumKVHeads: 2, BlockSize: 4, StrideToken: 248, StrideHead: 4 * 248, StrideBlock: 8 * 248}
		c.Data = make([]byte, 16*248)
		return c
	}
	if err := ok().Validate(); err != nil {
		t.Fatalf("valid cache refused: %v", err)
	}
	for _, c := range []struct {
		name string
		mut  func(c *Cache)
		want string
	}{
		{"sizes", func(c *Cache) { c.BlockSize = 0 }, "block_size 0: expected all positive"},
		{"align", func(c *Cache) { c.StrideHead = 4*248 + 4 }, "head stride 996 bytes: expected a non-negative multiple of 8"},
		{"negative", func(c *Cache) { c.StrideBlock = -8 }, "block stride -8 bytes"},
		{"short", func(c *Cache) { c.Data = c.Data[:len(c.Data)-1] }, "data has 3967 bytes, expected at least 3968"},
		{"overlap", func(c *Cache) { c.StrideToken = 240 }, "token stride 240 bytes: expected at least 248 so that slots do not overlap"},
		{"overlap-heads", func(c *Cache) { c.StrideHead = 248 }, "token stride 248 bytes: expected at least 496"},
		{"format", func(c *Cache) { c.F.ID = 5 }, "format id 5 is not a kernel format"},
	} {
		x := ok()
		c.mut(x)
		err := x.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, expected one containing %q", c.name, err, c.want)
		}
	}
	// The compact format's 196-byte slots need only 4-byte alignment.
	cc := &Cache{F: fc, NumBlocks: 1, NumKVHeads: 1, BlockSize: 3, StrideToken: 196, StrideHead: 588, StrideBlock: 588, Data: make([]byte, 588)}
	if err := cc.Validate(); err != nil {
		t.Errorf("compact cache with 4-byte-aligned strides refused: %v", err)
	}
	cc.StrideToken = 198
	if err := cc.Validate(); err == nil || !strings.Contains(err.Error(), "multiple of 4") {
		t.Errorf("compact stride 198: error %v, expected one about a multiple of 4", err)
	}
	// A dim of size 1 may have any (aligned) stride, even 0.
	one := &Cache{F: f, NumBlocks: 1, NumKVHeads: 1, BlockSize: 2, StrideToken: 248, Data: make([]byte, 496)}
	if err := one.Validate(); err != nil {
		t.Errorf("zero strides on size-1 dims refused: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Slot out of range did not panic")
		}
	}()
	ok().Slot(2, 0, 0)
}

// TestCacheDescribeByte checks the names DescribeByte gives: first and last byte of slots in both
// layouts, and the pad bytes of a custom stride.
func TestCacheDescribeByte(t *testing.T) {
	f := MustFormat(K3V4, KernelHeadSize, KernelRopeDim)
	sb := f.SlotBytes()
	lbnhc, err := NewCacheLBNHC(f, make([]byte, 3*16*2*sb), 3, 2, 16)
	if err != nil {
		t.Fatal(err)
	}
	pad := &Cache{F: f, NumBlocks: 2, NumKVHeads: 1, BlockSize: 4, StrideHead: sb, StrideToken: sb + 8, StrideBlock: 4 * (sb + 8)}
	pad.Data = make([]byte, 2*pad.StrideBlock)
	for _, c := range []struct {
		c    *Cache
		off  int
		want string
	}{
		{lbnhc, 0, "slot (block 0, head 0, token 0 = flat slot 0) byte 0"},
		{lbnhc, sb - 1, "slot (block 0, head 0, token 0 = flat slot 0) byte 247"},
		{lbnhc, sb, "slot (block 0, head 1, token 0 = flat slot 0) byte 0"},
		{lbnhc, lbnhc.SlotOffset(2, 1, 15) + 5, "slot (block 2, head 1, token 15 = flat slot 47) byte 5"},
		{pad, sb, "between slots"},
		{pad, pad.SlotOffset(1, 0, 3) + 1, "slot (block 1, head 0, token 3 = flat slot 7) byte 1"},
		{pad, len(pad.Data) - 1, "between slots"},
	} {
		if got := c.c.DescribeByte(c.off); got != c.want {
			t.Errorf("DescribeByte(%d) = %q, want %q", c.off, got, c.want)
		}
	}
}
