//go:build emuharness

package main

/*
#include "octave_capi.h"
*/
import "C"

import (
	"fmt"
	"math"
	"math/rand"
	"unsafe"

	"github.com/octant-kv/octant/oracle"
)

type decCase struct {
	name                      string
	f                         oracle.Format
	hkv, g, bs, nb, maxBlocks int
	lay                       layout
	bf                        bool
	ns, qg, pstride           int
	reqLens                   []int
	qToReq, qToKlen           []int32
	badBlocks                 bool
	scale                     float64
	ksame                     bool
}

func buildCache(rng *rand.Rand, c *decCase, ks, vs oracle.Signs) (*oracle.Cache, []byte) {
	sb := c.f.SlotBytes()
	data := make([]byte, c.nb*c.hkv*c.bs*sb)
	var cache *oracle.Cache
	var err error
	if c.lay == lbhnc {
		cache, err = oracle.NewCacheLBHNC(c.f, data, c.nb, c.hkv, c.bs)
	} else {
		cache, err = oracle.NewCacheLBNHC(c.f, data, c.nb, c.hkv, c.bs)
	}
	if err != nil {
		panic(err)
	}
	q, _ := oracle.NewQuantizer(c.f, ks, vs)
	k, v := make([]float32, 256), make([]float32, 256)
	for b := 0; b < c.nb; b++ {
		for h := 0; h < c.hkv; h++ {
			for t := 0; t < c.bs; t++ {
				sig := 0.5 + rng.Float64()*2
				for d := range k {
					k[d] = oracle.F16ToF32(oracle.F32ToF16(float32(rng.NormFloat64() * sig)))
					v[d] = oracle.F16ToF32(oracle.F32ToF16(float32(rng.NormFloat64())))
				}
				q.QuantizeInto(cache.Slot(b, h, t), k, v)
			}
		}
	}
	return cache, data
}

func runDecode(rng *rand.Rand, c *decCase) {
	ks := oracle.DefaultSigns(256)
	vs := ks
	if !c.ksame {
		vs = make(oracle.Signs, 256)
		for i := range vs {
			vs[i] = rng.Intn(2) == 1
		}
	}
	cache, data := buildCache(rng, c, ks, vs)
	nreq := len(c.reqLens)
	bt := make([]int32, nreq*c.maxBlocks)
	for i := range bt {
		bt[i] = int32(rng.Intn(c.nb))
		if c.badBlocks && rng.Intn(7) == 0 {
			bt[i] = []int32{-1, int32(c.nb), int32(c.nb + 100), math.MinInt32}[rng.Intn(4)]
		}
	}
	nq := len(c.qToReq)
	hq := c.hkv * c.g
	qv := make([]float32, nq*hq*256)
	qh := make([]uint16, len(qv))
	for i := range qv {
		qh[i] = f32ToAct(float32(rng.NormFloat64()), c.bf)
		qv[i] = actToF32(qh[i], c.bf)
	}
	in := &oracle.DecodeInput{Cache: cache, Query: qv, NumQHeads: hq, BlockTable: bt, NumReqs: nreq, MaxBlocks: c.maxBlocks,
		QToReq: c.qToReq, QToKlen: c.qToKlen, SMScale: c.scale, KSigns: ks, VSigns: vs}
	out := dev(nq * hq * 256 * 2)
	pstride := c.pstride
	if pstride == 0 {
		pstride = 260
	}
	pbytes := nq * hq * c.ns * pstride * 4
	part := dev(pbytes + 16)
	var a C.octave_decode_args
	a.struct_size = C.uint64_t(unsafe.Sizeof(a))
	a.out, a.query = out, put(qh)
	a.cache = (*C.uint8_t)(put(data))
	a.block_table = (*C.int32_t)(put(bt))
	a.q_to_req, a.q_to_klen = (*C.int32_t)(put(c.qToReq)), (*C.int32_t)(put(c.qToKlen))
	a.partials, a.partials_bytes = (*C.float)(part), C.uint64_t(pbytes)
	a.out_stride_token, a.out_stride_head = C.int64_t(hq*256), 256
	a.query_stride_token, a.query_stride_head = C.int64_t(hq*256), 256
	a.cache_stride_block, a.cache_stride_head, a.cache_stride_token = C.int64_t(cache.StrideBlock), C.int64_t(cache.StrideHead), C.int64_t(cache.StrideToken)
	a.fmt, a.head_size = C.int32_t(c.f.ID), 256
	a.dtype = 1
	if c.bf {
		a.dtype = 2
	}
	a.num_q, a.num_q_heads, a.num_kv_heads, a.num_reqs = C.int32_t(nq), C.int32_t(hq), C.int32_t(c.hkv), C.int32_t(nreq)
	a.num_blocks, a.block_size, a.max_blocks, a.num_splits = C.int32_t(c.nb), C.int32_t(c.bs), C.int32_t(c.maxBlocks), C.int32_t(c.ns)
	a.query_group, a.partial_stride, a.sm_scale = C.int32_t(c.qg), C.int32_t(c.pstride), C.float(c.scale)
	a.k_signs, a.v_signs = signWords(ks), signWords(vs)
	check(C.octave_decode(ctx, &a), "decode "+c.name)
	check(C.octave_sync(ctx), "sync")
	raw := get[uint16](out, nq*hq*256)
	got := make([]float64, len(raw))
	for i, h := range raw {
		got[i] = float64(actToF32(h, c.bf))
	}
	od := oracle.DtypeF16
	if c.bf {
		od = oracle.DtypeBF16
	}
	res, err := oracle.DecodeProfile(oracle.ProfileDot4Int8Q, in, oracle.ProfileOptions{Out: od})
	if err != nil {
		panic(err)
	}
	worst, ratio := res.Check(got)
	exact, _ := oracle.ExactDecode(in)
	rel := oracle.RelL2(got, exact)
	status := "ok"
	if ratio > 1 || rel > 2e-2 || math.IsNaN(ratio) {
		status = "FAIL"
		failures++
	}
	fmt.Printf("%-4s decode %-40s worst/bound %.3g (elem %d got %.6g model %.6g bound %.3g) relL2 vs exact %.3g\n",
		status, c.name, ratio, worst, got[max(worst, 0)], res.Model[max(worst, 0)], res.Bound[max(worst, 0)], rel)
}

