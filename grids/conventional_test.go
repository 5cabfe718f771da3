package grids_test

// The conventional suite: a fixed grid shaped like upstream's own tests (docs/contract.md §7), with their
// checks only: one GQA group (G = 6, Hkv = 1), block size 16, one layout (LBHNC), default signs, a
// handful of lengths, one relative-L2 tolerance per test against the oracle, one seed. It exists
// to show what such a suite misses next to Octant's (`octant mutate --conventional`, issue 6);
// Octant's own grids are the other tests of this package. Run it alone with
// -run '^TestConventional'.

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// conventionalStore stores n tokens (Hkv 2, one outlier channel ×8) and returns the cache after
// the store, the oracle's cache of the same tokens and the slot mapping.
func conventionalStore(t *testing.T, dev *kernels.Device, f oracle.Format, dt kernels.Dtype, n, nb int, slots []int64, rng *rand.Rand) (got, want []byte) {
	const hkv, bs = 2, 16
	key, kf := randRows(rng, n*hkv, dt, actDist{sigma: 1, outlier: 5})
	val, vf := randRows(rng, n*hkv, dt, actDist{sigma: 1, outlier: 5})
	cache := randBytes(rng, oracle.CacheBytes(f, nb, hkv, bs))
	bufs := newBufSet(t, dev)
	kb, vb := bufs.input("key", kernels.Uint16Bytes(key)), bufs.input("value", kernels.Uint16Bytes(val))
	sm := bufs.input("slot_mapping", kernels.Int64Bytes(slots))
	cb := bufs.inout("cache", cache)
	view := newCache(t, f, cache, nb, hkv, bs, false)
	d := oracle.DefaultSigns(256)
	a := kernels.StoreArgs{Key: kb.Ptr, Value: vb.Ptr, Cache: cb.Ptr, SlotMapping: sm.Ptr, KeyStrideToken: hkv * 256, KeyStrideHead: 256,
		ValueStrideToken: hkv * 256, ValueStrideHead: 256, CacheStrideBlock: int64(view.StrideBlock), CacheStrideHead: int64(view.StrideHead),
		CacheStride: int64(view.StrideToken), Fmt: int32(f.ID), Dtype: dt, HeadSize: 256, NumTokens: int32(len(slots)), NumKVHeads: hkv,
		NumBlocks: int32(nb), BlockSize: bs, KSigns: kernels.SignWords(d.Words()), VSigns: kernels.SignWords(d.Words())}
	must(t, dev.Store(a), "store")
	must(t, dev.Sync(), "sync")
	got = read(t, cb)
	want = append([]byte(nil), cache...)
	wv := newCache(t, f, want, nb, hkv, bs, false)
	q, err := oracle.NewQuantizer(f, d, d)
	must(t, err, "quantizer")
	pad := f.SlotBytes() - f.PadBytes()
	buf := make([]byte, f.SlotBytes())
	for tk, s := range slots {
		if s < 0 {
			continue
		}
		for h := 0; h < hkv; h++ {
			q.QuantizeInto(buf, kf[(tk*hkv+h)*256:][:256], vf[(tk*hkv+h)*256:][:256])
			copy(wv.Slot(int(s)/bs, h, int(s)%bs)[:pad], buf[:pad])
		}
	}
	return got, want
}

