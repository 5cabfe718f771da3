package grids_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// errCase is one invalid call: the status it must return and a word its message must contain
// (the field, so that a caller can tell what to fix).
type errCase[A any] struct {
	name   string
	status kernels.Status
	field  string
	mod    func(a *A)
}

// expectError checks that err is a library error with the status and a message naming the field.
func expectError(t *testing.T, op, name string, err error, status kernels.Status, field string) {
	t.Helper()
	var ke *kernels.Error
	if !errors.As(err, &ke) {
		failf(t, "%s/%s: expected status %d naming %q, got %v", op, name, status, field, err)
		return
	}
	if ke.Status != status || !strings.Contains(ke.Message, field) {
		failf(t, "%s/%s: expected status %d with a message naming %q, got status %d (%s): %q", op, name, status, field, ke.Status, ke.Name, ke.Message)
	}
}

// unsupportedTiers lists tier ids the device does not offer for op.
func unsupportedTiers(t testing.TB, op arch.Op) []kernels.Tier {
	// The device's own list, not the judged tiers ($OCTANT_TIERS may leave some out).
	offered, err := lib(t).Dev.Tiers()
	if err != nil {
		t.Fatal(err)
	}
	var out []kernels.Tier
	for _, tr := range []kernels.Tier{kernels.TierPortable, kernels.TierWMMA, kernels.TierMFMA, kernels.TierMMA, 99, -1} {
		ok := false
		for _, d := range offered {
			if d.Tier == tr && d.Offers(op) {
				ok = true
			}
		}
		if !ok {
			out = append(out, tr)
		}
	}
	return out
}

