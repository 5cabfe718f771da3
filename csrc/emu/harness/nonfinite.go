//go:build emuharness

package main

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand"

	"github.com/octant-kv/octant/oracle"
)

func nonFinite() {
	rng := rand.New(rand.NewSource(5))
	sg := oracle.DefaultSigns(256)
	for _, id := range oracle.AllFormats {
		f, _ := oracle.NewFormat(id, 256, 64)
		for _, bf := range []bool{false, true} {
			T := 6
			k, v := make([]uint16, T*256), make([]uint16, T*256)
			for i := range k {
				k[i] = f32ToAct(float32(rng.NormFloat64()), bf)
				v[i] = f32ToAct(float32(rng.NormFloat64()), bf)
			}
			k[0*256+130] = f32ToAct(float32(math.NaN()), bf)
			v[1*256+3] = f32ToAct(float32(math.Inf(1)), bf)
			k[2*256+5] = f32ToAct(float32(math.Inf(-1)), bf)
			for d := 0; d < 256; d++ { // huge (bf16: ss overflows float32), tiny, zero
				if bf {
					k[3*256+d] = f32ToAct(3e38*float32(rng.NormFloat64()), bf)
				}
				v[4*256+d] = f32ToAct(1e-7*float32(rng.NormFloat64()), bf)
				k[5*256+d], v[5*256+d] = 0, 0x8000
			}
			slots := []int64{0, 1, 2, 3, 4, 5}
			sb := f.SlotBytes()
			out, s := store(f, k, v, bf, T, 1, slots, make([]byte, 16*sb), 1, 16, lbhnc, sg, sg)
			check(s, "store")
			data := f.OffScales() + 2*f.NumScales()
			for t := 0; t < T; t++ {
				kf, vf := make([]float32, 256), make([]float32, 256)
				for d := range kf {
					kf[d], vf[d] = actToF32(k[t*256+d], bf), actToF32(v[t*256+d], bf)
				}
				want, _ := oracle.QuantizeSlot(f, kf, vf, sg, sg)
				got := out[t*sb:][:sb]
				st := "ok"
				if hex.EncodeToString(got[:data]) != hex.EncodeToString(want[:data]) {
					st = "FAIL"
					failures++
				}
				fmt.Printf("%-4s nonfinite/edge %v bf%v token %d scales %x\n", st, id, bf, t, got[f.OffScales():data])
			}
		}
	}
}
