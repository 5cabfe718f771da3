//go:build emuharness

// Command harness runs the kernels through the C ABI on the CPU emulator (build/liboctave_emu.so)
// and checks them against the spec's worked example, the upstream golden vectors and the Go oracle:
//
//	make emu-check    (= make emu; CGO_ENABLED=1 go run -tags emuharness ./csrc/emu/harness)
//
// An optional argument selects groups: worked, golden, goldatt, nonfinite, decode, prefill, misc,
// errors (default all). It needs cgo, so it is behind the emuharness build tag and never part of
// `go test ./...`. It says nothing about GPU timing or the GPU memory model.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -L${SRCDIR}/../../../build -loctave_emu -Wl,-rpath,${SRCDIR}/../../../build
#include "octave_capi.h"
#include <stdlib.h>
*/
import "C"

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/octant-kv/octant/corpus/golden"
	"github.com/octant-kv/octant/oracle"
)

// corpusDir holds the upstream golden files (run from the repository root).
var corpusDir = "corpus/golden/upstream"

var ctx *C.octave_ctx
var failures int

func check(s C.int32_t, what string) {
	if s != 0 {
		panic(fmt.Sprintf("%s: status %d %s: %s", what, int(s), C.GoString(C.octave_status_name(s)), C.GoString(C.octave_last_error())))
	}
}

func fail(f string, a ...any) {
	failures++
	fmt.Printf("FAIL "+f+"\n", a...)
}

// dev allocates device memory holding b (emu: host memory).
func dev(n int) unsafe.Pointer {
	var p unsafe.Pointer
	check(C.octave_alloc(ctx, C.uint64_t(n), &p), "alloc")
	return p
}
func put[T any](s []T) unsafe.Pointer {
	n := len(s) * int(unsafe.Sizeof(*new(T)))
	p := dev(n + 16)
	if n > 0 {
		check(C.octave_copy_h2d(ctx, p, unsafe.Pointer(&s[0]), C.uint64_t(n)), "h2d")
	}
	return p
}
func get[T any](p unsafe.Pointer, n int) []T {
	s := make([]T, n)
	if n > 0 {
		check(C.octave_copy_d2h(ctx, unsafe.Pointer(&s[0]), p, C.uint64_t(n*int(unsafe.Sizeof(*new(T))))), "d2h")
	}
	return s
}

func f32ToAct(x float32, bf bool) uint16 {
	if bf {
		return oracle.F32ToBF16(x)
	}
	return oracle.F32ToF16(x)
}
func actToF32(h uint16, bf bool) float32 {
	if bf {
		return oracle.BF16ToF32(h)
	}
	return oracle.F16ToF32(h)
}

func signWords(s oracle.Signs) [8]C.uint32_t {
	var w [8]C.uint32_t
	for i, x := range s.Words() {
		w[i] = C.uint32_t(x)
	}
	return w
}

type layout int

const (
	lbhnc layout = iota
	lbnhc
)

// store runs the kernel store of T tokens into a cache; returns the cache bytes.
func store(f oracle.Format, k, v []uint16, bf bool, T, hkv int, slots []int64, cache []byte, nb, bs int, lay layout, ks, vs oracle.Signs) ([]byte, C.int32_t) {
	sb := f.SlotBytes()
	var a C.octave_store_args
	a.struct_size = C.uint64_t(unsafe.Sizeof(a))
	a.key, a.value = put(k), put(v)
	cp := put(cache)
	a.cache = (*C.uint8_t)(cp)
	a.slot_mapping = (*C.int64_t)(put(slots))
	a.key_stride_token, a.key_stride_head = C.int64_t(hkv*256), 256
	a.value_stride_token, a.value_stride_head = C.int64_t(hkv*256), 256
	if lay == lbhnc {
		a.cache_stride_token, a.cache_stride_head, a.cache_stride_block = C.int64_t(sb), C.int64_t(bs*sb), C.int64_t(hkv*bs*sb)
	} else {
		a.cache_stride_head, a.cache_stride_token, a.cache_stride_block = C.int64_t(sb), C.int64_t(hkv*sb), C.int64_t(bs*hkv*sb)
	}
	a.fmt = C.int32_t(f.ID)
	a.dtype = 1
	if bf {
		a.dtype = 2
	}
	a.head_size = 256
	a.num_tokens = C.int32_t(len(slots))
	a.num_kv_heads = C.int32_t(hkv)
	a.num_blocks, a.block_size = C.int32_t(nb), C.int32_t(bs)
	a.k_signs, a.v_signs = signWords(ks), signWords(vs)
	s := C.octave_cache_store(ctx, &a)
	C.octave_sync(ctx)
	return get[byte](cp, len(cache)), s
}