// TestStoreErrors: every invalid cache_store is refused with its status and a message naming the
// field, before anything is written (the cache, with random bytes, must be unchanged).
func TestStoreErrors(t *testing.T) {
	skipNarrowed(t, arch.Store)
	dev := device(t)
	rng := rand.New(rand.NewPCG(caseSeed("errors/store"), 8))
	bufs := newBufSet(t, dev)
	f := kernelFormat(t, oracle.K3V4)
	nb, bs, hkv := 4, 16, 1
	kv, _ := randRows(rng, 4, kernels.F16, gaussian)
	key := bufs.input("key", kernels.Uint16Bytes(kv))
	cacheBytes := randBytes(rng, oracle.CacheBytes(f, nb, hkv, bs))
	cache := bufs.input("cache", cacheBytes)
	smap := func(s ...int64) uintptr {
		return bufs.input(fmt.Sprintf("slot_mapping%v", s), kernels.Int64Bytes(s)).Ptr
	}
	host := []int64{7, 7}
	sb := int64(f.SlotBytes())
	base := func() kernels.StoreArgs {
		return kernels.StoreArgs{Key: key.Ptr, Value: key.Ptr, Cache: cache.Ptr, SlotMapping: smap(1, 2, -1), KeyStrideToken: 256, KeyStrideHead: 256,
			ValueStrideToken: 256, ValueStrideHead: 256, CacheStrideBlock: int64(bs) * sb, CacheStrideHead: int64(bs) * sb, CacheStride: sb,
			Fmt: int32(f.ID), Dtype: kernels.F16, HeadSize: 256, NumTokens: 3, NumKVHeads: int32(hkv), NumBlocks: int32(nb), BlockSize: int32(bs),
			KSigns: kernels.SignWords(oracle.DefaultSigns(256).Words()), VSigns: kernels.SignWords(oracle.DefaultSigns(256).Words())}
	}
	cases := []errCase[kernels.StoreArgs]{
		{"fmt0", kernels.ErrFormat, "format", func(a *kernels.StoreArgs) { a.Fmt = 0 }},
		{"fmt20", kernels.ErrFormat, "format", func(a *kernels.StoreArgs) { a.Fmt = 20 }},
		{"dtype0", kernels.ErrDtype, "dtype", func(a *kernels.StoreArgs) { a.Dtype = 0 }},
		{"dtype3", kernels.ErrDtype, "dtype", func(a *kernels.StoreArgs) { a.Dtype = 3 }},
		{"head128", kernels.ErrHeadSize, "head_size", func(a *kernels.StoreArgs) { a.HeadSize = 128 }},
		{"stride-token", kernels.ErrStride, "cache_stride_token", func(a *kernels.StoreArgs) { a.CacheStride = sb - 4 }},
		{"stride-head", kernels.ErrStride, "cache_stride_head", func(a *kernels.StoreArgs) { a.CacheStrideHead += 2 }},
		{"stride-block", kernels.ErrStride, "cache_stride_block", func(a *kernels.StoreArgs) { a.CacheStrideBlock = -int64(bs) * sb }},
		{"stride-compact", kernels.ErrStride, "cache_stride_token", func(a *kernels.StoreArgs) { a.Fmt = 19; a.CacheStride = 198 }},
		{"key-stride", kernels.ErrStride, "key strides", func(a *kernels.StoreArgs) { a.KeyStrideToken = -256 }},
		{"align", kernels.ErrAlignment, "cache", func(a *kernels.StoreArgs) { a.Cache += 4 }},
		{"align-compact", kernels.ErrAlignment, "cache", func(a *kernels.StoreArgs) { a.Fmt = 19; a.CacheStride = 196; a.Cache += 2 }},
		{"slot-range", kernels.ErrSlotRange, "slot_mapping[1]", func(a *kernels.StoreArgs) { a.SlotMapping = smap(3, int64(nb*bs), 5) }},
		{"slot-huge", kernels.ErrSlotRange, "slot_mapping[0]", func(a *kernels.StoreArgs) { a.SlotMapping = smap(math.MaxInt64, 1, 2) }},
		{"slot-dup", kernels.ErrSlotDuplicate, "slot_mapping[", func(a *kernels.StoreArgs) { a.SlotMapping = smap(5, -1, 5) }},
		{"slot-dup-host", kernels.ErrSlotDuplicate, "slot_mapping[", func(a *kernels.StoreArgs) { a.SlotMappingHost = &host[0]; a.NumTokens = 2 }},
		{"key-null", kernels.ErrInvalidArgument, "key", func(a *kernels.StoreArgs) { a.Key = 0 }},
		{"tokens-negative", kernels.ErrInvalidArgument, "num_tokens", func(a *kernels.StoreArgs) { a.NumTokens = -1 }},
		{"blocks0", kernels.ErrInvalidArgument, "num_blocks", func(a *kernels.StoreArgs) { a.NumBlocks = 0 }},
	}
	for _, c := range cases {
		if skippedThroughWorker(t, c.name, map[string]string{"slot-dup-host": hostMapThroughWorker}[c.name]) {
			continue
		}
		a := base()
		c.mod(&a)
		expectError(t, "cache_store", c.name, dev.Store(a), c.status, c.field)
	}
	// Compact formats accept 4-byte multiples.
	a := base()
	a.Fmt, a.CacheStride, a.CacheStrideHead, a.CacheStrideBlock = 19, 196, 196*16, 196*16
	if err := dev.Store(a); err != nil {
		failf(t, "cache_store of octave_k3v3_compact with cache_stride_token 196: %v, expected OK", err)
	}
	must(t, dev.Sync(), "sync")
	bufs.checkCanaries(t, "invalid stores")
	// Everything but the valid compact store was refused before writing: compare all but its slots.
	got := read(t, cache)
	for i := range got {
		s := i / 196
		if (s == 1 || s == 2) && i < 3*196 {
			continue
		}
		if got[i] != cacheBytes[i] {
			failf(t, "an invalid cache_store wrote cache byte %d (%#02x, was %#02x): errors must be reported before anything is written", i, got[i], cacheBytes[i])
			break
		}
	}
}

// decodeErrEnv is a valid small decode call to break one field at a time.
type decodeErrEnv struct {
	bufs  *bufSet
	out   *kernels.SetBuffer
	part  *kernels.SetBuffer
	base  func() kernels.DecodeArgs
	pneed uint64
}