// TestConventionalStore: 1024 tokens, Hkv 2, bf16, one outlier channel; the dequantized cache
// within relative L2 1e-2 of the reference's (never bytes).
func TestConventionalStore(t *testing.T) {
	dev := device(t)
	for _, id := range oracle.AllFormats {
		t.Run(fmtName(id), func(t *testing.T) {
			f := kernelFormat(t, id)
			rng := rand.New(rand.NewPCG(1, 1))
			n := 1024
			slots := make([]int64, n)
			for i := range slots {
				slots[i] = int64(i)
			}
			got, want := conventionalStore(t, dev, f, kernels.BF16, n, n/16, slots, rng)
			gv, wv := newCache(t, f, got, n/16, 2, 16, false), newCache(t, f, want, n/16, 2, 16, false)
			var g, w []float64
			for b := 0; b < n/16; b++ {
				for h := 0; h < 2; h++ {
					for tk := 0; tk < 16; tk++ {
						gk, gvv := oracle.DequantizeSlot(f, gv.Slot(b, h, tk))
						wk, wvv := oracle.DequantizeSlot(f, wv.Slot(b, h, tk))
						for i := range gk {
							g, w = append(g, float64(gk[i]), float64(gvv[i])), append(w, float64(wk[i]), float64(wvv[i]))
						}
					}
				}
			}
			if rel := oracle.RelL2(g, w); !(rel < 1e-2) {
				failf(t, "dequantized cache: relative L2 %.4g from the reference, expected < 1e-2", rel)
			}
		})
	}
}

// TestConventionalStoreSkip: slot −1 is skipped: only the one live slot changes.
func TestConventionalStoreSkip(t *testing.T) {
	dev := device(t)
	f := kernelFormat(t, oracle.K3V4)
	rng := rand.New(rand.NewPCG(1, 2))
	got, want := conventionalStore(t, dev, f, kernels.BF16, 2, 2, []int64{-1, 5}, rng)
	view := newCache(t, f, want, 2, 2, 16, false)
	for i := range got {
		in := false
		for h := 0; h < 2; h++ {
			o := view.SlotOffset(0, h, 5)
			in = in || (i >= o && i < o+f.SlotBytes())
		}
		if !in && got[i] != want[i] {
			fatalf(t, "cache byte %d outside the live slot changed", i)
		}
	}
}

// TestConventionalDecode: 3 formats × query_group {1, 4} × splits {1, 7, 64} × fp16/bf16; Hkv 1,
// G 6, block size 16; requests of 1, 16, 37, 700 and 3000 tokens; one padding query at the end
// that must be exactly 0; relative L2 < 2e-2 over the batch against exact attention.
func TestConventionalDecode(t *testing.T) {
	dev := device(t)
	lens := []int{1, 16, 37, 700, 3000}
	for _, id := range oracle.AllFormats {
		for _, qg := range []int{1, 4} {
			for _, splits := range []int{1, 7, 64} {
				for _, dt := range []kernels.Dtype{kernels.F16, kernels.BF16} {
					path := fmt.Sprintf("%s/qg%d/splits%d/%s", fmtName(id), qg, splits, dtName(dt))
					t.Run(path, func(t *testing.T) {
						t.Parallel() // (as the grids: on the emulator's two cores this suite took 7 of make test's 15 minutes one case at a time)
						forEachTier(t, arch.Decode, func(t *testing.T, tier kernels.TierDesc) {
							conventionalDecode(t, dev, tier, kernelFormat(t, id), dt, qg, splits, lens)
						})
					})
				}
			}
		}
	}
}

