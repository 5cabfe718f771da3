package fuzz

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// GPUStoreCase is one cache_store call (KERNELS.md §3.1) for FuzzStore: a cache of garbage, T
// token rows of K and V (value recipes: Kinds mixed per row and head, non-finite kinds included
// when NonFinite), a slot mapping of NumTokens ≤ T entries, K and V signs, optionally K and V as
// views into a fused QKV tensor with FusedQHeads query heads before them, and the slot mapping also
// passed on the host.
type GPUStoreCase struct {
	Dtype       Dtype       `json:"dtype"`
	Cache       CacheShape  `json:"cache"`
	Garbage     uint64      `json:"garbage_seed"`
	Signs       SignPair    `json:"signs"`
	Rows        int         `json:"rows"`
	ValueSeed   uint64      `json:"value_seed"`
	Kinds       []ValueKind `json:"kinds"`
	Mapping     []int64     `json:"slot_mapping"`
	FusedQHeads int         `json:"fused_q_heads,omitempty"`
	HostMap     bool        `json:"host_map,omitempty"`
}

// GPUStoreCases draws store calls: any format and dtype, 1..4 KV heads, block sizes 1..128, both
// layouts with padded strides, 1..300 tokens into a cache with at least as many slots, every slot
// mapping pattern, finite and (in a quarter of the draws) non-finite value kinds.
func GPUStoreCases() *rapid.Generator[*GPUStoreCase] {
	return rapid.Custom(func(t *rapid.T) *GPUStoreCase {
		d := rapidDraw{t}
		c := &GPUStoreCase{}
		f, _ := oracle.KernelFormat(pick(d, oracle.AllFormats, "format"))
		c.Dtype = pick(d, Dtypes, "dtype")
		hkv := d.intn(1, 4, "num_kv_heads")
		bs := pick(d, []int{16, 16, 1, 7, 32, 48, 64, 128}, "block_size")
		n := drawLength(d, 1, 300, bs, "num_tokens")
		nb := (n+bs-1)/bs + d.intn(0, 3, "spare_blocks")
		c.Cache = CacheShape{Format: f.Name(), NumBlocks: nb, NumKVHeads: hkv, BlockSize: bs}
		drawCacheLayout(d, f, &c.Cache)
		c.Garbage = d.u64("garbage_seed")
		c.Signs = drawSignPair(d)
		c.Rows = n + d.intn(0, 2, "extra_rows")
		c.ValueSeed = d.u64("value_seed")
		c.Kinds = drawKindMix(d, FiniteKinds, "kind")
		if d.intn(0, 3, "non_finite") == 3 {
			c.Kinds = append(c.Kinds, pick(d, NonFiniteKinds, "non_finite_kind"))
		}
		c.Mapping = drawSlotMapping(d, n, nb*bs)
		if d.intn(0, 3, "fused") == 3 {
			c.FusedQHeads = hkv * pick(d, []int{1, 2, 6}, "fused_group")
		}
		c.HostMap = d.intn(0, 1, "host_map") == 1
		return c
	})
}

// build returns the cache before the store and the K and V rows [Rows][Hkv][256] (values exactly
// representable in the dtype).
func (c *GPUStoreCase) build() (oracle.Format, *oracle.Cache, []float32, []float32, error) {
	f, err := KernelFormat(c.Cache.Format)
	if err != nil {
		return f, nil, nil, nil, err
	}
	data := make([]byte, c.Cache.Bytes(f))
	r := newRand(c.Garbage, 11)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	view, err := c.Cache.View(f, data)
	if err != nil {
		return f, nil, nil, nil, err
	}
	d := f.HeadSize
	hkv := c.Cache.NumKVHeads
	k, v := make([]float32, c.Rows*hkv*d), make([]float32, c.Rows*hkv*d)
	ks, vs := c.Signs.K.Signs(d), c.Signs.V.Signs(d)
	dr := rngDraw{newRand(c.ValueSeed, 12)}
	kinds := c.Kinds
	if len(kinds) == 0 {
		kinds = []ValueKind{Gaussian}
	}
	for i := 0; i < c.Rows*hkv; i++ {
		copy(k[i*d:], drawValueSpec(dr, pick(dr, kinds, ""), c.Dtype).Build(d, ks, f.KRotBlock()))
		copy(v[i*d:], drawValueSpec(dr, pick(dr, kinds, ""), c.Dtype).Build(d, vs, f.VRotBlock()))
	}
	return f, view, k, v, nil
}