func decodeTests() {
	rng := rand.New(rand.NewSource(7))
	f3, _ := oracle.NewFormat(oracle.K3V3, 256, 64)
	f4, _ := oracle.NewFormat(oracle.K3V4, 256, 64)
	f19, _ := oracle.NewFormat(oracle.K3V3Compact, 256, 64)
	// upstream-like: Hkv 1, G 6, bs 16, lengths 1, 16, 37, 700 + padding
	for _, f := range []oracle.Format{f3, f4, f19} {
		for _, qg := range []int{1, 4} {
			for _, ns := range []int{1, 7, 64} {
				c := &decCase{f: f, hkv: 1, g: 6, bs: 16, nb: 64, maxBlocks: 48, ns: ns, qg: qg, scale: 1.0 / 16, ksame: true,
					reqLens: []int{1, 16, 37, 700}}
				c.qToReq = []int32{0, 1, 2, 3, 4}
				c.qToKlen = []int32{1, 16, 37, 700, 0}
				c.bf = ns == 7
				c.name = fmt.Sprintf("%v/g6/qg%d/ns%d/bf%v", f.ID, qg, ns, c.bf)
				runDecode(rng, c)
			}
		}
	}
	// MTP runs, interleaved requests, bad blocks, other G, LBNHC, odd block sizes, pstride
	for i, g := range []int{1, 2, 4, 8} {
		f := []oracle.Format{f3, f4, f19, f4}[i]
		c := &decCase{f: f, hkv: 2, g: g, bs: []int{16, 5, 32, 1}[i], nb: 40, ns: []int{3, 1, 16, 5}[i], qg: 1 + i%4,
			scale: 0.07, lay: layout(i % 2), badBlocks: i >= 2, pstride: []int{0, 264, 260, 512}[i], bf: i%2 == 1}
		c.maxBlocks = 300 / c.bs
		if c.maxBlocks > 60 {
			c.maxBlocks = 60
		}
		c.reqLens = []int{50, 90, 7}
		// MTP: request 0 with 4 drafts (klen 46..50), request 1 three tokens, padding in the middle, bad req
		c.qToReq = []int32{0, 0, 0, 0, 0, 1, 3, 1, 1, 2, -1, 2, 0}
		c.qToKlen = []int32{46, 47, 48, 49, 50, 88, 5, 89, 90, 7, 9, 100000, -3}
		c.name = fmt.Sprintf("%v/g%d/bs%d/ns%d/qg%d/lay%d/bad%v/p%d", f.ID, g, c.bs, c.ns, c.qg, c.lay, c.badBlocks, c.pstride)
		runDecode(rng, c)
	}
}
