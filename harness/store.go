package harness

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// StoreCall is one cache_store call (docs/contract.md §3.1) with concrete inputs: the cache
// before the store (Cache: its bytes and layout), Rows token rows of K and V ([Rows][Hkv][256],
// values exactly representable in Dtype), a slot mapping of at most Rows entries (−1 skips a
// token), the K and V signs, K and V as views into a fused QKV tensor with FusedQHeads query
// heads before them (0: separate tensors), and the slot mapping also passed on the host (HostMap).
type StoreCall struct {
	Cache          *oracle.Cache
	Dtype          Dtype
	K, V           []float32
	Rows           int
	Mapping        []int64
	KSigns, VSigns oracle.Signs
	FusedQHeads    int
	HostMap        bool
}

// Op is arch.Store.
func (c *StoreCall) Op() arch.Op { return arch.Store }

// judge runs the store on im (the oracle: oracle.Quantizer) and judges the cache after it: every
// written slot accepted under docs/format.md §10 (identical, or a difference the rules explain),
// pad bytes and every byte outside the written slots unchanged, canaries intact, inputs unchanged,
// and the same bytes when run twice. Output is the cache after the store.
func (c *StoreCall) judge(l *Lib, im Impl) Verdict {
	v := newVerdict(arch.Store, im)
	var after []byte
	var err error
	if im.Oracle {
		after, err = c.runOracle()
	} else {
		after, err = runTwice("store", true, func() ([]byte, error) { return c.runLib(l) },
			func(i int) string { return fmt.Sprintf("cache byte %d (%s)", i, c.Cache.DescribeByte(i)) })
	}
	if err != nil {
		return v.fail(err)
	}
	v.Output = after
	written, identical, err := c.check(after)
	v.Judged, v.Explained = written, written-identical
	v.Note = fmt.Sprintf("%d slots written: %d identical, %d explained (docs/format.md §10)", written, identical, written-identical)
	if err != nil {
		return v.fail(err)
	}
	return v
}

// live reports whether slot mapping entry s is a slot of the cache (else the token is skipped).
func (c *StoreCall) live(s int64) bool {
	return s >= 0 && s < int64(c.Cache.NumBlocks*c.Cache.BlockSize)
}

func (c *StoreCall) runOracle() ([]byte, error) {
	f := c.Cache.F
	d := f.HeadSize
	q, err := oracle.NewQuantizer(f, c.KSigns, c.VSigns)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), c.Cache.Data...)
	ov := *c.Cache
	ov.Data = out
	data := f.SlotBytes() - f.PadBytes()
	hkv := c.Cache.NumKVHeads
	buf := make([]byte, f.SlotBytes())
	for tk, s := range c.Mapping {
		if !c.live(s) {
			continue
		}
		for h := 0; h < hkv; h++ {
			slot := ov.Slot(int(s)/c.Cache.BlockSize, h, int(s)%c.Cache.BlockSize)
			q.QuantizeInto(buf, c.K[(tk*hkv+h)*d:][:d], c.V[(tk*hkv+h)*d:][:d])
			copy(slot[:data], buf[:data])
		}
	}
	return out, nil
}