func newDecodeErrEnv(t *testing.T, dev *kernels.Device) *decodeErrEnv {
	rng := rand.New(rand.NewPCG(caseSeed("errors/decode"), 9))
	e := &decodeErrEnv{bufs: newBufSet(t, dev)}
	f := kernelFormat(t, oracle.K3V4)
	sb := int64(f.SlotBytes())
	nq, hq, ns := 2, 6, 3
	q, _ := randRows(rng, nq*hq, kernels.F16, gaussian)
	query := e.bufs.input("query", kernels.Uint16Bytes(q))
	cache := e.bufs.input("cache", randBytes(rng, oracle.CacheBytes(f, 4, 1, 16)))
	bt := e.bufs.input("block_table", kernels.Int32Bytes([]int32{0, 1}))
	qr := e.bufs.input("q_to_req", kernels.Int32Bytes([]int32{0, 1}))
	qk := e.bufs.input("q_to_klen", kernels.Int32Bytes([]int32{5, 0}))
	e.out = e.bufs.output("out", nq*hq*512, 0xFF)
	e.pneed = uint64(nq * hq * ns * 260 * 4)
	e.part = e.bufs.output("partials", int(e.pneed)+64, 0xFF)
	e.base = func() kernels.DecodeArgs {
		return kernels.DecodeArgs{Out: e.out.Ptr, Query: query.Ptr, Cache: cache.Ptr, BlockTable: bt.Ptr, QToReq: qr.Ptr, QToKlen: qk.Ptr,
			Partials: e.part.Ptr, PartialsBytes: e.pneed, OutStrideToken: int64(hq * 256), OutStrideHead: 256, QueryStrideToken: int64(hq * 256), QueryStrideHead: 256,
			CacheStrideBlock: 16 * sb, CacheStrideHead: 16 * sb, CacheStrideTk: sb, Fmt: int32(f.ID), Dtype: kernels.F16, HeadSize: 256, Tier: kernels.TierPortable,
			NumQ: int32(nq), NumQHeads: int32(hq), NumKVHeads: 1, NumReqs: 1, NumBlocks: 4, BlockSize: 16, MaxBlocks: 2, NumSplits: int32(ns), QueryGroup: 1,
			SMScale: 0.0625, KSigns: kernels.SignWords(oracle.DefaultSigns(256).Words()), VSigns: kernels.SignWords(oracle.DefaultSigns(256).Words())}
	}
	return e
}

// newPrefillErrEnv is a valid small prefill call on tier (k3v3, one sequence of 20 tokens whose
// last T are the chunk, hq query heads, one KV head, inputs drawn from rng) to break one field at
// a time: its buffers, its output (0xFF) and its arguments.
func newPrefillErrEnv(t *testing.T, dev *kernels.Device, tier kernels.TierDesc, rng *rand.Rand, T, hq int) (*bufSet, *kernels.SetBuffer, func() kernels.PrefillArgs) {
	bufs := newBufSet(t, dev)
	f := kernelFormat(t, oracle.K3V3)
	sb := int64(f.SlotBytes())
	q, _ := randRows(rng, T*hq, kernels.F16, gaussian)
	qb := bufs.input("q", kernels.Uint16Bytes(q))
	cache := bufs.input("cache", randBytes(rng, oracle.CacheBytes(f, 2, 1, 16)))
	bt := bufs.input("block_table", kernels.Int32Bytes([]int32{0, 1}))
	cu := bufs.input("cu_seqlens_q", kernels.Int32Bytes([]int32{0, int32(T)}))
	sl := bufs.input("seq_lens", kernels.Int32Bytes([]int32{20}))
	out := bufs.output("out", T*hq*512, 0xFF)
	base := func() kernels.PrefillArgs {
		return kernels.PrefillArgs{Out: out.Ptr, Q: qb.Ptr, K: qb.Ptr, V: qb.Ptr, Cache: cache.Ptr, BlockTable: bt.Ptr, CuSeqlensQ: cu.Ptr,
			SeqLens: sl.Ptr, OutStrideToken: int64(hq * 256), OutStrideHead: 256, QStrideToken: int64(hq * 256), QStrideHead: 256,
			KStrideToken: int64(hq * 256), KStrideHead: 256, VStrideToken: int64(hq * 256), VStrideHead: 256, CacheStrideBlock: 16 * sb,
			CacheStrideHead: 16 * sb, CacheStrideToken: sb, Fmt: int32(f.ID), Dtype: kernels.F16, HeadSize: 256, Tier: tier.Tier, NumTokens: int32(T),
			NumSeqs: 1, NumQHeads: int32(hq), NumKVHeads: 1, NumBlocks: 2, BlockSize: 16, MaxBlocks: 2, MaxQueryLen: int32(T), SMScale: 0.0625}
	}
	return bufs, out, base
}

