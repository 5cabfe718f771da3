package grids_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// The alignment every pointer of an op needs (octave_capi.h, "Alignment"): fp16/bf16 elements 2
// bytes, int32 arrays 4, int64 arrays 8, the cache 8 (4 for format 19), partials 16.

// alignPtr is one pointer field of an op's args and the alignment it needs.
type alignPtr[A any] struct {
	field string
	align int
	ptr   func(a *A) *uintptr
}

// expectAlign checks that err is OCTAVE_ERR_ALIGNMENT with a message naming the field, the
// misalignment and the alignment needed.
func expectAlign(t *testing.T, op, field string, off, align int, err error) {
	t.Helper()
	var ke *kernels.Error
	if !errors.As(err, &ke) {
		failf(t, "%s: %s misaligned by %d: got %v, expected OCTAVE_ERR_ALIGNMENT (a GPU would fault on it)", op, field, off, err)
		return
	}
	plural := "s"
	if off == 1 {
		plural = ""
	}
	words := []string{op + ": " + field + " = ", fmt.Sprintf("misaligned by %d byte%s", off, plural), fmt.Sprintf("need %d-byte alignment", align)}
	ok := ke.Status == kernels.ErrAlignment
	for _, w := range words {
		ok = ok && strings.Contains(ke.Message, w)
	}
	if !ok {
		failf(t, "%s: %s misaligned by %d: status %d (%s) %q; expected OCTAVE_ERR_ALIGNMENT with a message saying %q",
			op, field, off, ke.Status, ke.Name, ke.Message, words)
	}
}

// misalignCompact is misalign of the cache pointer (4-byte aligned) in the compact format's calls:
// compact sets a call's format and cache strides to the compact ones and returns its cache field.
func misalignCompact[A any](t *testing.T, op string, base func() A, call func(A) error, compact func(*A) *uintptr) {
	t.Helper()
	misalign(t, op, func() A { a := base(); compact(&a); return a }, call, []alignPtr[A]{{"cache", 4, compact}})
}

// misalign runs call once per pointer of ptrs and offset 1..align-1, each on base() with that
// pointer moved by the offset, and checks that each is refused.
func misalign[A any](t *testing.T, op string, base func() A, call func(A) error, ptrs []alignPtr[A]) {
	t.Helper()
	n := 0
	for _, p := range ptrs {
		for off := 1; off < p.align; off++ {
			a := base()
			*p.ptr(&a) += uintptr(off)
			expectAlign(t, op, p.field, off, p.align, call(a))
			n++
		}
	}
	t.Logf("%s: %d misaligned calls refused", op, n)
}

// unchanged fails when b's bytes differ from want (a refused call wrote them).
func unchanged(t *testing.T, what string, b *kernels.SetBuffer, want []byte) {
	t.Helper()
	got := read(t, b)
	for i := range got {
		if got[i] != want[i] {
			failf(t, "%s: %s byte %d changed (%#02x, was %#02x): a refused call must write nothing", what, b.Name, i, got[i], want[i])
			return
		}
	}
}

// changed fails when b's bytes all equal want (the valid call after the refused ones did nothing).
func changed(t *testing.T, what string, b *kernels.SetBuffer, want []byte) {
	t.Helper()
	got := read(t, b)
	for i := range got {
		if got[i] != want[i] {
			return
		}
	}
	failf(t, "%s: %s unchanged by the valid call after the refused ones", what, b.Name)
}

func fill(n int, b byte) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// setHostPtr stores the host address p in a *int64 field without converting it to a Go pointer
// of that type (a misaligned *int64 is what the test passes on purpose).
func setHostPtr(f **int64, p uintptr) { *(*uintptr)(unsafe.Pointer(f)) = p }

// TestAlignmentErrors: every pointer of every op, moved by 1..alignment-1 bytes, is refused with
// OCTAVE_ERR_ALIGNMENT and a message naming the field, the misalignment and the alignment needed,
// before anything is launched (outputs, the cache and every input unchanged, canaries intact); the
// context stays usable: the valid call run afterwards works and writes its output.
func TestAlignmentErrors(t *testing.T) {
	skipNarrowed(t, arch.Ops()...)
	skipNoQueryMaps(t)
	dev := device(t)
	t.Run("cache_store", func(t *testing.T) { alignStore(t, dev) })
	t.Run("rotate", func(t *testing.T) { alignRotate(t, dev) })
	t.Run("decode", func(t *testing.T) {
		forEachTier(t, arch.Decode, func(t *testing.T, tier kernels.TierDesc) { alignDecode(t, dev, tier) })
	})
	t.Run("reduce", func(t *testing.T) { alignReduce(t, dev) })
	t.Run("prefill", func(t *testing.T) {
		forEachTier(t, arch.Prefill, func(t *testing.T, tier kernels.TierDesc) { alignPrefill(t, dev, tier) })
	})
	t.Run("query_maps", func(t *testing.T) { alignQueryMaps(t, dev) })
}

