//go:build emuharness

package main

/*
#include "octave_capi.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/octant-kv/octant/corpus/golden"
	"github.com/octant-kv/octant/oracle"
)

func goldenAttention() {
	af, err := golden.LoadAttention(corpusDir+"/attention.json.gz", oracle.SlotBytesFor)
	if err != nil {
		panic(err)
	}
	sg := oracle.DefaultSigns(256)
	for _, c := range af.Cases {
		id, _ := oracle.ParseFormatID(c.CacheDtype)
		f, _ := oracle.NewFormat(id, 256, 64)
		sb := f.SlotBytes()
		nq, hq := len(c.QToReq), c.NumQHeads
		maxBlocks := len(c.BlockTable[0])
		var bt, qr, qk []int32
		for _, row := range c.BlockTable {
			for _, b := range row {
				bt = append(bt, int32(b))
			}
		}
		for i := range c.QToReq {
			qr = append(qr, int32(c.QToReq[i]))
			qk = append(qk, int32(c.QToKlen[i]))
		}
		for _, ns := range []int{1, 5} {
			for _, qg := range []int{1, 4} {
				out := dev(nq * hq * 512)
				part := dev(nq*hq*ns*260*4 + 16)
				var a C.octave_decode_args
				a.struct_size = C.uint64_t(unsafe.Sizeof(a))
				a.out, a.query = out, put(c.QueryF16.U16())
				a.cache = (*C.uint8_t)(put([]byte(c.Cache)))
				a.block_table = (*C.int32_t)(put(bt))
				a.q_to_req, a.q_to_klen = (*C.int32_t)(put(qr)), (*C.int32_t)(put(qk))
				a.partials, a.partials_bytes = (*C.float)(part), C.uint64_t(nq*hq*ns*260*4)
				a.out_stride_token, a.out_stride_head, a.query_stride_token, a.query_stride_head = C.int64_t(hq*256), 256, C.int64_t(hq*256), 256
				a.cache_stride_token, a.cache_stride_head, a.cache_stride_block = C.int64_t(sb), C.int64_t(c.BlockSize*sb), C.int64_t(c.NumKVHeads*c.BlockSize*sb)
				a.fmt, a.dtype, a.head_size = C.int32_t(id), 1, 256
				a.num_q, a.num_q_heads, a.num_kv_heads, a.num_reqs = C.int32_t(nq), C.int32_t(hq), C.int32_t(c.NumKVHeads), C.int32_t(len(c.BlockTable))
				a.num_blocks, a.block_size, a.max_blocks, a.num_splits, a.query_group = C.int32_t(c.NumBlocks), C.int32_t(c.BlockSize), C.int32_t(maxBlocks), C.int32_t(ns), C.int32_t(qg)
				a.sm_scale = C.float(c.Scale)
				a.k_signs, a.v_signs = signWords(sg), signWords(sg)
				check(C.octave_decode(ctx, &a), "decode golden")
				raw := get[uint16](out, nq*hq*256)
				ref := c.OutF32.U32()
				var num, den float64
				padBad := 0
				for i, h := range raw {
					g := float64(oracle.F16ToF32(h))
					r := float64(math.Float32frombits(ref[i]))
					num += (g - r) * (g - r)
					den += r * r
					if qk[i/(hq*256)] <= 0 && g != 0 {
						padBad++
					}
				}
				rel := math.Sqrt(num / den)
				st := "ok"
				if rel >= 2e-2 || padBad > 0 {
					st = "FAIL"
					failures++
				}
				fmt.Printf("%-4s golden attention %-28s ns%d qg%d relL2 %.4g padding-nonzero %d\n", st, c.Name, ns, qg, rel, padBad)
			}
		}
	}
}