// TestDecodeErrors: every invalid decode is refused with its status and a message naming the
// field, on every decode tier, and writes neither out nor partials.
func TestDecodeErrors(t *testing.T) {
	skipNarrowed(t, arch.Decode)
	dev := device(t)
	forEachTier(t, arch.Decode, func(t *testing.T, tier kernels.TierDesc) {
		e := newDecodeErrEnv(t, dev)
		nan, inf := float32(math.NaN()), float32(math.Inf(1))
		cases := []errCase[kernels.DecodeArgs]{
			{"fmt0", kernels.ErrFormat, "format", func(a *kernels.DecodeArgs) { a.Fmt = 0 }},
			{"fmt20", kernels.ErrFormat, "format", func(a *kernels.DecodeArgs) { a.Fmt = 20 }},
			{"dtype", kernels.ErrDtype, "dtype", func(a *kernels.DecodeArgs) { a.Dtype = 3 }},
			{"head", kernels.ErrHeadSize, "head_size", func(a *kernels.DecodeArgs) { a.HeadSize = 512 }},
			{"stride", kernels.ErrStride, "cache_stride_token", func(a *kernels.DecodeArgs) { a.CacheStrideTk = 252 }},
			{"stride-compact", kernels.ErrStride, "cache_stride_token", func(a *kernels.DecodeArgs) { a.Fmt = 19; a.CacheStrideTk = 194 }},
			{"stride-block", kernels.ErrStride, "cache_stride_block", func(a *kernels.DecodeArgs) { a.CacheStrideBlock = 4 }},
			{"align", kernels.ErrAlignment, "cache", func(a *kernels.DecodeArgs) { a.Cache += 4 }},
			{"splits0", kernels.ErrNumSplits, "num_splits", func(a *kernels.DecodeArgs) { a.NumSplits = 0 }},
			{"splits1025", kernels.ErrNumSplits, "num_splits", func(a *kernels.DecodeArgs) { a.NumSplits = 1025 }},
			{"partials-small", kernels.ErrWorkspace, "partials_bytes", func(a *kernels.DecodeArgs) { a.PartialsBytes = e.pneed - 4 }},
			{"pstride257", kernels.ErrWorkspace, "partial_stride", func(a *kernels.DecodeArgs) { a.PartialStride = 257 }},
			{"pstride258", kernels.ErrWorkspace, "partial_stride", func(a *kernels.DecodeArgs) { a.PartialStride = 258 }},
			{"partials-align", kernels.ErrAlignment, "partials", func(a *kernels.DecodeArgs) { a.Partials += 4; a.PartialsBytes += 60 }},
			// 2^20 rows x 8 heads x 1024 splits x 2^30 floats x 4 bytes = 2^65 bytes, 0 in 64 bits:
			// without the overflow check the size would read as "no workspace needed" and launch.
			{"partials-overflow", kernels.ErrWorkspace, "overflows 64 bits", func(a *kernels.DecodeArgs) {
				a.NumQ, a.NumQHeads, a.NumSplits, a.PartialStride = 1<<20, 8, 1024, 1<<30
			}},
			{"dtype0", kernels.ErrDtype, "dtype", func(a *kernels.DecodeArgs) { a.Dtype = 0 }},
			{"scale0", kernels.ErrScale, "sm_scale", func(a *kernels.DecodeArgs) { a.SMScale = 0 }},
			{"scale-neg", kernels.ErrScale, "sm_scale", func(a *kernels.DecodeArgs) { a.SMScale = -0.0625 }},
			{"scale-nan", kernels.ErrScale, "sm_scale", func(a *kernels.DecodeArgs) { a.SMScale = nan }},
			{"scale-inf", kernels.ErrScale, "sm_scale", func(a *kernels.DecodeArgs) { a.SMScale = inf }},
			{"qgroup0", kernels.ErrQueryGroup, "query_group", func(a *kernels.DecodeArgs) { a.QueryGroup = 0 }},
			{"qgroup5", kernels.ErrQueryGroup, "query_group", func(a *kernels.DecodeArgs) { a.QueryGroup = 5 }},
			{"query-null", kernels.ErrInvalidArgument, "query", func(a *kernels.DecodeArgs) { a.Query = 0 }},
			{"maps-null", kernels.ErrInvalidArgument, "q_to_klen", func(a *kernels.DecodeArgs) { a.QToKlen = 0 }},
			{"bt-null", kernels.ErrInvalidArgument, "block_table", func(a *kernels.DecodeArgs) { a.BlockTable = 0 }},
			{"numq-negative", kernels.ErrInvalidArgument, "num_q", func(a *kernels.DecodeArgs) { a.NumQ = -2 }},
		}
		for _, g := range []int32{3, 5, 7, 16} {
			cases = append(cases, errCase[kernels.DecodeArgs]{fmt.Sprintf("g%d", g), kernels.ErrGQA, "num_q_heads", func(a *kernels.DecodeArgs) { a.NumQHeads = g }})
		}
		cases = append(cases, errCase[kernels.DecodeArgs]{"g-fraction", kernels.ErrGQA, "num_kv_heads", func(a *kernels.DecodeArgs) { a.NumQHeads, a.NumKVHeads = 6, 4 }})
		for _, tr := range unsupportedTiers(t, arch.Decode) {
			cases = append(cases, errCase[kernels.DecodeArgs]{fmt.Sprintf("tier%d", tr), kernels.ErrUnsupportedTier, "tier", func(a *kernels.DecodeArgs) { a.Tier = tr }})
		}
		for _, c := range cases {
			a := e.base()
			a.Tier = tier.Tier
			c.mod(&a)
			expectError(t, "decode", c.name, dev.Decode(a), c.status, c.field)
		}
		must(t, dev.Sync(), "sync")
		e.bufs.checkCanaries(t, "invalid decodes")
		e.bufs.checkInputs(t, "invalid decodes")
		for _, b := range []*kernels.SetBuffer{e.out, e.part} {
			for i, x := range read(t, b) {
				if x != 0xFF {
					failf(t, "an invalid decode wrote %s byte %d (%#02x): errors must be reported before anything is launched", b.Name, i, x)
					break
				}
			}
		}
		// The unbroken call works.
		a := e.base()
		a.Tier = tier.Tier
		must(t, dev.Decode(a), "the valid decode of the error table")
	})
}