// CheckGPUStore runs the store on the oracle (oracle.Quantizer) and on g (nil: the oracle alone)
// and judges each result: every written slot accepted under FORMAT.md §10 (identical or
// explained), pad bytes and every byte outside the written slots unchanged, canaries intact,
// inputs unchanged, and the same bytes when run twice.
func CheckGPUStore(g *GPU, c *GPUStoreCase) error {
	f, view, k, v, err := c.build()
	if err != nil {
		return fmt.Errorf("building the call: %w", err)
	}
	impls, err := Impls(g, OpStore)
	if err != nil {
		return err
	}
	before := view.Data
	for _, im := range impls {
		var after []byte
		if im.Oracle {
			after, err = c.storeOracle(f, view, k, v)
		} else {
			after, err = c.storeLib(g, f, view, k, v)
		}
		if err != nil {
			return err
		}
		if err := c.judge(im, f, view, before, after, k, v); err != nil {
			return err
		}
		if im.Oracle {
			continue
		}
		again, err := c.storeLib(g, f, view, k, v)
		if err != nil {
			return fmt.Errorf("second run: %w", err)
		}
		if err := sameBits(im, "store", after, again, func(i int) string { return fmt.Sprintf("cache byte %d (%s)", i, view.DescribeByte(i)) }); err != nil {
			return err
		}
	}
	return nil
}

func (c *GPUStoreCase) storeOracle(f oracle.Format, view *oracle.Cache, k, v []float32) ([]byte, error) {
	d := f.HeadSize
	q, err := oracle.NewQuantizer(f, c.Signs.K.Signs(d), c.Signs.V.Signs(d))
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), view.Data...)
	ov, err := c.Cache.View(f, out)
	if err != nil {
		return nil, err
	}
	pad := f.SlotBytes() - f.PadBytes()
	hkv := c.Cache.NumKVHeads
	for tk, s := range c.Mapping {
		if s < 0 || s >= int64(view.NumBlocks*view.BlockSize) {
			continue
		}
		for h := 0; h < hkv; h++ {
			slot := ov.Slot(int(s)/view.BlockSize, h, int(s)%view.BlockSize)
			buf := make([]byte, f.SlotBytes())
			q.QuantizeInto(buf, k[(tk*hkv+h)*d:][:d], v[(tk*hkv+h)*d:][:d])
			copy(slot[:pad], buf[:pad])
		}
	}
	return out, nil
}