func conventionalDecode(t *testing.T, dev *kernels.Device, tier kernels.TierDesc, f oracle.Format, dt kernels.Dtype, qg, splits int, lens []int) {
	const hq, bs = 6, 16
	rng := rand.New(rand.NewPCG(7, uint64(qg*100+splits)))
	R := len(lens)
	maxBlocks := 0
	for _, l := range lens {
		maxBlocks = max(maxBlocks, (l+bs-1)/bs)
	}
	nb := R * maxBlocks
	bt := make([]int32, R*maxBlocks)
	for i := range bt {
		bt[i] = int32(i) // request r owns blocks r·maxBlocks …
	}
	cache := randBytes(rng, oracle.CacheBytes(f, nb, 1, bs))
	view := newCache(t, f, cache, nb, 1, bs, false)
	d := oracle.DefaultSigns(256)
	q, err := oracle.NewQuantizer(f, d, d)
	must(t, err, "quantizer")
	for r, l := range lens {
		k, _ := randRows(rng, l, dt, gaussian)
		v, _ := randRows(rng, l, dt, gaussian)
		for p := 0; p < l; p++ {
			kf, vf := make([]float32, 256), make([]float32, 256)
			for i := range kf {
				kf[i], vf[i] = fromAct(k[p*256+i], dt), fromAct(v[p*256+i], dt)
			}
			q.QuantizeInto(view.Slot(int(bt[r*maxBlocks+p/bs]), 0, p%bs), kf, vf)
		}
	}
	qToReq, qToKlen := make([]int32, R+1), make([]int32, R+1)
	for r, l := range lens {
		qToReq[r], qToKlen[r] = int32(r), int32(l)
	}
	qToReq[R], qToKlen[R] = int32(R), 0 // one padding query at the end
	nq := R + 1
	query, qf := randRows(rng, nq*hq, dt, gaussian)
	in := &oracle.DecodeInput{Cache: view, Query: qf, NumQHeads: hq, BlockTable: bt, NumReqs: R, MaxBlocks: maxBlocks,
		QToReq: qToReq, QToKlen: qToKlen, SMScale: 1.0 / 16, KSigns: d, VSigns: d}
	exact, err := oracle.ExactDecode(in)
	must(t, err, "exact decode")
	bufs := newBufSet(t, dev)
	qb, cb := bufs.input("query", kernels.Uint16Bytes(query)), bufs.input("cache", cache)
	btb, rb, kb := bufs.input("block_table", kernels.Int32Bytes(bt)), bufs.input("q_to_req", kernels.Int32Bytes(qToReq)), bufs.input("q_to_klen", kernels.Int32Bytes(qToKlen))
	out := bufs.output("out", 2*nq*hq*256, 0xFF)
	ws := dev.WorkspaceBytes(nq, hq, splits, 0)
	part := bufs.output("partials", int(ws), 0)
	a := kernels.DecodeArgs{Out: out.Ptr, Query: qb.Ptr, Cache: cb.Ptr, BlockTable: btb.Ptr, QToReq: rb.Ptr, QToKlen: kb.Ptr,
		Partials: part.Ptr, PartialsBytes: ws, OutStrideToken: hq * 256, OutStrideHead: 256, QueryStrideToken: hq * 256, QueryStrideHead: 256,
		CacheStrideBlock: int64(view.StrideBlock), CacheStrideHead: int64(view.StrideHead), CacheStrideTk: int64(view.StrideToken),
		Fmt: int32(f.ID), Dtype: dt, HeadSize: 256, Tier: tier.Tier, NumQ: int32(nq), NumQHeads: hq, NumKVHeads: 1, NumReqs: int32(R),
		NumBlocks: int32(nb), BlockSize: bs, MaxBlocks: int32(maxBlocks), NumSplits: int32(splits), QueryGroup: int32(qg), SMScale: 1.0 / 16,
		KSigns: kernels.SignWords(d.Words()), VSigns: kernels.SignWords(d.Words())}
	must(t, dev.Decode(a), "decode")
	must(t, dev.Sync(), "sync")
	raw := kernels.BytesUint16(read(t, out))
	for j := R * hq * 256; j < nq*hq*256; j++ {
		if raw[j] != 0 && raw[j] != 0x8000 {
			fatalf(t, "padding query: element %d = %#04x, expected exactly 0", j, raw[j])
		}
	}
	got := actsToF64(raw[:R*hq*256], dt)
	if rel := oracle.RelL2(got, exact[:R*hq*256]); !(rel < 2e-2) {
		failf(t, "relative L2 %.4g from the reference, expected < 2e-2", rel)
	}
}