// TestPrefillErrors: invalid prefill calls on every prefill tier.
func TestPrefillErrors(t *testing.T) {
	skipNarrowed(t, arch.Prefill)
	dev := device(t)
	forEachTier(t, arch.Prefill, func(t *testing.T, tier kernels.TierDesc) {
		rng := rand.New(rand.NewPCG(caseSeed("errors/prefill"), 10))
		T, hq := 4, 6
		bufs, out, base := newPrefillErrEnv(t, dev, tier, rng, T, hq)
		cases := []errCase[kernels.PrefillArgs]{
			{"fmt", kernels.ErrFormat, "format", func(a *kernels.PrefillArgs) { a.Fmt = 5 }},
			{"dtype", kernels.ErrDtype, "dtype", func(a *kernels.PrefillArgs) { a.Dtype = 7 }},
			{"head", kernels.ErrHeadSize, "head_size", func(a *kernels.PrefillArgs) { a.HeadSize = 64 }},
			{"gqa", kernels.ErrGQA, "num_q_heads", func(a *kernels.PrefillArgs) { a.NumKVHeads = 4 }},
			{"stride", kernels.ErrStride, "cache_stride_head", func(a *kernels.PrefillArgs) { a.CacheStrideHead = 12 }},
			{"q-stride", kernels.ErrStride, "q strides", func(a *kernels.PrefillArgs) { a.QStrideHead = -1 }},
			{"align", kernels.ErrAlignment, "cache", func(a *kernels.PrefillArgs) { a.Cache += 2 }},
			{"scale0", kernels.ErrScale, "sm_scale", func(a *kernels.PrefillArgs) { a.SMScale = 0 }},
			{"scale-nan", kernels.ErrScale, "sm_scale", func(a *kernels.PrefillArgs) { a.SMScale = float32(math.NaN()) }},
			{"scale-inf", kernels.ErrScale, "sm_scale", func(a *kernels.PrefillArgs) { a.SMScale = float32(math.Inf(1)) }},
			{"cu-null", kernels.ErrInvalidArgument, "cu_seqlens_q", func(a *kernels.PrefillArgs) { a.CuSeqlensQ = 0 }},
			{"seqs-negative", kernels.ErrInvalidArgument, "num_seqs", func(a *kernels.PrefillArgs) { a.NumSeqs = -1 }},
			{"splits-negative", kernels.ErrNumSplits, "num_splits", func(a *kernels.PrefillArgs) { a.NumSplits = -1 }},
			{"splits-65", kernels.ErrNumSplits, "num_splits", func(a *kernels.PrefillArgs) { a.NumSplits = 65 }},
		}
		for _, tr := range unsupportedTiers(t, arch.Prefill) {
			cases = append(cases, errCase[kernels.PrefillArgs]{fmt.Sprintf("tier%d", tr), kernels.ErrUnsupportedTier, "tier", func(a *kernels.PrefillArgs) { a.Tier = tr }})
		}
		if tier.Tier == kernels.TierMMA {
			// 2^23 rows × G 65535 make more workgroups of 128 (row, head) pairs (OCT_PM_PAIRS)
			// than a grid holds: refused before anything is read (the buffers are far smaller than
			// the counts say).
			cases = append(cases, errCase[kernels.PrefillArgs]{"grid", kernels.ErrInvalidArgument, "grid too large", func(a *kernels.PrefillArgs) {
				a.NumTokens, a.NumQHeads, a.NumKVHeads = 1<<23, 65535, 1
			}})
		}
		for _, c := range cases {
			if skippedThroughWorker(t, c.name, map[string]string{"grid": "the worker refuses the extents that 2^23 rows imply (beyond its arena) before the library sees the call, so the library's grid check is never reached"}[c.name]) {
				continue
			}
			a := base()
			c.mod(&a)
			expectError(t, "prefill", c.name, dev.Prefill(a), c.status, c.field)
		}
		must(t, dev.Sync(), "sync")
		bufs.checkCanaries(t, "invalid prefills")
		bufs.checkInputs(t, "invalid prefills")
		for i, x := range read(t, out) {
			if x != 0xFF {
				failf(t, "an invalid prefill wrote out byte %d", i)
				break
			}
		}
		// Octant decision (docs/contract.md §3.5, octave_capi.h): the portable, WMMA, mfma and mma tiers
		// accept bf16 q, k, v and out as an extension of the contract's fp16; a tier without it refuses
		// bf16 with OCTAVE_ERR_DTYPE. (TestPrefillGrid judges bf16 results against the oracle.)
		qbf, _ := randRows(rng, T*hq, kernels.BF16, gaussian)
		qbfb := bufs.input("q bf16", kernels.Uint16Bytes(qbf))
		a := base()
		a.Dtype, a.Q, a.K, a.V = kernels.BF16, qbfb.Ptr, qbfb.Ptr, qbfb.Ptr
		err := dev.Prefill(a)
		if tier.Tier == kernels.TierPortable || tier.Tier == kernels.TierWMMA || tier.Tier == kernels.TierMFMA || tier.Tier == kernels.TierMMA {
			must(t, err, "prefill with bf16 on the "+string(tier.Name)+" tier (an Octant extension: accepted)")
			must(t, dev.Sync(), "sync")
			written := false
			for _, x := range read(t, out) {
				written = written || x != 0xFF
			}
			if !written {
				failf(t, "prefill with bf16 returned OK but wrote no out byte")
			}
		} else if err != nil {
			expectError(t, "prefill", "bf16-"+string(tier.Name), err, kernels.ErrDtype, "dtype")
		}
	})
}

