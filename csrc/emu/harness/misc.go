//go:build emuharness

package main

/*
#include "octave_capi.h"
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"math"
	"math/rand"
	"unsafe"

	"github.com/octant-kv/octant/oracle"
)

func miscTests() {
	rng := rand.New(rand.NewSource(3))
	// rotate vs oracle (bit exact before rounding), forward and inverse, 64 and 256, fp16 and bf16
	for _, bf := range []bool{false, true} {
		for _, k64 := range []bool{true, false} {
			for _, inv := range []bool{false, true} {
				T, H := 5, 3
				sg := make(oracle.Signs, 256)
				for i := range sg {
					sg[i] = rng.Intn(2) == 1
				}
				x := make([]uint16, T*H*256)
				for i := range x {
					x[i] = f32ToAct(float32(rng.NormFloat64()*3), bf)
				}
				p := put(x)
				var a C.octave_rotate_args
				a.struct_size = C.uint64_t(unsafe.Sizeof(a))
				a.x, a.stride_token, a.stride_head = p, C.int64_t(H*256), 256
				a.dtype, a.head_size, a.num_tokens, a.num_heads = 1, 256, C.int32_t(T), C.int32_t(H)
				if bf {
					a.dtype = 2
				}
				if k64 {
					a.k_layout = 1
				}
				if inv {
					a.inverse = 1
				}
				a.signs = signWords(sg)
				check(C.octave_rotate(ctx, &a), "rotate")
				got := get[uint16](p, len(x))
				bad := 0
				blk := 256
				if k64 {
					blk = 64
				}
				for r := 0; r < T*H; r++ {
					v := make([]float32, 256)
					for i := range v {
						v[i] = actToF32(x[r*256+i], bf)
					}
					var w []float32
					if inv {
						w = oracle.Unrotate(v, sg, blk)
					} else {
						w = oracle.Rotate(v, sg, blk)
					}
					for i := range w {
						if f32ToAct(w[i], bf) != got[r*256+i] {
							bad++
						}
					}
				}
				st := "ok"
				if bad > 0 {
					st = "FAIL"
					failures++
				}
				fmt.Printf("%-4s rotate bf%v k64%v inv%v: %d mismatches\n", st, bf, k64, inv, bad)
			}
		}
	}
	// reduce with hand-made partials
	{
		nq, hq, ns, P := 3, 2, 5, 264
		part := make([]float32, nq*hq*ns*P)
		ninf := float32(math.Inf(-1))
		for i := range part {
			part[i] = float32(rng.NormFloat64())
		}
		vs := oracle.DefaultSigns(256)
		type row struct{ m, l []float32 }
		rows := []row{
			{[]float32{1, 2, ninf, 0.5, -3}, []float32{3, 1, 0, 2, 5}},
			{[]float32{ninf, ninf, ninf, ninf, ninf}, []float32{0, 0, 0, 0, 0}},
			{[]float32{ninf, 4, ninf, ninf, ninf}, []float32{0, 0, 0, 0, 0}}, // L = 0 -> 0
		}
		for q := 0; q < nq; q++ {
			for h := 0; h < hq; h++ {
				rr := rows[(q+h)%3]
				for s := 0; s < ns; s++ {
					b := ((q*hq+h)*ns + s) * P
					part[b+256], part[b+257] = rr.m[s], rr.l[s]
					if rr.m[s] == ninf {
						for i := 0; i < 256; i++ {
							part[b+i] = float32(math.NaN()) // never read
						}
					}
				}
			}
		}
		out := dev(nq * hq * 256 * 2)
		var a C.octave_reduce_args
		a.struct_size = C.uint64_t(unsafe.Sizeof(a))
		a.out, a.partials, a.partials_bytes = out, (*C.float)(put(part)), C.uint64_t(len(part)*4)
		a.out_stride_token, a.out_stride_head = C.int64_t(hq*256), 256
		a.dtype, a.head_size, a.num_q, a.num_q_heads, a.num_splits, a.partial_stride = 1, 256, C.int32_t(nq), C.int32_t(hq), C.int32_t(ns), C.int32_t(P)
		a.v_signs = signWords(vs)
		check(C.octave_reduce(ctx, &a), "reduce")
		got := get[uint16](out, nq*hq*256)
		worst := 0.0
		for q := 0; q < nq; q++ {
			for h := 0; h < hq; h++ {
				rr := rows[(q+h)%3]
				M := math.Inf(-1)
				for _, m := range rr.m {
					M = math.Max(M, float64(m))
				}
				var L float64
				O := make([]float64, 256)
				for s := 0; s < ns; s++ {
					if math.IsInf(float64(rr.m[s]), -1) {
						continue
					}
					w := math.Exp2(float64(rr.m[s]) - M)
					L += w * float64(rr.l[s])
					b := ((q*hq+h)*ns + s) * P
					for i := range O {
						O[i] += w * float64(part[b+i])
					}
				}
				y := oracle.Unrotate64(O, vs, 256)
				for i := range y {
					ref := 0.0
					if L != 0 {
						ref = y[i] / L
					}
					g := float64(oracle.F16ToF32(got[(q*hq+h)*256+i]))
					if L == 0 && g != 0 {
						worst = math.Inf(1)
					}
					worst = math.Max(worst, math.Abs(g-ref)/(math.Abs(ref)*math.Pow(2, -10)+1e-6))
				}
			}
		}
		st := "ok"
		if worst > 1 {
			st = "FAIL"
			failures++
		}
		fmt.Printf("%-4s reduce hand-made partials: worst/tol %.3g\n", st, worst)
	}
	// query maps
	{
		qsl := []int32{0, 1, 4, 4, 9}
		sl := []int32{10, 7, 3, 20}
		nq := 12
		r, k := dev(nq*4), dev(nq*4)
		var a C.octave_query_maps_args
		a.struct_size = C.uint64_t(unsafe.Sizeof(a))
		a.query_start_loc, a.seq_lens = (*C.int32_t)(put(qsl)), (*C.int32_t)(put(sl))
		a.q_to_req, a.q_to_klen = (*C.int32_t)(r), (*C.int32_t)(k)
		a.num_reqs, a.num_q = 4, C.int32_t(nq)
		check(C.octave_query_maps(ctx, &a), "query_maps")
		gr, gk := get[int32](r, nq), get[int32](k, nq)
		bad := 0
		for t := 0; t < nq; t++ {
			req := 0
			for j := 1; j <= 4; j++ {
				if int(qsl[j]) <= t {
					req++
				}
			}
			klen := int32(0)
			if req < 4 {
				klen = sl[req] - (qsl[req+1] - qsl[req]) + (int32(t) - qsl[req]) + 1
			}
			if gr[t] != int32(req) || gk[t] != klen {
				bad++
				fmt.Printf("  t=%d got (%d,%d) want (%d,%d)\n", t, gr[t], gk[t], req, klen)
			}
		}
		st := "ok"
		if bad > 0 {
			st = "FAIL"
			failures++
		}
		fmt.Printf("%-4s query_maps: %v %v\n", st, gr, gk)
	}
}

func errorTests() {
	f4, _ := oracle.NewFormat(oracle.K3V4, 256, 64)
	sb := f4.SlotBytes()
	cache := dev(4 * 16 * sb)
	kv := dev(8 * 256 * 2)
	base := func(slots []int64) C.octave_store_args {
		var a C.octave_store_args
		a.struct_size = C.uint64_t(unsafe.Sizeof(a))
		a.key, a.value, a.cache = kv, kv, (*C.uint8_t)(cache)
		a.slot_mapping = (*C.int64_t)(put(slots))
		a.key_stride_token, a.key_stride_head, a.value_stride_token, a.value_stride_head = 256, 256, 256, 256
		a.cache_stride_block, a.cache_stride_head, a.cache_stride_token = C.int64_t(16*sb), C.int64_t(16*sb), C.int64_t(sb)
		a.fmt, a.dtype, a.head_size, a.num_tokens, a.num_kv_heads, a.num_blocks, a.block_size = 4, 1, 256, C.int32_t(len(slots)), 1, 4, 16
		return a
	}
	type tc struct {
		name string
		want int
		mod  func(a *C.octave_store_args)
	}
	for _, c := range []tc{
		{"ok", 0, func(a *C.octave_store_args) {}},
		{"fmt", C.OCTAVE_ERR_FORMAT, func(a *C.octave_store_args) { a.fmt = 20 }},
		{"dtype", C.OCTAVE_ERR_DTYPE, func(a *C.octave_store_args) { a.dtype = 3 }},
		{"head", C.OCTAVE_ERR_HEAD_SIZE, func(a *C.octave_store_args) { a.head_size = 128 }},
		{"stride", C.OCTAVE_ERR_STRIDE, func(a *C.octave_store_args) { a.cache_stride_token = 252 }},
		{"align", C.OCTAVE_ERR_ALIGNMENT, func(a *C.octave_store_args) { a.cache = (*C.uint8_t)(unsafe.Add(cache, 4)) }},
		{"range", C.OCTAVE_ERR_SLOT_RANGE, func(a *C.octave_store_args) { a.slot_mapping = (*C.int64_t)(put([]int64{1, 64})) }},
		{"dup", C.OCTAVE_ERR_SLOT_DUPLICATE, func(a *C.octave_store_args) { a.slot_mapping = (*C.int64_t)(put([]int64{5, -1, 5})) }},
		{"dup-host", C.OCTAVE_ERR_SLOT_DUPLICATE, func(a *C.octave_store_args) {
			h := (*[2]C.int64_t)(C.malloc(16))
			h[0], h[1] = 7, 7
			a.slot_mapping_host = &h[0]
		}},
		{"struct_size", C.OCTAVE_ERR_INVALID_ARGUMENT, func(a *C.octave_store_args) { a.struct_size = 100 }},
	} {
		a := base([]int64{1, 2, -1})
		c.mod(&a)
		s := C.octave_cache_store(ctx, &a)
		st := "ok"
		if int(s) != c.want {
			st = "FAIL"
			failures++
		}
		fmt.Printf("%-4s error store/%s: %d %s\n", st, c.name, int(s), C.GoString(C.octave_last_error()))
	}
	// decode errors
	part := dev(1 << 20)
	dbase := func() C.octave_decode_args {
		var a C.octave_decode_args
		a.struct_size = C.uint64_t(unsafe.Sizeof(a))
		a.out, a.query, a.cache = kv, kv, (*C.uint8_t)(cache)
		bt := put([]int32{0, 1})
		a.block_table = (*C.int32_t)(bt)
		a.q_to_req, a.q_to_klen = (*C.int32_t)(put([]int32{0})), (*C.int32_t)(put([]int32{5}))
		a.partials, a.partials_bytes = (*C.float)(part), 1<<20
		a.out_stride_token, a.out_stride_head, a.query_stride_token, a.query_stride_head = 1536, 256, 1536, 256
		a.cache_stride_block, a.cache_stride_head, a.cache_stride_token = C.int64_t(16*sb), C.int64_t(16*sb), C.int64_t(sb)
		a.fmt, a.dtype, a.head_size, a.num_q, a.num_q_heads, a.num_kv_heads, a.num_reqs = 4, 1, 256, 1, 6, 1, 1
		a.num_blocks, a.block_size, a.max_blocks, a.num_splits, a.query_group, a.sm_scale = 4, 16, 2, 3, 1, 0.0625
		return a
	}
	type dc struct {
		name string
		want int
		mod  func(a *C.octave_decode_args)
	}
	for _, c := range []dc{
		{"ok", 0, func(a *C.octave_decode_args) {}},
		{"g5", C.OCTAVE_ERR_GQA, func(a *C.octave_decode_args) { a.num_q_heads = 5 }},
		{"g3", C.OCTAVE_ERR_GQA, func(a *C.octave_decode_args) { a.num_q_heads = 3 }},
		{"splits0", C.OCTAVE_ERR_NUM_SPLITS, func(a *C.octave_decode_args) { a.num_splits = 0 }},
		{"splits1025", C.OCTAVE_ERR_NUM_SPLITS, func(a *C.octave_decode_args) { a.num_splits = 1025 }},
		{"qg5", C.OCTAVE_ERR_QUERY_GROUP, func(a *C.octave_decode_args) { a.query_group = 5 }},
		{"scale-nan", C.OCTAVE_ERR_SCALE, func(a *C.octave_decode_args) { a.sm_scale = C.float(math.NaN()) }},
		{"scale-0", C.OCTAVE_ERR_SCALE, func(a *C.octave_decode_args) { a.sm_scale = 0 }},
		{"scale-inf", C.OCTAVE_ERR_SCALE, func(a *C.octave_decode_args) { a.sm_scale = C.float(math.Inf(1)) }},
		{"partials-small", C.OCTAVE_ERR_WORKSPACE, func(a *C.octave_decode_args) { a.partials_bytes = 1000 }},
		{"pstride-257", C.OCTAVE_ERR_WORKSPACE, func(a *C.octave_decode_args) { a.partial_stride = 257 }},
		{"pstride-258", C.OCTAVE_ERR_WORKSPACE, func(a *C.octave_decode_args) { a.partial_stride = 258 }},
		{"partials-align", C.OCTAVE_ERR_ALIGNMENT, func(a *C.octave_decode_args) { a.partials = (*C.float)(unsafe.Add(part, 4)) }},
		{"tier", C.OCTAVE_ERR_UNSUPPORTED_TIER, func(a *C.octave_decode_args) { a.tier = 1 }},
		{"fmt", C.OCTAVE_ERR_FORMAT, func(a *C.octave_decode_args) { a.fmt = 0 }},
		{"compact-stride4", 0, func(a *C.octave_decode_args) {
			a.fmt = 19
			a.cache_stride_token = 196
			a.cache_stride_head, a.cache_stride_block = 16*196, 16*196
		}},
	} {
		a := dbase()
		c.mod(&a)
		s := C.octave_decode(ctx, &a)
		st := "ok"
		if int(s) != c.want {
			st = "FAIL"
			failures++
		}
		fmt.Printf("%-4s error decode/%s: %d %s\n", st, c.name, int(s), C.GoString(C.octave_last_error()))
	}
}