func alignStore(t *testing.T, dev *kernels.Device) {
	rng := rand.New(rand.NewPCG(caseSeed("align/store"), 1))
	bufs := newBufSet(t, dev)
	f := kernelFormat(t, oracle.K3V4)
	nb, bs := 4, 16
	kv, _ := randRows(rng, 2, kernels.F16, gaussian)
	key := bufs.input("key", kernels.Uint16Bytes(kv))
	cacheBytes := randBytes(rng, oracle.CacheBytes(f, nb, 1, bs))
	cache := bufs.inout("cache", cacheBytes)
	smap := bufs.input("slot_mapping", kernels.Int64Bytes([]int64{3, 17}))
	host := make([]int64, 4) // [1:3] holds the mapping; the misaligned views start inside host[0]
	host[1], host[2] = 3, 17
	hostBase := uintptr(unsafe.Pointer(&host[1]))
	sb := int64(f.SlotBytes())
	signs := kernels.SignWords(oracle.DefaultSigns(256).Words())
	base := func() kernels.StoreArgs {
		return kernels.StoreArgs{Key: key.Ptr, Value: key.Ptr, Cache: cache.Ptr, SlotMapping: smap.Ptr, KeyStrideToken: 256, KeyStrideHead: 256,
			ValueStrideToken: 256, ValueStrideHead: 256, CacheStrideBlock: int64(bs) * sb, CacheStrideHead: int64(bs) * sb, CacheStride: sb,
			Fmt: int32(f.ID), Dtype: kernels.F16, HeadSize: 256, NumTokens: 2, NumKVHeads: 1, NumBlocks: int32(nb), BlockSize: int32(bs),
			KSigns: signs, VSigns: signs}
	}
	misalign(t, "cache_store", base, dev.Store, []alignPtr[kernels.StoreArgs]{
		{"key", 2, func(a *kernels.StoreArgs) *uintptr { return &a.Key }},
		{"value", 2, func(a *kernels.StoreArgs) *uintptr { return &a.Value }},
		{"cache", 8, func(a *kernels.StoreArgs) *uintptr { return &a.Cache }},
		{"slot_mapping", 8, func(a *kernels.StoreArgs) *uintptr { return &a.SlotMapping }},
	})
	misalignCompact(t, "cache_store", base, dev.Store, func(a *kernels.StoreArgs) *uintptr {
		a.Fmt, a.CacheStride, a.CacheStrideHead, a.CacheStrideBlock = 19, 196, 196*int64(bs), 196*int64(bs)
		return &a.Cache
	})
	// The host copy of slot_mapping is read by the library as int64 too.
	if !skippedThroughWorker(t, "slot_mapping_host", hostMapThroughWorker) {
		for off := 1; off < 8; off++ {
			a := base()
			setHostPtr(&a.SlotMappingHost, hostBase-8+uintptr(off))
			expectAlign(t, "cache_store", "slot_mapping_host", off, 8, dev.Store(a))
		}
	}
	// With nothing to store the pointers are still checked.
	a := base()
	a.NumTokens, a.Key = 0, a.Key+1
	expectAlign(t, "cache_store", "key", 1, 2, dev.Store(a))
	runtime.KeepAlive(host)

	must(t, dev.Sync(), "sync")
	bufs.checkCanaries(t, "misaligned stores")
	bufs.checkInputs(t, "misaligned stores")
	unchanged(t, "misaligned stores", cache, cacheBytes)
	a = base()
	setHostPtr(&a.SlotMappingHost, hostBase)
	must(t, dev.Store(a), "the valid store after the misaligned ones")
	runtime.KeepAlive(host)
	must(t, dev.Sync(), "sync after the valid store")
	changed(t, "valid store", cache, cacheBytes)
}