// TestReduceRotateErrors: invalid reduce and rotate calls.
func TestReduceRotateErrors(t *testing.T) {
	skipNarrowed(t, arch.Reduce, arch.Rotate)
	dev := device(t)
	bufs := newBufSet(t, dev)
	nq, hq, ns := 2, 2, 3
	need := nq * hq * ns * 260 * 4
	part := bufs.input("partials", make([]byte, need))
	out := bufs.output("out", nq*hq*512, 0xFF)
	base := func() kernels.ReduceArgs {
		return kernels.ReduceArgs{Out: out.Ptr, Partials: part.Ptr, PartialsBytes: uint64(need), OutStrideToken: int64(hq * 256), OutStrideHead: 256,
			Dtype: kernels.BF16, HeadSize: 256, NumQ: int32(nq), NumQHeads: int32(hq), NumSplits: int32(ns)}
	}
	for _, c := range []errCase[kernels.ReduceArgs]{
		{"dtype", kernels.ErrDtype, "dtype", func(a *kernels.ReduceArgs) { a.Dtype = 0 }},
		{"head", kernels.ErrHeadSize, "head_size", func(a *kernels.ReduceArgs) { a.HeadSize = 255 }},
		{"splits0", kernels.ErrNumSplits, "num_splits", func(a *kernels.ReduceArgs) { a.NumSplits = 0 }},
		{"splits1025", kernels.ErrNumSplits, "num_splits", func(a *kernels.ReduceArgs) { a.NumSplits = 1025 }},
		{"partials-small", kernels.ErrWorkspace, "partials_bytes", func(a *kernels.ReduceArgs) { a.PartialsBytes-- }},
		{"pstride", kernels.ErrWorkspace, "partial_stride", func(a *kernels.ReduceArgs) { a.PartialStride = 259 }},
		{"align", kernels.ErrAlignment, "partials", func(a *kernels.ReduceArgs) { a.Partials += 8 }},
		{"partials-overflow", kernels.ErrWorkspace, "overflows 64 bits", func(a *kernels.ReduceArgs) {
			a.NumQ, a.NumQHeads, a.NumSplits, a.PartialStride = 1<<20, 8, 1024, 1<<30
		}},
	} {
		a := base()
		c.mod(&a)
		expectError(t, "reduce", c.name, dev.Reduce(a), c.status, c.field)
	}
	x := bufs.input("x", make([]byte, 4*256*2))
	rbase := func() kernels.RotateArgs {
		return kernels.RotateArgs{X: x.Ptr, StrideToken: 256, StrideHead: 256, Dtype: kernels.F16, HeadSize: 256, NumTokens: 4, NumHds: 1}
	}
	for _, c := range []errCase[kernels.RotateArgs]{
		{"dtype", kernels.ErrDtype, "dtype", func(a *kernels.RotateArgs) { a.Dtype = 9 }},
		{"head", kernels.ErrHeadSize, "head_size", func(a *kernels.RotateArgs) { a.HeadSize = 64 }},
		{"stride", kernels.ErrStride, "x strides", func(a *kernels.RotateArgs) { a.StrideToken = -256 }},
	} {
		a := rbase()
		c.mod(&a)
		expectError(t, "rotate", c.name, dev.Rotate(a), c.status, c.field)
	}
	must(t, dev.Sync(), "sync")
	bufs.checkCanaries(t, "invalid reduce and rotate calls")
	bufs.checkInputs(t, "invalid reduce and rotate calls")
	for i, b := range read(t, out) {
		if b != 0xFF {
			failf(t, "an invalid reduce wrote out byte %d", i)
			break
		}
	}
}

