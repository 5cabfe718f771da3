package cases

import (
	"github.com/octant-kv/octant/harness"

	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// GPUStoreCase is one cache_store call (docs/contract.md §3.1) for FuzzStore: a cache of garbage, T
// token rows of K and V (value recipes: Kinds mixed per row and head, non-finite kinds included
// when NonFinite), a slot mapping of NumTokens ≤ T entries, K and V signs, optionally K and V as
// views into a fused QKV tensor with FusedQHeads query heads before them, and the slot mapping also
// passed on the host.
type GPUStoreCase struct {
	Dtype       harness.Dtype `json:"dtype"`
	Cache       CacheShape    `json:"cache"`
	Garbage     uint64        `json:"garbage_seed"`
	Signs       SignPair      `json:"signs"`
	Rows        int           `json:"rows"`
	ValueSeed   uint64        `json:"value_seed"`
	Kinds       []ValueKind   `json:"kinds"`
	Mapping     []int64       `json:"slot_mapping"`
	FusedQHeads int           `json:"fused_q_heads,omitempty"`
	HostMap     bool          `json:"host_map,omitempty"`
	// HostileSeed, when not 0, makes the rows the store must not store and the old bytes of the
	// slots it writes hostile (hostile.go, StoreRegions): drawn in about half the calls.
	HostileSeed uint64 `json:"hostile_seed,omitempty"`
}

// GPUStoreCases draws store calls: any format and dtype, 1..4 KV heads, block sizes 1..128, both
// layouts with padded strides, 1..300 tokens into a cache with at least as many slots, every slot
// mapping pattern, finite and (in a quarter of the draws) non-finite value kinds.
func GPUStoreCases() *rapid.Generator[*GPUStoreCase] {
	return rapid.Custom(func(t *rapid.T) *GPUStoreCase { return drawGPUStoreCase(rapidDraw{t}) })
}

func drawGPUStoreCase(d draw) *GPUStoreCase {
	c := &GPUStoreCase{}
	f, _ := oracle.KernelFormat(pick(d, oracle.AllFormats, "format"))
	c.Dtype = pick(d, harness.Dtypes, "dtype")
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
	if d.intn(0, 1, "hostile") == 1 {
		c.HostileSeed = d.u64("hostile_seed") | 1
	}
	return c
}

// Call builds the call the judges run (harness.StoreCall): the cache of garbage before the store
// and the K and V rows [Rows][Hkv][256] (values exactly representable in the dtype).
func (c *GPUStoreCase) Call() (harness.Call, error) {
	f, err := KernelFormat(c.Cache.Format)
	if err != nil {
		return nil, err
	}
	data := make([]byte, c.Cache.Bytes(f))
	r := newRand(c.Garbage, 11)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	view, err := c.Cache.View(f, data)
	if err != nil {
		return nil, err
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
	call := &harness.StoreCall{Cache: view, Dtype: c.Dtype, K: k, V: v, Rows: c.Rows, Mapping: c.Mapping, KSigns: ks, VSigns: vs,
		FusedQHeads: c.FusedQHeads, HostMap: c.HostMap}
	if c.HostileSeed != 0 {
		call = hostileStore(call, c.HostileSeed, StoreRegions)
	}
	return call, nil
}