func alignRotate(t *testing.T, dev *kernels.Device) {
	rng := rand.New(rand.NewPCG(caseSeed("align/rotate"), 2))
	bufs := newBufSet(t, dev)
	rows, _ := randRows(rng, 4, kernels.BF16, gaussian)
	xb := kernels.Uint16Bytes(rows)
	x := bufs.inout("x", xb)
	base := func() kernels.RotateArgs {
		return kernels.RotateArgs{X: x.Ptr, StrideToken: 256, StrideHead: 256, Dtype: kernels.BF16, HeadSize: 256, NumTokens: 4, NumHds: 1, KLayout: 1}
	}
	misalign(t, "rotate", base, dev.Rotate, []alignPtr[kernels.RotateArgs]{
		{"x", 2, func(a *kernels.RotateArgs) *uintptr { return &a.X }},
	})
	a := base()
	a.NumTokens, a.X = 0, a.X+1
	expectAlign(t, "rotate", "x", 1, 2, dev.Rotate(a))
	must(t, dev.Sync(), "sync")
	bufs.checkCanaries(t, "misaligned rotates")
	unchanged(t, "misaligned rotates", x, xb)
	must(t, dev.Rotate(base()), "the valid rotate after the misaligned ones")
	must(t, dev.Sync(), "sync after the valid rotate")
	changed(t, "valid rotate", x, xb)
}

func alignDecode(t *testing.T, dev *kernels.Device, tier kernels.TierDesc) {
	e := newDecodeErrEnv(t, dev)
	base := func() kernels.DecodeArgs {
		a := e.base()
		a.Tier = tier.Tier
		return a
	}
	misalign(t, "decode", base, dev.Decode, []alignPtr[kernels.DecodeArgs]{
		{"out", 2, func(a *kernels.DecodeArgs) *uintptr { return &a.Out }},
		{"query", 2, func(a *kernels.DecodeArgs) *uintptr { return &a.Query }},
		{"cache", 8, func(a *kernels.DecodeArgs) *uintptr { return &a.Cache }},
		{"block_table", 4, func(a *kernels.DecodeArgs) *uintptr { return &a.BlockTable }},
		{"q_to_req", 4, func(a *kernels.DecodeArgs) *uintptr { return &a.QToReq }},
		{"q_to_klen", 4, func(a *kernels.DecodeArgs) *uintptr { return &a.QToKlen }},
		{"partials", 16, func(a *kernels.DecodeArgs) *uintptr { return &a.Partials }},
	})
	misalignCompact(t, "decode", base, dev.Decode, func(a *kernels.DecodeArgs) *uintptr {
		a.Fmt, a.CacheStrideTk, a.CacheStrideHead, a.CacheStrideBlock = 19, 196, 196*16, 196*16
		return &a.Cache
	})
	a := base()
	a.NumQ, a.Query = 0, a.Query+1
	expectAlign(t, "decode", "query", 1, 2, dev.Decode(a))
	must(t, dev.Sync(), "sync")
	e.bufs.checkCanaries(t, "misaligned decodes")
	e.bufs.checkInputs(t, "misaligned decodes")
	unchanged(t, "misaligned decodes", e.out, fill(e.out.Len, 0xFF))
	unchanged(t, "misaligned decodes", e.part, fill(e.part.Len, 0xFF))
	must(t, dev.Decode(base()), "the valid decode after the misaligned ones")
	must(t, dev.Sync(), "sync after the valid decode")
	changed(t, "valid decode", e.out, fill(e.out.Len, 0xFF))
}

func alignReduce(t *testing.T, dev *kernels.Device) {
	bufs := newBufSet(t, dev)
	nq, hq, ns := 2, 2, 3
	need := nq * hq * ns * 260 * 4
	part := bufs.input("partials", make([]byte, need)) // m = 0, l = 0: out = 0
	out := bufs.output("out", nq*hq*512, 0xFF)
	base := func() kernels.ReduceArgs {
		return kernels.ReduceArgs{Out: out.Ptr, Partials: part.Ptr, PartialsBytes: uint64(need), OutStrideToken: int64(hq * 256), OutStrideHead: 256,
			Dtype: kernels.F16, HeadSize: 256, NumQ: int32(nq), NumQHeads: int32(hq), NumSplits: int32(ns)}
	}
	misalign(t, "reduce", base, dev.Reduce, []alignPtr[kernels.ReduceArgs]{
		{"out", 2, func(a *kernels.ReduceArgs) *uintptr { return &a.Out }},
		{"partials", 16, func(a *kernels.ReduceArgs) *uintptr { return &a.Partials }},
	})
	a := base()
	a.NumQ, a.Partials = 0, a.Partials+4
	expectAlign(t, "reduce", "partials", 4, 16, dev.Reduce(a))
	must(t, dev.Sync(), "sync")
	bufs.checkCanaries(t, "misaligned reduces")
	bufs.checkInputs(t, "misaligned reduces")
	unchanged(t, "misaligned reduces", out, fill(out.Len, 0xFF))
	must(t, dev.Reduce(base()), "the valid reduce after the misaligned ones")
	must(t, dev.Sync(), "sync after the valid reduce")
	changed(t, "valid reduce", out, fill(out.Len, 0xFF))
}