// TestEmptyCalls: calls with nothing to do (no tokens, no query rows, no sequences) succeed and
// write nothing.
func TestEmptyCalls(t *testing.T) {
	skipNarrowed(t, arch.Ops()...)
	skipNoQueryMaps(t)
	dev := device(t)
	bufs := newBufSet(t, dev)
	f := kernelFormat(t, oracle.K3V4)
	sb := int64(f.SlotBytes())
	cache := bufs.input("cache", randBytes(rand.New(rand.NewPCG(1, 2)), oracle.CacheBytes(f, 2, 1, 16)))
	out := bufs.output("out", 4096, 0xFF)
	part := bufs.output("partials", 4096, 0xFF)
	must(t, dev.Store(kernels.StoreArgs{Cache: cache.Ptr, CacheStrideBlock: 16 * sb, CacheStrideHead: 16 * sb, CacheStride: sb, Fmt: 4, Dtype: kernels.F16,
		HeadSize: 256, NumTokens: 0, NumKVHeads: 1, NumBlocks: 2, BlockSize: 16}), "cache_store of 0 tokens")
	must(t, dev.Rotate(kernels.RotateArgs{Dtype: kernels.BF16, HeadSize: 256, NumTokens: 0, NumHds: 3}), "rotate of 0 rows")
	for _, tier := range lib(t).Tiers {
		if tier.Offers(arch.Decode) {
			must(t, dev.Decode(kernels.DecodeArgs{Out: out.Ptr, Cache: cache.Ptr, Partials: part.Ptr, CacheStrideBlock: 16 * sb, CacheStrideHead: 16 * sb,
				CacheStrideTk: sb, Fmt: 4, Dtype: kernels.F16, HeadSize: 256, Tier: tier.Tier, NumQ: 0, NumQHeads: 8, NumKVHeads: 1, NumBlocks: 2, BlockSize: 16,
				NumSplits: 7, QueryGroup: 2, SMScale: 0.0625}), "decode of 0 rows on "+string(tier.Name))
		}
		if tier.Offers(arch.Prefill) {
			must(t, dev.Prefill(kernels.PrefillArgs{Out: out.Ptr, Cache: cache.Ptr, CacheStrideBlock: 16 * sb, CacheStrideHead: 16 * sb, CacheStrideToken: sb,
				Fmt: 4, Dtype: kernels.F16, HeadSize: 256, Tier: tier.Tier, NumTokens: 5, NumSeqs: 0, NumQHeads: 2, NumKVHeads: 1, NumBlocks: 2, BlockSize: 16,
				SMScale: 0.0625}), "prefill of 0 sequences on "+string(tier.Name))
		}
	}
	must(t, dev.Reduce(kernels.ReduceArgs{Out: out.Ptr, Partials: part.Ptr, Dtype: kernels.F16, HeadSize: 256, NumQ: 0, NumQHeads: 2, NumSplits: 3}), "reduce of 0 rows")
	must(t, dev.QueryMaps(kernels.QueryMapsArgs{NumReqs: 3, NumQ: 0}), "query_maps of 0 tokens")
	must(t, dev.Sync(), "sync")
	bufs.checkCanaries(t, "calls with nothing to do")
	bufs.checkInputs(t, "calls with nothing to do")
	for _, b := range []*kernels.SetBuffer{out, part} {
		for i, x := range read(t, b) {
			if x != 0xFF {
				failf(t, "a call with nothing to do wrote %s byte %d", b.Name, i)
				break
			}
		}
	}
}