func (c *StoreCall) runLib(l *Lib) ([]byte, error) {
	view, dt := c.Cache, c.Dtype
	f := view.F
	d := f.HeadSize
	hkv := view.NumKVHeads
	w := hkv // heads per row of the key tensor
	koff, voff := 0, 0
	if c.FusedQHeads > 0 {
		w = c.FusedQHeads + 2*hkv
		koff, voff = c.FusedQHeads*d, (c.FusedQHeads+hkv)*d
	}
	bufs := l.newBufs()
	defer bufs.Free()
	var kp, vp uintptr
	if c.FusedQHeads > 0 {
		x := make([]byte, 2*c.Rows*w*d)
		one := dt.Bits(1)
		for i := 0; i < len(x); i += 2 {
			binary.LittleEndian.PutUint16(x[i:], one) // the query part of the fused tensor
		}
		for tk := 0; tk < c.Rows; tk++ {
			for j := 0; j < hkv*d; j++ {
				binary.LittleEndian.PutUint16(x[2*(tk*w*d+koff+j):], dt.Bits(c.K[tk*hkv*d+j]))
				binary.LittleEndian.PutUint16(x[2*(tk*w*d+voff+j):], dt.Bits(c.V[tk*hkv*d+j]))
			}
		}
		b := bufs.Input("qkv", x)
		kp, vp = b.Ptr+uintptr(2*koff), b.Ptr+uintptr(2*voff)
	} else {
		kp = bufs.Input("key", dt.ActBytes(c.K)).Ptr
		vp = bufs.Input("value", dt.ActBytes(c.V)).Ptr
	}
	sm := bufs.Input("slot_mapping", kernels.Int64Bytes(c.Mapping))
	cb := bufs.InOut("cache", view.Data)
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	a := kernels.StoreArgs{Key: kp, Value: vp, Cache: cb.Ptr, SlotMapping: sm.Ptr,
		KeyStrideToken: int64(w * d), KeyStrideHead: int64(d), ValueStrideToken: int64(w * d), ValueStrideHead: int64(d),
		CacheStrideBlock: int64(view.StrideBlock), CacheStrideHead: int64(view.StrideHead), CacheStride: int64(view.StrideToken),
		Fmt: int32(f.ID), Dtype: dt.Kernel(), HeadSize: int32(d), NumTokens: int32(len(c.Mapping)), NumKVHeads: int32(hkv),
		NumBlocks: int32(view.NumBlocks), BlockSize: int32(view.BlockSize), KSigns: kernels.SignWords(c.KSigns.Words()), VSigns: kernels.SignWords(c.VSigns.Words())}
	if c.HostMap && len(c.Mapping) > 0 {
		a.SlotMappingHost = &c.Mapping[0]
	}
	if err := l.finish(bufs, "cache_store", l.Runner().Store(a)); err != nil {
		return nil, err
	}
	return cb.ReadAll()
}

// check judges the cache after a store against the cache before it; it returns how many slots
// were written and how many of those are identical to the oracle's.
func (c *StoreCall) check(after []byte) (written, identical int, err error) {
	view := c.Cache
	f := view.F
	d := f.HeadSize
	hkv := view.NumKVHeads
	acc, err := oracle.NewAcceptor(f, c.KSigns, c.VSigns)
	if err != nil {
		return 0, 0, err
	}
	before := view.Data
	sb := f.SlotBytes()
	data := sb - f.PadBytes()
	inSlot := make([]bool, len(after))
	for tk, s := range c.Mapping {
		if !c.live(s) {
			continue
		}
		for h := 0; h < hkv; h++ {
			b, t := int(s)/view.BlockSize, int(s)%view.BlockSize
			off := view.SlotOffset(b, h, t)
			for i := off; i < off+sb; i++ {
				inSlot[i] = true
			}
			written++
			got := after[off : off+sb]
			vd, err := acc.Accept(c.K[(tk*hkv+h)*d:][:d], c.V[(tk*hkv+h)*d:][:d], got)
			if err != nil {
				return written, identical, err
			}
			switch vd.Verdict {
			case oracle.Identical:
				identical++
			case oracle.Explained:
			default:
				return written, identical, fmt.Errorf("slot_mapping[%d] = %d (block %d offset %d), KV head %d: stored slot refused by docs/format.md §10 (the bound: identical, or a tie/rounding the rules explain): %s\n  stored %x\n  oracle %x",
					tk, s, b, t, h, vd.Summary(), got[:data], vd.CanonicalBytes[:data])
			}
			if i := firstDiff(got[data:], before[off+data:off+sb]); i >= 0 {
				return written, identical, fmt.Errorf("slot_mapping[%d] = %d, KV head %d: pad byte %d written (%#02x, was %#02x): the store must leave pad bytes untouched",
					tk, s, h, data+i, got[data+i], before[off+data+i])
			}
		}
	}
	n, first := 0, -1
	for i := range after {
		if !inSlot[i] && after[i] != before[i] {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if n > 0 {
		return written, identical, fmt.Errorf("%d cache bytes outside every mapped slot changed, first at byte %d (%#02x, was %#02x): %s",
			n, first, after[first], before[first], view.DescribeByte(first))
	}
	return written, identical, nil
}

// firstDiff is the index of the first byte where a and b differ, or −1.
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