func (c *GPUStoreCase) storeLib(g *GPU, f oracle.Format, view *oracle.Cache, k, v []float32) ([]byte, error) {
	d := f.HeadSize
	hkv := c.Cache.NumKVHeads
	w := hkv // heads per row of the key tensor
	koff, voff := 0, 0
	if c.FusedQHeads > 0 {
		w = c.FusedQHeads + 2*hkv
		koff, voff = c.FusedQHeads*d, (c.FusedQHeads+hkv)*d
	}
	bufs := &kernels.BufferSet{Dev: g.Dev, MinLen: 1}
	defer bufs.Free()
	var kp, vp uintptr
	if c.FusedQHeads > 0 {
		x := make([]byte, 2*c.Rows*w*d)
		for i := range x {
			x[i] = 0x3c // 1.0078 (fp16) / 0.0117 (bf16) filler in the query part
		}
		for tk := 0; tk < c.Rows; tk++ {
			for j := 0; j < hkv*d; j++ {
				binary.LittleEndian.PutUint16(x[2*(tk*w*d+koff+j):], c.Dtype.Bits(k[tk*hkv*d+j]))
				binary.LittleEndian.PutUint16(x[2*(tk*w*d+voff+j):], c.Dtype.Bits(v[tk*hkv*d+j]))
			}
		}
		b := bufs.Input("qkv", x)
		kp, vp = b.Ptr+uintptr(2*koff), b.Ptr+uintptr(2*voff)
	} else {
		kp = bufs.Input("key", actBytes(c.Dtype, k)).Ptr
		vp = bufs.Input("value", actBytes(c.Dtype, v)).Ptr
	}
	sm := bufs.Input("slot_mapping", kernels.Int64Bytes(c.Mapping))
	cb := bufs.InOut("cache", view.Data)
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	a := kernels.StoreArgs{Key: kp, Value: vp, Cache: cb.Ptr, SlotMapping: sm.Ptr,
		KeyStrideToken: int64(w * d), KeyStrideHead: int64(d), ValueStrideToken: int64(w * d), ValueStrideHead: int64(d),
		CacheStrideBlock: int64(view.StrideBlock), CacheStrideHead: int64(view.StrideHead), CacheStride: int64(view.StrideToken),
		Fmt: int32(f.ID), Dtype: kernelDtype(c.Dtype), HeadSize: int32(d), NumTokens: int32(len(c.Mapping)), NumKVHeads: int32(hkv),
		NumBlocks: int32(view.NumBlocks), BlockSize: int32(view.BlockSize), KSigns: kernels.SignWords(c.Signs.K.Signs(d).Words()), VSigns: kernels.SignWords(c.Signs.V.Signs(d).Words())}
	if c.HostMap && len(c.Mapping) > 0 {
		a.SlotMappingHost = &c.Mapping[0]
	}
	if err := g.finish(bufs, "cache_store", g.Dev.Store(a)); err != nil {
		return nil, err
	}
	return cb.ReadAll()
}

// judge checks the cache after a store against the cache before it.
func (c *GPUStoreCase) judge(im Impl, f oracle.Format, view *oracle.Cache, before, after []byte, k, v []float32) error {
	d := f.HeadSize
	hkv := c.Cache.NumKVHeads
	acc, err := oracle.NewAcceptor(f, c.Signs.K.Signs(d), c.Signs.V.Signs(d))
	if err != nil {
		return err
	}
	sb := f.SlotBytes()
	data := sb - f.PadBytes()
	inSlot := make([]bool, len(after))
	for tk, s := range c.Mapping {
		if s < 0 || s >= int64(view.NumBlocks*view.BlockSize) {
			continue
		}
		for h := 0; h < hkv; h++ {
			off := view.SlotOffset(int(s)/view.BlockSize, h, int(s)%view.BlockSize)
			for i := off; i < off+sb; i++ {
				inSlot[i] = true
			}
			got := after[off : off+sb]
			vd, err := acc.Accept(k[(tk*hkv+h)*d:][:d], v[(tk*hkv+h)*d:][:d], got)
			if err != nil {
				return err
			}
			if vd.Verdict != oracle.Identical && vd.Verdict != oracle.Explained {
				return fmt.Errorf("%s: slot_mapping[%d] = %d, KV head %d: stored slot refused by FORMAT.md §10 (the bound: identical, or a tie/rounding the rules explain): %s\n  stored %x\n  oracle %x",
					im.Name, tk, s, h, vd.Summary(), got[:data], vd.CanonicalBytes[:data])
			}
			if !bytes.Equal(got[data:], before[off+data:off+sb]) {
				return fmt.Errorf("%s: slot_mapping[%d] = %d, KV head %d: pad bytes written (the store must leave them untouched)", im.Name, tk, s, h)
			}
		}
	}
	for i := range after {
		if !inSlot[i] && after[i] != before[i] {
			return fmt.Errorf("%s: cache byte %d outside every mapped slot changed (%#02x, was %#02x): %s", im.Name, i, after[i], before[i], view.DescribeByte(i))
		}
	}
	return nil
}

func actBytes(dt Dtype, x []float32) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], dt.Bits(v))
	}
	return b
}