func workedExample() {
	want := map[oracle.FormatID]string{
		oracle.K3V4:        "54d218bb48a478745b4754b835ac74b61bba7c5ab35b74428b6d8abd65135ed7f7e932eaf4826c52b4846498f97378447c35b8151855dec0cb938a96ad5f4de4913290ffde6a2a5998dda54d71df09af30811263317d1d7b59fd0368849474314688df50b815e9d11836d5c975b995786782bd6ac56887ba987fa8b6c314c7c633973b6876384838c6e88584767c95439311aa44aa9379e793c4c97788816666c8d8a3b437c52d64be6b6da7966c8d9b8d467ad791c6576537b65137739b4a572d965442d3635c859dc1488aa5c35cb974383d98f95258764cc5779f8a4232c3997b3bb264ad528e8d41644060405c403843000000000000",
		oracle.K3V3:        "54d218bb48a478745b4754b835ac74b61bba7c5ab35b74428b6d8abd65135ed7f7e932eaf4826c52b4846498f97378447c35b8151855dec0cb938a96ad5f4de4913290ffde6a2a5998dda54d71df09af30811263317d1d7b59fd0368849474314688df50b815e9d1e0472ac8afc1365d902fb4b7f543854cfbec22925110c5f9010af8ff78a865e63bed2e1702bbbdefd71758b796d3aa296298a841ce9486f01a8a5f93e06d9535816cbad70b615b5ae2877a823eba6320bb851d2e902e4480cb1a553f3dd210eb8d41644060405c40cf41000000000000",
		oracle.K3V3Compact: "89068fd40cb2ab9253e1718a646f6847316bf92a79fa11e6ce8f67953a1faa57b7df66ff51369224b774d186763391f75514d4d07bd3687edb9d166cce8faede548c0463b81579f11b7ea1a8858472a5b08220b3316b572e866add975807cbd1e0472ac8afc1365d902fb4b7f543854cfbec22925110c5f9010af8ff78a865e63bed2e1702bbbdefd71758b796d3aa296298a841ce9486f01a8a5f93e06d9535816cbad70b615b5ae2877a823eba6320bb851d2e902e4480cb1a553f3dd210eb7040cf41",
	}
	k, v := make([]uint16, 256), make([]uint16, 256)
	for d := 0; d < 256; d++ {
		k[d] = oracle.F32ToF16(float32((37*d+11)%7 - 3))
		v[d] = oracle.F32ToF16(float32((53*d+5)%9 - 4))
	}
	sg := oracle.DefaultSigns(256)
	for _, id := range oracle.AllFormats {
		f, _ := oracle.NewFormat(id, 256, 64)
		sb := f.SlotBytes()
		cache := make([]byte, 16*sb)
		for i := range cache {
			cache[i] = 0xAA
		}
		out, s := store(f, k, v, false, 1, 1, []int64{3}, cache, 1, 16, lbhnc, sg, sg)
		check(s, "store")
		w, _ := hex.DecodeString(want[id])
		got := out[3*sb : 4*sb]
		data := f.OffScales() + 2*f.NumScales()
		if hex.EncodeToString(got[:data]) != hex.EncodeToString(w[:data]) {
			fail("worked example %v:\n got %x\nwant %x", id, got[:data], w[:data])
		}
		for i := data; i < sb; i++ {
			if got[i] != 0xAA {
				fail("worked example %v: pad byte %d written", id, i)
			}
		}
		for i := range out {
			if (i < 3*sb || i >= 4*sb) && out[i] != 0xAA {
				fail("worked example %v: byte %d outside the slot written", id, i)
				break
			}
		}
	}
	fmt.Println("worked example: done")
}