func alignPrefill(t *testing.T, dev *kernels.Device, tier kernels.TierDesc) {
	rng := rand.New(rand.NewPCG(caseSeed("align/prefill"), 3))
	bufs, out, base := newPrefillErrEnv(t, dev, tier, rng, 4, 2)
	misalign(t, "prefill", base, dev.Prefill, []alignPtr[kernels.PrefillArgs]{
		{"out", 2, func(a *kernels.PrefillArgs) *uintptr { return &a.Out }},
		{"q", 2, func(a *kernels.PrefillArgs) *uintptr { return &a.Q }},
		{"k", 2, func(a *kernels.PrefillArgs) *uintptr { return &a.K }},
		{"v", 2, func(a *kernels.PrefillArgs) *uintptr { return &a.V }},
		{"cache", 8, func(a *kernels.PrefillArgs) *uintptr { return &a.Cache }},
		{"block_table", 4, func(a *kernels.PrefillArgs) *uintptr { return &a.BlockTable }},
		{"cu_seqlens_q", 4, func(a *kernels.PrefillArgs) *uintptr { return &a.CuSeqlensQ }},
		{"seq_lens", 4, func(a *kernels.PrefillArgs) *uintptr { return &a.SeqLens }},
	})
	misalignCompact(t, "prefill", base, dev.Prefill, func(a *kernels.PrefillArgs) *uintptr {
		a.Fmt, a.CacheStrideToken, a.CacheStrideHead, a.CacheStrideBlock = 19, 196, 196*16, 196*16
		return &a.Cache
	})
	a := base()
	a.NumSeqs, a.CuSeqlensQ = 0, a.CuSeqlensQ+2
	expectAlign(t, "prefill", "cu_seqlens_q", 2, 4, dev.Prefill(a))
	must(t, dev.Sync(), "sync")
	bufs.checkCanaries(t, "misaligned prefills")
	bufs.checkInputs(t, "misaligned prefills")
	unchanged(t, "misaligned prefills", out, fill(out.Len, 0xFF))
	must(t, dev.Prefill(base()), "the valid prefill after the misaligned ones")
	must(t, dev.Sync(), "sync after the valid prefill")
	changed(t, "valid prefill", out, fill(out.Len, 0xFF))
}

func alignQueryMaps(t *testing.T, dev *kernels.Device) {
	bufs := newBufSet(t, dev)
	qsl := bufs.input("query_start_loc", kernels.Int32Bytes([]int32{0, 1, 3}))
	sl := bufs.input("seq_lens", kernels.Int32Bytes([]int32{5, 9}))
	req := bufs.output("q_to_req", 4*4, 0xFF)
	klen := bufs.output("q_to_klen", 4*4, 0xFF)
	base := func() kernels.QueryMapsArgs {
		return kernels.QueryMapsArgs{QueryStartLoc: qsl.Ptr, SeqLens: sl.Ptr, QToReq: req.Ptr, QToK: klen.Ptr, NumReqs: 2, NumQ: 4}
	}
	misalign(t, "query_maps", base, dev.QueryMaps, []alignPtr[kernels.QueryMapsArgs]{
		{"query_start_loc", 4, func(a *kernels.QueryMapsArgs) *uintptr { return &a.QueryStartLoc }},
		{"seq_lens", 4, func(a *kernels.QueryMapsArgs) *uintptr { return &a.SeqLens }},
		{"q_to_req", 4, func(a *kernels.QueryMapsArgs) *uintptr { return &a.QToReq }},
		{"q_to_klen", 4, func(a *kernels.QueryMapsArgs) *uintptr { return &a.QToK }},
	})
	a := base()
	a.NumQ, a.QToReq = 0, a.QToReq+3
	expectAlign(t, "query_maps", "q_to_req", 3, 4, dev.QueryMaps(a))
	must(t, dev.Sync(), "sync")
	bufs.checkCanaries(t, "misaligned query maps")
	bufs.checkInputs(t, "misaligned query maps")
	unchanged(t, "misaligned query maps", req, fill(req.Len, 0xFF))
	unchanged(t, "misaligned query maps", klen, fill(klen.Len, 0xFF))
	must(t, dev.QueryMaps(base()), "the valid query_maps after the misaligned ones")
	must(t, dev.Sync(), "sync after the valid query_maps")
	if got := kernels.BytesInt32(read(t, req)); fmt.Sprint(got) != "[0 1 1 2]" {
		failf(t, "valid query_maps after the misaligned ones: q_to_req %v, expected [0 1 1 2]", got)
	}
}
