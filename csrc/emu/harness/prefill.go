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

func runPrefill(rng *rand.Rand, name string, f oracle.Format, hkv, g, bs, nb, maxBlocks int, qlens, ctxs []int, bf bool, bad bool) {
	ks := oracle.DefaultSigns(256)
	c := &decCase{f: f, hkv: hkv, bs: bs, nb: nb, lay: lbhnc}
	cache, data := buildCache(rng, c, ks, ks)
	ns := len(qlens)
	cu := []int32{0}
	seqLens := make([]int32, ns)
	for s := range qlens {
		cu = append(cu, cu[s]+int32(qlens[s]))
		seqLens[s] = int32(ctxs[s] + qlens[s])
	}
	T := int(cu[ns]) + 3 // 3 rows in no sequence: must not be written
	hq := hkv * g
	bt := make([]int32, ns*maxBlocks)
	for i := range bt {
		bt[i] = int32(rng.Intn(nb))
		if bad && rng.Intn(9) == 0 {
			bt[i] = -5
		}
	}
	mk := func(n int) ([]uint16, []float64) {
		h := make([]uint16, n)
		v := make([]float64, n)
		for i := range h {
			h[i] = f32ToAct(float32(rng.NormFloat64()), bf)
			v[i] = float64(actToF32(h[i], bf))
		}
		return h, v
	}
	qh, qv := mk(T * hq * 256)
	kh, kv := mk(T * hkv * 256)
	vh, vv := mk(T * hkv * 256)
	outInit := make([]uint16, T*hq*256)
	for i := range outInit {
		outInit[i] = 0x7E00 // NaN canary
	}
	out := put(outInit)
	var a C.octave_prefill_args
	a.struct_size = C.uint64_t(unsafe.Sizeof(a))
	a.out, a.q, a.k, a.v = out, put(qh), put(kh), put(vh)
	a.cache = (*C.uint8_t)(put(data))
	a.block_table = (*C.int32_t)(put(bt))
	a.cu_seqlens_q, a.seq_lens = (*C.int32_t)(put(cu)), (*C.int32_t)(put(seqLens))
	a.out_stride_token, a.out_stride_head = C.int64_t(hq*256), 256
	a.q_stride_token, a.q_stride_head = C.int64_t(hq*256), 256
	a.k_stride_token, a.k_stride_head = C.int64_t(hkv*256), 256
	a.v_stride_token, a.v_stride_head = C.int64_t(hkv*256), 256
	a.cache_stride_block, a.cache_stride_head, a.cache_stride_token = C.int64_t(cache.StrideBlock), C.int64_t(cache.StrideHead), C.int64_t(cache.StrideToken)
	a.fmt, a.head_size = C.int32_t(f.ID), 256
	a.dtype = 1
	if bf {
		a.dtype = 2
	}
	a.num_tokens, a.num_seqs, a.num_q_heads, a.num_kv_heads = C.int32_t(T), C.int32_t(ns), C.int32_t(hq), C.int32_t(hkv)
	a.num_blocks, a.block_size, a.max_blocks = C.int32_t(nb), C.int32_t(bs), C.int32_t(maxBlocks)
	a.sm_scale = 0.0625
	check(C.octave_prefill(ctx, &a), "prefill")
	check(C.octave_sync(ctx), "sync")
	raw := get[uint16](out, T*hq*256)

	dq := oracle.NewDequantizer(f)
	kk, vvv := make([]float32, 256), make([]float32, 256)
	var num, den, worst float64
	for s := 0; s < ns; s++ {
		ctxn := min(ctxs[s], maxBlocks*bs)
		for j := 0; j < qlens[s]; j++ {
			row := int(cu[s]) + j
			for h := 0; h < hq; h++ {
				kvh := h / g
				q := qv[(row*hq+h)*256:][:256]
				var sc []float64
				var vals [][]float64
				for t := 0; t < ctxn; t++ {
					b := bt[s*maxBlocks+t/bs]
					if b < 0 || int(b) >= nb {
						continue
					}
					dq.DequantizeInto(kk, vvv, cache.Slot(int(b), kvh, t%bs))
					var d float64
					vrow := make([]float64, 256)
					for i := 0; i < 256; i++ {
						d += q[i] * float64(kk[i])
						vrow[i] = float64(vvv[i])
					}
					sc = append(sc, d*0.0625)
					vals = append(vals, vrow)
				}
				for t := 0; t <= j; t++ {
					r := int(cu[s]) + t
					var d float64
					for i := 0; i < 256; i++ {
						d += q[i] * kv[(r*hkv+kvh)*256+i]
					}
					sc = append(sc, d*0.0625)
					vals = append(vals, vv[(r*hkv+kvh)*256:][:256])
				}
				m := math.Inf(-1)
				for _, x := range sc {
					m = math.Max(m, x)
				}
				var l float64
				o := make([]float64, 256)
				for t, x := range sc {
					p := math.Exp(x - m)
					l += p
					for i := range o {
						o[i] += p * vals[t][i]
					}
				}
				for i := range o {
					ref := o[i] / l
					got := float64(actToF32(raw[(row*hq+h)*256+i], bf))
					e := got - ref
					num += e * e
					den += ref * ref
					tol := math.Abs(ref)*math.Pow(2, -10) + 1e-5
					if bf {
						tol = math.Abs(ref)*math.Pow(2, -7) + 1e-5
					}
					worst = math.Max(worst, math.Abs(e)/tol)
				}
			}
		}
	}
	canary := true
	for i := int(cu[ns]) * hq * 256; i < len(raw); i++ {
		if raw[i] != 0x7E00 {
			canary = false
		}
	}
	status := "ok"
	if worst > 1 || !canary || math.IsNaN(worst) {
		status = "FAIL"
		failures++
	}
	fmt.Printf("%-4s prefill %-36s relL2 %.3g worst/tol %.3g rows-untouched %v\n", status, name, math.Sqrt(num/den), worst, canary)
}

func prefillTests() {
	rng := rand.New(rand.NewSource(11))
	for _, id := range oracle.AllFormats {
		f, _ := oracle.NewFormat(id, 256, 64)
		runPrefill(rng, fmt.Sprintf("%v/g6/[40,1,37]", id), f, 1, 6, 16, 40, 20, []int{40, 1, 37}, []int{250, 0, 100}, false, false)
	}
	f4, _ := oracle.NewFormat(oracle.K3V4, 256, 64)
	runPrefill(rng, "k3v4/g3/hkv2/bs7/bad/bf16", f4, 2, 3, 7, 30, 30, []int{9, 33}, []int{90, 500}, true, true)
}