// TestConventionalPrefill: 3 formats × query lengths {[300], [129, 1, 517]} with contexts 2500, 0
// and 4100; Hkv 1, G 6; relative L2 < 2e-2 against exact prefill over the written rows.
func TestConventionalPrefill(t *testing.T) {
	dev := device(t)
	for _, id := range oracle.AllFormats {
		for k, shape := range []struct{ q, ctx []int }{{[]int{300}, []int{2500}}, {[]int{129, 1, 517}, []int{2500, 0, 4100}}} {
			path := fmt.Sprintf("%s/shape%d", fmtName(id), k)
			t.Run(path, func(t *testing.T) {
				t.Parallel()
				c := &prefillCase{path: path, f: kernelFormat(t, id), dt: kernels.F16, g: 6, hkv: 1, bs: 16, qlens: shape.q, ctxs: shape.ctx, scale: 1.0 / 16}
				s := c.build(t, rand.New(rand.NewPCG(3, uint64(k))))
				exact, written, err := oracle.ExactPrefill(s.in)
				must(t, err, "oracle.ExactPrefill")
				forEachTier(t, arch.Prefill, func(t *testing.T, tier kernels.TierDesc) {
					got := actsToF64(conventionalPrefill(t, dev, tier, s), c.dt)
					var g, e []float64
					rowLen := s.hq * 256
					for i := 0; i < s.T; i++ {
						if written[i] {
							g = append(g, got[i*rowLen:(i+1)*rowLen]...)
							e = append(e, exact[i*rowLen:(i+1)*rowLen]...)
						}
					}
					if rel := oracle.RelL2(g, e); !(rel < 2e-2) {
						failf(t, "relative L2 %.4g from the reference, expected < 2e-2", rel)
					}
				})
			})
		}
	}
}

// conventionalPrefill runs one contiguous prefill as upstream's test does: status and output only
// (no canaries, no input or gap checks: this suite models upstream's, not Octant's judges).
func conventionalPrefill(t *testing.T, dev *kernels.Device, tier kernels.TierDesc, s *prefillSetup) []uint16 {
	in, c := s.in, s.c
	bufs := newBufSet(t, dev)
	dt := harness.DtypeOf(c.dt)
	q := bufs.input("q", dt.ActBytes(in.Q))
	k := bufs.input("k", dt.ActBytes(in.K))
	v := bufs.input("v", dt.ActBytes(in.V))
	cache := bufs.input("cache", s.cache)
	bt := bufs.input("block_table", kernels.Int32Bytes(s.bt))
	cu := bufs.input("cu_seqlens_q", kernels.Int32Bytes(s.cu))
	sl := bufs.input("seq_lens", kernels.Int32Bytes(s.seqLens))
	out := bufs.output("out", 2*max(1, s.T)*s.hq*256, 0xFF)
	maxq := 0
	for _, x := range c.qlens {
		maxq = max(maxq, x)
	}
	a := kernels.PrefillArgs{Out: out.Ptr, Q: q.Ptr, K: k.Ptr, V: v.Ptr, Cache: cache.Ptr, BlockTable: bt.Ptr, CuSeqlensQ: cu.Ptr, SeqLens: sl.Ptr,
		OutStrideToken: int64(s.hq * 256), OutStrideHead: 256, QStrideToken: int64(s.hq * 256), QStrideHead: 256, KStrideToken: int64(c.hkv * 256), KStrideHead: 256,
		VStrideToken: int64(c.hkv * 256), VStrideHead: 256, CacheStrideBlock: int64(in.Cache.StrideBlock), CacheStrideHead: int64(in.Cache.StrideHead),
		CacheStrideToken: int64(in.Cache.StrideToken), Fmt: int32(c.f.ID), Dtype: c.dt, HeadSize: 256, Tier: tier.Tier, NumTokens: int32(s.T),
		NumSeqs: int32(len(c.qlens)), NumQHeads: int32(s.hq), NumKVHeads: int32(c.hkv), NumBlocks: int32(s.nb), BlockSize: int32(c.bs),
		MaxBlocks: int32(s.maxBlocks), MaxQueryLen: int32(maxq), SMScale: c.scale}
	must(t, dev.Prefill(a), "prefill")
	must(t, dev.Sync(), "sync after prefill")
	return kernels.BytesUint16(read(t, out))
}