func goldenSlots() {
	for _, id := range oracle.AllFormats {
		f, _ := oracle.NewFormat(id, 256, 64)
		sf, err := golden.LoadSlots(fmt.Sprintf(corpusDir+"/slots-%s.json.gz", id))
		if err != nil {
			panic(err)
		}
		sg, _ := oracle.SignsFromInt32(sf.SignBitsI32, 256)
		acc, _ := oracle.NewAcceptor(f, sg, sg)
		identical, accepted := 0, 0
		for _, bf := range []bool{false, true} {
			var cases []golden.SlotCase
			for _, c := range sf.Cases {
				if (c.InputDtype == "bfloat16") == bf {
					cases = append(cases, c)
				}
			}
			if len(cases) == 0 {
				continue
			}
			T := len(cases)
			var k, v []uint16
			slots := make([]int64, T)
			for t, c := range cases {
				k = append(k, c.K.U16()...)
				v = append(v, c.V.U16()...)
				slots[t] = int64(T - 1 - t) // reversed
			}
			sb := f.SlotBytes()
			nb := (T + 15) / 16
			cache := make([]byte, nb*16*sb)
			out, s := store(f, k, v, bf, T, 1, slots, cache, nb, 16, lbhnc, sg, sg)
			check(s, "store")
			data := f.OffScales() + 2*f.NumScales()
			for t, c := range cases {
				got := out[int(slots[t])*sb:][:sb]
				if hex.EncodeToString(got[:data]) == hex.EncodeToString(c.Slot[:data]) {
					identical++
					continue
				}
				kf, vf := make([]float32, 256), make([]float32, 256)
				for d := 0; d < 256; d++ {
					kf[d], vf[d] = actToF32(k[t*256+d], bf), actToF32(v[t*256+d], bf)
				}
				vd, err := acc.Accept(kf, vf, got)
				if err != nil {
					panic(err)
				}
				ours, _ := oracle.QuantizeSlot(f, kf, vf, sg, sg)
				if hex.EncodeToString(ours[:data]) == hex.EncodeToString(got[:data]) {
					accepted++
					continue
				}
				fail("golden %v %s: kernel differs from the oracle: %s", id, c.Name, vd.Summary())
			}
		}
		fmt.Printf("golden slots %v: %d cases, %d byte-identical to upstream, %d identical to the oracle (upstream tie)\n", id, len(sf.Cases), identical, accepted)
	}
}

func main() {
	check(C.octave_open(0, &ctx), "open")
	var info C.octave_device_info
	info.struct_size = C.uint64_t(unsafe.Sizeof(info))
	check(C.octave_device_get_info(ctx, &info), "info")
	fmt.Printf("device %s arch %s wave %d\n", C.GoString(&info.name[0]), C.GoString(&info.arch[0]), info.wave_size)
	which := "all"
	if len(os.Args) > 1 {
		which = os.Args[1]
	}
	run := func(name string, f func()) {
		if which == "all" || strings.Contains(which, name) {
			f()
		}
	}
	run("worked", workedExample)
	run("golden", goldenSlots)
	run("goldatt", goldenAttention)
	run("nonfinite", nonFinite)
	run("decode", decodeTests)
	run("prefill", prefillTests)
	run("misc", miscTests)
	run("errors", errorTests)
	fmt.Printf("%d failures\n", failures)
	if failures > 0 {
		os.Exit(1)
	}
}
